// The JSON files that settings name (COLUMNS_FILE, QUERIES_FILE), read once at start. A setting
// may name anything, so the file is opened without blocking and must be a regular file: a FIFO
// nobody writes to would otherwise hold the start for ever, and a device such as /dev/zero would
// be read until memory runs out.
import { constants } from 'node:fs';
import { open } from 'node:fs/promises';
import { ConfigError } from './config.js';

/**
 * The JSON value in `file` (a UTF-8 BOM allowed). Throws ConfigError `<source>: <problem>` when
 * it cannot be opened, is not a regular file, or is not JSON.
 */
export async function readSettingJson(file: string | URL, source: string): Promise<unknown> {
  const fail = (why: string): never => {
    throw new ConfigError(`${source}: ${why}`);
  };
  let text = '';
  try {
    // O_NONBLOCK: opening a FIFO for reading otherwise waits for a writer. It changes nothing
    // for a regular file (and is 0 where the platform lacks it).
    const handle = await open(file, constants.O_RDONLY | (constants.O_NONBLOCK ?? 0));
    try {
      if (!(await handle.stat()).isFile()) fail('is not a regular file');
      text = await handle.readFile('utf8');
    } finally {
      await handle.close();
    }
  } catch (err) {
    if (err instanceof ConfigError) throw err;
    fail(`cannot be read (${(err as NodeJS.ErrnoException).code ?? String(err)})`);
  }
  try {
    return JSON.parse(text.replace(/^\uFEFF/, ''));
  } catch (err) {
    return fail(`invalid JSON (${(err as Error).message})`);
  }
}
