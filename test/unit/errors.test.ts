// Every error the API can answer with is documented: each CensoError subclass, and each fixed
// message, appears in the error table of docs/integracao.md (fails when one is added without docs).
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import * as shared from '@censo/shared';

const doc = readFileSync(new URL('../../docs/integracao.md', import.meta.url), 'utf8');
const errorsAt = doc.indexOf('\n## Erros: status e mensagens\n');
const table = errorsAt < 0 ? '' : doc.slice(errorsAt, doc.indexOf('\n## ', errorsAt + 1));

const subclasses = Object.entries(shared).filter(
  ([name, value]) => typeof value === 'function' && value.prototype instanceof shared.CensoError && name !== 'CensoError',
);

describe('errors', () => {
  it('has subclasses to check', () => {
    expect(subclasses.length).toBeGreaterThanOrEqual(10);
  });

  it.each(subclasses.map(([name]) => name))('%s is in the error table of docs/integracao.md', (name) => {
    expect(table).toContain(name);
  });

  it('each fixed message is quoted in docs/integracao.md exactly', () => {
    const fixed = [
      new shared.InvalidCredentialError(),
      new shared.ApiNotConfiguredError(),
      new shared.FileTooLargeError(),
      new shared.QueueUnavailableError(),
      new shared.JobTimeoutError(),
      new shared.OverloadedError(),
      new shared.StorageUnavailableError(),
      new shared.RateLimitedError(),
      new shared.QueryNotConfiguredError(),
      new shared.DatabaseUnavailableError(),
      new shared.QueryTimeoutError(),
    ];
    for (const err of fixed) expect(table).toContain(`\`${err.message}\``);
  });

  it('uses the SPEC statuses and messages', () => {
    expect(new shared.InvalidCredentialError()).toMatchObject({ status: 401, message: 'Credencial inválida (header x-api-key).' });
    expect(new shared.ApiNotConfiguredError()).toMatchObject({ status: 503, message: 'API não configurada (defina a env API_KEY).' });
    expect(new shared.FileTooLargeError()).toMatchObject({ status: 413, message: 'Arquivo excede o limite de 25 MB.' });
    expect(new shared.QueueUnavailableError()).toMatchObject({ status: 503, message: 'Fila de processamento indisponível.' });
    expect(new shared.JobTimeoutError()).toMatchObject({ status: 504, message: 'Tempo esgotado ao processar o arquivo.' });
    expect(new shared.QueryNotConfiguredError()).toMatchObject({
      status: 503,
      message: 'Consulta não configurada (defina a env DATABASE_URL).',
    });
    expect(new shared.TxtMismatchError({ linha: '15' })).toMatchObject({
      status: 422,
      message: 'O arquivo txt não corresponde ao retorno (linha 15).',
    });
    expect(new shared.TxtMismatchError({ codigo: 'A1' })).toMatchObject({
      status: 422,
      message: 'O arquivo txt não corresponde ao retorno (código A1).',
    });
  });
});
