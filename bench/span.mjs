// Section 3c: the largest json return through POST /api/divergencias-rf as a client sees it, from
// the multipart encoding to the answer parsed, cut into its parts, each next to its floor (the
// same bytes moved or parsed with nothing else), all in one run, interleaved per round.
import { mkdirSync, readFileSync, statSync } from 'node:fs';
import { openAsBlob } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import http from 'node:http';
import { Worker } from 'node:worker_threads';
import path from 'node:path';
import { apiWithoutHeapTuning } from './before.mjs';
import { API_KEY, deploy } from './http.mjs';
import { DATA, median, medians } from './lib.mjs';

/**
 * The client's own encoding: a FormData holding the file as a file-backed Blob (fs.openAsBlob), so
 * the multipart body is produced as it is sent, never whole in memory.
 */
export async function form(file) {
  const body = new FormData();
  body.append('retorno', await openAsBlob(file), path.basename(file));
  return () => {
    const response = new Response(body);
    return { stream: Readable.fromWeb(response.body), type: response.headers.get('content-type') };
  };
}

/**
 * The other way a client encodes (the earlier bench, and the 4.2–4.7× of issue 25): the file read
 * into memory, then the whole body built before the first byte is sent.
 */
async function formInMemory(file) {
  const body = new FormData();
  body.append('retorno', new Blob([await readFile(file)]), 'retorno.json');
  const bytes = Buffer.from(await new Response(body).arrayBuffer());
  const type = `multipart/form-data; boundary=${/^--(.*)\r\n/.exec(bytes.toString('latin1', 0, 200))[1]}`;
  return () => ({ stream: Readable.from([bytes]), type });
}

/** The same encoding alone, to the last byte, with nothing sent. */
async function encodeOnly(file) {
  const { stream } = (await form(file))();
  let bytes = 0;
  for await (const chunk of stream) bytes += chunk.length;
  return bytes;
}

/**
 * One POST over a fresh connection, the body streamed as `encoded()` makes it: when its last byte was sent,
 * when the answer's head came, its last byte.
 */
export function post(url, encoded, requestId) {
  const { stream, type } = encoded();
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const times = {};
    const req = http.request(url, {
      method: 'POST',
      agent: false,
      headers: { 'content-type': type, 'x-api-key': API_KEY, ...(requestId ? { 'x-request-id': requestId } : {}) },
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
    pipeline(stream, req).catch(reject);
  });
}

/** A server that only drains uploads and answers `answer`: the loopback's own cost both ways. */
export function bareServer(answer) {
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

/** The jobMs the API logged for each request id (the request log, LOG_LEVEL=info). */
export function jobTimes(logFile) {
  const times = new Map();
  for (const line of readFileSync(logFile, 'utf8').split('\n')) {
    if (!line.includes('"jobMs"')) continue;
    const entry = JSON.parse(line);
    times.set(entry.reqId, entry.jobMs);
  }
  return times;
}

/** One streaming request, timed as a client sees it: encode while sending, wait, receive, parse. */
export async function clientSpan(url, file, requestId) {
  const t = performance.now();
  const request = await form(file);
  const { times, answer } = await post(url, request, requestId);
  const t1 = performance.now();
  const parsed = JSON.parse(answer.toString('utf8'));
  const parse = performance.now() - t1;
  if (!Array.isArray(parsed.divergencias)) throw new Error('no divergencias in the answer');
  return { request, times, parse, total: performance.now() - t };
}

/**
 * `before`: a second API, on another build of the core (`sharedDist`) or another copy of the API
 * (`apiMain`), the rest the same; each round also times the span through it, in alternating
 * order, as `before*`.
 */
export async function runSpan(data, runs, log = console.log, { before: beforeBuild = null } = {}) {
  const file = data.j25.files.json;
  mkdirSync(path.join(DATA, 'logs'), { recursive: true });
  const d = await deploy('span', 0, null, { LOG_LEVEL: 'info' });
  let before = null;
  let bare;
  let answerBytes;
  const rounds = [];
  try {
    if (beforeBuild) before = await deploy('span-before', 0, null, { LOG_LEVEL: 'info' }, beforeBuild);
    const url = `${d.url}/api/divergencias-rf`;
    const beforeUrl = before ? `${before.url}/api/divergencias-rf` : null;
    // Warm-up: threads, JIT, the page cache.
    const { answer } = await post(url, await form(file));
    if (beforeUrl) await post(beforeUrl, await form(file));
    bare = await bareServer(answer);
    const bareUrl = `http://127.0.0.1:${bare.address().port}/`;
    for (let run = 1; run <= runs; run++) {
      const r = {};
      const id = `span-${process.pid}-${run}`;
      let earlier = null;
      // The earlier build first in odd rounds, second in even ones.
      if (beforeUrl && run % 2 === 1) earlier = await clientSpan(beforeUrl, file, id);
      const { request, times, parse, total } = await clientSpan(url, file, id);
      if (beforeUrl && run % 2 === 0) earlier = await clientSpan(beforeUrl, file, id);
      r.parse = parse;
      r.total = total;
      if (earlier) {
        r.beforeTotal = earlier.total;
        r.beforeUpload = earlier.times.sent;
        r.beforeServer = earlier.times.head - earlier.times.sent;
        r.beforeDownload = earlier.times.last - earlier.times.head;
        r.beforeParse = earlier.parse;
      }
      // The in-memory client, same request otherwise.
      let t = performance.now();
      const whole = await post(url, await formInMemory(file));
      JSON.parse(whole.answer.toString('utf8'));
      r.totalInMemory = performance.now() - t;
      r.upload = times.sent;
      r.server = times.head - times.sent;
      r.download = times.last - times.head;
      // Floors, in the same round: the same bytes with nothing else.
      t = performance.now();
      await encodeOnly(file);
      r.encodeOnly = performance.now() - t;
      const floor = await post(bareUrl, request);
      r.uploadFloor = floor.times.sent;
      r.downloadFloor = floor.times.last - floor.times.head;
      r.jobFloor = await parseOnThread(file);
      // The denominator of every ratio: the median of three, so one slow parse does not flatter a round.
      const parses = [];
      for (let k = 0; k < 3; k++) {
        t = performance.now();
        JSON.parse(readFileSync(file, 'utf8'));
        parses.push(performance.now() - t);
      }
      r.bareParse = median(parses);
      rounds.push(r);
      const earlierNote = earlier ? `; earlier core ${r.beforeTotal.toFixed(0)} ms = ${(r.beforeTotal / r.bareParse).toFixed(2)}×` : '';
      log(`  span run ${run}/${runs}: ${r.total.toFixed(0)} ms = ${(r.total / r.bareParse).toFixed(2)}× a bare JSON.parse${earlierNote}`);
    }
    answerBytes = answer.length;
  } finally {
    bare?.close();
    await d.stop();
    await before?.stop();
  }
  const jobs = jobTimes(path.join(DATA, 'logs', 'api-span.log'));
  const beforeJobs = before ? jobTimes(path.join(DATA, 'logs', 'api-span-before.log')) : new Map();
  rounds.forEach((r, i) => {
    r.job = jobs.get(`span-${process.pid}-${i + 1}`) ?? NaN;
    if (before) r.beforeJob = beforeJobs.get(`span-${process.pid}-${i + 1}`) ?? NaN;
  });
  return {
    runs,
    bodyBytes: statSync(file).size,
    answerBytes,
    rounds,
    median: medians(rounds),
    ratio: median(rounds.map((r) => r.total / r.bareParse)),
    ratioBefore: before ? median(rounds.map((r) => r.beforeTotal / r.bareParse)) : null,
    ratioInMemory: median(rounds.map((r) => r.totalInMemory / r.bareParse)),
  };
}

// `node bench/span.mjs [runs] [--untuned-before] [--json]`: alone, after `npm run build`.
// `--untuned-before`: the second API is this build without its collector settings
// (services/api/src/heap-tuning.ts); `--json`: the result as the last line, for run.mjs.
if (import.meta.url === `file://${process.argv[1]}`) {
  const { ensureData } = await import('./data.mjs');
  const args = process.argv.slice(2);
  const json = args.includes('--json');
  const data = await ensureData(json ? () => {} : console.log);
  const before = args.includes('--untuned-before') ? { apiMain: apiWithoutHeapTuning() } : null;
  const runs = Number(args.find((a) => /^\d+$/.test(a)) ?? 3);
  const result = await runSpan(data, runs, json ? () => {} : console.log, { before });
  if (json) console.log(JSON.stringify({ node: process.version, ...result }));
  else {
    for (const [k, v] of Object.entries(result.median)) console.log(k.padEnd(14), v.toFixed(0));
    console.log('ratio', result.ratio.toFixed(2), 'in memory', result.ratioInMemory.toFixed(2), 'before', result.ratioBefore?.toFixed(2));
  }
}
