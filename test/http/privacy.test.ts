// Issue 21, "personal data in error answers and logs": the real service (embedded mode, real
// PostgreSQL for the query route) runs the hostile corpus (test/helpers/hostile-corpus.ts)
// through every upload route and format and the query route's error paths, at LOG_LEVEL=info and
// at LOG_LEVEL=debug, keeping every pino line it writes. No error answer and no log line may hold
// a CPF or a name of the corpus, or quote file content past the bound; at info no line may quote
// file content at all.
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger, loadConfig } from '@censo/shared';
import { startServer, type RunningServer } from '@censo/api';
import { formWith } from '../helpers/http.js';
import {
  BAD_REQUEST_IDS,
  defaultTxt,
  GOOD_REQUEST_IDS,
  hostileCorpus,
  HOSTILE_QUERIES,
  LONG_MARK,
  PEOPLE,
  QUOTE_BOUND,
  type HostileCorpus,
} from '../helpers/hostile-corpus.js';
import { createAuditsTable, createTestSchema, startTestPostgres, type TestPostgres, type TestSchema } from '../helpers/postgres.js';
import { onThisMachine } from '../helpers/deadline.js';

const KEY = 'chave-do-teste-de-privacidade';
const PLAIN_ID = /^[A-Za-z0-9._:-]{1,128}$/;

// Log lines are JSON objects of any shape.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Line = Record<string, any>;

interface Answer {
  readonly label: string;
  readonly status: number;
  readonly expectedStatus: number;
  readonly expectedErro?: string;
  readonly erro: string | null;
  /** The answer names the request's own query or parameter by design: not searched. */
  readonly echoesRequest: boolean;
  readonly sentId: string;
  readonly answeredId: string | null;
}

/** Upper case, accents removed: how names are searched, whatever case or form a writer used. */
function fold(text: string): string {
  return text
    .normalize('NFD')
    .replace(/[\u0300-\u036f]/g, '')
    .toUpperCase();
}

/** The corpus's personal data found in `text`: CPFs (bare or punctuated) and names. */
function personalData(text: string): string[] {
  const folded = fold(text);
  const found: string[] = [];
  for (const { nome, cpf } of PEOPLE) {
    const punctuated = `${cpf.slice(0, 3)}.${cpf.slice(3, 6)}.${cpf.slice(6, 9)}-${cpf.slice(9)}`;
    if (text.includes(cpf) || text.includes(punctuated)) found.push(cpf);
    if (folded.includes(fold(nome))) found.push(nome);
  }
  return found;
}

/** The longest run of the long values' filler, in characters. */
function longestMarkRun(text: string): number {
  let longest = 0;
  for (const match of text.matchAll(new RegExp(`(?:${LONG_MARK})+`, 'g'))) longest = Math.max(longest, match[0].length);
  return longest;
}

/** Every string value of a log line, as written before JSON escaping. */
function stringsOf(value: unknown): string[] {
  if (typeof value === 'string') return [value];
  if (value === null || typeof value !== 'object') return [];
  return Object.values(value).flatMap(stringsOf);
}

/** What the SPEC §3.2 422s quote, wherever the message appears. */
function mismatchQuotes(text: string): string[] {
  return [...text.matchAll(/não corresponde ao retorno \((?:linha|código) (.*?)\)\./gs)].map((match) => match[1]!);
}

describe.each(['info', 'debug'] as const)('hostile corpus at LOG_LEVEL=%s', (level) => {
  const lines: Line[] = [];
  const answers: Answer[] = [];
  let raw = '';
  let corpus: HostileCorpus;
  let server: RunningServer;
  let uploadDir: string;
  let postgres: TestPostgres;
  let schema: TestSchema;
  let sequence = 0;

  /**
   * One request line per request, written once the response is over, possibly just after the
   * client read it: counted rather than found by id, since an id may be anything here.
   */
  async function requestLines(count: number): Promise<void> {
    const deadline = Date.now() + 5_000;
    while (lines.filter((line) => line.msg === 'request completed').length < count) {
      if (Date.now() > deadline) throw new Error(`fewer than ${count} request lines`);
      await sleep(20);
    }
  }

  async function send(
    label: string,
    url: string,
    init: { method: 'GET' | 'POST'; body?: FormData | Blob },
    expected: { status: number; erro?: string; echoesRequest?: boolean },
  ): Promise<void> {
    // Every fourth request carries a bad id and every eighth a plain one of a gateway (each list
    // in turn), the others one of ours.
    const sentId =
      sequence % 4 === 3
        ? BAD_REQUEST_IDS[(sequence >> 2) % BAD_REQUEST_IDS.length]!
        : sequence % 8 === 1
          ? GOOD_REQUEST_IDS[(sequence >> 3) % GOOD_REQUEST_IDS.length]!
          : `privacidade-${level}-${sequence}`;
    sequence += 1;
    const response = await fetch(`${server.url}${url}`, { ...init, headers: { 'x-api-key': KEY, 'x-request-id': sentId } });
    const text = await response.text();
    const erro = response.status >= 400 ? ((JSON.parse(text) as { erro?: unknown }).erro as string) : null;
    const answeredId = response.headers.get('x-request-id');
    answers.push({
      label: `${init.method} ${url.slice(0, 60)} ${label}`,
      status: response.status,
      expectedStatus: expected.status,
      ...(expected.erro === undefined ? {} : { expectedErro: expected.erro }),
      erro,
      echoesRequest: expected.echoesRequest ?? false,
      sentId,
      answeredId,
    });
    await requestLines(sequence);
  }

  beforeAll(async () => {
    corpus = await hostileCorpus();
    postgres = await startTestPostgres();
    schema = await createTestSchema(postgres.url);
    await createAuditsTable(schema.admin);
    uploadDir = await mkdtemp(path.join(os.tmpdir(), 'censo-privacy-test-'));
    const config = loadConfig({
      API_KEY: KEY,
      HOST: '127.0.0.1',
      PORT: '0',
      UPLOAD_DIR: uploadDir,
      LOG_LEVEL: level,
      WORKER_CONCURRENCY: '1',
      DATABASE_URL: schema.url,
    });
    // A pino destination that keeps every line, as the process would write them to stdout.
    const destination = {
      write(chunk: string) {
        raw += chunk;
        lines.push(JSON.parse(chunk) as Line);
      },
    };
    server = await startServer(config, 'all', createLogger(config, { service: 'censo-api', role: 'all' }, destination));

    for (const upload of corpus.uploads) {
      for (const [i, route] of upload.routes.entries()) {
        // The list routes answer json, csv or xlsx: each case tries one, in turn.
        const format = route === '/api/censo-corrigido' ? '' : `?format=${['json', 'csv', 'xlsx'][i % 3]}`;
        const files = route === '/api/divergencias-rf' ? [upload.retorno] : [upload.retorno, upload.txt ?? defaultTxt()];
        await send(upload.label, `${route}${format}`, { method: 'POST', body: await formWith(files) }, upload);
      }
    }
    // Not multipart at all, with personal data in the body.
    await send(
      'a JSON body',
      '/api/divergencias-rf',
      { method: 'POST', body: new Blob([JSON.stringify(PEOPLE)], { type: 'application/json' }) },
      { status: 400, erro: 'A requisição deve ser multipart/form-data.' },
    );
    for (const query of HOSTILE_QUERIES) {
      await send(query.label, `/api/query?${new URLSearchParams(query.params)}`, { method: 'GET' }, query);
    }
  }, onThisMachine(120_000));

  afterAll(async () => {
    await server?.close();
    await schema?.drop();
    await postgres?.stop();
    if (uploadDir) await rm(uploadDir, { recursive: true, force: true });
  });

  it('every request gets its status, and its exact erro where SPEC or docs/integracao.md fixes it', () => {
    expect(answers.length).toBeGreaterThan(50);
    for (const answer of answers) {
      expect(answer.status, answer.label).toBe(answer.expectedStatus);
      if (answer.expectedErro !== undefined) expect(answer.erro, answer.label).toBe(answer.expectedErro);
    }
  });

  it('no error answer holds a CPF or a name of the corpus, or quotes past the bound', () => {
    const errors = answers.filter((answer) => answer.erro !== null);
    expect(errors.length).toBeGreaterThan(40);
    for (const answer of errors) {
      const erro = answer.erro!;
      if (!answer.echoesRequest) expect(personalData(erro), `${answer.label}: ${erro}`).toEqual([]);
      expect(longestMarkRun(erro), answer.label).toBeLessThanOrEqual(QUOTE_BOUND);
      for (const quote of mismatchQuotes(erro)) expect(quote.length, answer.label).toBeLessThanOrEqual(QUOTE_BOUND + 1);
    }
  });

  it('the 400 for an unknown layout names header cells only', () => {
    const named = answers.flatMap((answer) => {
      const found = /\(encontradas: (.*); faltam: [^)]*\)\.$/s.exec(answer.erro ?? '')?.[1];
      return found === undefined || found === 'nenhuma' ? [] : found.split(', ').map((text) => [answer.label, text] as const);
    });
    expect(named.length).toBeGreaterThan(0);
    for (const [label, text] of named) {
      // `…` stands for headers left out (more than 10, or not known words).
      if (text !== '…') expect(corpus.headerCells.has(text), `${label}: ${text}`).toBe(true);
    }
  });

  it('x-request-id is echoed and logged only when short and plain; any other is replaced by a generated one', () => {
    const bad = answers.filter((answer) => BAD_REQUEST_IDS.includes(answer.sentId));
    expect(new Set(bad.map((answer) => answer.sentId)).size).toBe(BAD_REQUEST_IDS.length);
    for (const answer of bad) {
      expect(answer.answeredId, answer.label).toMatch(PLAIN_ID);
      expect(answer.answeredId, answer.label).not.toBe(answer.sentId);
    }
    for (const answer of answers.filter((a) => !BAD_REQUEST_IDS.includes(a.sentId))) {
      expect(answer.answeredId, answer.label).toBe(answer.sentId);
    }
    const logged = new Set(lines.filter((line) => line.msg === 'request completed').map((line) => line.reqId as string));
    for (const id of GOOD_REQUEST_IDS) expect(logged.has(id), id).toBe(true);
    for (const id of BAD_REQUEST_IDS) expect(raw.includes(id), id.slice(0, 40)).toBe(false);
  });

  it(`no log line holds a CPF or a name of the corpus${level === 'info' ? ', nor quotes any file content' : ', and quotes stay within the bound'}`, () => {
    expect(lines.length).toBeGreaterThan(answers.length);
    // At debug a line holds the erro as answered, which for these names the request's own query
    // or parameter (bounded): searched at info only, like their answers.
    const echoing = new Set(answers.filter((answer) => answer.echoesRequest).map((answer) => answer.answeredId));
    for (const line of lines) {
      const text = JSON.stringify(line);
      if (level === 'info' || !echoing.has(line.reqId as string)) expect(personalData(text), text.slice(0, 300)).toEqual([]);
      expect(longestMarkRun(text), text.slice(0, 300)).toBeLessThanOrEqual(level === 'info' ? 0 : QUOTE_BOUND);
      const quotes = stringsOf(line).flatMap(mismatchQuotes);
      if (level === 'info') {
        // At info an error is its status and code: no erro that quotes the file or names its headers.
        expect(quotes, text.slice(0, 300)).toEqual([]);
        expect(text, text.slice(0, 300)).not.toMatch(/encontradas:|HYPERLINK/);
      } else {
        for (const quote of quotes) expect(quote.length, text.slice(0, 300)).toBeLessThanOrEqual(QUOTE_BOUND + 1);
      }
    }
  });
});
