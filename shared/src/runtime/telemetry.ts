// OpenTelemetry traces (SPEC §12), off unless an OTLP endpoint is configured with the standard
// variables (OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT). Off, this module
// loads nothing but @opentelemetry/api, whose calls are no-ops without a registered provider: the
// SDK, the exporters and the instrumentations are imported only once tracing is on.
//
// On, the entry points call startTelemetry() before they import the libraries it instruments
// (ioredis, pg, the S3 client): those are patched as they load, through require-in-the-middle for
// CommonJS and import-in-the-middle's loader hook for ES modules (an `import` of ioredis from ESM
// never calls require('ioredis'), so the CommonJS hook alone would not see it).
//
// No personal data in a span (SPEC §12): the instrumentations are told not to record values (Redis
// commands by name only; pg statements keep their $n placeholders, never the parameters), and
// every span passes a filter on its way out that drops the attributes that could carry a CPF, a
// name or a file's bytes anyway (job results, error messages and stack traces, query strings).
import { context, isSpanContextValid, trace, SpanKind, SpanStatusCode, type Attributes, type Span } from '@opentelemetry/api';
import type { Telemetry as QueueTelemetry } from 'bullmq';
import type { Instrumentation } from '@opentelemetry/instrumentation';
import type { ReadableSpan, Sampler, SpanExporter, TimedEvent } from '@opentelemetry/sdk-trace-node';
import { ConfigError } from './config.js';

export type TracesProtocol = 'http/protobuf' | 'http/json';

export interface TelemetrySettings {
  /** Whether traces are exported at all. */
  readonly enabled: boolean;
  readonly protocol: TracesProtocol;
  readonly sampler: { readonly name: string; readonly ratio: number };
}

const SAMPLERS = [
  'always_on',
  'always_off',
  'traceidratio',
  'parentbased_always_on',
  'parentbased_always_off',
  'parentbased_traceidratio',
] as const;

type Env = Readonly<Record<string, string | undefined>>;

const setting = (env: Env, name: string): string | undefined => {
  const value = env[name]?.trim();
  return value === undefined || value === '' ? undefined : value;
};

/**
 * Reads the OTEL_* variables this service honours. Invalid values stop the start, as every other
 * setting does (SPEC §6): a sampler or protocol the operator misspelled would otherwise silently
 * trace nothing, or everything.
 */
export function telemetrySettings(env: Env): TelemetrySettings {
  const endpoint = setting(env, 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT') ?? setting(env, 'OTEL_EXPORTER_OTLP_ENDPOINT');
  const exporter = setting(env, 'OTEL_TRACES_EXPORTER') ?? 'otlp';
  if (exporter !== 'otlp' && exporter !== 'none') {
    throw new ConfigError(`OTEL_TRACES_EXPORTER must be otlp or none, got ${JSON.stringify(exporter)}`);
  }
  const disabled = setting(env, 'OTEL_SDK_DISABLED')?.toLowerCase() === 'true' || exporter === 'none';
  const protocol = setting(env, 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL') ?? setting(env, 'OTEL_EXPORTER_OTLP_PROTOCOL') ?? 'http/protobuf';
  if (protocol !== 'http/protobuf' && protocol !== 'http/json') {
    throw new ConfigError(
      `OTEL_EXPORTER_OTLP_PROTOCOL must be http/protobuf or http/json (grpc is not supported: use the collector's HTTP port, 4318), got ${JSON.stringify(protocol)}`,
    );
  }
  const name = (setting(env, 'OTEL_TRACES_SAMPLER') ?? 'parentbased_always_on').toLowerCase();
  if (!(SAMPLERS as readonly string[]).includes(name)) {
    throw new ConfigError(`OTEL_TRACES_SAMPLER must be one of ${SAMPLERS.join(', ')}, got ${JSON.stringify(name)}`);
  }
  const arg = setting(env, 'OTEL_TRACES_SAMPLER_ARG');
  const ratio = name.endsWith('traceidratio') && arg !== undefined ? Number(arg) : 1;
  if (!Number.isFinite(ratio) || ratio < 0 || ratio > 1) {
    throw new ConfigError(`OTEL_TRACES_SAMPLER_ARG must be a number from 0 to 1, got ${JSON.stringify(arg)}`);
  }
  return { enabled: endpoint !== undefined && !disabled, protocol, sampler: { name, ratio } };
}

export interface TelemetryOptions {
  /** The resource's `service.name` unless OTEL_SERVICE_NAME (or OTEL_RESOURCE_ATTRIBUTES) names one. */
  readonly serviceName: string;
  /** The process's own instrumentations (the API's Fastify and pg), imported only when tracing is on. */
  readonly instrumentations?: () => Promise<Instrumentation[]>;
}

export interface RunningTelemetry {
  readonly enabled: boolean;
  /** Ends the provider: spans still buffered are sent first (bounded by the exporter's timeout). */
  shutdown(): Promise<void>;
}

interface Started {
  readonly queue: QueueTelemetry;
  shutdown(): Promise<void>;
}

let started: Started | null = null;

/** Whether this process exports traces (startTelemetry found an endpoint). */
export const tracingEnabled = (): boolean => started !== null;

/** For BullMQ's `telemetry` option of Queue and Worker: undefined when tracing is off. */
export const queueTelemetry = (): QueueTelemetry | undefined => started?.queue;

const OFF: RunningTelemetry = { enabled: false, shutdown: async () => {} };

/**
 * Starts tracing when the environment asks for it; call before importing anything instrumented.
 * Throws ConfigError for invalid OTEL_* values. Once per process.
 */
export async function startTelemetry(env: Env, options: TelemetryOptions): Promise<RunningTelemetry> {
  const settings = telemetrySettings(env);
  if (!settings.enabled) return OFF;
  if (started) return { enabled: true, shutdown: () => started!.shutdown() };

  const { register } = await import('node:module');
  const { createAddHookMessageChannel } = await import('import-in-the-middle');
  // Only the modules an instrumentation asks for are wrapped: the hook is told each one's name.
  const { registerOptions, waitForAllMessagesAcknowledged } = createAddHookMessageChannel();
  register('import-in-the-middle/hook.mjs', import.meta.url, registerOptions);

  const [sdk, resources, { registerInstrumentations }, { IORedisInstrumentation }, { AwsInstrumentation }, { BullMQOtel }, exporter] =
    await Promise.all([
      import('@opentelemetry/sdk-trace-node'),
      import('@opentelemetry/resources'),
      import('@opentelemetry/instrumentation'),
      import('@opentelemetry/instrumentation-ioredis'),
      import('@opentelemetry/instrumentation-aws-sdk'),
      import('bullmq-otel'),
      settings.protocol === 'http/json'
        ? import('@opentelemetry/exporter-trace-otlp-http')
        : import('@opentelemetry/exporter-trace-otlp-proto'),
    ]);

  // Ours first, then what the environment says (OTEL_RESOURCE_ATTRIBUTES, OTEL_SERVICE_NAME): the later wins.
  const resource = resources
    .defaultResource()
    .merge(resources.resourceFromAttributes({ 'service.name': options.serviceName }))
    .merge(resources.detectResources({ detectors: [resources.envDetector] }));

  const configured = ((): Sampler => {
    const { name, ratio } = settings.sampler;
    const root = name.endsWith('always_off')
      ? new sdk.AlwaysOffSampler()
      : name.endsWith('traceidratio')
        ? new sdk.TraceIdRatioBasedSampler(ratio)
        : new sdk.AlwaysOnSampler();
    return name.startsWith('parentbased_') ? new sdk.ParentBasedSampler({ root }) : root;
  })();

  // The exporter reads the endpoint, headers, timeout and compression from the OTEL_* variables.
  const provider = new sdk.NodeTracerProvider({
    resource,
    sampler: withoutBackgroundRoots(configured, sdk.SamplingDecision.NOT_RECORD),
    spanProcessors: [new sdk.BatchSpanProcessor(withoutPersonalData(new exporter.OTLPTraceExporter()))],
  });
  // The W3C trace context (traceparent) in and out, and the async context manager.
  provider.register();

  const own = (await options.instrumentations?.()) ?? [];
  registerInstrumentations({
    tracerProvider: provider,
    instrumentations: [
      new IORedisInstrumentation({
        // BullMQ's workers poll Redis all the time: only commands made inside a traced operation count.
        requireParentSpan: true,
        // The command's name only: its arguments are keys and values (a job's data, a task's result).
        dbStatementSerializer: (command) => command,
      }),
      new AwsInstrumentation({ suppressInternalInstrumentation: true }),
      ...own,
    ],
  });
  await waitForAllMessagesAcknowledged();

  started = {
    queue: new BullMQOtel({ tracerName: 'bullmq' }),
    shutdown: async () => {
      await provider.shutdown();
    },
  };
  const current = started;
  return { enabled: true, shutdown: () => current.shutdown() };
}

/**
 * Keys of attributes that may carry what a person sent, wherever they come from: BullMQ records a
 * job's result and failure reason, the instrumentations an error's message and stack (Node's
 * JSON.parse error quotes the input), the HTTP ones the query string (GET /api/query's filters).
 */
const PERSONAL_KEYS = new Set([
  'bullmq.job.result',
  'bullmq.job.failed.reason',
  'exception.message',
  'exception.stacktrace',
  'url.query',
  'url.full',
  'http.target',
  'http.url',
]);

function scrubbed(attributes: Attributes): Attributes {
  let copy: Attributes | null = null;
  for (const [key, value] of Object.entries(attributes)) {
    const drop = PERSONAL_KEYS.has(key) || key.startsWith('db.query.parameter.');
    const cut = !drop && key === 'url.path' && typeof value === 'string' && value.includes('?');
    if (!drop && !cut) continue;
    copy ??= { ...attributes };
    if (drop) delete copy[key];
    else copy[key] = (value as string).slice(0, (value as string).indexOf('?'));
  }
  return copy ?? attributes;
}

/**
 * A span's name as exported. Fastify's instrumentation names a hook's or handler's span after its
 * function, and an anonymous plugin's name is the first characters of its source (avvio): code
 * does not belong in a trace (issue 59). A name that is not a plain label keeps its kind
 * (`handler`, `onRequest`…) and takes the route instead.
 */
function spanName(span: ReadableSpan): string {
  if (PLAIN_NAME.test(span.name)) return span.name;
  const kind = span.name.split(' - ', 1)[0]!;
  const route = span.attributes['http.route'];
  return `${PLAIN_NAME.test(kind) ? kind : 'span'} - ${typeof route === 'string' ? route : 'anonymous'}`;
}
/** Words, routes and dotted names, as the instrumentations' own names are (`handler - fastify -> route`). */
const PLAIN_NAME = /^[\w .:/{}@>-]{1,120}$/;

/** The exporter behind a filter that removes PERSONAL_KEYS from spans, their events and their status. */
function withoutPersonalData(exporter: SpanExporter): SpanExporter {
  const clean = (span: ReadableSpan): ReadableSpan => {
    const events: TimedEvent[] = span.events.map((event) =>
      event.attributes === undefined ? event : { ...event, attributes: scrubbed(event.attributes) },
    );
    // The status keeps its code; its message is the error's, which may quote the input.
    const status = span.status.message === undefined ? span.status : { code: span.status.code };
    // A view over the span: the rest (its context, parent, times) reads through to the original.
    return Object.create(span, {
      name: { value: spanName(span) },
      attributes: { value: scrubbed(span.attributes) },
      events: { value: events },
      status: { value: status },
    }) as ReadableSpan;
  };
  return {
    export: (spans, done) => exporter.export(spans.map(clean), done),
    shutdown: () => exporter.shutdown(),
    forceFlush: () => exporter.forceFlush?.() ?? Promise.resolve(),
  };
}

/**
 * Root spans only where a trace begins: a request (SERVER), a job or message (PRODUCER, CONSUMER).
 * BullMQ opens an INTERNAL span for each poll and check of its workers, which would otherwise be a
 * trace of its own every few seconds; a local parent that was not sampled drops its children too.
 */
function withoutBackgroundRoots(sampler: Sampler, notRecord: ReturnType<Sampler['shouldSample']>['decision']): Sampler {
  const drop = { decision: notRecord };
  return {
    shouldSample(ctx, traceId, name, kind, attributes, links) {
      const parent = trace.getSpanContext(ctx);
      if (parent === undefined || !isSpanContextValid(parent)) {
        if (kind === SpanKind.INTERNAL || kind === SpanKind.CLIENT) return drop;
      } else if (!parent.isRemote && (parent.traceFlags & 1) === 0) return drop;
      return sampler.shouldSample(ctx, traceId, name, kind, attributes, links);
    },
    toString: () => `WithoutBackgroundRoots{${sampler.toString()}}`,
  };
}

const tracer = () => trace.getTracer('censo-api');

/**
 * Runs `work` in a span of its own, a child of the active one. Off, `work` runs as it is. The
 * attributes must be ids, kinds and counts: never anything read from a file.
 */
export async function inSpan<T>(name: string, attributes: Attributes, work: (span: Span | null) => Promise<T>): Promise<T> {
  if (!started) return work(null);
  return tracer().startActiveSpan(name, { attributes }, async (span) => {
    try {
      return await work(span);
    } catch (err) {
      // The type only: the message may quote the input.
      span.setStatus({ code: SpanStatusCode.ERROR });
      span.setAttribute('error.type', err instanceof Error ? err.name : typeof err);
      throw err;
    } finally {
      span.end();
    }
  });
}

/**
 * A span already over, a child of the active one, timed by whoever did the work (a job thread has
 * no SDK of its own: it tells its times, in ms since the epoch, and the pool records them).
 */
export function recordSpan(name: string, attributes: Attributes, startTime: number, endTime: number): void {
  if (started) tracer().startSpan(name, { attributes, startTime }).end(endTime);
}

/** Starts a span the caller ends (a stream's life), a child of the active one; null when off. */
export function startSpan(name: string, attributes: Attributes): Span | null {
  return started ? tracer().startSpan(name, { attributes }) : null;
}

/** The active span's context as a W3C `traceparent` (ids and flags only), for a later link to it; null when off or outside a trace. */
export function traceparentNow(): string | null {
  const span = started ? trace.getSpan(context.active()) : undefined;
  if (span === undefined) return null;
  const ids = span.spanContext();
  return isSpanContextValid(ids) ? `00-${ids.traceId}-${ids.spanId}-${ids.traceFlags.toString(16).padStart(2, '0')}` : null;
}

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/**
 * Links the active span to the span `traceparent` names (traceparentNow() of another trace this work
 * belongs to: a batch's file to its batch's, issue 56). A link, not a parent: the file's trace stays
 * its own request's, and an operator goes from a slow file to its batch and back. Nothing when off,
 * outside a span or for a value that is not a traceparent (a record of an older version has none).
 */
export function linkActiveSpan(traceparent: string | null | undefined): void {
  if (!started || typeof traceparent !== 'string') return;
  const span = trace.getSpan(context.active());
  const parts = TRACEPARENT.exec(traceparent);
  if (span === undefined || parts === null) return;
  const target = { traceId: parts[1]!, spanId: parts[2]!, traceFlags: Number.parseInt(parts[3]!, 16) };
  if (isSpanContextValid(target)) span.addLink({ context: target });
}

/** The active trace's ids, for log lines (`trace_id`, `span_id`); empty outside a trace. */
export function traceFields(): { trace_id?: string; span_id?: string } {
  const span = trace.getSpan(context.active());
  if (span === undefined) return {};
  const ids = span.spanContext();
  return isSpanContextValid(ids) ? { trace_id: ids.traceId, span_id: ids.spanId } : {};
}
