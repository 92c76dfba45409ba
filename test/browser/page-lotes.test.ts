// The Lotes tab (SPEC §10) in a real Chromium: two rounds of a state's schools, the earlier sent
// by an integration (the API), the later through the page with each file's school typed. The
// list of batches, the later round's summary as an SVG chart and a table checked bar by bar and
// cell by cell against the route's JSON, the comparison with the earlier round the same way, its
// rows downloaded as the route's XLSX, the keyboard alone, and axe-core on each view at 1280 and
// 390 px, in normal and high contrast.
import { mkdtemp, rm } from 'node:fs/promises';
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
import { startTestServer, type TestServer } from '../helpers/http.js';
import { request, workbookSheets } from '../helpers/tarefas.js';
import { waitFor } from '../helpers/wait-for.js';
import { onThisMachine } from '../helpers/deadline.js';

let browser: Browser;
let server: TestServer;
let dir: string;
let shots: string;
const consoleErrors: string[] = [];

const row = retornoRow;
/** Round 1: what each school's return said the first time. */
const RODADA_1: Record<string, Record<string, string>[]> = {
  'Escola Alfa': [
    row('P1', '2', 'Número do CPF', '52998224725 -- 52998224726'),
    row('P2', '3', 'Número do CPF', '11144477735 -- 11144477736'),
    row('P1', '2', 'Nome completo', 'ANA SILVA -- ANA DA SILVA'),
    row('P3', '4', 'Data de nascimento', '01/01/2014 -- 02/01/2014'),
  ],
  'Escola Beta': [row('B1', '2', 'Filiação 1', 'RITA -- RITA SOUZA'), row('B2', '3', 'Sexo', '1 -- 2')],
  'Escola Gama': [row('G1', '2', 'Identificação única (Inep)', '123456789012 -- 123456789013')],
};
/** Round 2, sent through the page: Alfa fixed three, kept one, has a new one and a new grafia; Beta fixed all; Delta is new; Épsilon's file is broken. */
const RODADA_2: Array<{ arquivo: string; escola: string; content: string }> = [
  {
    arquivo: 'alfa.json',
    escola: 'Escola Alfa',
    content: JSON.stringify([
      row('P1', '2', 'Número do CPF', '52998224725 -- 52998224726'),
      row('P3', '4', 'Identificação única (Inep)', '123456789014 -- 123456789015'),
      // Only how the census writes the name (grafia): new, and not pending (issue 56).
      row('P2', '3', 'Nome completo', 'JOSE SOUZA -- JOSÉ SOUZA'),
    ]),
  },
  { arquivo: 'beta.json', escola: 'Escola Beta', content: '[]' },
  {
    arquivo: 'delta.json',
    escola: 'Escola Delta',
    content: JSON.stringify([
      row('D1', '2', 'Nome completo', 'JOAO -- JOAO LIMA'),
      row('D2', '3', 'Nome completo', 'LUIS -- LUIS LIMA'),
      row('D2', '3', 'Cor/Raça', '1 -- 3'),
    ]),
  },
  { arquivo: 'epsilon.json', escola: 'Escola Épsilon', content: '[1, 2]' },
];
let rodada1: string;

const TIPOS = ['cpf', 'nome', 'data_nascimento', 'inep', 'nome_mae', 'nome_pai', 'outro'] as const;
const SITUACOES = ['resolvidas', 'persistentes', 'novas'] as const;
const ABERTAS = ['pendentes', 'grafia'] as const;
type Counts = Record<string, number | string | null>;

beforeAll(async () => {
  browser = await launchChromium();
  server = await startTestServer();
  dir = await mkdtemp(path.join(os.tmpdir(), 'censo-page-lotes-'));
  shots = await screenshotsDir();
  // Round 1, as an integration sends it.
  const created = await request(server, 'POST', '/api/lotes', {
    body: JSON.stringify({ nome: 'Rodada 1' }),
    headers: { 'content-type': 'application/json' },
  });
  expect(created.status).toBe(201);
  rodada1 = String(created.json().id);
  for (const [escola, rows] of Object.entries(RODADA_1)) {
    const form = new FormData();
    form.set('referencia', escola);
    form.set('retorno', new Blob([JSON.stringify(rows)]), 'retorno.json');
    expect((await request(server, 'POST', `/api/lotes/${rodada1}/divergencias-rf`, { body: form })).status).toBe(202);
  }
  expect((await request(server, 'POST', `/api/lotes/${rodada1}/fechar`)).status).toBe(200);
  await waitFor(async () => (await request(server, 'GET', `/api/lotes/${rodada1}`)).json().estado === 'concluido', {
    // The embedded service runs a batch's tasks on threads at BATCH_NICENESS: beside the suite's
    // Chromium and LibreOffice (nice 0) they get a tenth of a busy core, and three tiny tasks took
    // over 29 s in a clean clone's Node 24 run. A wait, not a measure: generous.
    timeoutMs: onThisMachine(60_000),
    what: 'round 1 concluded',
  });
}, onThisMachine(120_000));

afterAll(async () => {
  await browser?.close();
  await server?.dispose();
  await rm(dir, { recursive: true, force: true });
});

const openPage = (): Promise<Page> => openPageIn(browser, server.url, consoleErrors);
const json = async (route: string) => {
  const answer = await request(server, 'GET', route);
  expect(answer.status, route).toBe(200);
  return answer.json();
};
const school = (referencia: unknown) => (referencia === null ? '(sem referência)' : String(referencia));
const collator = new Intl.Collator('pt-BR', { numeric: true });
/** Most left to do first, ties by school: the order the page promises. */
const byWorkLeft = (rows: Counts[], left: (r: Counts) => number) =>
  [...rows].sort((a, b) => left(b) - left(a) || collator.compare(school(a.referencia), school(b.referencia)));

interface Bar {
  label: string;
  total: number;
  segments: Array<{ key: string; value: number; width: number }>;
}
/** The chart's bars as drawn: each bar's school, its total and its segments (kind, value, width in px). */
const barsOf = (page: Page, container: string) =>
  page.locator(`#${container} svg.grafico g.barra`).evaluateAll((groups) =>
    groups.map((g) => ({
      label: g.getAttribute('data-rotulo') ?? '',
      total: Number(g.getAttribute('data-total')),
      segments: [...g.querySelectorAll('rect')].map((r) => ({
        key: r.getAttribute('data-chave') ?? '',
        value: Number(r.getAttribute('data-valor')),
        width: Number(r.getAttribute('width')),
      })),
    })),
  );

/** Every bar against the answer's rows in that order; one scale for every segment (width ∝ count). */
function expectBars(bars: Bar[], rows: Counts[], kinds: readonly string[], total: (r: Counts) => number): void {
  expect(bars.map((b) => b.label)).toEqual(rows.map((r) => school(r.referencia)));
  expect(bars.map((b) => b.total)).toEqual(rows.map(total));
  expect(bars.map((b) => b.segments.map((s) => [s.key, s.value]))).toEqual(
    rows.map((r) => kinds.filter((k) => Number(r[k]) > 0).map((k) => [k, Number(r[k])])),
  );
  const scales = bars.flatMap((b) => b.segments.map((s) => s.width / s.value));
  for (const scale of scales) expect(scale).toBeCloseTo(scales[0]!, 6);
}

/** Presses Tab until the focused element's text is `name` (bounded). */
async function tabTo(page: Page, name: string): Promise<void> {
  for (let i = 0; i < 60; i++) {
    if (
      (await page.evaluate<string>(
        "document.activeElement?.getAttribute('aria-label') || document.activeElement?.textContent?.trim() || ''",
      )) === name
    )
      return;
    await page.keyboard.press('Tab');
  }
  throw new Error(`${name} never received focus`);
}

describe('the Lotes tab', () => {
  let rodada2: string;

  it('a batch sent by the page names each file’s school; two files with one school are refused before anything is sent', async () => {
    const page = await openPage();
    await enterKey(page);
    const posts: string[] = [];
    page.on('request', (r) => r.method() === 'POST' && posts.push(new URL(r.url()).pathname));
    const input = page.getByLabel('Arquivo de retorno (.json ou .xlsx)').first();
    await input.setInputFiles(RODADA_2.map((f) => ({ name: f.arquivo, mimeType: 'application/json', buffer: Buffer.from(f.content) })));
    // Each school's field starts with its file's name.
    expect(await page.evaluate<string[]>("[...document.querySelectorAll('#escolas-arquivos input')].map((i) => i.value)")).toEqual([
      'alfa',
      'beta',
      'delta',
      'epsilon',
    ]);
    await page.getByLabel('Escola do arquivo beta.json').fill('Escola Alfa');
    await page.getByLabel('Escola do arquivo alfa.json').fill('Escola Alfa');
    await page.getByRole('button', { name: 'Ver divergências' }).click();
    await expect
      .poll(() => page.getByRole('alert').textContent())
      .toBe('Dois arquivos com a mesma escola (Escola Alfa): alfa.json e beta.json. Dê a cada arquivo a sua.');
    expect(await page.evaluate<string>('document.activeElement.id')).toBe('escola-arquivo-1');
    expect(posts).toEqual([]);

    for (const [i, f] of RODADA_2.entries()) await page.locator(`#escola-arquivo-${i}`).fill(f.escola);
    await page.getByLabel('Nome do lote (opcional)').fill('Rodada 2');
    await page.getByRole('button', { name: 'Ver divergências' }).click();
    await expect.poll(() => page.locator('#explica-lote').textContent(), { timeout: onThisMachine(30_000) }).toMatch(/^Lote concluído/);
    expect(posts[0]).toBe('/api/lotes');
    rodada2 = posts[1]!.split('/')[3]!;
    const lote = await json(`/api/lotes/${rodada2}`);
    expect([lote.nome, lote.estado]).toEqual(['Rodada 2', 'concluido']);
    const tarefas = (await json(`/api/lotes/${rodada2}/tarefas`)).tarefas as Array<{ referencia: string }>;
    expect(tarefas.map((t) => t.referencia)).toEqual(RODADA_2.map((f) => f.escola));

    // From the batch to its summary, on the Lotes tab.
    await page.getByRole('button', { name: 'Ver resumo por escola' }).click();
    await expect.poll(() => page.locator('#titulo-resumo').textContent()).toBe('Resumo por escola: Rodada 2');
    expect(await page.getByRole('tab', { name: 'Lotes' }).getAttribute('aria-selected')).toBe('true');
    expect(await page.evaluate<string>('document.activeElement.id')).toBe('titulo-resumo');
    await page.context().close();
  });

  it('the list, and the summary as a chart and a table with the route’s numbers, reached by keyboard alone', async () => {
    const page = await openPage();
    await enterKey(page);
    await page.getByRole('tab', { name: 'Lotes' }).click();
    await expect.poll(() => page.locator('#lista-lotes tbody tr').count()).toBe(2);
    const listed = (await json('/api/lotes')).lotes as Array<{ id: string; nome: string }>;
    expect(await page.locator('#lista-lotes tbody tr').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-lote')))).toEqual(
      listed.map((l) => l.id),
    );
    expect((await page.locator('#lista-lotes tbody th').allTextContents()).slice(0, 2)).toEqual(['Rodada 2', 'Rodada 1']);
    await expectAccessible(page, 'lotes, lista');

    await tabTo(page, 'Ver resumo: Rodada 2');
    await page.keyboard.press('Enter');
    await expect.poll(() => page.evaluate<string>('document.activeElement.id')).toBe('titulo-resumo');

    const answer = await json(`/api/lotes/${rodada2}/resumo?format=json`);
    const resumo = byWorkLeft(
      answer.resumo as Counts[],
      (r) => (Number(r.divergencias) - Number(r.correcao_grafia)) * 1e12 + Number(r.divergencias) * 1e6 + Number(r.falhas),
    );
    // What the rounds hold: Delta 3 to fix, Alfa 2 (and one only grafia), then Épsilon's failed file before Beta's clean one.
    expect(resumo.map((r) => r.referencia)).toEqual(['Escola Delta', 'Escola Alfa', 'Escola Épsilon', 'Escola Beta']);
    expectBars(await barsOf(page, 'grafico-resumo'), resumo, TIPOS, (r) => Number(r.divergencias));
    // (In-page code as text: these tests compile without the DOM's types.)
    const name = await page.evaluate<string[]>(
      "document.querySelector('#grafico-resumo svg.grafico').getAttribute('aria-labelledby').split(' ').map((id) => document.getElementById(id).textContent)",
    );
    expect(name[0]).toBe('Divergências por escola');
    expect(await page.locator('#grafico-resumo svg.grafico').getAttribute('role')).toBe('img');
    expect(await page.locator('#grafico-resumo .legenda li').allTextContents()).toEqual([
      ' CPF',
      ' Nome',
      ' Data de nascimento',
      ' INEP',
      ' Nome da mãe',
      ' Nome do pai',
      ' Outro campo',
    ]);
    const cells = (r: Counts) => [school(r.referencia), ...['arquivos', 'falhas', 'divergencias', ...TIPOS].map((k) => String(r[k]))];
    expect(await tableRows(page, 'tabela-resumo')).toEqual(resumo.map(cells));
    expect(await page.locator('#total-resumo td').allTextContents()).toEqual(cells(answer.total as Counts).slice(1));
    expect(await page.locator('#explica-resumo').textContent()).toBe(
      '4 escolas, 4 arquivos (1 com erro: envie-os de novo), 6 divergências (CPF: 1; Nome: 3; INEP: 1; Outro campo: 1), ' +
        '5 a corrigir e 1 só de grafia (nada a fazer). A escola com mais a corrigir vem primeiro.',
    );
    await page.screenshot({ path: path.join(shots, 'resumo.png'), fullPage: true });
    await expectAccessible(page, 'resumo');

    // The summary's downloads are the route's.
    const csv = await downloaded(page, dir, () => page.getByRole('button', { name: 'Baixar CSV do resumo (para programas)' }).click());
    expect(csv.bytes.equals((await request(server, 'GET', `/api/lotes/${rodada2}/resumo?format=csv`)).bytes)).toBe(true);
    // And the letters to the schools (issue 56), the route's too.
    const cartas = await downloaded(page, dir, () => page.getByRole('button', { name: 'Cartas às escolas (para imprimir)' }).click());
    expect(cartas.bytes.equals((await request(server, 'GET', `/api/lotes/${rodada2}/cartas?format=html`)).bytes)).toBe(true);
    expect(cartas.bytes.toString('utf8')).toMatch(/^<!doctype html>/);
    await page.context().close();
  });

  it('the comparison with the earlier round: its three counts per school in a chart and a table, its rows as the route’s XLSX', async () => {
    const page = await openPage();
    await enterKey(page);
    await page.getByRole('tab', { name: 'Lotes' }).click();
    await page.getByRole('button', { name: 'Ver resumo: Rodada 2' }).click();
    await expect.poll(() => page.locator('#titulo-resumo').textContent()).toBe('Resumo por escola: Rodada 2');
    // Only earlier finished batches are offered.
    expect(await page.evaluate<string[]>("[...document.querySelectorAll('#lote-anterior option')].map((o) => o.value)")).toEqual([rodada1]);
    await tabTo(page, 'Comparar');
    await page.keyboard.press('Enter');
    await expect.poll(() => page.evaluate<string>('document.activeElement.id')).toBe('titulo-comparacao');
    expect(await page.locator('#titulo-comparacao').textContent()).toBe('Comparação: Rodada 1 → Rodada 2');

    const answer = await json(`/api/lotes/${rodada2}/comparacao?anterior=${rodada1}&format=json`);
    const resumo = byWorkLeft(
      answer.resumo as Counts[],
      (r) => Number(r.pendentes) * 1e12 + (Number(r.persistentes) + Number(r.novas)) * 1e6 + Number(r.resolvidas),
    );
    const total = answer.total as Counts;
    // Alfa: 3 resolved, 1 kept, 2 new (one only grafia, so 2 pending); Beta: both resolved.
    expect(resumo.map((r) => [r.referencia, r.resolvidas, r.persistentes, r.novas, r.pendentes, r.grafia])).toEqual([
      ['Escola Alfa', 3, 1, 2, 2, 1],
      ['Escola Beta', 2, 0, 0, 0, 0],
    ]);
    expectBars(await barsOf(page, 'grafico-comparacao'), resumo, SITUACOES, (r) => SITUACOES.reduce((n, k) => n + Number(r[k]), 0));
    const cells = (r: Counts) => [school(r.referencia), ...[...SITUACOES, ...ABERTAS].map((k) => String(r[k]))];
    expect(await tableRows(page, 'tabela-comparacao')).toEqual(resumo.map(cells));
    expect(await page.locator('#total-comparacao td').allTextContents()).toEqual(cells(total).slice(1));
    expect(await page.locator('#explica-comparacao').textContent()).toBe(
      `Da rodada anterior para esta: ${total.resolvidas} divergências resolvidas, ${total.persistentes} persistente e ${total.novas} novas. ` +
        `Das persistentes e novas, ${total.pendentes} pedem correção e ${total.grafia} é só grafia ` +
        '(a forma como o Censo escreve o valor: nada a fazer). A escola com mais divergências pendentes vem primeiro.',
    );
    const semPar = answer.referencias_sem_par as Array<{ referencia: string; rodada: string }>;
    const only = (rodada: string) =>
      semPar
        .filter((s) => s.rodada === rodada)
        .map((s) => s.referencia)
        .join(', ');
    expect(only('anterior')).toBe('Escola Gama');
    expect(await page.locator('#sem-par').textContent()).toBe(
      `${semPar.length} escolas não foram comparadas por estar em uma rodada só — só na anterior: ${only('anterior')} — só nesta: ${only('atual')}.`,
    );
    await page.screenshot({ path: path.join(shots, 'comparacao.png'), fullPage: true });
    await expectAccessible(page, 'comparação');

    const xlsx = await downloaded(page, dir, () => page.getByRole('button', { name: 'Baixar as divergências comparadas (XLSX)' }).click());
    const direct = await request(server, 'GET', `/api/lotes/${rodada2}/comparacao?anterior=${rodada1}&format=xlsx`);
    expect(await workbookSheets(xlsx.bytes)).toEqual(await workbookSheets(direct.bytes));
    expect((await workbookSheets(xlsx.bytes))[0]!.rows.length - 1).toBe((answer.comparacao as unknown[]).length);

    // The same views in high contrast, and on a phone (the chart redrawn for its width).
    await page.getByRole('button', { name: 'Alto contraste' }).click();
    await expectAccessible(page, 'comparação, alto contraste');
    await page.setViewportSize({ width: 390, height: 844 });
    await expect.poll(() => page.locator('#grafico-comparacao svg.grafico').getAttribute('width')).not.toBe(null);
    await expect
      .poll(async () => Number(await page.locator('#grafico-comparacao svg.grafico').getAttribute('width')))
      .toBeLessThanOrEqual(390);
    await page.context().close();
  }, 60_000); // two batches, a chart and an XLSX in a browser: 14 s in a quiet CI run, 30 s loaded

  it('the season (issue 54): every round of the year and the schools with most to fix, as /api/safras answers, at 1280 and 390 px', async () => {
    const page = await openPage();
    await enterKey(page);
    await page.getByRole('tab', { name: 'Lotes' }).click();
    const ano = String(new Date().getFullYear());
    await expect.poll(() => page.getByLabel('Ano do censo').inputValue()).toBe(ano);
    await page.getByRole('button', { name: 'Ver a safra' }).click();
    const answer = (await request(server, 'GET', `/api/safras/${ano}?format=json`)).json() as {
      rodadas: Array<{ rodada: number; divergencias: number; escolas_sem_divergencias: number }>;
      escolas: Array<{ referencia: string; pendentes: number }>;
      escolas_com_pendencias: number;
    };
    expect(answer.rodadas.length).toBeGreaterThanOrEqual(2);
    await expect
      .poll(() => page.locator('#explica-safra').textContent())
      .toContain(
        `${answer.rodadas.length} rodadas em ${ano}, ${answer.escolas.length} escolas; ${answer.escolas_com_pendencias} escola` +
          `${answer.escolas_com_pendencias === 1 ? ' ainda tem' : 's ainda têm'} divergências a corrigir.`,
      );
    // The curve: one row per round, its divergences and schools without any, the route's numbers.
    const rodadas = await tableRows(page, 'tabela-safra-rodadas');
    expect(rodadas.map((r) => [r[0], r[5], r[6]])).toEqual(
      answer.rodadas.map((r) => [`Rodada ${r.rodada}`, String(r.divergencias), String(r.escolas_sem_divergencias)]),
    );
    expect(await page.locator('#grafico-safra svg.grafico').count()).toBe(1);
    // The schools, the one with most left to fix first.
    const escolas = await tableRows(page, 'tabela-safra-escolas');
    const most = Math.max(...answer.escolas.map((e) => e.pendentes));
    expect(escolas[0]![1]).toBe(String(most));
    expect(escolas).toHaveLength(answer.escolas.length);
    await expectAccessible(page, 'safra');
    await page.setViewportSize({ width: 390, height: 844 });
    await expectAccessible(page, 'safra, tela estreita');
    await page.screenshot({ path: path.join(shots, 'safra.png'), fullPage: true });
    await page.context().close();
  }, 60_000);

  it('wrote no console errors', () => {
    expect(consoleErrors).toEqual([]);
  });
});
