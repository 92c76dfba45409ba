// One return (and its txt): the job the service runs for one upload, run here in this process,
// its result file copied to -o or streamed to stdout.
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { createVocabulary, runJob, type JobData, type JobResult, type OutputFormat, type VocabularyAdditions } from '@censo/shared/local';
import { InputError } from './failures.js';
import { retornoInput, txtInput } from './inputs.js';
import { writeFailure } from './output.js';

type Ok = Extract<JobResult, { ok: true }>;

async function runToOutput(
  build: (resultPath: string) => Promise<JobData>,
  output: string | undefined,
  vocabulary: VocabularyAdditions,
): Promise<Ok> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'censo-cli-'));
  try {
    const resultPath = path.join(dir, 'resultado');
    const result = await runJob(await build(resultPath), { vocabulary: createVocabulary(vocabulary) });
    if (!result.ok) throw new InputError(result.erro);
    // A stream, not a copy: -o may be /dev/null, a FIFO or another special file. It is opened
    // only now, after the job read its inputs: -o may name one of them.
    if (output !== undefined) {
      const target = createWriteStream(output);
      let failed: unknown;
      target.once('error', (err) => (failed = err));
      await pipeline(createReadStream(resultPath), target).catch((err: unknown) => {
        throw failed === undefined ? err : writeFailure(output, failed);
      });
    } else await pipeline(createReadStream(resultPath), process.stdout, { end: false });
    return result;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

export interface ListOne {
  readonly kind: 'divergencias' | 'retorno-rf';
  readonly retorno: string;
  readonly txt?: string;
  readonly format: OutputFormat;
  readonly output: string | undefined;
  readonly vocabulary: VocabularyAdditions;
}

export async function listOne({ kind, retorno, txt, format, output, vocabulary }: ListOne): Promise<void> {
  await runToOutput(
    async (resultPath) =>
      kind === 'divergencias'
        ? { kind, retorno: await retornoInput(retorno), format, resultPath }
        : { kind, retorno: await retornoInput(retorno), txt: await txtInput(txt!), format, resultPath },
    output,
    vocabulary,
  );
}

export async function corrigir(options: { retorno: string; txt: string; output: string; vocabulary: VocabularyAdditions }) {
  const result = await runToOutput(
    async (resultPath) => ({
      kind: 'censo-corrigido',
      retorno: await retornoInput(options.retorno),
      txt: await txtInput(options.txt),
      resultPath,
    }),
    options.output,
    options.vocabulary,
  );
  return result.corrigido ?? { pessoasCorrigidas: 0, naoAplicadas: 0 };
}
