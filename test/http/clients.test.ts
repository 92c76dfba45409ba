// SPEC §5 "every client sees every answer", with the clients secretariats' scripts use: Node
// fetch (in this process and a fresh process per try), a raw socket that writes its whole body
// before reading, Python 3 urllib, and curl with and without `Expect: 100-continue`. Each early
// answer (the body not yet read) is tried in a loop: a reset that happens one time in six shows as
// a failure here. Embedded mode tries every early answer, queue mode the one it changes (earlyIn).
import { execFile, spawn } from 'node:child_process';
import net from 'node:net';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { isDeepStrictEqual, promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixtureCases } from '../helpers/fixtures.js';
import { API_KEY, expectEmptyDir, formWith, startTestServer, type TestServer } from '../helpers/http.js';
import { BOUNDARY, closing, openUpload, partHead, postHead } from '../helpers/raw-http.js';
import { deleteKeys, startTestRedis, uniqueQueuePrefix, type TestRedis } from '../helpers/redis.js';
import { sampleValue, scrapeMetrics } from '../helpers/metrics.js';
import { buildXlsx } from '../helpers/xlsx-builders.js';

const run = promisify(execFile);
const TRIES = 20;
const MB = 1024 * 1024;
const [basico] = fixtureCases();
if (!basico) throw new Error('no fixtures');

const NO_KEY_CONFIGURED = { erro: 'API não configurada (defina a env API_KEY).' };
const BAD_KEY = { erro: 'Credencial inválida (header x-api-key).' };
const NOT_MULTIPART = { erro: 'A requisição deve ser multipart/form-data.' };
const TOO_LARGE = { erro: 'Arquivo excede o limite de 25 MB.' };
const RATE_LIMITED = { erro: 'Limite de requisições excedido, tente novamente em instantes.' };
const OVERLOADED = { erro: 'Serviço sobrecarregado, tente novamente em instantes.' };
const UPLOAD_TIMEOUT = { erro: 'Tempo esgotado ao receber o arquivo.' };

let work: string;
let redis: TestRedis;
const prefixes: string[] = [];

beforeAll(async () => {
  work = await mkdtemp(path.join(os.tmpdir(), 'censo-clients-'));
  redis = await startTestRedis();
});
afterAll(async () => {
  await Promise.all(prefixes.map((prefix) => deleteKeys(redis.url, prefix)));
  await redis.stop();
  await rm(work, { recursive: true, force: true });
});

const bodies = new Map<string, Buffer>();
/**
 * A multipart body with one `retorno` file of `size` bytes. Made once per shape: the tries send the
 * same bytes hundreds of times (no client changes the buffer it sends), and allocating and filling
 * 12 MB again for each one cost CPU the service's side then waited for.
 */
function multipart(size: number, field = 'retorno', filename = 'retorno.json'): Buffer {
  const key = `${size}\0${field}\0${filename}`;
  let body = bodies.get(key);
  if (!body) bodies.set(key, (body = Buffer.concat([partHead(field, filename), Buffer.alloc(size, 0x61), closing()])));
  return body;
}

interface Answer {
  readonly status: number;
  readonly body: unknown;
  readonly retryAfter?: string | undefined;
}

/** Writes the whole request (headers and body) before reading a byte of the answer. */
function rawPost(url: string, headers: Record<string, string>, body: Buffer): Promise<Answer> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), hostname);
    const chunks: Buffer[] = [];
    socket.on('error', reject);
    socket.on('connect', () => {
      socket.write(postHead(url, '/api/divergencias-rf', headers, body.length));
      // Nothing is read (no 'data' listener, so the socket stays paused) until the whole body is
      // handed to the kernel, as a client that sends everything first does.
      socket.write(body, (err) => {
        if (!err) socket.on('data', (chunk: Buffer) => chunks.push(chunk));
      });
    });
    socket.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const [head = '', payload = ''] = text.split('\r\n\r\n');
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? 0);
      resolve({ status, body: payload ? JSON.parse(payload) : null });
    });
  });
}

async function fetchPost(url: string, headers: Record<string, string>, body: Buffer): Promise<Answer> {
  const response = await fetch(`${url}/api/divergencias-rf`, { method: 'POST', headers, body });
  return { status: response.status, body: await response.json(), retryAfter: response.headers.get('retry-after') ?? undefined };
}

const FRESH_PROCESS = `
const [url, headers, size] = [process.argv[1], JSON.parse(process.argv[2]), Number(process.argv[3])];
const form = new FormData();
form.append('retorno', new Blob([Buffer.alloc(size, 97)]), 'retorno.json');
fetch(url + '/api/divergencias-rf', { method: 'POST', headers, body: form })
  .then(async (r) => console.log(JSON.stringify({ status: r.status, body: await r.json() })))
  .catch((e) => console.log(JSON.stringify({ status: 0, body: String(e.cause?.code ?? e.message) })));
`;

function freshFetch(url: string, headers: Record<string, string>, size: number): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['-e', FRESH_PROCESS, url, JSON.stringify(headers), String(size)], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.on('error', reject);
    child.on('close', () => resolve(JSON.parse(out) as Answer));
  });
}

const URLLIB = `
import json, sys, urllib.request, urllib.error
url, headers, size, tries = sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
b = '${BOUNDARY}'
body = (f'--{b}\\r\\nContent-Disposition: form-data; name="retorno"; filename="retorno.json"\\r\\n\\r\\n').encode() + b'a' * size + f'\\r\\n--{b}--\\r\\n'.encode()
out = []
for _ in range(tries):
    req = urllib.request.Request(url + '/api/divergencias-rf', data=body, method='POST', headers={'Content-Type': f'multipart/form-data; boundary={b}', **headers})
    try:
        with urllib.request.urlopen(req) as r:
            out.append({'status': r.status, 'body': json.loads(r.read())})
    except urllib.error.HTTPError as e:
        out.append({'status': e.code, 'body': json.loads(e.read())})
    except Exception as e:
        out.append({'status': 0, 'body': type(e).__name__})
print(json.dumps(out))
`;

async function urllibPosts(url: string, headers: Record<string, string>, size: number, tries: number): Promise<Answer[]> {
  const { stdout } = await run('python3', ['-c', URLLIB, url, JSON.stringify(headers), String(size), String(tries)], {
    maxBuffer: 16 * MB,
  });
  return JSON.parse(stdout) as Answer[];
}

async function curlPost(url: string, headers: Record<string, string>, file: string, expect: boolean): Promise<Answer> {
  const args = ['-s', '-o', '-', '-w', '\n%{http_code}', '-F', `retorno=@${file};filename=retorno.json`];
  for (const [name, value] of Object.entries(headers)) args.push('-H', `${name}: ${value}`);
  // curl asks `Expect: 100-continue` by itself for large bodies; an empty Expect turns it off.
  args.push('-H', expect ? 'Expect: 100-continue' : 'Expect:', `${url}/api/divergencias-rf`);
  const { stdout } = await run('curl', args, { maxBuffer: 16 * MB });
  const cut = stdout.lastIndexOf('\n');
  return { status: Number(stdout.slice(cut + 1)), body: JSON.parse(stdout.slice(0, cut)) };
}

interface EarlyCase {
  readonly name: string;
  readonly env: Record<string, string>;
  readonly headers: Record<string, string>;
  readonly status: number;
  readonly body: object;
  /** Runs once on the fresh server before the tries (e.g. spends the rate limit). */
  readonly prepare?: (server: TestServer) => Promise<unknown>;
  readonly contentType?: string;
}

const KEY = { 'x-api-key': API_KEY };

const EARLY: readonly EarlyCase[] = [
  { name: '401 wrong key', env: {}, headers: { 'x-api-key': 'wrong' }, status: 401, body: BAD_KEY },
  { name: '401 no key', env: {}, headers: {}, status: 401, body: BAD_KEY },
  { name: '503 no API_KEY configured', env: { API_KEY: '' }, headers: KEY, status: 503, body: NO_KEY_CONFIGURED },
  { name: '400 not multipart', env: {}, headers: KEY, status: 400, body: NOT_MULTIPART, contentType: 'application/octet-stream' },
  {
    name: '429 rate limited',
    env: { RATE_LIMIT_PER_MINUTE: '1' },
    headers: KEY,
    status: 429,
    body: RATE_LIMITED,
    // Spends the minute's one request. In queue mode the counter lives in Redis and a check it
    // does not answer in time lets the request through (fail open, counted), so spend until refused.
    // Run again before each client's series: a window of 60 s can end during a loaded CI run's
    // tests, and its next request then rightly gets through (a 400 for this body).
    prepare: async (server) => {
      const deadline = Date.now() + 10_000;
      const headers = { ...KEY, 'content-type': `multipart/form-data; boundary=${BOUNDARY}` };
      while ((await fetchPost(server.url, headers, multipart(2))).status !== 429) {
        if (Date.now() > deadline) throw new Error('the rate limit never refused a request');
      }
    },
  },
];

type Mode = 'embedded' | 'queue';

async function serverFor(mode: Mode, env: Record<string, string>): Promise<TestServer> {
  if (mode === 'embedded') return startTestServer(env);
  const prefix = uniqueQueuePrefix();
  prefixes.push(prefix);
  return startTestServer({ REDIS_URL: redis.url, QUEUE_PREFIX: prefix, ...env });
}

/**
 * The early answers a mode changes: every one in embedded mode; in queue mode only the rate
 * limit's, whose counter lives in Redis there. The others are answered by the same hooks before
 * the body is read, whichever mode runs the jobs, so queue mode would repeat their 12 MB tries
 * (a sixth of `npm test`'s CPU was this file).
 */
const earlyIn = (mode: Mode): readonly EarlyCase[] => (mode === 'embedded' ? EARLY : EARLY.filter((early) => early.status === 429));

describe.each(['embedded', 'queue'] as Mode[])('%s mode', (mode) => {
  describe.each(earlyIn(mode))('$name', (early) => {
    let server: TestServer;
    let headers: Record<string, string>;
    /** Before each series of tries: the case's precondition holds now, not only at the start. */
    const ready = async () => early.prepare?.(server);
    beforeAll(async () => {
      server = await serverFor(mode, early.env);
      headers = { ...early.headers, 'content-type': early.contentType ?? `multipart/form-data; boundary=${BOUNDARY}` };
    });
    afterAll(async () => {
      await server.dispose();
    });
    const expected = () => ({ status: early.status, body: early.body });
    const pick = (a: Answer) => ({ status: a.status, body: a.body });
    /** Requests the rate limiter let through unchecked so far (Redis too slow for it; /metrics). */
    const unchecked = async () => {
      if (!early.env.RATE_LIMIT_PER_MINUTE) return 0;
      return sampleValue(await scrapeMetrics(server.url, KEY), 'censo_rate_limit_skipped_total') ?? 0;
    };
    /**
     * One series of tries: every answer is the early one. The exception is a request the rate
     * limiter let through because Redis did not answer it in time on a loaded machine (fail open,
     * counted on /metrics): that one gets its file read, a 400, and is matched by the count.
     */
    const series = async (label: string, tries: () => Promise<Answer[]>) => {
      await ready();
      const before = await unchecked();
      const others = (await tries()).map(pick).filter((answer) => !isDeepStrictEqual(answer, expected()));
      const passed = (await unchecked()) - before;
      expect(others, label).toEqual(Array.from({ length: passed }, () => expect.objectContaining({ status: 400 })));
    };
    const repeat = async (times: number, one: () => Promise<Answer>) => {
      const answers: Answer[] = [];
      for (let i = 0; i < times; i++) answers.push(await one());
      return answers;
    };

    it(`Node fetch, ${TRIES} tries, 2-byte and 12 MB bodies`, async () => {
      for (const size of [2, 12 * MB])
        await series(`${size} bytes`, () => repeat(TRIES, () => fetchPost(server.url, headers, multipart(size))));
    });

    it(`a raw socket that writes everything before reading, ${TRIES} tries`, async () => {
      for (const size of [2, 12 * MB])
        await series(`${size} bytes`, () => repeat(TRIES, () => rawPost(server.url, headers, multipart(size))));
    });

    it(`Python urllib, ${TRIES} tries each of 2 bytes and 12 MB`, async () => {
      const pyHeaders = Object.fromEntries(Object.entries(headers).filter(([name]) => name !== 'content-type'));
      // urllib sets its own multipart Content-Type; the not-multipart case sends another one.
      if (early.contentType) pyHeaders['content-type'] = early.contentType;
      for (const size of [2, 12 * MB]) await series(`${size} bytes`, () => urllibPosts(server.url, pyHeaders, size, TRIES));
    });

    // curl -F always sends multipart, so the not-multipart case is left to the other clients.
    if (!early.contentType)
      it('curl, with and without Expect: 100-continue', async () => {
        const file = path.join(work, `curl-${mode}-${early.status}.bin`);
        await writeFile(file, Buffer.alloc(12 * MB, 0x61));
        const curlHeaders = Object.fromEntries(Object.entries(headers).filter(([name]) => name !== 'content-type'));
        for (const expectContinue of [true, false])
          await series(`Expect: 100-continue ${expectContinue}`, () =>
            repeat(5, () => curlPost(server.url, curlHeaders, file, expectContinue)),
          );
      });
  });

  // A client's first request from a fresh process, refused by the authentication hook: the same
  // hook in both modes, so one mode's tries (each a Node process, most of this test's CPU).
  if (mode === 'embedded')
    it(`Node fetch in a fresh process per try (${TRIES} tries): 401`, async () => {
      const server = await serverFor(mode, {});
      try {
        const answers = await Promise.all(Array.from({ length: TRIES }, () => freshFetch(server.url, { 'x-api-key': 'wrong' }, 2)));
        for (const answer of answers) expect(answer).toEqual({ status: 401, body: BAD_KEY });
      } finally {
        await server.dispose();
      }
    });

  it('413 for a 26 MB file reaches fetch, a raw socket and urllib', async () => {
    const server = await serverFor(mode, {});
    try {
      const body = multipart(26 * MB);
      const headers = { ...KEY, 'content-type': `multipart/form-data; boundary=${BOUNDARY}` };
      for (let i = 0; i < 5; i++) {
        expect((await fetchPost(server.url, headers, body)).status).toBe(413);
        expect(await rawPost(server.url, headers, body)).toEqual({ status: 413, body: TOO_LARGE });
      }
      for (const answer of await urllibPosts(server.url, KEY, 26 * MB, 3)) expect(answer).toEqual({ status: 413, body: TOO_LARGE });
      await expectEmptyDir(server.uploadDir);
    } finally {
      await server.dispose();
    }
  }, 60_000); // 26 MB three times over loopback: 7-8 s in a quiet CI run, 30 s with the machine loaded

  it('200 parallel uploads get only 200s and 503s with Retry-After, no resets', async () => {
    const server = await serverFor(mode, { MAX_INFLIGHT_UPLOADS: '8' });
    try {
      const answers = await Promise.all(
        Array.from({ length: 200 }, async () => {
          const form = await formWith([{ field: 'retorno', path: basico.retorno.json, filename: 'retorno.json' }]);
          const response = await fetch(`${server.url}/api/divergencias-rf`, { method: 'POST', headers: KEY, body: form });
          return { status: response.status, body: await response.json(), retryAfter: response.headers.get('retry-after') };
        }),
      );
      const ok = answers.filter((a) => a.status === 200);
      const shed = answers.filter((a) => a.status === 503);
      expect(ok.length + shed.length).toBe(200);
      expect(ok.length).toBeGreaterThan(0);
      for (const a of ok) expect(a.body).toEqual(basico.expectedDivergencias);
      for (const a of shed) expect(a).toEqual({ status: 503, body: OVERLOADED, retryAfter: '5' });
      await expectEmptyDir(server.uploadDir);
    } finally {
      await server.dispose();
    }
  });
});

describe('Expect: 100-continue', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(async () => {
    await server.dispose();
  });

  /** Sends only the headers and reads the first answer line. */
  function askFirst(headers: Record<string, string>): Promise<{ first: string; socket: net.Socket }> {
    const { port } = new URL(server.url);
    return new Promise((resolve, reject) => {
      const socket = net.connect(Number(port), '127.0.0.1', () => {
        const head = Object.entries(headers)
          .map(([n, v]) => `${n}: ${v}\r\n`)
          .join('');
        socket.write(
          `POST /api/divergencias-rf HTTP/1.1\r\nhost: x\r\nexpect: 100-continue\r\ncontent-length: 1000\r\ncontent-type: multipart/form-data; boundary=${BOUNDARY}\r\n${head}\r\n`,
        );
      });
      socket.once('data', (chunk: Buffer) => resolve({ first: chunk.toString('utf8'), socket }));
      socket.on('error', reject);
    });
  }

  it('a request that would fail gets its final answer without being asked for the body', async () => {
    const { first, socket } = await askFirst({ 'x-api-key': 'wrong' });
    socket.destroy();
    expect(first).toMatch(/^HTTP\/1\.1 401 /);
    expect(first).not.toMatch(/100 Continue/);
    expect(first.slice(first.indexOf('\r\n\r\n') + 4)).toBe(JSON.stringify(BAD_KEY));
  });

  it('an admitted request is asked for its body, and answered after it', async () => {
    const { first, socket } = await askFirst({ 'x-api-key': API_KEY });
    socket.destroy();
    expect(first).toBe('HTTP/1.1 100 Continue\r\n\r\n');
  });
});

describe('upload body deadline (SPEC §5)', () => {
  it('a trickle is cut at UPLOAD_TIMEOUT_MS with 408; its slot and partial file are freed at once', async () => {
    const server = await startTestServer({ UPLOAD_TIMEOUT_MS: '1500', MAX_INFLIGHT_UPLOADS: '1' });
    try {
      const started = Date.now();
      const upload = openUpload(server.url, '/api/divergencias-rf');
      await upload.write(partHead('retorno', 'retorno.json'));
      const timer = setInterval(() => void upload.write('[').catch(() => undefined), 200);
      const answer = await upload.response.finally(() => clearInterval(timer));
      expect(answer.status).toBe(408);
      expect(answer.body).toEqual(UPLOAD_TIMEOUT);
      expect(Date.now() - started).toBeGreaterThanOrEqual(1400);
      upload.request.destroy();
      // The only slot is free again: the next upload is admitted and answered.
      const next = await fetchPost(
        server.url,
        { ...KEY, 'content-type': `multipart/form-data; boundary=${BOUNDARY}` },
        Buffer.concat([partHead('retorno', 'retorno.json'), Buffer.from('[]'), closing()]),
      );
      expect(next).toMatchObject({ status: 200, body: { divergencias: [] } });
      await expectEmptyDir(server.uploadDir);
    } finally {
      await server.dispose();
    }
  });

  it('a body that sends nothing for the idle time is cut with 408', async () => {
    const server = await startTestServer({ UPLOAD_IDLE_MS: '600' });
    try {
      const upload = openUpload(server.url, '/api/divergencias-rf');
      await upload.write(partHead('retorno', 'retorno.json'));
      const answer = await upload.response;
      upload.request.destroy();
      expect(answer).toMatchObject({ status: 408, body: UPLOAD_TIMEOUT });
      await expectEmptyDir(server.uploadDir);
    } finally {
      await server.dispose();
    }
  });
});

describe('memory bounded by input size (SPEC §5: 32,767 characters per cell)', () => {
  it('a 400 KB xlsx of 395 one-million-character strings is refused quickly, without the process growing by hundreds of MB', async () => {
    const server = await startTestServer();
    try {
      const big = 'X'.repeat(1_000_000);
      const file = await buildXlsx({ sheets: [{ rows: '' }], sharedStrings: Array.from({ length: 395 }, () => big) });
      const before = process.memoryUsage().rss;
      let peak = before;
      const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 5);
      const form = await formWith([{ field: 'retorno', path: file, filename: 'retorno.xlsx' }]);
      const response = await fetch(`${server.url}/api/divergencias-rf`, { method: 'POST', headers: KEY, body: form });
      clearInterval(sampler);
      expect(response.status).toBe(400);
      expect(await response.json()).toEqual({ erro: 'Arquivo retorno ilegível: tem uma célula com mais de 32.767 caracteres.' });
      // Before the cap the same request took the process from 0.5 to 1.0 GB.
      expect(peak - before).toBeLessThan(200 * MB);
    } finally {
      await server.dispose();
    }
  });
});
