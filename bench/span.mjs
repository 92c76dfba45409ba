// Section 3c: the largest json return through POST /api/divergencias-rf as a client sees it, from
// the multipart encoding to the answer parsed, cut into its parts, each next to its floor (the
// same bytes moved or parsed with nothing else), all in one run, interleaved per round.
import { mkdirSync, readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import http from 'node:http';
import { Worker } from 'node:worker_threads';
import path from 'node:path';
import { API_KEY, deploy } from './http.mjs';
import { DATA, median } from './lib.mjs';

/** The client's own encoding: the file read and put in a FormData, serialised as fetch would. */
async function encode(file) {
  const form = new FormData();
  form.append('retorno', new Blob([await readFile(file)]), 'retorno.json');
  const response = new Response(form);
  return { body: Buffer.from(await response.arrayBuffer()), type: response.headers.get('content-type') };
}

/** One POST over a fresh connection: when the body was sent, the answer's head came, its last byte. */
function post(url, body, type) {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const times = {};
    const req = http.request(url, {
      method: 'POST',
      agent: false,
      headers: { 'content-type': type, 'content-length': body.length, 'x-api-key': API_KEY },
    });
    req.on('finish', () => (times.sent = performance.now() - t0));
    req.on('error', reject);
    req.on('response', (res) => {
      times.head = performance.now() - t0;
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('error', reject);
      res.on('end', () => {
        times.last = performance.now() - t0;
        if (res.statusCode !== 200) reject(new Error(`${url} answered ${res.statusCode}`));
        else resolve({ times, answer: Buffer.concat(chunks) });
      });
    });
    req.end(body);
  });
}

/** A server that only drains uploads and answers `answer`: the loopback's own cost both ways. */
function bareServer(answer) {
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/json', 'content-length': answer.length }).end(answer));
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

/** The job's floor, on a thread as the service runs it: readFile + JSON.parse of the upload. */
function parseOnThread(file) {
  return new Promise((resolve, reject) => {
    const worker = new Worker(
      `const { readFileSync } = require('node:fs'); const t = performance.now(); JSON.parse(readFileSync(${JSON.stringify(file)}, 'utf8')); require('node:worker_threads').parentPort.postMessage(performance.now() - t);`,
      { eval: true },
    );
    worker.once('message', resolve);
    worker.once('error', reject);
  });
}

/** The jobMs of the API's log lines, in order (the request log, LOG_LEVEL=info). */
function jobTimes(logFile) {
  return readFileSync(logFile, 'utf8')
    .split('\n')
    .filter((line) => line.includes('"jobMs"'))
    .map((line) => JSON.parse(line).jobMs);
}

export async function runSpan(data, runs, log = console.log) {
  const file = data.j25.files.json;
  mkdirSync(path.join(DATA, 'logs'), { recursive: true });
  const d = await deploy('span', 0, null, { LOG_LEVEL: 'info' });
  const logFile = path.join(DATA, 'logs', 'api-span.log');
  const url = `${d.url}/api/divergencias-rf`;
  let bare;
  const rounds = [];
  try {
    // Warm-up: threads, JIT, the page cache.
    const warm = await encode(file);
    const { answer } = await post(url, warm.body, warm.type);
    bare = await bareServer(answer);
    const bareUrl = `http://127.0.0.1:${bare.address().port}/`;
    for (let run = 1; run <= runs; run++) {
      const r = {};
      // The span as a client sees it: encode, send, wait, receive, parse.
      let t = performance.now();
      const { body, type } = await encode(file);
      r.encode = performance.now() - t;
      const { times, answer: got } = await post(url, body, type);
      t = performance.now();
      const parsed = JSON.parse(got.toString('utf8'));
      r.parse = performance.now() - t;
      if (!Array.isArray(parsed.divergencias)) throw new Error('no divergencias in the answer');
      r.upload = times.sent;
      r.server = times.head - times.sent;
      r.download = times.last - times.head;
      r.total = r.encode + times.last + r.parse;
      // Floors, in the same round.
      t = performance.now();
      await readFile(file);
      r.readFloor = performance.now() - t;
      const floor = await post(bareUrl, body, type);
      r.uploadFloor = floor.times.sent;
      r.downloadFloor = floor.times.last - floor.times.head;
      r.jobFloor = await parseOnThread(file);
      t = performance.now();
      JSON.parse(readFileSync(file, 'utf8'));
      r.bareParse = performance.now() - t;
      rounds.push(r);
      log(`  span run ${run}/${runs}: ${r.total.toFixed(0)} ms = ${(r.total / r.bareParse).toFixed(2)}× a bare JSON.parse`);
    }
  } finally {
    bare?.close();
    await d.stop();
  }
  const jobs = jobTimes(logFile).slice(-runs);
  rounds.forEach((r, i) => (r.job = jobs[i] ?? NaN));
  const m = (key) => median(rounds.map((r) => r[key]));
  return {
    runs,
    bodyBytes: statBytes(file),
    answerBytes: null,
    rounds,
    median: Object.fromEntries(Object.keys(rounds[0]).map((k) => [k, m(k)])),
    ratio: median(rounds.map((r) => r.total / r.bareParse)),
  };
}

function statBytes(file) {
  return readFileSync(file).length;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { ensureData } = await import('./data.mjs');
  const data = await ensureData();
  const result = await runSpan(data, Number(process.argv[2] ?? 3));
  for (const [k, v] of Object.entries(result.median)) console.log(k.padEnd(14), v.toFixed(0));
  console.log('ratio', result.ratio.toFixed(2));
}
