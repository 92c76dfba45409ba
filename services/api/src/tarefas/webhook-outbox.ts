// The webhook outbox (SPEC §7.4): a batch's end writes its message in the same commit as the end
// itself (webhookWrites), so a message is never lost nor sent for an end that did not happen; the
// housekeeping then sends what is due, each message claimed first so that one replica sends it,
// retried on Standard Webhooks' schedule.
import { randomBytes } from 'node:crypto';
import type { Logger } from '@censo/shared';
import { rfc3339, type Contagens, type LoteRecord } from './model.js';
import { keys, type TarefaStore, type Write } from './store.js';
import { deliverWebhook, newMessageId } from './webhooks.js';

/**
 * Webhook retries after the first attempt, Standard Webhooks' schedule: 27 h 35 min in all, so a
 * receiver down for a day still gets the message (SPEC §7.4: at least 24 h).
 */
export const WEBHOOK_RETRIES_MS = [5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000];
/** A claimed webhook message is left to others again after this long (its sender died mid-attempt). */
const WEBHOOK_LEASE_MS = 60_000;

export interface WebhookMessage {
  readonly id: string;
  readonly url: string;
  readonly segredo: string;
  readonly body: string;
  readonly tentativas: number;
}

/** The writes that put a batch's end message in the outbox; none when the batch has no webhook. */
export function webhookWrites(
  lote: LoteRecord,
  type: 'lote.concluido' | 'lote.cancelado',
  estado: string,
  tarefas: Contagens,
  now: number,
): Write[] {
  if (lote.webhook === null) return [];
  const id = newMessageId();
  // Ids, states and counts only: nothing from the files (no personal data).
  const body = JSON.stringify({ type, timestamp: rfc3339(now), data: { id: lote.id, estado, tarefas } });
  const message: WebhookMessage = { id, url: lote.webhook.url, segredo: lote.webhook.segredo, body, tentativas: 0 };
  return [
    { op: 'set', key: keys.webhook(id), value: JSON.stringify(message) },
    { op: 'zadd', key: keys.webhooksDue, member: id, score: now },
  ];
}

export interface WebhookOutboxDeps {
  readonly store: TarefaStore;
  readonly log: Logger;
  readonly now: () => number;
  /** WEBHOOK_ALLOW_PRIVATE: private and loopback destinations allowed (tests, closed networks). */
  readonly allowPrivate: boolean;
}

export class WebhookOutbox {
  readonly #deps: WebhookOutboxDeps;

  constructor(deps: WebhookOutboxDeps) {
    this.#deps = deps;
  }

  /** Sends the messages that are due; each is claimed first, so one replica sends it. */
  async deliverDue(): Promise<void> {
    const now = this.#deps.now();
    const due = await this.#deps.store.range(keys.webhooksDue, { upTo: now, limit: 20 });
    await Promise.all(
      due.map(async ({ member: id }) => {
        const raw = await this.#deps.store.get(keys.webhook(id));
        if (raw === null) {
          await this.#deps.store.commit([], [{ op: 'zrem', key: keys.webhooksDue, member: id }]);
          return;
        }
        const message = JSON.parse(raw) as WebhookMessage;
        const claimed = { ...message, claim: randomBytes(6).toString('base64url') };
        const claimedRaw = JSON.stringify(claimed);
        const claim: Write[] = [
          { op: 'set', key: keys.webhook(id), value: claimedRaw },
          { op: 'zadd', key: keys.webhooksDue, member: id, score: now + WEBHOOK_LEASE_MS },
        ];
        if (!(await this.#deps.store.commit([{ key: keys.webhook(id), value: raw }], claim))) return;
        const { outcome, detail } = await deliverWebhook(message, { allowPrivate: this.#deps.allowPrivate, now: this.#deps.now });
        const tentativas = message.tentativas + 1;
        const log = { webhook: id, tentativas, outcome, detail };
        const guard = [{ key: keys.webhook(id), value: claimedRaw }];
        if (outcome !== 'failed' || tentativas > WEBHOOK_RETRIES_MS.length) {
          if (outcome === 'failed') this.#deps.log.warn(log, 'webhook given up after its last retry');
          else this.#deps.log.info(log, outcome === 'gone' ? 'webhook gone (410): no more retries' : 'webhook delivered');
          await this.#deps.store.commit(guard, [
            { op: 'del', key: keys.webhook(id) },
            { op: 'zrem', key: keys.webhooksDue, member: id },
          ]);
          return;
        }
        this.#deps.log.info(log, 'webhook failed, will retry');
        await this.#deps.store.commit(guard, [
          { op: 'set', key: keys.webhook(id), value: JSON.stringify({ ...message, tentativas }) },
          { op: 'zadd', key: keys.webhooksDue, member: id, score: this.#deps.now() + WEBHOOK_RETRIES_MS[tentativas - 1]! },
        ]);
      }),
    );
  }
}
