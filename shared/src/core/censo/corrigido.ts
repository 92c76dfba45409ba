// The corrected census file (SPEC §3.4): the submitted text file with the tax authority's values
// written into fields 4–7 of the persons `/api/retorno-rf` answers, every other byte as it was,
// in ISO-8859-1. Built from the merge's own matches (merge.ts), so the persons and the file can
// never disagree. The file is streamed chunk by chunk, line by line: a 25 MB text file never
// becomes one string.
import { createWriteStream } from 'node:fs';
import { pipeline } from 'node:stream/promises';
import { answeredChanges, type AppliedChave, type Changes, type MatchedPersons } from '../merge.js';
import { decodeCensoFile, type CensoEncoding, type DecodeOptions } from './decode.js';
import { inepCpf, inepData, inepId, inepNome } from './inep-values.js';
import { LineSplitter, visitCensoLines, type LineEnd } from './txt.js';

export interface CorrigidoCounts {
  /** Record-30 lines whose bytes changed (`Censo-Pessoas-Corrigidas`). */
  readonly pessoasCorrigidas: number;
  /** Tax-authority values that could not be written as the layout requires (`Censo-Correcoes-Nao-Aplicadas`). */
  readonly naoAplicadas: number;
}

/** Field position (1-based) and INEP-style writer of each field a divergence may change. */
const REWRITTEN: Readonly<Record<AppliedChave, { readonly field: number; readonly write: (value: string) => string | null }>> = {
  inep: { field: 4, write: inepId },
  cpf: { field: 5, write: inepCpf },
  nome: { field: 6, write: inepNome },
  data_nascimento: { field: 7, write: inepData },
};

const BATCH_CHARS = 64 * 1024;

/**
 * The new value of each field `changes` rewrites (0-based field index), INEP-style, and how many
 * values the layout cannot hold. Worked out line by line as the file streams: kept for every
 * person at once, these maps would outweigh the merge itself.
 */
function rewrites(changes: Changes): { fields: Map<number, string>; naoAplicadas: number } {
  const fields = new Map<number, string>();
  let naoAplicadas = 0;
  // The values `/api/retorno-rf` answers (birth dates as DD/MM/YYYY), so the file and the persons agree.
  for (const [chave, answered] of answeredChanges(changes)) {
    const { field, write } = REWRITTEN[chave];
    const value = write(answered);
    if (value === null) naoAplicadas++;
    else fields.set(field - 1, value);
  }
  return { fields, naoAplicadas };
}

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

  async function* corrected(): AsyncGenerator<Buffer> {
    let batch = '';
    const splitter = new LineSplitter((linha: number, text: string, end: LineEnd) => {
      const changes = matched.lines.get(linha);
      if (changes) {
        const planned = rewrites(changes);
        naoAplicadas += planned.naoAplicadas;
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
    yield encode(batch);
  }

  const out = createWriteStream(outPath, { mode: 0o600 });
  await pipeline(corrected, out, ...(options.signal ? [{ signal: options.signal }] : []));
  return { pessoasCorrigidas, naoAplicadas, bytes: out.bytesWritten };
}
