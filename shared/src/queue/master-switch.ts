// Worker connections follow the sentinels' `+switch-master` announcement, so a worker whose old
// master is still reachable (partitioned from the sentinels only) moves to the new one at once
// instead of waiting for jobs there; but only the connections that are not on the new master yet.
//
// ioredis's own `failoverDetector` drops every connection on each announcement. After a master
// dies the connections have usually reconnected to the promoted replica before the announcement
// comes (the sentinels name it as soon as it is promoted, and announce the switch only once the
// other replicas follow it): traced under load, the worker's three connections were dropped about
// 0.3 s after reaching the new master, two with a command in flight. ioredis resends such
// commands after reconnecting, and BullMQ's are Lua scripts that are not idempotent: a resent
// moveToActive takes a second job while the first stays active, with nobody on it, until its lock
// expires and the stalled check hands it back, past the request's deadline.
import type { Redis, RedisOptions } from 'ioredis';
import type { RedisConfig } from '../runtime/config.js';

type SentinelConfig = Extract<RedisConfig, { kind: 'sentinel' }>;
type RedisClass = new (options: RedisOptions) => Redis;

const CHANNEL = '+switch-master';

/** What a `+switch-master` message announces: `<name> <old ip> <old port> <new ip> <new port>`. */
export function parseSwitch(message: string): { name: string; host: string; port: number } | null {
  const parts = message.trim().split(/\s+/);
  if (parts.length !== 5) return null;
  const port = Number(parts[4]);
  return Number.isInteger(port) ? { name: parts[0]!, host: parts[3]!, port } : null;
}

/** Whether `client`'s socket goes to the server at host:port. */
function socketGoesTo(client: Redis, host: string, port: number): boolean {
  const socket = client.stream as { remoteAddress?: string; remotePort?: number } | undefined;
  return socket?.remoteAddress?.replace(/^::ffff:/, '') === host && socket.remotePort === port;
}

/**
 * Watches the sentinels for one master group on behalf of a set of connections (a client and
 * every copy BullMQ makes of it): one subscriber per sentinel, open while any of them has not
 * ended (the lazy client they are copied from ends only when the process closes it).
 */
export class MasterSwitchWatcher {
  readonly #config: SentinelConfig;
  readonly #Redis: RedisClass;
  readonly #clients = new Set<Redis>();
  #subscribers: Redis[] = [];

  constructor(config: SentinelConfig, RedisCtor: RedisClass) {
    this.#config = config;
    this.#Redis = RedisCtor;
  }

  track(client: Redis): void {
    const follow = () => {
      this.#clients.add(client);
      if (this.#subscribers.length === 0) this.#start();
    };
    // Ended is not always for good: BullMQ ends its blocking connection to drop a read its
    // watchdog abandoned, then connects it again.
    client.on('connecting', follow);
    client.on('end', () => {
      this.#clients.delete(client);
      if (this.#clients.size === 0) this.#stop();
    });
    follow();
  }

  /** Drops the connections not on the announced master; they ask the sentinels again. */
  switched(message: string): void {
    const announced = parseSwitch(message);
    if (!announced || announced.name !== this.#config.name) return;
    for (const client of this.#clients) {
      // Only a connection that is up: one still connecting asks the sentinels anyway, and
      // ioredis ends for good, without reconnecting, one dropped while it asks them (its
      // connect fails with "Connection is closed"); a lazy one never connected stays so.
      if (client.status !== 'ready' || socketGoesTo(client, announced.host, announced.port)) continue;
      client.disconnect(true);
    }
  }

  #start(): void {
    const { sentinels, sentinelPassword, tls } = this.#config;
    this.#subscribers = sentinels.map(({ host, port }) => {
      const subscriber = new this.#Redis({
        host,
        port,
        ...(sentinelPassword === null ? {} : { password: sentinelPassword }),
        ...(tls ? { tls: {} } : {}),
        // A sentinel answers no INFO; one that is down is retried, its subscription waiting for
        // it rather than given up after a few attempts (it would then never be resubscribed).
        enableReadyCheck: false,
        maxRetriesPerRequest: null,
        connectTimeout: 2_000,
        retryStrategy: (times: number) => Math.min(250 * times, 2_000),
      });
      subscriber.on('error', () => undefined); // a sentinel down is what the others are for
      subscriber.on('message', (channel: string, message: string) => {
        if (channel === CHANNEL) this.switched(message);
      });
      subscriber.subscribe(CHANNEL).catch(() => undefined);
      return subscriber;
    });
  }

  #stop(): void {
    for (const subscriber of this.#subscribers) subscriber.disconnect();
    this.#subscribers = [];
  }
}
