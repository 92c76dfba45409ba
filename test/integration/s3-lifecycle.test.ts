// Issue 34: "The S3 recipe expires objects after 1 day while [...] the rule must be at least
// RESULT_TTL_HOURS + 1 day: results of a batch can vanish while the API still lists them." At
// start the S3 storage reads the bucket's lifecycle configuration and warns, naming both figures,
// when a rule reaching its objects expires them before LOTE_MAX_HOURS + RESULT_TTL_HOURS; a bucket
// that does not let it read the configuration is a debug line, never a warning or a failed start.
// s3rver answers NotImplemented for lifecycle, so the rules come from a stub endpoint on loopback.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger, createStorage, loadConfig, type Storage } from '@censo/shared';
import { S3_CREDENTIALS, startTestS3, type TestS3 } from '../helpers/s3.js';
import { waitFor } from '../helpers/wait-for.js';
import { onThisMachine } from '../helpers/deadline.js';

const BUCKET = 'censo-lifecycle';
const WARNING = /^the bucket's lifecycle rule expires objects after \d+ days, sooner than the \d+ h \(LOTE_MAX_HOURS \+ RESULT_TTL_HOURS\)/;
const NOT_READABLE = 'bucket lifecycle not readable: retention not checked against it';
const WHOLE = 'bucket lifecycle leaves the retention whole';

/** What the stub answers to GET /<bucket>?lifecycle. */
let answer: { status: number; body: string } = { status: 404, body: '' };
let stub: http.Server;
let endpoint: string;
let uploadDir: string;
let s3: TestS3;

beforeAll(async () => {
  uploadDir = await mkdtemp(path.join(os.tmpdir(), 'censo-s3-lifecycle-'));
  stub = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://stub');
    if (req.method === 'GET' && url.pathname.replace(/\/$/, '') === `/${BUCKET}` && url.searchParams.has('lifecycle')) {
      res.writeHead(answer.status, { 'content-type': 'application/xml' }).end(answer.body);
    } else {
      res.writeHead(404, { 'content-type': 'application/xml' }).end(s3Error('NoSuchKey'));
    }
  });
  await new Promise<void>((resolve) => stub.listen(0, '127.0.0.1', resolve));
  endpoint = `http://127.0.0.1:${(stub.address() as AddressInfo).port}`;
  s3 = await startTestS3(BUCKET);
  // In-process services read their credentials where any AWS client does.
  Object.assign(process.env, S3_CREDENTIALS);
});
afterAll(async () => {
  stub?.closeAllConnections();
  await new Promise((resolve) => stub?.close(resolve));
  await s3?.dispose();
  await rm(uploadDir, { recursive: true, force: true });
});

function s3Error(code: string): string {
  return `<?xml version="1.0" encoding="UTF-8"?><Error><Code>${code}</Code><Message>${code}</Message></Error>`;
}

interface RuleXml {
  readonly id?: string;
  readonly filter?: string;
  readonly status?: 'Enabled' | 'Disabled';
  readonly expiration?: string;
  readonly extra?: string;
}

function lifecycle(...rules: RuleXml[]): { status: number; body: string } {
  const xml = rules
    .map(
      (r) =>
        `<Rule>${r.id ? `<ID>${r.id}</ID>` : ''}<Filter>${r.filter ?? ''}</Filter><Status>${r.status ?? 'Enabled'}</Status>` +
        `${r.expiration ? `<Expiration>${r.expiration}</Expiration>` : ''}${r.extra ?? ''}</Rule>`,
    )
    .join('');
  return {
    status: 200,
    body: `<?xml version="1.0" encoding="UTF-8"?><LifecycleConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/">${xml}</LifecycleConfiguration>`,
  };
}

/** Starts the S3 storage as a process does and returns the lines it logs once the check has ended. */
async function startAndCheck(env: Record<string, string> = {}, at = endpoint): Promise<Array<Record<string, unknown>>> {
  const lines: Array<Record<string, unknown>> = [];
  const config = loadConfig({
    S3_BUCKET: BUCKET,
    S3_ENDPOINT: at,
    S3_PREFIX: 'censo/',
    UPLOAD_DIR: uploadDir,
    LOG_LEVEL: 'debug',
    LOTE_MAX_HOURS: '72',
    RESULT_TTL_HOURS: '24',
    ...env,
  });
  const logger = createLogger(
    config,
    { service: 'test' },
    { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) },
  );
  let storage: Storage | undefined;
  try {
    storage = await createStorage(config, logger);
    // Every outcome ends with exactly one of these: a warning per short rule comes before WHOLE
    // is skipped, so the check has ended once a warning, NOT_READABLE or WHOLE is there.
    await waitFor(() => lines.some((l) => l.msg === NOT_READABLE || l.msg === WHOLE || WARNING.test(String(l.msg))), {
      timeoutMs: onThisMachine(15_000),
      what: 'the lifecycle check',
    });
    return lines.filter((l) => l.msg === NOT_READABLE || l.msg === WHOLE || WARNING.test(String(l.msg)));
  } finally {
    storage?.close();
  }
}

const warnings = (lines: Array<Record<string, unknown>>) => lines.filter((l) => l.level === 40);

describe('the bucket lifecycle check at start (S3 storage)', () => {
  it('warns when a rule over the prefix expires objects before LOTE_MAX_HOURS + RESULT_TTL_HOURS, naming both figures', async () => {
    answer = lifecycle({ id: 'limpeza', filter: '<Prefix>censo/</Prefix>', expiration: '<Days>1</Days>' });
    const lines = await startAndCheck();
    expect(lines).toEqual([
      expect.objectContaining({
        level: 40,
        bucket: BUCKET,
        prefix: 'censo/',
        rule: 'limpeza',
        expirationDays: 1,
        retentionHours: 96,
        msg:
          "the bucket's lifecycle rule expires objects after 1 days, sooner than the 96 h (LOTE_MAX_HOURS + RESULT_TTL_HOURS) " +
          'the service keeps them: results may vanish while still listed',
      }),
    ]);
  });

  it.each([
    ['the whole bucket (no prefix)', { filter: '', expiration: '<Days>3</Days>' }, 3],
    ['a longer prefix inside the service’s (some of its objects)', { filter: '<Prefix>censo/0</Prefix>', expiration: '<Days>2</Days>' }, 2],
    [
      'a prefix and a size, under And',
      { filter: '<And><Prefix>censo/</Prefix><ObjectSizeGreaterThan>1</ObjectSizeGreaterThan></And>', expiration: '<Days>1</Days>' },
      1,
    ],
    ['a date already past', { filter: '<Prefix>censo/</Prefix>', expiration: '<Date>2020-01-01T00:00:00.000Z</Date>' }, 0],
  ])('warns for a rule over %s', async (_what, rule, days) => {
    answer = lifecycle(rule);
    expect(warnings(await startAndCheck())).toEqual([expect.objectContaining({ expirationDays: days, retentionHours: 96 })]);
  });

  it.each([
    ['longer than the retention', { filter: '<Prefix>censo/</Prefix>', expiration: '<Days>5</Days>' }],
    ['exactly the retention (4 days = 96 h)', { filter: '<Prefix>censo/</Prefix>', expiration: '<Days>4</Days>' }],
    ['another prefix', { filter: '<Prefix>outro/</Prefix>', expiration: '<Days>1</Days>' }],
    ['a tag the service never sets', { filter: '<Tag><Key>k</Key><Value>v</Value></Tag>', expiration: '<Days>1</Days>' }],
    ['a disabled rule', { filter: '<Prefix>censo/</Prefix>', status: 'Disabled' as const, expiration: '<Days>1</Days>' }],
    [
      'only unfinished multipart uploads',
      {
        filter: '<Prefix>censo/</Prefix>',
        extra: '<AbortIncompleteMultipartUpload><DaysAfterInitiation>1</DaysAfterInitiation></AbortIncompleteMultipartUpload>',
      },
    ],
  ])('says nothing for a rule %s', async (_what, rule) => {
    answer = lifecycle(rule);
    expect(await startAndCheck()).toEqual([expect.objectContaining({ level: 20, msg: WHOLE, rules: 1, retentionHours: 96 })]);
  });

  it('measures against the configured retention (1 day covers LOTE_MAX_HOURS=6 + RESULT_TTL_HOURS=12)', async () => {
    answer = lifecycle({ filter: '<Prefix>censo/</Prefix>', expiration: '<Days>1</Days>' });
    expect(await startAndCheck({ LOTE_MAX_HOURS: '6', RESULT_TTL_HOURS: '12' })).toEqual([
      expect.objectContaining({ level: 20, msg: WHOLE, retentionHours: 18 }),
    ]);
  });

  it.each([
    ['AccessDenied', 403],
    ['NoSuchLifecycleConfiguration', 404],
  ])('is a debug line when the bucket answers %s', async (code, status) => {
    answer = { status, body: s3Error(code) };
    expect(await startAndCheck()).toEqual([expect.objectContaining({ level: 20, msg: NOT_READABLE, code })]);
  });

  it('is a debug line on a server without lifecycle support (s3rver: NotImplemented)', async () => {
    expect(await startAndCheck({}, s3.endpoint)).toEqual([
      expect.objectContaining({ level: 20, msg: NOT_READABLE, code: 'NotImplemented' }),
    ]);
  });
});
