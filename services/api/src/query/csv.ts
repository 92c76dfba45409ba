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
