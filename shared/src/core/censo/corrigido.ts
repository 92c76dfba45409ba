// The corrected census file (SPEC §3.4): the submitted text file with the tax authority's values
// written into fields 4–7 and 9 (filiação 1) of the persons `/api/retorno-rf` answers, every other byte as it was,
// in ISO-8859-1. Built from the merge's own matches (merge.ts), so the persons and the file can
// never disagree. The file is streamed chunk by chunk, line by line: a 25 MB text file never
// becomes one string.
import { createWriteStream } from 'node:fs';
import { pipeline } from 'node:stream/promises';
import type { MatchedPersons } from '../merge.js';
import { badInput } from '../errors.js';
import type { NaoAplicada } from '../types.js';
import { planejar } from './plano.js';
import { decodeCensoFile, type CensoEncoding, type DecodeOptions } from './decode.js';
import { CENSO_FIELD, censoField, LineSplitter, parseRecord30, visitCensoLines, type LineEnd } from './txt.js';

export interface CorrigidoCounts {
  /** Record-30 lines whose bytes changed (`Censo-Pessoas-Corrigidas`). */
  readonly pessoasCorrigidas: number;
  /**
   * The persons' divergences the file does not write, `grafia` excepted
   * (`Censo-Correcoes-Nao-Aplicadas`, SPEC §11): the layout cannot hold them, INEP's rules would
   * refuse them, or the file has no field for them. One count, the same everywhere.
   */
  readonly naoAplicadas: number;
  /** Persons written although general rule 25 may refuse them (`Censo-Pessoas-Regra-25`, SPEC §11). */
  readonly pessoasRegra25: number;
  /** The first of them (the CLI lists them). */
  readonly amostraRegra25: readonly PessoaRegra25[];
  /** The first of them, with the rule that kept each out (the CLI lists them). */
  readonly amostra: readonly NaoAplicada[];
}

const AMOSTRA = 20;

/** A person the corrected file writes although INEP may refuse them under general rule 25. */
export interface PessoaRegra25 {
  readonly codigo_na_escola: string;
  readonly linha: string;
}

/** The most schools (records 00) one migration file may hold (general rule 39). */
export const MAX_ESCOLAS = 100;

const BATCH_CHARS = 64 * 1024;

function rewrite(line: string, fields: ReadonlyMap<number, string>): string {
  const parts = line.split('|');
  for (const [index, value] of fields) parts[index] = value;
  return parts.join('|');
}

/** WHATWG windows-1252, bytes 0x80-0x9F (the rest of the byte range is ISO-8859-1). */
const WINDOWS_1252_HIGH = [
  0x20ac, 0x81, 0x201a, 0x192, 0x201e, 0x2026, 0x2020, 0x2021, 0x2c6, 0x2030, 0x160, 0x2039, 0x152, 0x8d, 0x17d, 0x8f, 0x90, 0x2018, 0x2019,
  0x201c, 0x201d, 0x2022, 0x2013, 0x2014, 0x2dc, 0x2122, 0x161, 0x203a, 0x153, 0x9d, 0x17e, 0x178,
];

/**
 * Text → ISO-8859-1 bytes. A file read as windows-1252 maps back to its own bytes (the WHATWG
 * decoder is one-to-one, so unchanged bytes stay as they were, even 0x80–0x9F); any other file
 * is re-encoded, a character ISO-8859-1 cannot hold becoming `?`.
 */
export function encoderFor(encoding: CensoEncoding): (text: string) => Buffer {
  if (encoding !== 'windows-1252') {
    // eslint-disable-next-line no-control-regex -- the range starts at U+0000 on purpose
    return (text) => Buffer.from(text.replace(/[^\u0000-\u00ff]/gu, '?'), 'latin1');
  }
  const byteOf = new Map<number, number>();
  WINDOWS_1252_HIGH.forEach((code, i) => {
    byteOf.set(code, 0x80 + i);
    // Node's one-shot decode of this label maps 0x80-0x9F to U+0080-U+009F (its Latin-1 fast
    // path) while the streaming decode follows WHATWG: either way the byte comes back.
    byteOf.set(0x80 + i, 0x80 + i);
  });
  return (text) => {
    // eslint-disable-next-line no-control-regex -- the range starts at U+0000 on purpose
    if (!/[^\u0000-\u007f\u00a0-\u00ff]/.test(text)) return Buffer.from(text, 'latin1');
    const bytes = Buffer.allocUnsafe(text.length);
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i);
      bytes[i] = c < 0x80 || (c >= 0xa0 && c <= 0xff) ? c : (byteOf.get(c) ?? 0x3f);
    }
    return bytes;
  };
}

/** Writes the corrected census file to `outPath`; `txtPath` is the submitted one. */
export async function writeCensoCorrigido(
  txtPath: string,
  matched: MatchedPersons,
  outPath: string,
  options: Pick<DecodeOptions, 'signal' | 'highWaterMark'> = {},
): Promise<CorrigidoCounts & { bytes: number }> {
  // Nothing matched: the merge did not read the file, so its encoding is found first.
  const encoding = matched.encoding ?? (await visitCensoLines(txtPath, { line() {}, restart() {} }, options)).encoding;
  const encode = encoderFor(encoding);
  let pessoasCorrigidas = 0;
  let naoAplicadas = 0;
  let pessoasRegra25 = 0;
  const amostraRegra25: PessoaRegra25[] = [];
  const amostra: NaoAplicada[] = [];
  let escolas = 0;
  /** The last line that is not blank, and the line end the file uses (for a `99|` it lacks). */
  let last = '';
  let lastEnd: LineEnd = '';

  async function* corrected(): AsyncGenerator<Buffer> {
    let batch = '';
    const splitter = new LineSplitter((linha: number, text: string, end: LineEnd) => {
      if (text.startsWith('00|')) escolas++;
      if (text.trim() !== '') last = text;
      if (end !== '') lastEnd = end;
      const changes = matched.lines.get(linha);
      if (changes) {
        // The merge found a usable record 30 at this line, with the same decoder.
        const record = parseRecord30(text)!;
        const planned = planejar(linha, record, changes, matched);
        naoAplicadas += planned.naoAplicadas.length;
        if (planned.regra25 && ++pessoasRegra25 <= AMOSTRA) {
          amostraRegra25.push({ codigo_na_escola: censoField(record, CENSO_FIELD.codigo), linha: String(linha) });
        }
        for (const item of planned.naoAplicadas) if (amostra.length < AMOSTRA) amostra.push(item);
        const next = planned.fields.size > 0 ? rewrite(text, planned.fields) : text;
        if (next !== text) pessoasCorrigidas++;
        batch += next + end;
      } else {
        batch += text + end;
      }
    });
    for await (const event of decodeCensoFile(txtPath, { ...options, encoding })) {
      // The encoding is known, so the decoder never restarts; text events only.
      if (event.type !== 'text') continue;
      splitter.push(event.text);
      if (batch.length >= BATCH_CHARS) {
        yield encode(batch);
        batch = '';
      }
    }
    splitter.end();
    // General rule 39: Educacenso refuses a file of more than 100 schools (SPEC §11, decided: 400).
    if (escolas > MAX_ESCOLAS) throw badInput.escolasDemais(escolas, MAX_ESCOLAS);
    // General rule 38: the file ends with a record 99; one that lacks it gets it, in its own line ends.
    if (!/^99\|/.test(last)) {
      const newline = lastEnd === '' ? '\n' : lastEnd;
      batch += batch.endsWith('\n') || batch.endsWith('\r') ? `99|${newline}` : `${newline}99|`;
    }
    yield encode(batch);
  }

  const out = createWriteStream(outPath, { mode: 0o600 });
  await pipeline(corrected, out, ...(options.signal ? [{ signal: options.signal }] : []));
  return { pessoasCorrigidas, naoAplicadas, pessoasRegra25, amostraRegra25, amostra, bytes: out.bytesWritten };
}
