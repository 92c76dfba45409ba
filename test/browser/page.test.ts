// The staff page (SPEC §3.6) in a real Chromium (Debian's, driven by playwright-core; .ci/run
// installs it): the key, each task on the fixtures with the exact table contents, sorting and
// filtering, downloads compared with the routes' own answers, the queries with paging and CSV,
// the errors, the CSP, no console errors, and 150,000 divergences without a frozen tab.
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  downloaded as downloadedTo,
  enterKey,
  expectAccessible,
  launchChromium,
  openPage as openPageIn,
  screenshotsDir,
  tableRows,
} from '../helpers/browser.js';
import { orientacao, type Divergencia } from '@censo/shared';
import { fixtureCases } from '../helpers/fixtures.js';
import { API_KEY, formWith, startTestServer, type TestServer, type UploadFile } from '../helpers/http.js';
import { createAuditsTable, createTestSchema, startTestPostgres, type TestPostgres, type TestSchema } from '../helpers/postgres.js';
import { onThisMachine } from '../helpers/deadline.js';

let SHOTS: string;
const basico = fixtureCases().find((c) => c.name === 'basico')!;
const divergencias = (basico.expectedDivergencias as { divergencias: Record<string, unknown>[] }).divergencias;
const pessoas = (basico.expectedPessoas as { pessoas: Record<string, unknown>[] }).pessoas;

let browser: Browser;
let server: TestServer;
let pg: TestPostgres;
let schema: TestSchema;
let downloads: string;
const consoleErrors: string[] = [];

beforeAll(async () => {
  browser = await launchChromium();
  pg = await startTestPostgres();
  schema = await createTestSchema(pg.url);
  await createAuditsTable(schema.admin);
  await schema.admin.query(`INSERT INTO audits (auditable_id, user_id, action, created_at)
    SELECT g, CASE WHEN g % 5 = 0 THEN NULL ELSE g % 7 END, CASE WHEN g % 2 = 0 THEN 'update' ELSE 'create' END,
           timestamp '2024-03-01' + g * interval '1 minute'
    FROM generate_series(1, 1200) AS g`);
  server = await startTestServer({ DATABASE_URL: schema.url });
  downloads = await mkdtemp(path.join(os.tmpdir(), 'censo-page-'));
  SHOTS = await screenshotsDir();
}, onThisMachine(120_000));

afterAll(async () => {
  await browser?.close();
  await server?.dispose();
  await schema?.drop();
  await pg?.stop();
  await rm(downloads, { recursive: true, force: true });
});

const openPage = (): Promise<Page> => openPageIn(browser, server.url, consoleErrors);
const downloaded = (page: Page, click: () => Promise<void>) => downloadedTo(page, downloads, click);

async function routeAnswer(route: string, files: UploadFile[]): Promise<Buffer> {
  const response = await fetch(`${server.url}${route}`, { method: 'POST', headers: { 'x-api-key': API_KEY }, body: await formWith(files) });
  return Buffer.from(await response.arrayBuffer());
}

const text = (row: Record<string, unknown>, columns: string[]) => columns.map((c) => (row[c] === null ? '' : String(row[c])));
/** How the answer's `nao_aplicadas` names each field the persons table shows as the file writes it. */
const CAMPO: Record<string, string> = {
  cpf: 'CPF',
  nome: 'Nome',
  data_nascimento: 'Data de nascimento',
  inep: 'INEP',
  nome_mae: 'Filiação 1',
};
/**
 * A person's row: each field as the corrected file writes it (the answer's `arquivo_*`, SPEC
 * §3.2), the Receita's value beside one the file keeps, then rule 25 and the reasons.
 */
function pessoaRow(p: Record<string, unknown>): string[] {
  const kept = (key: string): boolean =>
    String(p.nao_aplicadas)
      .split('; ')
      .some((item) => item.startsWith(`${CAMPO[key]}:`));
  const cell = (key: string): string =>
    kept(key) ? `${String(p[`arquivo_${key}`])} (não aplicada: Receita ${String(p[key])})` : String(p[`arquivo_${key}`]);
  return [
    String(p.codigo_na_escola),
    String(p.linha),
    ...Object.keys(CAMPO).map(cell),
    p.regra_25 ? 'Sim' : 'Não',
    String(p.nao_aplicadas),
  ];
}
/** The words a person reads for a divergence's `chave` (the page never shows field names). */
const DADO: Record<string, string> = {
  cpf: 'CPF',
  nome: 'Nome',
  data_nascimento: 'Data de nascimento',
  inep: 'INEP',
  nome_mae: 'Nome da mãe',
  nome_pai: 'Nome do pai',
  null: 'Outro campo',
};
/** SPEC §11: the corrected file applies a divergence exactly when its `correcao` is `arquivo`. */
const applies = (d: Record<string, unknown>): boolean => d.correcao === 'arquivo' || d.correcao === 'educacenso';
/** The words of `correcao` (SPEC §11), written again here. */
const COMO: Record<string, string> = {
  arquivo: 'Arquivo corrigido',
  educacenso: 'Já no Educacenso',
  formulario: 'Formulário do Educacenso',
  receita: 'Cidadão na Receita Federal',
  grafia: 'Só grafia',
};
/** A divergence as its table row reads: Portuguese words, Sim/Não, and whether the corrected file applies it. */
function divergenciaRow(d: Record<string, unknown>): string[] {
  const chave = String(d.chave);
  return [
    ...text(d, ['codigo_na_escola', 'linha', 'campo', 'enviado', 'correto']),
    DADO[chave]!,
    d.is_filiacao ? 'Sim' : 'Não',
    applies(d) ? 'Sim' : 'Não',
    COMO[String(d.correcao)]!,
    orientacao(d as unknown as Divergencia),
  ];
}

describe('the staff page', () => {
  it('is served under a CSP of self, with no referrer, and its key is asked again after a 401', async () => {
    const response = await fetch(`${server.url}/`);
    expect(response.status).toBe(200);
    const csp = response.headers.get('content-security-policy') ?? '';
    expect(csp).toMatch(/default-src 'self'/);
    expect(csp).toMatch(/frame-ancestors 'none'/);
    expect(csp).not.toMatch(/unsafe-inline/);
    expect(response.headers.get('referrer-policy')).toBe('no-referrer');
    expect(await response.text()).not.toMatch(/<script>(?!\s*<\/script>)|<script(?![^>]*src=)[^>]*>/);
    // With a database the page offers the Consultas tab (pagina.json says so; page-access.test.ts has the embedded default).
    expect(await (await fetch(`${server.url}/pagina.json`)).json()).toEqual({ consultas: true });

    const page = await openPage();
    await page.screenshot({ path: path.join(SHOTS, 'chave.png') });
    await enterKey(page, 'chave-errada');
    await page.getByLabel('Arquivo de retorno (.json ou .xlsx)').first().setInputFiles(basico.retorno.json);
    await page.getByRole('button', { name: 'Ver divergências' }).click();
    await expect.poll(() => page.getByRole('alert').textContent()).toBe('Credencial inválida (header x-api-key).');
    await expect.poll(() => page.evaluate("sessionStorage.getItem('censo-api-key')")).toBeNull();
    await expect.poll(() => page.evaluate('document.activeElement?.id')).toBe('chave');
    // The key never goes to a cookie, localStorage or a URL.
    await enterKey(page);
    expect(await page.evaluate("[document.cookie, localStorage.length, location.href.includes('test-key')]")).toEqual(['', 0, false]);
    await page.context().close();
  });

  it("Divergências: the exact table in Portuguese, counts that agree with it, sorting, filters, and the task's XLSX/CSV", async () => {
    const page = await openPage();
    await enterKey(page);
    await page.getByLabel('Arquivo de retorno (.json ou .xlsx)').first().setInputFiles(basico.retorno.xlsx);
    await page.getByRole('button', { name: 'Ver divergências' }).click();
    await page.locator('#tabela-divergencias tbody tr').first().waitFor();
    expect(await tableRows(page, 'tabela-divergencias')).toEqual(divergencias.map(divergenciaRow));
    const headers = await page.locator('#tabela-divergencias th').allTextContents();
    expect(headers).toEqual([
      'Código na escola',
      'Linha no txt',
      'Campo no retorno',
      'Valor enviado',
      'Valor da Receita Federal',
      'Dado',
      'Filiação',
      'No arquivo corrigido',
      'Como corrigir',
      'O que fazer',
    ]);
    const tally = new Map<string, number>();
    for (const d of divergencias) tally.set(DADO[String(d.chave)]!, (tally.get(DADO[String(d.chave)]!) ?? 0) + 1);
    await expect
      .poll(async () => new Set(await page.locator('#tabela-divergencias .contagens li').allTextContents()))
      .toEqual(new Set([...tally].map(([k, n]) => `${k}: ${n}`)));
    // The line above the table says how many, and how many the corrected file applies: the table's own numbers.
    // `educacenso` rows are written too (filiação 1) but change nothing: the line counts `arquivo`.
    const applied = divergencias.filter((d) => d.correcao === 'arquivo').length;
    const by = (correcao: string) => divergencias.filter((d) => d.correcao === correcao).length;
    const explained = (await page.locator('#explica-divergencias').textContent()) ?? '';
    expect(await page.locator('#tabela-divergencias .resumo').textContent()).toBe(
      `${divergencias.length} de ${divergencias.length} linhas`,
    );
    expect(explained).toContain(`${divergencias.length} divergências, uma por linha da tabela. ${applied} são corrigidas automaticamente`);
    // And how many each other way takes (SPEC §11), from the same column.
    const ways = [
      [by('formulario'), 'só no formulário do Educacenso (o INEP recusaria a troca por arquivo)'],
      [by('educacenso'), 'já estão no Educacenso (o INEP gravou o nome da mãe da Receita Federal, e o arquivo corrigido leva o mesmo)'],
      [by('receita'), 'pelo cidadão, na Receita Federal'],
      [by('grafia'), 'só de grafia: nada a corrigir'],
    ].filter(([n]) => Number(n) > 0);
    expect(explained).toContain(`Das outras: ${ways.map(([n, how]) => `${n} ${how}`).join('; ')}.`);
    await page.screenshot({ path: path.join(SHOTS, 'divergencias.png'), fullPage: true });

    const campo = page.locator('#tabela-divergencias th').filter({ hasText: 'Campo no retorno' });
    await campo.getByRole('button').click();
    await expect.poll(() => campo.getAttribute('aria-sort')).toBe('ascending');
    const sorted = [...divergencias].map((d) => String(d.campo)).sort(new Intl.Collator('pt-BR', { numeric: true }).compare);
    await expect.poll(async () => (await tableRows(page, 'tabela-divergencias')).map((r) => r[2])).toEqual(sorted);
    await campo.getByRole('button').click();
    await expect.poll(() => campo.getAttribute('aria-sort')).toBe('descending');
    await expect.poll(async () => (await tableRows(page, 'tabela-divergencias')).map((r) => r[2])).toEqual([...sorted].reverse());

    await page.getByLabel(/^Filtrar por: Código na escola/).fill('ALU0002');
    await expect
      .poll(async () => (await tableRows(page, 'tabela-divergencias')).map((r) => r[0]))
      .toEqual(divergencias.filter((d) => d.codigo_na_escola === 'ALU0002').map(() => 'ALU0002'));
    await page.getByLabel(/^Filtrar por: Código na escola/).fill('');
    await page.getByLabel('Mostrar só: Dado').selectOption('CPF');
    await expect
      .poll(async () => (await tableRows(page, 'tabela-divergencias')).map((r) => r[5]))
      .toEqual(divergencias.filter((d) => d.chave === 'cpf').map(() => 'CPF'));
    await page.getByLabel('Mostrar só: Dado').selectOption('');

    // “Como corrigir” is a choice of its words, each with its count (issue 56), and narrows with the other filters.
    const como = page.getByLabel('Mostrar só: Como corrigir');
    const comoTally = new Map<string, number>();
    for (const d of divergencias) comoTally.set(COMO[String(d.correcao)]!, (comoTally.get(COMO[String(d.correcao)]!) ?? 0) + 1);
    await expect
      .poll(async () => new Set(await como.locator('option').allTextContents()))
      .toEqual(new Set(['todas', ...[...comoTally].map(([word, n]) => `${word} (${n})`)]));
    await como.selectOption(COMO.formulario!);
    const formulario = divergencias.filter((d) => d.correcao === 'formulario');
    expect(formulario.length).toBeGreaterThan(0);
    // The rows keep the order chosen above (Campo no retorno, descending): compared as sets of rows.
    const asSet = (rows: string[][]) => rows.map((r) => JSON.stringify(r)).sort();
    await expect.poll(async () => asSet(await tableRows(page, 'tabela-divergencias'))).toEqual(asSet(formulario.map(divergenciaRow)));
    await page.getByLabel('Mostrar só: Dado').selectOption('CPF');
    await expect
      .poll(async () => asSet(await tableRows(page, 'tabela-divergencias')))
      .toEqual(asSet(formulario.filter((d) => d.chave === 'cpf').map(divergenciaRow)));
    await como.selectOption('');
    await page.getByLabel('Mostrar só: Dado').selectOption('');
    await expect.poll(async () => (await tableRows(page, 'tabela-divergencias')).length).toBe(divergencias.length);

    const retorno: UploadFile = { field: 'retorno', path: basico.retorno.xlsx, filename: 'retorno.xlsx' };
    const csv = await downloaded(page, () =>
      page.locator('#resultado-divergencias').getByRole('button', { name: 'Baixar CSV (para programas)' }).click(),
    );
    expect(csv.name).toBe('divergencias.csv');
    expect(csv.bytes.equals(await routeAnswer('/api/divergencias-rf?format=csv', [retorno]))).toBe(true);
    const xlsx = await downloaded(page, () =>
      page.locator('#resultado-divergencias').getByRole('button', { name: 'Baixar planilha (XLSX)' }).click(),
    );
    expect(xlsx.name).toBe('divergencias.xlsx');
    expect(xlsx.bytes.subarray(0, 2).toString()).toBe('PK');
    await page.context().close();
  });

  it('Retorno + txt: the persons, and the corrected census file with counts that agree with the table', async () => {
    const page = await openPage();
    await enterKey(page);
    await page.getByRole('tab', { name: 'Retorno + txt' }).click();
    await page.locator('#retorno-pessoas').setInputFiles(basico.retorno.json);
    await page.locator('#txt-pessoas').setInputFiles(basico.txt);
    await page.getByRole('button', { name: 'Ver pessoas corrigidas' }).click();
    await page.locator('#tabela-pessoas tbody tr').first().waitFor();
    // CPF, Nome, Data de nascimento, INEP and Filiação 1 as the corrected file writes them (JOÃO → JOAO;
    // ALU0001's CPF, which rule 10 keeps, beside the Receita's).
    expect(await tableRows(page, 'tabela-pessoas')).toEqual(pessoas.map(pessoaRow));
    expect((await tableRows(page, 'tabela-pessoas'))[0]![2]).toBe('52998224725 (não aplicada: Receita 52998224726)');
    expect(await page.locator('#tabela-pessoas th').allTextContents()).toEqual([
      'Código na escola',
      'Linha no txt',
      'CPF',
      'Nome',
      'Data de nascimento',
      'INEP',
      'Filiação 1 (nome da mãe)',
      'O INEP pode recusar (regra 25)',
      'Não aplicadas (e por quê)',
    ]);
    expect(await page.locator('#explica-pessoas').textContent()).toContain(`${pessoas.length} pessoas do .txt têm divergência`);
    const files: UploadFile[] = [
      { field: 'retorno', path: basico.retorno.json, filename: 'retorno.json' },
      { field: 'txt', path: basico.txt, filename: path.basename(basico.txt) },
    ];
    const corrected = await downloaded(page, () => page.getByRole('button', { name: 'Baixar arquivo corrigido (.txt)' }).click());
    expect(corrected.name).toBe('censo-corrigido.txt');
    const direct = await fetch(`${server.url}/api/censo-corrigido`, {
      method: 'POST',
      headers: { 'x-api-key': API_KEY },
      body: await formWith(files),
    });
    expect(corrected.bytes.equals(Buffer.from(await direct.arrayBuffer()))).toBe(true);
    const changed = Number(direct.headers.get('censo-pessoas-corrigidas'));
    const notApplied = Number(direct.headers.get('censo-correcoes-nao-aplicadas'));
    // The table has one person more than the lines changed: said, with the reason.
    expect(pessoas.length - changed).toBe(1);
    expect(await page.locator('#contagens-corrigido').textContent()).toBe(
      `Arquivo corrigido: ${changed} linhas alteradas de ${pessoas.length} pessoas da tabela. Correções não aplicadas: ${notApplied}` +
        ' (divergências que o arquivo não escreve, fora as só de grafia: a tabela marca cada uma com “(não aplicada)” e a coluna ' +
        '“Não aplicadas” diz o motivo). ' +
        '1 pessoa não teve a linha alterada: só divergências que não são corrigidas automaticamente (filiação, Sexo, Cor/Raça) ' +
        'ou que não puderam ser aplicadas. Corrija-as no Educacenso.',
    );
    // One count (SPEC §11): the page said the same before the download, from the persons' answer.
    expect(await page.locator('#explica-nao-aplicadas').textContent()).toMatch(new RegExp(`^${notApplied} correções não aplicadas: `));
    const csv = await downloaded(page, () =>
      page.locator('#resultado-retorno').getByRole('button', { name: 'Baixar CSV (para programas)' }).click(),
    );
    expect(csv.bytes.equals(await routeAnswer('/api/retorno-rf?format=csv', files))).toBe(true);
    await page.screenshot({ path: path.join(SHOTS, 'retorno.png'), fullPage: true });
    await page.context().close();
  });

  it("Consultas: labels from the query file, one pager through the service's pages, back and forward, CSV of everything", async () => {
    const page = await openPage();
    await enterKey(page);
    await page.getByRole('tab', { name: 'Consultas' }).click();
    await expect.poll(() => page.locator('#consulta option').count()).toBeGreaterThan(0);
    expect(await page.locator('#consulta option').first().textContent()).toBe('Histórico de alterações');
    expect(await page.locator('#filtro-user_id').getAttribute('type')).toBe('number');
    expect(await page.locator('#filtro-inicio').getAttribute('type')).toBe('date');
    expect(await page.locator('label[for="filtro-user_id"]').textContent()).toBe('Usuário (número)');
    await page.locator('#filtro-action').fill('update');
    await page.getByRole('button', { name: 'Consultar' }).click();
    await page.locator('#tabela-consulta tbody tr').first().waitFor();
    // 600 'update' rows: one service page (limit 1000), 100 per screen page, one pager.
    expect(await page.locator('#tabela-consulta tbody tr').count()).toBe(100);
    expect(await page.locator('#tabela-consulta .paginas').count()).toBe(1);
    expect(await page.locator('#tabela-consulta .posicao').textContent()).toBe('Página 1 de 6');
    await page.locator('#filtro-action').fill('');
    await page.getByRole('button', { name: 'Consultar' }).click();
    await expect.poll(() => page.locator('#tabela-consulta .posicao').textContent()).toBe('Página 1 de 10+');
    await page.screenshot({ path: path.join(SHOTS, 'consultas.png'), fullPage: true });
    await expectAccessible(page, 'consultas');
    const next = page.locator('#tabela-consulta').getByRole('button', { name: 'Página seguinte' });
    const back = page.locator('#tabela-consulta').getByRole('button', { name: 'Página anterior' });
    for (let i = 1; i < 10; i++) {
      await next.click();
      await expect.poll(() => page.locator('#tabela-consulta .posicao').textContent()).toBe(`Página ${i + 1} de 10+`);
    }
    // Past the service's first page: the pager fetches its next one (next_cursor) and goes on.
    await next.click();
    await expect.poll(() => page.locator('#tabela-consulta .posicao').textContent()).toBe('Página 11 de 12');
    expect((await tableRows(page, 'tabela-consulta'))[0]![0]).toBe('1001');
    expect(await page.locator('#tabela-consulta .resumo').textContent()).toBe('1200 de 1200 linhas');
    await back.click();
    await expect.poll(() => page.locator('#tabela-consulta .posicao').textContent()).toBe('Página 10 de 12');
    expect((await tableRows(page, 'tabela-consulta'))[0]![0]).toBe('901');
    const csv = await downloaded(page, () => page.getByRole('button', { name: 'Exportar tudo (CSV)' }).click());
    const direct = await fetch(`${server.url}/api/query?query=audits&format=csv`, { headers: { 'x-api-key': API_KEY } });
    expect(csv.bytes.equals(Buffer.from(await direct.arrayBuffer()))).toBe(true);
    await page.context().close();
  }, 60_000); // a browser, 1,200 rows and a CSV: 11 s in a quiet CI run, 24-30 s with the machine loaded

  it("shows the service's erro for a bad file, and says to try later on a 504", async () => {
    const page = await openPage();
    await enterKey(page);
    await page
      .getByLabel('Arquivo de retorno (.json ou .xlsx)')
      .first()
      .setInputFiles({ name: 'retorno.json', mimeType: 'application/json', buffer: Buffer.from('[1, 2]') });
    await page.getByRole('button', { name: 'Ver divergências' }).click();
    await expect.poll(() => page.getByRole('alert').textContent()).toBe('Arquivo retorno ilegível: as linhas do JSON devem ser objetos.');
    await page.context().close();

    const slow = await startTestServer({ JOB_TIMEOUT_MS: '1' });
    try {
      const context = await browser.newContext();
      const page2 = await context.newPage();
      await page2.goto(slow.url);
      await enterKey(page2);
      await page2.getByLabel('Arquivo de retorno (.json ou .xlsx)').first().setInputFiles(basico.retorno.json);
      await page2.getByRole('button', { name: 'Ver divergências' }).click();
      await expect
        .poll(() => page2.getByRole('alert').textContent())
        .toBe('Tempo esgotado ao processar o arquivo. Tente novamente mais tarde.');
      await context.close();
    } finally {
      await slow.dispose();
    }
  });

  it(
    '150,000 divergences: the first screen page while the rest loads, only 100 rows in the DOM, paging and sorting all of them',
    async () => {
      const big = path.join(downloads, 'big');
      const generator = '../../bench/gen-big.mjs';
      const { generate } = (await import(generator)) as { generate: (o: object) => Promise<{ divergencias: number }> };
      const summary = await generate({ persons: 100_000, perPerson: 3, out: big, formats: ['xlsx'] });
      const page = await openPage();
      await enterKey(page);
      await page.getByLabel('Arquivo de retorno (.json ou .xlsx)').first().setInputFiles(path.join(big, 'retorno.xlsx'));
      const started = Date.now();
      await page.getByRole('button', { name: 'Ver divergências' }).click();
      await page
        .locator('#tabela-divergencias tbody tr')
        .first()
        .waitFor({ timeout: onThisMachine(90_000) });
      const firstPageMs = Date.now() - started;
      const first = await tableRows(page, 'tabela-divergencias');
      expect(first).toHaveLength(100);
      await expect
        .poll(() => page.locator('#tabela-divergencias .resumo').textContent(), { timeout: onThisMachine(90_000) })
        .toBe(`${summary.divergencias} de ${summary.divergencias} linhas`);
      const allMs = Date.now() - started;
      expect(await page.locator('#tabela-divergencias .posicao').textContent()).toBe(
        `Página 1 de ${Math.ceil(summary.divergencias / 100)}`,
      );
      await page.getByRole('button', { name: 'Página seguinte' }).click();
      await expect.poll(() => page.locator('#tabela-divergencias .posicao').textContent()).toMatch(/^Página 2 de /);
      const second = await tableRows(page, 'tabela-divergencias');
      expect(second).toHaveLength(100);
      expect(second[0]).not.toEqual(first[0]);
      // Sorting runs over every row (in the worker), not only the page on screen.
      const codigo = page.locator('#tabela-divergencias th').filter({ hasText: 'Código na escola' });
      await codigo.getByRole('button').click();
      await codigo.getByRole('button').click();
      await expect.poll(() => codigo.getAttribute('aria-sort'), { timeout: onThisMachine(60_000) }).toBe('descending');
      const top = (await tableRows(page, 'tabela-divergencias'))[0]![0]!;
      expect(
        top >=
          first
            .map((r) => r[0]!)
            .sort()
            .at(-1)!,
      ).toBe(true);
      expect(await page.locator('#tabela-divergencias tbody tr').count()).toBe(100);
      console.log(`page: ${summary.divergencias} divergences, first table page after ${firstPageMs} ms, all rows in after ${allMs} ms`);
      await page.context().close();
    },
    onThisMachine(240_000),
  );

  it('wrote no console errors', () => {
    // The 401, 400 and 504 above are answers the page shows, not script errors; Chromium logs a
    // failed resource load for them, which is the only console output allowed.
    expect(consoleErrors.filter((e) => !/Failed to load resource: the server responded with a status of (401|400|504)/.test(e))).toEqual(
      [],
    );
  });
});
