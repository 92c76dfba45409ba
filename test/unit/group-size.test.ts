// Issue 47: a request's tasks are grouped so that every connected worker gets a group (a group is
// one worker's work from its first task to its last), at most TAREFAS_POR_JOB a group.
import { describe, expect, it } from 'vitest';
import { groupSizeFor } from '@censo/shared';

describe('groupSizeFor', () => {
  it('one worker (or none known): TAREFAS_POR_JOB', () => {
    expect(groupSizeFor(50, 50, 1)).toBe(50);
    expect(groupSizeFor(50, 50, 0)).toBe(50);
    expect(groupSizeFor(50, 7, 1)).toBe(50);
  });

  it('several workers: a group for each, never above TAREFAS_POR_JOB', () => {
    expect(groupSizeFor(50, 50, 8)).toBe(7); // 8 groups: 7 × 7 + 1
    expect(groupSizeFor(50, 50, 2)).toBe(25);
    expect(groupSizeFor(10, 50, 2)).toBe(10);
    expect(groupSizeFor(50, 3, 8)).toBe(1); // fewer tasks than workers: a job each
  });

  it('the smallest size that fits the request into one group a worker: the request ends with its largest group', () => {
    for (const workers of [2, 3, 4, 8, 16]) {
      for (const tasks of [2, 5, 17, 50, 100]) {
        const size = groupSizeFor(50, tasks, workers);
        expect(size).toBeGreaterThanOrEqual(1);
        expect(size).toBeLessThanOrEqual(50);
        if (size < 50) expect(Math.ceil(tasks / size)).toBeLessThanOrEqual(workers);
        if (size > 1) expect(Math.ceil(tasks / (size - 1))).toBeGreaterThan(workers);
      }
    }
  });
});
