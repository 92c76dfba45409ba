// The ledger's versioned migrations, run at start by every process that opens it. A numbered list
// of SQL texts and a table `safra.migracoes` of those applied, all under one transaction that holds
// an advisory lock: replicas starting together apply each migration once, and a failed migration
// leaves nothing half-done. Not a migration library: the well-kept ones (node-pg-migrate, Knex,
// Umzug with a pg adapter) drive `pg` clients and do not run on PGlite, and the ledger's whole
// point is the same SQL on both; this runner is the dozen lines they would cost us.
import type { Executor, SafraDb } from './db.js';

/** Any constant the ledger alone uses as an advisory lock key ('safra' in ASCII). */
const LOCK_KEY = 0x7361_6672_61;

export interface Migracao {
  readonly versao: number;
  readonly nome: string;
  readonly sql: string;
}

export const MIGRACOES: readonly Migracao[] = [
  {
    versao: 1,
    nome: 'rodadas e divergencias',
    sql: `
      -- One row per task end: a school's file in a round (a batch). No person in clear: counts, and
      -- per divergence keyed fingerprints (HMAC-SHA-256, SAFRA_SEGREDO).
      CREATE TABLE safra.arquivos (
        tarefa text PRIMARY KEY,
        lote text NOT NULL,
        -- The batch's owner as the store keys it (a hash of the principal, never an e-mail or sub).
        dono text NOT NULL,
        ano integer NOT NULL,
        lote_criado_em timestamptz NOT NULL,
        -- The school: its INEP code when the file carries it (escola_origem 'inep'), else its referencia.
        escola text NOT NULL,
        escola_origem text NOT NULL CHECK (escola_origem IN ('inep', 'referencia')),
        referencia text NOT NULL,
        falhou boolean NOT NULL,
        erro text,
        divergencias integer NOT NULL,
        -- {"chave": {...}, "campo": {...}, "correcao": {...}}: counts only.
        contagens jsonb NOT NULL,
        concluida_em timestamptz NOT NULL,
        registrada_em timestamptz NOT NULL DEFAULT now()
      );
      CREATE INDEX arquivos_dono_ano ON safra.arquivos (dono, ano, lote_criado_em);
      CREATE INDEX arquivos_lote ON safra.arquivos (lote);
      CREATE INDEX arquivos_concluida_em ON safra.arquivos (concluida_em);
      CREATE TABLE safra.divergencias (
        tarefa text NOT NULL REFERENCES safra.arquivos (tarefa) ON DELETE CASCADE,
        lote text NOT NULL,
        escola text NOT NULL,
        -- HMAC over (escola, codigo_na_escola, chave or campo): the comparison's key (SPEC §10).
        par text NOT NULL,
        -- HMAC over the same and the Receita's value: the same divergence, not only the same field.
        impressao text NOT NULL,
        chave text,
        campo text NOT NULL,
        correcao text,
        PRIMARY KEY (tarefa, par)
      );
      CREATE INDEX divergencias_lote_escola ON safra.divergencias (lote, escola);
    `,
  },
  {
    versao: 2,
    nome: 'divergencias sem impressao e sem chave estrangeira',
    sql: `
      -- Issue 54's bench: with 745 divergences a file, the ledger cost more than the whole intake.
      -- The fingerprint with the Receita's value was written and never read (data kept without a
      -- use, and a second HMAC per divergence); the foreign key ran a check per divergence row, and
      -- the index by batch and school was one more to update per row.
      -- The ledger deletes a file's divergences itself (apagarLote, varrer), in one transaction.
      ALTER TABLE safra.divergencias DROP COLUMN impressao;
      ALTER TABLE safra.divergencias DROP CONSTRAINT divergencias_tarefa_fkey;
      -- Every read reaches a file's divergences by its task (the primary key's first column).
      DROP INDEX safra.divergencias_lote_escola;
    `,
  },
];

/** Applies every migration not yet applied, in order, once across every process. */
export async function migrate(db: SafraDb, migracoes: readonly Migracao[] = MIGRACOES): Promise<number[]> {
  return db.transaction(async (tx: Executor) => {
    await tx.query('SELECT pg_advisory_xact_lock($1)', [LOCK_KEY]);
    await tx.query('CREATE SCHEMA IF NOT EXISTS safra');
    await tx.query(
      'CREATE TABLE IF NOT EXISTS safra.migracoes (versao integer PRIMARY KEY, nome text NOT NULL, aplicada_em timestamptz NOT NULL DEFAULT now())',
    );
    const done = new Set((await tx.query<{ versao: number }>('SELECT versao FROM safra.migracoes')).map((row) => Number(row.versao)));
    const applied: number[] = [];
    for (const migracao of [...migracoes].sort((a, b) => a.versao - b.versao)) {
      if (done.has(migracao.versao)) continue;
      await tx.exec(migracao.sql);
      await tx.query('INSERT INTO safra.migracoes (versao, nome) VALUES ($1, $2)', [migracao.versao, migracao.nome]);
      applied.push(migracao.versao);
    }
    return applied;
  });
}
