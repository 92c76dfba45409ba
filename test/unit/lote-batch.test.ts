// `censo lote`'s batches (core/lote.ts) against the path they replaced: each file's divergences
// written by runJob as JSON, parsed back, then formatted by the process that asked. The text a
// batch hands over for a file must be exactly what that path gave, in every format, with a file
// that fails in the middle of a batch costing only itself.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  csvLine,
  DIVERGENCIAS_PLANILHA,
  loteCells,
  loteJsonItem,
  runJob,
  runLoteBatch,
  type Divergencia,
  type LoteBatchFile,
  type LoteFormat,
} from '@censo/shared';
import { fixtureCases } from '../helpers/fixtures.js';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'censo-lote-batch-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** What the old path wrote for one file: runJob's JSON answer, parsed, formatted for the batch. */
async function previousText(file: LoteBatchFile, format: LoteFormat): Promise<string | null> {
  const resultPath = path.join(dir, 'previous.json');
  const result = await runJob({ kind: 'divergencias', retorno: file, format: 'json', resultPath });
  if (!result.ok) return null;
  const { divergencias } = JSON.parse(await readFile(resultPath, 'utf8')) as { divergencias: Divergencia[] };
  if (format === 'csv') return divergencias.map((d) => csvLine(loteCells(file.name, d))).join('');
  if (format === 'json') return divergencias.map((d) => loteJsonItem(file.name, d)).join(',');
  // A workbook's rows are in words (SPEC §3.5, session 4): the path, then the divergence's cells.
  return divergencias.length === 0 ? '' : JSON.stringify(divergencias.map((d) => [file.name, ...DIVERGENCIAS_PLANILHA.cells(d)]));
}

describe('runLoteBatch', () => {
  it.each(['csv', 'json', 'xlsx'] as const)(
    'every fixture return in one batch (%s): each range is the previous path’s text',
    async (format) => {
      const broken = path.join(dir, 'quebrado.json');
      await writeFile(broken, '[{"Registro": "30",');
      const files: LoteBatchFile[] = fixtureCases().flatMap((c) => [
        { name: `${c.name}/retorno.json`, path: c.retorno.json, format: 'json' as const },
        { name: `${c.name}/retorno.xlsx`, path: c.retorno.xlsx, format: 'xlsx' as const },
      ]);
      // A file that fails, in the middle of the batch.
      files.splice(3, 0, { name: 'quebrado.json', path: broken, format: 'json' });
      const resultPath = path.join(dir, `batch.${format}`);
      const outcomes = await runLoteBatch({ files, format, resultPath });
      const bytes = await readFile(resultPath);
      expect(outcomes).toHaveLength(files.length);
      let compared = 0;
      for (const [i, file] of files.entries()) {
        const outcome = outcomes[i]!;
        const expected = await previousText(file, format);
        if (expected === null) {
          expect(outcome.ok, file.name).toBe(false);
          continue;
        }
        expect(outcome.ok, file.name).toBe(true);
        if (!outcome.ok) continue;
        expect(bytes.toString('utf8', outcome.start, outcome.end), file.name).toBe(expected);
        compared++;
      }
      expect(outcomes[3]).toEqual({ ok: false, erro: expect.stringMatching(/^Arquivo retorno ilegível: /) as unknown });
      expect(compared).toBe(files.length - 1);
    },
  );
});
