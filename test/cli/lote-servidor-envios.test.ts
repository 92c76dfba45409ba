// `censo lote --servidor` sends several files per request (issue 35): one multipart POST per file
// cost the service most of a batch's CPU. The files go in path order, up to 50 (and 16 MiB) a
// request, each request under a key made of its files; a file too big for that goes alone, as
// before. A request of several that the service refuses (400, 413) goes again one file at a time,
// so the refused file is reported exactly as before; a service from before several files per
// request (400 to a second `retorno`) then gets the rest of the folder one file per request.
//
// A proxy in front of the service sees every upload (its files, its key, the answer) and, for the
// refusals, answers some itself as such a service would.
import { createHash } from 'node:crypto';
import { cp, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixtureCases } from '../helpers/fixtures.js';
import { API_KEY } from '../helpers/http.js';
import { useTestRedis } from '../helpers/redis.js';
import { MODES, request, startHarness, type Harness, type Mode } from '../helpers/tarefas.js';
import { censo as run, type Run } from './censo-process.js';

const basico = fixtureCases().find((c) => c.name === 'basico')!;
const utf8 = fixtureCases().find((c) => c.name === 'basico-utf8')!;
const redis = useTestRedis();
const ID = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}';

const local = (folder: string): Promise<Run> => run(['lote', folder, '--format', 'csv']);
const remote = (folder: string, url: string, extra: readonly string[] = []): Promise<Run> =>
  run(['lote', folder, '--format', 'csv', '--servidor', url, ...extra], { env: { CENSO_API_KEY: API_KEY } });
const sha256 = (bytes: Buffer | string) => createHash('sha256').update(bytes).digest('hex');

/** One upload to a batch as the proxy saw it. */
interface Upload {
  /** The `retorno` files it carried, in order. */
  readonly files: readonly string[];
  readonly key: string | undefined;
  /** The status the CLI saw. */
  readonly status: number;
  /** Idempotent-Replayed: the service answered with the tasks an earlier request under its key made. */
  readonly replayed: boolean;
}

interface Proxy {
  readonly url: string;
  readonly uploads: Upload[];
  /** Every request, `METHOD path?query`, in the order they arrived. */
  readonly requests: string[];
  close(): Promise<void>;
}

/** An answer the proxy gives itself instead of the service's. */
type Refusal = { readonly status: number; readonly erro: string } | null;

const HOP_BY_HOP = ['connection', 'keep-alive', 'transfer-encoding', 'host', 'content-length'];

/**
 * In front of `target`: every request goes on to it, except the uploads `refuse` answers itself.
 * An upload `lose` picks goes on, but its answer is lost: the CLI gets a busy 503 instead.
 */
async function startProxy(
  target: string,
  refuse: (files: readonly string[]) => Refusal = () => null,
  lose: (files: readonly string[]) => boolean = () => false,
  /** Milliseconds to hold an upload of these files before passing it on. */
  hold: (files: readonly string[]) => number = () => 0,
): Promise<Proxy> {
  const uploads: Upload[] = [];
  const requests: string[] = [];
  const server = http.createServer((req, res) => {
    requests.push(`${req.method} ${req.url}`);
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', async () => {
      const body = Buffer.concat(chunks);
      const upload = req.method === 'POST' && /\/divergencias-rf$/.test(req.url ?? '');
      const files = upload ? [...body.toString('latin1').matchAll(/name="retorno"; filename="([^"]*)"/g)].map((m) => m[1]!) : [];
      const key = req.headers['idempotency-key'] as string | undefined;
      const refused = upload ? refuse(files) : null;
      const held = upload ? hold(files) : 0;
      if (held > 0) await new Promise((resolve) => setTimeout(resolve, held));
      if (refused) {
        uploads.push({ files, key, status: refused.status, replayed: false });
        res.writeHead(refused.status, { 'content-type': 'application/json; charset=utf-8' }).end(JSON.stringify({ erro: refused.erro }));
        return;
      }
      const headers = Object.fromEntries(Object.entries(req.headers).filter(([name]) => !HOP_BY_HOP.includes(name)));
      const onward = http.request(
        `${target}${req.url}`,
        { method: req.method, headers: { ...headers, 'content-length': String(body.length) } },
        (answer) => {
          const parts: Buffer[] = [];
          answer.on('data', (chunk: Buffer) => parts.push(chunk));
          answer.on('end', () => {
            if (upload && lose(files)) {
              uploads.push({ files, key, status: 503, replayed: false });
              res.writeHead(503, { 'content-type': 'application/json; charset=utf-8', 'retry-after': '1' });
              res.end(JSON.stringify({ erro: 'Serviço sobrecarregado, tente novamente em instantes.' }));
              return;
            }
            if (upload)
              uploads.push({ files, key, status: answer.statusCode!, replayed: answer.headers['idempotent-replayed'] === 'true' });
            const back = Object.fromEntries(Object.entries(answer.headers).filter(([name]) => !HOP_BY_HOP.includes(name)));
            res.writeHead(answer.statusCode!, back as http.OutgoingHttpHeaders).end(Buffer.concat(parts));
          });
        },
      );
      // The service may stop reading a body it refuses (413) and answer before the end of it.
      onward.on('error', (err) => {
        if (!res.headersSent) res.writeHead(502, { 'content-type': 'text/plain' }).end(`proxy: ${err.message}`);
      });
      onward.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    uploads,
    requests,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

let work: string;
beforeAll(async () => {
  work = await mkdtemp(path.join(os.tmpdir(), 'censo-lote-envios-'));
});
afterAll(async () => {
  await rm(work, { recursive: true, force: true });
});

let serial = 0;
/** A new folder of `count` returns (escola-000.json, escola-001.xlsx…): their names, in path order. */
async function schools(count: number): Promise<{ folder: string; names: string[] }> {
  const folder = path.join(work, `escolas-${++serial}`);
  await mkdir(folder, { recursive: true });
  const names = Array.from({ length: count }, (_, i) => `escola-${String(i).padStart(3, '0')}.${i % 2 === 0 ? 'json' : 'xlsx'}`);
  for (const name of names) await cp(name.endsWith('.json') ? basico.retorno.json : utf8.retorno.xlsx, path.join(folder, name));
  return { folder, names };
}

/** The Idempotency-Key of a request of several files: their paths and SHA-256. */
async function groupKey(folder: string, names: readonly string[]): Promise<string> {
  const lines = await Promise.all(names.map(async (name) => `${name}\0${sha256(await readFile(path.join(folder, name)))}\n`));
  return `censo-envio-${sha256(lines.join(''))}`;
}

/** The batch's tasks' referencias, sorted. */
async function referencias(server: Harness, lote: string): Promise<string[]> {
  const { tarefas } = (await request(server, 'GET', `/api/lotes/${lote}/tarefas?limit=1000`)).json() as {
    tarefas: Array<{ referencia: string }>;
  };
  return tarefas.map((t) => t.referencia).sort();
}

const batchOf = (run: Run) => new RegExp(`^Lote (${ID}): criado\\.\\n`).exec(run.stderr)?.[1];
const several = (uploads: readonly Upload[]) => uploads.filter((upload) => upload.files.length > 1);
const alone = (uploads: readonly Upload[]) => uploads.filter((upload) => upload.files.length === 1);

describe.each(MODES)('%s mode', (mode: Mode) => {
  let server: Harness;
  beforeAll(async () => {
    server = await startHarness(mode, { redisUrl: redis.url });
  });
  afterAll(async () => {
    await server?.dispose();
  });
  /**
   * A case about the command's own side (how it cuts, sends again and writes), which the service
   * answers the same way in both modes: run in one. The cases in both are those the queue changes:
   * group jobs and the Idempotency-Key's record in Redis.
   */
  const commandSide = (name: string, fn: () => Promise<void>, timeout?: number) => {
    if (mode === 'embedded') it(name, fn, timeout);
  };

  commandSide(
    'a service from before several files per request (400 to a second retorno): the files go one by one, the same output, one task each',
    async () => {
      const { folder, names } = await schools(60);
      // What such a service answers (receiveFiles: a repeated field).
      const proxy = await startProxy(server.url, (files) =>
        files.length > 1 ? { status: 400, erro: 'Campo enviado mais de uma vez: retorno.' } : null,
      );
      try {
        const sent = await remote(folder, proxy.url);
        const expected = await local(folder);
        expect(sent.code, sent.stderr).toBe(0);
        expect(sent.stdout.toString()).toBe(expected.stdout.toString());
        expect(sent.stderr).toBe(`Lote ${batchOf(sent)}: criado.\n${expected.stderr}`);
        // The first request (50 files; one request at a time) was refused; its files then went
        // alone and were all taken, so the other 10 went alone from the start: each file once.
        expect(several(proxy.uploads).map((upload) => [upload.files.length, upload.status])).toEqual([[50, 400]]);
        expect(
          alone(proxy.uploads)
            .map((upload) => upload.files[0])
            .sort(),
        ).toEqual(names);
        expect(alone(proxy.uploads).every((upload) => upload.status === 202)).toBe(true);
        expect(await referencias(server, batchOf(sent)!)).toEqual(names);
      } finally {
        await proxy.close();
      }
    },
  );

  it('120 files go in 3 requests (50, 50, 20) under keys made of their files: the same output as the local lote, one task each; the rerun sends nothing', async () => {
    const { folder, names } = await schools(120);
    const proxy = await startProxy(server.url);
    try {
      const sent = await remote(folder, proxy.url);
      const expected = await local(folder);
      expect(sent.code, sent.stderr).toBe(0);
      expect(sent.stdout.toString()).toBe(expected.stdout.toString());
      const lote = batchOf(sent)!;
      expect(sent.stderr).toBe(`Lote ${lote}: criado.\n${expected.stderr}`);
      const groups = [names.slice(0, 50), names.slice(50, 100), names.slice(100)];
      const uploads = [...proxy.uploads].sort((a, b) => (a.files[0]! < b.files[0]! ? -1 : 1));
      expect(uploads).toEqual(
        await Promise.all(groups.map(async (files) => ({ files, key: await groupKey(folder, files), status: 202, replayed: false }))),
      );
      expect(await referencias(server, lote)).toEqual(names);
      // The rows came back in one request (the tasks are in path order), not one per file.
      expect(proxy.requests.filter((r) => r.startsWith(`GET /api/lotes/${lote}/divergencias`))).toEqual([
        `GET /api/lotes/${lote}/divergencias?format=csv`,
      ]);
      expect(proxy.requests.filter((r) => r.includes('/resultado'))).toEqual([]);

      const again = await remote(folder, proxy.url);
      expect(again.stderr).toBe(`Lote ${lote}: retomado (120 de 120 arquivos já enviados).\n${expected.stderr}`);
      expect(again.stdout).toEqual(sent.stdout);
      expect(proxy.uploads).toHaveLength(3);
    } finally {
      await proxy.close();
    }
  });

  commandSide(
    'tasks made out of path order (two requests at a time, the first held back): each file is read on its own, the same output',
    async () => {
      const { folder, names } = await schools(60);
      // The first request (50 files) reaches the service after the second (10): its tasks come later.
      const proxy = await startProxy(server.url, undefined, undefined, (files) => (files[0] === names[0] && files.length > 1 ? 1_500 : 0));
      try {
        const sent = await remote(folder, proxy.url, ['-c', '2']);
        const expected = await local(folder);
        expect(sent.code, sent.stderr).toBe(0);
        expect(sent.stdout.toString()).toBe(expected.stdout.toString());
        const lote = batchOf(sent)!;
        const { tarefas } = (await request(server, 'GET', `/api/lotes/${lote}/tarefas?limit=1000`)).json() as {
          tarefas: Array<{ referencia: string }>;
        };
        expect(tarefas.map((t) => t.referencia)).toEqual([...names.slice(50), ...names.slice(0, 50)]);
        expect(proxy.requests.filter((r) => r.startsWith(`GET /api/lotes/${lote}/divergencias`))).toEqual([]);
        expect(proxy.requests.filter((r) => r.includes('/resultado')).length).toBeGreaterThanOrEqual(60);
      } finally {
        await proxy.close();
      }
    },
  );

  commandSide('in xlsx too, the same bytes as the local lote (the workbook carries no time of its own)', async () => {
    const { folder } = await schools(4);
    const [localXlsx, sentXlsx] = [path.join(work, `local-${mode}.xlsx`), path.join(work, `servidor-${mode}.xlsx`)];
    expect((await run(['lote', folder, '--format', 'xlsx', '-o', localXlsx])).code).toBe(0);
    const sent = await run(['lote', folder, '--format', 'xlsx', '-o', sentXlsx, '--servidor', server.url], {
      env: { CENSO_API_KEY: API_KEY },
    });
    expect(sent.code, sent.stderr).toBe(0);
    expect(sha256(await readFile(sentXlsx))).toBe(sha256(await readFile(localXlsx)));
  });

  it('a request whose answer was lost goes again under the same key: the service answers with the tasks it made, no file runs twice', async () => {
    const { folder, names } = await schools(60);
    let lost = false;
    const proxy = await startProxy(server.url, undefined, (files) => {
      if (lost || files[0] !== names[0]) return false;
      return (lost = true);
    });
    try {
      const jobs = server.gate.seen.length;
      const sent = await remote(folder, proxy.url);
      const expected = await local(folder);
      expect(sent.code, sent.stderr).toBe(0);
      expect(sent.stdout.toString()).toBe(expected.stdout.toString());
      const first = await groupKey(folder, names.slice(0, 50));
      expect(
        proxy.uploads.filter((upload) => upload.key === first).map((upload) => [upload.files.length, upload.status, upload.replayed]),
      ).toEqual([
        [50, 503, false],
        [50, 202, true],
      ]);
      expect(proxy.uploads).toHaveLength(3);
      expect(await referencias(server, batchOf(sent)!)).toEqual(names);
      expect(server.gate.seen.length - jobs).toBe(60);
    } finally {
      await proxy.close();
    }
  });

  commandSide(
    'a workbook that is not a zip among several files fails alone, as in the local lote; a file over 25 MB goes alone and is refused as before',
    async () => {
      const folder = path.join(work, `mistura-${mode}`);
      await mkdir(folder, { recursive: true });
      await cp(basico.retorno.json, path.join(folder, '01.json'));
      await cp(utf8.retorno.xlsx, path.join(folder, '02.xlsx'));
      await writeFile(path.join(folder, '03-quebrado.xlsx'), 'not a zip');
      // Over the service's 25 MB, and not a return for the local lote either.
      await writeFile(path.join(folder, '04-grande.json'), Buffer.alloc(26 * 1024 * 1024, ' '));
      await cp(basico.retorno.xlsx, path.join(folder, '05.xlsx'));
      await cp(utf8.retorno.json, path.join(folder, '06.json'));
      const proxy = await startProxy(server.url);
      try {
        const sent = await remote(folder, proxy.url);
        const expected = await local(folder);
        expect(sent.code).toBe(1);
        expect(expected.code).toBe(1);
        expect(sent.stdout.toString()).toBe(expected.stdout.toString());
        expect(expected.stderr).toMatch(/^censo: "03-quebrado\.xlsx": .+\ncenso: "04-grande\.json": .+\n/);
        // The local lote cannot read the big file; the service does not take it (413), as before.
        expect(sent.stderr).toBe(
          `Lote ${batchOf(sent)}: criado.\n` +
            expected.stderr.replace(/^censo: "04-grande\.json": .+$/m, 'censo: "04-grande.json": Arquivo excede o limite de 25 MB.'),
        );
        expect(proxy.uploads.map((upload) => [upload.files, upload.status]).sort()).toEqual([
          [['01.json', '02.xlsx', '03-quebrado.xlsx'], 202],
          [['04-grande.json'], 413],
          [['05.xlsx', '06.json'], 202],
        ]);
      } finally {
        await proxy.close();
      }
    },
  );

  commandSide(
    'a request of several refused for one of its files: they go again one by one, that file is reported as alone, the others go on, and the next requests carry several again',
    async () => {
      const { folder, names } = await schools(110);
      const refused = 'escola-007.xlsx';
      const proxy = await startProxy(server.url, (files) =>
        files.includes(refused) ? { status: 400, erro: 'Arquivo recusado pelo teste.' } : null,
      );
      try {
        const sent = await remote(folder, proxy.url);
        const expected = await local(folder);
        expect(sent.code).toBe(1);
        // The local rows without the refused file's.
        const rows = expected.stdout
          .toString()
          .split('\r\n')
          .filter((row) => !row.startsWith(`${refused},`))
          .join('\r\n');
        expect(sent.stdout.toString()).toBe(rows);
        expect(sent.stderr).toMatch(
          new RegExp(
            `^Lote ${ID}: criado\\.\\ncenso: "escola-007\\.xlsx": Arquivo recusado pelo teste\\.\\n.*\\nCom falha: "escola-007\\.xlsx"\\.\\n$`,
          ),
        );
        expect(several(proxy.uploads).map((upload) => [upload.files[0], upload.files.length, upload.status])).toEqual(
          expect.arrayContaining([
            ['escola-000.json', 50, 400],
            ['escola-050.json', 50, 202],
            ['escola-100.json', 10, 202],
          ]),
        );
        expect(several(proxy.uploads)).toHaveLength(3);
        expect(alone(proxy.uploads).map((upload) => [upload.files[0], upload.status])).toEqual(
          names.slice(0, 50).map((name) => [name, name === refused ? 400 : 202]),
        );
        expect(await referencias(server, batchOf(sent)!)).toEqual(names.filter((name) => name !== refused));
      } finally {
        await proxy.close();
      }
    },
  );
});
