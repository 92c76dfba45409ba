// One pino logger per process, made by its entry point. Secrets never reach the output: the key
// headers are redacted wherever a request or its headers are logged (SPEC §4).
import { pino, type DestinationStream, type Logger } from 'pino';
import type { Config } from './config.js';
import { traceFields } from './telemetry.js';

export const REDACTED_PATHS = [
  'req.headers["x-api-key"]',
  'req.headers.authorization',
  'req.headers.cookie',
  'headers["x-api-key"]',
  'headers.authorization',
  // Any object one level down that carries request headers: @fastify/multipart logs
  // `busboyOptions.headers` (with x-api-key) at trace level.
  '*.headers["x-api-key"]',
  '*.headers.authorization',
  '*.headers.cookie',
  '*.apiKey',
  '*.apiKeys',
  '*.queryApiKeys',
  '*.metricsToken',
  '*.cursorSecret',
  '*.password',
];

export function createLogger(config: Pick<Config, 'logLevel'>, bindings: Record<string, string>, destination?: DestinationStream): Logger {
  return pino(
    {
      level: config.logLevel,
      base: { pid: process.pid, ...bindings },
      redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
      timestamp: pino.stdTimeFunctions.isoTime,
      // The trace a line belongs to (`trace_id`, `span_id`), so an operator goes from a request's or a
      // job's lines to its trace and back; nothing when tracing is off or outside a trace.
      mixin: traceFields,
    },
    destination,
  );
}

export type { Logger };

/**
 * The signals an operator sends a running process to look inside it or to rotate its files
 * (docs/operacao.md, "Sinais do operador"). None of them stops it:
 * - `reopen` (SIGHUP, the daemons' convention): the process opens its log files again at their
 *   paths (ACCESS_LOG), so logrotate can move a file and signal instead of copytruncate;
 * - `heapSnapshot` (SIGUSR2, as Node's documentation suggests): Node writes a heap snapshot when
 *   the process was started with `--heapsnapshot-signal=SIGUSR2`;
 * - `report` (SIGTTOU): a diagnostic report (mode 0600) when started with `--report-on-signal
 *   --report-signal=SIGTTOU`. Not Node's default SIGUSR2, taken by the snapshot; not SIGUSR1,
 *   which opens the inspector; not SIGTTIN, which older instructions gave the snapshot. A service
 *   has no terminal, so the kernel never sends it SIGTTOU itself.
 */
export const OPERATOR_SIGNALS = { reopen: 'SIGHUP', heapSnapshot: 'SIGUSR2', report: 'SIGTTOU' } as const;

/**
 * For close-with-grace's `skip`: by default it takes SIGHUP and SIGUSR2 as requests to stop, and
 * a snapshot on SIGUSR2 would be followed by a graceful exit.
 */
export const NOT_A_STOP: ['SIGHUP', 'SIGUSR2'] = [OPERATOR_SIGNALS.reopen, OPERATOR_SIGNALS.heapSnapshot];

export interface OperatorSignalOptions {
  /** What the process reopens on `OPERATOR_SIGNALS.reopen`; nothing when it writes to stdout only. */
  readonly reopen?: () => Promise<void>;
}

/**
 * Handles the operator's signals for the rest of the process's life, and logs each. A listener of
 * our own on the diagnostic signals keeps their default action (end the process for SIGUSR2,
 * stop it for SIGTTOU) from reaching a process started without the flag; Node's own listener,
 * when the flag is there, was added at start-up, before this one, and has already written the
 * file when this one runs (both writes are synchronous).
 */
export function handleOperatorSignals(logger: Logger, options: OperatorSignalOptions = {}): void {
  const { reopen, heapSnapshot, report } = OPERATOR_SIGNALS;
  process.on(reopen, (signal) => {
    if (!options.reopen) {
      logger.info({ signal }, 'no log file to reopen');
      return;
    }
    options.reopen().then(
      () => logger.info({ signal }, 'log files reopened'),
      (err: unknown) => logger.error({ err, signal }, 'log files could not be reopened'),
    );
  });
  const reportOnSignal = process.report.reportOnSignal ? process.report.signal : null;
  if (reportOnSignal === report) {
    // Node's own listener writes the report under the process's umask (0644 with the usual 022),
    // and a report holds the environment: API keys, passwords (issue 59). Its listener runs inside
    // ours, under a umask that leaves the file to its user alone (0600), as the snapshot already is.
    const nodeListeners = process.listeners(report);
    for (const listener of nodeListeners) process.off(report, listener);
    process.on(report, (signal) => {
      const umask = process.umask(0o077);
      try {
        for (const listener of nodeListeners) listener(signal);
      } finally {
        process.umask(umask);
      }
    });
  }
  for (const signal of [heapSnapshot, report]) {
    // Node's listener, if any, is there by now (added before the entry point runs).
    const claimed = process.listenerCount(signal) > 0;
    const what = reportOnSignal === signal ? 'diagnostic report' : 'heap snapshot';
    const flag = signal === report ? `--report-on-signal --report-signal=${signal}` : `--heapsnapshot-signal=${signal}`;
    process.on(signal, () => {
      if (claimed) logger.info({ signal }, `${what} written`);
      else logger.warn({ signal }, `${signal} ignored: the process was not started with ${flag} (docs/operacao.md)`);
    });
  }
}
