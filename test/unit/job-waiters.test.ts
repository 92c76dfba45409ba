// The API's waits for queued jobs settle from Redis' own record when an event was missed
// (a reconnect, a failover): reconcile() reads the jobs back. It must keep working for the life
// of the process, whatever it found on earlier passes.
import { describe, expect, it } from 'vitest';
import { QueueUnavailableError, type JobResult } from '@censo/shared';
import { JobWaiters, type JobState } from '../../services/api/dist/jobs/job-waiters.js';
import { readJobState } from '../../services/api/dist/jobs/bullmq.js';

const RESULT = { ok: true } as unknown as JobResult;

function waiters(states: Map<string, JobState>) {
  return new JobWaiters({
    readState: async (jobId) => states.get(jobId) ?? { state: 'missing' },
    abandon: () => undefined,
    log: { debug: () => undefined },
    // Only explicit reconcile() calls in these tests.
    reconcileEveryMs: 3_600_000,
  });
}

describe('JobWaiters.reconcile', () => {
  it('still reads jobs back after a pass that found nobody waiting (the events connection is ready at start)', async () => {
    const states = new Map<string, JobState>();
    const jobs = waiters(states);
    await jobs.reconcile(); // at start: nothing waits yet

    const wait = jobs.wait('job-1', new AbortController().signal, Date.now() + 60_000);
    wait.enqueued();
    states.set('job-1', { state: 'completed', result: RESULT });
    await jobs.reconcile();

    expect(jobs.size).toBe(0);
    await expect(wait.result).resolves.toBe(RESULT);
  });

  it('a job the queue lost (gone after a failover) ends its wait with QueueUnavailableError (503), not a failure (500)', async () => {
    const jobs = waiters(new Map());
    const wait = jobs.wait('lost', new AbortController().signal, Date.now() + 60_000);
    wait.enqueued();
    await jobs.reconcile();

    await expect(wait.result).rejects.toBeInstanceOf(QueueUnavailableError);
  });
});

describe('readJobState (what reconcile reads from Redis)', () => {
  // A job's record read just before the job completes, and its state read just after: the
  // cluster suite met this interleaving and the request got a null result (a 500).
  const staleRecord = { returnvalue: null, failedReason: undefined, getState: async () => 'completed' };

  it('never reports a job completed without its result', async () => {
    // The job completes right after the first read, whichever it is.
    let reads = 0;
    const completedNow = () => reads++ > 0;
    const queue = {
      getJob: async () => (completedNow() ? { ...staleRecord, returnvalue: RESULT } : staleRecord),
      getJobState: async () => (completedNow() ? 'completed' : 'active'),
    };
    const read = await readJobState(queue as never, 'job-1');
    expect(read.state === 'completed' ? read.result : 'not completed yet').not.toBeNull();
    expect(await readJobState(queue as never, 'job-1')).toEqual({ state: 'completed', result: RESULT });
  });

  it('a job Redis does not know is missing', async () => {
    const queue = { getJob: async () => undefined, getJobState: async () => 'unknown' };
    expect(await readJobState(queue as never, 'gone')).toEqual({ state: 'missing' });
  });
});
