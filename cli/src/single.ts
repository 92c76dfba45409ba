// One return (and its txt): the job the service runs for one upload, run here in this process,
// its result file copied to -o or streamed to stdout.
import { createReadStream } from 'node:fs';
import path from 'node:path';
import { createVocabulary, runJob, type JobData, type JobResult, type OutputFormat, type VocabularyAdditions } from '@censo/shared/local';
import { InputError, quote } from './failures.js';
import { retornoInput, txtInput } from './inputs.js';
import { scratchFolder } from './interrupt.js';
import { openOutput } from './output.js';

type Ok = Extract<JobResult, { ok: true }>;

/** The job's refusal, with where to look when the txt is not the return's (another school's, another send's). */
function refusal(result: Extract<JobResult, { ok: false }>, txt: string | undefined): InputError {
  if (result.code === 'TXT_MISMATCH' && txt !== undefined) {
    return new InputError(
      `${result.erro} Confira se ${quote(txt)} é o arquivo de migração da mesma escola, o mesmo enviado ao Censo que gerou este retorno.`,
    );
  }
  return new InputError(result.erro);
}

async function runToOutput(
  build: (resultPath: string) => Promise<JobData>,
  output: string | undefined,
  vocabulary: VocabularyAdditions,
  txt?: string,
): Promise<Ok> {
  const scratch = scratchFolder('censo-cli-');
  try {
    const resultPath = path.join(scratch.path, 'resultado');
    const result = await runJob(await build(resultPath), { vocabulary: createVocabulary(vocabulary) });
    if (!result.ok) throw refusal(result, txt);
    // -o is opened only now, after the job read its inputs: -o may name one of them. A stream,
    // not a copy: -o may be /dev/null, a FIFO or another special file.
    const out = await openOutput(output);
    await out.write(createReadStream(resultPath)).catch(async (err: unknown) => {
      throw await out.abandon(err);
    });
    return result;
  } finally {
    await scratch.remove();
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
    txt,
  );
}

export async function corrigir(options: { retorno: string; txt: string; output: string | undefined; vocabulary: VocabularyAdditions }) {
  const result = await runToOutput(
    async (resultPath) => ({
      kind: 'censo-corrigido',
      retorno: await retornoInput(options.retorno),
      txt: await txtInput(options.txt),
      resultPath,
    }),
    options.output,
    options.vocabulary,
    options.txt,
  );
  return result.corrigido ?? { pessoasCorrigidas: 0, naoAplicadas: 0, amostra: [] };
}
