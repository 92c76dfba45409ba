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
//
// The watcher also reports each switch once (`onSwitch`), and every watcher of the process reports
// to `onProcessMasterSwitch`, once per failover however many watchers heard it: each role counts
// them for monitoring (censo_redis_failovers_total, shared/src/runtime/job-metrics.ts), since a
// failover is over before any alert on an unreachable Redis could fire. The API has no connection
// of its own to hand a callback to (its queue events' connection is made in the job runner), and
// under `npm start` the API and the worker watch the same group: one count per process.
import type { Redis, RedisOptions } from 'ioredis';
import type { RedisConfig } from '../runtime/config.js';

type SentinelConfig = Extract<RedisConfig, { kind: 'sentinel' }>;
type RedisClass = new (options: RedisOptions) => Redis;

const CHANNEL = '+switch-master';

/**
 * Every sentinel announces each failover once: the leader when it promotes the replica, each of
 * the others when the leader's hello messages (every 2 s) give it the new configuration; and one
 * partitioned during the failover announces it when it is back, from its own stale view of the
 * old master. So the watcher hears one failover once per sentinel, within seconds or later, with
 * the same new master but not always the same old one. The rule: an announcement naming the new
 * master last reported, less than this long after that report, is the same failover. Two real
 * failovers in a row never name the same new master (the second moves away from it); only when
 * every announcement of a failover in between was missed (all sentinels unreachable from this
 * process meanwhile) could a real one look like the last, and the window bounds that: past it a
 * late announcement counts twice rather than a failover never.
 */
const SAME_FAILOVER_MS = 30_000;

/** A master switch as the sentinels announce it: the group and its new master. */
export interface MasterSwitch {
  readonly name: string;
  readonly host: string;
  readonly port: number;
}

export interface MasterSwitchOptions {
  /** Called once per failover of the watched group, however many sentinels announce it. */
  readonly onSwitch?: (announced: MasterSwitch) => void;
}

/** The failovers already reported by one watcher, or by the process (SAME_FAILOVER_MS). */
class ReportedFailovers {
  /** The new master of the last failover reported, and when. */
  #last: { master: string; at: number } | null = null;

  /** Whether `announced` is a failover not reported yet; if so, it is now. */
  isNew(announced: MasterSwitch): boolean {
    const master = `${announced.host}:${announced.port}`;
    // Monotonic: a wall clock set back would stretch the window.
    const now = performance.now();
    if (this.#last?.master === master && now - this.#last.at < SAME_FAILOVER_MS) return false;
    this.#last = { master, at: now };
    return true;
  }
}

type SwitchListener = (announced: MasterSwitch) => void;
const processListeners = new Set<SwitchListener>();
/** By master group: one process may watch several (it never does today, but a count per group is what the metric says). */
const processReported = new Map<string, ReportedFailovers>();

/**
 * Calls `listener` once per failover any watcher of this process hears, whichever connection
 * that is. Returns the function that stops it.
 */
export function onProcessMasterSwitch(listener: SwitchListener): () => void {
  processListeners.add(listener);
  return () => void processListeners.delete(listener);
}

function reportToProcess(announced: MasterSwitch): void {
  let reported = processReported.get(announced.name);
  if (!reported) processReported.set(announced.name, (reported = new ReportedFailovers()));
  if (!reported.isNew(announced)) return;
  for (const listener of processListeners) listener(announced);
}

/** What a `+switch-master` message announces: `<name> <old ip> <old port> <new ip> <new port>`. */
export function parseSwitch(message: string): MasterSwitch | null {
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
  readonly #onSwitch: MasterSwitchOptions['onSwitch'];
  readonly #clients = new Set<Redis>();
  #subscribers: Redis[] = [];
  readonly #reported = new ReportedFailovers();

  constructor(config: SentinelConfig, RedisCtor: RedisClass, options: MasterSwitchOptions = {}) {
    this.#config = config;
    this.#Redis = RedisCtor;
    this.#onSwitch = options.onSwitch;
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

  /** Drops the connections not on the announced master (they ask the sentinels again), and reports the failover. */
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
    this.#report(announced);
  }

  #report(announced: MasterSwitch): void {
    if (this.#reported.isNew(announced)) this.#onSwitch?.(announced);
    reportToProcess(announced);
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
