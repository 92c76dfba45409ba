// Asynchronous intake's wiring (SPEC §7): the service over the backend the entry point chose
// (jobs/task-backend.ts: memory and the in-process pool, or Redis and the BullMQ queue), its
// periodic housekeeping and its metrics, as the `tarefas` decorator the routes use.
import { readdir, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { Counter, Gauge } from 'prom-client';
import { isAreaFolderName, type Config, type Logger, type Storage } from '@censo/shared';
import type { JobRunner } from '../jobs/runner.js';
import type { TaskBackend } from '../jobs/task-backend.js';
import { defaultIntervals, startHousekeeping, type HousekeepingIntervals } from '../tarefas/housekeeping.js';
import { AdmissionCount } from '../tarefas/admission.js';
import { TarefasService } from '../tarefas/service.js';
import type { Safra } from '../safra/index.js';
import { anoOf } from '../safra/ledger.js';
import { proximoPrazo } from '../safra/calendario.js';

/** How often the ledger's retention sweep runs (its rows age in days; an hour is plenty). */
const SAFRA_SWEEP_MS = 3_600_000;

export interface TarefasContext {
  readonly service: TarefasService;
  readonly storage: Storage;
  readonly config: Config;
  /** Uploads admitted and not yet queued (the strict MAX_QUEUED_TAREFAS bound). */
  readonly admitted: AdmissionCount;
  /** The season ledger (SPEC §13), null when none is kept. */
  readonly safra: Safra | null;
}

declare module 'fastify' {
  interface FastifyInstance {
    tarefas: TarefasContext;
  }
}

/** For tests: a clock of their own, and faster housekeeping. */
export interface TarefasTuning {
  readonly now?: () => number;
  readonly intervals?: Partial<HousekeepingIntervals>;
}

export interface TarefasPluginOptions {
  readonly config: Config;
  /** The synchronous requests' runner (its queue's waiting count is a metric here). */
  readonly runner: JobRunner;
  /** The tasks' store and execution, of the mode the entry point chose. */
  readonly backend: TaskBackend;
  readonly storage: Storage;
  readonly logger: Logger;
  readonly tuning?: TarefasTuning;
  readonly safra: Safra | null;
}

async function tarefas(
  app: FastifyInstance,
  { config, runner, backend, storage, logger, tuning = {}, safra }: TarefasPluginOptions,
): Promise<void> {
  const log = logger.child({ component: 'tarefas' });
  const { store, execution } = backend;

  const tarefasTotal = new Counter({
    name: 'censo_tarefas_total',
    help: 'Asynchronous tasks by route and the state they reached (aguardando when created, then concluida, falhou or cancelada).',
    labelNames: ['rota', 'estado'] as const,
    registers: [app.metrics.registry],
  });
  new Gauge({
    name: 'censo_queue_waiting_by_priority',
    help: 'Jobs waiting to run by priority: sincrona (requests that wait for their answer) and assincrona (tasks); sincrona in queue mode only.',
    labelNames: ['priority'] as const,
    registers: [app.metrics.registry],
    async collect() {
      this.reset();
      try {
        this.set({ priority: 'assincrona' }, await execution.waiting());
        if (runner.counts) this.set({ priority: 'sincrona' }, (await runner.counts()).waiting ?? 0);
      } catch {
        // Redis away: no samples rather than stale ones (censo_queue_jobs warns once already).
      }
    },
  });

  if (safra) {
    // The season against INEP's calendar (SPEC §13): an alert rule reads both (deploy/monitoring/alertas.yml).
    const clock = tuning.now ?? Date.now;
    new Gauge({
      name: 'censo_safra_escolas_com_pendencias',
      help: 'Schools whose latest file of this census year still holds a divergence someone must fix (grafia apart), all principals together.',
      registers: [app.metrics.registry],
      async collect() {
        this.reset();
        // An embedded ledger not opened yet holds no season: no sample, and no folder made for a scrape.
        if (!safra.aberto()) return;
        try {
          this.set(await safra.ledger.escolasComPendencias(anoOf(clock())));
        } catch {
          // The ledger's database away: no sample rather than a stale one.
        }
      },
    });
    new Gauge({
      name: 'censo_safra_dias_ate_prazo',
      help: "Days to INEP's next census deadline of this year (0 on the day itself); absent when the calendar holds none.",
      registers: [app.metrics.registry],
      collect() {
        this.reset();
        const now = clock();
        const prazo = proximoPrazo(safra.calendario, anoOf(now), now);
        if (prazo !== null) this.set(prazo.dias);
      },
    });
  }

  const service = new TarefasService({
    store,
    execution,
    storage,
    config,
    log,
    ...(tuning.now ? { now: tuning.now } : {}),
    onEstado: (rota, estado) => tarefasTotal.inc({ rota, estado }),
    ...(safra ? { safra: safra.registro(storage) } : {}),
  });
  app.decorate('tarefas', { service, storage, config, admitted: new AdmissionCount(), safra });

  // The ledger's retention (SAFRA_RETENCAO_DIAS): every replica may sweep, a DELETE is idempotent.
  const now = tuning.now ?? Date.now;
  const sweep = () => {
    if (safra?.aberto() === false) return;
    void safra?.varrer(now()).catch((err: unknown) => log.warn({ err }, 'safra: retention sweep failed'));
  };
  const sweeper = safra ? setInterval(sweep, SAFRA_SWEEP_MS).unref() : null;
  sweep();

  // Embedded records die with the process; the folders of the tasks it forgot would stay. They
  // are removed at start once older than the longest a result can live (a batch's task lives until
  // its batch expires: LOTE_MAX_HOURS + RESULT_TTL_HOURS; a folder changes when its job ends).
  if (store.kind === 'memory' && storage.kind === 'folder')
    await removeForgottenAreas(config.uploadDir, config.loteMaxMs + config.resultTtlMs, log);

  const housekeeping = startHousekeeping(service, log, { ...defaultIntervals(config.resultTtlMs), ...tuning.intervals });
  app.addHook('onClose', async () => {
    if (sweeper) clearInterval(sweeper);
    await housekeeping.close();
    await backend.close();
  });
}

/**
 * Task folders an earlier embedded process left (it forgot their records when it stopped): those
 * unchanged for longer than a result can live. Younger ones may belong to another process sharing
 * the folder, and are left to it; anything not named as this service names its folders is never
 * touched (SPEC §9: UPLOAD_DIR may be a folder others use).
 */
async function removeForgottenAreas(uploadDir: string, maxAgeMs: number, log: Logger): Promise<void> {
  const before = Date.now() - maxAgeMs;
  const names = await readdir(uploadDir).catch(() => [] as string[]);
  let removed = 0;
  for (const name of names.filter(isAreaFolderName)) {
    const dir = path.join(uploadDir, name);
    const info = await stat(dir).catch(() => null);
    if (!info?.isDirectory() || info.mtimeMs >= before) continue;
    await rm(dir, { recursive: true, force: true }).catch((err: unknown) =>
      log.warn({ err, dir }, 'could not remove a forgotten task folder'),
    );
    removed++;
  }
  if (removed > 0) log.info({ removed }, 'removed task folders an earlier process forgot');
}

export const tarefasPlugin = fp(tarefas, {
  name: 'censo-tarefas',
  fastify: '5.x',
  dependencies: ['censo-metrics'],
  decorators: { fastify: ['metrics'] },
});
