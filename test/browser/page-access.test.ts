// The staff page as Brazilian public services must have it (eMAG 3.1, WCAG 2.1 AA), in a real
// Chromium, in the embedded default (no DATABASE_URL): a clean console on load with no request
// for the query list; the access bar (Alt+1 content, Alt+2 menu, Alt+3 search, links to each, a
// high-contrast switch that persists); focus visible on every control; each task's messages in its
// own tab; axe-core over every view at 1280 and 390 px with no violation of impact serious or
// critical; and the persons table showing what the corrected file writes, with each correction
// not applied named by person and field.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  downloaded,
  enterKey,
  expectAccessible,
  launchChromium,
  openPage as openPageIn,
  retornoRow,
  screenshotsDir,
  tableRows,
} from '../helpers/browser.js';
import { fixtureCases } from '../helpers/fixtures.js';
import { API_KEY, formWith, startTestServer, type TestServer } from '../helpers/http.js';
import { workbookSheets } from '../helpers/tarefas.js';
import { onThisMachine } from '../helpers/deadline.js';

const basico = fixtureCases().find((c) => c.name === 'basico')!;
const divergencias = (basico.expectedDivergencias as { divergencias: unknown[] }).divergencias;
const pessoasBasico = (basico.expectedPessoas as { pessoas: unknown[] }).pessoas;

let browser: Browser;
let server: TestServer;
let dir: string;
let shots: string;
const consoleErrors: string[] = [];

/**
 * A school whose tax-authority values need the layout's writing (SPEC §3.4): a CPF with dots, a
 * name with an accent and double spaces, an id with dots, an ISO date, and two values the layout
 * cannot take (a CPF of 10 digits, a 31st of February), which stay out of the corrected file.
 */
const TXT = [
  '00|12345678|1|03/02/2025|19/12/2025|ESCOLA ESTADUAL CENTRAL|88000000|4205407|05|RUA A|1||CENTRO||||||1|7|2|0|0|0|0|',
  // P001 was sent without a CPF: the file can write the Receita's (a CPF sent is Educacenso's, SPEC §11).
  '30|12345678|P001|123456789012||MARIA SILVA|14/03/2014|1|ANA SILVA||2|3||1|76|4205407|0|',
  '30|12345678|P002|123456789013|11144477735|JOSE SOUZA|01/07/2013|1|RITA SOUZA||1|3||1|76|4205407|0|',
  '30|12345678|P003|123456789014|39053344705|CARLOS LIMA|22/11/2012|1|ROSA LIMA||1|3||1|76|4205407|0|',
  '99|',
  '',
].join('\r\n');
const RETORNO = [
  retornoRow('P001', '2', 'Número do CPF', ' -- 153.509.460-57'),
  retornoRow('P001', '2', 'Nome completo', 'MARIA SILVA -- María  da  Silva'),
  retornoRow('P002', '3', 'Número do CPF', '11144477735 -- 1535094605'),
  retornoRow('P002', '3', 'Data de nascimento', '01/07/2013 -- 31/02/2013'),
  retornoRow('P003', '4', 'Identificação única (Inep)', '123456789014 -- 1234.5678.9015'),
  retornoRow('P003', '4', 'Data de nascimento', '22/11/2012 -- 2012-11-23'),
];
let escrita: { txt: string; retorno: string };

beforeAll(async () => {
  browser = await launchChromium();
  server = await startTestServer();
  dir = await mkdtemp(path.join(os.tmpdir(), 'censo-page-access-'));
  shots = await screenshotsDir();
  escrita = { txt: path.join(dir, 'censo.txt'), retorno: path.join(dir, 'retorno.json') };
  await writeFile(escrita.txt, TXT, 'latin1');
  await writeFile(escrita.retorno, JSON.stringify(RETORNO));
}, onThisMachine(120_000));

afterAll(async () => {
  await browser?.close();
  await server?.dispose();
  await rm(dir, { recursive: true, force: true });
});

const openPage = (): Promise<Page> => openPageIn(browser, server.url, consoleErrors);
const focusedId = (page: Page) => page.evaluate<string>("document.activeElement?.id ?? ''");
/** Visible text of the page's role=status and role=alert regions (what a screen reader has been told, on screen). */
const visibleMessages = (page: Page) =>
  page.evaluate<string[]>(
    `[...document.querySelectorAll('[role="status"], [role="alert"]')].filter((e) => e.offsetParent !== null && e.textContent.trim() !== '').map((e) => e.textContent.trim())`,
  );

describe('the staff page, accessible', () => {
  it('embedded default: a clean console on load, no request for the query list, and no Consultas tab', async () => {
    const errors: string[] = [];
    const context = await browser.newContext();
    const page = await context.newPage();
    const asked: string[] = [];
    page.on('console', (message) => message.type() === 'error' && errors.push(message.text()));
    page.on('pageerror', (err) => errors.push(err.message));
    page.on('request', (request) => asked.push(new URL(request.url()).pathname));
    const offered = page.waitForResponse((response) => new URL(response.url()).pathname === '/pagina.json');
    await page.goto(server.url);
    expect(await (await offered).json()).toEqual({ consultas: false });
    await enterKey(page);
    // Every tab there is, opened: each asks only for what this service has.
    for (const name of ['Retorno + txt', 'Lotes', 'Divergências']) await page.getByRole('tab', { name }).click();
    await expect.poll(() => page.locator('#painel-lotes [data-mensagens="status"]').textContent()).toMatch(/lotes? na lista/);
    expect(await page.getByRole('tab', { name: 'Consultas' }).count()).toBe(0);
    expect(await page.getByRole('tab').allTextContents()).toEqual(['Divergências', 'Retorno + txt', 'Lotes']);
    expect(asked.filter((p) => p.startsWith('/api/query'))).toEqual([]);
    expect(errors).toEqual([]);
    await context.close();
  });

  it('the access bar: Alt+1, Alt+2 and Alt+3 and their links move focus; the search one only where there is a search', async () => {
    const page = await openPage();
    const bar = page.getByRole('navigation', { name: 'Acessibilidade' });
    expect(await bar.getByRole('link').allTextContents()).toEqual(['Ir para o conteúdo 1', 'Ir para o menu 2']);
    expect(await bar.getByRole('link').evaluateAll((links) => links.map((a) => a.getAttribute('accesskey')))).toEqual(['1', '2']);
    // First on the page: the first Tab reaches the skip link.
    await page.keyboard.press('Tab');
    expect(await page.evaluate<string>("document.activeElement?.textContent ?? ''")).toBe('Ir para o conteúdo 1');
    await page.keyboard.press('Enter');
    expect(await focusedId(page)).toBe('conteudo');
    expect(new URL(page.url()).hash).toBe('');

    await page.keyboard.press('Alt+2');
    expect(await focusedId(page)).toBe('aba-divergencias');
    await page.keyboard.press('ArrowRight');
    await page.keyboard.press('Alt+1');
    expect(await focusedId(page)).toBe('conteudo');
    await page.keyboard.press('Alt+2');
    expect(await focusedId(page)).toBe('aba-retorno');
    // No search on this screen: said, and focus stays.
    await page.keyboard.press('Alt+3');
    expect(await focusedId(page)).toBe('aba-retorno');
    expect(await page.locator('#status').textContent()).toBe('Não há busca nesta tela: ela aparece com a tabela de um resultado.');

    await page.getByRole('tab', { name: 'Divergências' }).click();
    await enterKey(page);
    await page.getByLabel('Arquivo de retorno (.json ou .xlsx)').first().setInputFiles(basico.retorno.json);
    await page.getByRole('button', { name: 'Ver divergências' }).click();
    // The link appears with the table, once the task has run: on a machine busy with the suite's
    // other file that takes longer than the poll's default second.
    await expect.poll(() => bar.getByRole('link', { name: 'Ir para a busca' }).isVisible(), { timeout: onThisMachine(15_000) }).toBe(true);
    await page.keyboard.press('Alt+3');
    expect(await focusedId(page)).toBe('tabela-divergencias-filtro');
    await page.keyboard.press('Alt+1');
    await bar.getByRole('link', { name: 'Ir para a busca' }).click();
    expect(await focusedId(page)).toBe('tabela-divergencias-filtro');
    // Another tab has no table: the link goes.
    await page.getByRole('tab', { name: 'Retorno + txt' }).click();
    await expect.poll(() => bar.getByRole('link', { name: 'Ir para a busca' }).isVisible()).toBe(false);
    await page.context().close();
  });

  it('high contrast: the switch says its state, changes the colours, and is still on after a reload', async () => {
    const page = await openPage();
    const switcher = page.getByRole('button', { name: 'Alto contraste' });
    const background = () => page.evaluate<string>('getComputedStyle(document.documentElement).backgroundColor');
    const normal = await background();
    expect(await switcher.getAttribute('aria-pressed')).toBe('false');
    await switcher.click();
    expect(await switcher.getAttribute('aria-pressed')).toBe('true');
    expect(await background()).toBe('rgb(0, 0, 0)');
    await page.reload();
    expect(await page.evaluate<boolean>("document.documentElement.classList.contains('contraste')")).toBe(true);
    expect(await switcher.getAttribute('aria-pressed')).toBe('true');
    await expectAccessible(page, 'alto contraste, sem chave');
    await enterKey(page);
    await page.getByLabel('Arquivo de retorno (.json ou .xlsx)').first().setInputFiles(basico.retorno.json);
    await page.getByRole('button', { name: 'Ver divergências' }).click();
    await page.locator('#tabela-divergencias tbody tr').first().waitFor();
    await expectAccessible(page, 'alto contraste, divergências');
    // Off again, and off after a reload; only the preference was ever kept (never the key).
    await switcher.click();
    expect(await page.evaluate<string[]>('Object.keys(localStorage)')).toEqual([]);
    await page.reload();
    expect(await switcher.getAttribute('aria-pressed')).toBe('false');
    expect(await background()).toBe(normal);
    await page.context().close();
  });

  it('keyboard: every control Tab reaches shows its focus', async () => {
    const page = await openPage();
    await enterKey(page);
    await page.getByLabel('Arquivo de retorno (.json ou .xlsx)').first().setInputFiles(basico.retorno.json);
    await page.getByRole('button', { name: 'Ver divergências' }).click();
    await page.locator('#tabela-divergencias tbody tr').first().waitFor();
    await page.keyboard.press('Alt+1');
    const seen: string[] = [];
    const unmarked: string[] = [];
    for (let i = 0; i < 40; i++) {
      await page.keyboard.press('Tab');
      const focus = await page.evaluate<{ name: string; outline: string; width: number } | null>(`(() => {
        const e = document.activeElement;
        // Past the last control focus leaves the document for the browser's own controls.
        if (e === null || e === document.body) return null;
        const style = getComputedStyle(e);
        return { name: e.id || e.textContent.trim().slice(0, 40) || e.tagName, outline: style.outlineStyle, width: parseFloat(style.outlineWidth) };
      })()`);
      if (focus === null) continue;
      seen.push(focus.name);
      if (focus.outline === 'none' || focus.width < 2) unmarked.push(focus.name);
    }
    // The walk reached the controls of the result (the pager, the headers' sort buttons).
    expect(seen).toEqual(expect.arrayContaining(['Baixar planilha (XLSX)', 'tabela-divergencias-filtro', 'Campo no retorno']));
    expect(unmarked).toEqual([]);
    await page.context().close();
  });

  it("a message belongs to its tab: another tab's count or error never sits over a result", async () => {
    const page = await openPage();
    await enterKey(page);
    await page.getByLabel('Arquivo de retorno (.json ou .xlsx)').first().setInputFiles(basico.retorno.json);
    await page.getByRole('button', { name: 'Ver divergências' }).click();
    await page.locator('#tabela-divergencias tbody tr').first().waitFor();
    const found = `${divergencias.length} divergências encontradas.`;
    await expect.poll(() => visibleMessages(page)).toEqual(['Chave registrada nesta aba.', found]);

    // Retorno + txt: an error (a txt that is not the one submitted), then a result.
    await page.getByRole('tab', { name: 'Retorno + txt' }).click();
    await page.locator('#retorno-pessoas').setInputFiles(basico.retorno.json);
    await page.locator('#txt-pessoas').setInputFiles(escrita.txt);
    await page.getByRole('button', { name: 'Ver pessoas corrigidas' }).click();
    const mismatch = 'O arquivo txt não corresponde ao retorno (linha 2).';
    await expect.poll(() => page.locator('#painel-retorno').getByRole('alert').textContent()).toBe(mismatch);
    await page.getByRole('tab', { name: 'Divergências' }).click();
    expect(await visibleMessages(page)).toEqual(['Chave registrada nesta aba.', found]);
    expect(await page.getByRole('alert').count()).toBe(0);

    await page.getByRole('tab', { name: 'Retorno + txt' }).click();
    expect(await page.getByRole('alert').textContent()).toBe(mismatch);
    await page.locator('#txt-pessoas').setInputFiles(basico.txt);
    await page.getByRole('button', { name: 'Ver pessoas corrigidas' }).click();
    const counted = `${pessoasBasico.length} pessoas com divergência.`;
    await expect.poll(() => visibleMessages(page)).toEqual(['Chave registrada nesta aba.', counted]);
    await page.getByRole('tab', { name: 'Divergências' }).click();
    expect(await visibleMessages(page)).toEqual(['Chave registrada nesta aba.', found]);
    expect(await page.getByText(counted).isVisible()).toBe(false);
    // Each panel's line is a polite live region, and its errors an alert: said as they change.
    expect(await page.locator('#painel-divergencias [data-mensagens="status"]').getAttribute('aria-live')).toBe('polite');
    expect(await page.locator('#painel-retorno [data-mensagens="erro"]').getAttribute('role')).toBe('alert');
    await page.context().close();
  });

  it('the persons table shows what the corrected file writes, and names each correction not applied', async () => {
    const page = await openPage();
    await enterKey(page);
    await page.getByRole('tab', { name: 'Retorno + txt' }).click();
    await page.locator('#retorno-pessoas').setInputFiles(escrita.retorno);
    await page.locator('#txt-pessoas').setInputFiles(escrita.txt);
    await page.getByRole('button', { name: 'Ver pessoas corrigidas' }).click();
    await page.locator('#tabela-pessoas tbody tr').first().waitFor();
    const rows = await tableRows(page, 'tabela-pessoas');
    const corrected = await downloaded(page, dir, () => page.getByRole('button', { name: 'Baixar arquivo corrigido (.txt)' }).click());
    const fileLines = corrected.bytes.toString('latin1').split('\r\n');
    const txtLines = TXT.split('\r\n');
    // The route's own persons: the tax authority's values as the return spelled them.
    const answer = await fetch(`${server.url}/api/retorno-rf`, {
      method: 'POST',
      headers: { 'x-api-key': API_KEY },
      body: await formWith([
        { field: 'retorno', path: escrita.retorno, filename: 'retorno.json' },
        { field: 'txt', path: escrita.txt, filename: 'censo.txt' },
      ]),
    });
    const { pessoas } = (await answer.json()) as { pessoas: Record<string, string>[] };
    expect(rows.map((r) => r[0])).toEqual(pessoas.map((p) => p.codigo_na_escola));
    // Columns CPF, Nome, Data de nascimento, INEP against the file's fields 5, 6, 7, 4 of each person's line.
    const FIELDS: Array<[number, number, string]> = [
      [2, 4, 'cpf'],
      [3, 5, 'nome'],
      [4, 6, 'data_nascimento'],
      [5, 3, 'inep'],
    ];
    const notApplied: string[] = [];
    rows.forEach((row, i) => {
      const linha = Number(row[1]) - 1;
      const written = fileLines[linha]!.split('|');
      for (const [column, field, key] of FIELDS) {
        const cell = row[column]!;
        if (cell.includes(' (não aplicada: ')) {
          // What the file writes (the text file's value), and the tax authority's beside it.
          expect(cell).toBe(`${written[field]} (não aplicada: Receita ${pessoas[i]![key]})`);
          expect(written[field]).toBe(txtLines[linha]!.split('|')[field]);
          notApplied.push(`${row[0]} ${key}`);
        } else {
          expect(cell, `${row[0]} ${key}`).toBe(written[field]);
        }
      }
    });
    expect(notApplied).toEqual(['P002 cpf', 'P002 data_nascimento']);
    // What the layout made of the others: not the return's spelling.
    expect(rows.map((r) => r.slice(2, 6))).toEqual([
      ['15350946057', 'MARIA DA SILVA', '14/03/2014', '123456789012'],
      ['11144477735 (não aplicada: Receita 1535094605)', 'JOSE SOUZA', '01/07/2013 (não aplicada: Receita 31/02/2013)', '123456789013'],
      ['39053344705', 'CARLOS LIMA', '23/11/2012', '123456789015'],
    ]);
    expect(await page.locator('#explica-nao-aplicadas').textContent()).toBe(
      '2 correções não aplicadas: divergências que o arquivo corrigido não escreve (fora as só de grafia), com o motivo de cada uma. ' +
        'Confira-as no Educacenso:',
    );
    expect(await page.locator('#lista-nao-aplicadas li').allTextContents()).toEqual([
      'P002 (linha 3 do .txt) — CPF: o valor da Receita Federal não cabe no layout do INEP',
      'P002 (linha 3 do .txt) — Data de nascimento: o valor da Receita Federal não cabe no layout do INEP',
    ]);
    expect(await page.locator('#contagens-corrigido').textContent()).toMatch(/Correções não aplicadas: 2 \(/);
    await expectAccessible(page, 'retorno + txt, com correções não aplicadas');
    await page.screenshot({ path: path.join(shots, 'nao-aplicadas.png'), fullPage: true });

    // The Divergências table says the same of each divergence.
    await page.getByRole('tab', { name: 'Divergências' }).click();
    await page.getByLabel('Arquivo de retorno (.json ou .xlsx)').first().setInputFiles(escrita.retorno);
    await page.getByRole('button', { name: 'Ver divergências' }).click();
    await expect.poll(() => page.locator('#tabela-divergencias tbody tr').count()).toBe(RETORNO.length);
    expect((await tableRows(page, 'tabela-divergencias')).map((r) => `${r[0]} ${r[5]}: ${r[7]}`)).toEqual([
      'P001 CPF: Sim',
      'P001 Nome: Sim',
      'P002 CPF: Não',
      'P002 Data de nascimento: Não',
      'P003 INEP: Sim',
      'P003 Data de nascimento: Sim',
    ]);
    // The explanation is written once the whole answer is in, a moment after the rows show
    // (CI on Node 24 read it empty once): waited for as the rows are.
    await expect
      .poll(() => page.locator('#explica-divergencias').textContent())
      .toContain('6 divergências, uma por linha da tabela. 4 são corrigidas');
    // The staff's spreadsheet says the same, row by row (the core writes that column).
    const xlsx = await downloaded(page, dir, () => page.getByRole('button', { name: 'Baixar planilha (XLSX)' }).click());
    const [header, ...cells] = (await workbookSheets(xlsx.bytes))[0]!.rows;
    const applied = header!.indexOf('No arquivo corrigido');
    expect(applied).toBeGreaterThanOrEqual(0);
    expect(cells.map((r) => r[applied])).toEqual((await tableRows(page, 'tabela-divergencias')).map((r) => r[7]));
    await page.context().close();
  });

  it(
    'axe-core: no serious or critical violation on any view, at 1280 and 390 px',
    async () => {
      const page = await openPage();
      await expectAccessible(page, 'sem chave');
      await enterKey(page);
      await expectAccessible(page, 'chave registrada');
      await page.getByRole('tab', { name: 'Retorno + txt' }).click();
      await expectAccessible(page, 'retorno + txt, vazio');
      await page.getByRole('tab', { name: 'Lotes' }).click();
      await expect.poll(() => page.locator('#painel-lotes [data-mensagens="status"]').textContent()).toMatch(/lotes? na lista/);
      await expectAccessible(page, 'lotes, lista');

      await page.getByRole('tab', { name: 'Divergências' }).click();
      const input = page.getByLabel('Arquivo de retorno (.json ou .xlsx)').first();
      await input.setInputFiles({ name: 'retorno.json', mimeType: 'application/json', buffer: Buffer.from('[1, 2]') });
      await page.getByRole('button', { name: 'Ver divergências' }).click();
      await expect.poll(() => page.getByRole('alert').textContent()).toBe('Arquivo retorno ilegível: as linhas do JSON devem ser objetos.');
      await expectAccessible(page, 'erro');
      await input.setInputFiles(basico.retorno.xlsx);
      await page.getByRole('button', { name: 'Ver divergências' }).click();
      await expect
        .poll(() => page.locator('#tabela-divergencias .resumo').textContent())
        .toBe(`${divergencias.length} de ${divergencias.length} linhas`);
      await expectAccessible(page, 'divergências');

      // Several files: the school of each, then the batch's states.
      await input.setInputFiles([basico.retorno.json, basico.retorno.xlsx]);
      await expect.poll(() => page.locator('#escolas-arquivos input').count()).toBe(2);
      await expectAccessible(page, 'lote, escolas');
      await page.locator('#escola-arquivo-1').fill('Escola B');
      await page.getByRole('button', { name: 'Ver divergências' }).click();
      await expect.poll(() => page.locator('#explica-lote').textContent(), { timeout: onThisMachine(30_000) }).toMatch(/^Lote concluído/);
      await expectAccessible(page, 'lote concluído');

      await page.getByRole('tab', { name: 'Retorno + txt' }).click();
      await page.locator('#retorno-pessoas').setInputFiles(basico.retorno.json);
      await page.locator('#txt-pessoas').setInputFiles(basico.txt);
      await page.getByRole('button', { name: 'Ver pessoas corrigidas' }).click();
      await page.locator('#tabela-pessoas tbody tr').first().waitFor();
      await downloaded(page, dir, () => page.getByRole('button', { name: 'Baixar arquivo corrigido (.txt)' }).click());
      await expectAccessible(page, 'pessoas e arquivo corrigido');
      await page.context().close();
    },
    onThisMachine(90_000),
  );

  it('wrote no console errors', () => {
    // The 400 and 422 above are answers the page shows; Chromium logs a failed load for them.
    expect(consoleErrors.filter((e) => !/Failed to load resource: the server responded with a status of (400|422)/.test(e))).toEqual([]);
  });
});
