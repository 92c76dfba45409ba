// Every malformed xlsx becomes one BadInputError (400), never a zlib/RangeError, and the
// zip bomb is refused while streaming with bounded memory (SPEC §5).
import { open, stat, truncate } from 'node:fs/promises';
import { Readable } from 'node:stream';
import { BadInputError } from '@censo/shared';
import { describe, expect, it } from 'vitest';
import { buildXlsx, HEADER, readError, readRows, textRow, workbookParts, writeTemp, zipParts } from '../helpers/xlsx-builders.js';
import { onThisMachine } from '../helpers/deadline.js';

const NOT_ZIP = 'Arquivo retorno ilegível: não é um arquivo xlsx (zip) válido.';

async function expectUnreadable(path: string, message: string | RegExp): Promise<void> {
  const err = await readError(path, 'xlsx');
  expect(err).toBeInstanceOf(BadInputError);
  if (typeof message === 'string') expect(err.message).toBe(message);
  else expect(err.message).toMatch(message);
}

const GOOD = { sheets: [{ rows: textRow(1, [...HEADER]) + textRow(2, ['30', '1', 'A', 'B', 'C', 'D']) }] };

describe('unreadable xlsx', () => {
  it('refuses files that are not zips: empty, text, an old .xls', async () => {
    await expectUnreadable(await writeTemp('xlsx', ''), NOT_ZIP);
    await expectUnreadable(await writeTemp('xlsx', 'Registro;Linha\n30;1\n'), NOT_ZIP);
    const xls = Buffer.alloc(4096);
    Buffer.from('d0cf11e0a1b11ae1', 'hex').copy(xls); // OLE2 compound file signature
    await expectUnreadable(await writeTemp('xlsx', xls), NOT_ZIP);
  });

  it('refuses a truncated zip', async () => {
    const path = await buildXlsx(GOOD);
    const { size } = await stat(path);
    await truncate(path, Math.floor(size / 2));
    await expectUnreadable(path, NOT_ZIP);
  });

  it('refuses a zip whose sheet data is corrupt', async () => {
    // A large sheet of varied rows, so the middle of the file is deflated sheet data.
    const rows = Array.from({ length: 3000 }, (_, i) => textRow(i + 2, ['30', String(i), `P${i * 7919}`, 'B', 'C', String(i * i)])).join(
      '',
    );
    const path = await zipParts(workbookParts({ sheets: [{ rows: textRow(1, [...HEADER]) + rows }] }));
    // Overwrite the middle of the file (compressed data) with garbage.
    const { size } = await stat(path);
    const fh = await open(path, 'r+');
    await fh.write(Buffer.alloc(64, 0xff), 0, 64, Math.floor(size / 3));
    await fh.close();
    await expectUnreadable(path, /^Arquivo retorno ilegível: /);
  });

  it('refuses a zip without xl/workbook.xml', async () => {
    await expectUnreadable(await zipParts({ 'hello.txt': 'hi' }), /pasta de trabalho/);
  });

  it('refuses any DOCTYPE or ENTITY declaration (entity expansion, external entities)', async () => {
    const lol = '<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;">]>';
    const inSheet = workbookParts(GOOD);
    inSheet['xl/worksheets/sheet1.xml'] = lol + String(inSheet['xl/worksheets/sheet1.xml']).replace(/^<\?xml[^>]*\?>/, '');
    await expectUnreadable(await zipParts(inSheet), /DOCTYPE\/ENTITY/);
    const inStrings = workbookParts({
      ...GOOD,
      sharedStrings: '<!DOCTYPE x [<!ENTITY xxe SYSTEM "file:///etc/passwd">]><sst><si><t>&xxe;</t></si></sst>',
    });
    await expectUnreadable(await zipParts(inStrings), /DOCTYPE\/ENTITY/);
    const inWorkbook = workbookParts(GOOD);
    inWorkbook['xl/workbook.xml'] = String(inWorkbook['xl/workbook.xml']).replace('?>', '?><!DOCTYPE workbook>');
    await expectUnreadable(await zipParts(inWorkbook), /DOCTYPE\/ENTITY/);
  });

  it('refuses an invalid numeric character reference and a shared string index out of range', async () => {
    await expectUnreadable(
      await buildXlsx({
        sheets: [
          { rows: textRow(1, [...HEADER]) + textRow(2, ['30', '1', '&#x110000;', 'B', 'C', 'D']).replace('&amp;#x110000;', '&#x110000;') },
        ],
      }),
      /XML inválido/,
    );
    const bad = { sharedStrings: ['a'], sheets: [{ rows: textRow(1, [...HEADER]) + '<row r="2"><c r="C2" t="s"><v>7</v></c></row>' }] };
    await expectUnreadable(await buildXlsx(bad), /texto compartilhado/);
  });

  it(
    'refuses a zip bomb (~450 MB of XML) quickly and with low memory',
    async () => {
      const header = `<?xml version="1.0"?><worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>${textRow(1, [...HEADER])}`;
      const line = '<row><c><v>30</v></c><c><v>1</v></c><c t="inlineStr"><is><t>AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA</t></is></c></row>';
      const block = Buffer.from(line.repeat(Math.floor((1 << 20) / line.length)));
      const blocks = 450;
      function* bomb(): Generator<Buffer> {
        yield Buffer.from(header);
        for (let i = 0; i < blocks; i++) yield block;
        yield Buffer.from('</sheetData></worksheet>');
      }
      const parts = workbookParts(GOOD);
      parts['xl/worksheets/sheet1.xml'] = () => Readable.from(bomb());
      const path = await zipParts(parts);
      expect((await stat(path)).size).toBeLessThan(2 * 1024 * 1024);

      const rssBefore = process.memoryUsage().rss;
      const started = performance.now();
      await expectUnreadable(path, 'Arquivo retorno ilegível: conteúdo descompactado excede 400 MB.');
      expect(performance.now() - started).toBeLessThan(3000);
      expect(process.memoryUsage().rss - rssBefore).toBeLessThan(100 * 1024 * 1024);
    },
    onThisMachine(120_000),
  );

  it('still reads a good file after all that (no leaked state)', async () => {
    expect(await readRows(await buildXlsx(GOOD), 'xlsx')).toHaveLength(1);
  });
});
