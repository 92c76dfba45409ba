// The ledger's settings (SPEC §13, docs/configuracao.md), read beside the rest of the configuration.
import path from 'node:path';
import { ConfigError } from '@censo/shared';

export interface SafraConfig {
  /** SAFRA_DATABASE_URL, else DATABASE_URL; null: PGlite in `dir`. */
  readonly url: string | null;
  readonly dir: string;
  /** SAFRA_SEGREDO; without it, a secret kept in `dir` (embedded) or a setting error (a shared database). */
  readonly segredo: string | null;
  readonly retencaoMs: number;
  /** SAFRA_CALENDARIO: the operator's calendar file; null: the repository's (services/api/data/calendario-inep.json). */
  readonly calendario: string | null;
}

export const RETENCAO_DIAS_PADRAO = 400;

export function safraConfig(env: NodeJS.ProcessEnv, uploadDir: string, databaseUrl: string | null): SafraConfig {
  const url = env.SAFRA_DATABASE_URL?.trim() || databaseUrl;
  if (url !== null && !/^postgres(ql)?:\/\//.test(url)) throw new ConfigError('SAFRA_DATABASE_URL deve ser uma URL postgres://.');
  const diasRaw = env.SAFRA_RETENCAO_DIAS?.trim();
  const dias = diasRaw ? Number(diasRaw) : RETENCAO_DIAS_PADRAO;
  if (!Number.isInteger(dias) || dias < 1) throw new ConfigError('SAFRA_RETENCAO_DIAS deve ser um número inteiro de dias, 1 ou mais.');
  const segredo = env.SAFRA_SEGREDO?.trim() || null;
  if (segredo !== null && Buffer.byteLength(segredo) < 32) throw new ConfigError('SAFRA_SEGREDO deve ter ao menos 32 bytes.');
  return {
    url,
    // Beside UPLOAD_DIR, not in it: the uploads folder holds only what a task is working on.
    dir: path.resolve(env.SAFRA_DIR?.trim() || path.join(path.dirname(uploadDir), `${path.basename(uploadDir)}-safra`)),
    segredo,
    retencaoMs: dias * 86_400_000,
    calendario: env.SAFRA_CALENDARIO?.trim() || null,
  };
}
