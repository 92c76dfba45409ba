// Section 6: a state's burst (SPEC §7, issues 35 and 47), before and now, and the 50,000-file batch
// (bench/burst.mjs).
import { BIG_FILES, PROBE_GAP_MS, runBurst } from '../burst.mjs';
import { fmt, table } from '../lib.mjs';
import { MiB } from './report.mjs';

/**
 * The worker's share of the burst against one job alone (bench/job-cost.mjs): a batch's task
 * stores its divergences twice, as the JSON answer and as its lines of the combined CSV.
 */
function jobCostText(cost, local, workerPerFile) {
  const ms = (x) => fmt(x, 2);
  const vsLocal = (perFile) => `${(perFile / local.cpuPerFileMs).toFixed(2)}×`;
  return [
    `What the worker's share is made of: the same return as one job, alone in a process (\`bench/job-cost.mjs\`: \`runJob\` on one thread, ${fmt(cost.files)} jobs a round after a warm-up, ${cost.rounds} rounds alternating, medians; ${fmt(cost.divergencias)} divergences a file).`,
    '',
    table(
      ['one job of this return', 'CPU ms per file', 'of which system', 'vs the local `censo lote` a file'],
      [
        [
          'as a direct task (its JSON answer)',
          ms(cost.direta.cpuMsPerFile),
          ms(cost.direta.systemMsPerFile),
          vsLocal(cost.direta.cpuMsPerFile),
        ],
        [
          "as a batch's task (its JSON answer and its lines of the combined CSV)",
          ms(cost.lote.cpuMsPerFile),
          ms(cost.lote.systemMsPerFile),
          vsLocal(cost.lote.cpuMsPerFile),
        ],
        ['the worker process in the burst, group jobs (probe included)', ms(workerPerFile), '', vsLocal(workerPerFile)],
      ],
    ),
    '',
    `The local \`censo lote\` writes each divergence once, into the combined output (${ms(local.cpuPerFileMs)} ms a file in all, its main thread included); a batch's task writes it twice, and the second form costs ${ms(cost.lote.cpuMsPerFile - cost.direta.cpuMsPerFile)} ms a file.`,
  ].join('\n');
}

export async function burstSection({ log, section, target, measure, quick, redisUrl, redisVersion }) {
  log("\nA state's burst (censo lote --servidor), before and now...");
  const burst = await measure(redisVersion, 'burst', () => runBurst({ quick, redisUrl, log }));
  log(quick ? '\nThe 50,000-file batch: not in a quick run.' : `\nThe burst at ${fmt(BIG_FILES)} files (current build alone)...`);
  const big = await measure(redisVersion && !quick, `burst at ${BIG_FILES} files`, () =>
    runBurst({ files: BIG_FILES, serviceOnly: true, redisUrl, log }),
  );
  if (burst) {
    const b = burst;
    const rev = b.beforeRev;
    const grupos = `now, TAREFAS_POR_JOB=${b.grupos.groupFiles} (default)`;
    const builds = [
      [`tree at ${rev}`, b.before],
      ['now, TAREFAS_POR_JOB=1', b.now],
      [grupos, b.grupos],
    ];
    const perFile = (seconds) => fmt((seconds * 1000) / b.files, 1);
    const failures = (r) =>
      r.failedFiles > 0 ? ` (${fmt(r.failedFiles)} files failed, a defect: ${r.failures.map((line) => `\`${line}\``).join(', ')})` : '';
    const identical = (r) => `${r.sameOutput ? '**byte-identical**' : '**different (a defect)**'}${failures(r)}`;
    const flat = (t) => `${(t.last / t.first).toFixed(2)}×`;
    const parts = [
      `${fmt(b.files)} school returns (xlsx, ${fmt(b.rowsPerFile)} rows each, hard links to one copy of a return in 50 folders) sent as one batch by \`censo lote <pasta> --servidor\` to one API and one worker process (queue mode, shared folder, the local Redis), against the local \`censo lote\` on the same folder, in the same run. The service runs three times on that folder, one after the other: first the whole tree at ${rev}, the last commit before issue 47's work (its CLI, API and worker, built beside the current one under \`.bench/tree-${rev}/\` by \`treeAt\` in \`bench/before.mjs\`, with a \`node_modules\` of its own whose \`@censo\` packages are that tree's), then the current build twice: with a queue job per task (\`TAREFAS_POR_JOB=1\`, the default until issue 47 and the earlier tree's) and with group jobs as deployed by default since issue 47 (\`TAREFAS_POR_JOB=${b.grupos.groupFiles}\`, the CLI's request size: one job per request). Every run writes the combined CSV; against the local one of its own tree's CLI (the answer's columns changed since ${rev}), the file at ${rev} is ${identical(b.before)}; against the current local one, the current one's ${identical(b.now)} and with group jobs ${identical(b.grupos)}. Each deployment gets its own probe: the small \`basico\` return sent to the synchronous \`POST /api/divergencias-rf\` one at a time (every ${PROBE_GAP_MS} ms), "idle" on the fresh deployment before its burst, "during" while the burst runs. Everything (CLI, API, worker, Redis, probe) shares the 2 cores.`,
      '',
      table(
        ['run', 'time s', 'files/s', 'rate vs local', 'CPU s', 'CPU ms per file', 'CPU vs local'],
        [
          [
            'local `censo lote` (2 job threads)',
            fmt(b.local.ms / 1000, 1),
            fmt(b.local.filesPerSec, 1),
            '1.00×',
            fmt(b.local.cpu, 1),
            fmt(b.local.cpuPerFileMs, 1),
            '1.00×',
          ],
          ...builds.map(([name, r]) => [
            `\`censo lote --servidor\`, ${name}`,
            fmt(r.server.ms / 1000, 1),
            fmt(r.filesPerSec, 1),
            `${r.ratio.toFixed(2)}×`,
            fmt(r.cpu.total, 1),
            fmt(r.cpuPerFileMs, 1),
            `${r.cpuVsLocal.toFixed(2)}×`,
          ]),
        ],
      ),
      '',
      table(
        ["where the burst's CPU went, ms per file", ...builds.map(([name]) => name)],
        [
          ['CLI (hash, upload, read results, write CSV)', 'cli'],
          ['API (intake, records, results; probe included)', 'api'],
          ['worker (the jobs; probe included)', 'worker'],
          ['Redis', 'redis'],
          ['**all four**', 'total'],
        ].map(([what, key]) => [what, ...builds.map(([, r]) => perFile(r.cpu[key]))]),
      ),
      '',
      jobCostText(b.jobCost, b.local, (b.grupos.cpu.worker * 1000) / b.files),
      '',
      table(
        ['process', 'build', 'RSS first third MiB', 'RSS last third MiB', 'last / first', 'peak MiB'],
        ['API', 'worker', 'CLI'].flatMap((name) =>
          builds.map(([build, r]) => {
            const t = r[name.toLowerCase()];
            return [name, build, fmt(t.first), fmt(t.last), flat(t), fmt(t.peak)];
          }),
        ),
      ),
      '',
      table(
        ['synchronous probe', 'requests', 'p50 ms', 'p95 ms', 'p95 vs idle', 'statuses'],
        builds.flatMap(([build, r]) => [
          [`idle, ${build}`, fmt(r.idle.n), fmt(r.idle.p50, 1), fmt(r.idle.p95, 1), '1.00×', JSON.stringify(r.idle.statuses)],
          [
            `during the burst, ${build}`,
            fmt(r.during.n),
            fmt(r.during.p50, 1),
            fmt(r.during.p95, 1),
            `${r.p95Ratio.toFixed(2)}×`,
            JSON.stringify(r.during.statuses),
          ],
        ]),
      ),
      '',
      `Redis memory per waiting task: ${fmt(b.before.perTaskBytes / 1024, 2)} KiB at ${rev}, ${fmt(b.now.perTaskBytes / 1024, 2)} KiB now (for each build, 1,000 tasks posted one return a request to an API with no worker, \`used_memory\` before and after: the BullMQ job, the task record, its idempotency record and the batch's indexes); ${fmt(b.now.perTaskBytesGrouped / 1024, 2)} KiB now when the same tasks come ${b.now.groupFiles} returns a request, as the current CLI sends a folder, and ${fmt(b.grupos.perTaskBytesGrouped / 1024, 2)} KiB so with group jobs (one BullMQ job and one hash field a task instead of a job each). A backlog at \`MAX_QUEUED_TAREFAS\` (10,000) is about ${fmt((b.now.perTaskBytes * 10_000) / MiB)} MiB. The same API then gets one request carrying two returns: at ${rev} it answers ${b.before.twoReturns.status}${b.before.twoReturns.erro ? ` ("${b.before.twoReturns.erro}")` : ''}, now ${b.now.twoReturns.status}${b.now.twoReturns.erro ? ` ("${b.now.twoReturns.erro}")` : ''}, so each deployment runs the build it is said to.`,
    ];
    if (big) {
      const g = big;
      const redisMiB = (bytes) => fmt(bytes / MiB, 1);
      const growth = g.download.apiRssPeakMB - g.download.apiRssBeforeMB;
      parts.push(
        '',
        `**${fmt(g.files)} files in one batch**`,
        '',
        `The current build alone (${g.tarefasPorJob > 1 ? `group jobs, \`TAREFAS_POR_JOB=${g.tarefasPorJob}\`` : 'a queue job per task'}; no local run, no probe, no earlier build): ${fmt(g.files)} hard links in 50 folders through \`censo lote --servidor\` to one API and one worker process in ${fmt(g.server.ms / 1000)} s (${fmt(g.filesPerSec, 1)} files/s, ${fmt(g.cpuPerFileMs, 1)} CPU ms per file over CLI, API, worker and Redis). RSS of the three processes and Redis's \`used_memory\` sampled every second (${fmt(g.api.samples)} samples); then the batch's combined CSV (\`GET /api/lotes/{id}/divergencias?format=csv\`, the batch found as the bench key's newest by \`GET /api/lotes?limit=1\`) read to its end into a hash while the API's RSS is sampled every 50 ms.`,
        '',
        table(
          ['during the batch', 'first third MiB', 'last third MiB', 'last / first', 'peak MiB'],
          [
            ['API', fmt(g.api.first), fmt(g.api.last), flat(g.api), fmt(g.api.peak)],
            ['worker', fmt(g.worker.first), fmt(g.worker.last), flat(g.worker), fmt(g.worker.peak)],
            ['CLI (`censo lote --servidor`)', fmt(g.cli.first), fmt(g.cli.last), flat(g.cli), fmt(g.cli.peak)],
            [
              `Redis \`used_memory\` (${redisMiB(g.redis.before)} MiB before)`,
              redisMiB(g.redis.first),
              redisMiB(g.redis.last),
              flat(g.redis),
              redisMiB(g.redis.peak),
            ],
          ],
        ),
        '',
        table(
          ['combined answer', 'status', 'MiB', 'time s', 'MiB/s', 'API RSS before MiB', 'API RSS peak MiB'],
          [
            [
              '`GET /api/lotes/{id}/divergencias?format=csv`',
              String(g.download.status),
              fmt(g.download.bytes / MiB),
              fmt(g.download.ms / 1000, 1),
              fmt(g.download.bytes / MiB / (g.download.ms / 1000)),
              fmt(g.download.apiRssBeforeMB),
              fmt(g.download.apiRssPeakMB),
            ],
          ],
        ),
        '',
        `${g.failedFiles > 0 ? `**${fmt(g.failedFiles)} files failed** (a defect; the CLI exited 1), e.g. ${g.failures.map((line) => `\`${line}\``).join(', ')}. ` : ''}${g.download.parcial ? 'The batch was not whole (409): the answer was read with `parcial=true`. ' : ''}The API's RSS grew by ${fmt(growth)} MiB while it sent the answer. Its lines (${fmt(g.download.lines)}: a header and one line a divergence, the route adding a \`referencia\` column) are ${g.download.sameRowsAsCli ? 'as many as' : '**not as many as (a defect)**'} the CLI's combined CSV of the same run (${fmt(g.cliOutput.lines)}).`,
      );
    } else if (!quick) {
      parts.push('', `**${fmt(BIG_FILES)} files in one batch**`, '', '_Failed, see the console output._');
    }
    section("6. A state's burst: one batch of school returns through the service, before and now", parts.join('\n'));
    // The targets are read on the group jobs' run (what an operator of a state's bursts deploys), the default beside it.
    const g = b.grupos;
    const was = (key, digits = 2) => `job per task: ${b.now[key].toFixed(digits)}×; at ${rev}: ${b.before[key].toFixed(digits)}×`;
    target(
      'burst: CPU per file through the service (CLI + API + worker + Redis) ≤ 1.5× the local censo lote',
      `${g.cpuVsLocal.toFixed(2)}× with group jobs (${fmt(g.cpuPerFileMs, 1)} / ${fmt(b.local.cpuPerFileMs, 1)} ms; ${was('cpuVsLocal')})`,
      g.cpuVsLocal <= 1.5,
    );
    target(
      'burst: censo lote --servidor ≥ 0.6× the local rate (same files, same run)',
      `${g.ratio.toFixed(2)}× with group jobs (${was('ratio')})`,
      g.ratio >= 0.6,
    );
    target(
      'burst: synchronous p95 during the burst ≤ 1.5× idle',
      `${fmt(g.during.p95, 1)} / ${fmt(g.idle.p95, 1)} ms = ${g.p95Ratio.toFixed(2)}× with group jobs (${was('p95Ratio')})`,
      g.p95Ratio <= 1.5,
    );
    target(
      'burst: Redis memory per waiting task ≤ 2.7 KiB',
      `${fmt(g.perTaskBytesGrouped / 1024, 2)} KiB with group jobs, ${g.groupFiles} returns a request as the CLI sends them (a job per task: ${fmt(b.now.perTaskBytesGrouped / 1024, 2)} KiB, and ${fmt(b.now.perTaskBytes / 1024, 2)} KiB one return a request; at ${rev}: ${fmt(b.before.perTaskBytes / 1024, 2)} KiB)`,
      g.perTaskBytesGrouped <= 2.7 * 1024,
    );
  } else {
    section(
      "6. A state's burst: one batch of school returns through the service, before and now",
      redisVersion ? '_Failed, see the console output._' : '_Redis not reachable: skipped._',
    );
    target('burst: CPU per file, rate, probe p95 and Redis per waiting task', 'not measured', null);
  }
  if (big) {
    const procs = [
      ['API', big.api],
      ['worker', big.worker],
      ['CLI', big.cli],
    ];
    target(
      `burst at ${fmt(big.files)} files: RSS of every process flat (last third ≤ 1.1× first third)`,
      procs.map(([name, t]) => `${name} ${fmt(t.first)} → ${fmt(t.last)} MiB`).join(', '),
      procs.every(([, t]) => t.last <= 1.1 * t.first),
    );
    target(
      `burst at ${fmt(big.files)} files: the combined CSV streamed in bounded memory (API RSS +≤ 100 MiB while sending it)`,
      `${fmt(big.download.bytes / MiB)} MiB in ${fmt(big.download.ms / 1000, 1)} s, API ${fmt(big.download.apiRssBeforeMB)} → ${fmt(big.download.apiRssPeakMB)} MiB${big.failedFiles > 0 ? `; ${fmt(big.failedFiles)} files failed` : ''}`,
      big.download.status === 200 && big.download.sameRowsAsCli && big.download.apiRssPeakMB - big.download.apiRssBeforeMB <= 100,
    );
  } else {
    target(`burst at ${fmt(BIG_FILES)} files: RSS flat, combined CSV streamed`, quick ? 'not measured (quick run)' : 'not measured', null);
  }
}
