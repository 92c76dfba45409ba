// How the CLI fails: a bad input (exit 1, the same Portuguese `erro` the API answers) or a wrong
// usage (exit 2). Messages go to stderr, prefixed with the command's name, one line each: a name
// that holds a line break or a terminal escape is quoted, so it can never forge another line.

/** The input cannot be used: a file missing or unreadable, a return the service would refuse. */
export class InputError extends Error {}

/** The command line itself is wrong (beyond what commander checks). */
export class BadUsage extends Error {}

export function fail(message: string, code: 1 | 2): number {
  process.stderr.write(`censo: ${message}\n`);
  return code;
}

/**
 * A file or folder name as it goes into a message: JSON's quoting (line breaks and C0 controls
 * escaped), plus DEL, the C1 controls (some terminals act on U+009B as on ESC [) and the Unicode
 * line separators, which JSON leaves as they are.
 */
export function quote(name: string): string {
  return JSON.stringify(name).replace(/[\u007f-\u009f\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** What the file system said, in Portuguese; Node's own text is English and names the syscall. */
const FS_REASONS: Readonly<Record<string, string>> = {
  ENOENT: 'não encontrado',
  EACCES: 'sem permissão',
  EPERM: 'operação não permitida',
  EISDIR: 'é uma pasta',
  ENOTDIR: 'uma parte do caminho não é uma pasta',
  ENOSPC: 'disco cheio',
  EDQUOT: 'cota de disco esgotada',
  EROFS: 'sistema de arquivos somente leitura',
  EFBIG: 'arquivo grande demais para o sistema de arquivos',
  EIO: 'erro de leitura ou gravação no disco',
  ELOOP: 'links simbólicos em ciclo',
  ENAMETOOLONG: 'nome longo demais',
  EMFILE: 'arquivos abertos demais',
  ENFILE: 'arquivos abertos demais',
  EBUSY: 'em uso',
  EPIPE: 'a saída foi fechada',
};

/**
 * The errno code of a file-system error. An error that crossed from a worker thread arrives as a
 * plain Error (structured cloning keeps only name, message and stack), so its code is read from
 * the message Node starts with it (`EACCES: permission denied, open '…'`).
 */
export function errnoCode(err: unknown): string | null {
  const code = (err as NodeJS.ErrnoException | null)?.code;
  if (typeof code === 'string' && /^E[A-Z0-9]+$/.test(code)) return code;
  const message = (err as Error | null)?.message;
  return typeof message === 'string' ? (/^(E[A-Z0-9]+): /.exec(message)?.[1] ?? null) : null;
}

/** `sem permissão`, `disco cheio`…; null when `err` is not a file-system error. */
export function fsReason(err: unknown): string | null {
  const code = errnoCode(err);
  return code === null ? null : (FS_REASONS[code] ?? `erro do sistema de arquivos (${code})`);
}

/** Why something failed, in one line: the file system's reason, or (a bug) the error's message quoted. */
export function reasonOf(err: unknown): string {
  return fsReason(err) ?? `erro inesperado: ${quote(err instanceof Error ? err.message : String(err))}`;
}
