// The recipes for virtual machines (deploy/vm) and the settings file they share (.env.example):
// Compose per host role, systemd units for hosts without containers, the access log's rotation.
// Read and, where a tool exists for it, run: systemd-analyze verify (the logrotate recipe,
// with a real API, is test/deploy/logrotate.test.ts).
import { mkdir, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '@censo/shared';
import {
  READ_BY_THE_RUNTIME,
  ROOT,
  VERSION,
  censoServices,
  compose,
  hasTool,
  interpolationDefault,
  parseEnvFile,
  read,
  requireTool,
  runTool,
  settingsRead,
  unitDirectives,
} from './recipes.js';

const ENV_FILE = '/etc/censo-api/env';
const example = () => parseEnvFile(read('.env.example'));
const exampleValue = (name: string) => example().find((e) => e.name === name)!.value;

let scratch = '';
beforeAll(async () => {
  scratch = await mkdtemp(path.join(os.tmpdir(), 'censo-vm-recipes-'));
});
afterAll(async () => {
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

describe('.env.example', () => {
  it('lists every setting the service reads, and nothing else but what Node and the AWS SDK read', () => {
    const names = example().map((e) => e.name);
    expect(settingsRead().filter((name) => !names.includes(name))).toEqual([]);
    expect(names.filter((name) => !settingsRead().includes(name) && !READ_BY_THE_RUNTIME.has(name))).toEqual([]);
    expect(new Set(names).size).toBe(names.length);
  });

  it('explains each setting in a comment above it', () => {
    const bare = example().filter((e) => e.comment.length === 0 || e.comment.every((line) => line.trim() === ''));
    expect(bare.map((e) => e.name)).toEqual([]);
  });

  it('is a configuration the service starts with, once the secrets are filled in (Sentinel, the bucket)', () => {
    const env = Object.fromEntries(example().map((e) => [e.name, e.value]));
    const config = loadConfig({ ...env, API_KEY: 'k', REDIS_PASSWORD: 'p', REDIS_SENTINEL_PASSWORD: 's' });
    expect(config.redis).toMatchObject({ kind: 'sentinel', name: 'censo', sentinels: expect.any(Array) as unknown });
    expect(config.storage.kind).toBe('s3');
    // The defaults it states are the service's own.
    const defaults = loadConfig({});
    expect(config.resultTtlMs).toBe(defaults.resultTtlMs);
    expect(config.loteMaxMs).toBe(defaults.loteMaxMs);
    expect(config.jobTimeoutMs).toBe(defaults.jobTimeoutMs);
  });
});

describe('deploy/vm/compose', () => {
  const files = ['deploy/vm/compose/proxy-api.yml', 'deploy/vm/compose/worker.yml', 'deploy/vm/compose/redis.yml'];

  it('runs the API on the proxy hosts and the worker on the worker hosts, with the start commands and the shared env file', () => {
    const roles = Object.fromEntries(files.map((file) => [file, censoServices(compose(file))]));
    expect(roles['deploy/vm/compose/proxy-api.yml']!.map(([name, s]) => [name, s.command])).toEqual([
      ['api', ['node', 'services/api/dist/main.js', '--role=api']],
    ]);
    expect(roles['deploy/vm/compose/worker.yml']!.map(([name, s]) => [name, s.command])).toEqual([
      ['worker', ['node', 'services/worker/dist/main.js']],
    ]);
    expect(roles['deploy/vm/compose/redis.yml']).toEqual([]);
    for (const [, service] of Object.values(roles).flat()) {
      expect(service.env_file).toBe(ENV_FILE);
      // PORT makes a worker serve /healthz, /readyz and /metrics (SPEC §6).
      expect(service.environment?.PORT).toBe('3000');
    }
  });

  it('sets only variables the service reads, and pins the service image to the package version', () => {
    for (const file of files) {
      for (const [name, service] of censoServices(compose(file))) {
        const unknown = Object.keys(service.environment ?? {}).filter(
          (key) => !settingsRead().includes(key) && !READ_BY_THE_RUNTIME.has(key),
        );
        expect(unknown, `${file} ${name}`).toEqual([]);
        expect(interpolationDefault(service.image!)).toMatch(new RegExp(`/censo-api:${VERSION.replace(/\./g, '\\.')}$`));
        // The image's own user (node, not root: the Dockerfile's last USER), a read-only root,
        // no capabilities.
        expect(service.user).toBeUndefined();
        expect([...read('Dockerfile').matchAll(/^USER (\S+)$/gm)].at(-1)?.[1]).toBe('node');
        expect(service.read_only).toBe(true);
        expect(service.cap_drop).toEqual(['ALL']);
      }
    }
    for (const file of [...files, 'docker-compose.yml', 'docker-compose.sentinel.yml', 'docker-compose.s3.yml']) {
      for (const [name, service] of Object.entries(compose(file).services)) {
        if (!service.image) continue;
        const image = interpolationDefault(service.image)!;
        expect(image, `${file} ${name}`).toMatch(/:[\w][\w.-]*$|@sha256:[0-9a-f]{64}$/);
        expect(image, `${file} ${name}`).not.toMatch(/:latest$/);
      }
    }
  });

  it('mounts the folders the env file names: the internal CA and the access log', () => {
    const api = compose('deploy/vm/compose/proxy-api.yml').services.api!;
    const mounted = (api.volumes ?? []).map((v) => v.split(':')[1]);
    expect(mounted).toContain(path.dirname(exampleValue('ACCESS_LOG')));
    expect(mounted).toContain('/etc/censo-api/ca');
    expect(api.environment?.UPLOAD_DIR).toBe('/data/uploads');
  });

  it('sends requests to its own host’s API only, skips it while not ready, with limits above the service’s own', () => {
    const file = compose('deploy/vm/compose/proxy-api.yml');
    const proxy = file.services.proxy!;
    expect(proxy.volumes).toContain('../caddy/Caddyfile:/etc/caddy/Caddyfile:ro');
    const caddy = read('deploy/vm/caddy/Caddyfile');
    // One upstream: loopback by default (Caddy under systemd), the same project's `api` service
    // under Compose; never a list of hosts, whose HTTP would cross the network in clear.
    const upstreams = [...caddy.matchAll(/^\s*reverse_proxy (\S+)/gm)].map((m) => m[1]);
    expect(upstreams).toEqual(['{$API_UPSTREAM:127.0.0.1:3000}']);
    expect(proxy.environment?.API_UPSTREAM).toBe('api:3000');
    expect(Object.keys(file.services)).toContain('api');
    expect(read('docs/operacao.md')).not.toMatch(/API_UPSTREAMS/);
    expect(caddy).toMatch(/health_uri \/readyz/);
    expect(caddy).toMatch(/tls \{\$TLS_CERT\} \{\$TLS_KEY\}/);
    const seconds = (key: string) => Number(new RegExp(`^\\s*${key} (\\d+)s$`, 'm').exec(caddy)?.[1]);
    const defaults = loadConfig({});
    const uploadS = defaults.uploadTimeoutMs / 1000;
    const jobS = defaults.jobTimeoutMs / 1000;
    expect(seconds('read_body')).toBeGreaterThan(uploadS);
    expect(seconds('write')).toBeGreaterThan(uploadS + jobS);
    expect(seconds('response_header_timeout')).toBeGreaterThan(uploadS + jobS);
    expect(Number(/max_size (\d+)MB/.exec(caddy)?.[1])).toBeGreaterThan(4 * 25);
  });

  it('runs Redis and Sentinel from the tested scripts, with passwords from a root-only env file, never on a command line', () => {
    const redis = compose('deploy/vm/compose/redis.yml');
    expect(Object.keys(redis.services).sort()).toEqual(['redis', 'sentinel']);
    for (const [name, service] of Object.entries(redis.services)) {
      expect(service.network_mode, name).toBe('host');
      expect(service.env_file, name).toBe('/etc/censo-redis/env');
      expect(JSON.stringify([service.command, service.entrypoint])).not.toMatch(/requirepass|auth-pass|PASSWORD/);
      // The healthcheck authenticates through the environment (REDISCLI_AUTH), not an argument.
      expect(JSON.stringify(service.healthcheck?.test)).toContain('REDISCLI_AUTH=');
    }
    expect(redis.services.redis!.volumes).toContain('../redis/start-redis.sh:/opt/censo/start-redis.sh:ro');
    // Both scripts source listen.sh from their own folder.
    for (const service of Object.values(redis.services)) expect(service.volumes).toContain('../redis/listen.sh:/opt/censo/listen.sh:ro');
    expect(redis.services.sentinel!.volumes).toContain('../redis/start-sentinel.sh:/opt/censo/start-sentinel.sh:ro');
  });
});

describe('the VM recipes’ exposure', () => {
  /** Caddy's `path` matcher, for the exact paths and `/prefix/*` patterns the Caddyfiles use. */
  const caddyPathMatches = (patterns: string[], requestPath: string) =>
    patterns.some((p) => (p.endsWith('/*') ? requestPath.startsWith(p.slice(0, -1)) : requestPath === p));

  it('answers 404 at the public entrance for /metrics and /admin/queues, before any proxying (both Caddyfiles)', () => {
    for (const file of ['deploy/vm/caddy/Caddyfile', 'docker/caddy/Caddyfile']) {
      const caddy = read(file);
      const matcher = /^\s*@(\w+) path (.+)$/m.exec(caddy);
      expect(matcher, file).not.toBeNull();
      const [, name, list] = matcher!;
      expect(caddy, file).toMatch(new RegExp(`^\\s*respond @${name} 404$`, 'm'));
      // Inside the site block, ahead of reverse_proxy (Caddy runs respond before reverse_proxy
      // anyway; the order here is for the reader).
      expect(caddy.indexOf(`respond @${name} 404`), file).toBeLessThan(caddy.indexOf('reverse_proxy'));
      const patterns = list!.trim().split(/\s+/);
      for (const blocked of ['/metrics', '/metrics/', '/admin/queues', '/admin/queues/', '/admin/queues/api/queues']) {
        expect(caddyPathMatches(patterns, blocked), `${file} ${blocked}`).toBe(true);
      }
      for (const open of ['/', '/api/retorno', '/healthz', '/auth/login'])
        expect(caddyPathMatches(patterns, open), `${file} ${open}`).toBe(false);
    }
  });

  it('publishes the service’s port on the host’s internal address only, never on every address (Docker goes around the firewall)', () => {
    for (const file of ['deploy/vm/compose/proxy-api.yml', 'deploy/vm/compose/worker.yml', 'deploy/vm/compose/redis.yml']) {
      for (const [name, service] of Object.entries(compose(file).services)) {
        for (const port of service.ports ?? []) {
          if (name === 'proxy' && port === '443:443') continue; // the public entrance
          // host_ip:host_port:container_port, the host_ip a required variable or loopback.
          expect(port, `${file} ${name}`).toMatch(/^(\$\{CENSO_IP_INTERNO:\?[^}]+\}|127\.0\.0\.1):3000:3000$/);
        }
      }
    }
    const guide = read('docs/operacao.md');
    expect(guide).toMatch(/iptables -I DOCKER-USER .*--ctorigdstport 3000/);
    expect(guide).toContain('CENSO_IP_INTERNO');
  });

  it('trusts X-Forwarded-For from the own host’s proxy alone, never from everyone (.env.example and the compose files)', () => {
    const trust = loadConfig({ TRUST_PROXY: exampleValue('TRUST_PROXY') }).trustProxy;
    expect(Array.isArray(trust)).toBe(true);
    const proxy = compose('deploy/vm/compose/proxy-api.yml').services.proxy as { networks?: Record<string, { ipv4_address?: string }> };
    const proxyAddress = Object.values(proxy.networks ?? {})[0]?.ipv4_address;
    // Loopback (Caddy under systemd) and the compose proxy's fixed address: nothing else.
    expect([...(trust as string[])].sort()).toEqual(['127.0.0.1', proxyAddress].sort());
    const dev = compose('docker-compose.yml');
    const devProxy = dev.services.proxy as { networks?: Record<string, { ipv4_address?: string }> };
    expect(interpolationDefault(dev.services.api!.environment!.TRUST_PROXY!)).toBe(devProxy.networks?.default?.ipv4_address);
  });

  it('speaks TLS to Redis in the settings file, with the internal CA, and requires it in the VM Redis recipe', () => {
    const config = loadConfig({
      ...Object.fromEntries(example().map((e) => [e.name, e.value])),
      API_KEY: 'k',
      REDIS_PASSWORD: 'p',
      REDIS_SENTINEL_PASSWORD: 's',
    });
    expect(config.redis).toMatchObject({ kind: 'sentinel', tls: true });
    expect(exampleValue('NODE_EXTRA_CA_CERTS')).toBe('/etc/censo-api/ca/ca-interna.crt');
    // Plain TCP is asked for by name, only in the single-host compose files at the root.
    for (const file of ['deploy/vm/compose/redis.yml']) {
      for (const service of Object.values(compose(file).services)) expect(service.environment?.REDIS_PLAIN_TCP).toBeUndefined();
      expect(read(file)).toMatch(/REDIS_TLS_CERT_FILE=/);
    }
    expect(compose('docker-compose.yml').services.redis!.environment?.REDIS_PLAIN_TCP).toBe('yes');
  });
});

describe('deploy/vm/systemd', () => {
  const unit = (name: string) => unitDirectives(read(`deploy/vm/systemd/${name}`));
  const value = (name: string, key: string) => unit(name).find((d) => d.key === key)?.value;

  it('starts each role with the start command, as the censo user, from /opt/censo-api and /etc/censo-api/env', async () => {
    expect(value('censo-api.service', 'ExecStart')).toBe('/usr/bin/node services/api/dist/main.js --role=api');
    expect(value('censo-worker.service', 'ExecStart')).toBe('/usr/bin/node services/worker/dist/main.js');
    for (const name of ['censo-api.service', 'censo-worker.service']) {
      expect(value(name, 'User')).toBe('censo');
      expect(value(name, 'WorkingDirectory')).toBe('/opt/censo-api');
      expect(value(name, 'EnvironmentFile')).toBe(ENV_FILE);
      // Everything through the env file: no setting hidden in a unit.
      expect(unit(name).filter((d) => d.key === 'Environment')).toEqual([]);
      // The script exists where WorkingDirectory + ExecStart put it (a release is this tree, built).
      const script = value(name, 'ExecStart')!.split(' ')[1]!;
      await expect(readFile(path.join(ROOT, script))).resolves.toBeInstanceOf(Buffer);
    }
    expect(read('deploy/vm/systemd/censo.sysusers.conf')).toMatch(/^u censo - "censo-api" \/opt\/censo-api \/usr\/sbin\/nologin$/m);
  });

  it('is hardened: no new privileges, a read-only system but for UPLOAD_DIR (and the access log), a private /tmp', () => {
    for (const name of ['censo-api.service', 'censo-worker.service']) {
      // Only the system calls of an ordinary service, of the native architecture.
      expect(value(name, 'SystemCallFilter'), name).toBe('@system-service');
      expect(value(name, 'SystemCallArchitectures'), name).toBe('native');
      expect(value(name, 'NoNewPrivileges'), name).toBe('yes');
      expect(value(name, 'ProtectSystem'), name).toBe('strict');
      expect(value(name, 'PrivateTmp'), name).toBe('yes');
      expect(value(name, 'ProtectHome'), name).toBe('yes');
      expect(value(name, 'CapabilityBoundingSet'), name).toBe('');
      const writable = value(name, 'ReadWritePaths')!.split(' ');
      expect(writable, name).toContain(exampleValue('UPLOAD_DIR'));
      // StateDirectory makes UPLOAD_DIR (under /var/lib) exist, owned by the user, before the
      // sandbox is set up: ReadWritePaths of a missing folder would stop the start.
      const state = value(name, 'StateDirectory')!
        .split(' ')
        .map((dir) => `/var/lib/${dir}`);
      expect(state, name).toContain(exampleValue('UPLOAD_DIR'));
    }
    expect(value('censo-api.service', 'ReadWritePaths')!.split(' ')).toContain(path.dirname(exampleValue('ACCESS_LOG')));
    expect(`/var/log/${value('censo-api.service', 'LogsDirectory')}`).toBe(path.dirname(exampleValue('ACCESS_LOG')));
  });

  it('passes systemd-analyze verify when systemd is there (the interpreter path put where this Node is)', async () => {
    if (!hasTool('systemd-analyze')) {
      // Hosts without systemd: the parsing above is the check (unitDirectives throws on a bad line).
      for (const name of ['censo-api.service', 'censo-worker.service']) expect(unit(name).length).toBeGreaterThan(20);
      return;
    }
    const dir = path.join(scratch, 'units');
    await rm(dir, { recursive: true, force: true });
    await mkdir(dir);
    for (const name of await readdir(path.join(ROOT, 'deploy/vm/systemd'))) {
      if (!name.endsWith('.service')) continue;
      const text = read(`deploy/vm/systemd/${name}`).replace(/^ExecStart=\/usr\/bin\/node /m, `ExecStart=${process.execPath} `);
      await writeFile(path.join(dir, name), text);
    }
    const run = await runTool(requireTool('systemd-analyze'), ['verify', 'censo-api.service', 'censo-worker.service'], { cwd: dir });
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
  });
});

describe('the process a supervisor starts', () => {
  it('is node itself in the units and the image, never npm (which does not pass SIGTERM on)', () => {
    for (const name of ['censo-api.service', 'censo-worker.service']) {
      const exec = unitDirectives(read(`deploy/vm/systemd/${name}`)).find((d) => d.key === 'ExecStart')!.value;
      expect(exec, name).toMatch(/^\/usr\/bin\/node services\/(api|worker)\/dist\/main\.js/);
    }
    const dockerfile = read('Dockerfile');
    const cmd = [...dockerfile.matchAll(/^CMD (.+)$/gm)].at(-1)?.[1];
    expect(JSON.parse(cmd!)).toEqual(['node', 'services/api/dist/main.js']);
    expect(dockerfile).not.toMatch(/^ENTRYPOINT/m);
  });
});

describe('docs/operacao.md and the version', () => {
  it('names only the package version in release tags and packages (releases are tagged v<version>)', () => {
    const guide = read('docs/operacao.md');
    const tags = [...guide.matchAll(/\bv(\d+\.\d+\.\d+)\b/g)].map((m) => m[1]);
    expect(tags.length).toBeGreaterThan(0);
    expect(tags.filter((v) => v !== VERSION)).toEqual([]);
    const packages = [...guide.matchAll(/censo-api[-:](\d+\.\d+\.\d+)/g)].map((m) => m[1]);
    expect(packages.filter((v) => v !== VERSION)).toEqual([]);
    expect(guide).toContain('`v<versão>`');
  });
});
