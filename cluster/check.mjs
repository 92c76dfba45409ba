// The checker: what must hold over the history of a run and the state it left (issue 22 §2).
// Pure: it gets the records and the end state, and says which checks held and why not.
import { median, percentile } from '../bench/lib.mjs';
import { ipOf } from './net.mjs';
import { API_HOSTS } from './topology.mjs';

const API_IPS = Object.fromEntries(API_HOSTS.map((host) => [host, ipOf(host)]));

/** The only answers other than the right 200 an upload may get (SPEC §5, §9). */
export const DOCUMENTED = {
  503: [
    'Fila de processamento indisponível.',
    'Armazenamento temporário indisponível.',
    'Serviço sobrecarregado, tente novamente em instantes.',
  ].map((erro) => JSON.stringify({ erro })),
  504: [JSON.stringify({ erro: 'Tempo esgotado ao processar o arquivo.' })],
};

/** How long an API may still be deleting a request's objects after its answer. */
const CLEANUP_AFTER_ANSWER_MS = 2_000;

/**
 * The API answers an upload by JOB_TIMEOUT_MS after its body is in (504 then); the suite's
 * uploads (16 MiB at most, over a local bridge) and answers take well under this beyond it.
 */
export const DEADLINE_SLACK_MS = 5_000;

/** A request sent this long before an API's SIGTERM may still have been on its way to it. */
const IN_TRANSIT_MS = 1_000;

/** How long after the last heal the service may take to be back at its healthy latency. */
export function recoveryBoundMs(settings, baselineP95) {
  // A job stranded on a worker that died or was cut off is seen as stalled within its lock plus
  // one stalled check, and then runs again (one job's time, bounded by the healthy p95); a
  // worker's connections retry every 5 s at most, the API's every 2 s.
  return settings.lockMs + settings.stalledMs + 5_000 + 2_000 + Math.ceil(baselineP95);
}

export function check({
  requests,
  faults,
  expected,
  jobsDone,
  completedAreas,
  unremovedAreas,
  receivedRequests = new Set(),
  workers = { versions: {}, handBacks: 0 },
  endState,
  settings,
}) {
  const checks = [];
  const add = (name, ok, detail) => checks.push({ name, ok, detail });
  const latency = (r) => r.end - r.start;
  const ok200 = (r) => r.status === 200 && expected.get(r.file)?.sha256 === r.sha256;

  // --- Every answer is the right one or a documented 503/504 ------------------------------------
  const apiKills = faults.filter((f) => f.name === 'api-killed');
  const apiOf = (url) => new URL(url).hostname;
  /** A request cut by its API's kill, or sent while that API was down, has no answer to give. */
  const explainedByKill = (r) => apiKills.some((f) => f.targetIp === apiOf(r.api) && r.start <= f.end + 500 && r.end >= f.killedAt - 500);
  // A rolling upgrade stops each API gracefully: what it received, it answers. A request it
  // never received (refused while it was down, or sent on a keep-alive connection it was closing)
  // has no answer, and the client sends it to the other replica, as behind a load balancer.
  const replacements = faults
    .filter((f) => f.name === 'rolling-restart')
    .flatMap((f) => [...(f.steps ?? []), ...(f.rollback?.steps ?? [])])
    .filter((step) => API_IPS[step.host]);
  const received = (r) => receivedRequests.has(`${r.upload}.${r.attempt}`);
  const refusedByReplacement = (r) =>
    !received(r) &&
    replacements.some(
      (step) => API_IPS[step.host] === apiOf(r.api) && r.start >= step.stoppedAt - IN_TRANSIT_MS && r.start <= step.readyAt,
    );
  const wrong = [];
  let unanswered = 0;
  let refused = 0;
  for (const r of requests) {
    if (r.status === 200) {
      if (!ok200(r)) wrong.push(`${r.upload}.${r.attempt} (${r.file}): 200 with a body that is not the embedded mode's`);
    } else if (r.status === 0) {
      if (explainedByKill(r)) unanswered++;
      else if (refusedByReplacement(r)) refused++;
      else wrong.push(`${r.upload}.${r.attempt} (${r.file}) to ${r.api}: no answer (${r.error})`);
    } else if (!(DOCUMENTED[r.status] ?? []).includes(r.text)) {
      wrong.push(`${r.upload}.${r.attempt} (${r.file}): ${r.status} ${String(r.text ?? '').slice(0, 120)}`);
    }
  }
  add(
    'every 200 is byte-identical to the embedded mode; every other answer a documented 503/504',
    wrong.length === 0,
    wrong.length === 0
      ? `${requests.length} requests; ${unanswered} cut by an API being killed (no answer possible); ` +
          `${refused} never reached an API being replaced (refused, retried on the other)`
      : `${wrong.length} wrong: ${wrong.slice(0, 10).join('; ')}`,
  );

  // --- No request waits past its deadline ---------------------------------------------------------
  const deadlineMs = settings.jobTimeoutMs + DEADLINE_SLACK_MS;
  const late = requests.filter((r) => latency(r) > deadlineMs);
  add(
    `no request waits past its deadline (JOB_TIMEOUT_MS + ${DEADLINE_SLACK_MS / 1000} s for the upload and the answer: ${deadlineMs / 1000} s)`,
    late.length === 0,
    late.length === 0
      ? `longest ${Math.round(Math.max(0, ...requests.map(latency)))} ms`
      : `${late.length} late: ${late
          .slice(0, 10)
          .map((r) => `${r.upload}.${r.attempt} (${r.file}) ${r.status} after ${latency(r)} ms`)
          .join('; ')}`,
  );

  // --- No upload has two different results -------------------------------------------------------
  const byUpload = new Map();
  for (const r of requests.filter((r) => r.status === 200)) {
    if (!byUpload.has(r.upload)) byUpload.set(r.upload, new Set());
    byUpload.get(r.upload).add(r.sha256);
  }
  const twoResults = [...byUpload].filter(([, hashes]) => hashes.size > 1).map(([id]) => id);
  add(
    'no upload has two different results',
    twoResults.length === 0,
    twoResults.length === 0 ? `${byUpload.size} uploads answered 200` : twoResults.join(', '),
  );

  // --- Recovery after the last heal ----------------------------------------------------------------
  const firstFault = Math.min(...faults.map((f) => f.start));
  const lastHeal = Math.max(...faults.map((f) => f.end));
  const baseline = requests.filter((r) => r.end < firstFault && ok200(r)).map(latency);
  const baselineP50 = median(baseline);
  const baselineP95 = percentile(baseline, 95);
  const healthyMs = Math.max(2 * baselineP50, baselineP95);
  const bound = recoveryBoundMs(settings, baselineP95);
  const tail = requests.filter((r) => r.start >= lastHeal).sort((a, b) => a.start - b.start);
  // The earliest start after which every request succeeded, at a median latency back to healthy.
  let recoveredAt = null;
  for (let i = 0; i < tail.length; i++) {
    const rest = tail.slice(i);
    if (rest.every(ok200) && median(rest.map(latency)) <= healthyMs) {
      recoveredAt = tail[i].start;
      break;
    }
  }
  const recoveryMs = recoveredAt === null ? null : recoveredAt - lastHeal;
  const after = recoveredAt === null ? [] : tail.filter((r) => r.start >= recoveredAt);
  add(
    `after the last heal, every request succeeds at healthy latency within ${bound} ms (lock + stalled check + reconnects + a job)`,
    recoveryMs !== null && recoveryMs <= bound && after.length >= 10,
    recoveryMs === null
      ? `never: ${tail.filter((r) => !ok200(r)).length} of the ${tail.length} requests after the heal failed`
      : `after ${recoveryMs} ms; then ${after.length} requests, all 200, median ${Math.round(median(after.map(latency)))} ms (healthy: baseline median ${Math.round(baselineP50)} ms, p95 ${Math.round(baselineP95)} ms)`,
  );

  // --- Every worker completes jobs again after the last heal ---------------------------------------
  const idle = Object.entries(jobsDone)
    .filter(([, done]) => !done.some((job) => job.time > lastHeal))
    .map(([host]) => host);
  add(
    'every worker completes jobs again after the last heal',
    idle.length === 0,
    idle.length === 0
      ? Object.entries(jobsDone)
          .map(([host, done]) => `${host}: ${done.filter((job) => job.time > lastHeal).length}`)
          .join(', ')
      : `no job done after the heal by ${idle.join(', ')}`,
  );

  // --- Rolling upgrade ----------------------------------------------------------------------------
  add(
    'rolling upgrade: every API and worker replaced one at a time by the next version under load; each left on its own, ' +
      'every request it took was answered, none lost its job, no job of the new contract ran on an older worker',
    ...rollingUpgrade({ faults, requests, ok200, received, jobsDone, workers }),
  );

  // --- Rollback -------------------------------------------------------------------------------------
  add(
    'rollback: the next version back to this one, APIs then workers, while group jobs of the next contract wait; ' +
      'no task stranded (every one concluida), none of them run by a worker of an older contract',
    ...rollBack({ faults, jobsDone, workers }),
  );

  // --- Nothing left behind -----------------------------------------------------------------------
  const { queue, strayKeys, bucketAreas, folders, killedWorkers } = endState;
  const unfinished = Object.entries(queue).filter(([state, n]) => !['completed', 'failed'].includes(state) && n > 0);
  add(
    'nothing left in Redis beyond the documented retention',
    unfinished.length === 0 && strayKeys.length === 0,
    `${Object.entries(queue)
      .map(([state, n]) => `${state} ${n}`)
      .join(
        ', ',
      )}${strayKeys.length ? `; stray keys: ${strayKeys.slice(0, 5).join(', ')}` : ''} (completed and failed jobs are kept 1 h / 24 h)`,
  );
  // Objects of requests in flight on an API when it was killed stay until the bucket's lifecycle
  // rule expires them (README, Storage): no process is left to delete them. So may those of a
  // request answered just before the kill, whose deletion the kill cut, and those the API could
  // not delete because the bucket was unreachable (logged as 'could not remove upload files',
  // the README's documented outcome). Any other is a leak.
  const inFlightAtKill = apiKills.reduce(
    (n, f) =>
      n +
      requests.filter((r) => f.targetIp === apiOf(r.api) && r.start <= f.killedAt && r.end >= f.killedAt - CLEANUP_AFTER_ANSWER_MS).length,
    0,
  );
  const logged = bucketAreas.filter((area) => unremovedAreas.has(area));
  const orphans = bucketAreas.filter((area) => !completedAreas.has(area) && !unremovedAreas.has(area));
  const leaked = bucketAreas.filter((area) => completedAreas.has(area) && !unremovedAreas.has(area));
  add(
    'nothing left in the bucket beyond the documented retention',
    leaked.length === 0 && orphans.length <= inFlightAtKill,
    `${bucketAreas.length} request areas left: ${logged.length} the API logged it could not delete (bucket unreachable), ` +
      `${orphans.length} of requests cut by an API kill (${inFlightAtKill} were in flight or just answered); the lifecycle rule removes both. ` +
      `${leaked.length} of requests that ended${leaked.length ? `: ${leaked.slice(0, 5).join(', ')}` : ''}`,
  );
  const residue = Object.entries(folders).filter(([, entries]) => entries.length > 0);
  const unexplained = residue.filter(([host, entries]) => entries.length > (killedWorkers[host] ?? 0));
  add(
    'nothing left in the folders',
    unexplained.length === 0,
    residue.length === 0
      ? 'every UPLOAD_DIR is empty'
      : residue.map(([host, entries]) => `${host}: ${entries.length} (${killedWorkers[host] ?? 0} SIGKILLed mid-job)`).join(', '),
  );

  // --- What the run cost ---------------------------------------------------------------------------
  // From Redis' own count of the times each job was started (BullMQ's attemptsStarted).
  const attempts = endState.attempts ?? [];
  const byStatus = {};
  for (const r of requests) byStatus[r.status] = (byStatus[r.status] ?? 0) + 1;

  const recovery = faults.map((f) => {
    const next = requests.filter((r) => r.start >= f.end && ok200(r)).sort((a, b) => a.end - b.end)[0];
    const during = requests.filter((r) => r.end >= f.start && r.start <= f.end);
    return {
      name: f.name,
      target: f.target,
      start: f.start,
      end: f.end,
      durationMs: f.end - f.start,
      promotionMs: f.promotedAt ? f.promotedAt - f.killedAt : null,
      failedDuring: during.filter((r) => !ok200(r)).length,
      requestsDuring: during.length,
      firstSuccessAfterHealMs: next ? next.end - f.end : null,
    };
  });

  return {
    ok: checks.every((c) => c.ok),
    checks,
    stats: {
      requests: requests.length,
      uploads: new Set(requests.map((r) => r.upload)).size,
      byStatus,
      baselineP50,
      baselineP95,
      recoveryMs,
      recoveryBoundMs: bound,
      jobs: attempts.length,
      executions: attempts.reduce((a, b) => a + b, 0),
      duplicateExecutions: attempts.reduce((n, started) => n + Math.max(0, started - 1), 0),
      jobsRunTwice: attempts.filter((started) => started > 1).length,
      unanswered,
    },
    recovery,
  };
}

/**
 * [held, detail] of the rolling upgrade (SPEC §9): each step's process left on its own (exit 0)
 * and its replacement became ready; every request sent during the upgrade that an API received
 * got an answer, the right 200 (a 503/504 would mean its job was lost or stranded); and each
 * worker ran only jobs of a contract it knows, with jobs of the new contract done.
 */
function rollingUpgrade({ faults, requests, ok200, received, jobsDone, workers }) {
  const roll = faults.find((f) => f.name === 'rolling-restart');
  if (!roll) return [false, 'no rolling upgrade in this run'];
  const steps = roll.steps ?? [];
  const notClean = steps.filter((step) => step.exit !== 0 || !step.readyAt).map((step) => `${step.host} (${step.exit})`);
  const during = requests.filter((r) => r.start >= roll.start && r.start <= roll.end);
  const cut = during.filter((r) => r.status === 0 && received(r));
  const notRight = during.filter((r) => r.status !== 0 && !ok200(r));
  const done = Object.values(jobsDone).flat();
  const misrun = done.filter((job) => job.contract !== null && (workers.versions[job.pid] ?? Infinity) < job.contract);
  const { from, to } = roll.contract ?? {};
  const newJobs = done.filter((job) => job.contract === to).length;
  const longest = Math.max(0, ...steps.map((step) => step.readyAt - step.stoppedAt));
  const held = steps.length > 0 && notClean.length === 0 && cut.length === 0 && notRight.length === 0 && misrun.length === 0 && newJobs > 0;
  const problems = [
    notClean.length ? `did not leave on their own or never got ready: ${notClean.join(', ')}` : '',
    cut.length
      ? `${cut.length} received and never answered: ${cut
          .slice(0, 5)
          .map((r) => `${r.upload}.${r.attempt}`)
          .join(', ')}`
      : '',
    notRight.length
      ? `${notRight.length} not the right 200: ${notRight
          .slice(0, 5)
          .map((r) => `${r.upload}.${r.attempt} ${r.status}`)
          .join(', ')}`
      : '',
    misrunDetail(misrun),
    newJobs === 0 ? `no job of contract ${to} done` : '',
  ].filter(Boolean);
  const summary =
    `${steps.map((step) => step.host).join(', ')} replaced in ${Math.round((roll.end - roll.start) / 100) / 10} s, ` +
    `at most ${Math.round(longest / 100) / 10} s from SIGTERM to the next version ready; ${during.length} requests meanwhile; ` +
    `contract ${from} → ${to}: ${newJobs} jobs of contract ${to} done, older workers that gave such jobs back: ${workers.handBacks}`;
  return [held, problems.length ? `${problems.join('; ')}. ${summary}` : summary];
}

/**
 * [held, detail] of the rollback (SPEC §12): each step left on its own and its replacement became
 * ready; the batch sent before it was queued as group jobs of the next contract; every one of its
 * tasks ended concluida (a task left waiting for a worker no longer there is stranded); and no
 * worker ran a job of a contract newer than its own (the rolling upgrade's check covers every job).
 */
function rollBack({ faults, jobsDone, workers }) {
  const roll = faults.find((f) => f.name === 'rolling-restart');
  const back = roll?.rollback;
  if (!back) return [false, 'no rollback in this run'];
  const { to } = roll.contract ?? {};
  const notClean = back.steps.filter((step) => step.exit !== 0 || !step.readyAt).map((step) => `${step.host} (${step.exit})`);
  const groups = back.queued.filter((job) => job.name === 'grupo' && job.contract === to);
  const estados = Object.entries(back.estados ?? {});
  const stranded = estados.filter(([, estado]) => estado !== 'concluida');
  const done = Object.values(jobsDone).flat();
  const misrun = done.filter(
    (job) => job.time >= back.start && job.contract !== null && (workers.versions[job.pid] ?? Infinity) < job.contract,
  );
  const held =
    back.status === 202 &&
    back.tarefas.length > 0 &&
    estados.length === back.tarefas.length &&
    groups.length > 0 &&
    notClean.length === 0 &&
    stranded.length === 0 &&
    misrun.length === 0;
  const problems = [
    back.status !== 202 ? `the batch request was answered ${back.status}` : '',
    groups.length === 0
      ? `no group job of contract ${to} was queued (${back.queued.map((j) => `${j.name}@${j.contract}`).join(', ')})`
      : '',
    notClean.length ? `did not leave on their own or never got ready: ${notClean.join(', ')}` : '',
    stranded.length
      ? `${stranded.length} tasks not concluida: ${stranded
          .slice(0, 5)
          .map(([id, estado]) => `${id} ${estado}`)
          .join(', ')}`
      : '',
    misrunDetail(misrun),
  ].filter(Boolean);
  const summary =
    `${back.steps.map((step) => step.host).join(', ')} back to contract ${roll.contract?.from}; ` +
    `${back.tarefas.length} tasks in ${groups.length} group jobs of contract ${to} waiting meanwhile; ` +
    `all concluida ${back.endedAt ? back.endedAt - back.resumedAt : '?'} ms after the queue resumed`;
  return [held, problems.length ? `${problems.join('; ')}. ${summary}` : summary];
}

/** The rolling restart's and the rollback's shared failure: jobs a worker older than their contract ran. */
function misrunDetail(misrun) {
  return misrun.length
    ? `${misrun.length} jobs run by a worker of an older contract: ${misrun
        .slice(0, 5)
        .map((j) => j.jobId)
        .join(', ')}`
    : '';
}
