// `censo cartas <resultado> -o <cartas.xlsx|cartas.html>` (issue 56): a letter per school from
// `censo lote`'s combined output (json, csv or xlsx, read as `censo resumo` reads it; a school is
// the same key), with the core's letters, so it gives the service's GET /api/lotes/{id}/cartas
// for the same files.
import path from 'node:path';
import { CARTAS_FORMATS, Cartas, cartasChunks, type CartasFormat } from '@censo/shared/local';
import { readResultado, writeChunks } from './comparar.js';
import { BadUsage, quote } from './failures.js';

/** -o's extension names the file: `.xlsx` or `.html` (`.htm` too), nothing else. */
export function cartasFormatOf(output: string): CartasFormat {
  const extension = path.extname(output).slice(1).toLowerCase();
  const format = extension === 'htm' ? 'html' : extension;
  if (!(CARTAS_FORMATS as readonly string[]).includes(format)) {
    const stem = extension === '' ? output : output.slice(0, output.length - extension.length - 1);
    throw new BadUsage(`-o ${quote(output)}: as cartas são gravadas em .xlsx ou .html (por exemplo -o ${quote(`${stem}.html`)}).`);
  }
  return format as CartasFormat;
}

export interface CartasOptions {
  readonly resultado: string;
  readonly output: string;
}

/** Writes the letters; returns them (for the count on stderr). */
export async function escreverCartas(options: CartasOptions): Promise<Cartas> {
  const format = cartasFormatOf(options.output);
  const resultado = await readResultado(options.resultado);
  const cartas = new Cartas();
  // The schools whose file was read, in the result's order; then any only the rows name (a CSV lists no file).
  if (resultado.lidos !== null) {
    const lidos = new Set(resultado.lidos);
    for (const referencia of resultado.ordem ?? resultado.lidos) if (lidos.has(referencia)) cartas.escola(referencia);
  }
  for (const d of resultado.divergencias) cartas.divergencia(d);
  await writeChunks(options.output, cartasChunks(cartas, format));
  return cartas;
}
