// The readers release the file on every path: full read, a consumer that stops early, an
// abort, and an error. An xlsx of up to 1 MiB is read whole when it is opened (nothing stays open
// while its rows are read); a larger one, streamed, holds its file until the reader ends.
import { randomBytes } from 'node:crypto';
import { readdir } from 'node:fs/promises';
import { readRetorno } from '@censo/shared';
import { describe, expect, it } from 'vitest';
import { buildXlsx, HEADER, readError, textRow, workbookParts, writeTemp, zipParts } from '../helpers/xlsx-builders.js';

async function openFds(): Promise<number> {
  return (await readdir('/proc/self/fd')).length;
}

async function settle(): Promise<void> {
  // Closing a file descriptor completes on the thread pool.
  for (let i = 0; i < 5; i++) await new Promise((r) => setTimeout(r, 10));
}

async function files(): Promise<{ xlsx: string; json: string }> {
  const n = 5000;
  const rows = Array.from({ length: n }, (_, i) => textRow(i + 2, ['30', String(i), `P${i}`, 'Campo', 'Mensagem', 'a -- b'])).join('');
  // A part the reader never opens makes the file too large to be read whole.
  const xlsx = await zipParts({
    ...workbookParts({ sheets: [{ rows: textRow(1, [...HEADER]) + rows }, { rows: textRow(1, [...HEADER]) + rows }] }),
    'docProps/noise.bin': randomBytes(1200 * 1024),
  });
  const json = await writeTemp(
    'json',
    JSON.stringify(Array.from({ length: n }, (_, i) => ({ 'Código na Escola': `P${i}`, Campo: 'c', Mensagem: 'm' }))),
  );
  return { xlsx, json };
}

describe('reader lifecycle', () => {
  it('closes the file when the consumer stops early', async () => {
    const paths = await files();
    for (const format of ['xlsx', 'json'] as const) {
      const before = await openFds();
      let seen = 0;
      let during = 0;
      for await (const _row of readRetorno({ path: paths[format], format })) {
        if (++seen === 3) {
          during = await openFds();
          break;
        }
      }
      expect(during).toBeGreaterThan(before); // the measure sees the reader's file

      await settle();
      expect(seen).toBe(3);
      expect(await openFds()).toBe(before);
    }
  });

  it('stops with the abort reason when the signal fires, and closes the file', async () => {
    const paths = await files();
    for (const format of ['xlsx', 'json'] as const) {
      const before = await openFds();
      const controller = new AbortController();
      const reason = new Error('cancelado');
      let seen = 0;
      const run = (async () => {
        for await (const _row of readRetorno({ path: paths[format], format }, { signal: controller.signal })) {
          if (++seen === 1) controller.abort(reason);
        }
      })();
      await expect(run).rejects.toBe(reason);
      await settle();
      expect(await openFds()).toBe(before);
    }
  });

  it('holds no file open while a small xlsx is read', async () => {
    const rows = Array.from({ length: 500 }, (_, i) => textRow(i + 2, ['30', String(i), `P${i}`, 'Campo', 'Mensagem', 'a -- b'])).join('');
    const path = await buildXlsx({ sheets: [{ rows: textRow(1, [...HEADER]) + rows }] });
    const before = await openFds();
    let seen = 0;
    for await (const _row of readRetorno({ path, format: 'xlsx' })) {
      if (++seen === 3) {
        expect(await openFds()).toBe(before);
        break;
      }
    }
    expect(seen).toBe(3);
  });

  it('refuses to start with an aborted signal', async () => {
    const paths = await files();
    const it = readRetorno({ path: paths.xlsx, format: 'xlsx' }, { signal: AbortSignal.abort() });
    await expect(it.next()).rejects.toMatchObject({ name: 'AbortError' });
  });

  it('closes the file after an unreadable input', async () => {
    const path = await writeTemp('xlsx', 'not a zip at all');
    const before = await openFds();
    await readError(path, 'xlsx');
    await settle();
    expect(await openFds()).toBe(before);
  });
});
