// The fix where the data lives (issue 46): a PostgreSQL script that writes the Receita Federal's
// values into i-Educar, the school system whose census export keys record 30 by
// `cadastro.fisica.idpes` (field 3, `codigo_na_escola`). Facts from portabilis/i-educar
// (EducacensoRepository's record-30 sources, the cadastro/modules migrations, the audit trigger):
// see docs/ieducar.md.
//
// Only what the corrected file fixes is written (`correcao` = `arquivo`, fields 4–7); everything
// else is listed in a comment with who must act (`orientacao`). A row is changed only while it
// still holds the value sent to the census: one changed since is left alone and reported, and a
// row already holding the Receita's value is not written again, so a second run changes nothing
// and leaves no audit row. The output has no date: the same divergences give the same script.
import { parseDataBr } from '../dates.js';
import { inepCpf, inepId, inepNome } from '../censo/inep-values.js';
import { CORRECOES, orientacao } from '../reimportacao/correcao.js';
import type { Chave, Divergencia } from '../types.js';
import { slugOf, sqlComment, sqlLiteral, sqlNomeCenso, sqlSlug } from './sql.js';

export { slugOf, sqlLiteral, sqlNomeCenso } from './sql.js';

/** One divergence; a batch's carries the school's `referencia` and the return's file name. */
export type IeducarDivergencia = Divergencia & { readonly referencia?: string; readonly arquivo?: string };

export interface IeducarScriptOptions {
  /** `user_name` of i-Educar's audit context (`ieducar_audit.context`): who the change is on record as. */
  readonly userName: string;
  /** `user_id` of the audit context; i-Educar's own data fixes use 0. */
  readonly userId?: number;
  /** `origin` of the audit context: where the change came from (i-Educar writes the request URL). */
  readonly origin: string;
}

/** The line after which the preview ends: `sed '/^-- FIM DA PRÉVIA/q'` keeps the preview alone. */
export const IEDUCAR_PREVIEW_END = '-- FIM DA PRÉVIA';

/** The record-30 fields i-Educar holds in a column of its own and the corrected file rewrites. */
type Campo = Extract<Chave, 'nome' | 'data_nascimento' | 'cpf' | 'inep'>;
const CAMPOS: readonly Campo[] = ['nome', 'data_nascimento', 'cpf', 'inep'];

/** i-Educar's `pessoa.nome` is varchar(150). */
const MAX_NOME_IEDUCAR = 150;
/** `pessoa.idpes` is numeric(8,0). */
const IDPES = /^0*(\d{1,8})$/;

interface Change {
  readonly idpes: number;
  readonly campo: Campo;
  /** As sent and as the Receita has it, for people to read. */
  readonly enviado: string;
  readonly correto: string;
  /** The sent value as the script compares it with i-Educar's (see CURRENT). */
  readonly anterior: string;
  /** The value written, and as compared. */
  readonly novo: string;
  readonly novoCmp: string;
  readonly slug: string | null;
  readonly origens: string[];
  /** Kept to list them if another divergence of the person contradicts them. */
  readonly divergencias: IeducarDivergencia[];
}

type Plan = { readonly change: Omit<Change, 'origens' | 'divergencias'> } | { readonly motivo: string };

const MOTIVOS = {
  semCorrecao: 'Divergência sem classificação (correcao): gere as divergências de novo com esta versão do censo-api.',
  codigo:
    'O código na escola (campo 3 do registro 30) não é um idpes do i-Educar (um número de até 8 dígitos): corrija no sistema da escola.',
  semInep: 'O envio não tinha código INEP: cadastre-o na ficha do aluno ou do servidor no i-Educar.',
  enviadoInvalido: 'O valor enviado não é um que o i-Educar guarde neste campo: confira e corrija no i-Educar.',
  nomeLongo: `O nome da Receita Federal passa de ${MAX_NOME_IEDUCAR} caracteres, o limite do i-Educar: corrija no i-Educar.`,
  conflito:
    'A mesma pessoa tem valores diferentes da Receita Federal para este dado em retornos diferentes: confira e corrija no i-Educar.',
} as const;

const iso = (dmy: string) => `${dmy.slice(6)}-${dmy.slice(3, 5)}-${dmy.slice(0, 2)}`;

/** A value as written in i-Educar: no control characters, single spaces. */
const clean = (value: string) =>
  value
    // eslint-disable-next-line no-control-regex
    .replace(/[\u0000-\u001f\u007f]/g, ' ')
    .replace(/\s+/g, ' ')
    .trim();

/** The sent CPF as i-Educar's numeric(11,0) exports it: 11 digits, `''` for none (NULL or 0). */
function cpfEnviado(value: string): string | null {
  const digits = value.replace(/[\s.\-/]/g, '');
  if (digits === '') return '';
  if (!/^\d{1,11}$/.test(digits)) return null;
  const padded = digits.padStart(11, '0');
  return padded === '00000000000' ? '' : padded;
}

/** What the script does with one divergence: a change, or why not. */
function plan(d: IeducarDivergencia): Plan {
  if (!CORRECOES.includes(d.correcao)) return { motivo: MOTIVOS.semCorrecao };
  const campo = CAMPOS.find((c) => c === d.chave);
  // Filiation is `receita` (INEP records the Receita's mother's name itself): a mother's or
  // father's `pessoa` row is never reached from here.
  if (d.correcao !== 'arquivo' || campo === undefined) return { motivo: orientacao(d) };
  const code = IDPES.exec(d.codigo_na_escola.trim());
  if (!code) return { motivo: MOTIVOS.codigo };
  const base = { idpes: Number(code[1]), campo, enviado: d.enviado, correto: d.correto, slug: null };
  switch (campo) {
    case 'nome': {
      const novo = clean(d.correto);
      const novoCmp = inepNome(novo);
      if (novoCmp === null) return { motivo: orientacao(d) };
      if ([...novo].length > MAX_NOME_IEDUCAR) return { motivo: MOTIVOS.nomeLongo };
      return { change: { ...base, anterior: inepNome(d.enviado) ?? '', novo, novoCmp, slug: slugOf(novo) } };
    }
    case 'data_nascimento': {
      const correto = parseDataBr(d.correto);
      if (correto === null) return { motivo: orientacao(d) };
      const sent = d.enviado.trim() === '' ? '' : parseDataBr(d.enviado);
      if (sent === null) return { motivo: MOTIVOS.enviadoInvalido };
      return { change: { ...base, anterior: sent === '' ? '' : iso(sent), novo: iso(correto), novoCmp: iso(correto) } };
    }
    case 'cpf': {
      const novo = inepCpf(d.correto);
      if (novo === null) return { motivo: orientacao(d) };
      const anterior = cpfEnviado(d.enviado);
      if (anterior === null) return { motivo: MOTIVOS.enviadoInvalido };
      return { change: { ...base, anterior, novo, novoCmp: novo } };
    }
    case 'inep': {
      const novo = inepId(d.correto);
      if (novo === null) return { motivo: orientacao(d) };
      // Updating the student's or teacher's existing INEP row is a fix; creating one would be
      // guessing which of the two the person is.
      if (d.enviado.trim() === '') return { motivo: MOTIVOS.semInep };
      const anterior = inepId(d.enviado);
      if (anterior === null) return { motivo: MOTIVOS.enviadoInvalido };
      return { change: { ...base, anterior, novo, novoCmp: novo } };
    }
  }
}

const origemOf = (d: IeducarDivergencia) => [d.referencia, d.arquivo].filter((s) => s !== undefined && s !== '').join(' / ');

function skippedLine(d: IeducarDivergencia, motivo: string): string {
  const origem = origemOf(d);
  const where = [
    origem === '' ? null : `[${origem}]`,
    `código ${JSON.stringify(d.codigo_na_escola)}`,
    d.linha === '' ? null : `linha ${d.linha}`,
  ]
    .filter((s) => s !== null)
    .join(' ');
  return `--   ${sqlComment(`${where}, ${d.campo}: enviado ${JSON.stringify(d.enviado)}, Receita Federal ${JSON.stringify(d.correto)}. ${motivo}`)}\n`;
}

// ------------------------------------------------------------------------------- the SQL

/** i-Educar's current value of each field, as the script compares it (`p` pessoa, `f` fisica). */
const CURRENT: Readonly<Record<Exclude<Campo, 'inep'>, string>> = {
  nome: sqlNomeCenso('p.nome'),
  data_nascimento: "COALESCE(to_char(f.data_nasc, 'YYYY-MM-DD'), '')",
  // numeric(11,0): the export pads it to 11 digits and writes 0 as nothing.
  cpf: "COALESCE(NULLIF(lpad(f.cpf::text, 11, '0'), '00000000000'), '')",
};

/**
 * The person's INEP ids as record 30's field 4 takes them: a student's through
 * `aluno.ref_idpes` → `cod_aluno` (not idpes), a teacher's by `cod_servidor` = idpes.
 */
const INEP_CODES = `(SELECT lpad(e.cod_aluno_inep::text, 12, '0') AS codigo
             FROM pmieducar.aluno AS al JOIN modules.educacenso_cod_aluno AS e ON e.cod_aluno = al.cod_aluno
            WHERE al.ref_idpes = c.idpes
           UNION ALL
           SELECT lpad(d.cod_docente_inep::text, 12, '0') FROM modules.educacenso_cod_docente AS d WHERE d.cod_servidor = c.idpes)`;

const SITUACAO = {
  aplicar: 'aplicar',
  aplicado: 'aplicado',
  jaCorrigido: 'já corrigido',
  alterado: 'alterado desde o envio',
  naoEncontrada: 'pessoa não encontrada',
} as const;

const COLUMNS = 'n, idpes, campo, enviado, correto, anterior, novo, novo_cmp, slug, origem';

/** Each change with i-Educar's value now and what the script does with it; `source` is aliased `c`. */
function situacoes(source: string): string {
  return `SELECT c.n, c.idpes, c.campo, a.valor AS valor_atual, c.enviado, c.correto, c.origem,
         CASE WHEN p.idpes IS NULL OR f.idpes IS NULL THEN '${SITUACAO.naoEncontrada}'
              WHEN c.novo_cmp = ANY (a.comparaveis) THEN '${SITUACAO.jaCorrigido}'
              WHEN c.anterior = ANY (a.comparaveis) THEN '${SITUACAO.aplicar}'
              ELSE '${SITUACAO.alterado}' END AS situacao
    FROM ${source}
    LEFT JOIN cadastro.pessoa AS p ON p.idpes = c.idpes
    LEFT JOIN cadastro.fisica AS f ON f.idpes = c.idpes
   CROSS JOIN LATERAL (
         SELECT CASE c.campo
                  WHEN 'nome' THEN p.nome::text
                  WHEN 'data_nascimento' THEN to_char(f.data_nasc, 'DD/MM/YYYY')
                  WHEN 'cpf' THEN lpad(f.cpf::text, 11, '0')
                  ELSE (SELECT string_agg(i.codigo, ', ' ORDER BY i.codigo) FROM ${INEP_CODES} AS i)
                END AS valor,
                CASE c.campo
                  WHEN 'nome' THEN ARRAY[${CURRENT.nome}]
                  WHEN 'data_nascimento' THEN ARRAY[${CURRENT.data_nascimento}]
                  WHEN 'cpf' THEN ARRAY[${CURRENT.cpf}]
                  ELSE ARRAY(SELECT i.codigo FROM ${INEP_CODES} AS i)
                END AS comparaveis
         ) AS a`;
}

function valuesRows(changes: readonly Change[]): string {
  const lit = sqlLiteral;
  return changes
    .map(
      (c, i) =>
        `  (${i + 1}, ${c.idpes}, ${lit(c.campo)}, ${lit(c.enviado)}, ${lit(c.correto)}, ${lit(c.anterior)}, ${lit(c.novo)}, ${lit(c.novoCmp)}, ${c.slug === null ? 'NULL' : lit(c.slug)}, ${lit(c.origens.join(', '))})`,
    )
    .join(',\n');
}

/** An UPDATE of `target` whose rows mark their change `aplicado` (a data-modifying CTE). */
const applied = (...updates: string[]) =>
  `WITH ${updates.map((u, i) => `feito${i} AS (\n${u}\n  RETURNING c.n\n)`).join(',\n')}
UPDATE censo_correcao SET situacao = '${SITUACAO.aplicado}'
 WHERE n IN (${updates.map((_, i) => `SELECT n FROM feito${i}`).join(' UNION ')});\n`;

const onlyStill = (campo: Campo) => `c.campo = '${campo}' AND c.situacao = '${SITUACAO.aplicar}'`;

const HEADER = `-- Correções do Censo Escolar (registro 30) no i-Educar.
-- Gerado pelo censo-api a partir das divergências com a Receita Federal. Sem data de geração:
-- as mesmas divergências geram sempre o mesmo script.
--
-- Um script por banco do i-Educar: o código na escola (campo 3) é o idpes da pessoa
-- (cadastro.fisica.idpes) só no banco que gerou o arquivo enviado ao Censo.
--
-- Como usar:
--   1. Prévia, só leitura (nada é gravado): rode a parte 1 sozinha,
--        sed '/^${IEDUCAR_PREVIEW_END}/q' correcoes-ieducar.sql | psql -v ON_ERROR_STOP=1 -d <banco>
--      Ela mostra, por pessoa, o valor no i-Educar agora, o enviado ao Censo, o da Receita
--      Federal e o que vai acontecer: aplicar, já corrigido, alterado desde o envio.
--   2. Correção: psql -v ON_ERROR_STOP=1 -d <banco> -f correcoes-ieducar.sql
--      Roda a prévia de novo e, numa só transação, as correções; termina com o relatório.
--   Rode cada vez numa sessão nova (psql -f faz isso): a auditoria do i-Educar lê o contexto
--   definido com SET LOCAL dentro da transação.
--
-- O que a correção altera, e só onde o cadastro ainda tem o valor enviado ao Censo:
--   cadastro.pessoa.nome (e o slug, que a busca por nome usa), cadastro.fisica.data_nasc e
--   cadastro.fisica.cpf, e o código INEP da pessoa (modules.educacenso_cod_aluno do aluno ou
--   modules.educacenso_cod_docente do servidor).
-- Um valor alterado no i-Educar desde o envio não é sobrescrito: aparece no relatório.
-- Um valor que já é o da Receita Federal não é gravado de novo: rodar o script duas vezes não
-- muda nada na segunda vez.
-- Nunca altera o cadastro da mãe ou do pai: o nome da filiação é o de outra pessoa
-- (fisica.idpes_mae / idpes_pai), o mesmo registro para todos os irmãos, e o INEP já grava na
-- filiação 1 o nome da Receita Federal; uma divergência de filiação é do cidadão, na Receita.
`;

/**
 * The script, as it is written: header, the divergences it does not apply (with why), the
 * preview, then the correction in one transaction. Read in one pass; only the changes are held.
 * The transaction is written only after every divergence was read, so an answer broken off
 * half-way holds no COMMIT.
 */
export async function* ieducarScript(
  divergencias: Iterable<IeducarDivergencia> | AsyncIterable<IeducarDivergencia>,
  options: IeducarScriptOptions,
): AsyncGenerator<string> {
  const userId = options.userId ?? 0;
  if (!Number.isSafeInteger(userId)) throw new TypeError('userId must be an integer');
  yield HEADER;
  yield '--\n-- Divergências que o script não aplica, e quem corrige:\n';

  const changes = new Map<string, Change>();
  /** The Receita's value (as compared) of each person and field planned so far. */
  const planned = new Map<string, string>();
  /** Person and field with two different Receita values: neither is written. */
  const conflicts = new Map<string, IeducarDivergencia[]>();
  let skipped = 0;
  for await (const d of divergencias) {
    const step = plan(d);
    if ('motivo' in step) {
      skipped++;
      yield skippedLine(d, step.motivo);
      continue;
    }
    const { change } = step;
    const person = `${change.idpes}|${change.campo}`;
    const known = conflicts.get(person);
    if (known) {
      known.push(d);
      continue;
    }
    if (planned.has(person) && planned.get(person) !== change.novoCmp) {
      // Both out: which of two Receita values is the person's is not the script's to guess.
      const ds = [d];
      for (const [key, c] of changes) {
        if (`${c.idpes}|${c.campo}` !== person) continue;
        changes.delete(key);
        ds.unshift(...c.divergencias);
      }
      conflicts.set(person, ds);
      continue;
    }
    planned.set(person, change.novoCmp);
    // A teacher of several schools of one batch comes once per school: one change.
    const key = `${person}|${change.anterior}`;
    const same = changes.get(key);
    const origem = origemOf(d);
    if (same) {
      if (origem !== '' && !same.origens.includes(origem)) same.origens.push(origem);
      same.divergencias.push(d);
      continue;
    }
    changes.set(key, { ...change, origens: origem === '' ? [] : [origem], divergencias: [d] });
  }
  for (const ds of conflicts.values()) {
    for (const d of ds) yield skippedLine(d, MOTIVOS.conflito);
    skipped += ds.length;
  }
  if (skipped === 0) yield '--   (nenhuma)\n';
  yield `--\n-- Correções a conferir e aplicar: ${changes.size}. Divergências não aplicadas: ${skipped}.\n\n`;

  yield "SET client_encoding = 'UTF8';\n\n";
  yield '-- ========================= 1. PRÉVIA (só leitura) =========================\n';
  if (changes.size === 0) {
    yield "SELECT 'Nenhuma correção a aplicar no i-Educar.' AS aviso;\n";
    yield `${IEDUCAR_PREVIEW_END} ==========================================================\n`;
    return;
  }
  const list = [...changes.values()];
  yield `BEGIN READ ONLY;
SELECT idpes, campo AS dado, valor_atual AS "no i-Educar agora", enviado AS "enviado ao Censo",
       correto AS "Receita Federal", situacao AS "o que acontece", origem
  FROM (
  ${situacoes(`(VALUES\n${valuesRows(list)}\n) AS c (${COLUMNS})`)}
  ) AS s
 ORDER BY n;
ROLLBACK;
${IEDUCAR_PREVIEW_END} ==========================================================

-- ========================= 2. CORREÇÃO (uma transação) =========================
BEGIN;
-- O contexto da auditoria do i-Educar (public.ieducar_audit): vale só nesta transação.
SET LOCAL "audit.context" = ${sqlLiteral(JSON.stringify({ user_id: userId, user_name: options.userName, origin: options.origin }))};

CREATE TEMPORARY TABLE censo_correcao (
  n integer PRIMARY KEY, idpes integer NOT NULL, campo text NOT NULL, enviado text NOT NULL,
  correto text NOT NULL, anterior text NOT NULL, novo text NOT NULL, novo_cmp text NOT NULL,
  slug text, origem text NOT NULL, situacao text
) ON COMMIT DROP;
INSERT INTO censo_correcao (${COLUMNS}) VALUES
${valuesRows(list)};

-- O que fazer com cada uma, conforme o valor no i-Educar agora.
UPDATE censo_correcao AS t SET situacao = s.situacao
  FROM (
  ${situacoes('censo_correcao AS c')}
  ) AS s
 WHERE s.n = t.n;

-- Nome (registro 30, campo 6), comparado como o Censo escreve (maiúsculas, sem acentos).
${applied(`  UPDATE cadastro.pessoa AS p
     SET nome = c.novo,
         slug = COALESCE((SELECT ${sqlSlug('f.nome_social')} || ' '
                            FROM cadastro.fisica AS f WHERE f.idpes = p.idpes AND btrim(f.nome_social) <> ''), '') || c.slug,
         data_rev = now()
    FROM censo_correcao AS c
   WHERE ${onlyStill('nome')} AND p.idpes = c.idpes AND ${CURRENT.nome} = c.anterior`)}
-- Data de nascimento (campo 7).
${applied(`  UPDATE cadastro.fisica AS f SET data_nasc = c.novo::date
    FROM censo_correcao AS c
   WHERE ${onlyStill('data_nascimento')} AND f.idpes = c.idpes AND ${CURRENT.data_nascimento} = c.anterior`)}
-- CPF (campo 5): numeric(11,0), sem os zeros à esquerda.
${applied(`  UPDATE cadastro.fisica AS f SET cpf = c.novo::numeric
    FROM censo_correcao AS c
   WHERE ${onlyStill('cpf')} AND f.idpes = c.idpes AND ${CURRENT.cpf} = c.anterior`)}
-- Código INEP (campo 4): a linha do aluno ou do servidor que tem o código enviado.
${applied(
  `  UPDATE modules.educacenso_cod_aluno AS e SET cod_aluno_inep = c.novo::bigint, updated_at = now()
    FROM censo_correcao AS c, pmieducar.aluno AS al
   WHERE ${onlyStill('inep')} AND al.ref_idpes = c.idpes AND e.cod_aluno = al.cod_aluno
     AND lpad(e.cod_aluno_inep::text, 12, '0') = c.anterior`,
  `  UPDATE modules.educacenso_cod_docente AS e SET cod_docente_inep = c.novo::bigint, updated_at = now()
    FROM censo_correcao AS c
   WHERE ${onlyStill('inep')} AND e.cod_servidor = c.idpes AND lpad(e.cod_docente_inep::text, 12, '0') = c.anterior`,
)}
-- Mudou entre a conferência e a gravação (outra sessão gravou): não alterado.
UPDATE censo_correcao SET situacao = '${SITUACAO.alterado}' WHERE situacao = '${SITUACAO.aplicar}';

DO $censo$
DECLARE
  r record;
BEGIN
  FOR r IN SELECT * FROM censo_correcao WHERE situacao NOT IN ('${SITUACAO.aplicado}', '${SITUACAO.jaCorrigido}') ORDER BY n LOOP
    RAISE NOTICE 'Não alterado: idpes % (%): %. Enviado ao Censo: %; Receita Federal: %.', r.idpes, r.campo, r.situacao, r.enviado, r.correto;
  END LOOP;
  SELECT count(*) FILTER (WHERE situacao = '${SITUACAO.aplicado}') AS aplicadas,
         count(*) FILTER (WHERE situacao = '${SITUACAO.jaCorrigido}') AS ja_corrigidas,
         count(*) FILTER (WHERE situacao NOT IN ('${SITUACAO.aplicado}', '${SITUACAO.jaCorrigido}')) AS nao_alteradas
    INTO r FROM censo_correcao;
  RAISE NOTICE 'Correções aplicadas: %; já corrigidas: %; não alteradas: %.', r.aplicadas, r.ja_corrigidas, r.nao_alteradas;
END
$censo$;

-- Relatório: o que aconteceu com cada correção.
SELECT idpes, campo AS dado, enviado AS "enviado ao Censo", correto AS "Receita Federal", situacao AS resultado, origem
  FROM censo_correcao
 ORDER BY n;
COMMIT;
`;
}

/** The whole script as one string (a single return's: small). */
export async function ieducarScriptText(
  divergencias: Iterable<IeducarDivergencia> | AsyncIterable<IeducarDivergencia>,
  options: IeducarScriptOptions,
): Promise<string> {
  let text = '';
  for await (const chunk of ieducarScript(divergencias, options)) text += chunk;
  return text;
}
