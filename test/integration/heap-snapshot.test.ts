// docs/operacao.md (Monitoramento) tells an operator how to take a heap snapshot of a running API:
// NODE_OPTIONS=--heapsnapshot-signal=SIGTTIN and `kill -TTIN`, never SIGUSR2, the signal Node's
// own documentation suggests, because the service takes SIGUSR2 as a request to stop. Both halves
// of that paragraph, on the real entry point.
import { once } from 'node:events';
import { mkdir, mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { API_KEY } from '../helpers/http.js';
import { startServiceProcess } from '../helpers/processes.js';
import { waitFor } from '../helpers/wait-for.js';

describe('a heap snapshot of the API, as docs/operacao.md says', () => {
  it('SIGTTIN writes a snapshot and the API goes on serving; SIGUSR2 closes it as SIGTERM does', async () => {
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
        { timeoutMs: 30_000, intervalMs: 500, what: 'the heap snapshot', seen: () => `${last} bytes` },
      );
      expect(last).toBeGreaterThan(1_000_000);
      expect(api.child.exitCode).toBeNull();
      expect((await fetch(`${url}/healthz`)).status).toBe(200);

      // Its exit watched before the signal: stop() would add a SIGTERM, a second signal.
      const exited = once(api.child, 'exit');
      api.child.kill('SIGUSR2');
      expect((await exited)[0]).toBe(0);
      expect(api.lines.find((line) => line.msg === 'closing')).toMatchObject({ signal: 'SIGUSR2' });
    } finally {
      // SIGKILL: a process that never took the flag would be stopped (SIGTTIN's default), not ended.
      if (api.child.exitCode === null && api.child.signalCode === null) {
        const killed = once(api.child, 'exit');
        api.child.kill('SIGKILL');
        await killed;
      }
      await rm(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
