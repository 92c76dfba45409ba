// `censo ieducar <retorno> <txt> [-o pasta]`: the two i-Educar files (issues 46, 56, 59) for one
// return, the preview and the correction, named for the school and the return. The divergences
// come from the same job `censo divergencias` runs (each with its `correcao`), as JSON in a scratch
// folder; the txt sent with the return bounds the script to its persons and their sent values.
import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import {
  createVocabulary,
  IEDUCAR_PARTES,
  ieducarFileName,
  ieducarScript,
  readTxtEnviado,
  runJob,
  type IeducarDivergencia,
  type IeducarScriptOptions,
  type VocabularyAdditions,
} from '@censo/shared/local';
import { InputError, quote } from './failures.js';
import { retornoInput, txtInput } from './inputs.js';
import { scratchFolder } from './interrupt.js';
import { openOutput } from './output.js';

/** Who the changes are on record as in i-Educar's audit when `--usuario` is not given. */
export const IEDUCAR_USUARIO_PADRAO = 'censo-api';

export interface IeducarCommand {
  readonly retorno: string;
  /** The census txt sent with the return. */
  readonly txt: string;
  /** -o: the folder the two files go to (absent: the current folder). */
  readonly pasta: string | undefined;
  readonly vocabulary: VocabularyAdditions;
  /** `user_name` of i-Educar's audit context. */
  readonly usuario?: string;
}

/** -o of the scripts: a folder that exists. */
async function pastaOf(pasta: string | undefined): Promise<string> {
  const folder = pasta === undefined || pasta === '' ? '.' : pasta;
  const info = await stat(folder).catch(() => null);
  if (info === null || !info.isDirectory()) {
    throw new InputError(`-o ${quote(folder)}: não é uma pasta; o censo ieducar grava nela os dois arquivos (prévia e correção).`);
  }
  return folder;
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

/** Writes the preview and the correction into -o; answers their paths. */
export async function ieducar(command: IeducarCommand): Promise<string[]> {
  const folder = await pastaOf(command.pasta);
  const txt = await readTxtEnviado((await txtInput(command.txt)).path);
  const arquivo = path.basename(command.retorno);
  const divergencias = (await divergenciasOf(command.retorno, command.vocabulary)).map((d) => ({ ...d, arquivo }));
  const options: IeducarScriptOptions = {
    userName: command.usuario ?? IEDUCAR_USUARIO_PADRAO,
    origin: 'censo ieducar',
    escolas: txt.escolas,
    retorno: arquivo,
    txt,
  };
  const written: string[] = [];
  for (const parte of IEDUCAR_PARTES) {
    const file = path.join(folder, ieducarFileName(parte, options));
    const out = await openOutput(file);
    await out.write(Readable.from(ieducarScript(parte, () => divergencias, options))).catch(async (err: unknown) => {
      throw await out.abandon(err);
    });
    written.push(file);
  }
  return written;
}
