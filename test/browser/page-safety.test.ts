// The staff page never hands a person another school's data (SPEC §3.6): sequences as
// staff click them in a real Chromium. Choosing files, a new run or an error clears a task's
// result; a download sends only the files whose result is on screen; a button is disabled while
// its request runs; the key typed is the key used and an empty key is never kept.
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  downloaded as downloadedTo,
  enterKey,
  launchChromium,
  openPage as openPageIn,
  RETORNO_ESCOLA_B,
  tableRows,
} from '../helpers/browser.js';
import { fixtureCases } from '../helpers/fixtures.js';
import { API_KEY, formWith, startTestServer, type TestServer, type UploadFile } from '../helpers/http.js';
import { createAuditsTable, createTestSchema, startTestPostgres, type TestPostgres, type TestSchema } from '../helpers/postgres.js';
import { startRecordingProxy, type RecordedRequest, type RecordingProxy } from '../helpers/recording-proxy.js';
import { onThisMachine } from '../helpers/deadline.js';

const basico = fixtureCases().find((c) => c.name === 'basico')!;
const pessoasA = (basico.expectedPessoas as { pessoas: unknown[] }).pessoas;

let browser: Browser;
let server: TestServer;
/** The page is opened through it, so every test sees the bytes the page sent. */
let proxy: RecordingProxy;
let pg: TestPostgres;
let schema: TestSchema;
let dir: string;
let escolaB: { retorno: string; txt: string };
const consoleErrors: string[] = [];

/**
 * School B: another school's census file and its return, under the same names as school A's
 * (every school's files come out of Educacenso named alike): only their bytes tell them apart.
 */
const TXT_B = [
  '00|87654321|1|03/02/2025|19/12/2025|ESCOLA MUNICIPAL BOA VISTA|88000000|4205407|05|RUA B|1||CENTRO||||||1|7|2|0|0|0|0|',
  '30|87654321|BVX0001|987654321098|71428793860|PEDRO ALVES|10/10/2014|1|LUCIA ALVES||1|3||1|76|4205407|0|',
  '30|87654321|BVX0002|987654321099|35365364830|RITA GOMES|02/02/2015|1|VERA GOMES||2|3||1|76|4205407|0|',
  '99|',
  '',
].join('\n');

beforeAll(async () => {
  browser = await launchChromium();
  pg = await startTestPostgres();
  schema = await createTestSchema(pg.url);
  await createAuditsTable(schema.admin);
  await schema.admin.query(`INSERT INTO audits (auditable_id, user_id, action, created_at)
    SELECT g, g % 7, CASE WHEN g % 2 = 0 THEN 'update' ELSE 'create' END, timestamp '2024-03-01' + g * interval '1 minute'
    FROM generate_series(1, 300) AS g`);
  server = await startTestServer({ DATABASE_URL: schema.url });
  proxy = await startRecordingProxy(server.url);
  dir = await mkdtemp(path.join(os.tmpdir(), 'censo-page-safety-'));
  await mkdir(path.join(dir, 'escola-b'));
  escolaB = { retorno: path.join(dir, 'escola-b', 'retorno.json'), txt: path.join(dir, 'escola-b', path.basename(basico.txt)) };
  await writeFile(escolaB.retorno, JSON.stringify(RETORNO_ESCOLA_B));
  await writeFile(escolaB.txt, TXT_B, 'latin1');
}, onThisMachine(120_000));

afterAll(async () => {
  await browser?.close();
  await proxy?.close();
  await server?.dispose();
  await schema?.drop();
  await pg?.stop();
  await rm(dir, { recursive: true, force: true });
});

const openPage = (): Promise<Page> => openPageIn(browser, proxy.url, consoleErrors);

/** The calls to /api that reach the service from now on, as it receives them. */
function apiCallsFromNow(): () => RecordedRequest[] {
  const from = proxy.requests.length;
  return () => proxy.requests.slice(from).filter((request) => request.path.startsWith('/api/'));
}

const calls = (sent: RecordedRequest[]) => sent.map((request) => `${request.method} ${request.path}`);
/** The uploads among them: each set of files goes once, as a task (SPEC §3.6, §7.1); the rest are reads of tasks. */
const uploads = (sent: RecordedRequest[]) => sent.filter((request) => request.method === 'POST');
const keys = (sent: RecordedRequest[]) => [...new Set(sent.map((request) => request.headers['x-api-key']))];
/** Every task id the service handed back to `sent`'s uploads (their 202's Location is what the page reads). */
const taskPaths = /^\/api\/tarefas\/([A-Za-z0-9_-]+)(\/resultado)?(\?.*)?$/;

async function routeAnswer(route: string, files: UploadFile[]): Promise<Buffer> {
  const response = await fetch(`${server.url}${route}`, { method: 'POST', headers: { 'x-api-key': API_KEY }, body: await formWith(files) });
  expect(response.status).toBe(200);
  return Buffer.from(await response.arrayBuffer());
}

/** Whether a person could press `name` in `scope`: it is on screen and enabled. */
async function pressable(page: Page, scope: string, name: string): Promise<boolean> {
  const button = page.locator(scope).getByRole('button', { name, exact: true });
  return (await button.count()) > 0 && (await button.isVisible()) && (await button.isEnabled());
}

/** How long a poll waits for the service's answer to reach the screen (a bound, not an assertion). */
const SERVICE = { timeout: onThisMachine(20_000) };

const RETORNO_DOWNLOADS = ['Baixar arquivo corrigido (.txt)', 'Baixar CSV (para programas)', 'Baixar planilha (XLSX)'];

async function seePessoasOfA(page: Page): Promise<void> {
  await page.getByRole('tab', { name: 'Retorno + txt' }).click();
  await page.locator('#retorno-pessoas').setInputFiles(basico.retorno.json);
  await page.locator('#txt-pessoas').setInputFiles(basico.txt);
  await page.getByRole('button', { name: 'Ver pessoas corrigidas' }).click();
  await page.locator('#tabela-pessoas tbody tr').first().waitFor();
  expect(await page.locator('#tabela-pessoas tbody tr').count()).toBe(pessoasA.length);
}

describe('the staff page keeps each school to its own files', () => {
  it("school B's files chosen after A's result: the corrected-file download never sends A's files", async () => {
    const page = await openPage();
    await enterKey(page);
    await seePessoasOfA(page);
    expect((await tableRows(page, 'tabela-pessoas'))[0]![0]).toBe('ALU0001');

    const sent = apiCallsFromNow();
    await page.locator('#retorno-pessoas').setInputFiles(escolaB.retorno);
    await page.locator('#txt-pessoas').setInputFiles(escolaB.txt);
    // Nothing of A is left to press or read...
    for (const name of RETORNO_DOWNLOADS) expect(await pressable(page, '#painel-retorno', name), name).toBe(false);
    expect(await page.locator('#tabela-pessoas tbody tr').count()).toBe(0);
    // ...and a click that lands on the download anyway (a stale double click, a script) sends nothing.
    await page.locator('#baixar-corrigido').dispatchEvent('click');

    await page.getByRole('button', { name: 'Ver pessoas corrigidas' }).click();
    await expect
      .poll(() => tableRows(page, 'tabela-pessoas'), SERVICE)
      .toEqual([['BVX0001', '2', '71428793860', 'PEDRO ALVES DA SILVA', '10/10/2014', '987654321098', 'LUCIA ALVES', 'Não', '']]);
    const corrected = await downloadedTo(page, dir, () => page.getByRole('button', { name: 'Baixar arquivo corrigido (.txt)' }).click());
    const filesOf = (escola: { retorno: string; txt: string }): UploadFile[] => [
      { field: 'retorno', path: escola.retorno, filename: 'retorno.json' },
      { field: 'txt', path: escola.txt, filename: path.basename(escola.txt) },
    ];
    const correctedB = await routeAnswer('/api/censo-corrigido', filesOf(escolaB));
    expect(correctedB.equals(await routeAnswer('/api/censo-corrigido', filesOf({ retorno: basico.retorno.json, txt: basico.txt })))).toBe(
      false,
    );
    expect(corrected.name).toBe('censo-corrigido.txt');
    expect(corrected.bytes.equals(correctedB)).toBe(true);

    // Exactly two uploads reached the service since B was chosen, both with B's files, none of A's...
    const [txtA, txtB, retornoB] = await Promise.all([readFile(basico.txt), readFile(escolaB.txt), readFile(escolaB.retorno)]);
    expect(calls(uploads(sent()))).toEqual(['POST /api/retorno-rf', 'POST /api/censo-corrigido']);
    for (const request of uploads(sent())) {
      expect(request.headers.prefer).toBe('respond-async');
      expect(request.body.includes(txtB)).toBe(true);
      expect(request.body.includes(retornoB)).toBe(true);
      expect(request.body.includes(txtA)).toBe(false);
      expect(request.body.includes('ALU0001')).toBe(false);
    }
    // ...and every other call read only the tasks those two uploads made, never A's task.
    const bTasks = new Set<string>();
    for (const request of sent()) {
      const task = taskPaths.exec(request.path);
      if (request.method === 'GET') {
        expect(task, request.path).not.toBeNull();
        bTasks.add(task![1]!);
      }
    }
    expect(bTasks.size).toBe(2);
    await page.context().close();
  });

  it('a wrong txt (422) leaves nothing of the previous result: no table, no counts, no downloads', async () => {
    const page = await openPage();
    await enterKey(page);
    await seePessoasOfA(page);
    await downloadedTo(page, dir, () => page.getByRole('button', { name: 'Baixar arquivo corrigido (.txt)' }).click());
    expect(await page.locator('#contagens-corrigido').textContent()).toMatch(
      /^Arquivo corrigido: 3 linhas alteradas de 4 pessoas da tabela\./,
    );

    // School B's txt with school A's return: not the file A submitted.
    await page.locator('#txt-pessoas').setInputFiles(escolaB.txt);
    await page.getByRole('button', { name: 'Ver pessoas corrigidas' }).click();
    await expect.poll(() => page.getByRole('alert').textContent(), SERVICE).toBe('O arquivo txt não corresponde ao retorno (linha 2).');
    expect(await page.locator('#tabela-pessoas tbody tr').count()).toBe(0);
    expect(await page.locator('#contagens-corrigido').textContent()).toBe('');
    expect(await page.locator('#painel-retorno').getByText('Arquivo corrigido:').count()).toBe(0);
    expect(await page.locator('#explica-pessoas').textContent()).toBe('');
    for (const name of RETORNO_DOWNLOADS) expect(await pressable(page, '#painel-retorno', name), name).toBe(false);
    await page.context().close();
  });

  it('an error on a download (a wrong key typed after "Trocar chave") clears the result too', async () => {
    const page = await openPage();
    await enterKey(page);
    await seePessoasOfA(page);
    await page.getByRole('button', { name: 'Trocar chave' }).click();
    await page.getByLabel('Chave de acesso (x-api-key)').fill('chave-de-outra-pessoa');
    await page.locator('#resultado-retorno').getByRole('button', { name: 'Baixar CSV (para programas)' }).click();
    await expect.poll(() => page.getByRole('alert').textContent(), SERVICE).toBe('Credencial inválida (header x-api-key).');
    expect(await page.locator('#tabela-pessoas tbody tr').count()).toBe(0);
    for (const name of RETORNO_DOWNLOADS) expect(await pressable(page, '#painel-retorno', name), name).toBe(false);
    expect(await pressable(page, '#painel-retorno', 'Ver pessoas corrigidas')).toBe(true);
    await page.context().close();
  });

  it('Divergências: an unreadable return after a result leaves only its erro on screen', async () => {
    const page = await openPage();
    await enterKey(page);
    const input = page.getByLabel('Arquivo de retorno (.json ou .xlsx)').first();
    await input.setInputFiles(basico.retorno.json);
    await page.getByRole('button', { name: 'Ver divergências' }).click();
    await page.locator('#tabela-divergencias tbody tr').first().waitFor();
    // The table's worker holds the result on screen.
    await expect.poll(() => page.workers().length, SERVICE).toBe(1);

    await input.setInputFiles({ name: 'retorno.json', mimeType: 'application/json', buffer: Buffer.from('[1, 2]') });
    await page.getByRole('button', { name: 'Ver divergências' }).click();
    await expect
      .poll(() => page.getByRole('alert').textContent(), SERVICE)
      .toBe('Arquivo retorno ilegível: as linhas do JSON devem ser objetos.');
    expect(await page.locator('#tabela-divergencias tbody tr').count()).toBe(0);
    expect(await page.locator('#tabela-divergencias .contagens li').count()).toBe(0);
    expect(await page.locator('#explica-divergencias').textContent()).toBe('');
    // No worker is left: neither the old result's nor the one started with the failed upload.
    await expect.poll(() => page.workers().length, SERVICE).toBe(0);
    for (const name of ['Baixar CSV (para programas)', 'Baixar planilha (XLSX)'])
      expect(await pressable(page, '#painel-divergencias', name), name).toBe(false);
    // The button is back for the next try.
    expect(await pressable(page, '#painel-divergencias', 'Ver divergências')).toBe(true);
    await page.context().close();
  });

  it('a double click on "Ver" or on a download sends one upload, and the button comes back', async () => {
    const page = await openPage();
    await enterKey(page);
    const sent = apiCallsFromNow();
    await page.getByLabel('Arquivo de retorno (.json ou .xlsx)').first().setInputFiles(basico.retorno.xlsx);
    await page.getByRole('button', { name: 'Ver divergências' }).dblclick();
    await page.locator('#tabela-divergencias tbody tr').first().waitFor();
    await expect.poll(() => pressable(page, '#painel-divergencias', 'Ver divergências'), SERVICE).toBe(true);

    await page.getByRole('tab', { name: 'Retorno + txt' }).click();
    await page.locator('#retorno-pessoas').setInputFiles(basico.retorno.json);
    await page.locator('#txt-pessoas').setInputFiles(basico.txt);
    await page.getByRole('button', { name: 'Ver pessoas corrigidas' }).dblclick();
    await page.locator('#tabela-pessoas tbody tr').first().waitFor();
    await expect.poll(() => pressable(page, '#painel-retorno', 'Ver pessoas corrigidas'), SERVICE).toBe(true);

    await downloadedTo(page, dir, () => page.getByRole('button', { name: 'Baixar arquivo corrigido (.txt)' }).dblclick());
    await expect.poll(() => pressable(page, '#painel-retorno', 'Baixar arquivo corrigido (.txt)'), SERVICE).toBe(true);

    expect(calls(uploads(sent()))).toEqual(['POST /api/divergencias-rf', 'POST /api/retorno-rf', 'POST /api/censo-corrigido']);
    // A second click on the corrected file downloads it again from its task: no new upload.
    await downloadedTo(page, dir, () => page.getByRole('button', { name: 'Baixar arquivo corrigido (.txt)' }).click());
    expect(uploads(sent())).toHaveLength(3);
    await page.context().close();
  });

  it('Consultas: a double click runs one query, and changing a filter clears the rows of the old one', async () => {
    const page = await openPage();
    await enterKey(page);
    await page.getByRole('tab', { name: 'Consultas' }).click();
    await expect.poll(() => page.locator('#consulta option').count(), SERVICE).toBeGreaterThan(0);
    const sent = apiCallsFromNow();
    await page.locator('#filtro-action').fill('update');
    await page.getByRole('button', { name: 'Consultar' }).dblclick();
    await page.locator('#tabela-consulta tbody tr').first().waitFor();
    await expect.poll(() => pressable(page, '#painel-consultas', 'Consultar'), SERVICE).toBe(true);
    expect(calls(sent())).toEqual(['GET /api/query?query=audits&action=update']);

    await page.locator('#filtro-action').fill('create');
    expect(await page.locator('#tabela-consulta tbody tr').count()).toBe(0);
    await page.context().close();
  });

  it('a key typed without pressing "Entrar" is the key the upload uses', async () => {
    const page = await openPage();
    const sent = apiCallsFromNow();
    await page.getByLabel('Chave de acesso (x-api-key)').fill(API_KEY);
    await page.getByLabel('Arquivo de retorno (.json ou .xlsx)').first().setInputFiles(basico.retorno.json);
    await page.getByRole('button', { name: 'Ver divergências' }).click();
    await expect.poll(() => page.locator('#tabela-divergencias tbody tr').count(), SERVICE).toBeGreaterThan(0);
    expect(await page.getByRole('alert').isVisible()).toBe(false);
    expect(calls(uploads(sent()))).toEqual(['POST /api/divergencias-rf']);
    expect(keys(sent())).toEqual([API_KEY]);
    expect(await page.evaluate("sessionStorage.getItem('censo-api-key')")).toBe(API_KEY);
    await page.context().close();
  });

  it('no key, an empty "Entrar" or "Entrar" twice never keeps an empty key, and says what to do', async () => {
    const page = await openPage();
    const sent = apiCallsFromNow();
    await page.getByLabel('Arquivo de retorno (.json ou .xlsx)').first().setInputFiles(basico.retorno.json);
    await page.getByRole('button', { name: 'Ver divergências' }).click();
    await expect.poll(() => page.getByRole('alert').textContent()).toBe('Informe a chave de acesso no alto da página e tente de novo.');
    expect(sent()).toEqual([]);

    for (const typed of ['', '   ']) {
      await page.getByLabel('Chave de acesso (x-api-key)').fill(typed);
      await page.getByRole('button', { name: 'Entrar' }).click();
      await expect.poll(() => page.getByRole('alert').textContent()).toBe('Informe a chave de acesso.');
      expect(await page.evaluate("sessionStorage.getItem('censo-api-key')")).toBeNull();
    }

    await page.getByLabel('Chave de acesso (x-api-key)').fill(API_KEY);
    await page.getByRole('button', { name: 'Entrar' }).dblclick();
    expect(await page.evaluate("sessionStorage.getItem('censo-api-key')")).toBe(API_KEY);
    await page.getByRole('button', { name: 'Ver divergências' }).click();
    await page.locator('#tabela-divergencias tbody tr').first().waitFor();
    expect(calls(uploads(sent()))).toEqual(['POST /api/divergencias-rf']);
    expect(keys(sent())).toEqual([API_KEY]);
    await page.context().close();
  });

  it('wrote no console errors', () => {
    // The 400, 401 and 422 above are answers the page shows; Chromium logs a failed load for them.
    expect(consoleErrors.filter((e) => !/Failed to load resource: the server responded with a status of (400|401|422)/.test(e))).toEqual(
      [],
    );
  });
});
