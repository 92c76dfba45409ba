// A divergence's `correcao` depends on its person's other divergences (rule 25 weighs them
// together), and a person's rows need not be next to each other in the return (several sheets,
// any order). So the divergences of a return are held until its end, grouped by person, decided,
// and handed on in the return's order. Only the divergences are held, never the rows: at the
// upload limit that is ~180k small objects, well inside a job thread's heap.
import { codigoKey } from '../merge.js';
import type { Divergencia, DivergenciaLida } from '../types.js';
import { decidirPessoa } from './correcao.js';

/** The person a divergence belongs to: its line in the txt, or its code when the return has no line. */
export function pessoaKey(d: Pick<DivergenciaLida, 'linha' | 'codigo_na_escola'>): string {
  const linha = d.linha.trim();
  if (linha) return `l${/^\d+$/.test(linha) ? linha.replace(/^0+(?=\d)/, '') : linha}`;
  return `c${codigoKey(d.codigo_na_escola)}`;
}

/** Every divergence of `lidas` with its `correcao`, in the same order. */
export function decidirTodas(lidas: readonly DivergenciaLida[]): Divergencia[] {
  const byPerson = new Map<string, number[]>();
  lidas.forEach((d, i) => {
    const key = pessoaKey(d);
    const indexes = byPerson.get(key);
    if (indexes) indexes.push(i);
    else byPerson.set(key, [i]);
  });
  const out = new Array<Divergencia>(lidas.length);
  for (const indexes of byPerson.values()) {
    const decisions = decidirPessoa(indexes.map((i) => lidas[i]!));
    indexes.forEach((i, k) => {
      out[i] = { ...lidas[i]!, correcao: decisions[k]!.correcao };
    });
  }
  return out;
}

const BATCH = 4096;

/** The divergences of `batches`, decided once the last batch is read, a batch at a time. */
export async function* comCorrecao(batches: AsyncIterable<readonly DivergenciaLida[]>): AsyncGenerator<Divergencia[], void, undefined> {
  const lidas: DivergenciaLida[] = [];
  for await (const batch of batches) for (const d of batch) lidas.push(d);
  const decididas = decidirTodas(lidas);
  for (let start = 0; start < decididas.length; start += BATCH) yield decididas.slice(start, start + BATCH);
}
