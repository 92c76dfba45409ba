// The settings of asynchronous intake (SPEC §7): defaults, accepted values, one-line refusals.
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '@censo/shared';

describe('RESULT_TTL_HOURS, MAX_QUEUED_TAREFAS, WEBHOOK_ALLOW_PRIVATE', () => {
  it('default to 24 h, 10000 tasks and public https webhooks only', () => {
    expect(loadConfig({})).toMatchObject({ resultTtlMs: 24 * 3_600_000, maxQueuedTarefas: 10_000, webhookAllowPrivate: false });
  });

  it('take whole or decimal hours, a bound and true/false', () => {
    expect(loadConfig({ RESULT_TTL_HOURS: '48' }).resultTtlMs).toBe(48 * 3_600_000);
    expect(loadConfig({ RESULT_TTL_HOURS: '0.5' }).resultTtlMs).toBe(1_800_000);
    expect(loadConfig({ MAX_QUEUED_TAREFAS: '5' }).maxQueuedTarefas).toBe(5);
    expect(loadConfig({ WEBHOOK_ALLOW_PRIVATE: 'TRUE' }).webhookAllowPrivate).toBe(true);
    expect(loadConfig({ WEBHOOK_ALLOW_PRIVATE: 'false' }).webhookAllowPrivate).toBe(false);
  });

  it.each([
    ['RESULT_TTL_HOURS', '0'],
    ['RESULT_TTL_HOURS', '-1'],
    ['RESULT_TTL_HOURS', '1e3'],
    ['RESULT_TTL_HOURS', 'um dia'],
    ['RESULT_TTL_HOURS', '9000'],
    ['MAX_QUEUED_TAREFAS', '0'],
    ['MAX_QUEUED_TAREFAS', '10.5'],
    ['WEBHOOK_ALLOW_PRIVATE', 'yes'],
  ])('%s=%s stops the start with a one-line message naming the setting', (name, value) => {
    expect(() => loadConfig({ [name]: value })).toThrow(ConfigError);
    expect(() => loadConfig({ [name]: value })).toThrow(new RegExp(`^${name} `));
  });
});
