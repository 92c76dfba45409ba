// The staff page and the schools of a batch (issue 50, "The page:"), in a real Chromium: files
// that all have INEP's one name get a school each without typing (a number, or their folder's
// name when a folder is chosen); each file's state line names its school; the LGPD note and the
// deletion of what one sent (a task, the Retorno tab's two, a batch from either tab), which clears it from the screen;
// the batch list and the summary at 1280 and 390 px wide, nothing off the screen; the page's
// word for `referencia` is the spreadsheets'; downloads are named after their batch.
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Browser, Page, Request } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { downloaded, enterKey, launchChromium, openPage as openPageIn, retornoRow, tableRows } from '../helpers/browser.js';
import { fixtureCases } from '../helpers/fixtures.js';
import { API_KEY, startTestServer, type TestServer } from '../helpers/http.js';
import { request } from '../helpers/tarefas.js';
import { waitFor } from '../helpers/wait-for.js';
import { onThisMachine } from '../helpers/deadline.js';

let browser: Browser;
let server: TestServer;
let dir: string;
const consoleErrors: string[] = [];

const basico = fixtureCases().find((c) => c.name === 'basico')!;
const row = retornoRow;
const RETORNO_A = JSON.stringify([row('A1', '2', 'Número do CPF', '52998224725 -- 52998224726')]);
const RETORNO_B = JSON.stringify([row('B1', '2', 'Nome completo', 'ANA SILVA -- ANA DA SILVA'), row('B2', '3', 'Sexo', '1 -- 2')]);
const QUEBRADO = '[1, 2]';
/** A batch name as people write them: long, with characters a file name cannot hold. */
const LONGO = 'Rodada 2/2026: escolas estaduais da regional norte, "segunda" rodada de correções enviada pela secretaria em novembro';

/** Another such batch, sent by an integration. */
const OUTRO = LONGO.replace('Rodada 2', 'Rodada 3');

beforeAll(async () => {
  browser = await launchChromium();
  server = await startTestServer();
  dir = await mkdtemp(path.join(os.tmpdir(), 'censo-page-escolas-'));
}, onThisMachine(60_000));

afterAll(async () => {
  await browser?.close();
  await server?.dispose();
  await rm(dir, { recursive: true, force: true });
});

const openPage = (): Promise<Page> => openPageIn(browser, server.url, consoleErrors);
const fieldValues = (page: Page) =>
  page.evaluate<string[]>("[...document.querySelectorAll('#escolas-arquivos input')].map((i) => i.value)");
const json = async (route: string) => {
  const answer = await request(server, 'GET', route);
  expect(answer.status, route).toBe(200);
  return answer.json();
};
/** The DELETE calls the page makes, with the headers they carry. */
const deletes = (page: Page): Request[] => {
  const seen: Request[] = [];
  page.on('request', (r) => r.method() === 'DELETE' && seen.push(r));
  return seen;
};

/** A batch made as an integration makes it: one file per school, closed, concluded. */
async function batch(nome: string, schools: Record<string, string>): Promise<string> {
  const created = await request(server, 'POST', '/api/lotes', {
    body: JSON.stringify({ nome }),
    headers: { 'content-type': 'application/json' },
  });
  expect(created.status).toBe(201);
  const id = String(created.json().id);
  for (const [referencia, content] of Object.entries(schools)) {
    const form = new FormData();
    form.set('referencia', referencia);
    form.set('retorno', new Blob([content]), 'retorno.json');
    expect((await request(server, 'POST', `/api/lotes/${id}/divergencias-rf`, { body: form })).status).toBe(202);
  }
  expect((await request(server, 'POST', `/api/lotes/${id}/fechar`)).status).toBe(200);
  await waitFor(async () => (await request(server, 'GET', `/api/lotes/${id}`)).json().estado === 'concluido', {
    // The embedded service runs a batch's tasks on threads at BATCH_NICENESS: beside the suite's
    // Chromium and LibreOffice (nice 0) they get a tenth of a busy core, and three tiny tasks took
    // over 29 s in a clean clone's Node 24 run. A wait, not a measure: generous.
    timeoutMs: onThisMachine(60_000),
    what: `batch ${nome} concluded`,
  });
  return id;
}

/** `locator`'s box lies inside the viewport's width (nothing of it off the right or left edge). */
/** Two returns chosen on the Divergências tab, sent as one batch (named, when `nome` is given), until it is concluded. */
async function sendTwoFiles(page: Page, nome?: string): Promise<void> {
  await page
    .getByLabel('Arquivo de retorno (.json ou .xlsx)')
    .first()
    .setInputFiles(['a', 'b'].map((s) => ({ name: `${s}.json`, mimeType: 'application/json', buffer: Buffer.from(RETORNO_A) })));
  if (nome !== undefined) await page.getByLabel('Nome do lote (opcional)').fill(nome);
  await page.getByRole('button', { name: 'Ver divergências' }).click();
  await expect.poll(() => page.locator('#explica-lote').textContent(), { timeout: onThisMachine(30_000) }).toMatch(/^Lote concluído/);
}

async function inViewport(page: Page, name: string): Promise<void> {
  const box = await page.getByRole('button', { name, exact: true }).boundingBox();
  const width = page.viewportSize()!.width;
  expect(box, name).not.toBeNull();
  expect(box!.x, `${name} at ${width} px`).toBeGreaterThanOrEqual(0);
  expect(box!.x + box!.width, `${name} at ${width} px`).toBeLessThanOrEqual(width);
}
const pageFits = (page: Page) => page.evaluate<boolean>('document.documentElement.scrollWidth <= window.innerWidth');

// A browser and a batch each: ~5 s on a quiet machine, far more beside a full test run.
describe('the schools of a batch sent by the page', { timeout: onThisMachine(90_000) }, () => {
  it('files all named retorno.json get a school each (a number) and go without typing; each state line names its school', async () => {
    const page = await openPage();
    await enterKey(page);
    await page
      .getByLabel('Arquivo de retorno (.json ou .xlsx)')
      .first()
      .setInputFiles(
        [RETORNO_A, RETORNO_B, QUEBRADO].map((content) => ({
          name: 'retorno.json',
          mimeType: 'application/json',
          buffer: Buffer.from(content),
        })),
      );
    expect(await fieldValues(page)).toEqual(['retorno 1', 'retorno 2', 'retorno 3']);
    await page.getByLabel('Nome do lote (opcional)').fill(LONGO);
    await page.getByRole('button', { name: 'Ver divergências' }).click();
    await expect.poll(() => page.locator('#explica-lote').textContent(), { timeout: onThisMachine(30_000) }).toMatch(/^Lote concluído/);
    expect(await page.locator('#lote-arquivos li').allTextContents()).toEqual([
      'retorno 1 (retorno.json) — Concluída',
      'retorno 2 (retorno.json) — Concluída',
      'retorno 3 (retorno.json) — Falhou: Arquivo retorno ilegível: as linhas do JSON devem ser objetos.',
    ]);
    const lote = ((await json('/api/lotes')).lotes as Array<{ id: string; nome: string }>).find((l) => l.nome === LONGO)!;
    const tarefas = (await json(`/api/lotes/${lote.id}/tarefas`)).tarefas as Array<{ referencia: string }>;
    expect(tarefas.map((t) => t.referencia)).toEqual(['retorno 1', 'retorno 2', 'retorno 3']);

    // The combined download is named after its batch, in what a file system accepts.
    const xlsx = await downloaded(page, dir, () => page.getByRole('button', { name: 'Baixar planilha combinada (XLSX)' }).click());
    expect(xlsx.name).toBe('Rodada-2-2026-escolas-estaduais-da-regional-norte,-segunda-rodada-de-correções-e-divergencias.xlsx');
    const csv = await downloaded(page, dir, () => page.getByRole('button', { name: 'Baixar CSV combinado (para programas)' }).click());
    expect(csv.name).toBe(xlsx.name.replace(/xlsx$/, 'csv'));
    await page.context().close();
  });

  it('a folder chosen whole: each school’s folder names its file, the other files are left out', async () => {
    const root = path.join(dir, 'escolas');
    for (const [school, content] of [
      ['escola-a', RETORNO_A],
      ['escola-b', RETORNO_B],
    ] as const) {
      await mkdir(path.join(root, school), { recursive: true });
      await writeFile(path.join(root, school, 'retorno.json'), content);
    }
    await writeFile(path.join(root, 'escola-a', 'leia-me.txt'), 'not a return');
    const page = await openPage();
    await enterKey(page);
    await page.getByLabel('ou escolha uma pasta com uma subpasta por escola').setInputFiles(root);
    const labels = await page.locator('#escolas-arquivos label').allTextContents();
    expect([...labels].sort()).toEqual([
      'Escola do arquivo escolas/escola-a/retorno.json',
      'Escola do arquivo escolas/escola-b/retorno.json',
    ]);
    const values = await fieldValues(page);
    expect(values.map((v, i) => [labels[i]!.split('/')[1], v])).toEqual(values.map((v) => [v, v]));
    expect([...values].sort()).toEqual(['escola-a', 'escola-b']);
    await page.getByLabel('Nome do lote (opcional)').fill('Pasta');
    await page.getByRole('button', { name: 'Ver divergências' }).click();
    await expect.poll(() => page.locator('#explica-lote').textContent(), { timeout: onThisMachine(30_000) }).toMatch(/^Lote concluído/);
    expect([...(await page.locator('#lote-arquivos li').allTextContents())].sort()).toEqual([
      'escola-a (retorno.json) — Concluída',
      'escola-b (retorno.json) — Concluída',
    ]);
    const lote = ((await json('/api/lotes')).lotes as Array<{ id: string; nome: string }>).find((l) => l.nome === 'Pasta')!;
    const tarefas = (await json(`/api/lotes/${lote.id}/tarefas`)).tarefas as Array<{ referencia: string }>;
    expect(tarefas.map((t) => t.referencia).sort()).toEqual(['escola-a', 'escola-b']);
    await page.context().close();
  });
});

describe('what one sent is one’s to delete (LGPD)', { timeout: onThisMachine(90_000) }, () => {
  it('the note says what the service keeps and for how long', async () => {
    const page = await openPage();
    const note = await page.locator('#lgpd').textContent();
    expect(note).toMatch(/apagados assim que\s+lidos/);
    expect(note).toContain('RESULT_TTL_HOURS');
    expect(note).toContain('LOTE_MAX_HOURS');
    expect(note).toContain('Apagar do serviço');
    // The season's ledger (issue 54): what it keeps, for how long, and that it keeps no person.
    expect(note).toMatch(/safra[^.]*400\s+dias[^.]*sem CPF, nome ou data/);
    expect(await page.locator('#lgpd').isVisible()).toBe(true);
    await page.context().close();
  });

  it('one return’s result: "Apagar do serviço" deletes its task (with the key) and clears the table; a refused question deletes nothing', async () => {
    const page = await openPage();
    await enterKey(page);
    const sent = deletes(page);
    await page
      .getByLabel('Arquivo de retorno (.json ou .xlsx)')
      .first()
      .setInputFiles({ name: 'retorno.json', mimeType: 'application/json', buffer: Buffer.from(RETORNO_B) });
    await page.getByRole('button', { name: 'Ver divergências' }).click();
    await expect.poll(() => tableRows(page, 'tabela-divergencias'), { timeout: onThisMachine(30_000) }).toHaveLength(2);

    page.once('dialog', (d) => void d.dismiss());
    await page.getByRole('button', { name: 'Apagar do serviço' }).click();
    await expect.poll(() => page.getByRole('button', { name: 'Apagar do serviço' }).isEnabled()).toBe(true);
    expect(sent).toEqual([]);
    expect(await tableRows(page, 'tabela-divergencias')).toHaveLength(2);

    page.once('dialog', (d) => void d.accept());
    await page.getByRole('button', { name: 'Apagar do serviço' }).click();
    await expect.poll(() => page.locator('#resultado-divergencias').isHidden()).toBe(true);
    expect(await tableRows(page, 'tabela-divergencias')).toEqual([]);
    expect(await page.locator('#painel-divergencias [data-mensagens="status"]').textContent()).toBe('Resultado apagado do serviço.');
    expect(sent).toHaveLength(1);
    const id = new URL(sent[0]!.url()).pathname.split('/')[3]!;
    expect(new URL(sent[0]!.url()).pathname).toBe(`/api/tarefas/${id}`);
    expect(sent[0]!.headers()['x-api-key']).toBe(API_KEY);
    expect((await request(server, 'GET', `/api/tarefas/${id}`)).status).toBe(404);
    await page.context().close();
  });

  it('Retorno + txt: "Apagar do serviço" deletes the persons’ task and the corrected file’s, and clears the result', async () => {
    const page = await openPage();
    await enterKey(page);
    const sent = deletes(page);
    await page.getByRole('tab', { name: 'Retorno + txt' }).click();
    await page.locator('#retorno-pessoas').setInputFiles(basico.retorno.json);
    await page.locator('#txt-pessoas').setInputFiles(basico.txt);
    await page.getByRole('button', { name: 'Ver pessoas corrigidas' }).click();
    await expect.poll(async () => (await tableRows(page, 'tabela-pessoas')).length, { timeout: onThisMachine(30_000) }).toBeGreaterThan(0);
    await downloaded(page, dir, () => page.getByRole('button', { name: 'Baixar arquivo corrigido (.txt)' }).click());
    page.once('dialog', (d) => void d.accept());
    await page.getByRole('button', { name: 'Apagar do serviço' }).click();
    await expect.poll(() => page.locator('#resultado-retorno').isHidden()).toBe(true);
    expect(await tableRows(page, 'tabela-pessoas')).toEqual([]);
    expect(await page.locator('#painel-retorno [data-mensagens="status"]').textContent()).toBe('Resultado apagado do serviço.');
    const paths = sent.map((r) => new URL(r.url()).pathname);
    expect(paths).toHaveLength(2);
    for (const gone of paths) {
      expect(gone).toMatch(/^\/api\/tarefas\/[0-9a-f-]{36}$/);
      expect((await request(server, 'GET', gone)).status).toBe(404);
    }
    await page.context().close();
  });

  it('a batch just sent: "Apagar lote do serviço" deletes it and clears its states', async () => {
    const page = await openPage();
    await enterKey(page);
    const sent = deletes(page);
    await sendTwoFiles(page);
    page.once('dialog', (d) => void d.accept());
    await page.getByRole('button', { name: 'Apagar lote do serviço' }).click();
    await expect.poll(() => page.locator('#resultado-lote').isHidden()).toBe(true);
    expect(await page.locator('#lote-arquivos li').count()).toBe(0);
    expect(sent).toHaveLength(1);
    const id = new URL(sent[0]!.url()).pathname.split('/')[3]!;
    expect(new URL(sent[0]!.url()).pathname).toBe(`/api/lotes/${id}`);
    expect((await request(server, 'GET', `/api/lotes/${id}`)).status).toBe(404);
    await page.context().close();
  });
});

describe('the Lotes tab on a laptop and on a phone', { timeout: onThisMachine(90_000) }, () => {
  it('at 1280 and 390 px: the list and the summary fit the screen, "Ver resumo" and "Apagar" on it; tables scroll in a labelled box', async () => {
    const id = await batch(OUTRO, {
      'escolas/regional-norte/escola-estadual-professora-maria-aparecida-dos-santos-oliveira/retorno-2a-rodada.json': RETORNO_A,
      'Escola B': RETORNO_B,
    });
    const page = await openPage();
    await enterKey(page);
    await page.getByRole('tab', { name: 'Lotes' }).click();
    await expect.poll(() => page.locator(`#lista-lotes tr[data-lote="${id}"]`).count()).toBe(1);
    for (const [width, height] of [
      [1280, 800],
      [390, 844],
    ] as const) {
      await page.setViewportSize({ width, height });
      // Not scrolled into view: a button reached only by scrolling its table sideways is off the screen.
      expect(await pageFits(page), `list at ${width} px`).toBe(true);
      await inViewport(page, `Ver resumo: ${OUTRO}`);
      await inViewport(page, `Apagar: ${OUTRO}`);
    }
    await page.setViewportSize({ width: 1280, height: 800 });
    await page.getByRole('button', { name: `Ver resumo: ${OUTRO}` }).click();
    await expect.poll(() => page.locator('#titulo-resumo').textContent()).toBe(`Resumo por escola: ${OUTRO}`);
    for (const [width, height] of [
      [1280, 800],
      [390, 844],
    ] as const) {
      await page.setViewportSize({ width, height });
      expect(await pageFits(page), `summary at ${width} px`).toBe(true);
      // Every table sits in a box that scrolls sideways, reachable by keyboard, named for screen readers.
      // (In-page code as text: these tests compile without the DOM's types.)
      const boxes = await page.evaluate<Array<[string, string | null, string | null, boolean]>>(
        "[...document.querySelectorAll('#painel-lotes table')].filter((t) => t.getClientRects().length > 0)" +
          ".map((t) => t.parentElement).map((box) => [getComputedStyle(box).overflowX, box.getAttribute('tabindex'), " +
          "box.getAttribute('role'), Boolean(box.getAttribute('aria-label'))])",
      );
      expect(boxes.length).toBeGreaterThanOrEqual(3);
      for (const box of boxes) expect(box).toEqual(['auto', '0', 'region', true]);
    }
    await page.setViewportSize({ width: 1280, height: 800 });

    // The page says what the spreadsheets say for a batch's school.
    expect(await page.locator('#tabela-resumo thead th').first().textContent()).toMatch(/^Referência \(escola\)/);
    const xlsx = await downloaded(page, dir, () => page.getByRole('button', { name: 'Baixar resumo (XLSX)' }).click());
    expect(xlsx.name).toBe('Rodada-3-2026-escolas-estaduais-da-regional-norte,-segunda-rodada-de-correções-e-resumo.xlsx');
    await page.context().close();
  });

  it('"Apagar" on the list deletes the batch, takes it off the list and clears its summary and the Divergências tab', async () => {
    const page = await openPage();
    await enterKey(page);
    const sent = deletes(page);
    await sendTwoFiles(page, 'Para apagar');
    await page.getByRole('button', { name: 'Ver resumo por escola' }).click();
    await expect.poll(() => page.locator('#titulo-resumo').textContent()).toBe('Resumo por escola: Para apagar');
    const id = await page.locator('#lista-lotes tbody tr').first().getAttribute('data-lote');

    page.once('dialog', (d) => void d.dismiss());
    await page.getByRole('button', { name: 'Apagar: Para apagar' }).click();
    await expect.poll(() => page.getByRole('button', { name: 'Apagar: Para apagar' }).isEnabled()).toBe(true);
    expect(sent).toEqual([]);
    expect(await page.locator('#resumo-lote').isVisible()).toBe(true);

    page.once('dialog', (d) => void d.accept());
    await page.getByRole('button', { name: 'Apagar: Para apagar' }).click();
    await expect.poll(() => page.locator(`#lista-lotes tr[data-lote="${id}"]`).count()).toBe(0);
    expect(await page.locator('#resumo-lote').isHidden()).toBe(true);
    expect(await page.locator('#tabela-resumo').textContent()).toBe('');
    expect(await page.locator('#grafico-resumo').textContent()).toBe('');
    expect(await page.locator('#painel-lotes [data-mensagens="status"]').textContent()).toBe('Lote “Para apagar” apagado do serviço.');
    expect(sent.map((r) => [new URL(r.url()).pathname, r.headers()['x-api-key']])).toEqual([[`/api/lotes/${id}`, API_KEY]]);
    expect((await request(server, 'GET', `/api/lotes/${id}`)).status).toBe(404);
    expect(await page.evaluate<string | null>("document.activeElement.getAttribute('aria-label')")).toBe('Seus lotes');
    await page.getByRole('tab', { name: 'Divergências' }).click();
    expect(await page.locator('#resultado-lote').isHidden()).toBe(true);
    expect(await page.locator('#lote-arquivos li').count()).toBe(0);
    await page.context().close();
  });

  it('wrote no console errors', () => {
    expect(consoleErrors).toEqual([]);
  });
});
