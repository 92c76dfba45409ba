// Issue 47: the reconciler's scan of waiting tasks backs off while it finds only tasks that wait
// (their ends come by their hints), and looks at every pass again once it records an end (hints
// are being missed). The running tasks' timeout check runs every pass regardless.
import { describe, expect, it } from 'vitest';
import { Maintenance, MAX_QUIET_SKIP, type TarefasService } from '@censo/api/testing';

function fakeService(page: string[]) {
  const calls = { scans: 0, running: 0, finished: [] as string[] };
  let recordNext = false;
  const service = {
    now: () => Date.now(),
    execution: {
      running: async () => {
        calls.running++;
        return new Map<string, number>();
      },
    },
    store: {
      range: async () => {
        calls.scans++;
        return page.map((member, i) => ({ member, score: i }));
      },
    },
    finish: async (id: string) => {
      calls.finished.push(id);
      const recorded = recordNext;
      recordNext = false;
      return recorded;
    },
  };
  return { service: service as unknown as TarefasService, calls, recordOne: () => (recordNext = true) };
}

describe('the reconciler backs off while waiting tasks only wait', () => {
  it('skips 1, 2, then at most MAX_QUIET_SKIP passes between scans, and checks running tasks every pass', async () => {
    const { service, calls } = fakeService(['a', 'b']);
    const maintenance = new Maintenance(service, 30_000);
    const scannedAt: number[] = [];
    for (let pass = 1; pass <= 16; pass++) {
      const before = calls.scans;
      await maintenance.reconcile();
      if (calls.scans > before) scannedAt.push(pass);
    }
    expect(MAX_QUIET_SKIP).toBe(3);
    expect(scannedAt).toEqual([1, 3, 6, 10, 14]);
    expect(calls.running).toBe(16);
  });

  it('looks at every pass again once a scan records an end', async () => {
    const { service, calls, recordOne } = fakeService(['a', 'b']);
    const maintenance = new Maintenance(service, 30_000);
    for (let pass = 0; pass < 10; pass++) await maintenance.reconcile(); // backed off by now
    recordOne();
    const scans = () => calls.scans;
    let before = scans();
    // The next scan (within MAX_QUIET_SKIP + 1 passes) records one end...
    for (let pass = 0; pass <= MAX_QUIET_SKIP && scans() === before; pass++) await maintenance.reconcile();
    expect(scans()).toBe(before + 1);
    // ...and the pass after it scans again.
    before = scans();
    await maintenance.reconcile();
    expect(scans()).toBe(before + 1);
  });

  it('does not back off with nothing waiting', async () => {
    const { service, calls } = fakeService([]);
    const maintenance = new Maintenance(service, 30_000);
    for (let pass = 0; pass < 5; pass++) await maintenance.reconcile();
    expect(calls.scans).toBe(5);
  });
});

describe("the reconciler's scan tells a page's tasks together (issue 55)", () => {
  it('asks for every waiting task of the page at once, so one commit reads them (one look per group, not per task)', async () => {
    const page = ['a', 'b', 'c', 'd'];
    let inFlight = 0;
    let most = 0;
    const { service } = fakeService(page);
    (service as unknown as { finish: (id: string) => Promise<boolean> }).finish = async () => {
      inFlight++;
      most = Math.max(most, inFlight);
      await new Promise((resolve) => setImmediate(resolve));
      inFlight--;
      return false;
    };
    await new Maintenance(service, 30_000).reconcile();
    expect(most).toBe(page.length);
  });
});
