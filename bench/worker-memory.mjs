// Memory of a worker process running two 25 MB jobs at once (the goal: under 400 MiB with 2
// threads). A queue deployment (one API, one worker process with WORKER_CONCURRENCY=2) gets two
// t25 requests at the same time; the worker's peak RSS (VmHWM) is read before it stops. One fresh
// deployment per job kind, so each peak is that kind's own.
import { readFileSync } from 'node:fs';
import { API_KEY, MULTIPART_TYPE, deploy, multipartBody } from './http.mjs';
import { memoryOf } from './lib.mjs';

const ROUTES = { 'retorno-rf': '/api/retorno-rf', 'censo-corrigido': '/api/censo-corrigido' };

async function post(url, body) {
  const res = await fetch(url, { method: 'POST', body, headers: { 'x-api-key': API_KEY, 'content-type': MULTIPART_TYPE } });
  const bytes = (await res.arrayBuffer()).byteLength;
  if (res.status !== 200) throw new Error(`${url} answered ${res.status}`);
  return bytes;
}

export async function runWorkerMemory(data, { redisUrl, log = console.log }) {
  const body = multipartBody([
    { field: 'retorno', filename: 'retorno.xlsx', content: readFileSync(data.t25.files.xlsx) },
    { field: 'txt', filename: 'censo.txt', content: readFileSync(data.t25.files.txt) },
  ]);
  const results = {};
  for (const [kind, route] of Object.entries(ROUTES)) {
    const d = await deploy(`wmem-${kind}`, 1, redisUrl, { WORKER_CONCURRENCY: '2' });
    try {
      const worker = d.processes[1];
      const idle = memoryOf(worker.pid).rss;
      const t0 = performance.now();
      const bytes = await Promise.all([post(`${d.url}${route}`, body), post(`${d.url}${route}`, body)]);
      const ms = performance.now() - t0;
      results[kind] = { idle, peak: memoryOf(worker.pid).hwm, apiPeak: memoryOf(d.api.pid).hwm, ms, bytes: bytes[0] };
      log(`  ${kind} ×2: worker idle ${results[kind].idle.toFixed(0)} MiB, peak ${results[kind].peak.toFixed(0)} MiB, ${ms.toFixed(0)} ms`);
    } finally {
      await d.stop();
    }
  }
  return results;
}
