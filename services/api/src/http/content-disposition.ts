// `Content-Disposition: attachment` for downloads (RFC 6266): an ASCII `filename` every client
// understands, and `filename*` (RFC 8187, UTF-8) when the real name is not plain ASCII.
import path from 'node:path';

export function attachment(filename: string): string {
  const ascii = filename
    .normalize('NFD')
    .replace(/[\u0300-\u036f]/g, '')
    .replace(/[^\x20-\x7e]|["\\]/g, '_');
  if (ascii === filename) return `attachment; filename="${filename}"`;
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encodeRFC8187(filename)}`;
}

function encodeRFC8187(value: string): string {
  return encodeURIComponent(value).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

/** SPEC §3.4: the uploaded txt's base name plus `-corrigido.txt`. */
export function corrigidoFilename(uploaded: string | null): string {
  // The client's name is data: only its last path segment, without control characters.
  // eslint-disable-next-line no-control-regex -- control characters are exactly what is removed here
  const base = path.posix.basename((uploaded ?? 'censo.txt').replaceAll('\\', '/')).replace(/[\u0000-\u001f\u007f]/g, '');
  const stem = base.replace(/\.txt$/i, '') || 'censo';
  return `${stem}-corrigido.txt`;
}
