// The scale profile's run (escala.mjs): the hosts' groups and processes, Redis (Sentinel or
// Cluster), the services, and one measured batch.
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createGroup, delta } from '../cgroup.mjs';
import { ROOT, startIn, until } from '../procs.mjs';
import { REDIS_PORT, SENTINEL_PORT, redisServerArgs, sentinelConfig } from '../topology.mjs';
import { ask, commandCallsOf, machineBusyMs, sha256Of } from './measures.mjs';
import { API_KEY, API_PORT, CLI, CLUSTER_PORTS, PREFIX, PROXY_PORT, REDIS_HOSTS, WORKER_PORT, net, run } from './settings.mjs';

/** How long the Redis hosts' CPU at rest is read before a batch, with --shards. */
const IDLE_SAMPLE_MS = 5_000;

/** The run's state: the hosts' groups, the processes, the Redis in use. */
export class Bench {
  constructor({ runDir, profile, profileName }) {
    this.runDir = runDir;
    this.profile = profile;
    this.profileName = profileName;
    this.logs = path.join(runDir, 'logs');
    this.uploads = path.join(runDir, 'uploads');
    this.groups = {};
    this.procs = {};
    this.redis = null;
    this.started = Date.now();
    this.deadline = this.started + profile.maxMs;
    mkdirSync(this.logs, { recursive: true });
    mkdirSync(this.uploads, { recursive: true });
  }

  group(host) {
    this.groups[host] ??= createGroup(`${PREFIX}-${host}`);
    return this.groups[host];
  }

  /** Starts a process on `host`, in the host's group. */
  start(host, name, command, args, env) {
    const proc = startIn(host, name, command, args, env, path.join(this.logs, `${name}.log`), {
      ns: net.nsOf(host),
      cgroupProcs: this.group(host).procsFiles,
    });
    this.procs[name] = proc;
    return proc;
  }

  async stop(name) {
    await this.procs[name]?.stop(10_000);
    delete this.procs[name];
  }

  async stopAll(filter = () => true) {
    await Promise.all(
      Object.keys(this.procs)
        .filter(filter)
        .map((name) => this.stop(name)),
    );
  }

  serviceEnv() {
    return {
      API_KEY,
      QUEUE_PREFIX: '{censo}',
      // --shards: the jobs over that many queues, each in its own slot (shared/src/queue/shards.ts).
      QUEUE_SHARDS: String(this.profile.shards ?? 1),
      ...this.redis.env,
      // One folder for every host (the machine's disk, as an NFS share would be): the files of a
      // task go from the API to a worker by path, as they do in any single-folder deployment.
      UPLOAD_DIR: this.uploads,
      // A host of a fraction of a core runs one job at a time.
      WORKER_CONCURRENCY: '1',
      LOG_LEVEL: 'info',
    };
  }

  // --- Redis ---------------------------------------------------------------------------------

  /** A master on rd1, replicas on rd2 and rd3, a sentinel beside each (as topology.mjs). */
  async startSentinel() {
    for (const host of REDIS_HOSTS) {
      const dir = path.join(this.runDir, 'redis', host);
      mkdirSync(dir, { recursive: true });
      const replicaOf = host === 'rd1' ? null : net.ipOf('rd1');
      this.start(host, `redis-${host}`, 'redis-server', redisServerArgs({ bind: net.ipOf(host), port: REDIS_PORT, dir, replicaOf }), {});
      const conf = path.join(dir, 'sentinel.conf');
      writeFileSync(conf, sentinelConfig({ bind: net.ipOf(host), dir, master: net.ipOf('rd1') }));
      this.start(host, `sentinel-${host}`, 'redis-server', [conf, '--sentinel'], {});
    }
    const ready = await until(
      async () => {
        for (const host of REDIS_HOSTS) {
          const known = await ask(net.ipOf(host), SENTINEL_PORT, async (redis) => ({
            replicas: (await redis.call('SENTINEL', 'REPLICAS', 'censo')).length,
            sentinels: (await redis.call('SENTINEL', 'SENTINELS', 'censo')).length,
          }));
          if (known.replicas < 2 || known.sentinels < 2) return false;
        }
        return true;
      },
      { timeoutMs: 60_000, everyMs: 300 },
    );
    if (!ready) throw new Error('the sentinels did not find the replicas and each other within 60 s');
    this.redis = {
      kind: 'sentinel',
      label: 'Sentinel trio (master + 2 replicas, AOF everysec)',
      env: { REDIS_SENTINELS: REDIS_HOSTS.map((h) => `${net.ipOf(h)}:${SENTINEL_PORT}`).join(','), REDIS_SENTINEL_NAME: 'censo' },
      // No failover happens in this profile: the master stays on rd1.
      masters: async () => [`${net.ipOf('rd1')}:${REDIS_PORT}`],
    };
  }

  /** Three masters, each with a replica on another host (redis-cli --cluster create). */
  async startCluster() {
    const nodes = [];
    for (const port of CLUSTER_PORTS) {
      for (const host of REDIS_HOSTS) {
        const dir = path.join(this.runDir, 'redis-cluster', `${host}-${port}`);
        mkdirSync(dir, { recursive: true });
        const args = redisServerArgs({
          bind: net.ipOf(host),
          port,
          dir,
          cluster: { configFile: path.join(dir, 'nodes.conf'), nodeTimeoutMs: 2_000 },
        });
        this.start(host, `redis-${host}-${port}`, 'redis-server', args, {});
        nodes.push(`${net.ipOf(host)}:${port}`);
      }
    }
    const answers = (address) => ask(address.split(':')[0], Number(address.split(':')[1]), (redis) => redis.ping()).then(() => true);
    if (
      !(await until(async () => (await Promise.all(nodes.map((n) => answers(n).catch(() => false)))).every(Boolean), { timeoutMs: 20_000 }))
    )
      throw new Error('the Redis Cluster nodes did not answer within 20 s');
    await run('redis-cli', ['--cluster', 'create', ...nodes, '--cluster-replicas', '1', '--cluster-yes'], { timeout: 30_000 });
    const roleOf = (address) =>
      ask(address.split(':')[0], Number(address.split(':')[1]), async (redis) => ({
        ok: String(await redis.call('CLUSTER', 'INFO')).includes('cluster_state:ok'),
        replication: await redis.info('replication'),
      }));
    const settled = await until(
      async () => {
        for (const node of nodes) {
          const { ok, replication } = await roleOf(node);
          if (!ok || (replication.includes('role:slave') && !replication.includes('master_link_status:up'))) return false;
        }
        return true;
      },
      { timeoutMs: 30_000, everyMs: 300 },
    );
    if (!settled) throw new Error('the Redis Cluster was not ok with its replicas in sync within 30 s');
    this.redis = {
      kind: 'cluster',
      label: 'Redis Cluster (3 masters, a replica each, AOF everysec)',
      env: { REDIS_CLUSTER_NODES: nodes.join(',') },
      masters: async () => {
        const masters = [];
        for (const node of nodes) if ((await roleOf(node)).replication.includes('role:master')) masters.push(node);
        return masters;
      },
    };
  }

  async stopRedis() {
    await this.stopAll((name) => name.startsWith('redis-') || name.startsWith('sentinel-'));
    this.redis = null;
  }

  // --- Services ------------------------------------------------------------------------------

  /** Until `url` answers 200 (at most 90 s); a process that exits meanwhile fails it at once. */
  async waitReady(url, what, proc = this.procs[what]) {
    let died = false;
    const ok = await until(
      async () => {
        died = Boolean(proc && !proc.running);
        return died || (await fetch(url, { signal: AbortSignal.timeout(3_000) })).status === 200;
      },
      {
        timeoutMs: 90_000,
        everyMs: 300,
      },
    );
    if (died) throw new Error(`${what} exited (${await proc.exited}) before it was ready; see ${proc.logFile}`);
    if (!ok) throw new Error(`${what} not ready within 90 s (${url})`);
  }

  /** An API on `host`, unlimited (the API series sets its quota once it is warm). */
  async startApi(host) {
    this.group(host).setQuota(null);
    // ESCALA_CPU_PROF=<folder>: each API writes a V8 CPU profile there when it stops, to name where
    // an API's time per file goes (issue 55: it grew with the replicas).
    const profiling = process.env.ESCALA_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${path.join(process.env.ESCALA_CPU_PROF, host)}`] : [];
    // ESCALA_API_NODE_FLAGS="--min-semi-space-size=16 …": Node/V8 flags for each API, to try a
    // runtime setting on the same series (issue 55: the APIs' garbage collector a file grew with them).
    const flags = (process.env.ESCALA_API_NODE_FLAGS ?? '').split(/\s+/).filter(Boolean);
    this.start(host, host, process.execPath, [...profiling, ...flags, path.join(ROOT, 'services/api/dist/main.js'), '--role=api'], {
      ...this.serviceEnv(),
      HOST: net.ipOf(host),
      PORT: String(API_PORT),
    });
    await this.waitReady(`http://${net.ipOf(host)}:${API_PORT}/readyz`, host);
  }

  /** Workers wk1..wk`count` running (the ones missing are started, unlimited until ready). */
  async ensureWorkers(count) {
    const missing = [];
    for (let i = 1; i <= count; i++) if (!this.procs[`wk${i}`]?.running) missing.push(`wk${i}`);
    for (const host of missing) {
      // Started without a quota: 16 node processes loading their modules at 0.05 core each would
      // take a minute to be ready. The quota is set before anything is measured.
      this.group(host).setQuota(null);
      this.start(host, host, process.execPath, [path.join(ROOT, 'services/worker/dist/main.js')], {
        ...this.serviceEnv(),
        HOST: net.ipOf(host),
        PORT: String(WORKER_PORT),
      });
    }
    await Promise.all(missing.map((host) => this.waitReady(`http://${net.ipOf(host)}:${WORKER_PORT}/readyz`, host)));
    return missing;
  }

  /** Caddy in the proxy host, round robin over `apis` (plain HTTP: the hosts' own network). */
  async startProxy(apis) {
    await this.stop('proxy');
    const dir = path.join(this.runDir, 'caddy');
    mkdirSync(dir, { recursive: true });
    const caddyfile = path.join(dir, `Caddyfile-${apis.length}`);
    writeFileSync(
      caddyfile,
      [
        "# The scale profile's entrance (cluster/escala.mjs): every API host behind one proxy, as",
        "# docker/caddy/Caddyfile puts the replicas, in plain HTTP on the profile's own network.",
        '{',
        '\tadmin off',
        '\tauto_https off',
        '\tservers {',
        '\t\ttimeouts {',
        '\t\t\tread_body 130s',
        '\t\t\tread_header 10s',
        '\t\t\twrite 300s',
        '\t\t\tidle 2m',
        '\t\t}',
        '\t}',
        '}',
        '',
        `http://${net.ipOf('proxy')}:${PROXY_PORT} {`,
        '\trequest_body {',
        '\t\tmax_size 110MB',
        '\t}',
        `\treverse_proxy ${apis.map((host) => `${net.ipOf(host)}:${API_PORT}`).join(' ')} {`,
        '\t\tlb_policy round_robin',
        '\t\tflush_interval -1',
        '\t\ttransport http {',
        '\t\t\tdial_timeout 5s',
        '\t\t\tresponse_header_timeout 260s',
        '\t\t}',
        '\t}',
        '}',
        '',
      ].join('\n'),
    );
    // Caddy's own state (certificates, autosave) in the run folder: the packaged service and its
    // /var/lib/caddy are not used.
    this.start('proxy', 'proxy', 'caddy', ['run', '--config', caddyfile, '--adapter', 'caddyfile'], {
      HOME: dir,
      XDG_CONFIG_HOME: path.join(dir, 'config'),
      XDG_DATA_HOME: path.join(dir, 'data'),
    });
    await this.waitReady(`http://${net.ipOf('proxy')}:${PROXY_PORT}/readyz`, 'caddy');
    return `http://${net.ipOf('proxy')}:${PROXY_PORT}`;
  }

  // --- One measured batch --------------------------------------------------------------------

  /**
   * `censo lote <folder> --servidor <url>` from the load host, with every role's group read before
   * and after, and Redis's command counts. `apiDirect`: an API's own address, for the checks after.
   */
  async batch({ label, folder, files, local, url, apiDirect, roles, concurrency, measured = true }) {
    const out = path.join(this.runDir, 'out', `${label}.csv`);
    mkdirSync(path.dirname(out), { recursive: true });
    const hosts = Object.values(roles).flat();
    const masters = measured ? await this.redis.masters() : [];
    // A Redis host's CPU at rest (the cluster bus, its replica, its cron), read over a few seconds
    // before the batch: what the batch itself costs each host is its CPU less that (--shards).
    const redisHosts = roles.redis ?? [];
    let redisIdleMsPerSec = {};
    if (measured && this.profile.shards !== undefined) {
      const idleFrom = Object.fromEntries(redisHosts.map((h) => [h, this.group(h).sample()]));
      const idleStarted = Date.now();
      await new Promise((resolve) => setTimeout(resolve, IDLE_SAMPLE_MS));
      const seconds = (Date.now() - idleStarted) / 1000;
      redisIdleMsPerSec = Object.fromEntries(redisHosts.map((h) => [h, delta(idleFrom[h], this.group(h).sample()).cpuMs / seconds]));
    }
    const before = Object.fromEntries(hosts.map((h) => [h, this.group(h).sample()]));
    const callsBefore = measured ? await commandCallsOf(masters) : {};
    const byMasterBefore = measured ? await Promise.all(masters.map((master) => commandCallsOf([master]))) : [];
    const busyBefore = machineBusyMs();
    const timeoutMs = Math.min(15 * 60_000, 60_000 + files * 1_000);
    const started = Date.now();
    const cli = this.start(
      'load',
      `cli-${label}`,
      process.execPath,
      [CLI, 'lote', folder, '--servidor', url, '--novo-lote', '-o', out, ...(concurrency ? ['--concurrency', String(concurrency)] : [])],
      { CENSO_API_KEY: API_KEY, HOME: this.runDir },
    );
    const timer = setTimeout(() => cli.signal('SIGKILL'), timeoutMs);
    const exit = await cli.exited;
    clearTimeout(timer);
    const wallMs = Date.now() - started;
    delete this.procs[`cli-${label}`];
    const after = Object.fromEntries(hosts.map((h) => [h, this.group(h).sample()]));
    const busyMs = machineBusyMs() - busyBefore;
    const callsAfter = measured ? await commandCallsOf(masters) : {};
    const byMasterAfter = measured ? await Promise.all(masters.map((master) => commandCallsOf([master]))) : [];

    const cliLog = readFileSync(cli.logFile, 'utf8');
    const lote = /Lote (\S+): criado\./.exec(cliLog)?.[1] ?? null;
    let answered = null;
    if (lote) {
      const res = await fetch(`${apiDirect}/api/lotes/${lote}`, { headers: { 'x-api-key': API_KEY }, signal: AbortSignal.timeout(10_000) });
      const body = res.ok ? await res.json() : null;
      answered = body
        ? { total: body.tarefas.total, concluida: body.tarefas.concluida, falhou: body.tarefas.falhou, estado: body.estado }
        : null;
      // The results go now (not at the end of their retention): the shared folder stays small.
      await fetch(`${apiDirect}/api/lotes/${lote}`, {
        method: 'DELETE',
        headers: { 'x-api-key': API_KEY },
        signal: AbortSignal.timeout(60_000),
      })
        .then((r) => r.arrayBuffer())
        .catch(() => undefined);
    }
    const sameOutput = existsSync(out) && local ? (await sha256Of(out)) === local.sha256 : false;
    rmSync(out, { force: true });

    const result = {
      label,
      files,
      exit,
      wallMs,
      filesPerSec: files / (wallMs / 1000),
      lote,
      answered,
      everyFileAnswered: exit === 0 && answered?.concluida === files && answered?.total === files,
      sameOutput,
      startedAt: started,
      // What the client said when it did not end well (its own lines name the files that failed).
      ...(exit === 0 ? {} : { clientSaid: cliLog.trim().split('\n').slice(-5).join('\n') }),
    };
    if (!measured) return result;

    // CPU per role, and each host's throttling.
    result.hosts = Object.fromEntries(hosts.map((h) => [h, { ...delta(before[h], after[h]), quota: this.group(h).quota }]));
    result.cpuMsPerFile = Object.fromEntries(
      Object.entries(roles).map(([role, list]) => [role, list.reduce((sum, h) => sum + result.hosts[h].cpuMs, 0) / files]),
    );
    // Redis: calls (a Lua script's own commands count as well as its EVALSHA).
    const diff = Object.entries(callsAfter)
      .map(([command, calls]) => [command, calls - (callsBefore[command] ?? 0)])
      .filter(([command, calls]) => calls > 0 && command !== 'info')
      .sort((a, b) => b[1] - a[1]);
    result.redis = {
      nodes: masters.length,
      callsPerFile: diff.reduce((sum, [, calls]) => sum + calls, 0) / files,
      top: diff.slice(0, 5).map(([command, calls]) => ({ command, perFile: calls / files })),
      // Each Redis host's CPU a file less its CPU at rest over the batch's time (--shards only).
      ...(this.profile.shards === undefined
        ? {}
        : {
            idleMsPerSec: redisIdleMsPerSec,
            busyMsPerFile: Object.fromEntries(
              redisHosts.map((h) => [h, (result.hosts[h].cpuMs - (redisIdleMsPerSec[h] ?? 0) * (wallMs / 1000)) / files]),
            ),
          }),
      // Each master's own share (QUEUE_SHARDS spreads the queues' slots over them).
      perMaster: Object.fromEntries(
        masters.map((master, i) => {
          const total = (calls) => Object.entries(calls).reduce((sum, [command, n]) => (command === 'info' ? sum : sum + n), 0);
          return [master, (total(byMasterAfter[i]) - total(byMasterBefore[i])) / files];
        }),
      ),
    };
    // Cores: what the quotas promise plus what the unlimited processes used, against the machine's.
    let quotaCores = 0;
    let unlimitedCores = 0;
    let usedCores = 0;
    for (const d of Object.values(result.hosts)) {
      const used = d.cpuMs / wallMs;
      usedCores += used;
      if (d.quota === null) unlimitedCores += used;
      else quotaCores += d.quota;
    }
    const cores = os.availableParallelism();
    // What the rest of the machine used meanwhile (other people's processes on a shared machine, and
    // this profile's orchestrator): the hosts had that much less than the cores to share.
    const othersCores = Math.max(0, busyMs / wallMs - usedCores);
    result.cores = { machine: cores, quotas: quotaCores, unlimited: unlimitedCores, used: usedCores, others: othersCores };
    result.oversubscribed = quotaCores + unlimitedCores > cores;
    return result;
  }

  /** When an API logged each upload request: the intake, first request to last answer. */
  intake(apis, run) {
    let last = 0;
    let uploads = 0;
    for (const host of apis) {
      const file = path.join(this.logs, `${host}.log`);
      if (!existsSync(file)) continue;
      for (const line of readFileSync(file, 'utf8').split('\n')) {
        if (!line.includes('"request completed"') || !line.includes('"POST"')) continue;
        let entry;
        try {
          entry = JSON.parse(line);
        } catch {
          continue;
        }
        if (entry.route !== '/api/lotes/:id/divergencias-rf') continue;
        const time = typeof entry.time === 'number' ? entry.time : Date.parse(entry.time);
        if (time < run.startedAt) continue;
        uploads++;
        last = Math.max(last, time);
      }
    }
    return uploads > 0 ? { requests: uploads, ms: last - run.startedAt, filesPerSec: run.files / ((last - run.startedAt) / 1000) } : null;
  }
}
