// A small OTLP/HTTP receiver of traces (http/json only: the test sets
// OTEL_EXPORTER_OTLP_PROTOCOL=http/json), on 127.0.0.1, keeping every span it is sent, flattened.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface OtlpValue {
  stringValue?: string;
  intValue?: string | number;
  doubleValue?: number;
  boolValue?: boolean;
  arrayValue?: { values?: OtlpValue[] };
  kvlistValue?: { values?: OtlpKeyValue[] };
  bytesValue?: string;
}
export interface OtlpKeyValue {
  key: string;
  value?: OtlpValue;
}

export interface ReceivedSpan {
  readonly service: string;
  readonly scope: string;
  readonly traceId: string;
  readonly spanId: string;
  readonly parentSpanId: string;
  readonly name: string;
  /** OTLP's numbers: 1 internal, 2 server, 3 client, 4 producer, 5 consumer. */
  readonly kind: number;
  readonly attributes: Record<string, unknown>;
  /** Every attribute value of the span, its events and links, and its status message, as text. */
  readonly texts: string[];
  readonly links: Array<{ traceId: string; spanId: string }>;
}

export const SPAN_KIND = { internal: 1, server: 2, client: 3, producer: 4, consumer: 5 } as const;

export interface OtlpReceiver {
  readonly url: string;
  readonly spans: ReceivedSpan[];
  /** How many export requests arrived (any path). */
  readonly requests: () => number;
  close(): Promise<void>;
}

function plain(value: OtlpValue | undefined): unknown {
  if (!value) return undefined;
  if (value.stringValue !== undefined) return value.stringValue;
  if (value.intValue !== undefined) return Number(value.intValue);
  if (value.doubleValue !== undefined) return value.doubleValue;
  if (value.boolValue !== undefined) return value.boolValue;
  if (value.arrayValue) return (value.arrayValue.values ?? []).map(plain);
  if (value.kvlistValue) return Object.fromEntries((value.kvlistValue.values ?? []).map((kv) => [kv.key, plain(kv.value)]));
  return value.bytesValue;
}

const attributesOf = (list: OtlpKeyValue[] | undefined) => Object.fromEntries((list ?? []).map((kv) => [kv.key, plain(kv.value)]));

const textsOf = (value: unknown): string[] =>
  Array.isArray(value)
    ? value.flatMap(textsOf)
    : typeof value === 'object' && value !== null
      ? Object.values(value).flatMap(textsOf)
      : value === undefined
        ? []
        : [String(value)];

interface ExportRequest {
  resourceSpans?: Array<{
    resource?: { attributes?: OtlpKeyValue[] };
    scopeSpans?: Array<{
      scope?: { name?: string };
      spans?: Array<{
        traceId: string;
        spanId: string;
        parentSpanId?: string;
        name: string;
        kind: number;
        attributes?: OtlpKeyValue[];
        events?: Array<{ name: string; attributes?: OtlpKeyValue[] }>;
        links?: Array<{ traceId: string; spanId: string; attributes?: OtlpKeyValue[] }>;
        status?: { message?: string };
      }>;
    }>;
  }>;
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  let requests = 0;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      requests++;
      try {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as ExportRequest;
        for (const resourceSpans of body.resourceSpans ?? []) {
          const resource = attributesOf(resourceSpans.resource?.attributes);
          for (const scopeSpans of resourceSpans.scopeSpans ?? []) {
            for (const span of scopeSpans.spans ?? []) {
              const attributes = attributesOf(span.attributes);
              const events = (span.events ?? []).map((event) => [event.name, attributesOf(event.attributes)]);
              const links = span.links ?? [];
              spans.push({
                service: String(resource['service.name']),
                scope: scopeSpans.scope?.name ?? '',
                traceId: span.traceId,
                spanId: span.spanId,
                parentSpanId: span.parentSpanId ?? '',
                name: span.name,
                kind: span.kind,
                attributes,
                texts: [
                  span.name,
                  ...textsOf(attributes),
                  ...textsOf(events),
                  ...textsOf(links.map((link) => attributesOf(link.attributes))),
                  ...textsOf(resource),
                  span.status?.message ?? '',
                ],
                links: links.map(({ traceId, spanId }) => ({ traceId, spanId })),
              });
            }
          }
        }
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      } catch {
        // Protobuf or anything else: the test asked for JSON.
        res.writeHead(400).end();
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    spans,
    requests: () => requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
