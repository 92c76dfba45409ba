// A batch's webhook (SPEC §7.4, Standard Webhooks): where it may point, how a message is signed,
// and one delivery attempt. The destination is checked when the batch is created and again at
// every attempt, on the very addresses the connection then uses (the lookup is the check), so a
// name that starts resolving to a private address later is refused, not followed.
import { createHmac, randomBytes } from 'node:crypto';
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
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

/** Public unicast only: loopback, private, link-local, CGNAT, multicast, documentation... are not. */
export function isPublicAddress(address: string): boolean {
  try {
    return ipaddr.process(address).range() === 'unicast';
  } catch {
    return false;
  }
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
  if (url.protocol !== 'https:' && !(allowPrivate && url.protocol === 'http:')) throw new WebhookRefused('a URL deve usar https');
  if (url.username || url.password) throw new WebhookRefused('a URL não pode conter usuário ou senha');
  return url;
}

/** Host names resolve through this lookup: every address it hands out has passed the check. */
function checkedLookup(allowPrivate: boolean): LookupFunction {
  return (hostname, options, callback) => {
    dnsLookup(hostname, { ...options, all: true }, (err, addresses: LookupAddress[]) => {
      if (err) return callback(err, '', 0);
      const refused = addresses.find((entry) => !allowPrivate && !isPublicAddress(entry.address));
      if (refused || addresses.length === 0) return callback(new WebhookRefused('o endereço de destino é privado ou local'), '', 0);
      if (options.all) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, addresses);
      return callback(null, addresses[0]!.address, addresses[0]!.family);
    });
  };
}

/** Resolves the URL's host now (at creation): WebhookRefused when it does not resolve or is not public. */
export async function checkWebhookDestination(url: URL, allowPrivate: boolean): Promise<void> {
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (isIP(host)) {
    if (!allowPrivate && !isPublicAddress(host)) throw new WebhookRefused('o endereço de destino é privado ou local');
    return;
  }
  await new Promise<void>((resolve, reject) => {
    checkedLookup(allowPrivate)(host, { all: true }, (err) => {
      if (!err) resolve();
      else reject(err instanceof WebhookRefused ? err : new WebhookRefused('o nome do destino não foi encontrado'));
    });
  });
}

export type DeliveryOutcome = 'delivered' | 'gone' | 'failed';

/** One attempt: POSTs the signed body, with a 10 s deadline for the whole answer. */
export async function deliverWebhook(
  message: { readonly url: string; readonly segredo: string; readonly id: string; readonly body: string },
  options: { readonly allowPrivate: boolean; readonly timeoutMs?: number; readonly now?: () => number },
): Promise<{ outcome: DeliveryOutcome; detail: string }> {
  let url: URL;
  try {
    url = parseWebhookUrl(message.url, options.allowPrivate);
    await checkWebhookDestination(url, options.allowPrivate);
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
        lookup: checkedLookup(options.allowPrivate),
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
