// Earlier instructions in docs/operacao.md gave the heap snapshot SIGTTIN, because the service then
// took SIGUSR2 as a request to stop. Since issue 48 SIGUSR2 is the snapshot's signal
// (test/integration/operator-signals.test.ts); a host still started with
// NODE_OPTIONS=--heapsnapshot-signal=SIGTTIN keeps working, and a SIGUSR2 that reaches a process
// started without any flag is ignored (logged) instead of ending it. Both, on the real entry point.
import { once } from 'node:events';
import { mkdir, mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { API_KEY } from '../helpers/http.js';
import { startServiceProcess } from '../helpers/processes.js';
import { waitFor } from '../helpers/wait-for.js';
import { onThisMachine } from '../helpers/deadline.js';

describe('a heap snapshot of the API, as docs/operacao.md says', () => {
  it(
    'SIGTTIN writes a snapshot and the API goes on serving; a SIGUSR2 nothing claims is ignored, not a stop',
    async () => {
      const dir = await mkdtemp(path.join(os.tmpdir(), 'censo-heap-snapshot-'));
      const snapshots = path.join(dir, 'diagnostico');
      await mkdir(snapshots);
      const api = startServiceProcess('services/api/dist/main.js', {
        API_KEY,
        HOST: '127.0.0.1',
        PORT: '0',
        UPLOAD_DIR: path.join(dir, 'uploads'),
        LOG_LEVEL: 'info',
        // --diagnostic-dir keeps the file out of the checkout (the default is the working folder).
        NODE_OPTIONS: `--heapsnapshot-signal=SIGTTIN --diagnostic-dir=${snapshots}`,
      });
      try {
        const url = String((await api.line('censo-api listening')).url);
        api.child.kill('SIGTTIN');
        // Written whole once its size stops changing; a snapshot is a JSON object, tens of MB here.
        let last = -1;
        await waitFor(
          async () => {
            const [name] = (await readdir(snapshots)).filter((f) => /^Heap\..*\.heapsnapshot$/.test(f));
            if (name === undefined) return false;
            const { size } = await stat(path.join(snapshots, name));
            const settled = size > 0 && size === last;
            last = size;
            return settled;
          },
          { timeoutMs: onThisMachine(30_000), intervalMs: 500, what: 'the heap snapshot', seen: () => `${last} bytes` },
        );
        expect(last).toBeGreaterThan(1_000_000);
        expect(api.child.exitCode).toBeNull();
        expect((await fetch(`${url}/healthz`)).status).toBe(200);

        // Started without --heapsnapshot-signal=SIGUSR2: the service's own listener keeps SIGUSR2's
        // default action (end the process) away and says why nothing was written.
        api.child.kill('SIGUSR2');
        await waitFor(() => api.lines.some((line) => line.signal === 'SIGUSR2' && line.level === 40), {
          what: 'the warning about SIGUSR2',
        });
        expect((await fetch(`${url}/healthz`)).status).toBe(200);
        expect(api.child.exitCode).toBeNull();
        expect(api.lines.find((line) => line.msg === 'closing')).toBeUndefined();

        const exited = once(api.child, 'exit');
        api.child.kill('SIGTERM');
        expect((await exited)[0]).toBe(0);
      } finally {
        // SIGKILL: a process that never took the flag would be stopped (SIGTTIN's default), not ended.
        if (api.child.exitCode === null && api.child.signalCode === null) {
          const killed = once(api.child, 'exit');
          api.child.kill('SIGKILL');
          await killed;
        }
        await rm(dir, { recursive: true, force: true });
      }
    },
    onThisMachine(60_000),
  );
});
