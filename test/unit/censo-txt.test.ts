import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { detached, LineSplitter, mergePessoas, parseRecord30, visitCensoLines, type DivergenciaLida, type LineScan } from '@censo/shared';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'censo-txt-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

let n = 0;
async function file(bytes: Buffer | string): Promise<string> {
  const p = path.join(dir, `f${n++}.txt`);
  await writeFile(p, bytes);
  return p;
}

/** Every line as the reader finally sees it (after any restart). */
async function lines(p: string, highWaterMark?: number): Promise<{ lines: string[]; scan: LineScan; restarts: number }> {
  let out: string[] = [];
  let restarts = 0;
  const scan = await visitCensoLines(
    p,
    {
      line(linha, text) {
        expect(linha).toBe(out.length + 1);
        out.push(text);
      },
      restart() {
        restarts++;
        out = [];
      },
    },
    highWaterMark ? { highWaterMark } : {},
  );
  expect(scan.lines).toBe(out.length);
  return { lines: out, scan, restarts };
}

const latin1 = (text: string) => Buffer.from(text, 'latin1');
const divergencia = (linha: string, codigo: string): DivergenciaLida => ({
  codigo_na_escola: codigo,
  linha,
  campo: 'CPF',
  enviado: '',
  correto: '',
  is_filiacao: false,
  chave: null,
});

describe('census text decoding', () => {
  it('reads valid UTF-8 as UTF-8', async () => {
    const r = await lines(await file(Buffer.from('00|ESCOLA\n30|1|ALU1|x|y|JOÃO CONCEIÇÃO\n', 'utf8')));
    expect(r.scan.encoding).toBe('utf-8');
    expect(r.lines).toEqual(['00|ESCOLA', '30|1|ALU1|x|y|JOÃO CONCEIÇÃO']);
    expect(r.restarts).toBe(0);
  });

  it('drops a UTF-8 BOM', async () => {
    const r = await lines(await file(Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('00|Ç\n99|', 'utf8')])));
    expect(r.scan.encoding).toBe('utf-8');
    expect(r.lines).toEqual(['00|Ç', '99|']);
  });

  it('reads ISO-8859-1 bytes (0xC7 = Ç) as windows-1252', async () => {
    const r = await lines(await file(latin1('00|CONCEIÇÃO\n99|\n')));
    expect(r.scan.encoding).toBe('windows-1252');
    expect(r.lines).toEqual(['00|CONCEIÇÃO', '99|']);
  });

  it('maps windows-1252-only bytes 0x80 0x93 0x94 to € “ ”', async () => {
    const r = await lines(await file(Buffer.from([0x41, 0x80, 0x93, 0x42, 0x94, 0x0a])));
    expect(r.scan.encoding).toBe('windows-1252');
    expect(r.lines).toEqual(['A€“B”']);
  });

  it('restarts as windows-1252 when invalid UTF-8 appears late, after valid multibyte text', async () => {
    // C3 A9 is valid UTF-8 (é) but, in a windows-1252 file, the two characters Ã©.
    const head = Buffer.from('30|1|ALU1|x|y|JOS\u00c3\u00a9|d|1|m|p\n', 'latin1');
    const body = Buffer.from('40|filler line with nothing special\n'.repeat(5000), 'latin1');
    const tail = latin1('30|1|ALU2|x|y|JOSÉ|d|1|m|p\n');
    const p = await file(Buffer.concat([head, body, tail]));
    for (const hwm of [undefined, 1024]) {
      const r = await lines(p, hwm);
      expect(r.scan.encoding).toBe('windows-1252');
      expect(r.restarts).toBe(1);
      expect(r.lines).toHaveLength(5002);
      expect(r.lines[0]).toBe('30|1|ALU1|x|y|JOSÃ©|d|1|m|p');
      expect(r.lines[5001]).toBe('30|1|ALU2|x|y|JOSÉ|d|1|m|p');
    }
    // The merge's two passes agree on the decoding: both records keep their names as decoded.
    const pessoas = await mergePessoas([divergencia('1', 'ALU1'), divergencia('5002', 'ALU2')], p, { highWaterMark: 1024 });
    expect(pessoas.map((pessoa) => [pessoa.linha, pessoa.nome])).toEqual([
      ['1', 'JOSÃ©'],
      ['5002', 'JOSÉ'],
    ]);
  });

  it('treats a UTF-8 sequence cut by the end of the file as invalid', async () => {
    const r = await lines(await file(Buffer.from([0x41, 0x0a, 0x42, 0xc3])));
    expect(r.scan.encoding).toBe('windows-1252');
    expect(r.lines).toEqual(['A', 'BÃ']);
  });

  it('decodes multibyte characters split across every chunk boundary', async () => {
    const text = '30|Ç€𝄞|ÃO\r\nx\ry\n';
    const p = await file(Buffer.from(text, 'utf8'));
    for (let hwm = 1; hwm <= 8; hwm++) {
      const r = await lines(p, hwm);
      expect(r.scan.encoding).toBe('utf-8');
      expect(r.lines).toEqual(['30|Ç€𝄞|ÃO', 'x', 'y']);
    }
  });
});

describe('census text lines', () => {
  it('accepts LF, CRLF and CR, counts empty lines, and needs no final newline', async () => {
    const p = await file('a\r\nb\rc\n\nd\r\r\ne');
    for (let hwm = 1; hwm <= 6; hwm++) {
      expect((await lines(p, hwm)).lines).toEqual(['a', 'b', 'c', '', 'd', '', 'e']);
    }
  });

  it('does not add a line after a final line end', async () => {
    expect((await lines(await file('a\nb\n'))).lines).toEqual(['a', 'b']);
    expect((await lines(await file('a\r\nb\r\n'))).lines).toEqual(['a', 'b']);
    expect((await lines(await file('a\rb\r'))).lines).toEqual(['a', 'b']);
    expect((await lines(await file(''))).lines).toEqual([]);
  });

  it('sees a CR ending one chunk and an LF starting the next as one line end', () => {
    const seen: string[] = [];
    const splitter = new LineSplitter((linha, text) => seen.push(`${linha}:${text}`));
    splitter.push('a\r');
    splitter.push('\nb\r');
    splitter.push('\r');
    splitter.push('\nc');
    splitter.end();
    expect(seen).toEqual(['1:a', '2:b', '3:', '4:c']);
  });
});

describe('record 30', () => {
  it('needs first field 30 and at least 10 fields', () => {
    expect(parseRecord30('30|a|b|c|d|e|f|g|h|i')).toEqual(['30', 'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i']);
    expect(parseRecord30('30|a|b|c|d|e|f|g|h')).toBeNull();
    expect(parseRecord30(`30|a|b|c|d|e|f|g|h|i${'|x'.repeat(100)}`)).toHaveLength(10);
    expect(parseRecord30('300|a|b|c|d|e|f|g|h|i')).toBeNull();
    expect(parseRecord30('40|a|b|c|d|e|f|g|h|i')).toBeNull();
    expect(parseRecord30('30')).toBeNull();
  });

  it('detached() keeps the text exactly, whatever its length or characters', () => {
    for (const text of ['', 'abc', 'x'.repeat(13), 'JOSÉ DA SILVA -- JOSE DA SILVA', '\u{1F600}\ud800 fim'.repeat(5)]) {
      expect(detached(text)).toBe(text);
    }
  });
});
