// The suite's "hosts": one network namespace each, joined by veth pairs to one bridge, on a
// private /24 that only these namespaces use. Every name starts with a prefix, so whatever a run
// left behind (killed mid-way, a timeout) is found and removed by the next one before it starts.
// `network()` makes such a set for any prefix, /24 and host list (the scale profile, escala.mjs,
// has its own, `cnse` on 10.231.43.0/24, so the two can never collide); the module's own exports
// are the fault suite's fixed set, as they always were.
import { execFileSync } from 'node:child_process';

export const PREFIX = 'cnsc';
export const BRIDGE = `${PREFIX}-br0`;
export const SUBNET = '10.231.42';
/** The bridge's own address: the orchestrator (root namespace) reaches the hosts through it. */
export const BRIDGE_IP = `${SUBNET}.1`;

/** Host name → last octet of its address. */
export const HOSTS = {
  api1: 11,
  api2: 12,
  wk1: 21,
  wk2: 22,
  wk3: 23,
  rd1: 31,
  rd2: 32,
  rd3: 33,
  s3: 41,
  load: 51,
};

function ip(args, { allowFailure = false } = {}) {
  try {
    return execFileSync('ip', args, { encoding: 'utf8', timeout: 10_000, stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (err) {
    if (allowFailure) return '';
    throw new Error(`ip ${args.join(' ')}: ${String(err.stderr ?? err.message).trim()}`, { cause: err });
  }
}

/** Pids of every process inside a namespace (of any set). */
export function pidsIn(ns) {
  return ip(['netns', 'pids', ns], { allowFailure: true })
    .split('\n')
    .map((line) => Number(line.trim()))
    .filter((pid) => Number.isInteger(pid) && pid > 0);
}

/**
 * A set of hosts: `prefix` names its namespaces, links and bridge, `subnet` is the first three
 * octets of its /24, `hosts` maps a host name to the last octet of its address.
 */
export function network({ prefix, subnet, hosts }) {
  const bridge = `${prefix}-br0`;
  const bridgeIp = `${subnet}.1`;
  const ipOf = (host) => {
    if (!(host in hosts)) throw new Error(`no host ${host} in the ${prefix} network`);
    return `${subnet}.${hosts[host]}`;
  };
  const nsOf = (host) => `${prefix}-${host}`;
  /** The bridge-side end of a host's veth pair: taking it down cuts the host off the network. */
  const linkOf = (host) => `${prefix}-${host}`;

  /** Names (namespaces, then links) that start with the prefix: what a run of this set made. */
  const ours = () => ({
    namespaces: ip(['netns', 'list'], { allowFailure: true })
      .split('\n')
      .map((line) => line.trim().split(/\s+/)[0])
      .filter((name) => name && name.startsWith(`${prefix}-`)),
    links: ip(['-o', 'link', 'show'], { allowFailure: true })
      .split('\n')
      .map((line) => /^\d+:\s+([^:@\s]+)/.exec(line)?.[1])
      .filter((name) => name && name.startsWith(`${prefix}-`)),
  });

  /**
   * Removes every namespace and link whose name starts with the prefix, killing the processes
   * still running in those namespaces first. Safe to run when there is nothing to remove.
   */
  function removeLeftovers() {
    const { namespaces } = ours();
    for (const ns of namespaces) {
      for (const pid of pidsIn(ns)) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // already gone
        }
      }
    }
    // Killed processes release their namespace a moment later; deleting it now is fine either way.
    for (const ns of namespaces) ip(['netns', 'del', ns], { allowFailure: true });
    // Deleting a namespace deletes its end of each veth pair, and with it the other end.
    const { links } = ours();
    for (const link of links) ip(['link', 'del', link], { allowFailure: true });
    return { namespaces: namespaces.length, links: links.length };
  }

  /** Creates the bridge and one namespace per host, each with its address and loopback up. */
  function createNetwork(names = Object.keys(hosts)) {
    ip(['link', 'add', bridge, 'type', 'bridge']);
    ip(['addr', 'add', `${bridgeIp}/24`, 'dev', bridge]);
    ip(['link', 'set', bridge, 'up']);
    for (const host of names) {
      const ns = nsOf(host);
      const outer = linkOf(host);
      const inner = `${outer}-p`;
      ip(['netns', 'add', ns]);
      ip(['link', 'add', outer, 'type', 'veth', 'peer', 'name', inner]);
      ip(['link', 'set', inner, 'netns', ns]);
      ip(['-n', ns, 'link', 'set', inner, 'name', 'eth0']);
      ip(['-n', ns, 'addr', 'add', `${ipOf(host)}/24`, 'dev', 'eth0']);
      ip(['-n', ns, 'link', 'set', 'eth0', 'up']);
      ip(['-n', ns, 'link', 'set', 'lo', 'up']);
      ip(['link', 'set', outer, 'master', bridge]);
      ip(['link', 'set', outer, 'up']);
    }
  }

  return {
    prefix,
    subnet,
    bridge,
    bridgeIp,
    hosts,
    ipOf,
    nsOf,
    /** What of this set exists now (namespaces and links), e.g. to check a teardown. */
    existing: ours,
    removeLeftovers,
    createNetwork,
    /** Cuts a host off the network: its packets and those sent to it are dropped, silently. */
    isolate: (host) => ip(['link', 'set', linkOf(host), 'down']),
    heal: (host) => ip(['link', 'set', linkOf(host), 'up']),
  };
}

// The fault suite's set.
const suite = network({ prefix: PREFIX, subnet: SUBNET, hosts: HOSTS });
export const ipOf = (host) => `${SUBNET}.${HOSTS[host]}`;
export const nsOf = suite.nsOf;
export const removeLeftovers = suite.removeLeftovers;
export const createNetwork = suite.createNetwork;
export const isolate = suite.isolate;
export const heal = suite.heal;
