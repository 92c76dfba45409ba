// SPEC §9 "Logs are strict JSON: no key twice in a line" (issue 34: every worker line of the
// combined process had `role` twice, and OpenSearch refuses such documents). The real entry
// points, at debug level, through a run that reaches most of what they log: a synchronous upload,
// an asynchronous task to its result, a bad request, a 401, the close. Every stdout line of the
// run, not a sample, goes through a parser that refuses a repeated key.
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixtureCases } from '../helpers/fixtures.js';
import { API_KEY, formWith, type UploadFile } from '../helpers/http.js';
import { startServiceProcess, type ServiceProcess } from '../helpers/processes.js';
import { deleteKeys, startTestRedis, uniqueQueuePrefix, type TestRedis } from '../helpers/redis.js';
import { DuplicateKeyError, parseStrictJson } from '../helpers/strict-json.js';
import { postAsync, request, waitForTarefa } from '../helpers/tarefas.js';

const basico = fixtureCases().find((c) => c.name === 'basico')!;
const retorno: UploadFile = { field: 'retorno', path: basico.retorno.json, filename: 'retorno.json' };
const txt: UploadFile = { field: 'txt', path: basico.txt, filename: 'censo.txt' };

let redis: TestRedis;
let uploadDir: string;
const queuePrefix = uniqueQueuePrefix();

beforeAll(async () => {
  redis = await startTestRedis();
  uploadDir = await mkdtemp(path.join(os.tmpdir(), 'censo-strict-logs-'));
});
afterAll(async () => {
  await deleteKeys(redis.url, queuePrefix);
  await rm(uploadDir, { recursive: true, force: true });
  await redis?.stop();
});

const baseEnv = () => ({ API_KEY, HOST: '127.0.0.1', PORT: '0', UPLOAD_DIR: uploadDir, LOG_LEVEL: 'debug', WORKER_CONCURRENCY: '1' });
const queueEnv = () => ({ ...baseEnv(), REDIS_URL: redis.url, QUEUE_PREFIX: queuePrefix });

/** The requests of the run, against whichever process answers HTTP. */
async function exercise(url: string): Promise<void> {
  const api = { url };
  const sync = await request(api, 'POST', '/api/divergencias-rf', { body: await formWith([retorno]) });
  expect(sync.status).toBe(200);
  const accepted = await postAsync(api, '/api/retorno-rf', [retorno, txt]);
  expect(accepted.status).toBe(202);
  const id = accepted.json().id as string;
  expect((await waitForTarefa(api, id)).estado).toBe('concluida');
  expect((await request(api, 'GET', `/api/tarefas/${id}/resultado`)).status).toBe(200);
  const bad = await request(api, 'POST', '/api/divergencias-rf', { body: await formWith([{ ...retorno, filename: 'retorno.pdf' }]) });
  expect(bad.status).toBe(400);
  const unauthorised = await request(api, 'POST', '/api/divergencias-rf', {
    body: await formWith([retorno]),
    headers: { 'x-api-key': 'wrong' },
  });
  expect(unauthorised.status).toBe(401);
}

/** SIGTERM, then every line the process wrote (stdout read to its end). */
async function stopAndCollect(service: ServiceProcess): Promise<string[]> {
  const ended = service.child.stdout!.readableEnded ? Promise.resolve() : once(service.child.stdout!, 'end');
  expect(await service.stop()).toBe(0);
  await ended;
  return service.raw;
}

/** Each line that is not strict JSON, with why. */
function notStrict(lines: readonly string[]): string[] {
  const out: string[] = [];
  for (const line of lines) {
    try {
      parseStrictJson(line);
    } catch (err) {
      out.push(`${err instanceof DuplicateKeyError ? err.message : String(err)}: ${line.slice(0, 300)}`);
    }
  }
  return out;
}

describe('every log line of a run is strict JSON', () => {
  it('embedded (npm start without Redis)', async () => {
    const proc = startServiceProcess('services/api/dist/main.js', baseEnv());
    await exercise((await proc.line('censo-api listening')).url as string);
    const lines = await stopAndCollect(proc);
    expect(lines.length).toBeGreaterThan(10);
    expect(notStrict(lines)).toEqual([]);
  });

  it('combined queue mode (npm start with REDIS_URL: the API and a worker in one process)', async () => {
    const proc = startServiceProcess('services/api/dist/main.js', queueEnv());
    await exercise((await proc.line('censo-api listening')).url as string);
    const lines = await stopAndCollect(proc);
    expect(notStrict(lines)).toEqual([]);
    // The worker's own lines were among those checked: the ones that had `role` twice.
    const parsed = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(parsed.filter((line) => line.msg === 'job done')).toHaveLength(2);
    expect(parsed.find((line) => line.msg === 'worker started')).toMatchObject({ role: 'all', component: 'worker' });
  });

  it('separate roles (start:api and start:worker)', async () => {
    const worker = startServiceProcess('services/worker/dist/main.js', queueEnv());
    await worker.line('worker started');
    const api = startServiceProcess('services/api/dist/main.js', queueEnv(), ['--role=api']);
    await exercise((await api.line('censo-api listening')).url as string);
    const lines = [...(await stopAndCollect(api)), ...(await stopAndCollect(worker))];
    expect(notStrict(lines)).toEqual([]);
  });
});
