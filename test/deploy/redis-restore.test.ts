// docs/operacao.md, "Cópias de segurança e restauração" (Redis): a backup restored as the guide
// says comes back whole, and stays whole with AOF on. The recipe's Redis (start-redis.sh) writes
// `appendonly yes`, and a Redis with AOF on loads only the AOF, never dump.rdb: the guide's former
// steps (dump.rdb in an empty volume, start) brought the server up with 0 keys. The steps below
// mirror the guide's block marked "restauração do Redis" one for one; the test also checks that
// the guide still says them.
import { spawn, type ChildProcess } from 'node:child_process';
import { copyFile, mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { type Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../helpers/ports.js';
import { ask } from '../helpers/redis-topology.js';
import { stopRedisServer } from '../helpers/redis-server.js';
import { waitFor } from '../helpers/wait-for.js';
import { ROOT, read, requireTool } from './recipes.js';
import { onThisMachine } from '../helpers/deadline.js';

const HOST = '127.0.0.1';
const PASSWORD = 'senha-do-servico-0123456789abcdef';
const ADMIN_PASSWORD = 'senha-do-admin-0123456789abcdef';
const KEYS = 200;

let dir = '';
const started: ChildProcess[] = [];

/** The recipe's Redis, as a lone server (the root compose file's settings) in `data`. */
async function startRecipe(data: string): Promise<{ port: number; child: ChildProcess }> {
  const port = await freePort();
  const child = spawn('sh', [path.join(ROOT, 'deploy/vm/redis/start-redis.sh')], {
    env: {
      PATH: process.env.PATH ?? '',
      REDIS_BIND: HOST,
      REDIS_PORT: String(port),
      REDIS_DATA_DIR: data,
      REDIS_PASSWORD: PASSWORD,
      REDIS_ADMIN_PASSWORD: ADMIN_PASSWORD,
      REDIS_MIN_REPLICAS_TO_WRITE: '0',
      REDIS_PLAIN_TCP: 'yes',
    },
    stdio: 'ignore',
  });
  started.push(child);
  // A conf kept from an earlier start names its own port: the port the server listens on is read back.
  const conf = path.join(data, 'redis.conf');
  await waitFor(async () => (await stat(conf).catch(() => null)) !== null, {
    timeoutMs: onThisMachine(10_000),
    what: 'redis.conf written',
  });
  const listening = Number(/^port (\d+)$/m.exec(await readFile(conf, 'utf8'))?.[1]);
  await waitFor(
    () =>
      admin(listening, (r) => r.ping()).then(
        () => true,
        () => false,
      ),
    { timeoutMs: onThisMachine(15_000), what: `redis on ${listening}` },
  );
  return { port: listening, child };
}

/** One command as the operator's user (censo-admin), as the guide's `admin` function runs it. */
function admin<T>(port: number, run: (redis: Redis) => Promise<T>): Promise<T> {
  return ask(port, run, { username: 'censo-admin', password: ADMIN_PASSWORD, enableReadyCheck: false });
}

const field = (info: string, name: string) => new RegExp(`^${name}:(.*)\\r?$`, 'm').exec(info)?.[1]?.trim();

beforeAll(async () => {
  requireTool('redis-server');
  dir = await mkdtemp(path.join(os.tmpdir(), 'censo-redis-restore-'));
});
afterEach(async () => {
  for (const child of started.splice(0)) await stopRedisServer(child);
});
afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('docs/operacao.md: restoring Redis from a backup', () => {
  it('says the steps this test follows, in a block of their own', () => {
    const guide = read('docs/operacao.md');
    const block = /```sh\n[ ]*# restauração do Redis[^\n]*\n([\s\S]*?)```/.exec(guide)?.[1];
    expect(block, 'the guide marks its restore steps with "# restauração do Redis"').toBeDefined();
    const steps = [
      /rm -rf .*appendonlydir/,
      /cp .*\.rdb .*dump\.rdb/,
      /sed -i 's\/\^appendonly yes\$\/appendonly no\/' .*redis\.conf/,
      /admin DBSIZE/,
      /admin CONFIG SET appendonly yes/,
      /admin INFO persistence/,
      /admin CONFIG REWRITE/,
    ];
    let at = 0;
    for (const step of steps) {
      const match = step.exec(block!.slice(at));
      expect(match, String(step)).not.toBeNull();
      at += match!.index + match![0].length;
    }
  });

  it(
    'brings every key back, with AOF on afterwards and across a restart; dump.rdb with AOF on brings none',
    async () => {
      // A server of the recipe with keys, and its backup (BGSAVE's dump.rdb, what `redis-cli --rdb` also writes).
      const original = path.join(dir, 'original');
      const server = await startRecipe(original);
      await admin(server.port, async (r) => {
        const pipeline = r.pipeline();
        for (let i = 0; i < KEYS; i++) pipeline.set(`{censo}:chave-${i}`, `valor-${i}`);
        await pipeline.exec();
        expect(await r.dbsize()).toBe(KEYS);
        expect(await r.config('GET', 'appendonly')).toEqual(['appendonly', 'yes']);
        await r.bgsave();
        await waitFor(
          async () => {
            const info = await r.info('persistence');
            return field(info, 'rdb_bgsave_in_progress') === '0' && field(info, 'rdb_last_bgsave_status') === 'ok';
          },
          { timeoutMs: onThisMachine(10_000), what: 'BGSAVE done' },
        );
      });
      const backup = path.join(dir, 'censo.rdb');
      await copyFile(path.join(original, 'dump.rdb'), backup);
      await stopRedisServer(server.child);

      // The former steps: the backup as dump.rdb in an empty volume, then start. AOF on: 0 keys.
      const former = path.join(dir, 'antes');
      await mkdir(former);
      await copyFile(backup, path.join(former, 'dump.rdb'));
      const empty = await startRecipe(former);
      expect(await admin(empty.port, (r) => r.dbsize())).toBe(0);
      await stopRedisServer(empty.child);

      // The guide's steps, on a new volume of redis-1.
      const volume = path.join(dir, 'redis-1');
      // 1. A new volume has no redis.conf yet: one start and stop writes it.
      const first = await startRecipe(volume);
      await stopRedisServer(first.child);
      // 2. The backup as dump.rdb, no AOF left, AOF off for this start.
      await rm(path.join(volume, 'appendonlydir'), { recursive: true, force: true });
      await copyFile(backup, path.join(volume, 'dump.rdb'));
      const conf = path.join(volume, 'redis.conf');
      const text = await readFile(conf, 'utf8');
      expect(text).toMatch(/^appendonly yes$/m);
      await writeFile(conf, text.replace(/^appendonly yes$/m, 'appendonly no'));
      // 3. Start: the keys are loaded from dump.rdb.
      const restored = await startRecipe(volume);
      expect(await admin(restored.port, (r) => r.dbsize())).toBe(KEYS);
      // 4. AOF on while running: Redis writes the AOF from what it holds; then wait for it, and
      //    CONFIG REWRITE keeps `appendonly yes` in redis.conf.
      await admin(restored.port, async (r) => {
        expect(await r.config('SET', 'appendonly', 'yes')).toBe('OK');
        await waitFor(
          async () => {
            const info = await r.info('persistence');
            return (
              field(info, 'aof_enabled') === '1' &&
              field(info, 'aof_rewrite_in_progress') === '0' &&
              field(info, 'aof_rewrite_scheduled') === '0' &&
              field(info, 'aof_last_bgrewrite_status') === 'ok'
            );
          },
          { timeoutMs: onThisMachine(15_000), what: 'the AOF written' },
        );
        expect(await r.call('CONFIG', 'REWRITE')).toBe('OK');
      });
      expect(await readFile(conf, 'utf8')).toMatch(/^appendonly yes$/m);
      // A hard stop, and dump.rdb out of the way: what comes back now comes from the AOF alone.
      await stopRedisServer(restored.child);
      await rm(path.join(volume, 'dump.rdb'), { force: true });
      const again = await startRecipe(volume);
      await admin(again.port, async (r) => {
        expect(field(await r.info('persistence'), 'aof_enabled')).toBe('1');
        expect(await r.dbsize()).toBe(KEYS);
        expect(await r.get(`{censo}:chave-${KEYS - 1}`)).toBe(`valor-${KEYS - 1}`);
      });
    },
    onThisMachine(90_000),
  );
});
