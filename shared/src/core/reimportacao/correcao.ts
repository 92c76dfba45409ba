// Where each tax-authority divergence gets fixed (SPEC §11, issue 46), from INEP's own rules for
// the 2025 migration layout (record 30; "regras gerais"):
// - field 5 (CPF) rule 10: a CPF Educacenso already holds cannot be changed by migration (the
//   person is not imported); rule 7: a CPF another person has is refused; rule 8: a blank CPF
//   where the base has one blocks the update of name, birth date and filiation;
// - field 6 (nome) rule 7 and field 7 (data de nascimento) rule 53: a value that disagrees with
//   the Receita Federal refuses the whole school, so these are what the corrected file is for;
// - field 8 (filiação) rule 4: when neither filiação 1 nor 2 agrees with the Receita, INEP drops
//   filiação 1 and records the Receita's name itself;
// - general rule 25: a migration that changes three of {nome, data de nascimento, filiação 1,
//   filiação 2}, or more than one of them together with any of {sexo, cor/raça, país de
//   nacionalidade, município de nascimento, deficiência}, "descaracteriza" the person, who is not
//   imported (a swap of filiação 1 and 2 is no change).
//
// What Educacenso holds is not in the return. The model (SPEC §11, decided): it holds what the
// school sent, except filiação 1, which rule 4 replaced by the Receita's name. So a corrected file
// changes, against that base, the fields it corrects plus filiação 1 whenever the mother's name
// diverged (the file writes the school's name back).
import { parseDataBr } from '../dates.js';
import { inepCpf, inepData, inepId, inepNome } from '../censo/inep-values.js';
import type { Chave, Correcao, Motivo } from '../types.js';

export const CORRECOES: readonly Correcao[] = ['arquivo', 'formulario', 'receita', 'grafia'];

export interface Decisao {
  readonly correcao: Correcao;
  /** Absent when the corrected file applies it. */
  readonly motivo?: Motivo;
}

/** One divergence as the rules see it: the field, the value sent and the Receita's. */
export interface Divergente {
  readonly chave: Chave | null;
  readonly enviado: string;
  readonly correto: string;
}

/** Rule 25's groups. The corrected file only ever changes group 1 fields. */
export type Grupo1 = 'nome' | 'data_nascimento' | 'filiacao_1' | 'filiacao_2';
export type Grupo2 = 'sexo' | 'cor_raca' | 'pais' | 'municipio_nascimento' | 'deficiencia';

/** General rule 25, both forms: three of group 1, or more than one of group 1 with any of group 2. */
export function descaracteriza(changes: { readonly grupo1: ReadonlySet<Grupo1>; readonly grupo2?: ReadonlySet<Grupo2> }): boolean {
  const g1 = changes.grupo1.size;
  return g1 >= 3 || (g1 > 1 && (changes.grupo2?.size ?? 0) > 0);
}

const digits = (value: string): string => value.replace(/\D/g, '');

/** The two values are one value once written as the census writes it. */
export function mesmaGrafia(chave: Chave | null, enviado: string, correto: string): boolean {
  switch (chave) {
    case 'cpf':
    case 'inep': {
      const sent = digits(enviado);
      return sent !== '' && sent === digits(correto);
    }
    case 'data_nascimento': {
      const sent = parseDataBr(enviado);
      return sent !== null && sent === parseDataBr(correto);
    }
    default: {
      const sent = inepNome(enviado);
      return sent !== null && sent === inepNome(correto);
    }
  }
}

/** The corrected file's writer of each field it rewrites (SPEC §3.4). */
const WRITERS: Readonly<Partial<Record<Chave, (value: string) => string | null>>> = {
  cpf: inepCpf,
  nome: inepNome,
  data_nascimento: inepData,
  inep: inepId,
};

const isFiliacao = (chave: Chave | null): boolean => chave === 'nome_mae' || chave === 'nome_pai';

/**
 * What a divergence would be on its own, before the person's other divergences are weighed:
 * `arquivo` means the corrected file can write it.
 */
function alone(d: Divergente): Decisao {
  if (mesmaGrafia(d.chave, d.enviado, d.correto)) return { correcao: 'grafia', motivo: 'grafia' };
  if (isFiliacao(d.chave)) return { correcao: 'receita', motivo: 'filiacao' };
  const write = d.chave === null ? undefined : WRITERS[d.chave];
  if (write === undefined) return { correcao: 'formulario', motivo: 'outro-campo' };
  if (write(d.correto) === null) {
    // A name or date the layout cannot take is the Receita's record to mend; a CPF or an INEP id
    // that is not one is not the citizen's doing.
    return d.chave === 'nome' || d.chave === 'data_nascimento'
      ? { correcao: 'receita', motivo: 'layout' }
      : { correcao: 'formulario', motivo: 'layout' };
  }
  if (d.chave === 'cpf' && d.enviado.trim() !== '') return { correcao: 'formulario', motivo: 'cpf-na-base' };
  return { correcao: 'arquivo' };
}

export interface PessoaOptions {
  /** Rule 25's group 2 fields the migration also changes (the corrected file itself never does). */
  readonly grupo2?: ReadonlySet<Grupo2>;
  /** Field 5 rule 7, which only the txt shows: another person of the file holds the Receita's CPF. */
  readonly cpfDeOutraPessoa?: boolean;
}

/**
 * The decision for each of one person's divergences (same order): each on its own, then field 5
 * rule 8 (a blank CPF the file cannot fill blocks the name and birth date), then rule 25 (a person
 * whose corrections together would be refused gets none of them: every one becomes `formulario`,
 * and the corrected file writes the person as sent).
 */
export function decidirPessoa(divergencias: readonly Divergente[], options: PessoaOptions = {}): Decisao[] {
  let decisions = divergencias.map((d) => {
    const decision = alone(d);
    return options.cpfDeOutraPessoa && d.chave === 'cpf' && decision.correcao === 'arquivo'
      ? ({ correcao: 'formulario', motivo: 'cpf-de-outra-pessoa' } as const)
      : decision;
  });
  const blankCpfKept = divergencias.some(
    (d, i) => d.chave === 'cpf' && d.enviado.trim() === '' && !['arquivo', 'grafia'].includes(decisions[i]!.correcao),
  );
  if (blankCpfKept) {
    decisions = decisions.map((decision, i) => {
      const chave = divergencias[i]!.chave;
      return decision.correcao === 'arquivo' && (chave === 'nome' || chave === 'data_nascimento')
        ? { correcao: 'formulario', motivo: 'cpf-em-branco' }
        : decision;
    });
  }
  const grupo1 = new Set<Grupo1>();
  divergencias.forEach((d, i) => {
    const decision = decisions[i]!;
    if (decision.correcao === 'arquivo' && (d.chave === 'nome' || d.chave === 'data_nascimento')) grupo1.add(d.chave);
    // The file writes the school's mother's name back over the Receita's that INEP recorded.
    if (d.chave === 'nome_mae' && decision.motivo === 'filiacao') grupo1.add('filiacao_1');
  });
  if (!descaracteriza({ grupo1, ...(options.grupo2 ? { grupo2: options.grupo2 } : {}) })) return decisions;
  return decisions.map((decision) => (decision.correcao === 'arquivo' ? { correcao: 'formulario', motivo: 'regra-25' } : decision));
}

/**
 * A Portuguese sentence for the coordinator: who acts, and where. From the divergence alone, so
 * every output (the page, the XLSX, the CLI) words it the same.
 */
export function orientacao(d: Divergente & { readonly correcao: Correcao }): string {
  switch (d.correcao) {
    case 'arquivo':
      return 'O arquivo corrigido leva o valor da Receita Federal e o INEP o aceita; corrija também no sistema da escola.';
    case 'grafia':
      return 'Só muda a grafia (acentos, maiúsculas, pontuação ou espaços): como o censo escreve, os valores são iguais e não há o que corrigir.';
    case 'receita':
      return isFiliacao(d.chave)
        ? 'O INEP já grava o nome da Receita Federal na filiação 1; se ele estiver errado, só o cidadão corrige, na Receita Federal.'
        : 'O valor da Receita Federal não cabe no layout do INEP: o cidadão precisa atualizar o cadastro do CPF na Receita Federal.';
    case 'formulario':
      if (d.chave === null) return 'O arquivo corrigido não altera este campo: corrija no sistema da escola e no formulário do Educacenso.';
      if (d.chave === 'cpf' && d.enviado.trim() !== '' && WRITERS.cpf!(d.correto) !== null)
        return 'O Educacenso não troca por arquivo um CPF que já tem (regra 10 do CPF): corrija no formulário do Educacenso.';
      if (WRITERS[d.chave]?.(d.correto) === null)
        return 'O valor da Receita Federal não cabe no layout do INEP: confira e corrija no formulário do Educacenso.';
      return (
        'Com as demais divergências desta pessoa, o INEP não aceitaria esta troca por arquivo (descaracterização, regra 25; ' +
        'ou CPF em branco, regra 8 do CPF): corrija no formulário do Educacenso.'
      );
  }
}

/** Why the corrected file leaves a correction out, in words (the CLI's list, the page). */
export const MOTIVO_TEXTO: Readonly<Record<Motivo, string>> = {
  grafia: 'só muda a grafia',
  filiacao: 'o INEP já grava o nome da mãe da Receita Federal (regra 4 da filiação)',
  'outro-campo': 'o arquivo corrigido não altera este campo',
  layout: 'o valor da Receita Federal não cabe no layout do INEP',
  'cpf-na-base': 'o Educacenso não troca por arquivo um CPF que já tem (regra 10 do CPF)',
  'cpf-de-outra-pessoa': 'outra pessoa do arquivo já tem este CPF (regra 7 do CPF)',
  'cpf-em-branco': 'sem o CPF, o INEP não atualiza nome e data de nascimento (regra 8 do CPF)',
  'regra-25': 'com as demais correções, o INEP recusaria a pessoa por descaracterização (regra 25)',
};

/** The words of `correcao`, as the page and the spreadsheets show them. */
export const CORRECAO_PALAVRAS: Readonly<Record<Correcao, string>> = {
  arquivo: 'Arquivo corrigido',
  formulario: 'Formulário do Educacenso',
  receita: 'Cidadão na Receita Federal',
  grafia: 'Só grafia',
};
