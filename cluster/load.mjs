// The load driver (its own host): a few clients upload files of mixed sizes through both API
// replicas, each upload with an id of the client's choosing (sent as x-request-id, one per
// attempt). A 503/504 or a connection error is retried on the other replica, as a client behind
// a load balancer would, a bounded number of times. Every request is one JSON line in the
// history: when it started and ended, the answer's status and the SHA-256 of its body.
// Usage: node cluster/load.mjs <config.json>; SIGTERM ends the run (no new uploads, no retries).
import { createHash } from 'node:crypto';
import { appendFileSync, readFileSync } from 'node:fs';
import { multipartBody, MULTIPART_TYPE } from '../bench/http.mjs';

const config = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const { apis, uploads, clients, seed, out, apiKey, requestTimeoutMs, maxAttempts, maxMs, thinkMs } = config;

// mulberry32: the same seed picks the same files, APIs and ids in the same order.
let state = seed >>> 0;
const random = () => {
  let t = (state += 0x6d2b79f5);
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
};
const totalWeight = uploads.reduce((sum, u) => sum + u.weight, 0);
const pick = () => {
  let r = random() * totalWeight;
  for (const upload of uploads) if ((r -= upload.weight) < 0) return upload;
  return uploads[uploads.length - 1];
};

const bodies = new Map();
const bodyOf = (upload) => {
  if (!bodies.has(upload.name)) {
    bodies.set(
      upload.name,
      multipartBody(upload.parts.map((part) => ({ field: part.field, filename: part.filename, content: readFileSync(part.path) }))),
    );
  }
  return bodies.get(upload.name);
};

const record = (line) => appendFileSync(out, `${JSON.stringify({ kind: 'request', ...line })}\n`);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

let stopping = false;
process.once('SIGTERM', () => (stopping = true));
const deadline = Date.now() + maxMs;
let sequence = 0;

async function attempt(upload, id, n, api) {
  const start = Date.now();
  const line = (fields) => {
    const out = { upload: id, attempt: n, api, file: upload.name, route: upload.route, start, end: Date.now(), ...fields };
    record(out);
    return out;
  };
  try {
    const response = await fetch(`${api}${upload.route}`, {
      method: 'POST',
      headers: { 'content-type': MULTIPART_TYPE, 'x-api-key': apiKey, 'x-request-id': `${id}.${n}` },
      body: bodyOf(upload),
      signal: AbortSignal.timeout(requestTimeoutMs),
    });
    const body = Buffer.from(await response.arrayBuffer());
    return line({
      status: response.status,
      sha256: createHash('sha256').update(body).digest('hex'),
      bytes: body.length,
      // The message of an error answer, for the checker (never a file's content: only {erro}).
      ...(response.status >= 400 && body.length < 500 ? { text: body.toString('utf8') } : {}),
      retryAfter: response.headers.get('retry-after'),
    });
  } catch (err) {
    return line({ status: 0, error: `${err.name}: ${err.cause?.code ?? err.cause?.message ?? err.message}` });
  }
}

async function client(index) {
  while (!stopping && Date.now() < deadline) {
    const upload = pick();
    const id = `u${index}-${++sequence}-${Math.floor(random() * 1e9).toString(36)}`;
    let api = Math.floor(random() * apis.length);
    for (let n = 1; n <= maxAttempts; n++) {
      const answer = await attempt(upload, id, n, apis[api]);
      const retriable = answer.status === 0 || answer.status === 503 || answer.status === 504;
      if (!retriable || stopping || n === maxAttempts) break;
      const after = Number(answer.retryAfter);
      await sleep(Number.isFinite(after) && after > 0 ? Math.min(after, 5) * 1000 : 1000);
      api = (api + 1) % apis.length;
    }
    await sleep(Math.floor(random() * thinkMs));
  }
}

await Promise.all(Array.from({ length: clients }, (_, i) => client(i + 1)));
console.log(JSON.stringify({ msg: 'load done', uploads: sequence }));
