// Strict validation of GET /api/query's parameters against the built-in declaration.
import { beforeAll, describe, expect, it } from 'vitest';
import { BadInputError } from '@censo/shared';
import { loadCatalog, type Catalog } from '../../services/api/dist/query/catalog.js';
import { encodeCursor } from '../../services/api/dist/query/cursor.js';
import { isCalendarDate, parseQueryRequest } from '../../services/api/dist/query/params.js';

const SECRET = 's';
let catalog: Catalog;
beforeAll(async () => {
  catalog = await loadCatalog(null);
});

const parse = (raw: Record<string, unknown>) => parseQueryRequest(catalog, raw, SECRET);

describe('parseQueryRequest', () => {
  it('lists the queries only when there is no parameter at all', () => {
    expect(parse({})).toEqual({ kind: 'list' });
    expect(() => parse({ format: 'json' })).toThrow(/Parâmetro query ausente \(consultas disponíveis: audits\)/);
  });

  it('returns normalised filters, the default limit and format', () => {
    const request = parse({ query: 'audits', user_id: '+007', action: 'update', inicio: '2024-01-01', fim: '2024-01-01' });
    expect(request).toMatchObject({ kind: 'run', limit: 1000, format: 'json', after: null });
    if (request.kind !== 'run') throw new Error('unreachable');
    expect(request.query.name).toBe('audits');
    expect([...request.filters]).toEqual([
      ['user_id', '7'],
      ['action', 'update'],
      ['inicio', '2024-01-01'],
      ['fim', '2024-01-01'],
    ]);
    expect(parse({ query: 'audits', limit: '1', format: 'json' })).toMatchObject({ limit: 1 });
    expect(parse({ query: 'audits', format: 'csv' })).toMatchObject({ format: 'csv' });
  });

  it('decodes a cursor issued for the same filters, whatever the limit', () => {
    const cursor = encodeCursor(SECRET, 'audits', new Map([['user_id', '7']]), ['41']);
    expect(parse({ query: 'audits', user_id: '7', limit: '10', cursor })).toMatchObject({ after: ['41'], limit: 10 });
    expect(() => parse({ query: 'audits', user_id: '8', cursor })).toThrow(/cursor não corresponde/);
  });

  it.each([
    [{ query: 'nada' }, 'Consulta desconhecida: nada.'],
    [{ query: ['audits', 'audits'] }, 'Parâmetro repetido: query.'],
    [{ query: 'audits', x: '1' }, 'Parâmetro desconhecido para a consulta audits: x.'],
    [{ query: 'audits', user_id: 'abc' }, 'Parâmetro user_id deve ser um número inteiro.'],
    [{ query: 'audits', user_id: '9223372036854775808' }, 'Parâmetro user_id deve ser um número inteiro.'],
    [{ query: 'audits', user_id: '1e3' }, 'Parâmetro user_id deve ser um número inteiro.'],
    [{ query: 'audits', action: '' }, 'Parâmetro action vazio.'],
    [{ query: 'audits', action: 'a\u0000b' }, 'Parâmetro action contém caractere inválido.'],
    [{ query: 'audits', inicio: '2024-02-30' }, 'Parâmetro inicio deve ser uma data válida no formato AAAA-MM-DD.'],
    [{ query: 'audits', fim: '2024-01-01T00:00' }, 'Parâmetro fim deve ser uma data válida no formato AAAA-MM-DD.'],
    [{ query: 'audits', inicio: '2024-01-02', fim: '2024-01-01' }, 'Parâmetro inicio não pode ser posterior a fim.'],
    [{ query: 'audits', limit: '01000' }, 'Parâmetro limit deve ser um inteiro de 1 a 1000.'],
    [{ query: 'audits', limit: '-1' }, 'Parâmetro limit deve ser um inteiro de 1 a 1000.'],
    [{ query: 'audits', format: 'CSV' }, 'Parâmetro format deve ser json ou csv.'],
    [{ query: 'audits', format: 'csv', limit: '5' }, 'Parâmetro limit não se aplica a format=csv.'],
    [{ query: 'audits', cursor: 'nope' }, 'Parâmetro cursor inválido.'],
  ])('%j → 400 %s', (raw, message) => {
    expect(() => parse(raw)).toThrow(BadInputError);
    expect(() => parse(raw)).toThrow(message);
  });
});

describe('isCalendarDate', () => {
  it.each([
    ['2024-02-29', true],
    ['2023-02-29', false],
    ['2000-02-29', true],
    ['1900-02-29', false],
    ['2024-12-31', true],
    ['2024-13-01', false],
    ['2024-00-10', false],
    ['2024-04-31', false],
    ['0000-01-01', false],
    ['0001-01-01', true],
    ['24-01-01', false],
    ['2024-1-1', false],
    [' 2024-01-01', false],
  ])('%s → %s', (value, expected) => {
    expect(isCalendarDate(value)).toBe(expected);
  });
});
