// What SPEC §9 asks of a highly available Redis, checked the same way for Sentinel and Cluster:
// the upload routes answer byte for byte what the embedded mode answers, and a master killed
// under load costs at most documented 503/504 answers, after which every upload succeeds again.
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { expect } from 'vitest';
import { fixtureCases } from './fixtures.js';
import { API_KEY, expectEmptyDir, formWith, startTestServer, type UploadFile } from './http.js';
import { startServiceProcess, type ServiceProcess } from './processes.js';
import { onThisMachine } from './deadline.js';

/** One upload the load sends: a route with the files of one fixture. */
export interface Upload {
  readonly name: string;
  readonly route: string;
  readonly files: readonly UploadFile[];
}

export interface Answer {
  readonly status: number;
  readonly contentType: string | null;
  readonly disposition: string | null;
  readonly body: Buffer;
}

/** Every upload route, with each fixture's return as .json and as .xlsx. */
export function uploads(): Upload[] {
  return fixtureCases().flatMap((c) =>
    (['json', 'xlsx'] as const).flatMap((format) => {
      const retorno: UploadFile = { field: 'retorno', path: c.retorno[format], filename: `retorno.${format}` };
      const txt: UploadFile = { field: 'txt', path: c.txt, filename: 'censo.txt' };
      return [
        { name: `${c.name} divergencias-rf .${format}`, route: '/api/divergencias-rf', files: [retorno] },
        { name: `${c.name} retorno-rf .${format}`, route: '/api/retorno-rf', files: [retorno, txt] },
        { name: `${c.name} censo-corrigido .${format}`, route: '/api/censo-corrigido', files: [retorno, txt] },
      ];
    }),
  );
}

/** Sends one upload as a client would (Node fetch), with a deadline so a hang is an answer too. */
export async function send(baseUrl: string, upload: Upload, timeoutMs = onThisMachine(60_000)): Promise<Answer> {
  const response = await fetch(`${baseUrl}${upload.route}`, {
    method: 'POST',
    headers: { 'x-api-key': API_KEY },
    body: await formWith(upload.files),
    signal: AbortSignal.timeout(timeoutMs),
  });
  return {
    status: response.status,
    contentType: response.headers.get('content-type'),
    disposition: response.headers.get('content-disposition'),
    body: Buffer.from(await response.arrayBuffer()),
  };
}

/** The embedded mode's answer to every upload: the reference the queue modes must match. */
export async function embeddedAnswers(list: readonly Upload[]): Promise<Map<string, Answer>> {
  const server = await startTestServer();
  try {
    const answers = new Map<string, Answer>();
    for (const upload of list) {
      const answer = await send(server.url, upload);
      expect(answer.status, upload.name).toBe(200);
      answers.set(upload.name, answer);
    }
    return answers;
  } finally {
    await server.dispose();
  }
}

export function expectSameAnswer(actual: Answer, expected: Answer, what: string): void {
  expect({ status: actual.status, contentType: actual.contentType, disposition: actual.disposition }, what).toEqual({
    status: expected.status,
    contentType: expected.contentType,
    disposition: expected.disposition,
  });
  expect(actual.body.equals(expected.body), `${what}: body differs from the embedded mode's`).toBe(true);
}

/** The only answers an upload may get while Redis fails over (SPEC §5, §9). */
const DOCUMENTED: Record<number, string> = {
  503: JSON.stringify({ erro: 'Fila de processamento indisponível.' }),
  504: JSON.stringify({ erro: 'Tempo esgotado ao processar o arquivo.' }),
};

export interface QueueServices {
  readonly apiUrl: string;
  readonly api: ServiceProcess;
  readonly worker: ServiceProcess;
  readonly workerUrl: string;
  stop(): Promise<void>;
}

/** The real entry points, as operators start them: `start:api` and `start:worker` on one volume. */
export async function startQueueServices(env: Record<string, string>): Promise<QueueServices> {
  const common = {
    API_KEY,
    HOST: '127.0.0.1',
    PORT: '0',
    LOG_LEVEL: 'info',
    WORKER_CONCURRENCY: '2',
    JOB_TIMEOUT_MS: '15000',
    // A job whose lock was lost with the old master is retried within seconds, not 30 s.
    WORKER_LOCK_DURATION_MS: '5000',
    WORKER_STALLED_INTERVAL_MS: '5000',
    ...env,
  };
  const worker = startServiceProcess('services/worker/dist/main.js', common);
  const api = startServiceProcess('services/api/dist/main.js', common, ['--role=api']);
  // SIGTERM, and SIGKILL if the graceful close has not ended in 10 s: a test's cleanup must end.
  const stopWithin = async (proc: ServiceProcess) => {
    const timer = setTimeout(() => proc.child.kill('SIGKILL'), 10_000);
    await proc.stop();
    clearTimeout(timer);
  };
  const stop = async () => {
    await Promise.all([stopWithin(api), stopWithin(worker)]);
  };
  try {
    const [listening, health] = await Promise.all([
      api.line('censo-api listening', onThisMachine(30_000)),
      worker.line('worker health server listening', onThisMachine(30_000)),
    ]);
    return { api, worker, apiUrl: String(listening.url), workerUrl: String(health.url), stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** A Redis topology with an API and a worker on it, and the embedded answers to compare with. */
export interface HaDeployment<T> {
  readonly topology: T;
  readonly services: QueueServices;
  readonly uploadDir: string;
  readonly expected: Map<string, Answer>;
  /** The services, then the servers and the folder, whatever happens to the services' close. */
  stop(): Promise<void>;
}

/** The bull-board token the deployments are started with. */
export const BOARD_TOKEN = 'board-token';

export async function startHaDeployment<T extends { readonly env: Record<string, string>; stop(): Promise<void> }>(
  startTopology: () => Promise<T>,
  queuePrefix: string,
): Promise<HaDeployment<T>> {
  const [expected, topology] = await Promise.all([embeddedAnswers(uploads()), startTopology()]);
  const uploadDir = await mkdtemp(path.join(os.tmpdir(), 'censo-ha-uploads-'));
  const stopRest = async () => {
    await topology.stop();
    await rm(uploadDir, { recursive: true, force: true });
  };
  let services: QueueServices;
  try {
    services = await startQueueServices({
      ...topology.env,
      QUEUE_PREFIX: queuePrefix,
      UPLOAD_DIR: uploadDir,
      // Every Redis client of the API: the rate limiter's and the dashboard's too.
      RATE_LIMIT_PER_MINUTE: '1000000',
      // A batch's returns in group jobs, whose scripts must hold to the queue's one slot (Cluster).
      TAREFAS_POR_JOB: '3',
      BULL_BOARD_TOKEN: BOARD_TOKEN,
    });
    await waitUntilReady([services.apiUrl, services.workerUrl]);
  } catch (err) {
    await stopRest();
    throw err;
  }
  return {
    topology,
    services,
    uploadDir,
    expected,
    async stop() {
      try {
        await services.stop();
      } finally {
        await stopRest();
      }
    },
  };
}

/** Every upload route answers byte for byte what the embedded mode answers; the dashboard sees the queue. */
export async function expectAnswersLikeEmbedded(deployment: HaDeployment<unknown>): Promise<void> {
  const { services, expected, uploadDir } = deployment;
  for (const upload of uploads()) expectSameAnswer(await send(services.apiUrl, upload), expected.get(upload.name)!, upload.name);
  const board = await fetch(`${services.apiUrl}/admin/queues/api/queues`, { headers: { authorization: `Bearer ${BOARD_TOKEN}` } });
  expect(board.status).toBe(200);
  expect(JSON.stringify(await board.json())).toContain('censo-jobs');
  await expectEmptyDir(uploadDir);
}

export interface FailoverReport {
  readonly requests: number;
  readonly byStatus: Record<number, number>;
  /** ms from the kill to the promotion the topology reports. */
  readonly promotionMs: number;
  /** ms from the promotion to the end of the first upload, started after it, that succeeded. */
  readonly recoveryMs: number;
  /** Uploads started after that first success: every one must have succeeded. */
  readonly afterRecovery: number;
  /** Uploads started between the kill and the promotion: how many succeeded, how many did not. */
  readonly duringFailover: { readonly ok: number; readonly failed: number };
}

interface Record_ {
  readonly upload: Upload;
  readonly start: number;
  readonly end: number;
  readonly answer: Answer | Error;
}

/**
 * `clients` concurrent clients upload in a loop; once they have warmed up, `kill` takes the
 * master down and `promoted` is polled until the topology has a new master. The load goes on
 * until `afterMs` have passed without a failed request, which must happen within
 * `recoveryLimitMs` of the promotion ("within seconds", SPEC §9); every request from then on
 * succeeds. Every answer is checked; everything is bounded in time.
 */
export async function failoverUnderLoad(options: {
  readonly apiUrl: string;
  readonly expected: ReadonlyMap<string, Answer>;
  readonly kill: () => Promise<void>;
  readonly promoted: () => Promise<boolean>;
  readonly clients?: number;
  readonly afterMs?: number;
  /** Upper bound of the whole run, and of the recovery after the promotion. */
  readonly limitMs?: number;
  readonly recoveryLimitMs?: number;
  /** Whose warnings and errors a failure's message carries (CI keeps only the test's output). */
  readonly services?: QueueServices;
}): Promise<FailoverReport> {
  const {
    apiUrl,
    expected,
    kill,
    promoted,
    services,
    clients = 6,
    afterMs = 5_000,
    limitMs = onThisMachine(60_000),
    recoveryLimitMs = onThisMachine(30_000),
  } = options;
  const list = uploads();
  const records: Record_[] = [];
  const hardStop = Date.now() + limitMs;
  let stopAt = hardStop;
  let next = 0;

  const client = async () => {
    while (Date.now() < Math.min(stopAt, hardStop)) {
      const upload = list[next++ % list.length]!;
      const start = Date.now();
      const answer = await send(apiUrl, upload, 30_000).catch((err: unknown) => (err instanceof Error ? err : new Error(String(err))));
      records.push({ upload, start, end: Date.now(), answer });
    }
  };
  const running = Array.from({ length: clients }, client);

  const succeeded = (r: Record_) => !(r.answer instanceof Error) && r.answer.status === 200;
  const until = async (what: string, condition: () => boolean | Promise<boolean>, bound: number) => {
    while (!(await condition())) {
      if (Date.now() > bound) throw new Error(`gave up waiting for ${what}`);
      await sleep(50);
    }
  };

  let killedAt = 0;
  let promotedAt = 0;
  let promotionMs: number;
  let recoveryMs: number;
  let recoveredAt = 0;
  try {
    try {
      await until('a warm-up of successful uploads', () => records.filter(succeeded).length >= clients * 2, hardStop);
      killedAt = Date.now();
      await kill();
      await until('the promotion of a replica', promoted, hardStop);
      promotedAt = Date.now();
      promotionMs = promotedAt - killedAt;
      const recoveryBound = Math.min(hardStop, promotedAt + recoveryLimitMs);
      await until(
        'an upload to succeed after the promotion',
        () => records.some((r) => r.start >= promotedAt && succeeded(r)),
        recoveryBound,
      );
      // Recovered: the end of the last failed request (the clients of one process reconnect one
      // after the other, so a first success can still be followed by a 503), once `afterMs` more
      // of load has passed without a failure, within `recoveryLimitMs` of the promotion.
      const lastFailureEnd = () => Math.max(promotedAt, ...records.filter((r) => r.start >= killedAt && !succeeded(r)).map((r) => r.end));
      await until(
        `${afterMs} ms of load without a failure after the promotion`,
        () => Date.now() - lastFailureEnd() >= afterMs && records.some((r) => r.start >= lastFailureEnd() && succeeded(r)),
        Math.min(hardStop, promotedAt + recoveryLimitMs + afterMs),
      );
      recoveredAt = lastFailureEnd();
      recoveryMs = recoveredAt - promotedAt;
    } finally {
      stopAt = 0;
      await Promise.all(running);
    }
    checkAnswers(records, expected, recoveredAt, clients);
  } catch (err) {
    throw withTimeline(err, { records, killedAt, promotedAt, recoveredAt, services });
  }

  const byStatus: Record<number, number> = {};
  for (const r of records) {
    const status = (r.answer as Answer).status;
    byStatus[status] = (byStatus[status] ?? 0) + 1;
  }
  const duringFailover = records.filter((r) => r.start >= killedAt && r.start < promotedAt);
  return {
    requests: records.length,
    byStatus,
    promotionMs,
    recoveryMs,
    afterRecovery: records.filter((r) => r.start >= recoveredAt).length,
    duringFailover: { ok: duringFailover.filter(succeeded).length, failed: duringFailover.filter((r) => !succeeded(r)).length },
  };
}

/** Every answer documented, the successful ones identical to the embedded mode's, and none but 200 after the recovery. */
function checkAnswers(records: readonly Record_[], expected: ReadonlyMap<string, Answer>, recoveredAt: number, clients: number): void {
  for (const r of records) {
    const what = `${r.upload.name} (started ${r.start - records[0]!.start} ms into the load)`;
    if (r.answer instanceof Error) throw new Error(`${what}: no answer (${r.answer.message})`);
    if (r.answer.status === 200) expectSameAnswer(r.answer, expected.get(r.upload.name)!, what);
    else {
      expect(Object.keys(DOCUMENTED), `${what}: status ${r.answer.status} ${r.answer.body.toString().slice(0, 200)}`).toContain(
        String(r.answer.status),
      );
      expect(r.answer.body.toString(), what).toBe(DOCUMENTED[r.answer.status]);
    }
  }
  const after = records.filter((r) => r.start >= recoveredAt);
  for (const r of after) expect((r.answer as Answer).status, `${r.upload.name} after the recovery`).toBe(200);
  expect(after.length).toBeGreaterThan(clients);
}

/**
 * A failed run's error with what happened around it, in ms from the kill: the answers other
 * than 200 since the recovery (or the promotion, or the kill, whichever came last; at most the
 * last 30, the rest counted), and the services' warnings and errors but for the requests' own
 * ones before that (the expected 503s).
 */
function withTimeline(
  err: unknown,
  run: { records: readonly Record_[]; killedAt: number; promotedAt: number; recoveredAt: number; services: QueueServices | undefined },
): unknown {
  if (!(err instanceof Error)) return err;
  const at = (t: number) => (t ? t - run.killedAt : 'never');
  const since = run.recoveredAt || run.promotedAt || run.killedAt;
  const status = (r: Record_) => (r.answer instanceof Error ? r.answer.message : r.answer.status);
  const failed = run.records.filter((r) => status(r) !== 200);
  const late = failed.filter((r) => r.end >= since);
  const listed = late.slice(-30);
  const warnings = (name: string, proc: ServiceProcess | undefined) =>
    (proc?.lines ?? [])
      .filter((l) => Number(l.level) >= 40 && (l.reqId === undefined || Date.parse(String(l.time)) >= since))
      .slice(-60)
      .map((l) => `  ${name} ${at(Date.parse(String(l.time)))} ms: ${JSON.stringify(l).slice(0, 600)}`);
  err.message += [
    `\nkilled at 0 ms, promoted at ${at(run.promotedAt)} ms, recovered at ${at(run.recoveredAt)} ms`,
    `answers other than 200: ${failed.length - listed.length} not listed, then from ${at(since)} ms:`,
    ...listed.map((r) => `  ${r.upload.name}: ${status(r)} from ${at(r.start)} to ${at(r.end)} ms`),
    'warnings and errors of the services:',
    ...warnings('api', run.services?.api),
    ...warnings('worker', run.services?.worker),
  ].join('\n');
  return err;
}

/** /readyz of the API and of the worker, until both say ok (bounded). */
export async function waitUntilReady(urls: readonly string[], timeoutMs = onThisMachine(20_000)): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (const url of urls) {
    for (;;) {
      const ok = await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(5_000) }).then(
        (res) => res.status === 200,
        () => false,
      );
      if (ok) break;
      if (Date.now() > deadline) throw new Error(`${url}/readyz never answered 200`);
      await sleep(100);
    }
  }
}
