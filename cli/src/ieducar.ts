// `censo ieducar <retorno> [-o saida.sql]`: the i-Educar script (issue 46) for one return. The
// divergences come from the same job `censo divergencias` runs (each with its `correcao`), as
// JSON in a scratch folder; the script is written from them to -o or stdout.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import {
  createVocabulary,
  ieducarScript,
  runJob,
  type IeducarDivergencia,
  type IeducarScriptOptions,
  type VocabularyAdditions,
} from '@censo/shared/local';
import { BadUsage, InputError, quote } from './failures.js';
import { retornoInput } from './inputs.js';
import { scratchFolder } from './interrupt.js';
import { openOutput, outputPath } from './output.js';

/** Who the changes are on record as in i-Educar's audit when `--usuario` is not given. */
export const IEDUCAR_USUARIO_PADRAO = 'censo-api';

export interface IeducarCommand {
  readonly retorno: string;
  /** -o as given (`-` or absent: stdout). */
  readonly output: string | undefined;
  readonly vocabulary: VocabularyAdditions;
  /** `user_name` of i-Educar's audit context. */
  readonly usuario?: string;
}

/** -o of a script: `.sql` or no extension, so a list format's name never holds SQL. */
export function sqlOutput(output: string | undefined): string | undefined {
  const file = outputPath(output);
  const extension = file === undefined ? '' : path.extname(file).slice(1).toLowerCase();
  if (extension !== '' && extension !== 'sql') {
    const instead = file!.slice(0, file!.length - extension.length) + 'sql';
    throw new BadUsage(`-o ${quote(file!)}: o script do i-Educar é SQL; use -o ${quote(instead)}.`);
  }
  return file;
}

/** The divergences of one return, as `censo divergencias` lists them. */
async function divergenciasOf(retorno: string, vocabulary: VocabularyAdditions): Promise<IeducarDivergencia[]> {
  const scratch = scratchFolder('censo-ieducar-');
  try {
    const resultPath = path.join(scratch.path, 'divergencias.json');
    const result = await runJob(
      { kind: 'divergencias', retorno: await retornoInput(retorno), format: 'json', resultPath },
      { vocabulary: createVocabulary(vocabulary) },
    );
    if (!result.ok) throw new InputError(result.erro);
    // One school's return: a few hundred divergences, read whole.
    return (JSON.parse(await readFile(resultPath, 'utf8')) as { divergencias: IeducarDivergencia[] }).divergencias;
  } finally {
    await scratch.remove();
  }
}

export async function ieducar(command: IeducarCommand): Promise<void> {
  const output = sqlOutput(command.output);
  const arquivo = path.basename(command.retorno);
  const divergencias = (await divergenciasOf(command.retorno, command.vocabulary)).map((d) => ({ ...d, arquivo }));
  const options: IeducarScriptOptions = { userName: command.usuario ?? IEDUCAR_USUARIO_PADRAO, origin: `censo ieducar ${arquivo}` };
  // -o is opened only now, after the job read the return: -o may name it.
  const out = await openOutput(output);
  await out.write(Readable.from(ieducarScript(divergencias, options))).catch(async (err: unknown) => {
    throw await out.abandon(err);
  });
}
