// SPEC §9: Redis is reached through exactly one of REDIS_URL, REDIS_SENTINELS (+ name) or
// REDIS_CLUSTER_NODES; anything else is a setting error (one line, exit 1 at start).
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '@censo/shared';

describe('loadConfig: Redis settings', () => {
  it('none: no queue (embedded mode)', () => {
    expect(loadConfig({}).redis).toBeNull();
  });

  it('REDIS_URL, with REDIS_PASSWORD when the URL holds none', () => {
    expect(loadConfig({ REDIS_URL: 'rediss://cache:6380/2' }).redis).toEqual({ kind: 'url', url: 'rediss://cache:6380/2', password: null });
    expect(loadConfig({ REDIS_URL: 'redis://cache:6379', REDIS_PASSWORD: 'p' }).redis).toEqual({
      kind: 'url',
      url: 'redis://cache:6379',
      password: 'p',
    });
  });

  it('REDIS_SENTINELS: host:port list (26379 by default), name, passwords, TLS from rediss://', () => {
    expect(
      loadConfig({
        REDIS_SENTINELS: ' s1:26380, s2 ,[::1]:26381',
        REDIS_SENTINEL_NAME: 'censo',
        REDIS_PASSWORD: 'm',
        REDIS_SENTINEL_PASSWORD: 's',
      }).redis,
    ).toEqual({
      kind: 'sentinel',
      sentinels: [
        { host: 's1', port: 26380 },
        { host: 's2', port: 26379 },
        { host: '::1', port: 26381 },
      ],
      name: 'censo',
      password: 'm',
      sentinelPassword: 's',
      tls: false,
    });
    expect(loadConfig({ REDIS_SENTINELS: 'rediss://s1:26379,rediss://s2:26379', REDIS_SENTINEL_NAME: 'censo' }).redis).toMatchObject({
      tls: true,
    });
  });

  it('REDIS_CLUSTER_NODES: host:port list (6379 by default), password, TLS from rediss://', () => {
    expect(loadConfig({ REDIS_CLUSTER_NODES: '10.0.0.1:7000,10.0.0.2', REDIS_PASSWORD: 'p' }).redis).toEqual({
      kind: 'cluster',
      nodes: [
        { host: '10.0.0.1', port: 7000 },
        { host: '10.0.0.2', port: 6379 },
      ],
      password: 'p',
      tls: false,
    });
    expect(loadConfig({ REDIS_CLUSTER_NODES: 'rediss://n1:7000' }).redis).toMatchObject({ kind: 'cluster', tls: true });
  });

  it('Cluster: the default prefix {censo} and any prefix holding a hash tag are accepted', () => {
    expect(loadConfig({ REDIS_CLUSTER_NODES: 'n1:7000' }).queuePrefix).toBe('{censo}');
    expect(loadConfig({ REDIS_CLUSTER_NODES: 'n1:7000', QUEUE_PREFIX: 'sp{censo-sp}' }).queuePrefix).toBe('sp{censo-sp}');
    // Without a cluster any prefix goes (one server holds every slot).
    expect(loadConfig({ REDIS_URL: 'redis://r:6379', QUEUE_PREFIX: 'censo' }).queuePrefix).toBe('censo');
  });

  it.each([
    [
      { REDIS_URL: 'redis://r:6379', REDIS_SENTINELS: 's1:26379', REDIS_SENTINEL_NAME: 'm' },
      'set only one of REDIS_URL, REDIS_SENTINELS, REDIS_CLUSTER_NODES (got REDIS_URL and REDIS_SENTINELS)',
    ],
    [
      { REDIS_URL: 'redis://r:6379', REDIS_CLUSTER_NODES: 'n1:7000' },
      'set only one of REDIS_URL, REDIS_SENTINELS, REDIS_CLUSTER_NODES (got REDIS_URL and REDIS_CLUSTER_NODES)',
    ],
    [
      { REDIS_SENTINELS: 's1:26379', REDIS_SENTINEL_NAME: 'm', REDIS_CLUSTER_NODES: 'n1:7000' },
      'set only one of REDIS_URL, REDIS_SENTINELS, REDIS_CLUSTER_NODES (got REDIS_SENTINELS and REDIS_CLUSTER_NODES)',
    ],
    [{ REDIS_SENTINELS: 's1:26379' }, 'REDIS_SENTINELS needs REDIS_SENTINEL_NAME (the master group name the sentinels monitor)'],
    [{ REDIS_SENTINEL_NAME: 'm' }, 'REDIS_SENTINEL_NAME is set but REDIS_SENTINELS is not'],
    [{ REDIS_URL: 'redis://r:6379', REDIS_SENTINEL_PASSWORD: 's' }, 'REDIS_SENTINEL_PASSWORD is set but REDIS_SENTINELS is not'],
    [{ REDIS_PASSWORD: 'p' }, 'REDIS_PASSWORD is set but none of REDIS_URL, REDIS_SENTINELS, REDIS_CLUSTER_NODES is'],
    [{ REDIS_URL: 'redis://:u@r:6379', REDIS_PASSWORD: 'p' }, 'REDIS_PASSWORD is set and REDIS_URL holds a password too: give it once'],
    [
      { REDIS_SENTINELS: 's1:notaport', REDIS_SENTINEL_NAME: 'm' },
      'REDIS_SENTINELS must be host:port entries separated by commas, got "s1:notaport"',
    ],
    [{ REDIS_CLUSTER_NODES: 'n1:7000/0' }, 'REDIS_CLUSTER_NODES must be host:port entries separated by commas, got "n1:7000/0"'],
    [{ REDIS_CLUSTER_NODES: ' , ' }, 'REDIS_CLUSTER_NODES must be host:port entries separated by commas'],
    [{ REDIS_CLUSTER_NODES: 'redis://n1:7000,rediss://n2:7000' }, 'REDIS_CLUSTER_NODES mixes redis:// and rediss:// entries'],
    [
      { REDIS_CLUSTER_NODES: 'n1:7000', QUEUE_PREFIX: 'censo' },
      'QUEUE_PREFIX must hold a hash tag such as {censo} with REDIS_CLUSTER_NODES (one slot for the whole queue), got "censo"',
    ],
    [
      { REDIS_CLUSTER_NODES: 'n1:7000', QUEUE_PREFIX: '{}censo' },
      'QUEUE_PREFIX must hold a hash tag such as {censo} with REDIS_CLUSTER_NODES (one slot for the whole queue), got "{}censo"',
    ],
    [
      { REDIS_CLUSTER_NODES: 'n1:7000', QUEUE_PREFIX: '{censo' },
      'QUEUE_PREFIX must hold a hash tag such as {censo} with REDIS_CLUSTER_NODES (one slot for the whole queue), got "{censo"',
    ],
  ])('rejects %o', (env, message) => {
    expect(() => loadConfig(env)).toThrow(ConfigError);
    expect(() => loadConfig(env)).toThrow(message);
  });

  it('never echoes a password: credentials in a node list are refused without repeating them', () => {
    const attempt = () => loadConfig({ REDIS_SENTINELS: 'redis://:s3cret@s1:26379', REDIS_SENTINEL_NAME: 'm' });
    expect(attempt).toThrow('REDIS_SENTINELS takes no user or password (use REDIS_PASSWORD or REDIS_SENTINEL_PASSWORD)');
    expect(attempt).toThrow(expect.objectContaining({ message: expect.not.stringContaining('s3cret') }));
  });
});
