// Opening the season ledger at start (SPEC §13): PostgreSQL when a database is configured (a pool,
// shared by replicas), else PGlite in a folder beside the uploads; migrations applied either way.
import { randomBytes } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Logger, Storage } from '@censo/shared';
import { pgDb, pgliteDb } from './db.js';
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
  /** Removes rows older than the retention; how many files' rows went. */
  varrer(now: number): Promise<number>;
  close(): Promise<void>;
}

/** The embedded secret: made once, kept beside the ledger (0600), so fingerprints match across restarts. */
async function embeddedSecret(dir: string): Promise<string> {
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
  const db = config.url !== null ? await pgDb(config.url) : await pgliteDb(config.dir);
  try {
    const applied = await migrate(db);
    const segredo = config.segredo ?? (await embeddedSecret(config.dir));
    const ledger = new SafraLedger(db, new Impressoes(segredo));
    logger.info({ safra: db.kind, migracoes: applied }, 'safra: season ledger open');
    return {
      ledger,
      calendario,
      registro: (storage) => new RegistroSafra(ledger, storage, logger.child({ component: 'safra' })),
      varrer: (now) => ledger.varrer(now - config.retencaoMs),
      close: () => db.close(),
    };
  } catch (err) {
    await db.close().catch(() => {});
    throw err;
  }
}
