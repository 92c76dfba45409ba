// The suite's "hosts": one network namespace each, joined by veth pairs to one bridge, on a
// private /24 that only these namespaces use. Every name starts with PREFIX, so whatever a run
// left behind (killed mid-way, a timeout) is found and removed by the next one before it starts.
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

export const ipOf = (host) => `${SUBNET}.${HOSTS[host]}`;
export const nsOf = (host) => `${PREFIX}-${host}`;
/** The bridge-side end of a host's veth pair: taking it down cuts the host off the network. */
const linkOf = (host) => `${PREFIX}-${host}`;

function ip(args, { allowFailure = false } = {}) {
  try {
    return execFileSync('ip', args, { encoding: 'utf8', timeout: 10_000, stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (err) {
    if (allowFailure) return '';
    throw new Error(`ip ${args.join(' ')}: ${String(err.stderr ?? err.message).trim()}`, { cause: err });
  }
}

/** Pids of every process inside a namespace of ours. */
export function pidsIn(ns) {
  return ip(['netns', 'pids', ns], { allowFailure: true })
    .split('\n')
    .map((line) => Number(line.trim()))
    .filter((pid) => Number.isInteger(pid) && pid > 0);
}

/**
 * Removes every namespace and link whose name starts with PREFIX, killing the processes still
 * running in those namespaces first. Safe to run when there is nothing to remove.
 */
export function removeLeftovers() {
  const namespaces = ip(['netns', 'list'], { allowFailure: true })
    .split('\n')
    .map((line) => line.trim().split(/\s+/)[0])
    .filter((name) => name && name.startsWith(`${PREFIX}-`));
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
  const links = ip(['-o', 'link', 'show'], { allowFailure: true })
    .split('\n')
    .map((line) => /^\d+:\s+([^:@\s]+)/.exec(line)?.[1])
    .filter((name) => name && name.startsWith(`${PREFIX}-`));
  for (const link of links) ip(['link', 'del', link], { allowFailure: true });
  return { namespaces: namespaces.length, links: links.length };
}

/** Creates the bridge and one namespace per host, each with its address and loopback up. */
export function createNetwork(hosts = Object.keys(HOSTS)) {
  ip(['link', 'add', BRIDGE, 'type', 'bridge']);
  ip(['addr', 'add', `${BRIDGE_IP}/24`, 'dev', BRIDGE]);
  ip(['link', 'set', BRIDGE, 'up']);
  for (const host of hosts) {
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
    ip(['link', 'set', outer, 'master', BRIDGE]);
    ip(['link', 'set', outer, 'up']);
  }
}

/** Cuts a host off the network: its packets and those sent to it are dropped, silently. */
export function isolate(host) {
  ip(['link', 'set', linkOf(host), 'down']);
}

export function heal(host) {
  ip(['link', 'set', linkOf(host), 'up']);
}
