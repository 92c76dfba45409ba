// Section 8: what tracing costs (issue 48). The embedded service (`npm start`) answers small
// POST /api/divergencias-rf uploads, with tracing off (no OTLP endpoint) and on (every trace
// sampled, exported by OTLP/HTTP to a receiver of the bench's own that counts and drops them),
// alternating off/on rounds so the machine's drift lands on both. Reported: throughput, latency and
// the API process's CPU per request (from /proc), each as the median of the rounds.
// `node bench/tracing.mjs [--quick]` runs it alone and prints the result as JSON.
import { readFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { API_KEY, cannon, freePort, multipartBody, summarize } from './http.mjs';
import { ROOT, cpuSecondsOf, median, memoryOf, startProcess, waitFor } from './lib.mjs';

const API_MAIN = path.join(ROOT, 'services/api/dist/main.js');

/** An OTLP/HTTP endpoint that answers 200 to every export and counts requests and bytes. */
function startReceiver() {
  const got = { requests: 0, bytes: 0 };
  const server = http.createServer((req, res) => {
    req.on('data', (chunk) => (got.bytes += chunk.length));
    req.on('end', () => {
      got.requests++;
      res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
    });
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve({ url: `http://127.0.0.1:${server.address().port}`, got, close: () => server.close() })),
  );
}

async function round(tracing, receiver, { seconds, connections }) {
  const port = await freePort();
  const env = {
    API_KEY,
    PORT: String(port),
    HOST: '127.0.0.1',
    LOG_LEVEL: 'warn',
    ACCESS_LOG: '/dev/null',
    REDIS_URL: '',
    ...(tracing ? { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_TRACES_SAMPLER: 'always_on', OTEL_BSP_SCHEDULE_DELAY: '1000' } : {}),
  };
  const api = startProcess(`api-tracing-${tracing ? 'on' : 'off'}`, [API_MAIN], env);
  try {
    const url = `http://127.0.0.1:${port}`;
    await waitFor(`${url}/healthz`, { process: api });
    const body = multipartBody([
      { field: 'retorno', filename: 'retorno.json', content: readFileSync(path.join(ROOT, 'test/fixtures/basico/retorno.json')) },
    ]);
    const target = { url: `${url}/api/divergencias-rf`, body };
    await cannon({ ...target, connections, amount: 50 }); // warm-up: JIT, the thread pool, the exporter's connection
    const exportsBefore = receiver.got.requests;
    const cpuBefore = cpuSecondsOf(api.pid);
    const result = summarize(await cannon({ ...target, connections, duration: seconds }));
    const cpuMs = ((cpuSecondsOf(api.pid) - cpuBefore) * 1000) / Math.max(1, result.ok);
    return { ...result, cpuMsPerRequest: cpuMs, rssMB: memoryOf(api.pid).rss, exports: receiver.got.requests - exportsBefore };
  } finally {
    await api.stop();
  }
}

export async function runTracing({ quick = false, log = () => {} } = {}) {
  const receiver = await startReceiver();
  const rounds = quick ? 2 : 3;
  const options = { seconds: quick ? 5 : 10, connections: 4 };
  const off = [];
  const on = [];
  try {
    for (let i = 0; i < rounds; i++) {
      log(`  tracing off, round ${i + 1}`);
      off.push(await round(false, receiver, options));
      log(`  tracing on, round ${i + 1}`);
      on.push(await round(true, receiver, options));
    }
  } finally {
    receiver.close();
  }
  const pick = (results) => ({
    reqPerSec: median(results.map((r) => r.reqPerSec)),
    p50: median(results.map((r) => r.p50)),
    p99: median(results.map((r) => r.p99)),
    cpuMsPerRequest: median(results.map((r) => r.cpuMsPerRequest)),
    rssMB: median(results.map((r) => r.rssMB)),
    errors: results.reduce((n, r) => n + r.errors + r.timeouts + r.non2xx, 0),
    exports: results.reduce((n, r) => n + r.exports, 0),
  });
  return { rounds, ...options, off: pick(off), on: pick(on), exportedBytes: receiver.got.bytes };
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const result = await runTracing({ quick: process.argv.includes('--quick'), log: (line) => process.stderr.write(`${line}\n`) });
  process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
}
