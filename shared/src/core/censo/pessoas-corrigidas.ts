// The persons `/api/retorno-rf` answers (SPEC §3.2): the merge's matches read again from the text
// file's second pass, each with the Receita's values and what the corrected file writes for them
// (plano.ts, the same plan the file is written from), so the answer never says a value was fixed
// that the file keeps.
import { toDataBr } from '../dates.js';
import { matchPersons, type Changes, type MatchedPersons, type MergeOptions } from '../merge.js';
import type { DivergenciaLida, Pessoa } from '../types.js';
import { decodeCensoFile } from './decode.js';
import { motivosText, noArquivo, planejar } from './plano.js';
import { CENSO_FIELD, censoField, LineSplitter, parseRecord30, type Record30Fields } from './txt.js';

/**
 * One Pessoa per record-30 line with at least one divergence, in line order. Throws
 * TxtMismatchError for the first divergence, in return order, that the text file cannot
 * account for; nothing is returned then. (The job streams the same persons; this collects them.)
 */
export async function mergePessoas(
  divergencias: AsyncIterable<DivergenciaLida> | Iterable<DivergenciaLida>,
  txtPath: string,
  options: MergeOptions = {},
): Promise<Pessoa[]> {
  const matched = await matchPersons(divergencias, txtPath, options);
  const pessoas: Pessoa[] = [];
  for await (const batch of pessoaBatches(matched, txtPath, options)) pessoas.push(...batch);
  return pessoas;
}

/** The person `/api/retorno-rf` answers for record-30 `fields` at `linha` (SPEC §3.2). */
export function toPessoa(
  linha: number,
  fields: Record30Fields,
  changes: Changes,
  file: Pick<MatchedPersons, 'cpfHolders' | 'cpfDados'>,
): Pessoa {
  const plano = planejar(linha, fields, changes, file);
  return {
    codigo_na_escola: censoField(fields, CENSO_FIELD.codigo),
    linha: String(linha),
    cpf: changes.get('cpf') ?? censoField(fields, CENSO_FIELD.cpf),
    nome: changes.get('nome') ?? censoField(fields, CENSO_FIELD.nome),
    data_nascimento: toDataBr(changes.get('data_nascimento') ?? censoField(fields, CENSO_FIELD.dataNascimento)),
    inep: changes.get('inep') ?? censoField(fields, CENSO_FIELD.inep),
    // Never the tax authority's value: the answer reports the mother as the school has her.
    nome_mae: censoField(fields, CENSO_FIELD.filiacao1),
    arquivo_cpf: noArquivo(fields, plano, CENSO_FIELD.cpf),
    arquivo_nome: noArquivo(fields, plano, CENSO_FIELD.nome),
    arquivo_data_nascimento: noArquivo(fields, plano, CENSO_FIELD.dataNascimento),
    arquivo_inep: noArquivo(fields, plano, CENSO_FIELD.inep),
    arquivo_nome_mae: noArquivo(fields, plano, CENSO_FIELD.filiacao1),
    nao_aplicadas: motivosText(plano.naoAplicadas),
    regra_25: plano.regra25,
  };
}

/**
 * The persons of `matched`, in line order, a text-file chunk's worth at a time: the text file's
 * second pass, with the encoding the first pass found. Nothing is read when nothing matched.
 */
export async function* pessoaBatches(matched: MatchedPersons, txtPath: string, options: MergeOptions = {}): AsyncGenerator<Pessoa[]> {
  if (matched.encoding === null || matched.lines.size === 0) return;
  let batch: Pessoa[] = [];
  const splitter = new LineSplitter((linha, text) => {
    const changes = matched.lines.get(linha);
    if (changes === undefined) return;
    // The first pass found a usable record 30 here, with the same decoder.
    batch.push(toPessoa(linha, parseRecord30(text)!, changes, matched));
  });
  for await (const event of decodeCensoFile(txtPath, { ...options, encoding: matched.encoding })) {
    if (event.type !== 'text') continue;
    splitter.push(event.text);
    if (batch.length > 0) {
      yield batch;
      batch = [];
    }
  }
  splitter.end();
  if (batch.length > 0) yield batch;
}
