// Keyed fingerprints (SPEC §13): a later round can tell the same divergence from a new one without
// the ledger holding who it is. HMAC-SHA-256 with the server's SAFRA_SEGREDO: without the secret a
// fingerprint cannot be matched against a guessed CPF or name (a plain hash of an 11-digit CPF can).
import { createHmac } from 'node:crypto';

/** The fields joined by a byte no field holds, so ('ab','c') and ('a','bc') differ. */
const joined = (parts: readonly string[]): string => parts.join('\u0000');

export class Impressoes {
  #segredo: Buffer | null = null;

  /** `null`: the secret is set later (an embedded ledger reads its own when it opens), before any use. */
  constructor(segredo: string | Buffer | null) {
    if (segredo !== null) this.segredo(segredo);
  }

  segredo(segredo: string | Buffer): void {
    this.#segredo = Buffer.isBuffer(segredo) ? segredo : Buffer.from(segredo, 'utf8');
  }

  #hmac(parts: readonly string[]): string {
    if (this.#segredo === null) throw new Error('safra: fingerprint before the ledger opened');
    return createHmac('sha256', this.#segredo).update(joined(parts), 'utf8').digest('base64url');
  }

  /** The comparison's key (SPEC §10): the school, the person and the field (`campo` when no `chave`). */
  par(escola: string, codigoNaEscola: string, chave: string | null, campo: string): string {
    return this.#hmac(['par', escola, codigoNaEscola, chave ?? `campo:${campo}`]);
  }
}
