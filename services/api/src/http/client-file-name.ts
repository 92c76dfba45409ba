// A client's file name is data that the service writes back: in the task monitor's `arquivos`,
// the batch answers' `arquivo` (JSON, CSV, XLSX) and a download's Content-Disposition. Issue 50: a
// NUL or a bidi control (U+202E RIGHT-TO-LEFT OVERRIDE shows `retorno‮nosj.exe` as
// `retornoexe.json`) passed into all of them. Removed once, where the name is taken in, so every
// later use sees the same name the extension check saw.

// Unicode Cc (C0, DEL, C1: NUL, CR, LF, ESC…), Cf (format characters: the bidi controls U+200E/F,
// U+202A–202E, U+2066–2069, U+061C, zero-width characters, the BOM) and the line and paragraph
// separators U+2028/2029: none of them is visible in a name, all of them change how the rest shows.
const INVISIBLE = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/gu;

/** `name` as the client sent it, less its control and format characters. */
export function clientFileName(name: string): string {
  return name.replace(INVISIBLE, '');
}
