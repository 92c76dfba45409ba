// Ctrl-C (or a cron's SIGTERM) ends the process without running any `finally`. What a command
// must not leave behind (its scratch folder, a half-written -o, a progress bar that hid the
// cursor) is undone here, synchronously in the signal's handler, newest first; then the signal is
// raised again, so the exit status still says how the run ended (130 after Ctrl-C in a shell).
//
// The handlers are installed once, when the command starts (main.ts), before anything exists to
// undo. With no handler, the kernel's default action ends the process at once: a signal that came
// between a scratch folder's creation and its handler's installation left the folder behind.
//
// One line says what the interruption cost (`censo: interrompido; "x.csv" não foi gravado.`): a
// person who pressed Ctrl-C must not take a missing -o for a finished one, nor a batch left on a
// server for a lost one.
import { mkdtempSync, rmSync, writeSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

const steps = new Set<() => void>();
const notes = new Set<{ readonly text: string }>();

export function handleInterrupts(): void {
  const interrupted = (signal: NodeJS.Signals) => {
    for (const step of [...steps].reverse()) {
      try {
        step();
      } catch {
        // Best effort: the other steps still run, and the signal is still raised.
      }
    }
    try {
      // After the steps: a progress bar is gone from the terminal by now.
      writeSync(2, `censo: interrompido${[...notes].map((note) => `; ${note.text}`).join('')}.\n`);
    } catch {
      // stderr closed: nothing to tell.
    }
    process.kill(process.pid, signal);
  };
  process.once('SIGINT', interrupted);
  process.once('SIGTERM', interrupted);
}

/** Runs `step` if a signal ends the command before the returned function is called. */
export function onInterrupt(step: () => void): () => void {
  const entry = () => step();
  steps.add(entry);
  return () => void steps.delete(entry);
}

/** Adds `; text` to the interruption's line until the returned function is called. */
export function interruptNote(text: string): () => void {
  const note = { text };
  notes.add(note);
  return () => void notes.delete(note);
}

export interface ScratchFolder {
  readonly path: string;
  remove(): Promise<void>;
}

/** A new folder under the system's temporary folder, gone after `remove()` or a signal. */
export function scratchFolder(prefix: string): ScratchFolder {
  const dir = mkdtempSync(path.join(os.tmpdir(), prefix));
  // Job threads may still be writing results into it (lote.ts): a file they create between the
  // removal's listing and its rmdir fails the rmdir with ENOTEMPTY, so the removal tries again.
  const forget = onInterrupt(() => rmSync(dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 10 }));
  return {
    path: dir,
    async remove() {
      await rm(dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 10 });
      forget();
    },
  };
}
