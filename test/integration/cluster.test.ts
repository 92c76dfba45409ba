// The cluster fault suite's short profile (CLUSTER.md): two API replicas, three
// workers, Redis with Sentinel and an S3 bucket, each in a network namespace of its own, under
// every fault once (workers isolated, paused and killed, an API killed, the Redis master killed,
// all Redis unreachable for 15 s (30 s in the long profile), the bucket unreachable, and a
// rolling upgrade: every API and worker replaced one at a time by the next version, whose jobs
// carry the next contract, and back again while group jobs of the next contract wait). Fails when the checker finds an answer that is not the embedded
// mode's nor a documented 503/504, a request past its deadline, an upload with two results, a
// slow recovery, an idle worker, a replaced process that did not leave on its own, a request it
// took left unanswered, a job of the new contract run by an older worker, a task the rollback
// stranded, or anything left
// behind. The suite removes every namespace, link and process it made; afterAll runs its cleanup
// again in case the run was cut short.
import { spawnSync } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { ROOT, runClusterScript } from '../helpers/cluster-script.js';
import { onThisMachine } from '../helpers/deadline.js';

const RUN_SCRIPT = 'cluster/run.mjs';
const RUN = path.join(ROOT, RUN_SCRIPT);
const LIMIT_MS = onThisMachine(280_000);
let out: string | undefined;

afterAll(async () => {
  spawnSync(process.execPath, [RUN, '--cleanup'], { cwd: ROOT, timeout: onThisMachine(60_000), stdio: 'ignore' });
  if (out) await rm(out, { recursive: true, force: true });
});

it(
  'holds under the seeded fault schedule, and leaves nothing behind',
  async () => {
    out = await mkdtemp(path.join(os.tmpdir(), 'censo-cluster-test-'));
    const report = path.join(out, 'CLUSTER.md');
    // The run tears itself down on SIGTERM; past that, SIGKILL (afterAll still cleans up).
    const { code, output } = await runClusterScript(
      RUN_SCRIPT,
      ['--profile', 'short', '--out', path.join(out, 'run'), '--report', report],
      {
        limitMs: LIMIT_MS,
        termBeforeMs: 30_000,
        killAfterMs: 20_000,
      },
    );

    const verdict = JSON.parse(await readFile(path.join(out, 'run', 'verdict.json'), 'utf8').catch(() => '{}')) as {
      checks?: { name: string; ok: boolean; detail: string }[];
    };
    const failed = (verdict.checks ?? []).filter((c) => !c.ok);
    expect(failed, output.slice(-4000)).toEqual([]);
    expect(verdict.checks?.length, output.slice(-4000)).toBe(10);
    expect(code, output.slice(-4000)).toBe(0);
  },
  LIMIT_MS,
);
