// The access log's rotation on a VM (deploy/vm/logrotate/censo-api): read, and run by the real
// logrotate against the real API (services/api/dist/main.js with ACCESS_LOG) as a host runs it.
// logrotate moves the file and its postrotate sends SIGHUP to the API, which reopens ACCESS_LOG at
// its path (issue 48): the line written before the rotation stays in the moved file, the next
// one goes to a new file, and none is lost (copytruncate, before, could lose those written
// between its copy and its truncation).
import { mkdir, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FIXTURES_DIR } from '../helpers/fixtures.js';
import { API_KEY, formWith } from '../helpers/http.js';
import { startServiceProcess, type ServiceProcess } from '../helpers/processes.js';
import { waitFor } from '../helpers/wait-for.js';
import { parseEnvFile, read, requireTool, runTool } from './recipes.js';
import { onThisMachine } from '../helpers/deadline.js';

const RECIPE = 'deploy/vm/logrotate/censo-api';
const exampleValue = (name: string) => parseEnvFile(read('.env.example')).find((e) => e.name === name)!.value;
/** The line of the recipe that finds the API's main process (systemd), replaced here by the test's process. */
const FIND_PID = /^\s*pid=\$\(systemctl show --property=MainPID --value censo-api\.service 2>\/dev\/null\)$/m;
const basicoRetorno = path.join(FIXTURES_DIR, 'basico', 'retorno.json');

let scratch = '';
let api: ServiceProcess | undefined;
beforeAll(async () => {
  scratch = await mkdtemp(path.join(os.tmpdir(), 'censo-logrotate-'));
});
afterAll(async () => {
  await api?.stop();
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

async function upload(url: string): Promise<void> {
  const body = await formWith([{ field: 'retorno', path: basicoRetorno, filename: 'retorno.json' }]);
  const response = await fetch(`${url}/api/divergencias-rf`, { method: 'POST', headers: { 'x-api-key': API_KEY }, body });
  expect(response.status).toBe(200);
  await response.arrayBuffer();
}

async function lines(file: string): Promise<Array<Record<string, unknown>>> {
  const text = await readFile(file, 'utf8').catch(() => '');
  return text
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

describe('deploy/vm/logrotate/censo-api', () => {
  it('keeps 180 days of the access log, as the censo user, moving the file and signalling the API (SIGHUP) instead of copytruncate', () => {
    const text = read(RECIPE);
    expect(text).toMatch(new RegExp(`^${exampleValue('ACCESS_LOG').replace(/\./g, '\\.')} \\{$`, 'm'));
    expect(text).toMatch(/^\s*su censo censo$/m);
    expect(Number(/^\s*rotate (\d+)$/m.exec(text)?.[1])).toBeGreaterThanOrEqual(180);
    expect(text).not.toMatch(/^\s*copytruncate$/m);
    // The moved file may still receive the lines written before the API reopens: compressed a rotation later.
    expect(text).toMatch(/^\s*delaycompress$/m);
    expect(text).toMatch(FIND_PID);
    expect(/^\s*postrotate$([\s\S]*?)^\s*endscript$/m.exec(text)?.[1]).toMatch(/kill -HUP "\$pid"/);
  });

  it(
    'a real rotation of the API’s ACCESS_LOG: the earlier line in the moved file, the later one in a new file',
    async () => {
      const logrotate = requireTool('logrotate');
      const dir = path.join(scratch, 'log');
      await mkdir(dir, { mode: 0o700 });
      const log = path.join(dir, 'acesso.log');
      api = startServiceProcess('services/api/dist/main.js', {
        API_KEY,
        HOST: '127.0.0.1',
        PORT: '0',
        LOG_LEVEL: 'info',
        UPLOAD_DIR: path.join(scratch, 'uploads'),
        ACCESS_LOG: log,
      });
      const url = String((await api.line('censo-api listening', onThisMachine(30_000))).url);
      await upload(url);
      await waitFor(async () => (await lines(log)).length === 1, { what: 'the first access line' });

      // The recipe with this test's file, its own user (the censo user does not exist here) and
      // the test's API in place of systemd's main process.
      const group = (await runTool('id', ['-gn'])).stdout.trim();
      const conf = read(RECIPE)
        .replaceAll(exampleValue('ACCESS_LOG'), log)
        .replace(/^\s*su censo censo$/m, `\tsu ${os.userInfo().username} ${group}`)
        .replace(FIND_PID, `\t\tpid=${api.child.pid}`);
      await writeFile(path.join(scratch, 'logrotate.conf'), conf);
      const run = await runTool(logrotate, [
        '--force',
        '--state',
        path.join(scratch, 'logrotate.state'),
        path.join(scratch, 'logrotate.conf'),
      ]);
      expect(run.stderr).toBe('');
      expect(run.code).toBe(0);
      expect(await api.line('log files reopened')).toMatchObject({ signal: 'SIGHUP' });
      await upload(url);
      await waitFor(async () => (await lines(log)).length === 1, { what: 'the second access line, in a new file' });

      const rotated = (await readdir(dir)).filter((name) => name !== 'acesso.log');
      expect(rotated).toHaveLength(1);
      expect(rotated[0]).toMatch(/^acesso\.log-\d{8}$/);
      const before = await lines(path.join(dir, rotated[0]!));
      const after = await lines(log);
      expect(before).toHaveLength(1);
      expect(after).toHaveLength(1);
      for (const line of [...before, ...after]) expect(line).toMatchObject({ log: 'access', route: '/api/divergencias-rf', status: 200 });
      expect(after[0]!.requestId).not.toBe(before[0]!.requestId);
      expect(api.child.exitCode).toBeNull();
    },
    onThisMachine(60_000),
  );
});
