import { readFileSync } from 'node:fs';
import semver from 'semver';
import { describe, expect, it } from 'vitest';

// Issue 50: on Node 20 `npm ci` printed EBADENGINE for content-disposition@3 (via @fastify/static)
// and cookie@2 (via light-my-request), both Node >= 22, while the README promises Node 20.6+.
// The lock file is what `npm ci` installs, so checking it catches the next such bump offline.
//
// Two floors: what the service runs on (README, SPEC §9: Node >= 20.6) binds every package that is
// not only a development tool; the development toolchain (eslint 10, vitest 4 with vite 8 and
// rolldown) already needs Node 20.19, the Node 20 the CI runs, so dev-only packages are held to that.
const RUNTIME_FLOOR = '20.6.0';
const DEV_FLOOR = '20.19.0';

interface LockPackage {
  version?: string;
  dev?: boolean;
  engines?: { node?: string } | string[];
}

const lock = JSON.parse(readFileSync(new URL('../../package-lock.json', import.meta.url), 'utf8')) as {
  packages: Record<string, LockPackage>;
};
const rootManifest = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
  engines: { node: string };
};

function refused(floor: string, pick: (entry: LockPackage) => boolean): string[] {
  return Object.entries(lock.packages)
    .filter(([path, entry]) => path !== '' && pick(entry))
    .flatMap(([path, entry]) => {
      // An old-style array of engines carries no Node range npm checks.
      const range = Array.isArray(entry.engines) ? undefined : entry.engines?.node;
      return range !== undefined && !semver.satisfies(floor, range) ? [`${path}@${entry.version ?? '?'} wants node ${range}`] : [];
    });
}

describe('package-lock.json installs on the Node the README promises', () => {
  it('the root package declares the runtime floor', () => {
    expect(semver.minVersion(rootManifest.engines.node)?.version).toBe(RUNTIME_FLOOR);
  });

  it('every package the service runs accepts Node 20.6.0', () => {
    expect(refused(RUNTIME_FLOOR, (entry) => entry.dev !== true)).toEqual([]);
  });

  it('every development package accepts Node 20.19.0', () => {
    expect(refused(DEV_FLOOR, (entry) => entry.dev === true)).toEqual([]);
  });
});
