// One CSV writer for the whole service: the query route's export and the upload routes' format=csv.
// RFC 4180 output for `format=csv`: CRLF line ends, a field is quoted when it holds `"`, `,`,
// CR or LF, and quotes inside are doubled. SQL NULL is an empty field (RFC 4180 has no NULL;
// an empty string is written the same way, a known and documented ambiguity).

export function csvField(value: string | null): string {
  if (value === null) return '';
  return /[",\r\n]/.test(value) ? `"${value.replaceAll('"', '""')}"` : value;
}

export function csvLine(values: readonly (string | null)[]): string {
  return `${values.map(csvField).join(',')}\r\n`;
}

/** A header line and one line per row, batched into writes of about 64 KB. */
export async function* csvChunks(columns: readonly string[], rows: AsyncIterable<readonly (string | null)[]>): AsyncGenerator<string> {
  let batch = csvLine(columns);
  for await (const row of rows) {
    batch += csvLine(row);
    if (batch.length >= 64 * 1024) {
      yield batch;
      batch = '';
    }
  }
  yield batch;
}
