// `censo lote` as a secretariat's IT staff run it on a share of school folders: one bad
// file, folder or name never loses the batch or forges a message; -o is never a stack trace and
// never an input destroyed; the output's format follows -o; a summary ends the run. Every run
// gets its own TMPDIR, checked empty afterwards (the batch's work folder must never stay behind).
import { chmod, cp, mkdir, mkdtemp, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import ExcelJS from 'exceljs';
import { csvLine, LOTE_ARQUIVO_PLANILHA, LOTE_XLSX_COLUMNS } from '@censo/shared';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseCsv } from '../helpers/csv.js';
import { fixtureCases, repeatedReturn } from '../helpers/fixtures.js';
import { execFile } from 'node:child_process';
import { censo, CLI, handOver, type Run } from './censo-process.js';
import { onThisMachine } from '../helpers/deadline.js';

const basico = fixtureCases().find((c) => c.name === 'basico')!;
const utf8 = fixtureCases().find((c) => c.name === 'basico-utf8')!;
const runFile = promisify(execFile);
const HEADER = 'arquivo,codigo_na_escola,linha,campo,enviado,correto,is_filiacao,chave,correcao\r\n';

let dir: string;
/** Modes to give back before removing `dir` (a 000 folder cannot be emptied by its owner). */
const locked: string[] = [];
beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'censo-lote-test-'));
});
afterAll(async () => {
  for (const file of locked) await chmod(file, 0o755);
  await rm(dir, { recursive: true, force: true });
});

let serial = 0;
/** A fresh folder under `dir` holding `files` (name → a fixture path to copy, or the content itself). */
async function folderWith(files: Record<string, string | { readonly text: string }>): Promise<string> {
  const folder = path.join(dir, `caso-${++serial}`, 'retornos');
  await mkdir(folder, { recursive: true });
  for (const [name, source] of Object.entries(files)) {
    const file = path.join(folder, name);
    await mkdir(path.dirname(file), { recursive: true });
    if (typeof source === 'string') await cp(source, file);
    else await writeFile(file, source.text);
  }
  return folder;
}

async function lock(file: string): Promise<void> {
  await chmod(file, 0o000);
  locked.push(file);
}

/** `censo lote` with its own TMPDIR, run as a user chmod 000 applies to; asserts TMPDIR is left empty. */
async function lote(args: readonly string[], options: { cwd?: string } = {}): Promise<Run> {
  const tmp = await mkdtemp(path.join(dir, 'tmp-'));
  await handOver(path.dirname(tmp));
  const run = await censo(['lote', ...args], { env: { TMPDIR: tmp }, unprivileged: true, ...options });
  expect(await readdir(tmp), 'temporary files left behind').toEqual([]);
  expect(run.signal).toBeNull();
  return run;
}

const cache = new Map<string, string[]>();
/** The CSV rows (no header) `censo divergencias` gives for one return: what lote writes for it. */
async function rowsOf(file: string): Promise<string[]> {
  if (!cache.has(file)) {
    const run = await censo(['divergencias', file, '--format', 'csv']);
    expect(run.code).toBe(0);
    cache.set(file, run.stdout.toString('utf8').split('\r\n').slice(1, -1));
  }
  return cache.get(file)!;
}

/** The lote CSV for these files, in this order: header, then each file's rows with its name first. */
async function expectedCsv(files: readonly (readonly [name: string, source: string])[]): Promise<{ csv: string; rows: number }> {
  let csv = HEADER;
  let rows = 0;
  for (const [name, source] of files) {
    for (const line of await rowsOf(source)) {
      csv += `${csvLine([name]).slice(0, -2)},${line}\r\n`;
      rows++;
    }
  }
  return { csv, rows };
}

describe('one bad entry never loses the batch', () => {
  it('an unreadable return: one Portuguese line, every other file written, exit 1, nothing left in TMPDIR (5 runs: it crashed at random)', async () => {
    const good = [
      ...[1, 2, 3, 4, 5, 6].map((n) => [`escola-${n}.json`, basico.retorno.json] as const),
      ['escola-7.xlsx', utf8.retorno.xlsx] as const,
    ];
    // Sorted last, so it fails long before the in-order writer reaches it.
    const folder = await folderWith({ ...Object.fromEntries(good), 'z-sem-permissao.json': basico.retorno.json });
    await handOver(path.dirname(folder));
    await lock(path.join(folder, 'z-sem-permissao.json'));
    const expected = await expectedCsv(good);
    const out = path.join(path.dirname(folder), 'divergencias.csv');
    for (let attempt = 1; attempt <= 5; attempt++) {
      const run = await lote([folder, '-o', out]);
      expect(run.stderr, `attempt ${attempt}`).toBe(
        'censo: "z-sem-permissao.json": Não foi possível ler o arquivo: sem permissão.\n' +
          `Retornos: 8 (7 lidos, 1 com falha); ignorados: 0; divergências gravadas: ${expected.rows}.\n` +
          'Com falha: "z-sem-permissao.json".\n',
      );
      expect(run.code).toBe(1);
      expect(await readFile(out, 'utf8')).toBe(expected.csv);
    }
  });

  it('several files per thread task: a bad file inside a batch, even one failing after much of its text was written, costs only itself', async () => {
    const many = (copies: number) => repeatedReturn(basico.retorno.json, copies);
    // Thousands of divergences, then a cut: it fails after its first pieces reached the batch's file.
    const broken = `${many(400).slice(0, -1)},{"Registro":`;
    const folder = await folderWith({
      'a.json': basico.retorno.json,
      'b-cortado.json': { text: broken },
      'c.xlsx': utf8.retorno.xlsx,
      'd-sem-permissao.json': basico.retorno.json,
      'e.json': basico.retorno.json,
      'f-quebrado.json': { text: '{ nada' },
      'g.xlsx': utf8.retorno.xlsx,
      // Large enough that the small files above share one task (batches are sized from the total).
      'z-grande.json': { text: many(5000) },
    });
    await handOver(path.dirname(folder));
    await lock(path.join(folder, 'd-sem-permissao.json'));
    const good = (['a.json', 'c.xlsx', 'e.json', 'g.xlsx', 'z-grande.json'] as const).map(
      (name) => [name, path.join(folder, name)] as const,
    );
    const expected = await expectedCsv(good);
    const run = await lote([folder, '--format', 'csv', '--concurrency', '1']);
    const lines = run.stderr.split('\n');
    expect(lines[0]).toMatch(/^censo: "b-cortado\.json": Arquivo retorno ilegível: /);
    expect(lines.slice(1)).toEqual([
      'censo: "d-sem-permissao.json": Não foi possível ler o arquivo: sem permissão.',
      'censo: "f-quebrado.json": Arquivo retorno ilegível: não é um JSON válido.',
      `Retornos: 8 (5 lidos, 3 com falha); ignorados: 0; divergências gravadas: ${expected.rows}.`,
      'Com falha: "b-cortado.json", "d-sem-permissao.json", "f-quebrado.json".',
      '',
    ]);
    expect(run.code).toBe(1);
    expect(run.stdout.toString('utf8')).toBe(expected.csv);
  });

  it('an unreadable subfolder: one line, the rest of the tree still read', async () => {
    const folder = await folderWith({
      'escola-a.json': basico.retorno.json,
      'bloqueada/escola-b.json': basico.retorno.json,
      'rede/escola-c.xlsx': utf8.retorno.xlsx,
    });
    await handOver(path.dirname(folder));
    await lock(path.join(folder, 'bloqueada'));
    const expected = await expectedCsv([
      ['escola-a.json', basico.retorno.json],
      ['rede/escola-c.xlsx', utf8.retorno.xlsx],
    ]);
    const run = await lote([folder, '--format', 'csv']);
    expect(run.stderr).toBe(
      'censo: "bloqueada": Não foi possível ler a pasta: sem permissão.\n' +
        `Retornos: 2 (2 lidos, 0 com falha); pastas sem leitura: 1; ignorados: 0; divergências gravadas: ${expected.rows}.\n` +
        'Com falha: "bloqueada" (pasta).\n',
    );
    expect(run.code).toBe(1);
    expect(run.stdout.toString('utf8')).toBe(expected.csv);
  });

  it('a file name that looks like a formula becomes a text cell in the CSV (SPEC §3.5)', async () => {
    const folder = await folderWith({ '=HYPERLINK("http:x";"y").json': basico.retorno.json, '@escola.json': basico.retorno.json });
    const run = await lote([folder, '--format', 'csv']);
    expect(run.code).toBe(0);
    const names = parseCsv(run.stdout.toString('utf8'))
      .slice(1)
      .map((row) => row[0]);
    expect(new Set(names)).toEqual(new Set([`'=HYPERLINK("http:x";"y").json`, `'@escola.json`]));
  });

  it('a name with a line break or an escape is quoted: it cannot forge a stderr line or drive the terminal', async () => {
    const folder = await folderWith({
      'a\ncenso: "b.json": Arquivo conferido.json': { text: '{ nada' },
      '\u001b[2Jlimpa.json': { text: '{ nada' },
      'escola.json': basico.retorno.json,
    });
    const run = await lote([folder, '--format', 'csv']);
    expect(run.stderr).toBe(
      'censo: "\\u001b[2Jlimpa.json": Arquivo retorno ilegível: não é um JSON válido.\n' +
        'censo: "a\\ncenso: \\"b.json\\": Arquivo conferido.json": Arquivo retorno ilegível: não é um JSON válido.\n' +
        `Retornos: 3 (1 lidos, 2 com falha); ignorados: 0; divergências gravadas: ${(await rowsOf(basico.retorno.json)).length}.\n` +
        'Com falha: "\\u001b[2Jlimpa.json", "a\\ncenso: \\"b.json\\": Arquivo conferido.json".\n',
    );
    expect(run.code).toBe(1);
  });

  it('links are followed (a return, a school folder on a share), a broken one is reported, a loop adds nothing', async () => {
    const share = await folderWith({ 'escola-b.xlsx': utf8.retorno.xlsx, 'solto.json': basico.retorno.json });
    const folder = await folderWith({ 'escola-a.json': basico.retorno.json });
    await symlink(share, path.join(folder, 'compartilhada'));
    await symlink(path.join(share, 'solto.json'), path.join(folder, 'ligado.json'));
    await symlink(path.join(folder, 'nao-existe.json'), path.join(folder, 'quebrado.json'));
    await symlink('.', path.join(folder, 'volta'));
    const expected = await expectedCsv([
      ['compartilhada/escola-b.xlsx', utf8.retorno.xlsx],
      ['compartilhada/solto.json', basico.retorno.json],
      ['escola-a.json', basico.retorno.json],
      ['ligado.json', basico.retorno.json],
    ]);
    const run = await lote([folder, '-o', path.join(path.dirname(folder), 'saida.csv')]);
    expect(run.stderr).toBe(
      'censo: "quebrado.json": Não foi possível ler o arquivo: link simbólico para um arquivo que não existe.\n' +
        `Retornos: 5 (4 lidos, 1 com falha); ignorados: 0; divergências gravadas: ${expected.rows}.\n` +
        'Com falha: "quebrado.json".\n',
    );
    expect(run.code).toBe(1);
    expect(await readFile(path.join(path.dirname(folder), 'saida.csv'), 'utf8')).toBe(expected.csv);
  });
});

describe('on a terminal', () => {
  it('failure lines stay above the progress bar: nothing moves the cursor back over them, the summary comes last', async () => {
    const folder = await folderWith({
      'a-quebrado.json': { text: '{ nada' },
      ...Object.fromEntries([1, 2, 3, 4].map((n) => [`escola-${n}.json`, basico.retorno.json])),
    });
    const out = path.join(path.dirname(folder), 'saida.csv');
    const tmp = await mkdtemp(path.join(dir, 'tmp-'));
    // `script` gives the command a terminal and copies what it writes there.
    const command = `TMPDIR=${tmp} ${process.execPath} ${CLI} lote ${folder} -o ${out}`;
    const tty = await runFile('script', ['-qfec', command, '/dev/null'], { encoding: 'utf8', timeout: onThisMachine(60_000) }).catch(
      (err: { stdout: string }) => err,
    );
    const failure = tty.stdout.indexOf('censo: "a-quebrado.json": Arquivo retorno ilegível: não é um JSON válido.');
    expect(failure).toBeGreaterThan(-1);
    // ESC 8 restores a cursor position saved before the line was written (the old bar's stop).
    expect(tty.stdout.slice(failure)).not.toContain('\u001b8');
    expect(tty.stdout.slice(failure)).toMatch(
      /Arquivos .* 5\/5 .*\r?\n.*Retornos: 5 \(4 lidos, 1 com falha\); ignorados: 0; divergências gravadas: 36\.\r?\nCom falha: "a-quebrado\.json"\.\r?\n$/s,
    );
    expect(await readdir(tmp)).toEqual([]);
  });
});

describe('-o', () => {
  it.each([
    ['an existing folder', (base: string) => base, () => 'é uma pasta'],
    [
      'a missing folder',
      (base: string, format: string) => path.join(base, 'nao-existe', `divergencias.${format}`),
      (base: string) => `a pasta "${path.join(base, 'nao-existe')}" não existe`,
    ],
    [
      'a folder without write permission',
      (base: string, format: string) => path.join(base, 'so-leitura', `divergencias.${format}`),
      (base: string) => `sem permissão para gravar na pasta "${path.join(base, 'so-leitura')}"`,
    ],
    [
      'a file without write permission',
      (base: string, format: string) => path.join(base, `protegido.${format}`),
      () => 'sem permissão para alterar este arquivo',
    ],
    ['a full disk', () => '/dev/full', () => 'disco cheio'],
  ])('to %s: one Portuguese line that says where the fix goes, exit 1, no stack trace', async (_, target, reason) => {
    const folder = await folderWith({ 'escola-a.json': basico.retorno.json, 'escola-b.xlsx': utf8.retorno.xlsx });
    const base = path.dirname(folder);
    await mkdir(path.join(base, 'so-leitura'));
    for (const format of ['csv', 'xlsx']) await writeFile(path.join(base, `protegido.${format}`), 'de outra pessoa');
    await handOver(base);
    await chmod(path.join(base, 'so-leitura'), 0o555);
    for (const format of ['csv', 'xlsx']) await chmod(path.join(base, `protegido.${format}`), 0o444);
    for (const format of ['csv', 'xlsx']) {
      const output = target(base, format);
      const run = await lote([folder, '-o', output, '--format', format]);
      expect(run.stderr, format).toBe(`censo: Não foi possível gravar em "${output}": ${reason(base)}.\n`);
      expect(run.code).toBe(1);
      expect(run.stdout.length).toBe(0);
    }
  });

  it('naming one of the returns (by any path) is refused before anything is read or written: exit 2, the file intact', async () => {
    const folder = await folderWith({ 'escola-a.json': basico.retorno.json, 'rede/escola-b.xlsx': utf8.retorno.xlsx });
    const link = path.join(path.dirname(folder), 'atalho.xlsx');
    await symlink(path.join(folder, 'rede', 'escola-b.xlsx'), link);
    const before = await readFile(utf8.retorno.xlsx);
    for (const [output, name] of [
      [path.join(folder, 'escola-a.json'), 'escola-a.json'],
      [`${folder}/rede/../rede/escola-b.xlsx`, 'rede/escola-b.xlsx'],
      [link, 'rede/escola-b.xlsx'],
    ] as const) {
      const run = await lote([folder, '-o', output]);
      expect(run.stderr).toBe(`censo: -o "${output}" é o retorno "${name}" da pasta: escolha outro arquivo de saída.\n`);
      expect(run.code).toBe(2);
    }
    expect(await readFile(path.join(folder, 'escola-a.json'))).toEqual(await readFile(basico.retorno.json));
    expect(await readFile(path.join(folder, 'rede', 'escola-b.xlsx'))).toEqual(before);
  });
});

describe('as IT staff run it', () => {
  let folder: string;
  let expected: { csv: string; rows: number };
  beforeAll(async () => {
    folder = await folderWith({
      'escola-a/retorno.json': basico.retorno.json,
      'escola-b/Retorno.XLSX': utf8.retorno.xlsx,
      // Excel's lock file while escola-b's workbook is open, LibreOffice's, macOS's resource
      // fork and a hidden folder: none is a return, none is a failure.
      'escola-b/~$Retorno.XLSX': { text: 'bloqueio do Excel' },
      'escola-b/.~lock.Retorno.XLSX#': { text: 'bloqueio do LibreOffice' },
      'escola-a/._retorno.json': { text: '\u0000\u0005\u0016\u0007' },
      '.lixeira/antigo.json': { text: '{ nada' },
    });
    expected = await expectedCsv([
      ['escola-a/retorno.json', basico.retorno.json],
      ['escola-b/Retorno.XLSX', utf8.retorno.xlsx],
    ]);
  });
  const summary = () => `Retornos: 2 (2 lidos, 0 com falha); ignorados: 0; divergências gravadas: ${expected.rows}.\n`;

  it('`censo lote retornos -o divergencias.csv` writes CSV (the format from -o); lock and hidden files are skipped; a summary ends the run', async () => {
    const cwd = path.dirname(folder);
    await handOver(cwd);
    const run = await lote(['retornos', '-o', 'divergencias.csv'], { cwd });
    expect(run.stderr).toBe(summary());
    expect(run.code).toBe(0);
    expect(await readFile(path.join(cwd, 'divergencias.csv'), 'utf8')).toBe(expected.csv);
  });

  it('-o divergencias.json writes JSON; a --format that contradicts the extension is refused and the file left as it was', async () => {
    const json = path.join(path.dirname(folder), 'divergencias.json');
    expect((await lote([folder, '-o', json])).code).toBe(0);
    const written = await readFile(json, 'utf8');
    const body = JSON.parse(written) as { divergencias: Record<string, unknown>[] };
    expect(body.divergencias).toHaveLength(expected.rows);
    expect(body.divergencias[0]).toMatchObject({ arquivo: 'escola-a/retorno.json' });
    const contradicted = await lote([folder, '-o', json, '--format', 'csv']);
    expect(contradicted.stderr).toBe(
      `censo: --format csv e -o "${json}" não combinam: use -o "${json.slice(0, -4)}csv" ou --format json.\n`,
    );
    expect(contradicted.code).toBe(2);
    expect(await readFile(json, 'utf8')).toBe(written);
  });

  it('-o DIVERGENCIAS.XLSX writes a workbook for people: sheet divergencias, the file then the divergence in words, every cell text', async () => {
    const xlsx = path.join(path.dirname(folder), 'DIVERGENCIAS.XLSX');
    const run = await lote([folder, '-o', xlsx]);
    expect(run.code).toBe(0);
    const workbook = new ExcelJS.Workbook();
    await workbook.xlsx.load((await readFile(xlsx)) as unknown as ExcelJS.Buffer);
    // Then the files read (issue 50), on a sheet of their own.
    expect(workbook.worksheets.map((s) => s.name)).toEqual(['divergencias', 'arquivos']);
    const rows: string[][] = [];
    workbook.worksheets[0]!.eachRow({ includeEmpty: true }, (row) => {
      const cells = Array.from({ length: LOTE_XLSX_COLUMNS.length }, (_, i) => row.getCell(i + 1).value);
      for (const value of cells) if (value !== null) expect(typeof value).toBe('string');
      rows.push(cells.map((value) => (value === null ? '' : String(value))));
    });
    // What `censo divergencias` answers for each return, its file first, in the workbook's words.
    const expectedRows = [LOTE_XLSX_COLUMNS];
    for (const [name, source] of [
      ['escola-a/retorno.json', basico.retorno.json],
      ['escola-b/Retorno.XLSX', utf8.retorno.xlsx],
    ]) {
      const { divergencias } = JSON.parse((await censo(['divergencias', source!])).stdout.toString()) as { divergencias: object[] };
      for (const d of divergencias) expectedRows.push(LOTE_ARQUIVO_PLANILHA.cells({ arquivo: name, ...d }));
    }
    expect(rows).toEqual(expectedRows);
    expect(rows[0]![0]).toBe('Arquivo');
  });

  it('--quiet leaves only the failures on stderr', async () => {
    const broken = await folderWith({ 'escola.json': basico.retorno.json, 'quebrado.json': { text: '{ nada' } });
    const run = await lote(['--quiet', broken]);
    expect(run.stderr).toBe('censo: "quebrado.json": Arquivo retorno ilegível: não é um JSON válido.\n');
    expect(run.code).toBe(1);
  });

  it('--concurrency above twice the CPUs is lowered to that, with a notice; the batch runs', async () => {
    const cap = os.availableParallelism() * 2;
    const run = await lote([folder, '--concurrency', '1000', '--format', 'csv']);
    expect(run.stderr).toBe(`censo: --concurrency 1000 reduzido para ${cap} (o dobro das CPUs desta máquina).\n${summary()}`);
    expect(run.code).toBe(0);
    expect(run.stdout.toString('utf8')).toBe(expected.csv);
  });

  it('a file given instead of a folder says so (not "Pasta não encontrada")', async () => {
    const file = path.join(folder, 'escola-a', 'retorno.json');
    const run = await lote([file]);
    expect(run.stderr).toBe(
      `censo: "${file}" é um arquivo, não uma pasta: lote lê uma pasta; para um só retorno use censo divergencias.\n`,
    );
    expect(run.code).toBe(1);
    expect(run.stdout.length).toBe(0);
  });
});

describe('what the batch did not read is said, and a folder without returns is an error', () => {
  const XLS_NOTE = 'Excel 97-2003: abra no Excel e salve como .xlsx';
  const OWN = 'resultado anterior do censo lote';

  it('files that are not returns are named in the summary, with what to do; earlier results in the folder are passed over, not failed', async () => {
    const folder = await folderWith({
      'escola-a.json': basico.retorno.json,
      'escola-b.xlsx': utf8.retorno.xlsx,
      'leia-me.txt': { text: 'não é um retorno' },
      'antigo.xls': { text: 'ÐÏ\u0011à¡±\u001aá' },
      'retornos.zip': { text: 'PK\u0005\u0006' },
      'relatorio.pdf': { text: '%PDF-1.4' },
    });
    await handOver(path.dirname(folder));
    const expected = await expectedCsv([
      ['escola-a.json', basico.retorno.json],
      ['escola-b.xlsx', utf8.retorno.xlsx],
    ]);
    const notReturns =
      '"antigo.xls" (Excel 97-2003: abra no Excel e salve como .xlsx), "leia-me.txt", "relatorio.pdf", ' +
      '"retornos.zip" (compactado: extraia os retornos na pasta)';
    // -o inside the folder: the first run's result is there for the second run to find.
    const inside = path.join(folder, 'divergencias.xlsx');
    const first = await lote([folder, '-o', inside]);
    expect(first.stderr).toBe(
      `Retornos: 2 (2 lidos, 0 com falha); ignorados: 4; divergências gravadas: ${expected.rows}.\nIgnorados: ${notReturns}.\n`,
    );
    expect(first.code).toBe(0);
    // The same command again: its own earlier result is set apart (and replaced), not refused as a return.
    const second = await lote([folder, '-o', inside]);
    expect(second.stderr).toBe(
      `Retornos: 2 (2 lidos, 0 com falha); ignorados: 5; divergências gravadas: ${expected.rows}.\n` +
        `Ignorados: "antigo.xls" (${XLS_NOTE}), "divergencias.xlsx" (${OWN}), "leia-me.txt", "relatorio.pdf", "retornos.zip" (compactado: extraia os retornos na pasta).\n`,
    );
    expect(second.code).toBe(0);

    // Earlier results under other names: a JSON, a CSV, and the workbook as Excel saves it again (shared strings).
    await writeFile(path.join(folder, 'divergencias-marco.json'), (await lote([folder, '--format', 'json'])).stdout);
    await writeFile(path.join(folder, 'saida.csv'), expected.csv);
    const workbook = new ExcelJS.Workbook();
    await workbook.xlsx.load((await readFile(inside)) as unknown as ExcelJS.Buffer);
    await workbook.xlsx.writeFile(path.join(folder, 'revisado.xlsx'), { useSharedStrings: true });
    await handOver(path.dirname(folder));
    const third = await lote([folder, '--format', 'csv']);
    expect(third.stderr).toBe(
      `Retornos: 2 (2 lidos, 0 com falha); ignorados: 8; divergências gravadas: ${expected.rows}.\n` +
        `Ignorados: "antigo.xls" (${XLS_NOTE}), "divergencias-marco.json" (${OWN}), "divergencias.xlsx" (${OWN}), "leia-me.txt", ` +
        `"relatorio.pdf", "retornos.zip" (compactado: extraia os retornos na pasta), "revisado.xlsx" (${OWN}), "saida.csv" (${OWN}).\n`,
    );
    expect(third.code).toBe(0);
    expect(third.stdout.toString('utf8')).toBe(expected.csv);
  });

  it('an empty folder, or one with no return: exit 1, one sentence naming what is there, no -o created', async () => {
    const empty = await folderWith({});
    const nothing = await folderWith({ 'antigo.xls': { text: 'xls' }, 'leia-me.txt': { text: 'texto' } });
    await handOver(path.dirname(empty));
    await handOver(path.dirname(nothing));
    for (const [folder, said] of [
      [empty, ''],
      [nothing, ` Ignorados: "antigo.xls" (${XLS_NOTE}), "leia-me.txt".`],
    ] as const) {
      const out = path.join(path.dirname(folder), 'divergencias.csv');
      const run = await lote([folder, '-o', out]);
      expect(run.stderr).toBe(`censo: Nenhum retorno (.json ou .xlsx) em "${folder}".${said}\n`);
      expect(run.code).toBe(1);
      await expect(readFile(out), 'an -o created for nothing').rejects.toThrow(/ENOENT/);
    }
  });

  it('a folder whose only .json is an earlier result: nothing read, exit 1', async () => {
    const folder = await folderWith({ 'divergencias.json': { text: '{"divergencias":[]}\n' } });
    const run = await lote([folder]);
    expect(run.stderr).toBe(
      `Retornos: 0 (0 lidos, 0 com falha); ignorados: 1; divergências gravadas: 0.\n` +
        `Ignorados: "divergencias.json" (${OWN}).\ncenso: Nenhum retorno (.json ou .xlsx) em "${folder}".\n`,
    );
    expect(run.code).toBe(1);
  });
});

describe('single files: the same Portuguese refusals', () => {
  it('an unreadable return, and -o to a folder', async () => {
    const folder = await folderWith({ 'sem-permissao.json': basico.retorno.json });
    await handOver(path.dirname(folder));
    const file = path.join(folder, 'sem-permissao.json');
    await lock(file);
    const unreadable = await censo(['divergencias', file], { unprivileged: true });
    expect(unreadable.stderr).toBe(`censo: Não foi possível ler "${file}": sem permissão.\n`);
    expect(unreadable.code).toBe(1);
    const toFolder = await censo(['divergencias', basico.retorno.json, '-o', folder]);
    expect(toFolder.stderr).toBe(`censo: Não foi possível gravar em "${folder}": é uma pasta.\n`);
    expect(toFolder.code).toBe(1);
  });

  it('-o divergencias.csv without --format writes CSV, as in lote', async () => {
    const out = path.join(dir, 'uma.csv');
    expect((await censo(['divergencias', basico.retorno.json, '-o', out])).code).toBe(0);
    expect((await readFile(out, 'utf8')).split('\r\n').slice(1, -1)).toEqual(await rowsOf(basico.retorno.json));
  });
});
