// What the API (producer) and the worker (consumer) must agree on: queue name, job options,
// and the custom events they exchange. Imported by both, so they cannot drift apart.
import type { JobsOptions } from 'bullmq';
import type { JobData } from '../core/types.js';
import { GROUP_CONTRACT_VERSION, GROUP_JOB, type GroupJobData } from './task-groups.js';

/**
 * One queue with named jobs (`job.name` = JobData `kind`) rather than one queue per kind: both
 * kinds share the same workers, pool and limits, and one QueueEvents subscription per API
 * process covers every kind. Keys are `<QUEUE_PREFIX>:censo-jobs:*`; with the default
 * hash-tagged prefix `{censo}` they all hash to one Redis Cluster slot, as BullMQ requires.
 */
export const JOB_QUEUE = 'censo-jobs';

/**
 * Asynchronous tasks' jobs (SPEC §7) have a queue of their own, with workers and threads of
 * their own (at a lower OS priority): a synchronous request never waits for a slot or a thread
 * behind a state's burst. Jobs an API from before this queue put on JOB_QUEUE (with a priority)
 * still run there, and the API still looks for a task's job there (a rolling upgrade).
 */
export const TASK_QUEUE = 'censo-tarefas';

/**
 * Approximate length of the queue's events stream. Also passed to every custom event we publish,
 * because `publishEvent` trims the shared stream to its own `maxEvents` argument.
 */
export const EVENTS_MAX_LEN = 10_000;

/**
 * Attempts cover infrastructure failures only (a worker thread crashed, Redis hiccup while
 * finishing): a bad file is a result (`ok: false`), never a thrown error, so it is not retried.
 * The request's deadline bounds the retries anyway: when it passes, the API removes the job.
 */
export const JOB_ATTEMPTS = 3;

/** A stalled job (its worker died) goes back to the queue this many times before it fails. */
export const MAX_STALLED_COUNT = JOB_ATTEMPTS - 1;

/**
 * Results live on disk next to the upload, so finished jobs only keep a tiny summary in Redis.
 * They are still kept for a while (by age and by count, so Redis cannot grow without bound):
 * an API instance that missed the `completed` event across a reconnect reads the state and
 * return value back from the job itself, and operators can inspect recent failures.
 */
export const JOB_OPTIONS = {
  attempts: JOB_ATTEMPTS,
  backoff: { type: 'fixed', delay: 500 },
  removeOnComplete: { age: 3_600, count: 10_000 },
  removeOnFail: { age: 24 * 3_600, count: 10_000 },
} as const satisfies JobsOptions;

/**
 * Custom event the API publishes on the queue's events stream when a request ends before its
 * job (timeout, client gone) and the job could not simply be removed because a worker holds it.
 * The worker that holds it aborts the job's signal. Payload: `{ jobId }`. Since
 * ADDRESSED_CONTRACT_VERSION a cancellation goes to the holding worker's own channel
 * (addressed.ts); this event only when no subscriber took it there (an older worker holds the job).
 */
export const CANCEL_EVENT = 'censo:cancel';

/** Abort reasons the worker gives its processor, so it knows what to do with the job. */
export const ABORT_CANCELLED = 'cancelled: the request ended';
export const ABORT_SHUTDOWN = 'shutdown: the worker is closing';

/** Failure messages that are expected after the request has gone; logged quietly. */
export const UPLOAD_GONE = 'upload folder is gone (the request already ended)';

/**
 * The version of this contract (job data, names, results and events) a worker knows. Processes of
 * version N and N+1 share one queue during a rolling upgrade (SPEC §9): a worker takes the
 * versions it knows, 1 up to its own, and gives any newer job back to the queue for a newer
 * worker, never failing it. Raise it whenever a change would make an older worker misread a job
 * (a new kind, a new field it must not ignore) or answer it the old way.
 *
 * 2: group jobs (task-groups.ts, GROUP_CONTRACT_VERSION), several asynchronous tasks in one job.
 * 3: a core job's answer changed (issue 46: each divergence's `correcao`, INEP's rules in the
 *    corrected file): a worker of 2 or less would answer it the old way, so it gives it back.
 * 4: the worker hears cancellations on a channel of its own and tells a job's end to the API
 *    that queued it (addressed.ts, ADDRESSED_CONTRACT_VERSION), and an API reads the events stream
 *    while any older worker is connected; and a core job's answer changed again (issue 56: the
 *    persons' `arquivo_*`, `nao_aplicadas`, `regra_25`; filiação 1 and rule 25 in the corrected
 *    file; the mother's `educacenso`), so a worker of 3 or less gives core jobs back.
 * (A literal: the fault suite's next release, cluster/release.mjs, raises it in the build.)
 */
export const JOB_CONTRACT_VERSION = 4;

/**
 * The version a job of the core (one file's divergencias-rf, retorno-rf, censo-corrigido) needs:
 * a release that changes that job's data or its answer raises it with JOB_CONTRACT_VERSION, so
 * that older workers give its jobs back (cluster/release.mjs does so for the fault suite's upgrade).
 * 3 since issue 46, 4 since issue 56 (see JOB_CONTRACT_VERSION). Issue 54 added the school's INEP
 * code to a divergencias job's answer (`escola`) without raising it, as batchLines was added: an
 * older worker's answer lacks it, which reads as null, and that file's school is then keyed by its
 * `referencia`, as every round recorded before it is; holding core jobs back for it would stop a
 * rolling upgrade's work to gain nothing the comparison does not already handle.
 */
export const CORE_JOB_CONTRACT_VERSION = 4;

/**
 * The version a group job needs: a group carries jobs of the core, so it needs their version as
 * well as the groups' own (GROUP_CONTRACT_VERSION). What workers must announce (readers.ts)
 * before an API queues group jobs.
 */
export const GROUP_JOB_CONTRACT_VERSION = Math.max(GROUP_CONTRACT_VERSION, CORE_JOB_CONTRACT_VERSION);

/** Any job's data: one job of the core, or a group of tasks' jobs. */
export type AnyJobData = JobData | GroupJobData;

/**
 * A job's data as it is queued: the job, the contract version it needs, and the API its end is
 * told to (addressed.ts; older workers ignore the field, and the API then reads the events stream).
 */
export type QueuedJobData = AnyJobData & { readonly contract?: number; readonly fim?: string };

/**
 * The job with the oldest contract version that can run it: a job of the core needs
 * CORE_JOB_CONTRACT_VERSION, a group GROUP_JOB_CONTRACT_VERSION. `version` overrides it (tests play N+1).
 */
export function withContract<T extends AnyJobData>(data: T, version: number = contractFor(data)): T & { readonly contract: number } {
  return { ...data, contract: version };
}

function contractFor(data: AnyJobData): number {
  return data.kind === GROUP_JOB ? GROUP_JOB_CONTRACT_VERSION : CORE_JOB_CONTRACT_VERSION;
}

/**
 * The contract version a job was sent with; 1 when it has none (jobs queued before versions were
 * carried), null when it is not a version at all (job data is read from Redis).
 */
export function contractOf(data: QueuedJobData): number | null {
  const version = (data as { contract?: unknown } | null)?.contract ?? 1;
  return Number.isSafeInteger(version) && (version as number) >= 1 ? (version as number) : null;
}

/** The job itself, as the worker runs it (anything that is not an object is left for the checks). */
export function jobOf(queued: QueuedJobData): AnyJobData {
  if (typeof queued !== 'object' || queued === null || !('contract' in queued || 'fim' in queued)) return queued;
  const { contract: _contract, fim: _fim, ...job } = queued;
  return job as AnyJobData;
}
