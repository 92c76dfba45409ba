// loadConfig is pure: plain objects in, a frozen Config out, ConfigError on a bad value.
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '@censo/shared';

describe('loadConfig', () => {
  it('has the documented defaults', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({
      host: '0.0.0.0',
      port: 3000,
      apiKeys: [],
      queryApiKeys: [],
      redis: null,
      queuePrefix: '{censo}',
      databaseUrl: null,
      jobTimeoutMs: 120_000,
      queryTimeoutMs: 10_000,
      workerConcurrency: os.availableParallelism(),
      logLevel: 'info',
      uploadDir: path.join(os.tmpdir(), 'censo-api-uploads'),
      storage: { kind: 'folder' },
      maxInFlightUploads: 128,
      rateLimitPerMinute: 0,
      portFromEnv: false,
    });
    expect(Object.isFrozen(config)).toBe(true);
  });

  it('knows whether PORT was given (a worker serves health and metrics only then)', () => {
    expect(loadConfig({ PORT: '3001' })).toMatchObject({ port: 3001, portFromEnv: true });
  });

  it('splits comma-separated keys for rotation and ignores blanks', () => {
    expect(loadConfig({ API_KEY: ' a , b,,' }).apiKeys).toEqual(['a', 'b']);
  });

  it('uses QUERY_API_KEY for the query route when set, else API_KEY', () => {
    expect(loadConfig({ API_KEY: 'a' }).queryApiKeys).toEqual(['a']);
    expect(loadConfig({ API_KEY: 'a', QUERY_API_KEY: 'q1,q2' }).queryApiKeys).toEqual(['q1', 'q2']);
  });

  it('derives the same cursor secret from the same keys, in any order', () => {
    expect(loadConfig({ API_KEY: 'a,b' }).cursorSecret).toBe(loadConfig({ API_KEY: 'b,a' }).cursorSecret);
    expect(loadConfig({ API_KEY: 'a', CURSOR_SECRET: 's' }).cursorSecret).toBe('s');
  });

  it.each([
    [{ PORT: 'abc' }, /PORT must be a whole number/],
    [{ PORT: '70000' }, /PORT must be between 0 and 65535/],
    [{ JOB_TIMEOUT_MS: '0' }, /JOB_TIMEOUT_MS must be between/],
    [{ WORKER_CONCURRENCY: '-1' }, /WORKER_CONCURRENCY must be a whole number/],
    [{ REDIS_URL: 'localhost:6379' }, /REDIS_URL/],
    [{ REDIS_URL: 'http://localhost' }, /REDIS_URL must start with redis:\/\/ or rediss:\/\//],
    [{ DATABASE_URL: 'mysql://x' }, /DATABASE_URL must start with postgres/],
    [{ LOG_LEVEL: 'verbose' }, /LOG_LEVEL must be one of/],
    [{ S3_ENDPOINT: 'http://minio:9000' }, /S3_ENDPOINT is set but S3_BUCKET is not/],
    [{ S3_PREFIX: 'censo/' }, /S3_PREFIX is set but S3_BUCKET is not/],
    [{ S3_BUCKET: 'Censo_Uploads' }, /S3_BUCKET is not a valid bucket name/],
    [{ S3_BUCKET: 'ab' }, /S3_BUCKET is not a valid bucket name/],
    [{ S3_BUCKET: 'censo', S3_ENDPOINT: 'minio:9000' }, /S3_ENDPOINT/],
    [{ S3_BUCKET: 'censo', S3_ENDPOINT: 'ftp://minio' }, /S3_ENDPOINT must start with http:\/\/ or https:\/\//],
    [{ S3_BUCKET: 'censo', S3_PREFIX: '../outro' }, /S3_PREFIX must be path segments/],
    [{ S3_BUCKET: 'censo', S3_PREFIX: '/censo' }, /S3_PREFIX must be path segments/],
    [{ S3_BUCKET: 'censo', S3_PREFIX: 'a//b' }, /S3_PREFIX must be path segments/],
    [{ S3_BUCKET: 'censo', S3_REGION: 'SA East 1' }, /S3_REGION is not a valid region/],
  ])('rejects %o', (env, message) => {
    expect(() => loadConfig(env)).toThrow(ConfigError);
    expect(() => loadConfig(env)).toThrow(message);
  });

  it('storage: the folder unless S3_BUCKET is set; S3 settings with their defaults', () => {
    expect(loadConfig({}).storage).toEqual({ kind: 'folder' });
    expect(loadConfig({ S3_BUCKET: 'censo' }).storage).toEqual({
      kind: 's3',
      bucket: 'censo',
      endpoint: null,
      region: 'us-east-1',
      prefix: '',
    });
    expect(loadConfig({ S3_BUCKET: 'censo', AWS_REGION: 'sa-east-1' }).storage).toMatchObject({ region: 'sa-east-1' });
    expect(
      loadConfig({ S3_BUCKET: 'censo.uploads', S3_ENDPOINT: 'http://minio:9000', S3_REGION: 'garage', S3_PREFIX: 'sp/uploads' }).storage,
    ).toEqual({ kind: 's3', bucket: 'censo.uploads', endpoint: 'http://minio:9000', region: 'garage', prefix: 'sp/uploads/' });
  });

  describe('TRUST_PROXY (SPEC §9)', () => {
    it.each([
      [undefined, false],
      ['', false],
      ['false', false],
      ['off', false],
      ['OFF', false],
      ['true', true],
      ['True', true],
      ['127.0.0.1', ['127.0.0.1']],
      [' 10.0.0.0/8 , 192.168.1.10,', ['10.0.0.0/8', '192.168.1.10']],
      ['fd00::/8,::1', ['fd00::/8', '::1']],
      ['10.0.0.0/0,::/128', ['10.0.0.0/0', '::/128']],
    ])('%j → %j', (value, expected) => {
      expect(loadConfig(value === undefined ? {} : { TRUST_PROXY: value }).trustProxy).toEqual(expected);
    });

    it.each(['yes', '1', 'proxy.local', '10.0.0.0/33', 'fd00::/129', '10.0.0.0/8/1', '10.0.0/8', '10.0.0.0/x', '127.0.0.1, sim'])(
      '%j is a one-line ConfigError naming the setting and the entry',
      (value) => {
        let error: unknown;
        try {
          loadConfig({ TRUST_PROXY: value });
        } catch (err) {
          error = err;
        }
        expect(error).toBeInstanceOf(ConfigError);
        const message = (error as Error).message;
        expect(message).not.toContain('\n');
        expect(message).toMatch(/^TRUST_PROXY must be false, true or proxy addresses\/CIDRs separated by commas, got "/);
        expect(message).toContain(`"${value.split(',').at(-1)!.trim()}"`);
      },
    );
  });

  it('never echoes a URL (it may hold a password) in its error', () => {
    expect(() => loadConfig({ DATABASE_URL: 'postgres://u:s3cret@[bad' })).toThrow(
      expect.objectContaining({ message: expect.not.stringContaining('s3cret') }),
    );
  });
});
