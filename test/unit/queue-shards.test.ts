// QUEUE_SHARDS (issue 55): a shard's prefix, the shard of a job's key, and the setting itself.
// The shard of a key is a contract between processes of different versions (an API finds the
// shard of a task another API queued), so its values are held fixed here, not only its spread.
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ConfigError, MAX_QUEUE_SHARDS, loadConfig, shardOf, shardPrefix, shardPrefixes } from '@censo/shared';

describe('shardPrefix', () => {
  it('shard 0 is QUEUE_PREFIX itself: a deployment of one shard keeps every key it had', () => {
    expect(shardPrefix('{censo}', 0)).toBe('{censo}');
    expect(shardPrefix('censo', 0)).toBe('censo');
  });

  it('a further shard changes what is inside the hash tag, so it hashes to another slot', () => {
    expect(shardPrefixes('{censo}', 3)).toEqual(['{censo}', '{censo-1}', '{censo-2}']);
    expect(shardPrefix('sp:{censo}:fila', 12)).toBe('sp:{censo-12}:fila');
    // Redis hashes the first tag only; an empty pair `{}` is no tag.
    expect(shardPrefix('{a}{b}', 1)).toBe('{a-1}{b}');
    expect(shardPrefix('{}x', 2)).toBe('{}x-2');
  });

  it('without a hash tag (one Redis, no slots), the shard number is appended', () => {
    expect(shardPrefix('censo', 1)).toBe('censo-1');
    expect(shardPrefixes('bull', 2)).toEqual(['bull', 'bull-1']);
  });
});

describe('shardOf', () => {
  it('one shard: every key is on shard 0', () => {
    expect(shardOf('g-00000000-0000-4000-8000-000000000000', 1)).toBe(0);
  });

  it('is FNV-1a of the key, the same in every process and version', () => {
    // 32-bit FNV-1a: "" is the offset basis 0x811c9dc5, "a" is 0xe40c292c (the published vectors).
    expect(shardOf('', 2 ** 31)).toBe(0x811c9dc5 % 2 ** 31);
    expect(shardOf('a', 2 ** 31)).toBe(0xe40c292c % 2 ** 31);
    expect(shardOf('foobar', 2 ** 31)).toBe(0xbf9cf968 % 2 ** 31);
  });

  it('spreads random ids evenly: each of 4 shards within 5 % of a quarter of 20,000', () => {
    const counts = [0, 0, 0, 0];
    for (let i = 0; i < 20_000; i++) counts[shardOf(randomUUID(), 4)]!++;
    for (const count of counts) expect(Math.abs(count - 5_000)).toBeLessThan(250);
  });
});

describe('QUEUE_SHARDS', () => {
  it('defaults to 1 and takes 1 to MAX_QUEUE_SHARDS', () => {
    expect(loadConfig({}).queueShards).toBe(1);
    expect(loadConfig({ QUEUE_SHARDS: '4' }).queueShards).toBe(4);
    expect(loadConfig({ QUEUE_SHARDS: String(MAX_QUEUE_SHARDS) }).queueShards).toBe(MAX_QUEUE_SHARDS);
  });

  it.each([
    ['0', 'QUEUE_SHARDS must be between 1 and 64, got 0'],
    ['65', 'QUEUE_SHARDS must be between 1 and 64, got 65'],
    ['2.5', 'QUEUE_SHARDS must be a whole number, got "2.5"'],
  ])('%s is a setting error', (value, message) => {
    expect(() => loadConfig({ QUEUE_SHARDS: value })).toThrow(new ConfigError(message));
  });
});
