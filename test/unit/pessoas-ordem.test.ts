// A divergence's `correcao` weighs its person's other divergences (SPEC §11), yet the answer
// streams (issue 58): a person is decided when the next one begins. These tests hold the answer to
// the one a whole reading gives, whatever the order of the return's rows, and check that the
// usual return (a person's rows together) is read once and handed on before its end.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  BUILTIN_FIELD_LABELS,
  comDivergencias,
  emUmaPassada,
  ForaDeOrdem,
  runJob,
  runLoteBatch,
  type Divergencia,
  type DivergenciaLida,
  type RetornoRow,
} from '@censo/shared';
import { CASOS, RF } from '../helpers/reimportacao-casos.js';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'censo-ordem-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

interface Linha {
  readonly Registro: string;
  readonly Linha?: string;
  readonly 'Código na Escola': string;
  readonly Campo: string;
  readonly Mensagem: string;
  readonly Conteúdo: string;
}

/** Every case of the re-import table as a person of one return (line i + 2), with its expected correcao. */
function retornoDeTodos(comLinha = true): { rows: Linha[]; esperado: Map<string, string> } {
  const rows: Linha[] = [];
  const esperado = new Map<string, string>();
  CASOS.forEach((caso, i) => {
    caso.rows.forEach((row, k) => {
      const codigo = `ALU${i}`;
      rows.push({
        Registro: '30',
        ...(comLinha ? { Linha: String(i + 2) } : {}),
        'Código na Escola': codigo,
        Campo: row.campo,
        Mensagem: row.mensagem ?? RF,
        Conteúdo: row.conteudo,
      });
      esperado.set(`${codigo}|${row.campo}|${row.conteudo.split('--')[1]!.trim()}`, caso.correcao[k]!);
    });
  });
  return { rows, esperado };
}

/** A seeded Fisher–Yates shuffle (mulberry32): the same seed, the same order. */
function shuffled<T>(items: readonly T[], seed: number): T[] {
  let state = seed;
  const random = (): number => {
    let t = (state += 0x6d2b79f5);
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

const keyOf = (d: Pick<Divergencia, 'codigo_na_escola' | 'campo' | 'correto'>): string => `${d.codigo_na_escola}|${d.campo}|${d.correto}`;

let n = 0;
async function divergenciasOf(rows: readonly Linha[]): Promise<Divergencia[]> {
  const retorno = path.join(dir, `retorno-${n}.json`);
  const resultPath = path.join(dir, `div-${n++}.json`);
  await writeFile(retorno, JSON.stringify(rows));
  const result = await runJob({ kind: 'divergencias', retorno: { path: retorno, format: 'json' }, resultPath });
  expect(result).toMatchObject({ ok: true, count: rows.length });
  return (JSON.parse(await readFile(resultPath, 'utf8')) as { divergencias: Divergencia[] }).divergencias;
}

describe('correcao whatever the order of the return (issue 58)', () => {
  for (const comLinha of [true, false]) {
    it(`a shuffled return gets the same correcao for every divergence, in its own order (${comLinha ? 'persons by line' : 'persons by code'})`, async () => {
      const { rows, esperado } = retornoDeTodos(comLinha);
      const inOrder = await divergenciasOf(rows);
      expect(inOrder.map((d) => esperado.get(keyOf(d)))).toEqual(inOrder.map((d) => d.correcao));
      // Several seeds: some orders only move persons with one divergence, others split a person
      // whose later rows change what its earlier ones were decided as (rule 25, rule 8).
      for (const seed of [1, 2, 3, 4, 5, 6, 7, 8]) {
        const mixed = shuffled(rows, seed);
        const answer = await divergenciasOf(mixed);
        expect(answer.map((d) => `${d.codigo_na_escola}|${d.campo}`)).toEqual(mixed.map((r) => `${r['Código na Escola']}|${r.Campo}`));
        expect(answer.map((d) => d.correcao)).toEqual(answer.map((d) => esperado.get(keyOf(d))));
      }
    });
  }

  it('a batch of `censo lote` writes a shuffled return with the same correcao', async () => {
    const { rows, esperado } = retornoDeTodos();
    const mixed = shuffled(rows, 3);
    const file = path.join(dir, 'lote-retorno.json');
    await writeFile(file, JSON.stringify(mixed));
    const resultPath = path.join(dir, 'lote.json');
    const [outcome] = await runLoteBatch({
      resultPath,
      format: 'json',
      files: [{ path: file, format: 'json', name: 'escola/retorno.json' }],
    });
    expect(outcome).toMatchObject({ ok: true, rows: mixed.length });
    const { start, end } = outcome as { start: number; end: number };
    const items = JSON.parse(`[${(await readFile(resultPath)).subarray(start, end).toString('utf8')}]`) as Divergencia[];
    expect(items.map((d) => d.correcao)).toEqual(items.map((d) => esperado.get(keyOf(d))));
  });
});

/** The divergences of `rows` as the readers hand them on, a batch of `size` at a time. */
async function* lidas(rows: readonly DivergenciaLida[], size: number): AsyncGenerator<DivergenciaLida[]> {
  for (let i = 0; i < rows.length; i += size) yield rows.slice(i, i + size);
}

const lida = (linha: string, chave: DivergenciaLida['chave'], enviado: string, correto: string): DivergenciaLida => ({
  codigo_na_escola: `P${linha}`,
  linha,
  campo: String(chave),
  enviado,
  correto,
  is_filiacao: chave === 'nome_mae',
  chave,
});

// Person 2: name, birth date and a mother's name the layout cannot take make rule 25 weigh the
// name and the date.
const REGRA_25 = [
  lida('2', 'nome', 'ANA SILVA', 'ANA SOUZA'),
  lida('2', 'data_nascimento', '01/01/2010', '02/02/2010'),
  lida('2', 'nome_mae', 'MARIA SILVA', '1234'),
];
const OUTRA = lida('3', 'nome', 'JOSE LIMA', 'JOSE LIMAS');

describe('one pass, then two when it must (reimportacao/pessoas.ts)', () => {
  it('hands a person on as soon as the next begins, before the return ends', async () => {
    const seen: string[] = [];
    async function* source(): AsyncGenerator<DivergenciaLida[]> {
      yield [...REGRA_25, OUTRA];
      seen.push('second batch read');
      yield [lida('4', 'nome', 'LIA', 'LEA')];
    }
    const first = await emUmaPassada(source()).next();
    expect(seen).toEqual([]);
    expect((first.value as Divergencia[]).map((d) => [d.linha, d.correcao])).toEqual([
      ['2', 'formulario'],
      ['2', 'formulario'],
      ['2', 'receita'],
    ]);
  });

  it('reads a return once when its persons come in order, even in batches that split a person', async () => {
    let opened = 0;
    const open = (): AsyncGenerator<DivergenciaLida[]> => {
      opened++;
      return lidas([...REGRA_25, OUTRA], 1);
    };
    const answer = await comDivergenciasOfLidas(open);
    expect(opened).toBe(1);
    expect(answer.map((d) => d.correcao)).toEqual(['formulario', 'formulario', 'receita', 'arquivo']);
  });

  it('a person whose later rows change what was handed on is read again, in two passes; one whose later rows change nothing is not', async () => {
    let opened = 0;
    const rows = [REGRA_25[0]!, REGRA_25[1]!, OUTRA, REGRA_25[2]!];
    const open = (): AsyncGenerator<DivergenciaLida[]> => {
      opened++;
      return lidas(rows, 2);
    };
    // Name and date alone are written; the mother's row coming back makes rule 25 refuse them.
    await expect(collect(emUmaPassada(lidas(rows, 2)))).rejects.toBeInstanceOf(ForaDeOrdem);
    const answer = await comDivergenciasOfLidas(open);
    expect(opened).toBe(3);
    expect(answer.map((d) => [d.linha, d.correcao])).toEqual([
      ['2', 'formulario'],
      ['2', 'formulario'],
      ['3', 'arquivo'],
      ['2', 'receita'],
    ]);

    // The mother's row first, then the rest after another person: the earlier row never changes.
    let again = 0;
    const later = [REGRA_25[2]!, OUTRA, REGRA_25[0]!, REGRA_25[1]!];
    const reopened = await comDivergenciasOfLidas(() => {
      again++;
      return lidas(later, 4);
    });
    expect(again).toBe(1);
    expect(reopened.map((d) => [d.linha, d.correcao])).toEqual([
      ['2', 'receita'],
      ['3', 'arquivo'],
      ['2', 'formulario'],
      ['2', 'formulario'],
    ]);
  });
});

async function collect(batches: AsyncIterable<Divergencia[]>): Promise<Divergencia[]> {
  const out: Divergencia[] = [];
  for await (const batch of batches) out.push(...batch);
  return out;
}

/**
 * comDivergencias over divergences already read: rows whose fields carry each divergence back,
 * so the same rules classify them again.
 */
async function comDivergenciasOfLidas(open: () => AsyncGenerator<DivergenciaLida[]>): Promise<Divergencia[]> {
  const asRows = async function* (): AsyncGenerator<RetornoRow[]> {
    for await (const batch of open()) {
      yield batch.map((d) => ({
        registro: '30',
        linha: d.linha,
        codigo: d.codigo_na_escola,
        campo:
          { nome: 'Nome completo', data_nascimento: 'Data de nascimento', nome_mae: 'Filiação 1' }[d.chave as string] ?? 'Nome completo',
        mensagem: RF,
        conteudo: `${d.enviado} -- ${d.correto}`,
      }));
    }
  };
  return comDivergencias(asRows, BUILTIN_FIELD_LABELS, collect);
}
