// The basico fixture: the same return as .json and .xlsx (title row, numeric Registro/Linha
// cells) must give the very same row stream.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readRows } from '../helpers/xlsx-builders.js';

const FIXTURES = join(import.meta.dirname, '..', 'fixtures');

for (const caso of ['basico', 'basico-utf8']) {
  describe(`fixture ${caso}`, () => {
    it('reads the same rows from retorno.json and retorno.xlsx, as written in the JSON', async () => {
      const source = JSON.parse(await readFile(join(FIXTURES, caso, 'retorno.json'), 'utf8')) as Record<string, string>[];
      const expected = source.map((r) => ({
        registro: r['Registro'],
        linha: r['Linha'],
        codigo: r['Código na Escola'],
        campo: r['Campo'],
        mensagem: r['Mensagem'],
        conteudo: r['Conteúdo'],
      }));
      const json = await readRows(join(FIXTURES, caso, 'retorno.json'), 'json');
      const xlsx = await readRows(join(FIXTURES, caso, 'retorno.xlsx'), 'xlsx');
      expect(json).toEqual(expected);
      expect(xlsx).toEqual(expected);
      expect(json).toHaveLength(13);
    });
  });
}
