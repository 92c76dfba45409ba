// What the i-Educar script does with one divergence (issue 46): a change of one i-Educar column,
// or the reason it is only listed. Pure and deterministic, so the script can ask twice (once to
// list what it skips, once to write the changes) instead of holding either (issue 59).
import { parseDataBr } from '../dates.js';
import { inepCpf, inepId, inepNome } from '../censo/inep-values.js';
import { CORRECOES, orientacao } from '../reimportacao/correcao.js';
import type { Chave, Divergencia } from '../types.js';
import { nomeComoDigitado, nomeReceita } from './nome.js';
import { slugOf } from './sql.js';
import type { PessoaEnviada, TxtEnviado } from './txt.js';

/** One divergence; a batch's carries the school's `referencia` and the return's file name. */
export type IeducarDivergencia = Divergencia & { readonly referencia?: string; readonly arquivo?: string };

/** The record-30 fields i-Educar holds in a column of its own and the corrected file rewrites. */
export type Campo = Extract<Chave, 'nome' | 'data_nascimento' | 'cpf' | 'inep'>;
const CAMPOS: readonly Campo[] = ['nome', 'data_nascimento', 'cpf', 'inep'];

/** i-Educar's `pessoa.nome` is varchar(150). */
export const MAX_NOME_IEDUCAR = 150;
/** `pessoa.idpes` is numeric(8,0). */
const IDPES = /^0*(\d{1,8})$/;

export interface Change {
  readonly idpes: number;
  readonly campo: Campo;
  /** As sent and as the Receita has it, for people to read. */
  readonly enviado: string;
  readonly correto: string;
  /** The sent value as the script compares it with i-Educar's (script.ts, CURRENT). */
  readonly anterior: string;
  /** The value written where i-Educar keeps names as typed, and where it keeps them in capitals. */
  readonly novo: string;
  readonly novoMaiusculo: string;
  /** The value written, as compared. */
  readonly novoCmp: string;
  readonly slug: string | null;
  /** Where it came from: the school and the return. */
  readonly origem: string;
}

export type Plan = { readonly change: Change } | { readonly motivo: string };

export const MOTIVOS = {
  semCorrecao: 'Divergência sem classificação (correcao): gere as divergências de novo com esta versão do censo-api.',
  codigo:
    'O código na escola (campo 3 do registro 30) não é um idpes do i-Educar (um número de até 8 dígitos): corrija no sistema da escola.',
  semInep: 'O envio não tinha código INEP: cadastre-o na ficha do aluno ou do servidor no i-Educar.',
  enviadoInvalido: 'O valor enviado não é um que o i-Educar guarde neste campo: confira e corrija no i-Educar.',
  nomeLongo: `O nome da Receita Federal passa de ${MAX_NOME_IEDUCAR} caracteres, o limite do i-Educar: corrija no i-Educar.`,
  naoNome:
    'O valor da Receita Federal não é um nome (só letras, espaços, apóstrofo e hífen): o script não o grava; confira e corrija no i-Educar.',
  foraDoTxt:
    'O txt enviado com o retorno não tem esta pessoa com este código e este valor enviado: o script não a altera; confira o retorno e o txt.',
} as const;

const iso = (dmy: string) => `${dmy.slice(6)}-${dmy.slice(3, 5)}-${dmy.slice(0, 2)}`;

/** The sent CPF as i-Educar's numeric(11,0) exports it: 11 digits, `''` for none (NULL or 0). */
function cpfEnviado(value: string): string | null {
  const digits = value.replace(/[\s.\-/]/g, '');
  if (digits === '') return '';
  if (!/^\d{1,11}$/.test(digits)) return null;
  const padded = digits.padStart(11, '0');
  return padded === '00000000000' ? '' : padded;
}

/** A sent value as the script compares it with i-Educar's, or `null` when i-Educar never holds it. */
function anteriorOf(campo: Campo, enviado: string): string | null {
  switch (campo) {
    case 'nome':
      return [...enviado].length > MAX_NOME_IEDUCAR ? null : (inepNome(enviado) ?? '');
    case 'data_nascimento': {
      if (enviado.trim() === '') return '';
      const sent = parseDataBr(enviado);
      return sent === null ? null : iso(sent);
    }
    case 'cpf':
      return cpfEnviado(enviado);
    case 'inep':
      return inepId(enviado);
  }
}

/** The txt's record 30 the divergence names (SPEC §3.2's match: its line, else its code's first). */
function enviadaOf(d: IeducarDivergencia, txt: TxtEnviado): PessoaEnviada | null {
  const codigo = d.codigo_na_escola.trim();
  const linha = d.linha.trim();
  if (/^\d{1,9}$/.test(linha)) {
    const pessoa = txt.porLinha.get(Number(linha));
    return pessoa !== undefined && pessoa.codigo === codigo ? pessoa : null;
  }
  return txt.porCodigo.get(codigo) ?? null;
}

/** Where a divergence came from, for the report and the audit's origin. */
function origemOf(d: IeducarDivergencia, pessoa: PessoaEnviada | null): string {
  const escola = pessoa !== null && pessoa.escola !== '' ? `escola ${pessoa.escola}` : d.referencia;
  return [escola, d.arquivo].filter((s) => s !== undefined && s !== '').join(' / ');
}

/** What the script does with one divergence: a change, or why not. `txt`: only its persons change. */
export function plan(d: IeducarDivergencia, txt?: TxtEnviado): Plan {
  if (!CORRECOES.includes(d.correcao)) return { motivo: MOTIVOS.semCorrecao };
  const campo = CAMPOS.find((c) => c === d.chave);
  // Filiation is `receita` (INEP records the Receita's mother's name itself): a mother's or
  // father's `pessoa` row is never reached from here.
  if (d.correcao !== 'arquivo' || campo === undefined) return { motivo: orientacao(d) };
  const code = IDPES.exec(d.codigo_na_escola.trim());
  if (!code) return { motivo: MOTIVOS.codigo };
  if (campo === 'inep' && d.enviado.trim() === '') return { motivo: MOTIVOS.semInep };
  const anterior = anteriorOf(campo, d.enviado);
  if (anterior === null) return { motivo: MOTIVOS.enviadoInvalido };
  const pessoa = txt === undefined ? null : enviadaOf(d, txt);
  if (txt !== undefined && (pessoa === null || anteriorOf(campo, pessoa[campo]) !== anterior)) return { motivo: MOTIVOS.foraDoTxt };
  const base = { idpes: Number(code[1]), campo, enviado: d.enviado, correto: d.correto, anterior, slug: null, origem: origemOf(d, pessoa) };
  switch (campo) {
    case 'nome': {
      const nome = nomeReceita(d.correto);
      const novoCmp = nome === null ? null : inepNome(nome);
      if (nome === null || novoCmp === null || novoCmp === '') return { motivo: MOTIVOS.naoNome };
      if ([...nome].length > MAX_NOME_IEDUCAR) return { motivo: MOTIVOS.nomeLongo };
      return {
        change: { ...base, novo: nomeComoDigitado(nome), novoMaiusculo: nome.toLocaleUpperCase('pt-BR'), novoCmp, slug: slugOf(nome) },
      };
    }
    case 'data_nascimento': {
      const correto = parseDataBr(d.correto);
      if (correto === null) return { motivo: orientacao(d) };
      return { change: { ...base, novo: iso(correto), novoMaiusculo: iso(correto), novoCmp: iso(correto) } };
    }
    case 'cpf': {
      const novo = inepCpf(d.correto);
      if (novo === null) return { motivo: orientacao(d) };
      return { change: { ...base, novo, novoMaiusculo: novo, novoCmp: novo } };
    }
    case 'inep': {
      // Updating the student's or teacher's existing INEP row is a fix; creating one would be
      // guessing which of the two the person is.
      const novo = inepId(d.correto);
      if (novo === null) return { motivo: orientacao(d) };
      return { change: { ...base, novo, novoMaiusculo: novo, novoCmp: novo } };
    }
  }
}
