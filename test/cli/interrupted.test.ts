// `censo` stopped by Ctrl-C or a cron's SIGTERM, at any moment: its scratch folder goes, no
// half-written -o stays, one line says so (`censo: interrompido; "x.csv" não foi gravado.`), and
// the exit says how it ended. Every run gets its own TMPDIR, checked empty afterwards.
import { access, mkdir, mkdtemp, readdir, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixtureCases, repeatedReturn } from '../helpers/fixtures.js';
import { censo, CLI, type Run } from './censo-process.js';

const basico = fixtureCases().find((c) => c.name === 'basico')!;

// Loaded with --import before the command: the moment `censo` creates its scratch folder, the
// process signals itself, so the signal lands before anything after the creation runs (with no
// handler installed yet, the kernel ends the process on the spot).
const SIGNAL_AT_SCRATCH = `
import fs from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
const mkdtempSync = fs.mkdtempSync;
fs.mkdtempSync = (prefix, ...rest) => {
  const made = mkdtempSync(prefix, ...rest);
  if (/censo-(lote|cli)-$/.test(prefix)) process.kill(process.pid, process.env.SIGNAL_AT_SCRATCH);
  return made;
};
syncBuiltinESMExports();
`;

let dir: string;
let preload: string;
let big: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'censo-interrupted-test-'));
  preload = path.join(dir, 'signal-at-scratch.mjs');
  await writeFile(preload, SIGNAL_AT_SCRATCH);
  // One return big enough to take a while (about 8 MB).
  big = path.join(dir, 'grande.json');
  await writeFile(big, repeatedReturn(basico.retorno.json, 3000));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

let serial = 0;
async function fresh(name: string): Promise<string> {
  const made = path.join(dir, `${name}-${++serial}`);
  await mkdir(made);
  return made;
}

const exists = (file: string) =>
  access(file).then(
    () => true,
    () => false,
  );

/** Runs `args`, signals it once TMPDIR holds something, and checks what it left. */
async function interrupt(args: readonly string[], signal: NodeJS.Signals, output: string): Promise<Run> {
  const tmp = await fresh('tmp');
  let child: ChildProcess | undefined;
  const running = censo(args, { env: { TMPDIR: tmp }, started: (started) => (child = started) });
  // Bounded wait: the scratch folder appears once the inputs are listed (lote: and -o opened).
  for (let waited = 0; (await readdir(tmp)).length === 0; waited++) {
    expect(waited, 'the command never started').toBeLessThan(400);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  child!.kill(signal);
  const run = await running;
  expect(run.signal, run.stderr).toBe(signal);
  expect(await readdir(tmp), 'temporary files left behind').toEqual([]);
  expect(await exists(output), 'a partial -o left behind').toBe(false);
  expect(run.stderr).toBe(`censo: interrompido; "${output}" não foi gravado.\n`);
  return run;
}

describe('a signal mid-run', () => {
  it.each(['SIGINT', 'SIGTERM'] as const)('lote, %s mid-batch: no scratch folder, no partial -o, one line saying so', async (signal) => {
    // The big return read six times through links.
    const folder = await fresh('retornos');
    await symlink(big, path.join(folder, 'grande.json'));
    for (let n = 1; n <= 5; n++) await symlink('grande.json', path.join(folder, `grande-${n}.json`));
    const out = path.join(await fresh('saida'), 'saida.csv');
    await interrupt(['lote', folder, '--concurrency', '1', '-o', out], signal, out);
  });

  it.each(['SIGINT', 'SIGTERM'] as const)(
    'divergencias, %s while the return is read: no scratch folder, no -o, one line saying so',
    async (signal) => {
      const out = path.join(await fresh('saida'), 'divergencias.csv');
      await interrupt(['divergencias', big, '-o', out], signal, out);
    },
  );
});

describe('a signal the moment the scratch folder exists', () => {
  it.each([
    ['lote', (out: string) => ['lote', path.dirname(basico.retorno.json), '-o', out]],
    ['divergencias', (out: string) => ['divergencias', basico.retorno.json, '-o', out]],
    ['retorno-rf', (out: string) => ['retorno-rf', basico.retorno.json, basico.txt, '-o', out]],
    ['corrigir', (out: string) => ['corrigir', basico.retorno.json, basico.txt, '-o', out]],
  ] as const)('%s: the folder goes too, one line says -o was not written, and the exit is the signal', async (_name, args) => {
    for (const signal of ['SIGINT', 'SIGTERM'] as const) {
      const tmp = await fresh('tmp');
      const out = path.join(await fresh('saida'), 'saida');
      const run = await censo(args(out), {
        env: { TMPDIR: tmp, SIGNAL_AT_SCRATCH: signal },
        command: [process.execPath, '--import', preload, CLI],
      });
      expect(run.signal, run.stderr).toBe(signal);
      expect(await readdir(tmp), `${signal}: temporary files left behind`).toEqual([]);
      expect(await exists(out), `${signal}: a partial -o left behind`).toBe(false);
      expect(run.stderr, signal).toBe(`censo: interrompido; "${out}" não foi gravado.\n`);
    }
  });
});
