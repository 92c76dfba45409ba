// What the corrected file writes on one person's record 30, and what it leaves out and why
// (SPEC §11): the decisions of reimportacao/correcao.ts taken on the line's own values (what the
// school sent) and the Receita's, then field 5 rule 7 against the rest of the file. The corrected
// file (corrigido.ts) writes it and `/api/retorno-rf` answers it (pessoas-corrigidas.ts), so the
// persons and the file can never disagree. Worked out line by line as the text file streams: kept
// for every person at once, these maps would outweigh the merge itself.
import { answeredChanges, type Changes, type CpfHolder, type MatchedPersons } from '../merge.js';
import { decidirPessoa, MOTIVO_TEXTO, type Decisao, type Divergente } from '../reimportacao/correcao.js';
import type { AppliedChave, NaoAplicada } from '../types.js';
import { inepCpf, inepData, inepId, inepNome } from './inep-values.js';
import { CENSO_FIELD, censoField, type Record30Fields } from './txt.js';

/** Field position (1-based) and INEP-style writer of each field a divergence may change. */
export const REWRITTEN: Readonly<Record<AppliedChave, { readonly field: number; readonly write: (value: string) => string | null }>> = {
  inep: { field: CENSO_FIELD.inep, write: inepId },
  cpf: { field: CENSO_FIELD.cpf, write: inepCpf },
  nome: { field: CENSO_FIELD.nome, write: inepNome },
  data_nascimento: { field: CENSO_FIELD.dataNascimento, write: inepData },
};

export interface Plano {
  /** The new value of each field the file rewrites (0-based field index), INEP-style. */
  readonly fields: Map<number, string>;
  /** Every divergence of the person the file does not write (`grafia` never counts), with its rule. */
  readonly naoAplicadas: NaoAplicada[];
  /**
   * General rule 25: the file writes the Receita's values all the same (SPEC §11, issue 56), and
   * INEP may refuse this one person until the school confirms them on Educacenso's form.
   */
  readonly regra25: boolean;
}

/** The person's field at 1-based `position` as the corrected line holds it. */
export function noArquivo(record: Record30Fields, plano: Plano, position: number): string {
  return plano.fields.get(position - 1) ?? censoField(record, position);
}

/** What the corrected file does with the person at `linha` (a usable record 30 the merge matched). */
export function planejar(
  linha: number,
  record: Record30Fields,
  changes: Changes,
  file: Pick<MatchedPersons, 'cpfHolders' | 'cpfDados'>,
): Plano {
  // The values `/api/retorno-rf` answers (birth dates as DD/MM/YYYY), so the file and the persons agree.
  const answered = answeredChanges(changes);
  const divergentes: Divergente[] = answered.map(([chave, correto]) => ({
    chave,
    enviado: censoField(record, REWRITTEN[chave].field),
    correto,
  }));
  const codigo = censoField(record, CENSO_FIELD.codigo);
  const mae = maeDaReceita(record, changes.mae);
  if (mae !== undefined) divergentes.push({ chave: 'nome_mae', enviado: censoField(record, CENSO_FIELD.filiacao1), correto: changes.mae! });
  const inepAfter = (decisions: readonly Decisao[]): string => {
    const i = answered.findIndex(([chave]) => chave === 'inep');
    return i >= 0 && decisions[i]!.correcao === 'arquivo' ? inepId(answered[i]![1])! : censoField(record, CENSO_FIELD.inep);
  };
  let decisions = decidirPessoa(divergentes);
  const cpf = answered.findIndex(([chave]) => chave === 'cpf');
  if (cpf >= 0 && decisions[cpf]!.correcao === 'arquivo') {
    // Field 5 rule 7: a CPF another person of the file holds, or is given by the return as well.
    const written = inepCpf(answered[cpf]![1])!;
    const others = [...(file.cpfHolders.get(written) ?? []), ...(file.cpfDados.get(written) ?? [])];
    if (anotherPersonHolds(others, linha, inepAfter(decisions), codigo)) {
      decisions = decidirPessoa(divergentes, { cpfDeOutraPessoa: true });
    }
  }

  const fields = new Map<number, string>();
  const naoAplicadas: NaoAplicada[] = [];
  let regra25 = false;
  const leftOut = (d: Pick<NaoAplicada, 'chave' | 'campo' | 'enviado' | 'correto' | 'correcao' | 'motivo'>): void => {
    naoAplicadas.push({ codigo_na_escola: codigo, linha: String(linha), ...d });
  };
  answered.forEach(([chave, correto], i) => {
    const decision = decisions[i]!;
    if (decision.correcao === 'grafia') return;
    // Rule 25 risks one person; writing the person as sent would refuse the whole school (field 6
    // rule 7, field 7 rule 53). So the file writes, and the person is reported.
    if (decision.correcao === 'arquivo' || decision.motivo === 'regra-25') {
      regra25 ||= decision.motivo === 'regra-25';
      fields.set(REWRITTEN[chave].field - 1, REWRITTEN[chave].write(correto)!);
      return;
    }
    leftOut({ chave, campo: CAMPO[chave], enviado: censoField(record, REWRITTEN[chave].field), correto, ...motivoOf(decision) });
  });
  if (mae !== undefined) {
    const decision = decisions[answered.length]!;
    const enviado = censoField(record, CENSO_FIELD.filiacao1);
    if (decision.correcao === 'educacenso' && mae !== null) fields.set(CENSO_FIELD.filiacao1 - 1, mae);
    else if (decision.correcao === 'educacenso') {
      // Field 8 declares no filiation: filiação 1 stays empty, and the form is where to declare it.
      leftOut({ chave: 'nome_mae', campo: 'Filiação 1', enviado, correto: changes.mae!, correcao: 'formulario', motivo: 'outro-campo' });
    } else if (decision.correcao !== 'grafia') {
      leftOut({ chave: 'nome_mae', campo: 'Filiação 1', enviado, correto: changes.mae!, ...motivoOf(decision) });
    }
  }
  for (const outra of changes.outras ?? []) {
    leftOut({
      ...outra,
      // INEP's return names the father under its identification label (fixture basico).
      campo: outra.chave === 'nome_pai' ? 'Filiação 2' : outra.campo,
      ...(outra.chave === 'nome_pai' ? { correcao: 'receita', motivo: 'filiacao' } : { correcao: 'formulario', motivo: 'outro-campo' }),
    });
  }
  return { fields, naoAplicadas, regra25 };
}

/** The words of the fields the file rewrites (the reasons' list). */
const CAMPO: Readonly<Record<AppliedChave, string>> = {
  cpf: 'CPF',
  nome: 'Nome',
  data_nascimento: 'Data de nascimento',
  inep: 'INEP',
};

function motivoOf(decision: Decisao): Pick<NaoAplicada, 'correcao' | 'motivo'> {
  return { correcao: decision.correcao, motivo: decision.motivo ?? 'outro-campo' };
}

/**
 * The Receita's mother's name as filiação 1 would hold it: undefined when the person has no
 * mother's divergence, or when the school's filiação 2 already holds that name (filiação 1 and 2
 * swapped: field 8 rule 4 does not apply, nothing changes, and writing it would make the two
 * filiations one); null when it cannot be written (a name the layout cannot take, decided
 * `receita`; a record whose field 8 does not declare a filiation).
 */
function maeDaReceita(record: Record30Fields, mae: string | undefined): string | null | undefined {
  if (mae === undefined) return undefined;
  const written = inepNome(mae);
  if (written !== null && written === inepNome(censoField(record, CENSO_FIELD.filiacao2))) return undefined;
  return censoField(record, CENSO_FIELD.filiacao).trim() === '1' ? written : null;
}

/**
 * Field 5 rule 7: "another person" is one with another INEP id or, for persons sent without one,
 * (here) another own code; the same person in two schools' blocks keeps one CPF.
 */
function anotherPersonHolds(holders: readonly CpfHolder[], linha: number, inep: string, codigo: string): boolean {
  return holders.some((holder) =>
    holder.linha === linha ? false : holder.inep !== '' && inep !== '' ? holder.inep !== inep : holder.codigo.trim() !== codigo.trim(),
  );
}

/** A person's reasons in words, `<Dado>: <motivo>` each (the persons answer's `nao_aplicadas`). */
export function motivosText(naoAplicadas: readonly NaoAplicada[]): string {
  return naoAplicadas.map((item) => `${item.campo}: ${MOTIVO_TEXTO[item.motivo]}`).join('; ');
}
