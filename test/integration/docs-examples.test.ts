// The documents' examples run as a reader would copy them (issue 37): every code block of README.md
// and docs/*.md marked `<!-- executa: <nome> -->` on the line before its fence is extracted and run
// against a service this file starts, in a folder laid out as the examples expect (the fixtures
// under the names the examples use, a `retornos/` tree with subfolders), with CENSO_URL and
// CENSO_API_KEY set. What each must print, write and exit with is checked below under its name. A
// marked block without a check here, or a check whose block is gone, fails: an example can neither
// rot unnoticed nor be dropped silently.
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { cp, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { webhookSignature } from '@censo/api';
import { parseCsv } from '../helpers/csv.js';
import { createAuditsTable, createTestSchema, startTestPostgres, type TestPostgres, type TestSchema } from '../helpers/postgres.js';
import { fixtureCases } from '../helpers/fixtures.js';
import { API_KEY, formWith, startTestServer, type TestServer } from '../helpers/http.js';
import { request, waitForTarefa, workbookSheets } from '../helpers/tarefas.js';
import { waitFor } from '../helpers/wait-for.js';
import { onThisMachine } from '../helpers/deadline.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const basico = fixtureCases().find((c) => c.name === 'basico')!;
const divergencias = (basico.expectedDivergencias as { divergencias: Array<Record<string, unknown>> }).divergencias;
const pessoas = (basico.expectedPessoas as { pessoas: Array<Record<string, string>> }).pessoas;

// ------------------------------------------------------------------------------ the examples

interface Example {
  readonly name: string;
  readonly document: string;
  readonly language: string;
  readonly code: string;
}

const MARKER = /^<!-- executa: ([a-z0-9-]+) -->\n```([a-z]+)\n([\s\S]*?)\n```\n/gm;

/** Every marked block of README.md and docs/*.md, by name. */
function markedExamples(): { examples: Map<string, Example>; problems: string[] } {
  const documents = [
    'README.md',
    ...readdirSync(path.join(ROOT, 'docs'))
      .filter((f) => f.endsWith('.md'))
      .map((f) => `docs/${f}`),
  ];
  const examples = new Map<string, Example>();
  const problems: string[] = [];
  for (const document of documents) {
    const text = readFileSync(path.join(ROOT, document), 'utf8');
    const blocks = [...text.matchAll(MARKER)];
    // A marker (a line of its own) not directly followed by a fenced block would silently run nothing.
    const markers = text.match(/^<!-- executa:/gm)?.length ?? 0;
    if (markers !== blocks.length) problems.push(`${document}: ${markers - blocks.length} marker(s) not followed by a code block`);
    for (const [, name, language, code] of blocks) {
      if (examples.has(name!)) problems.push(`${document}: "${name}" is marked twice`);
      examples.set(name!, { name: name!, document, language: language!, code: code! });
    }
  }
  return { examples, problems };
}

const { examples, problems } = markedExamples();

function example(name: string): Example {
  const found = examples.get(name);
  if (!found) throw new Error(`no block marked <!-- executa: ${name} --> in README.md or docs/*.md`);
  return found;
}

// ---------------------------------------------------------------------------- running them

interface Run {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs a program to its end (killed after `timeoutMs`), with only the environment an example uses. */
function run(program: string, args: readonly string[], cwd: string, timeoutMs = onThisMachine(45_000)): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(program, args, {
      cwd,
      env: { PATH: process.env.PATH ?? '', HOME: cwd, LANG: 'C.UTF-8', CENSO_URL: server.url, CENSO_API_KEY: API_KEY },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** Writes the example to `file` in `cwd` and runs it with the program its language needs. */
async function runExample(name: string, cwd: string, file: string, args: readonly string[] = []): Promise<Run> {
  const { language, code } = example(name);
  await writeFile(path.join(cwd, file), `${code}\n`);
  const program = { sh: 'sh', python: 'python3', js: 'node' }[language];
  if (!program) throw new Error(`${name}: no program runs \`${language}\` blocks`);
  return run(program, [file, ...args], cwd);
}

// ------------------------------------------------------------------------- their folder

/** The audit rows the query examples read: two of user 7 in January 2024, and two that its filters leave out. */
const AUDITS = [
  [7, 'update', '2024-01-05 10:00:00'],
  [8, 'update', '2024-01-10 10:00:00'],
  [7, 'create', '2024-01-31 23:59:59'],
  [7, 'update', '2024-02-01 00:00:00'],
] as const;

let postgres: TestPostgres;
let schema: TestSchema;
let server: TestServer;
let work: string;
beforeAll(async () => {
  postgres = await startTestPostgres();
  schema = await createTestSchema(postgres.url);
  await createAuditsTable(schema.admin);
  for (const [userId, action, createdAt] of AUDITS) {
    await schema.admin.query('INSERT INTO audits (auditable_id, user_id, action, created_at) VALUES (1, $1, $2, $3)', [
      userId,
      action,
      createdAt,
    ]);
  }
  server = await startTestServer({ WEBHOOK_ALLOW_PRIVATE: 'true', DATABASE_URL: schema.url });
  work = await mkdtemp(path.join(os.tmpdir(), 'censo-docs-'));
});
afterAll(async () => {
  await server?.dispose();
  await schema?.drop();
  await postgres?.stop();
  if (work) await rm(work, { recursive: true, force: true });
});

/** The references a batch script must send: subfolders, a space, an accent and a comma included. */
const REFERENCIAS = ['Escola São João, Centro/retorno.json', 'escola-b/2024/RETORNO.XLSX', 'escola-b/retorno.json'];

/**
 * A fresh folder for one example: the fixtures as `retorno.json`, `retorno.xlsx`, `censo.txt` and
 * under `test/fixtures/basico/` (the README's paths), and `retornos/` with the returns of
 * REFERENCIAS (two of them byte-identical, as two schools may send) beside what a script must
 * leave out: a hidden folder, an Office lock file that is no workbook, a `.txt`.
 */
async function folder(name: string): Promise<string> {
  const dir = path.join(work, name);
  const copy = async (from: string, to: string) => {
    await mkdir(path.dirname(path.join(dir, to)), { recursive: true });
    await cp(from, path.join(dir, to));
  };
  for (const base of ['', 'test/fixtures/basico/']) {
    await copy(basico.retorno.json, `${base}retorno.json`);
    await copy(basico.retorno.xlsx, `${base}retorno.xlsx`);
    await copy(basico.txt, `${base}censo.txt`);
  }
  await copy(basico.retorno.json, 'retornos/Escola São João, Centro/retorno.json');
  await copy(basico.retorno.xlsx, 'retornos/escola-b/2024/RETORNO.XLSX');
  await copy(basico.retorno.json, 'retornos/escola-b/retorno.json');
  await copy(basico.retorno.json, 'retornos/.oculta/retorno.json');
  await writeFile(path.join(dir, 'retornos', '~$retorno.xlsx'), 'trava do Office, não é planilha');
  await writeFile(path.join(dir, 'retornos', 'leia-me.txt'), 'não é retorno');
  return dir;
}

/** Adds to `retornos/` a return the service cannot read and one it refuses at upload (over 25 MB). */
async function withFailures(dir: string): Promise<void> {
  await mkdir(path.join(dir, 'retornos', 'escola-c'));
  await writeFile(path.join(dir, 'retornos', 'escola-c', 'quebrado.json'), 'isto não é JSON');
  await writeFile(path.join(dir, 'retornos', 'grande.xlsx'), Buffer.alloc(25 * 1024 * 1024 + 1));
}

const csvRows = (text: string) => parseCsv(text).filter((row) => row.some((cell) => cell !== ''));

// ----------------------------------------------------------------------------------- checks

describe('the marked examples', () => {
  it('are found in README.md and docs/*.md, each once, each directly before its code block', () => {
    expect(problems).toEqual([]);
    expect([...examples.values()].map((e) => `${e.document}: ${e.name}`).sort()).toEqual(
      [
        'README.md: readme-censo-corrigido',
        'README.md: readme-divergencias',
        'docs/integracao.md: assincrono-curl',
        'docs/integracao.md: assincrono-node',
        'docs/integracao.md: lote-python',
        'docs/integracao.md: lote-sh',
        'docs/integracao.md: sincrono',
        'docs/integracao.md: webhook-node',
        'docs/integracao.md: webhook-python',
        'docs/query.md: consulta',
      ].sort(),
    );
  });
});

describe('README.md', () => {
  it('readme-divergencias: the curl call answers the fixture return divergences', async () => {
    const dir = await folder('readme-divergencias');
    const result = await runExample('readme-divergencias', dir, 'exemplo.sh');
    expect(result.code, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout)).toEqual(basico.expectedDivergencias);
  });

  it('readme-censo-corrigido: curl -OJ saves censo-corrigido.txt with the Receita Federal values', async () => {
    const dir = await folder('readme-censo-corrigido');
    const result = await runExample('readme-censo-corrigido', dir, 'exemplo.sh');
    expect(result.code, result.stderr).toBe(0);
    const original = (await readFile(basico.txt, 'latin1')).split(/\r\n|\n/);
    const corrigido = (await readFile(path.join(dir, 'censo-corrigido.txt'), 'latin1')).split(/\r\n|\n/);
    expect(corrigido).toHaveLength(original.length);
    for (const pessoa of pessoas) {
      const fields = corrigido[Number(pessoa.linha) - 1]!.split('|');
      const sent = original[Number(pessoa.linha) - 1]!.split('|');
      // The Receita's INEP id and birth date; the CPF as sent, since the fixture's persons all
      // had one and Educacenso does not change it by migration (field 5 rule 10, SPEC §11).
      expect(fields.slice(2, 5)).toEqual([pessoa.codigo_na_escola, pessoa.inep, sent[4]]);
      expect(fields[6]).toBe(pessoa.data_nascimento);
    }
    expect(corrigido).not.toEqual(original);
  });
});

describe('docs/integracao.md', () => {
  it('sincrono: JSON persons on stdout, divergencias.xlsx for people and pessoas.csv for programs', async () => {
    const dir = await folder('sincrono');
    const result = await runExample('sincrono', dir, 'exemplo.sh');
    expect(result.code, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout)).toEqual(basico.expectedPessoas);
    const [sheet] = await workbookSheets(await readFile(path.join(dir, 'divergencias.xlsx')));
    expect(sheet!.rows[0]![0]).toBe('Código na escola');
    expect(sheet!.rows.slice(1).map((row) => row[0])).toEqual(divergencias.map((d) => d.codigo_na_escola));
    const csv = csvRows(await readFile(path.join(dir, 'pessoas.csv'), 'utf8'));
    expect(csv[0]).toEqual([
      ...['codigo_na_escola', 'linha', 'cpf', 'nome', 'data_nascimento', 'inep', 'nome_mae'],
      ...['arquivo_cpf', 'arquivo_nome', 'arquivo_data_nascimento', 'arquivo_inep', 'arquivo_nome_mae', 'nao_aplicadas', 'regra_25'],
    ]);
    expect(csv.slice(1).map((row) => row[2])).toEqual(pessoas.map((p) => p.cpf));
  });

  it('assincrono-curl: waits for the task, saves its result as divergencias.xlsx, then deletes it', async () => {
    const dir = await folder('assincrono-curl');
    const result = await runExample('assincrono-curl', dir, 'exemplo.sh');
    expect(result.code, result.stderr).toBe(0);
    const lines = result.stdout.trim().split('\n');
    expect(lines).toContain('estado: concluida');
    expect(lines.at(-1)).toBe('204');
    const [sheet] = await workbookSheets(await readFile(path.join(dir, 'divergencias.xlsx')));
    expect(sheet!.rows).toHaveLength(divergencias.length + 1);
    const tarefa = /^tarefa: (\/api\/tarefas\/[0-9a-f-]+)$/m.exec(result.stdout)![1]!;
    expect((await request(server, 'GET', tarefa)).status).toBe(404);
  });

  it('assincrono-node: lists the divergences with fetch; a return the service cannot read exits 1 with its erro', async () => {
    const dir = await folder('assincrono-node');
    const result = await runExample('assincrono-node', dir, 'divergencias.mjs', ['retorno.xlsx']);
    expect(result.code, result.stderr).toBe(0);
    const lines = result.stdout.trim().split('\n');
    expect(lines.slice(0, -1)).toEqual(divergencias.map((d) => [d.codigo_na_escola, d.campo, d.enviado, d.correto].join('\t')));
    expect(lines.at(-1)).toBe(`${divergencias.length} divergências`);

    await writeFile(path.join(dir, 'quebrado.json'), 'isto não é JSON');
    const broken = await run('node', ['divergencias.mjs', 'quebrado.json'], dir);
    expect(broken.code).toBe(1);
    expect(broken.stderr).toContain('quebrado.json: falhou 400 Arquivo retorno ilegível: ');
  });

  describe('lote-sh: sh lote.sh retornos', () => {
    /**
     * What lote.sh wrote beside the folder (issue 50: not ./divergencias.csv, which the next run
     * overwrote) and the batch it named after the folder and the same date and time.
     */
    async function loteShOutput(dir: string, stdout: string): Promise<string> {
      const written = readdirSync(dir).filter((name) => name.endsWith('.csv'));
      expect(written).toHaveLength(1);
      const [, dia, hora, minuto] = /^retornos-divergencias-(\d{4}-\d{2}-\d{2})-(\d{2})(\d{2})\.csv$/.exec(written[0]!) ?? [];
      expect(dia, written[0]).toBeDefined();
      expect(stdout).toContain(`divergências gravadas em ${path.join(dir, written[0]!)}`);
      const id = /^lote (\S+)$/m.exec(stdout)?.[1];
      const lote = (await request(server, 'GET', `/api/lotes/${id}`, { headers: { 'x-api-key': API_KEY } })).json();
      expect(lote.nome).toBe(`retornos ${dia} ${hora}:${minuto}`);
      return path.join(dir, written[0]!);
    }

    it(
      'sends every return below the folder, named by its path, and saves <pasta>-divergencias-<data>.csv beside it',
      { timeout: onThisMachine(60_000) },
      async () => {
        const dir = await folder('lote-sh');
        const result = await runExample('lote-sh', dir, 'lote.sh', ['retornos']);
        expect(result.code, result.stderr).toBe(0);
        expect(result.stdout).toContain(REFERENCIAS.map((r) => `enviado: ${r}`).join('\n'));
        const [header, ...rows] = csvRows(await readFile(await loteShOutput(dir, result.stdout), 'utf8'));
        expect(header!.slice(0, 3)).toEqual(['referencia', 'arquivo', 'codigo_na_escola']);
        expect(rows).toHaveLength(REFERENCIAS.length * divergencias.length);
        expect(new Set(rows.map((row) => `${row[0]} ${row[1]}`))).toEqual(new Set(REFERENCIAS.map((r) => `${r} ${path.basename(r)}`)));
      },
    );

    it('lists the file the service could not read and the one it refused, and exits 1', { timeout: onThisMachine(60_000) }, async () => {
      const dir = await folder('lote-sh-falhas');
      await withFailures(dir);
      const result = await runExample('lote-sh', dir, 'lote.sh', ['retornos']);
      expect(result.code).toBe(1);
      expect(result.stderr).toContain('escola-c/quebrado.json,quebrado.json,400,Arquivo retorno ilegível: ');
      expect(result.stderr).toContain('grande.xlsx: 413 {"erro":"Arquivo excede o limite de 25 MB."}');
      // The failures take nothing from the other schools.
      const rows = csvRows(await readFile(await loteShOutput(dir, result.stdout), 'utf8')).slice(1);
      expect(rows).toHaveLength(REFERENCIAS.length * divergencias.length);
    });
  });

  describe('lote-python: python3 lote.py retornos', () => {
    it(
      'sends every return below the folder, named by its path, and saves divergencias.xlsx',
      { timeout: onThisMachine(60_000) },
      async () => {
        const dir = await folder('lote-python');
        const result = await runExample('lote-python', dir, 'lote.py', ['retornos']);
        expect(result.code, result.stderr).toBe(0);
        expect(result.stdout).toContain(REFERENCIAS.map((r) => `enviado: ${r}`).join('\n'));
        const [sheet, falhas] = await workbookSheets(await readFile(path.join(dir, 'divergencias.xlsx')));
        const rows = sheet!.rows.slice(1);
        expect(rows).toHaveLength(REFERENCIAS.length * divergencias.length);
        expect(new Set(rows.map((row) => row[0]))).toEqual(new Set(REFERENCIAS));
        expect(falhas!.name).toBe('Falhas');
        expect(falhas!.rows).toHaveLength(1);
      },
    );

    it('lists the file the service could not read and the one it refused, and exits 1', { timeout: onThisMachine(60_000) }, async () => {
      const dir = await folder('lote-python-falhas');
      await withFailures(dir);
      const result = await runExample('lote-python', dir, 'lote.py', ['retornos']);
      expect(result.code).toBe(1);
      const failed = result.stderr.trim().split('\n');
      expect(failed).toHaveLength(2);
      expect(failed[0]).toMatch(/^falhou: escola-c\/quebrado\.json: 400 Arquivo retorno ilegível: /);
      expect(failed[1]).toBe('falhou: grande.xlsx: 413 Arquivo excede o limite de 25 MB.');
      const [sheet] = await workbookSheets(await readFile(path.join(dir, 'divergencias.xlsx')));
      expect(sheet!.rows.slice(1)).toHaveLength(REFERENCIAS.length * divergencias.length);
    });
  });

  describe('webhook-python and webhook-node: the signature checks', () => {
    /** What a receiver got: the batch's secret (from its creation answer), the headers, the body as sent. */
    interface Message {
      readonly segredo: string;
      readonly headers: Record<string, string>;
      readonly body: string;
    }
    const received: Array<Omit<Message, 'segredo'>> = [];
    const segredos = new Map<string, string>();
    let receiver: http.Server;

    const createLote = async (webhook: string) => {
      const created = await request(server, 'POST', '/api/lotes', {
        body: JSON.stringify({ webhook }),
        headers: { 'content-type': 'application/json' },
      });
      const { id, webhook_segredo: segredo } = created.json() as { id: string; webhook_segredo: string };
      segredos.set(id, segredo);
      return id;
    };

    /** One message of each type: a batch that ends (lote.concluido) and one deleted while open (lote.cancelado). */
    async function messagesOfBothTypes(): Promise<Record<string, Message>> {
      const webhook = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/`;
      const concluido = await createLote(webhook);
      const task = await request(server, 'POST', `/api/lotes/${concluido}/divergencias-rf`, {
        body: await formWith([{ field: 'retorno', path: basico.retorno.json, filename: 'retorno.json' }]),
      });
      await waitForTarefa(server, task.json().id as string);
      await request(server, 'POST', `/api/lotes/${concluido}/fechar`);
      const cancelado = await createLote(webhook);
      expect((await request(server, 'DELETE', `/api/lotes/${cancelado}`)).status).toBe(204);
      await waitFor(() => received.length === 2, { timeoutMs: onThisMachine(20_000), what: 'both webhook messages' });
      return Object.fromEntries(
        received.map((message) => {
          const { type, data } = JSON.parse(message.body) as { type: string; data: { id: string } };
          return [type, { ...message, segredo: segredos.get(data.id)! }];
        }),
      );
    }

    let byType: Record<string, Message>;
    beforeAll(async () => {
      receiver = http.createServer((req, res) => {
        let body = '';
        req.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
        req.on('end', () => {
          received.push({ headers: req.headers as Record<string, string>, body });
          res.end();
        });
      });
      await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
      byType = await messagesOfBothTypes();
    });
    afterAll(async () => {
      await new Promise((resolve) => receiver?.close(resolve));
    });

    /**
     * Per message: itself (true); its body altered (false); the other batch's secret (false); the
     * same body signed anew now (true) and an hour ago (false: a replayed message is refused).
     */
    function cases(): Array<{ label: string; segredo: string; headers: Record<string, string>; body: string; valid: boolean }> {
      const now = Math.floor(Date.now() / 1000);
      const resigned = (message: Message, timestamp: number) => ({
        ...message.headers,
        'webhook-timestamp': String(timestamp),
        'webhook-signature': webhookSignature(message.segredo, message.headers['webhook-id']!, timestamp, message.body),
      });
      const [concluido, cancelado] = [byType['lote.concluido']!, byType['lote.cancelado']!];
      return [concluido, cancelado].flatMap((message, i) => {
        const type = i === 0 ? 'lote.concluido' : 'lote.cancelado';
        const other = i === 0 ? cancelado : concluido;
        return [
          { label: `${type} as received`, ...message, valid: true },
          { label: `${type} with its body altered`, ...message, body: message.body.replace('"tarefas":', '"tarefas": '), valid: false },
          { label: `${type} checked with the other batch's secret`, ...message, segredo: other.segredo, valid: false },
          { label: `${type} signed now`, ...message, headers: resigned(message, now), valid: true },
          { label: `${type} signed an hour ago`, ...message, headers: resigned(message, now - 3600), valid: false },
        ];
      });
    }

    it('the service sent one message of each type, signed in the Standard Webhooks headers', () => {
      expect(Object.keys(byType).sort()).toEqual(['lote.cancelado', 'lote.concluido']);
      for (const message of Object.values(byType)) {
        expect(message.headers['webhook-id']).toMatch(/^msg_/);
        expect(message.headers['webhook-signature']).toMatch(/^v1,/);
      }
    });

    it('webhook-python: accepts the genuine messages and refuses the altered, the foreign and the old', async () => {
      const dir = await folder('webhook-python');
      const all = cases();
      await writeFile(path.join(dir, 'casos.json'), JSON.stringify(all));
      const driver =
        'import json\nfor caso in json.load(open("casos.json", encoding="utf-8")):\n    print(assinatura_valida(caso["segredo"], caso["headers"], caso["body"].encode()))\n';
      await writeFile(path.join(dir, 'verifica.py'), `${example('webhook-python').code}\n\n${driver}`);
      const result = await run('python3', ['verifica.py'], dir);
      expect(result.code, result.stderr).toBe(0);
      const answers = result.stdout.trim().split('\n');
      expect(all.map((c, i) => `${c.label}: ${answers[i]}`)).toEqual(all.map((c) => `${c.label}: ${c.valid ? 'True' : 'False'}`));
    });

    it('webhook-node: accepts the genuine messages and refuses the altered, the foreign and the old', async () => {
      const dir = await folder('webhook-node');
      const all = cases();
      await writeFile(path.join(dir, 'casos.json'), JSON.stringify(all));
      await writeFile(path.join(dir, 'webhook.mjs'), `${example('webhook-node').code}\n`);
      await writeFile(
        path.join(dir, 'verifica.mjs'),
        [
          "import { readFileSync } from 'node:fs';",
          "import { assinaturaValida } from './webhook.mjs';",
          "for (const caso of JSON.parse(readFileSync('casos.json', 'utf8')))",
          '  console.log(assinaturaValida(caso.segredo, caso.headers, Buffer.from(caso.body)));',
        ].join('\n'),
      );
      const result = await run('node', ['verifica.mjs'], dir);
      expect(result.code, result.stderr).toBe(0);
      const answers = result.stdout.trim().split('\n');
      expect(all.map((c, i) => `${c.label}: ${answers[i]}`)).toEqual(all.map((c) => `${c.label}: ${c.valid}`));
    });
  });
});

describe('docs/query.md', () => {
  it('consulta: lists the queries, reads a filtered page and exports the same rows as audits.csv', async () => {
    const dir = await folder('consulta');
    const result = await runExample('consulta', dir, 'exemplo.sh');
    expect(result.code, result.stderr).toBe(0);
    const [listing, page] = result.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect((listing!.queries as Array<{ name: string }>).map((q) => q.name)).toContain('audits');
    const january = [AUDITS[0], AUDITS[2]];
    expect(page).toMatchObject({ query: 'audits', count: 2, next_cursor: null });
    expect((page!.rows as Array<Record<string, string>>).map((row) => [row.user_id, row.action, row.created_at])).toEqual(
      january.map(([userId, action, createdAt]) => [String(userId), action, createdAt]),
    );
    const csv = csvRows(await readFile(path.join(dir, 'audits.csv'), 'utf8'));
    expect(csv[0]).toEqual(['id', 'auditable_id', 'user_id', 'action', 'created_at']);
    expect(csv.slice(1).map((row) => row[3])).toEqual(january.map(([, action]) => action));
  });
});
