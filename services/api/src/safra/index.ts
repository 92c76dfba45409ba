// Opening the season ledger at start (SPEC §13): PostgreSQL when a database is configured (a pool,
// shared by replicas), else PGlite in a folder beside the uploads; migrations applied either way.
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Logger, Storage } from '@censo/shared';
import { openingDb, pgDb, pgliteDb, type SafraDb } from './db.js';
import { Impressoes } from './impressao.js';
import { SafraLedger } from './ledger.js';
import { migrate } from './migrations.js';
import { RegistroSafra } from './registro.js';
import type { SafraConfig } from './config.js';
import { CALENDARIO_PADRAO, loadCalendario, type Calendario } from './calendario.js';

export { safraConfig, type SafraConfig } from './config.js';
export { SafraLedger } from './ledger.js';
export { compararComSafra } from './comparacao.js';

export interface Safra {
  readonly ledger: SafraLedger;
  /** INEP's deadlines by year (SAFRA_CALENDARIO or the repository's file). */
  readonly calendario: Calendario;
  /** The task domain's port over this ledger, reading results from `storage`. */
  registro(storage: Storage): RegistroSafra;
  /** False while an embedded ledger has not been needed yet (no folder opened, nothing in it to count or sweep). */
  aberto(): boolean;
  /** Removes rows older than the retention; how many files' rows went. */
  varrer(now: number): Promise<number>;
  close(): Promise<void>;
}

/** The embedded secret: made once, kept beside the ledger (0600), so fingerprints match across restarts. */
async function embeddedSecret(dir: string): Promise<string> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const file = path.join(dir, 'segredo');
  try {
    return (await readFile(file, 'utf8')).trim();
  } catch {
    const made = randomBytes(32).toString('base64url');
    await writeFile(file, `${made}\n`, { mode: 0o600, flag: 'wx' }).catch(() => {});
    return (await readFile(file, 'utf8')).trim();
  }
}

/**
 * The ledger, or null when it cannot be kept safely, logged: a shared database with no
 * SAFRA_SEGREDO (replicas would fingerprint with different secrets), or queue mode with no
 * database (`embedded: false`: each replica's PGlite would hold a part of the season).
 */
export async function openSafra(config: SafraConfig, logger: Logger, options: { readonly embedded?: boolean } = {}): Promise<Safra | null> {
  // A broken calendar is a setting error: it stops the start, whatever the database.
  const calendario = await loadCalendario(config.calendario ?? CALENDARIO_PADRAO);
  // PGlite is one process's database: replicas on a queue (Redis) would each keep a part of the season.
  if (config.url === null && options.embedded === false) {
    logger.warn(
      'safra: no SAFRA_DATABASE_URL or DATABASE_URL with Redis set; the season ledger is off (replicas need one shared database)',
    );
    return null;
  }
  if (config.url !== null && config.segredo === null) {
    logger.warn('safra: SAFRA_SEGREDO is not set; the season ledger is off (a shared database needs one secret for every replica)');
    return null;
  }
  if (config.url === null) {
    // Embedded: PGlite opens when first used, or now in the background when a season is already
    // in its folder; the start waits for neither. The secret is read when the ledger opens.
    let segredo = config.segredo;
    const eager = await stat(path.join(config.dir, 'PG_VERSION')).then(
      () => true,
      () => false,
    );
    const db = openingDb(
      'pglite',
      async () => {
        segredo ??= await embeddedSecret(config.dir);
        impressoes.segredo(segredo);
        const opened = await pgliteDb(config.dir);
        try {
          logger.info({ safra: opened.kind, migracoes: await migrate(opened) }, 'safra: season ledger open');
          return opened;
        } catch (err) {
          logger.error({ err }, 'safra: could not open the season ledger');
          await opened.close().catch(() => {});
          throw err;
        }
      },
      eager,
    );
    const impressoes = new Impressoes(null);
    return ledgerOver(db, impressoes, config, logger, calendario, db.aberto);
  }
  const db = await pgDb(config.url);
  try {
    const applied = await migrate(db);
    logger.info({ safra: db.kind, migracoes: applied }, 'safra: season ledger open');
    return ledgerOver(db, new Impressoes(config.segredo!), config, logger, calendario, () => true);
  } catch (err) {
    await db.close().catch(() => {});
    throw err;
  }
}

function ledgerOver(
  db: SafraDb,
  impressoes: Impressoes,
  config: SafraConfig,
  logger: Logger,
  calendario: Calendario,
  aberto: () => boolean,
): Safra {
  const ledger = new SafraLedger(db, impressoes);
  return {
    ledger,
    aberto,
    calendario,
    registro: (storage) => new RegistroSafra(ledger, storage, logger.child({ component: 'safra' })),
    varrer: (now) => ledger.varrer(now - config.retencaoMs),
    close: () => db.close(),
  };
}
