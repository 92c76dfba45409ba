// A batch's webhook (SPEC §7.4, Standard Webhooks): where it may point, how a message is signed,
// and one delivery attempt. The destination is checked when the batch is created and again at
// every attempt, on the very addresses the connection then uses (the lookup is the check), so a
// name that starts resolving to a private address later is refused, not followed. An address is
// judged by the IPv4 address it embeds, if any; a name gets 5 s to resolve.
import { createHmac, randomBytes } from 'node:crypto';
import { lookup as dnsLookup, type LookupAddress, type LookupAllOptions } from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import ipaddr from 'ipaddr.js';

/** Standard Webhooks' secret format: `whsec_` and the base64 of the key. */
export function newWebhookSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

/** `v1,<base64 HMAC-SHA256 of "{id}.{timestamp}.{body}">`, keyed by the secret's decoded bytes. */
export function webhookSignature(secret: string, id: string, timestamp: number, body: string): string {
  const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
  return `v1,${createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64')}`;
}

export function newMessageId(): string {
  return `msg_${randomBytes(16).toString('base64url')}`;
}

/** Why a destination is refused, for `Webhook inválido: <motivo>.` */
export class WebhookRefused extends Error {
  constructor(readonly motivo: string) {
    super(motivo);
    this.name = 'WebhookRefused';
  }
}

/** The reasons SPEC §7.4 gives; the two a deployment can lift name the setting that lifts them. */
export const WEBHOOK_REFUSALS = {
  notHttps: 'a URL deve usar https',
  plainHttp: 'a URL deve usar https (defina WEBHOOK_ALLOW_PRIVATE=true para http em redes internas)',
  privateAddress: 'endereço privado ou local (defina WEBHOOK_ALLOW_PRIVATE=true para redes internas)',
  unresolved: 'nome não resolvido',
} as const;

/** SPEC §7.4: a name that has not resolved after this long is refused. */
export const NAME_RESOLUTION_TIMEOUT_MS = 5_000;

/** A resolver shaped like node:dns's `lookup` called with `all: true`. */
export type HostLookup = (
  hostname: string,
  options: LookupAllOptions,
  callback: (err: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void,
) => void;

/** How names are resolved: node:dns under SPEC's deadline, unless a test brings its own. */
export interface NameResolution {
  readonly lookup?: HostLookup;
  readonly timeoutMs?: number;
}

const ipv4 = (high: number, low: number) => new ipaddr.IPv4([high >> 8, high & 0xff, low >> 8, low & 0xff]);
const startsWith = (parts: readonly number[], prefix: readonly number[]) => prefix.every((part, i) => parts[i] === part);

/** IPv6 /96 prefixes, as 16-bit groups, whose last 32 bits are an IPv4 address. */
const IPV4_IN_LAST_32_BITS: readonly (readonly number[])[] = [
  [0, 0, 0, 0, 0, 0xffff], // IPv4-mapped ::ffff:0:0/96
  [0, 0, 0, 0, 0xffff, 0], // IPv4-translated ::ffff:0:0:0/96 (RFC 7915)
  [0x64, 0xff9b, 0, 0, 0, 0], // NAT64's well-known prefix 64:ff9b::/96 (RFC 6052)
  // IPv4-compatible ::/96 (RFC 4291, deprecated, still routed by some stacks). `::` and `::1`
  // fall in it too, as 0.0.0.0/8: never public, so both stay refused.
  [0, 0, 0, 0, 0, 0],
];

/**
 * The IPv4 address an IPv6 address carries, for the forms whose packets end up at it (SPEC §7.4):
 * 6to4 `2002::/16` (RFC 3056: bits 16–47) and the /96 prefixes above; null for any other address.
 * Without this, `https://[::127.0.0.1]/` was judged as an ordinary IPv6 address and passed (issue 33).
 */
export function embeddedIpv4(address: ipaddr.IPv6): ipaddr.IPv4 | null {
  const parts = address.parts;
  if (parts[0] === 0x2002) return ipv4(parts[1]!, parts[2]!);
  return IPV4_IN_LAST_32_BITS.some((prefix) => startsWith(parts, prefix)) ? ipv4(parts[6]!, parts[7]!) : null;
}

/**
 * Public unicast only: loopback, private, link-local, CGNAT, multicast, documentation... are not,
 * and an IPv6 form that embeds an IPv4 address is what that address is. Refused whole, as ipaddr.js
 * ranks them apart from unicast: local-use NAT64 `64:ff9b:1::/48` (RFC 8215: where the IPv4 sits
 * depends on the operator's prefix length, and the translator is local by definition) and Teredo
 * `2001::/32` (obsolete; its client address is a NAT's, with the host somewhere behind it).
 */
export function isPublicAddress(address: string): boolean {
  let parsed: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    parsed = ipaddr.parse(address);
  } catch {
    return false;
  }
  const carried = parsed.kind() === 'ipv6' ? embeddedIpv4(parsed as ipaddr.IPv6) : null;
  return (carried ?? parsed).range() === 'unicast';
}

/** The URL as the service will call it; WebhookRefused when its form is not acceptable. */
export function parseWebhookUrl(raw: unknown, allowPrivate: boolean): URL {
  if (typeof raw !== 'string' || raw.length === 0 || raw.length > 2_048) throw new WebhookRefused('informe uma URL de até 2048 caracteres');
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new WebhookRefused('URL malformada');
  }
  if (url.protocol === 'http:' && !allowPrivate) throw new WebhookRefused(WEBHOOK_REFUSALS.plainHttp);
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new WebhookRefused(WEBHOOK_REFUSALS.notHttps);
  if (url.username || url.password) throw new WebhookRefused('a URL não pode conter usuário ou senha');
  return url;
}

const systemLookup: HostLookup = (hostname, options, callback) => dnsLookup(hostname, options, callback);

/**
 * Host names resolve through this lookup: every address it hands out has passed the check, and a
 * name still unresolved at the deadline is refused. getaddrinfo cannot be cancelled, so its late
 * answer is dropped.
 */
function checkedLookup(allowPrivate: boolean, resolution: NameResolution = {}): LookupFunction {
  const lookup = resolution.lookup ?? systemLookup;
  const timeoutMs = resolution.timeoutMs ?? NAME_RESOLUTION_TIMEOUT_MS;
  return (hostname, options, callback) => {
    let settled = false;
    const answer = (err: Error | null, addresses: readonly LookupAddress[] = []) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (err || addresses.length === 0) return callback(new WebhookRefused(WEBHOOK_REFUSALS.unresolved), '', 0);
      if (!allowPrivate && addresses.some((entry) => !isPublicAddress(entry.address))) {
        return callback(new WebhookRefused(WEBHOOK_REFUSALS.privateAddress), '', 0);
      }
      if (options.all) return (callback as unknown as (e: null, a: readonly LookupAddress[]) => void)(null, addresses);
      return callback(null, addresses[0]!.address, addresses[0]!.family);
    };
    const timer = setTimeout(() => answer(new WebhookRefused(WEBHOOK_REFUSALS.unresolved)), timeoutMs);
    try {
      lookup(hostname, { ...options, all: true }, (err, addresses) => answer(err, addresses));
    } catch (err) {
      answer(err as Error);
    }
  };
}

/** Resolves the URL's host now (at creation): WebhookRefused when it does not resolve in time or is not public. */
export async function checkWebhookDestination(url: URL, allowPrivate: boolean, resolution: NameResolution = {}): Promise<void> {
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (isIP(host)) {
    if (!allowPrivate && !isPublicAddress(host)) throw new WebhookRefused(WEBHOOK_REFUSALS.privateAddress);
    return;
  }
  await new Promise<void>((resolve, reject) => {
    checkedLookup(allowPrivate, resolution)(host, { all: true }, (err) => {
      if (!err) resolve();
      else reject(err instanceof WebhookRefused ? err : new WebhookRefused(WEBHOOK_REFUSALS.unresolved));
    });
  });
}

export type DeliveryOutcome = 'delivered' | 'gone' | 'failed';

/** One attempt: POSTs the signed body, with a 10 s deadline for the whole answer. */
export async function deliverWebhook(
  message: { readonly url: string; readonly segredo: string; readonly id: string; readonly body: string },
  options: {
    readonly allowPrivate: boolean;
    readonly timeoutMs?: number;
    readonly now?: () => number;
    /** Tests only: a resolver and deadline of their own. */
    readonly resolution?: NameResolution;
  },
): Promise<{ outcome: DeliveryOutcome; detail: string }> {
  let url: URL;
  try {
    url = parseWebhookUrl(message.url, options.allowPrivate);
    await checkWebhookDestination(url, options.allowPrivate, options.resolution);
  } catch (err) {
    return { outcome: 'failed', detail: (err as Error).message };
  }
  const timestamp = Math.floor((options.now?.() ?? Date.now()) / 1000);
  const body = Buffer.from(message.body);
  const client = url.protocol === 'https:' ? https : http;
  return new Promise((resolve) => {
    const request = client.request(
      url,
      {
        method: 'POST',
        // IP literals are checked above; names are checked on every connection by the lookup.
        lookup: checkedLookup(options.allowPrivate, options.resolution),
        headers: {
          'content-type': 'application/json',
          'content-length': body.length,
          'user-agent': 'censo-api-webhooks',
          'webhook-id': message.id,
          'webhook-timestamp': String(timestamp),
          'webhook-signature': webhookSignature(message.segredo, message.id, timestamp, message.body),
        },
        signal: AbortSignal.timeout(options.timeoutMs ?? 10_000),
      },
      (response) => {
        response.resume();
        response.once('end', () => {
          const status = response.statusCode ?? 0;
          if (status >= 200 && status < 300) resolve({ outcome: 'delivered', detail: String(status) });
          else if (status === 410) resolve({ outcome: 'gone', detail: '410' });
          else resolve({ outcome: 'failed', detail: String(status) });
        });
        response.once('error', (err) => resolve({ outcome: 'failed', detail: err.message }));
      },
    );
    request.once('error', (err) => resolve({ outcome: 'failed', detail: err.message }));
    request.end(body);
  });
}
