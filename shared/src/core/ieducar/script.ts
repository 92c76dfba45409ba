// The fix where the data lives (issue 46): PostgreSQL scripts that write the Receita Federal's
// values into i-Educar, the school system whose census export keys record 30 by
// `cadastro.fisica.idpes` (field 3, `codigo_na_escola`). Facts from portabilis/i-educar
// (EducacensoRepository's record-30 sources, the cadastro/modules migrations, the audit trigger):
// see docs/ieducar.md.
//
// Two files (issue 56): the preview, one read-only SELECT that any client runs (pgAdmin too, no
// psql command in it), and the correction, one transaction. Only what the corrected file fixes is
// written (`correcao` = `arquivo`, fields 4–7); everything else is listed in a comment with who
// must act. A row is changed only while it still holds the value sent to the census: one changed
// since is left alone and reported, and a row already holding the Receita's value is not written
// again, so a second run changes nothing and leaves no audit row. The output has no date: the same
// divergences give the same script.
//
// Memory (issue 59): the divergences are read twice, once for the list of what is skipped and once
// for the changes, and each is written as it is read; nothing is held between them. Which changes
// repeat (a teacher of several schools) or contradict each other (two Receita values for one
// person) is the database's to tell, on the rows it is given.
import { sqlComment, sqlLiteral, sqlNomeCenso, sqlOneLine, sqlShown, sqlSlug } from './sql.js';
import { plan, type Campo, type Change, type IeducarDivergencia } from './plan.js';
import type { TxtEnviado } from './txt.js';

export { slugOf, sqlLiteral, sqlNomeCenso, sqlShown } from './sql.js';
export { MOTIVOS as IEDUCAR_MOTIVOS, type IeducarDivergencia } from './plan.js';
export { nomeComoDigitado, nomeReceita } from './nome.js';
export { readTxtEnviado, type TxtEnviado } from './txt.js';

/** The two files: `previa` reads only; `correcao` writes, in one transaction. */
export type IeducarParte = 'previa' | 'correcao';
export const IEDUCAR_PARTES: readonly IeducarParte[] = ['previa', 'correcao'];

/** The divergences, read anew on each call (the script reads them twice and keeps neither pass). */
export type IeducarSource = () => Iterable<IeducarDivergencia> | AsyncIterable<IeducarDivergencia>;

export interface IeducarScriptOptions {
  /** `user_name` of i-Educar's audit context (`ieducar_audit.context`): who the change is on record as. */
  readonly userName: string;
  /** `user_id` of the audit context; i-Educar's own data fixes use 0. */
  readonly userId?: number;
  /** `origin` of the audit context: where the change came from; each change adds its school and return. */
  readonly origin: string;
  /** What the header names: the schools' INEP codes, the return's file name, the batch. */
  readonly escolas?: readonly string[];
  readonly retorno?: string;
  readonly lote?: string;
  /** The census txt sent with the return: when given, only its persons, with its values, change. */
  readonly txt?: TxtEnviado;
}

/** The file's name: the school, the return (or the batch) and the part, in characters any disk takes. */
export function ieducarFileName(parte: IeducarParte, options: Pick<IeducarScriptOptions, 'escolas' | 'retorno' | 'lote'>): string {
  const safe = (text: string) =>
    text
      .normalize('NFD')
      .replace(/[^A-Za-z0-9._-]+/g, '_')
      .replace(/^[._]+|_+$/g, '')
      .slice(0, 80);
  const escolas = options.escolas ?? [];
  const parts = [
    'ieducar',
    options.lote === undefined ? null : `lote-${options.lote}`,
    escolas.length === 1 ? escolas[0]! : escolas.length > 1 ? `${escolas.length}-escolas` : null,
    options.retorno === undefined ? null : options.retorno.replace(/\.[A-Za-z0-9]{1,5}$/, ''),
    parte,
  ];
  return `${parts
    .filter((p): p is string => p !== null && p !== '')
    .map(safe)
    .filter((p) => p !== '')
    .join('-')}.sql`;
}

function skippedLine(d: IeducarDivergencia, motivo: string): string {
  const origem = [d.referencia, d.arquivo].filter((s) => s !== undefined && s !== '').join(' / ');
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
  conflito: 'valores diferentes da Receita Federal',
} as const;

const COLUMNS = 'n, idpes, campo, enviado, correto, anterior, novo, novo_maiusculo, novo_cmp, slug, origem';

/** The rows with `conflito`: the same person and field with two Receita values (neither is written). */
const withConflito = (rows: string) =>
  `(SELECT v.*, min(v.novo_cmp) OVER w IS DISTINCT FROM max(v.novo_cmp) OVER w AS conflito
     FROM ${rows}
   WINDOW w AS (PARTITION BY v.idpes, v.campo)) AS c`;

/**
 * Each change with i-Educar's values now (on one line), the value it would write (a name in
 * capitals where i-Educar holds it in capitals, as typed otherwise) and what the script does.
 */
function situacoes(source: string): string {
  return `SELECT c.n, c.idpes, ${sqlOneLine('p.nome::text')} AS nome_atual, c.campo, ${sqlOneLine('a.valor')} AS valor_atual,
         c.enviado, c.correto, c.origem,
         CASE WHEN c.campo = 'nome' AND p.nome::text = upper(p.nome::text) THEN c.novo_maiusculo ELSE c.novo END AS gravar,
         CASE WHEN p.idpes IS NULL OR f.idpes IS NULL THEN '${SITUACAO.naoEncontrada}'
              WHEN c.conflito THEN '${SITUACAO.conflito}'
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

/** One change as a VALUES row: what people read goes on one line. */
function valuesRow(c: Change, n: number): string {
  const lit = sqlLiteral;
  return `  (${n}, ${c.idpes}, ${lit(c.campo)}, ${lit(sqlShown(c.enviado))}, ${lit(sqlShown(c.correto))}, ${lit(c.anterior)}, ${lit(c.novo)}, ${lit(c.novoMaiusculo)}, ${lit(c.novoCmp)}, ${c.slug === null ? 'NULL::text' : lit(c.slug)}, ${lit(sqlShown(c.origem))})`;
}

/** The changes of `source`, one VALUES row each, as they are read. */
async function* rowsOf(source: IeducarSource, txt: TxtEnviado | undefined): AsyncGenerator<string> {
  let n = 0;
  for await (const d of source()) {
    const step = plan(d, txt);
    if ('change' in step) yield `${n++ === 0 ? '' : ',\n'}${valuesRow(step.change, n)}`;
  }
}

function header(parte: IeducarParte, options: IeducarScriptOptions): string {
  const escolas = options.escolas ?? [];
  const origem = [
    escolas.length === 0 ? null : `-- ${escolas.length === 1 ? 'Escola' : 'Escolas'} (código INEP): ${sqlComment(escolas.join(', '))}\n`,
    options.retorno === undefined ? null : `-- Retorno do Censo: ${sqlComment(options.retorno)}\n`,
    options.lote === undefined
      ? null
      : `-- Lote ${sqlComment(options.lote)}: a escola e o retorno de cada correção estão na coluna "origem".\n`,
  ].join('');
  const what =
    parte === 'previa'
      ? `-- PRÉVIA, só leitura: este arquivo não grava nada. Rode-o (psql, pgAdmin, qualquer cliente)
-- e confira, por pessoa, o nome dela no i-Educar, o valor no i-Educar agora, o enviado ao Censo,
-- o da Receita Federal, o que seria gravado e o que vai acontecer: aplicar, já corrigido,
-- alterado desde o envio, pessoa não encontrada, valores diferentes da Receita Federal.
-- Se estiver certo, rode o arquivo da correção (o mesmo nome, terminado em -correcao.sql).
`
      : `-- CORREÇÃO: este arquivo GRAVA no banco do i-Educar, numa só transação. Rode antes a prévia
-- (o mesmo nome, terminado em -previa.sql) e confira o resultado; faça uma cópia de segurança.
--   psql -v ON_ERROR_STOP=1 -d <banco> -f <este arquivo>   (ou no pgAdmin, numa aba nova)
-- Ele confere tudo de novo e só grava onde o cadastro ainda tem o valor enviado ao Censo;
-- termina com o relatório. Rode cada vez numa sessão nova: a auditoria do i-Educar lê o
-- contexto definido dentro da transação.
`;
  return `-- Correções do Censo Escolar (registro 30) no i-Educar.
${origem}-- Gerado pelo censo-api a partir das divergências com a Receita Federal. Sem data de geração:
-- as mesmas divergências geram sempre o mesmo script.
--
${what}--
-- Um script por banco do i-Educar: o código na escola (campo 3) é o idpes da pessoa
-- (cadastro.fisica.idpes) só no banco que gerou o arquivo enviado ao Censo.${
    options.txt === undefined
      ? `
-- Sem o txt enviado ao Censo: confira na prévia, pela coluna "nome no i-Educar", que cada idpes
-- é a pessoa certa (docs/ieducar.md, "Quem pode gerar o script").`
      : `
-- Só pessoas do txt enviado com o retorno, com o código e o valor enviado que ele tem.`
  }
--
-- O que a correção altera, e só onde o cadastro ainda tem o valor enviado ao Censo:
--   cadastro.pessoa.nome (e o slug, que a busca por nome usa), cadastro.fisica.data_nasc e
--   cadastro.fisica.cpf, e o código INEP da pessoa (modules.educacenso_cod_aluno do aluno ou
--   modules.educacenso_cod_docente do servidor). O nome vem da Receita Federal em maiúsculas:
--   é gravado em maiúsculas onde o i-Educar guarda o nome em maiúsculas, e como se digita
--   (Maria da Silva) nos demais.
-- Um valor alterado no i-Educar desde o envio não é sobrescrito: aparece no relatório.
-- Um valor que já é o da Receita Federal não é gravado de novo: rodar o script duas vezes não
-- muda nada na segunda vez.
-- Nunca altera o cadastro da mãe ou do pai: o nome da filiação é o de outra pessoa
-- (fisica.idpes_mae / idpes_pai), o mesmo registro para todos os irmãos, e o INEP já grava na
-- filiação 1 o nome da Receita Federal; uma divergência de filiação é do cidadão, na Receita.
`;
}

/** The value written as people read it: a date as the census writes it (it is written in ISO, whatever the DateStyle). */
const GRAVAR_MOSTRADO = "CASE WHEN campo = 'data_nascimento' THEN to_char(gravar::date, 'DD/MM/YYYY') ELSE gravar END";

const PREVIEW_COLUMNS = `idpes, nome_atual AS "nome no i-Educar", campo AS dado, valor_atual AS "no i-Educar agora",
       enviado AS "enviado ao Censo", correto AS "Receita Federal", ${GRAVAR_MOSTRADO} AS "será gravado",
       situacao AS "o que acontece", origem`;

/** Where a file's VALUES rows go: the file's text around them is written before and after reading them. */
const ROWS = Symbol('rows');
type Piece = string | typeof ROWS;

function* preview(): Generator<Piece> {
  const [before, after] = situacoes(withConflito(`(VALUES\n\0\n) AS v (${COLUMNS})`)).split('\0');
  yield `BEGIN READ ONLY;
SELECT ${PREVIEW_COLUMNS}
  FROM (
  ${before}`;
  yield ROWS;
  yield `${after}
  ) AS s
 ORDER BY n;
ROLLBACK;
`;
}

const APPLY_LOOP = `-- Cada correção, com a escola e o retorno dela na origem da auditoria do i-Educar.
DO $censo$
DECLARE
  base jsonb := current_setting('audit.context')::jsonb;
  r record;
  feitas integer;
  mais integer;
BEGIN
  FOR r IN SELECT * FROM censo_correcao WHERE situacao = '${SITUACAO.aplicar}' ORDER BY n LOOP
    -- A pessoa listada por mais de uma escola: uma alteração só.
    IF EXISTS (SELECT 1 FROM censo_correcao AS o
                WHERE o.idpes = r.idpes AND o.campo = r.campo AND o.situacao = '${SITUACAO.aplicado}') THEN
      UPDATE censo_correcao SET situacao = '${SITUACAO.aplicado}' WHERE n = r.n;
      CONTINUE;
    END IF;
    PERFORM set_config('audit.context',
      jsonb_set(base, '{origin}', to_jsonb(concat_ws(': ', base->>'origin', NULLIF(r.origem, ''))))::text, true);
    mais := 0;
    IF r.campo = 'nome' THEN
      UPDATE cadastro.pessoa AS p
         SET nome = r.gravar,
             slug = COALESCE((SELECT ${sqlSlug('f.nome_social')} || ' '
                                FROM cadastro.fisica AS f WHERE f.idpes = p.idpes AND btrim(f.nome_social) <> ''), '') || r.slug,
             data_rev = now()
       WHERE p.idpes = r.idpes AND ${CURRENT.nome} = r.anterior;
      GET DIAGNOSTICS feitas = ROW_COUNT;
    ELSIF r.campo = 'data_nascimento' THEN
      UPDATE cadastro.fisica AS f SET data_nasc = r.gravar::date
       WHERE f.idpes = r.idpes AND ${CURRENT.data_nascimento} = r.anterior;
      GET DIAGNOSTICS feitas = ROW_COUNT;
    ELSIF r.campo = 'cpf' THEN
      -- numeric(11,0), sem os zeros à esquerda.
      UPDATE cadastro.fisica AS f SET cpf = r.gravar::numeric
       WHERE f.idpes = r.idpes AND ${CURRENT.cpf} = r.anterior;
      GET DIAGNOSTICS feitas = ROW_COUNT;
    ELSE
      -- Código INEP: a linha do aluno ou do servidor que tem o código enviado.
      UPDATE modules.educacenso_cod_aluno AS e SET cod_aluno_inep = r.gravar::bigint, updated_at = now()
        FROM pmieducar.aluno AS al
       WHERE al.ref_idpes = r.idpes AND e.cod_aluno = al.cod_aluno AND lpad(e.cod_aluno_inep::text, 12, '0') = r.anterior;
      GET DIAGNOSTICS feitas = ROW_COUNT;
      UPDATE modules.educacenso_cod_docente AS e SET cod_docente_inep = r.gravar::bigint, updated_at = now()
       WHERE e.cod_servidor = r.idpes AND lpad(e.cod_docente_inep::text, 12, '0') = r.anterior;
      GET DIAGNOSTICS mais = ROW_COUNT;
    END IF;
    -- Nenhuma linha: mudou entre a conferência e a gravação (outra sessão gravou).
    UPDATE censo_correcao
       SET situacao = CASE WHEN feitas + mais > 0 THEN '${SITUACAO.aplicado}' ELSE '${SITUACAO.alterado}' END
     WHERE n = r.n;
  END LOOP;
  PERFORM set_config('audit.context', base::text, true);
END
$censo$;
`;

const REPORT = `DO $censo$
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
SELECT idpes, nome_atual AS "nome no i-Educar (antes)", campo AS dado, enviado AS "enviado ao Censo",
       correto AS "Receita Federal", ${GRAVAR_MOSTRADO} AS gravado, situacao AS resultado, origem
  FROM censo_correcao
 ORDER BY n;
COMMIT;
`;

function* correction(options: IeducarScriptOptions, userId: number): Generator<Piece> {
  yield `BEGIN;
-- O contexto da auditoria do i-Educar (public.ieducar_audit): vale só nesta transação.
SET LOCAL "audit.context" = ${sqlLiteral(JSON.stringify({ user_id: userId, user_name: options.userName, origin: options.origin }))};

CREATE TEMPORARY TABLE censo_correcao (
  n integer PRIMARY KEY, idpes integer NOT NULL, campo text NOT NULL, enviado text NOT NULL,
  correto text NOT NULL, anterior text NOT NULL, novo text NOT NULL, novo_maiusculo text NOT NULL,
  novo_cmp text NOT NULL, slug text, origem text NOT NULL,
  nome_atual text, gravar text, situacao text
) ON COMMIT DROP;
INSERT INTO censo_correcao (${COLUMNS}) VALUES
`;
  yield ROWS;
  yield `;

-- O que fazer com cada uma, conforme o valor no i-Educar agora.
UPDATE censo_correcao AS t SET situacao = s.situacao, gravar = s.gravar, nome_atual = s.nome_atual
  FROM (
  ${situacoes(withConflito('censo_correcao AS v'))}
  ) AS s
 WHERE s.n = t.n;

${APPLY_LOOP}
-- Uma linha que outra escola já corrigiu (a mesma pessoa, enviada com outro valor): já corrigido.
UPDATE censo_correcao AS t SET situacao = s.situacao
  FROM (
  ${situacoes(withConflito('censo_correcao AS v'))}
  ) AS s
 WHERE s.n = t.n AND t.situacao = '${SITUACAO.alterado}' AND s.situacao = '${SITUACAO.jaCorrigido}';

${REPORT}`;
}

/**
 * One of the two files, as it is written: header, the divergences it does not apply (with why),
 * then the preview's SELECT or the correction's transaction. `source` is read twice and nothing
 * of it is held; the transaction's COMMIT is its last line, so an answer broken off half-way
 * commits nothing.
 */
export async function* ieducarScript(parte: IeducarParte, source: IeducarSource, options: IeducarScriptOptions): AsyncGenerator<string> {
  const userId = options.userId ?? 0;
  if (!Number.isSafeInteger(userId)) throw new TypeError('userId must be an integer');
  const { txt } = options;
  yield header(parte, options);
  yield '--\n-- Divergências que o script não aplica, e quem corrige:\n';
  let skipped = 0;
  let changes = 0;
  for await (const d of source()) {
    const step = plan(d, txt);
    if ('change' in step) {
      changes++;
      continue;
    }
    skipped++;
    yield skippedLine(d, step.motivo);
  }
  if (skipped === 0) yield '--   (nenhuma)\n';
  yield `--\n-- Correções a conferir: ${changes}. Divergências não aplicadas: ${skipped}.\n\n`;
  yield "SET client_encoding = 'UTF8';\n\n";
  if (changes === 0) {
    yield "SELECT 'Nenhuma correção a aplicar no i-Educar.' AS aviso;\n";
    return;
  }
  for (const piece of parte === 'previa' ? preview() : correction(options, userId)) {
    if (piece === ROWS) yield* rowsOf(source, txt);
    else yield piece;
  }
}

/** One file as one string (a single return's: small). */
export async function ieducarScriptText(
  parte: IeducarParte,
  divergencias: Iterable<IeducarDivergencia> | IeducarSource,
  options: IeducarScriptOptions,
): Promise<string> {
  const source: IeducarSource = typeof divergencias === 'function' ? divergencias : () => divergencias;
  let text = '';
  for await (const chunk of ieducarScript(parte, source, options)) text += chunk;
  return text;
}
