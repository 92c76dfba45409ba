// SPEC §7.5 in embedded mode (npm start without Redis): the asynchronous tasks' jobs run on a pool
// of their own at BATCH_NICENESS, as a worker runs them, and the synchronous requests keep theirs.
import { readdir, readFile, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BATCH_NICENESS, createLogger, loadConfig } from '@censo/shared';
import { startServer, type RunningServer } from '@censo/api';
import { fixtureCases } from '../helpers/fixtures.js';
import { API_KEY, formWith } from '../helpers/http.js';
import { waitForTarefa } from '../helpers/tarefas.js';

const basico = fixtureCases().find((c) => c.name === 'basico')!;

/** Niceness of each of this process's threads (Linux /proc: field 19 of each task's stat). */
async function threadNiceness(): Promise<number[]> {
  const out: number[] = [];
  for (const tid of await readdir('/proc/self/task')) {
    const stat = await readFile(`/proc/self/task/${tid}/stat`, 'utf8').catch(() => null);
    if (stat !== null) out.push(Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]));
  }
  return out;
}

let dir: string;
let server: RunningServer;
beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'censo-embedded-priority-'));
  const config = loadConfig({
    API_KEY,
    HOST: '127.0.0.1',
    PORT: '0',
    UPLOAD_DIR: dir,
    WORKER_CONCURRENCY: '1',
    LOG_LEVEL: 'silent',
    ACCESS_LOG: '/dev/null',
  });
  server = await startServer(config, 'all', createLogger(config, {}));
});
afterAll(async () => {
  await server?.close();
  await rm(dir, { recursive: true, force: true });
});

describe('embedded mode: tasks on threads of their own, below the requests', () => {
  it('a synchronous request runs on a thread at the process niceness; a task on one at BATCH_NICENESS', async () => {
    const headers = { 'x-api-key': API_KEY };
    const before = (await threadNiceness()).filter((nice) => nice === BATCH_NICENESS).length;
    const sync = await fetch(`${server.url}/api/divergencias-rf`, { method: 'POST', headers, body: await formWith([retornoFile()]) });
    expect(sync.status).toBe(200);
    await sync.arrayBuffer();
    expect((await threadNiceness()).filter((nice) => nice === BATCH_NICENESS).length).toBe(before);

    const accepted = await fetch(`${server.url}/api/divergencias-rf`, {
      method: 'POST',
      headers: { ...headers, prefer: 'respond-async' },
      body: await formWith([retornoFile()]),
    });
    expect(accepted.status).toBe(202);
    const { id } = (await accepted.json()) as { id: string };
    expect((await waitForTarefa({ url: server.url }, id)).estado).toBe('concluida');
    // Its thread stays (the pool's idle timeout is 30 s), at the batch niceness.
    expect((await threadNiceness()).filter((nice) => nice === BATCH_NICENESS).length).toBe(before + 1);
  });
});

function retornoFile() {
  return { field: 'retorno' as const, path: basico.retorno.json!, filename: 'retorno.json' };
}
