// `censo` (SPEC §6): every command on the fixtures gives what the API answers for the same files
// (byte for byte), exit codes 0/1/2, stdout carries data only, progress only on a terminal.
import { execFile } from 'node:child_process';
import { cp, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixtureCases, repeatedReturn } from '../helpers/fixtures.js';
import { API_KEY, formWith, startTestServer, type TestServer, type UploadFile } from '../helpers/http.js';
import { censo, CLI, ROOT } from './censo-process.js';

const runFile = promisify(execFile);
const basico = fixtureCases().find((c) => c.name === 'basico')!;
const utf8 = fixtureCases().find((c) => c.name === 'basico-utf8')!;

let server: TestServer;
let dir: string;
beforeAll(async () => {
  server = await startTestServer();
  dir = await mkdtemp(path.join(os.tmpdir(), 'censo-cli-'));
});
afterAll(async () => {
  await server.dispose();
  await rm(dir, { recursive: true, force: true });
});

async function api(route: string, files: UploadFile[]): Promise<Buffer> {
  const response = await fetch(`${server.url}${route}`, { method: 'POST', headers: { 'x-api-key': API_KEY }, body: await formWith(files) });
  expect(response.status).toBe(200);
  return Buffer.from(await response.arrayBuffer());
}

const retorno = (c = basico, format: 'json' | 'xlsx' = 'json'): UploadFile => ({
  field: 'retorno',
  path: c.retorno[format],
  filename: `retorno.${format}`,
});
const txt = (c = basico): UploadFile => ({ field: 'txt', path: c.txt, filename: path.basename(c.txt) });

describe('the same answers as the API', () => {
  it.each(['json', 'csv'] as const)('divergencias --format %s, on stdout', async (format) => {
    for (const [c, kind] of [
      [basico, 'json'],
      [utf8, 'xlsx'],
    ] as const) {
      const run = await censo(['divergencias', c.retorno[kind], '--format', format]);
      expect(run.code).toBe(0);
      expect(run.stderr).toBe('');
      expect(run.stdout.equals(await api(`/api/divergencias-rf?format=${format}`, [retorno(c, kind)]))).toBe(true);
    }
  });

  it('divergencias --format xlsx -o: a workbook with the same rows as the CSV answer', async () => {
    const out = path.join(dir, 'divergencias.xlsx');
    const run = await censo(['divergencias', basico.retorno.xlsx, '--format', 'xlsx', '-o', out]);
    expect(run.code).toBe(0);
    expect(run.stdout.length).toBe(0);
    expect((await readFile(out)).subarray(0, 2).toString()).toBe('PK');
  });

  it.each(['json', 'csv'] as const)('retorno-rf --format %s', async (format) => {
    const run = await censo(['retorno-rf', utf8.retorno.json, utf8.txt, '--format', format]);
    expect(run.code).toBe(0);
    expect(run.stdout.equals(await api(`/api/retorno-rf?format=${format}`, [retorno(utf8), txt(utf8)]))).toBe(true);
  });

  it('corrigir -o: the corrected census file byte for byte, and the two counts on stderr', async () => {
    for (const c of [basico, utf8]) {
      const out = path.join(dir, `${c.name}-corrigido.txt`);
      const run = await censo(['corrigir', c.retorno.json, c.txt, '-o', out]);
      expect(run.code).toBe(0);
      expect(run.stdout.length).toBe(0);
      // ALU0001's CPF was sent: Educacenso does not change it by migration (field 5 rule 10, SPEC §11);
      // ALU0003's father and sex have no field the file writes.
      expect(run.stderr).toBe(
        'Pessoas corrigidas: 3 (linhas de pessoas que o arquivo corrigido altera)\n' +
          'Correções não aplicadas: 3 (divergências destas pessoas que o arquivo corrigido não escreve, fora as só de grafia)\n' +
          '  ALU0001 (linha 2 do txt), CPF: 52998224726: o Educacenso não troca por arquivo um CPF que já tem (regra 10 do CPF).\n' +
          '  ALU0003 (linha 4 do txt), Filiação 2: JOSE DE LIMA: o arquivo corrigido não altera a filiação 2, e a Receita Federal não guarda o nome do pai.\n' +
          '  ALU0003 (linha 4 do txt), Sexo: 2: o arquivo corrigido não altera este campo.\n',
      );
      expect((await readFile(out)).equals(await api('/api/censo-corrigido', [retorno(c), txt(c)]))).toBe(true);
    }
  });
});

describe('lote', () => {
  let folder: string;
  beforeAll(async () => {
    folder = path.join(dir, 'retornos');
    await mkdir(path.join(folder, 'escola-b', 'dentro'), { recursive: true });
    await cp(basico.retorno.json, path.join(folder, 'escola-a.json'));
    await cp(utf8.retorno.xlsx, path.join(folder, 'escola-b', 'dentro', 'Retorno.XLSX'));
    await writeFile(path.join(folder, 'quebrado.json'), '{ nada');
    await writeFile(path.join(folder, 'leia-me.txt'), 'não é um retorno');
  });

  async function expectedRows(): Promise<string> {
    // What posting each file gives, with its relative path in front, in sorted path order.
    const a = (await api('/api/divergencias-rf?format=csv', [retorno(basico)])).toString('utf8').split('\r\n').slice(1, -1);
    const b = (await api('/api/divergencias-rf?format=csv', [retorno(utf8, 'xlsx')])).toString('utf8').split('\r\n').slice(1, -1);
    return [
      'arquivo,codigo_na_escola,linha,campo,enviado,correto,is_filiacao,chave,correcao',
      ...a.map((line) => `escola-a.json,${line}`),
      ...b.map((line) => `escola-b/dentro/Retorno.XLSX,${line}`),
    ]
      .map((line) => `${line}\r\n`)
      .join('');
  }

  it('combines every return under the folder (recursive, stable order), reports a bad one on stderr, names it and the file not read in the summary, exits 1', async () => {
    const out = path.join(dir, 'lote.csv');
    const run = await censo(['lote', folder, '--format', 'csv', '-o', out, '--concurrency', '2']);
    expect(run.code).toBe(1);
    expect(run.stdout.length).toBe(0);
    expect(run.stderr).toBe(
      'censo: "quebrado.json": Arquivo retorno ilegível: não é um JSON válido.\n' +
        'Retornos: 3 (2 lidos, 1 com falha); ignorados: 1; divergências gravadas: 18.\n' +
        'Com falha: "quebrado.json".\n' +
        'Ignorados: "leia-me.txt".\n',
    );
    expect(await readFile(out, 'utf8')).toBe(await expectedRows());
  });

  it('json on stdout: data only, each item with its arquivo first; no progress when stderr is not a terminal', async () => {
    const run = await censo(['lote', folder, '--format', 'json']);
    expect(run.code).toBe(1);
    const body = JSON.parse(run.stdout.toString('utf8')) as { divergencias: Record<string, unknown>[] };
    expect(Object.keys(body.divergencias[0]!)[0]).toBe('arquivo');
    expect(new Set(body.divergencias.map((d) => d.arquivo))).toEqual(new Set(['escola-b/dentro/Retorno.XLSX', 'escola-a.json']));
    expect(run.stderr).toBe(
      'censo: "quebrado.json": Arquivo retorno ilegível: não é um JSON válido.\n' +
        'Retornos: 3 (2 lidos, 1 com falha); ignorados: 1; divergências gravadas: 18.\n' +
        'Com falha: "quebrado.json".\n' +
        'Ignorados: "leia-me.txt".\n',
    );
  });

  it('shows a progress bar with a rate when stderr is a terminal, and --quiet silences it', async () => {
    const out = path.join(dir, 'tty.csv');
    const command = (quiet: string) => `${process.execPath} ${CLI} ${quiet} lote ${folder} -o ${out}`;
    const tty = await runFile('script', ['-qfec', command(''), '/dev/null'], { encoding: 'utf8' }).catch((err: { stdout: string }) => err);
    expect(tty.stdout).toMatch(/Arquivos .* 3\/3 \| [\d.]+ arq\/s/);
    const silent = await runFile('script', ['-qfec', command('--quiet'), '/dev/null'], { encoding: 'utf8' }).catch(
      (err: { stdout: string }) => err,
    );
    expect(silent.stdout).not.toMatch(/Arquivos/);
  });
});

describe('exit codes', () => {
  it.each([
    [['divergencias', 'nao-existe.json'], 'censo: Arquivo não encontrado: "nao-existe.json".\n'],
    [['divergencias', 'retorno.pdf'], 'censo: Extensão inválida para retorno: envie .json ou .xlsx.\n'],
    [['retorno-rf', basico.retorno.json, 'censo.csv'], 'censo: Extensão inválida para txt: envie .txt.\n'],
    [['lote', 'nao-existe'], 'censo: Pasta não encontrada: "nao-existe".\n'],
  ])("1 for bad input %j, with the API's message", async (args, stderr) => {
    const run = await censo(args);
    expect(run.code).toBe(1);
    expect(run.stderr).toBe(stderr);
    expect(run.stdout.length).toBe(0);
  });

  it("1 with the API's erro for a file the service would refuse", async () => {
    const bad = path.join(dir, 'ruim.json');
    await writeFile(bad, '[1, 2]');
    const run = await censo(['divergencias', bad]);
    expect(run).toMatchObject({ code: 1, stderr: 'censo: Arquivo retorno ilegível: as linhas do JSON devem ser objetos.\n' });
  });

  it('1 when -o fills the disk midway (a 128 KB tmpfs): one Portuguese line, and no partial file stays', async () => {
    const mountpoint = await mkdtemp(path.join(dir, 'cheio-'));
    // Needs mount privileges (root with CAP_SYS_ADMIN, as in CI's container); see docs/security.md.
    await runFile('mount', ['-t', 'tmpfs', '-o', 'size=128k', 'tmpfs', mountpoint]);
    try {
      // Divergences of 1.4 MB as JSON, 0.6 MB as CSV, 0.26 MB as XLSX.
      const big = path.join(dir, 'grande.json');
      await writeFile(big, repeatedReturn(basico.retorno.json, 1000));
      for (const format of ['json', 'csv', 'xlsx']) {
        const out = path.join(mountpoint, `divergencias.${format}`);
        const run = await censo(['divergencias', big, '-o', out]);
        expect(run.stderr, format).toBe(`censo: Não foi possível gravar em "${out}": disco cheio.\n`);
        expect(run.code).toBe(1);
        expect(await readdir(mountpoint), `${format}: a partial -o left behind`).toEqual([]);
      }
    } finally {
      await runFile('umount', ['-l', mountpoint]);
    }
  });

  it.each([
    [['bogus'], 'comando desconhecido: "bogus".'],
    [['lotte', 'retornos'], 'comando desconhecido: "lotte" (quis dizer lote?).'],
    [['divergencias'], 'falta o argumento <retorno>.'],
    [['divergencias', 'a.json', 'b.json'], 'argumentos demais para divergencias: espera 1, recebeu 2.'],
    [
      ['divergencias', 'a.json', '--format', 'pdf'],
      'valor inválido para a opção -f, --format <formato>: "pdf"; use um destes: json, csv, xlsx.',
    ],
    [['divergencias', 'a.json', '-o'], 'falta o valor da opção -o, --output <arquivo>.'],
    [['corrigir', 'a.json', 'b.txt'], 'a opção -o, --output <saida.txt> é obrigatória.'],
    [['lote', '.', '--concurrency', '0'], 'valor inválido para a opção -c, --concurrency <n>: "0"; deve ser um número inteiro positivo.'],
    [['lote', '.', '--formt', 'csv'], 'opção desconhecida: "--formt" (quis dizer --format?).'],
    [['lote', '.', '--bogus\ncenso: falso'], 'opção desconhecida: "--bogus\\ncenso: falso".'],
  ])('2 for wrong usage %j, said in Portuguese on one line', async (args, message) => {
    const run = await censo(args);
    expect(run.code).toBe(2);
    expect(run.stderr).toBe(`censo: ${message}\n(use --help para ver as opções)\n`);
    expect(run.stdout.length).toBe(0);
  });

  it('runs as `npx censo` after npm ci (the workspace bin is linked, nothing is fetched)', async () => {
    const { stdout } = await runFile('npx', ['--no-install', 'censo', '--help'], { cwd: ROOT, encoding: 'utf8' });
    expect(stdout).toMatch(/^Uso: censo/);
  });

  it('0 and Portuguese help for --help on every command', async () => {
    for (const args of [['--help'], ...['divergencias', 'retorno-rf', 'corrigir', 'lote', 'lotes', 'comparar'].map((c) => [c, '--help'])]) {
      const run = await censo(args);
      expect(run.code, args.join(' ')).toBe(0);
      expect(run.stdout.toString()).toMatch(/^Uso: censo/);
      expect(run.stdout.toString()).toMatch(/Opções:/);
    }
  });

  it('COLUMNS_FILE: the same additions as the service', async () => {
    const file = path.join(dir, 'novo.json');
    await writeFile(
      file,
      JSON.stringify([{ 'Código na Escola': 'A', Campo: 'CPF', Descrição_da_inconsistência: 'Receita Federal', Conteúdo: '1 -- 2' }]),
    );
    const columns = path.join(dir, 'columns.json');
    await writeFile(columns, JSON.stringify({ mensagem: ['Descrição_da_inconsistência'] }));
    expect((await censo(['divergencias', file])).code).toBe(1);
    const run = await censo(['divergencias', file], { env: { COLUMNS_FILE: columns } });
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout.toString())).toMatchObject({ divergencias: [{ chave: 'cpf', correto: '2' }] });
  });
});
