// Byte classes of JSON's grammar (RFC 8259), shared by the rows scanner and the number-token reader.

export function isWs(c: number): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
}

export function isDigit(c: number): boolean {
  return c >= 0x30 && c <= 0x39;
}
