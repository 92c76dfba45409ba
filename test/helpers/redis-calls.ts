// Redis calls per file, counted (issue 55): a state's batch as `censo lote --servidor` sends it
// (a batch, its files 50 to a request, closed, its end read back with the combined CSV), through M
// APIs and K workers sharing one redis-server of the measurement's own, whose MONITOR records
// every command with the connection that sent it. Each process reaches Redis through a relay of
// its own that connects from an address of its own on the loopback (127.0.0.<n>), so every command
// is told to its process without changing a line of the service; CLIENT LIST at the end names each
// connection (BullMQ names a worker's). Counts, not timings: what a file costs Redis does not
// depend on how fast this machine is, except for what runs on a clock (the housekeeping's passes,
// a blocking read's timeout, the workers' announcements), which `clocked` sets apart.
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { createJobPool, createLogger, loadConfig, type JobExecutor } from '@censo/shared';
import { startWorker, type RunningWorker } from '@censo/worker';
import { fixtureCases } from './fixtures.js';
import { freePort } from './ports.js';
import { request, startHarness, type Harness } from './tarefas.js';
import { stopRedisServer } from './redis-server.js';

/** One measured run: how many APIs and workers, how many files. */
export interface Scenario {
  readonly apis: number;
  readonly workers: number;
  readonly files: number;
  /** How long each job takes before the real pool runs it (ms): a school's return of 1,500 rows takes 100 ms or more. */
  readonly jobMs?: number;
  /** Files a request carries (default 50, as `censo lote --servidor`). */
  readonly perRequest?: number;
  /** TAREFAS_POR_JOB (default 50, the service's default). */
  readonly tarefasPorJob?: number;
  /**
   * The APIs' housekeeping at its production pace (default), or `false`: an hour apart, so that
   * only the files' own work is counted (what runs on a clock costs per second, not per file).
   */
  readonly clocks?: boolean;
}

/** One command as MONITOR saw it. */
export interface Seen {
  /** `api<i>`, `worker<j>`, or `test` (the measurement's own reads, left out of every count). */
  readonly process: string;
  /** The connection: its name when it has one (CLIENT LIST), else its port. */
  readonly connection: string;
  readonly command: string;
  readonly args: readonly string[];
  /** Run by a Lua script (the EVALSHA before it), not sent by the process itself. */
  readonly inScript: boolean;
  /** For an EVALSHA and the commands it ran, the script's name (the first words of its text). */
  readonly script?: string;
}

export interface Measured {
  readonly scenario: Scenario;
  /** Every command of the measured window, the test's own left out. */
  readonly commands: readonly Seen[];
  /** How long the window lasted (ms): what the clocked calls depend on. */
  readonly ms: number;
}

/** The processes' addresses: API i at 127.0.0.(10 + i), worker j at 127.0.0.(30 + j); the test at 127.0.0.1. */
const apiHost = (i: number) => `127.0.0.${10 + i}`;
const workerHost = (j: number) => `127.0.0.${30 + j}`;
/** The production housekeeping (housekeeping.ts defaultIntervals, with the default RESULT_TTL_HOURS). */
const PRODUCTION_INTERVALS = { reconcileMs: 2_000, sweepMs: 60_000, webhooksMs: 1_000 };
/** Housekeeping an hour apart: none runs during a measurement. */
const NO_CLOCKS = { reconcileMs: 3_600_000, sweepMs: 3_600_000, webhooksMs: 3_600_000 };
const MAX_APIS = 20;
const MAX_WORKERS = 20;

async function startServer(port: number): Promise<ChildProcess> {
  const child = spawn(
    'redis-server',
    // Bound to 127.0.0.1 alone; protected mode would refuse the relays' 127.0.0.<n> as not local.
    ['--port', String(port), '--bind', '127.0.0.1', '--protected-mode', 'no', '--save', '', '--appendonly', 'no', '--daemonize', 'no'],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  for (let i = 0; i < 200 && !output.includes('Ready to accept connections'); i++) {
    if (child.exitCode !== null) throw new Error(`redis-server exited: ${output}`);
    await sleep(25);
  }
  if (!output.includes('Ready to accept connections')) throw new Error(`redis-server not ready: ${output}`);
  return child;
}

/**
 * A relay to Redis whose connections leave from `localAddress` (ioredis cannot be told one): the
 * address MONITOR shows for every command that came through it.
 */
async function relay(port: number, localAddress: string): Promise<{ port: number; close(): Promise<void> }> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect({ port, host: '127.0.0.1', localAddress });
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('error', () => undefined);
      socket.on('close', () => {
        sockets.delete(socket);
        client.destroy();
        upstream.destroy();
      });
    }
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * Runs `scenario` once and returns what Redis was asked during the batch, from its creation to the
 * last of its jobs' bookkeeping. A few files go through first, unmeasured: connections opened,
 * scripts loaded, the group handshake read, as in a service that has been up for a while.
 */
export async function measure(scenario: Scenario): Promise<Measured> {
  if (scenario.apis > MAX_APIS || scenario.workers > MAX_WORKERS) throw new Error('too many processes');
  const port = await freePort();
  const server = await startServer(port);
  const uploadDir = await mkdtemp(path.join(os.tmpdir(), 'censo-chamadas-'));
  const prefix = '{chamadas}';
  const seen: { time: number; source: string; args: string[] }[] = [];
  // MONITOR on a socket of its own, parsed here: ioredis's monitor mode once took a monitored
  // line for the answer to its own ready check ("Command queue state error").
  const monitor = await monitorSocket(port, (time, source, args) => seen.push({ time, source, args }));
  const direct = new Redis(port, '127.0.0.1');
  const basico = fixtureCases().find((c) => c.name === 'basico')!;
  const json = await readFile(basico.retorno.json!);
  const pool = createJobPool({ threads: 2, maxQueue: 1_024 });
  // One pool for every worker of this process: closed here, not by each worker.
  const shared: JobExecutor = {
    run: async (data, signal) => {
      if (scenario.jobMs) await sleep(scenario.jobMs);
      return pool.run(data, signal);
    },
  };
  const workers: RunningWorker[] = [];
  const apis: Harness[] = [];
  const relays: { close(): Promise<void> }[] = [];
  const through = async (host: string) => {
    const opened = await relay(port, host);
    relays.push(opened);
    return `redis://127.0.0.1:${opened.port}`;
  };
  try {
    const silent = createLogger({ logLevel: 'silent' }, {});
    for (let j = 0; j < scenario.workers; j++) {
      const config = loadConfig({
        REDIS_URL: await through(workerHost(j)),
        QUEUE_PREFIX: prefix,
        UPLOAD_DIR: uploadDir,
        LOG_LEVEL: 'silent',
        WORKER_CONCURRENCY: '1',
      });
      const running = await startWorker(config, silent, { executor: shared, drainMs: 1_000 });
      workers.push(running);
      await running.waitUntilReady();
    }
    for (let i = 0; i < scenario.apis; i++) {
      apis.push(
        await startHarness('queue', {
          redisUrl: await through(apiHost(i)),
          noWorker: true,
          uploadDir,
          env: { QUEUE_PREFIX: prefix, TAREFAS_POR_JOB: String(scenario.tarefasPorJob ?? 50) },
          intervals: scenario.clocks === false ? NO_CLOCKS : PRODUCTION_INTERVALS,
          ...(i > 0 ? { sameAs: apis[0]! } : {}),
        }),
      );
    }

    // Each API connected before the first request (a first connection slower than its 2 s would be a 503).
    for (const api of apis) {
      for (let i = 0; i < 400 && (await request(api, 'GET', '/readyz')).status !== 200; i++) await sleep(25);
    }
    const createLote = async (api: Harness): Promise<string> => {
      const answer = await request(api, 'POST', '/api/lotes', { body: '{}', headers: { 'content-type': 'application/json' } });
      if (answer.status !== 201) throw new Error(`POST /api/lotes: ${answer.status} ${answer.bytes.toString()}`);
      return answer.json().id as string;
    };
    const loteKey = (id: string) => `${prefix}:tarefas:lote:${id}`;
    /** The batch's end, read on the test's own connection (not counted): no client polling in the count. */
    const concluded = async (id: string) => {
      for (let i = 0; i < 2_400; i++) {
        const raw = await direct.get(loteKey(id));
        if (raw !== null && (JSON.parse(raw) as { estado: string }).estado === 'concluido') return;
        await sleep(25);
      }
      throw new Error(`batch ${id} did not end`);
    };
    /** The groups' bookkeeping done: no group hash left, no task pending (what follows a batch's end). */
    const settled = async () => {
      for (let i = 0; i < 2_400; i++) {
        const groups = await direct.keys(`${prefix}:censo-tarefas:grupo:*`);
        const pending = await direct.zcard(`${prefix}:tarefas:pendentes`);
        if (groups.length === 0 && pending === 0) return;
        await sleep(25);
      }
      throw new Error('the groups were not forgotten');
    };
    const runBatch = async (files: number): Promise<void> => {
      const lote = await createLote(apis[0]!);
      const perRequest = scenario.perRequest ?? 50;
      for (let sent = 0, k = 0; sent < files; sent += perRequest, k++) {
        const form = new FormData();
        for (let n = sent; n < Math.min(files, sent + perRequest); n++) {
          form.append('referencia', `escola-${String(n).padStart(5, '0')}`);
          form.append('retorno', new Blob([json]), `escola-${n}.json`);
        }
        const answer = await request(apis[k % apis.length]!, 'POST', `/api/lotes/${lote}/divergencias-rf`, { body: form });
        if (answer.status !== 202) throw new Error(`upload: ${answer.status} ${answer.bytes.toString()}`);
      }
      if ((await request(apis[0]!, 'POST', `/api/lotes/${lote}/fechar`)).status !== 200) throw new Error('fechar');
      await concluded(lote);
      // What the client reads once the batch has ended (cli/src/servidor.ts combinedCsv).
      const last = apis[apis.length - 1]!;
      for (const route of [`/api/lotes/${lote}`, `/api/lotes/${lote}/tarefas?limit=1000`, `/api/lotes/${lote}/divergencias?format=csv`]) {
        const answer = await request(last, 'GET', route);
        if (answer.status !== 200) throw new Error(`${route}: ${answer.status}`);
      }
      await settled();
    };

    await runBatch(Math.max(4, scenario.workers * 2));
    const from = seen.length;
    const started = performance.now();
    await runBatch(scenario.files);
    const ms = performance.now() - started;
    const window = seen.slice(from);

    // Each connection's name, by its address (one CLIENT LIST; the test's own connection).
    const names = new Map<string, string>();
    for (const line of ((await direct.client('LIST')) as string).split('\n')) {
      const addr = /\baddr=(\S+)/.exec(line)?.[1];
      const name = /\bname=(\S*)/.exec(line)?.[1];
      if (addr && name) names.set(addr, name);
    }
    const processOf = (source: string): string => {
      const host = source.split(':')[0]!.replace(/^\[|\]$/g, '');
      const octet = Number(host.split('.')[3]);
      if (octet >= 30) return `worker${octet - 30}`;
      if (octet >= 10) return `api${octet - 10}`;
      return 'test';
    };
    // A script's own commands come right after its EVALSHA, with the source `lua`: each is the
    // caller's, as INFO commandstats (the scale profile's count) counts both.
    // The scripts by their SHA1 (EVALSHA names a script by it): BullMQ's by their text, the
    // service's own by the keys they are given.
    const scripts = await bullmqScripts();
    let caller = 'test';
    let running: string | undefined;
    const commands: Seen[] = [];
    for (const { source, args } of window) {
      const inScript = source === 'lua';
      if (!inScript) {
        caller = source;
        const name = args[0]!.toLowerCase();
        running = name === 'evalsha' || name === 'eval' ? scriptName(scripts, args) : undefined;
      }
      const process = processOf(caller);
      if (process === 'test') continue;
      const command = args[0]!.toLowerCase();
      const script = command === 'evalsha' || inScript ? running : undefined;
      commands.push({
        process,
        connection: names.get(caller) || caller.split(':')[1]!,
        command,
        args,
        inScript,
        ...(script ? { script } : {}),
      });
    }
    if (process.env.CHAMADAS_DUMP) {
      const { writeFile } = await import('node:fs/promises');
      await writeFile(`${process.env.CHAMADAS_DUMP}-${scenario.apis}-${scenario.workers}.json`, JSON.stringify(commands));
    }
    return { scenario, commands, ms };
  } finally {
    for (const api of apis.reverse()) await api.stop().catch(() => undefined);
    for (const worker of workers) await worker.close().catch(() => undefined);
    await pool.close();
    for (const opened of relays) await opened.close();
    monitor.destroy();
    direct.disconnect();
    await stopRedisServer(server);
    await rm(uploadDir, { recursive: true, force: true });
  }
}

/** Connects, sends MONITOR and hands each command it reports to `onCommand`. */
async function monitorSocket(port: number, onCommand: (time: number, source: string, args: string[]) => void): Promise<net.Socket> {
  const socket = net.connect({ port, host: '127.0.0.1' });
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  socket.on('error', () => undefined);
  let buffer = '';
  let started = false;
  const ok = new Promise<void>((resolve) => {
    socket.on('data', (chunk: Buffer) => {
      buffer += chunk.toString('latin1');
      for (let end = buffer.indexOf('\r\n'); end >= 0; end = buffer.indexOf('\r\n')) {
        const line = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        if (!started) {
          started = line === '+OK';
          if (started) resolve();
          continue;
        }
        const parsed = /^\+(\d+\.\d+) \[\d+ ([^\]]+)\] (.*)$/.exec(line);
        if (parsed) onCommand(Number(parsed[1]), parsed[2]!, monitoredArgs(parsed[3]!));
      }
    });
  });
  socket.write('MONITOR\r\n');
  await ok;
  return socket;
}

/** MONITOR's quoted arguments (`"set" "k" "a\\"b"`), their escapes undone. */
function monitoredArgs(text: string): string[] {
  const out: string[] = [];
  let i = 0;
  while (i < text.length) {
    if (text[i] !== '"') {
      i++;
      continue;
    }
    let arg = '';
    for (i++; i < text.length && text[i] !== '"'; i++) {
      if (text[i] !== '\\') {
        arg += text[i];
        continue;
      }
      const next = text[++i]!;
      if (next === 'x') {
        arg += String.fromCharCode(parseInt(text.slice(i + 1, i + 3), 16));
        i += 2;
      } else arg += ({ n: '\n', r: '\r', t: '\t', a: '\x07', b: '\b' } as Record<string, string>)[next] ?? next;
    }
    i++;
    out.push(Buffer.from(arg, 'latin1').toString('utf8'));
  }
  return out;
}

/** BullMQ's scripts by the SHA1 of their text. */
async function bullmqScripts(): Promise<Map<string, string>> {
  const all = (await import('bullmq/dist/esm/scripts/index.js')) as unknown as Record<string, { name: string; content: string }>;
  return new Map(Object.values(all).map(({ name, content }) => [createHash('sha1').update(content).digest('hex'), name]));
}

/** An EVAL's or EVALSHA's script: BullMQ's by its SHA1, the service's own by its keys. */
function scriptName(bullmq: ReadonlyMap<string, string>, args: readonly string[]): string {
  const sha = args[0]!.toLowerCase() === 'eval' ? createHash('sha1').update(args[1]!).digest('hex') : args[1]!;
  const known = bullmq.get(sha);
  if (known) return known;
  const keys = args.slice(3, 3 + Number(args[2]));
  if (keys[0]?.includes(':tarefas:')) return 'tarefasCommit';
  if (keys[0]?.includes(':grupos:abertos')) return 'censoClaim';
  if (keys[0]?.includes(':partilha:')) return 'censoOpen';
  if (keys[0]?.includes(':grupo:')) return keys.length === 3 ? 'censoStep' : keys.length === 4 ? 'censoDropItems' : 'censoRenew';
  return sha.slice(0, 8);
}

/**
 * Calls per file by a key of each command (its name, its process…), most first; `scripts`: the
 * commands Lua scripts ran counted as well (the scale profile's figure), else only those sent.
 */
export function perFile(
  measured: Measured,
  key: (seen: Seen) => string = (seen) => seen.command,
  { scripts = false }: { scripts?: boolean } = {},
): [string, number][] {
  const counts = new Map<string, number>();
  for (const seen of measured.commands) if (scripts || !seen.inScript) counts.set(key(seen), (counts.get(key(seen)) ?? 0) + 1);
  return [...counts]
    .map(([name, count]): [string, number] => [name, count / measured.scenario.files])
    .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));
}

/** Total calls per file: the commands sent, or with `scripts` those their scripts ran as well. */
export const callsPerFile = (measured: Measured, { scripts = false }: { scripts?: boolean } = {}): number =>
  measured.commands.filter((seen) => scripts || !seen.inScript).length / measured.scenario.files;

/** A table for the console: per-file calls by command, by process and by connection. */
export function describeMeasured(measured: Measured): string {
  const { apis, workers, files, jobMs = 0, perRequest = 50, tarefasPorJob = 50, clocks = true } = measured.scenario;
  const fmt = (rows: [string, number][]) => rows.map(([name, n]) => `${name} ${n.toFixed(2)}`).join(', ');
  return [
    `${apis} API(s), ${workers} worker(s), ${files} files (${perRequest} a request, TAREFAS_POR_JOB=${tarefasPorJob}, ${jobMs} ms a job, housekeeping ${clocks ? 'as deployed' : 'off'}), ${Math.round(measured.ms)} ms: ${callsPerFile(measured).toFixed(2)} calls/file sent, ${callsPerFile(measured, { scripts: true }).toFixed(2)} with their scripts' commands`,
    `  sent, by command: ${fmt(perFile(measured))}`,
    `  with scripts, by command: ${fmt(perFile(measured, undefined, { scripts: true }))}`,
    `  sent, by process: ${fmt(perFile(measured, (seen) => seen.process))}`,
    `  with scripts, by process and script: ${fmt(perFile(measured, (seen) => `${seen.process}.${seen.script ?? seen.command}`, { scripts: true }))}`,
    `  sent, by process, connection and command: ${fmt(perFile(measured, (seen) => `${seen.process}.${seen.connection}.${seen.command}${seen.script ? `(${seen.script})` : ''}`))}`,
  ].join('\n');
}
