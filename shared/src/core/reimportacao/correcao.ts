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

export const CORRECOES: readonly Correcao[] = ['arquivo', 'educacenso', 'formulario', 'receita', 'grafia'];

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
  return regra25(changes.grupo1.size, changes.grupo2?.size ?? 0);
}

function regra25(grupo1: number, grupo2: number): boolean {
  return grupo1 >= 3 || (grupo1 > 1 && grupo2 > 0);
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

// Decisions are shared values: a return decides hundreds of thousands of divergences.
const ARQUIVO: Decisao = { correcao: 'arquivo' };
const GRAFIA: Decisao = { correcao: 'grafia', motivo: 'grafia' };
const FILIACAO: Decisao = { correcao: 'receita', motivo: 'filiacao' };
const MAE_NO_EDUCACENSO: Decisao = { correcao: 'educacenso' };
const OUTRO_CAMPO: Decisao = { correcao: 'formulario', motivo: 'outro-campo' };
const LAYOUT_RECEITA: Decisao = { correcao: 'receita', motivo: 'layout' };
const LAYOUT_FORMULARIO: Decisao = { correcao: 'formulario', motivo: 'layout' };
const CPF_NA_BASE: Decisao = { correcao: 'formulario', motivo: 'cpf-na-base' };
const CPF_DE_OUTRA_PESSOA: Decisao = { correcao: 'formulario', motivo: 'cpf-de-outra-pessoa' };
const CPF_EM_BRANCO: Decisao = { correcao: 'formulario', motivo: 'cpf-em-branco' };
const REGRA_25: Decisao = { correcao: 'formulario', motivo: 'regra-25' };

/**
 * What a divergence is on its own, before the person's other divergences are weighed: `arquivo`
 * means the corrected file can write it. Only an `arquivo` decision ever changes once the person
 * is weighed (rules 8 and 25).
 */
export function sozinha(d: Divergente): Decisao {
  const write = d.chave === null ? undefined : WRITERS[d.chave];
  // A name or a date is the same value exactly when it is written the same (mesmaGrafia); the
  // written Receita value then serves both questions.
  if (d.chave === 'nome' || d.chave === 'data_nascimento') {
    const escrito = write!(d.correto);
    const sent = write!(d.enviado);
    if (sent !== null && sent === escrito) return GRAFIA;
    // A name or date the layout cannot take is the Receita's record to mend.
    return escrito === null ? LAYOUT_RECEITA : ARQUIVO;
  }
  if (mesmaGrafia(d.chave, d.enviado, d.correto)) return GRAFIA;
  // Field 8 rule 4: INEP records the Receita's mother's name in filiação 1 itself, and the
  // corrected file writes the same name there (SPEC §11, issue 56), so the re-import changes
  // nothing; a name the layout cannot take is the Receita's record to mend. The father's name has
  // no such rule: the Receita keeps no father.
  if (d.chave === 'nome_mae') return inepNome(d.correto) === null ? LAYOUT_RECEITA : MAE_NO_EDUCACENSO;
  if (isFiliacao(d.chave)) return FILIACAO;
  if (write === undefined) return OUTRO_CAMPO;
  // A CPF or an INEP id that is not one is not the citizen's doing.
  if (write(d.correto) === null) return LAYOUT_FORMULARIO;
  if (d.chave === 'cpf' && d.enviado.trim() !== '') return CPF_NA_BASE;
  return ARQUIVO;
}

/**
 * What a person's divergences tell each other, as bits: all that rules 8 and 25 read. A person's
 * `ResumoPessoa` is the OR of its divergences' `pesoNaPessoa`, in any order, so a summary can be
 * kept for a person whose rows are already written (pessoas.ts) at the cost of a number.
 */
export type ResumoPessoa = number;
// Seven bits at most: pessoas.ts keeps a summary in a byte beside a mark of its own.
const NOME_NO_ARQUIVO = 1;
const DATA_NO_ARQUIVO = 2;
const OUTRO_NO_ARQUIVO = 4;
const CPF_EM_BRANCO_MANTIDO = 8;
const MAE_DA_RECEITA = 16;

/** The bits one divergence, decided on its own, adds to its person's summary. */
export function pesoNaPessoa(d: Pick<Divergente, 'chave' | 'enviado'>, decision: Decisao): ResumoPessoa {
  if (decision.correcao === 'arquivo') {
    return d.chave === 'nome' ? NOME_NO_ARQUIVO : d.chave === 'data_nascimento' ? DATA_NO_ARQUIVO : OUTRO_NO_ARQUIVO;
  }
  // Field 5 rule 8: a blank CPF the file cannot fill.
  if (d.chave === 'cpf' && decision.correcao !== 'grafia' && d.enviado.trim() === '') return CPF_EM_BRANCO_MANTIDO;
  // A mother's name the layout cannot take: the file keeps the school's name in filiação 1, over
  // the Receita's that INEP recorded (a change rule 25 counts).
  if (d.chave === 'nome_mae' && decision.correcao === 'receita') return MAE_DA_RECEITA;
  return 0;
}

/**
 * A divergence's decision once its person's summary is known: field 5 rule 8 (a blank CPF the
 * file cannot fill blocks the name and birth date), then rule 25 (a person whose corrections
 * together would be refused gets none of them: each becomes `formulario`, and the corrected file
 * writes the person as sent).
 */
export function naPessoa(chave: Chave | null, decision: Decisao, resumo: ResumoPessoa, grupo2 = 0): Decisao {
  if (decision.correcao !== 'arquivo') return decision;
  const cpfEmBranco = (resumo & CPF_EM_BRANCO_MANTIDO) !== 0;
  if (cpfEmBranco && (chave === 'nome' || chave === 'data_nascimento')) return CPF_EM_BRANCO;
  const grupo1 =
    (!cpfEmBranco && resumo & NOME_NO_ARQUIVO ? 1 : 0) +
    (!cpfEmBranco && resumo & DATA_NO_ARQUIVO ? 1 : 0) +
    (resumo & MAE_DA_RECEITA ? 1 : 0);
  return regra25(grupo1, grupo2) ? REGRA_25 : decision;
}

/**
 * Whether a person already decided with summary `antes` would have any of those divergences
 * decided otherwise with summary `depois` (its rows came apart in the return: pessoas.ts).
 */
export function mudaNaPessoa(antes: ResumoPessoa, depois: ResumoPessoa): boolean {
  const chaves: Array<[number, Chave]> = [
    [NOME_NO_ARQUIVO, 'nome'],
    [DATA_NO_ARQUIVO, 'data_nascimento'],
    [OUTRO_NO_ARQUIVO, 'cpf'],
  ];
  return chaves.some(([bit, chave]) => (antes & bit) !== 0 && naPessoa(chave, ARQUIVO, antes) !== naPessoa(chave, ARQUIVO, depois));
}

export interface PessoaOptions {
  /** Rule 25's group 2 fields the migration also changes (the corrected file itself never does). */
  readonly grupo2?: ReadonlySet<Grupo2>;
  /** Field 5 rule 7, which only the txt shows: another person of the file holds the Receita's CPF. */
  readonly cpfDeOutraPessoa?: boolean;
}

/** The decision for each of one person's divergences (same order): each on its own, then weighed together. */
export function decidirPessoa(divergencias: readonly Divergente[], options: PessoaOptions = {}): Decisao[] {
  const decisions = divergencias.map((d) => {
    const decision = sozinha(d);
    return options.cpfDeOutraPessoa && d.chave === 'cpf' && decision.correcao === 'arquivo' ? CPF_DE_OUTRA_PESSOA : decision;
  });
  let resumo = 0;
  divergencias.forEach((d, i) => (resumo |= pesoNaPessoa(d, decisions[i]!)));
  return decisions.map((decision, i) => naPessoa(divergencias[i]!.chave, decision, resumo, options.grupo2?.size ?? 0));
}

/**
 * A Portuguese sentence for the coordinator: who acts, and where. From the divergence alone, so
 * every output (the page, the XLSX, the CLI) words it the same.
 */
export function orientacao(d: Divergente & { readonly correcao: Correcao }): string {
  switch (d.correcao) {
    case 'arquivo':
      return 'O arquivo corrigido leva o valor da Receita Federal e o INEP o aceita; corrija também no sistema da escola.';
    case 'educacenso':
      return (
        'O INEP já gravou na filiação 1 o nome da mãe que a Receita Federal tem (regra 4 da filiação), e o arquivo ' +
        'corrigido leva o mesmo nome: corrija só no sistema da escola.'
      );
    case 'grafia':
      return 'Só muda a grafia (acentos, maiúsculas, pontuação ou espaços): como o censo escreve, os valores são iguais e não há o que corrigir.';
    case 'receita':
      if (d.chave === 'nome_pai')
        return (
          'A Receita Federal não guarda o nome do pai e o arquivo corrigido não altera a filiação 2: confira o nome com a ' +
          'família e corrija no sistema da escola e no formulário do Educacenso.'
        );
      if (d.chave === 'nome_mae')
        return 'O nome da mãe que a Receita Federal tem não cabe no layout do INEP: o cidadão precisa atualizar o cadastro do CPF na Receita Federal.';
      return 'O valor da Receita Federal não cabe no layout do INEP: o cidadão precisa atualizar o cadastro do CPF na Receita Federal.';
    case 'formulario':
      if (d.chave === null) return 'O arquivo corrigido não altera este campo: corrija no sistema da escola e no formulário do Educacenso.';
      if (d.chave === 'cpf' && d.enviado.trim() !== '' && WRITERS.cpf!(d.correto) !== null)
        return 'O Educacenso não troca por arquivo um CPF que já tem (regra 10 do CPF): corrija no formulário do Educacenso.';
      if (WRITERS[d.chave]?.(d.correto) === null)
        return 'O valor da Receita Federal não cabe no layout do INEP: confira e corrija no formulário do Educacenso.';
      // From the return alone the two cases look the same; with the txt, the corrected file's
      // answer names the one rule (retorno-rf's `motivos`, `censo corrigir`).
      return (
        'Confirme no formulário do Educacenso: com as demais divergências desta pessoa, o INEP pode recusá-la por ' +
        'descaracterização (regra 25) ou, se ela foi enviada sem CPF, não atualizar este dado (regra 8 do CPF).'
      );
  }
}

/** Why the corrected file leaves a correction out, in words (the CLI's list, the page). */
export const MOTIVO_TEXTO: Readonly<Record<Motivo, string>> = {
  grafia: 'só muda a grafia',
  filiacao: 'o arquivo corrigido não altera a filiação 2, e a Receita Federal não guarda o nome do pai',
  'filiacao-trocada': 'o nome da mãe da Receita Federal já está na filiação 2 do arquivo (filiações trocadas)',
  'outro-campo': 'o arquivo corrigido não altera este campo',
  layout: 'o valor da Receita Federal não cabe no layout do INEP',
  'cpf-na-base': 'o Educacenso não troca por arquivo um CPF que já tem (regra 10 do CPF)',
  'cpf-de-outra-pessoa': 'outra pessoa do arquivo já tem este CPF (regra 7 do CPF)',
  'cpf-em-branco': 'sem o CPF, o INEP não atualiza nome e data de nascimento (regra 8 do CPF)',
  'regra-25':
    'com as demais correções, o INEP pode recusar a pessoa por descaracterização (regra 25): confirme no formulário do Educacenso',
};

/** The words of `correcao`, as the page and the spreadsheets show them. */
export const CORRECAO_PALAVRAS: Readonly<Record<Correcao, string>> = {
  arquivo: 'Arquivo corrigido',
  educacenso: 'Já no Educacenso',
  formulario: 'Formulário do Educacenso',
  receita: 'Cidadão na Receita Federal',
  grafia: 'Só grafia',
};
