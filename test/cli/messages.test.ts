// What staff get wrong at the command line, answered with the fix (issue 37, the CLI's last
// mile): an output name that contradicts its format, a binary workbook sent to a terminal, a
// folder or Excel's lock file where a return goes, the two files of retorno-rf swapped, a long
// option with one dash, an option before its command, a base URL ending in /api, a txt from
// another school. Each run is a real `censo` process; exit 2 is wrong usage, exit 1 bad input.
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixtureCases } from '../helpers/fixtures.js';
import { censo, CLI } from './censo-process.js';

const runFile = promisify(execFile);
const basico = fixtureCases().find((c) => c.name === 'basico')!;
const USAGE_HINT = '(use --help para ver as opções)\n';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'censo-messages-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

let serial = 0;
/** An empty folder to run in, so a file a refused command would have created shows up. */
async function emptyFolder(): Promise<string> {
  const folder = path.join(dir, `cwd-${++serial}`);
  await mkdir(folder);
  return folder;
}

/** A command run from an empty folder: it must refuse and leave the folder empty. */
async function refused(args: readonly string[]): Promise<{ code: number | null; stderr: string }> {
  const cwd = await emptyFolder();
  const run = await censo(args, { cwd });
  expect(run.stdout.length).toBe(0);
  expect(await readdir(cwd), 'a refused command wrote a file').toEqual([]);
  return run;
}

describe('the output name never contradicts its format (exit 2, nothing written)', () => {
  it.each([
    [
      ['divergencias', basico.retorno.json, '-o', 'divergencias.xls'],
      'censo: -o "divergencias.xls": o censo não grava .xls (Excel 97-2003); use -o "divergencias.xlsx", que o Excel abre.\n',
    ],
    [
      ['lote', basico.dir, '-o', 'Resultado.XLS'],
      'censo: -o "Resultado.XLS": o censo não grava .xls (Excel 97-2003); use -o "Resultado.xlsx", que o Excel abre.\n',
    ],
    [
      ['divergencias', basico.retorno.json, '--format', 'csv', '-o', 'divergencias.xlsx'],
      'censo: --format csv e -o "divergencias.xlsx" não combinam: use -o "divergencias.csv" ou --format xlsx.\n',
    ],
    [
      ['lote', basico.dir, '-f', 'json', '-o', 'lote.csv'],
      'censo: --format json e -o "lote.csv" não combinam: use -o "lote.json" ou --format csv.\n',
    ],
    [
      ['divergencias', basico.retorno.json, '-o', 'divergencias.txt'],
      'censo: -o "divergencias.txt": .txt não é um formato desta saída; use .json, .csv, .xlsx (por exemplo -o "divergencias.json").\n',
    ],
    [
      ['retorno-rf', basico.retorno.json, basico.txt, '--format', 'csv', '-o', 'pessoas.txt'],
      'censo: -o "pessoas.txt": .txt não é um formato desta saída; use .json, .csv, .xlsx (por exemplo -o "pessoas.csv").\n',
    ],
    [
      ['corrigir', basico.retorno.json, basico.txt, '-o', 'corrigido.csv'],
      'censo: -o "corrigido.csv": o arquivo corrigido é o txt do Censo; use -o "corrigido.txt".\n',
    ],
  ])('%j', async (args, message) => {
    expect(await refused(args)).toMatchObject({ code: 2, stderr: message });
  });

  it('-o - writes to standard output, as without -o, and creates no file named "-"', async () => {
    const cwd = await emptyFolder();
    const direct = await censo(['divergencias', basico.retorno.json, '--format', 'csv'], { cwd });
    const dash = await censo(['divergencias', basico.retorno.json, '--format', 'csv', '-o', '-'], { cwd });
    expect(dash).toMatchObject({ code: 0, stderr: '' });
    expect(dash.stdout.equals(direct.stdout)).toBe(true);
    expect(dash.stdout.toString()).toMatch(/^codigo_na_escola,/);
    const corrigido = await censo(['corrigir', basico.retorno.json, basico.txt, '-o', '-'], { cwd });
    expect(corrigido.code).toBe(0);
    expect(corrigido.stdout.subarray(0, 3).toString()).toBe('00|');
    expect(await readdir(cwd)).toEqual([]);
  });

  it('a workbook never goes to a terminal: refused with what to do; through a pipe it is written', async () => {
    const cwd = await emptyFolder();
    // `script` gives the command a terminal as stdout; -e makes its exit status the command's.
    const onTerminal = (args: string) =>
      runFile('script', ['-qefc', `${process.execPath} ${CLI} ${args}`, '/dev/null'], { cwd, encoding: 'utf8' }).then(
        () => ({ code: 0, stdout: '' }),
        (err: { code: number; stdout: string }) => err,
      );
    for (const args of [`divergencias ${basico.retorno.json} --format xlsx`, `lote ${basico.dir} -o - --format xlsx`]) {
      const run = await onTerminal(args);
      expect(run.code, args).toBe(2);
      expect(run.stdout).toBe(
        'censo: uma planilha .xlsx não se mostra no terminal: grave-a com -o arquivo.xlsx (ou redirecione: > arquivo.xlsx).\r\n',
      );
    }
    const piped = await censo(['divergencias', basico.retorno.json, '--format', 'xlsx'], { cwd });
    expect(piped.code).toBe(0);
    expect(piped.stdout.subarray(0, 2).toString()).toBe('PK');
    expect(await readdir(cwd)).toEqual([]);
  });
});

describe('messages that point to the fix', () => {
  it('a folder given to divergencias: use censo lote (exit 1)', async () => {
    const run = await refused(['divergencias', basico.dir]);
    expect(run).toMatchObject({
      code: 1,
      stderr: `censo: "${basico.dir}" é uma pasta, não um arquivo: para os retornos de uma pasta use censo lote "${basico.dir}".\n`,
    });
  });

  it("Excel's lock file named instead of the workbook (exit 1)", async () => {
    const lock = path.join(dir, '~$retorno.xlsx');
    await writeFile(lock, Buffer.from([0x0b, 0x41, 0x6e, 0x61, 0x20, 0x4c, 0x69, 0x6d, 0x61]));
    const run = await refused(['divergencias', lock]);
    expect(run).toMatchObject({
      code: 1,
      stderr: `censo: "${lock}" é o arquivo que o Excel cria enquanto a planilha está aberta, não um retorno: use a planilha em si (o nome sem "~$").\n`,
    });
  });

  it('retorno-rf and corrigir with the txt first: the arguments are swapped, said with the right order (exit 2)', async () => {
    const rf = await refused(['retorno-rf', basico.txt, basico.retorno.json]);
    expect(rf).toMatchObject({
      code: 2,
      stderr: `censo: os arquivos estão trocados: primeiro o retorno, depois o txt (censo retorno-rf "${basico.retorno.json}" "${basico.txt}").\n`,
    });
    const corrigir = await refused(['corrigir', basico.txt, basico.retorno.xlsx, '-o', 'corrigido.txt']);
    expect(corrigir).toMatchObject({
      code: 2,
      stderr: `censo: os arquivos estão trocados: primeiro o retorno, depois o txt (censo corrigir "${basico.retorno.xlsx}" "${basico.txt}" -o "corrigido.txt").\n`,
    });
  });

  it('a long option with one dash: said, not read as -f ormat or -o utput (exit 2, no file "utput")', async () => {
    expect(await refused(['divergencias', basico.retorno.json, '-format', 'csv'])).toMatchObject({
      code: 2,
      stderr: 'censo: "-format" tem um hífen só: use --format.\n',
    });
    expect(await refused(['divergencias', basico.retorno.json, '-output', 'saida.csv'])).toMatchObject({
      code: 2,
      stderr: 'censo: "-output" tem um hífen só: use --output.\n',
    });
    expect(await refused(['lote', basico.dir, '-servidor=http://127.0.0.1:1'])).toMatchObject({
      code: 2,
      stderr: 'censo: "-servidor=http://127.0.0.1:1" tem um hífen só: use --servidor=http://127.0.0.1:1.\n',
    });
  });

  it('an option before its command: which command it belongs to and where it goes (exit 2)', async () => {
    expect(await refused(['-o', 'x.csv', 'divergencias', basico.retorno.json])).toMatchObject({
      code: 2,
      stderr: `censo: a opção "-o" é do comando divergencias e vem depois dele: censo divergencias … -o <arquivo>.\n${USAGE_HINT}`,
    });
    expect(await refused(['--servidor', 'http://127.0.0.1:1', 'lote', basico.dir])).toMatchObject({
      code: 2,
      stderr: `censo: a opção "--servidor" é do comando lote e vem depois dele: censo lote … --servidor <url>.\n${USAGE_HINT}`,
    });
  });

  it('--servidor ending in /api: the service address without it (exit 2, before any request)', async () => {
    for (const url of ['http://127.0.0.1:1/api', 'https://censo.seduc.example/API/']) {
      const base = url.replace(/\/api\/?$/i, '');
      expect(await refused(['lote', basico.dir, '--servidor', url, '--chave', 'k'])).toMatchObject({
        code: 2,
        stderr: `censo: --servidor é o endereço do serviço, sem /api no fim: use "${base}".\n`,
      });
      expect(await refused(['lotes', '--servidor', url, '--chave', 'k'])).toMatchObject({ code: 2 });
    }
  });

  it("a txt from another school: the service's 422 message, and what to check (exit 1)", async () => {
    // The same layout with other students' codes: what another school's migration file looks like.
    const other = path.join(dir, 'outra-escola.txt');
    await writeFile(other, Buffer.from((await readFile(basico.txt)).toString('latin1').replaceAll('|ALU', '|OUT'), 'latin1'));
    const run = await refused(['retorno-rf', basico.retorno.json, other]);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/^censo: O arquivo txt não corresponde ao retorno \(linha \d+\)\. /);
    expect(run.stderr).toMatch(
      new RegExp(
        ` Confira se "${other.replace(/[.$]/g, '\\$&')}" é o arquivo de migração da mesma escola, o mesmo enviado ao Censo que gerou este retorno\\.\\n$`,
      ),
    );
  });
});
