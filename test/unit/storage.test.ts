// The storage adapters' guard on job data (it comes from Redis, so anyone who can write there
// must not point a worker at other files), and how the worker's processor turns the storage's
// failures into job outcomes, and that a stored file reads back whole.
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { buffer } from 'node:stream/consumers';
import { UnrecoverableError, type Job } from 'bullmq';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  BATCH_LINES_FILE,
  createFolderStorage,
  createStorage,
  InputsGoneError,
  InvalidJobDataError,
  loadConfig,
  outputsOf,
  StorageUnavailableError,
  UPLOAD_GONE,
  type JobData,
  type JobResult,
  type Storage,
} from '@censo/shared';
import { createProcessor } from '@censo/worker';

// checkJobData only reads the paths: the folder need not exist.
const root = path.join(os.tmpdir(), 'censo-storage-test');
let s3: Storage;
beforeAll(async () => {
  // Nothing is sent: checkJobData only reads the keys.
  s3 = await createStorage(
    loadConfig({ S3_BUCKET: 'censo', S3_ENDPOINT: 'http://127.0.0.1:9', S3_PREFIX: 'sp/' }),
    pino({ level: 'silent' }),
  );
});
afterAll(() => s3.close());

const ID = '0b6f4b8e-52c3-4f4e-a0a4-6f1d2b9a7c10';

function job(files: { retorno: unknown; txt?: unknown; result: unknown }, kind: JobData['kind'] = 'retorno-rf'): JobData {
  const data: Record<string, unknown> = { kind, retorno: { path: files.retorno, format: 'json' }, resultPath: files.result };
  if (files.txt !== undefined) data.txt = { path: files.txt };
  return data as unknown as JobData;
}

describe('S3 storage: job data must name objects of one request under S3_PREFIX', () => {
  const key = (name: string, id = ID) => `sp/${id}/${name}`;

  it('accepts the keys the API writes', () => {
    expect(() => s3.checkJobData(job({ retorno: key('retorno.json'), txt: key('censo.txt'), result: key('resultado') }))).not.toThrow();
    expect(() => s3.checkJobData(job({ retorno: key('retorno.xlsx'), result: key('resultado') }, 'divergencias'))).not.toThrow();
  });

  it.each([
    ['outside the prefix', { retorno: 'outro/x/retorno.json', txt: key('censo.txt'), result: key('resultado') }],
    ['a climb out of the request', { retorno: key('../retorno.json'), txt: key('censo.txt'), result: key('resultado') }],
    ['nested deeper', { retorno: `sp/${ID}/a/retorno.json`, txt: key('censo.txt'), result: key('resultado') }],
    ['two requests', { retorno: key('retorno.json'), txt: key('censo.txt', 'outro-pedido'), result: key('resultado') }],
    ['a missing txt', { retorno: key('retorno.json'), result: key('resultado') }],
    ['a number for a key', { retorno: 42, txt: key('censo.txt'), result: key('resultado') }],
  ])('refuses %s', (_why, files) => {
    expect(() => s3.checkJobData(job(files))).toThrow(InvalidJobDataError);
  });

  it("a batch's task's lines of the combined CSV: texts to lead them, written beside its result", () => {
    const divergencias = job({ retorno: key('retorno.json'), result: key('resultado') }, 'divergencias');
    const lines = (leading: unknown) => ({ ...divergencias, batchLines: leading }) as JobData;
    expect(() => s3.checkJobData(lines(['ref', 'retorno.json']))).not.toThrow();
    expect(outputsOf(lines(['ref']))).toEqual([key('resultado'), key(BATCH_LINES_FILE)]);
    expect(() => s3.checkJobData(lines('ref'))).toThrow(InvalidJobDataError);
    expect(() => s3.checkJobData(lines([1, 2]))).toThrow(InvalidJobDataError);
  });

  it('refuses an unknown kind', () => {
    expect(() => s3.checkJobData(job({ retorno: key('retorno.json'), result: key('resultado') }, 'apagar' as JobData['kind']))).toThrow(
      InvalidJobDataError,
    );
  });
});

describe('folder storage: job data must name files of one request folder under UPLOAD_DIR', () => {
  const file = (name: string) => path.join(root, ID, name);

  it('accepts the paths the API writes', () => {
    const folder = createFolderStorage(root);
    expect(() =>
      folder.checkJobData(job({ retorno: file('retorno.json'), txt: file('censo.txt'), result: file('resultado') })),
    ).not.toThrow();
  });

  it("a batch's task's lines of the combined CSV: texts to lead them, written beside its result", () => {
    const folder = createFolderStorage(root);
    const divergencias = job({ retorno: file('retorno.json'), result: file('resultado') }, 'divergencias');
    const lines = (leading: unknown) => ({ ...divergencias, batchLines: leading }) as JobData;
    expect(() => folder.checkJobData(lines(['ref', 'retorno.json']))).not.toThrow();
    expect(outputsOf(lines(['ref']))).toEqual([file('resultado'), file(BATCH_LINES_FILE)]);
    expect(() => folder.checkJobData(lines({ 0: 'ref' }))).toThrow(InvalidJobDataError);
  });

  it.each([
    ['outside UPLOAD_DIR', { retorno: '/etc/passwd', txt: file('censo.txt'), result: file('resultado') }],
    ['a result in UPLOAD_DIR itself', { retorno: file('retorno.json'), txt: file('censo.txt'), result: path.join(root, 'resultado') }],
    ['a climb out', { retorno: file('../../retorno.json'), txt: file('censo.txt'), result: file('resultado') }],
    ['a missing txt', { retorno: file('retorno.json'), result: file('resultado') }],
  ])('refuses %s', (_why, files) => {
    expect(() => createFolderStorage(root).checkJobData(job(files))).toThrow(InvalidJobDataError);
  });
});

describe('folder storage: reading a stored file', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'censo-storage-read-'));
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  async function stored(content: Buffer): Promise<Buffer> {
    const area = createFolderStorage(dir).area(randomUUID());
    await area.open();
    await area.write('resultado', Readable.from([content]), { bytes: 0 }, new AbortController().signal);
    return buffer(await area.read('resultado'));
  }

  it('gives back every byte, across many chunks', async () => {
    const content = Buffer.alloc(300 * 1024 + 7);
    for (let i = 0; i < content.length; i++) content[i] = (i * 31) & 0xff;
    expect((await stored(content)).equals(content)).toBe(true);
  });

  it('an empty file is an empty stream', async () => {
    expect(await stored(Buffer.alloc(0))).toHaveLength(0);
  });

  it('a file that is not there: StorageUnavailableError', async () => {
    await expect(createFolderStorage(dir).area(ID).read('nada')).rejects.toBeInstanceOf(StorageUnavailableError);
  });
});

describe("the worker's processor and the storage's failures", () => {
  const data = job({ retorno: 'r', result: 'x' }, 'divergencias');
  const fakeJob = { id: 'j1', data, attemptsStarted: 1 } as unknown as Job<JobData, JobResult>;
  const log = pino({ level: 'silent' });
  const ok: JobResult = { ok: true, count: 1, bytes: 2 };

  function storage(overrides: Partial<Storage>): Storage {
    return {
      kind: 's3',
      area: () => {
        throw new Error('not used');
      },
      checkJobData: () => undefined,
      inputsExist: async () => true,
      runWithLocalFiles: (d, work) => work(d),
      isReady: async () => true,
      close: () => undefined,
      ...overrides,
    };
  }
  const executor = { run: async () => ok };
  const processorWith = (overrides: Partial<Storage>) => createProcessor(executor, { storage: storage(overrides), log });
  const failing = (err: Error) => async () => {
    throw err;
  };

  it('invalid job data fails for good, without running', async () => {
    const process = processorWith({
      checkJobData: () => {
        throw new InvalidJobDataError('keys of more than one request');
      },
    });
    await expect(process(fakeJob)).rejects.toThrow(UnrecoverableError);
    await expect(process(fakeJob)).rejects.toThrow('invalid job data: keys of more than one request');
  });

  it('inputs already gone (the request ended): dropped quietly, for good', async () => {
    const before = processorWith({ inputsExist: async () => false });
    await expect(before(fakeJob)).rejects.toMatchObject({ name: 'UnrecoverableError', message: UPLOAD_GONE });
    const during = processorWith({ runWithLocalFiles: failing(new InputsGoneError()) });
    await expect(during(fakeJob)).rejects.toMatchObject({ name: 'UnrecoverableError', message: UPLOAD_GONE });
  });

  it('storage unreachable: a 503 result for the waiting request, not a retry', async () => {
    const process = processorWith({ runWithLocalFiles: failing(new StorageUnavailableError()) });
    await expect(process(fakeJob)).resolves.toEqual({
      ok: false,
      status: 503,
      code: 'STORAGE_UNAVAILABLE',
      erro: 'Armazenamento temporário indisponível.',
    });
  });

  it('an unknown answer to "are the inputs there?" runs the job, which reports for itself', async () => {
    const process = processorWith({ inputsExist: failing(new StorageUnavailableError()) });
    await expect(process(fakeJob)).resolves.toEqual(ok);
  });
});
