// The access log (SPEC §8) as the tests read it: the JSON line a request left in its file, waited
// for (the log is written as the response ends, not before the client has it).
import { readFile } from 'node:fs/promises';
import { waitFor } from './wait-for.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- a log line is walked freely by field name
export type AccessLine = Record<string, any>;

export async function accessLineOf(file: string, requestId: string | null): Promise<AccessLine> {
  let found: AccessLine | undefined;
  await waitFor(async () => {
    const text = await readFile(file, 'utf8').catch(() => '');
    found = text
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => JSON.parse(line) as AccessLine)
      .find((line) => line.requestId === requestId);
    return found !== undefined;
  });
  return found!;
}
