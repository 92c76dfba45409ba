// The JSON return's unreadable-file reasons (SPEC §5), shared by the scanner and the rows collector.
import { badInput } from '../../errors.js';

export const INVALID_JSON = 'não é um JSON válido.';
export const NO_ROWS_ARRAY = 'o JSON não contém uma lista de linhas.';
export const ROWS_NOT_OBJECTS = 'as linhas do JSON devem ser objetos.';
export const STRING_TOO_LONG = 'tem um texto com mais de 32.767 caracteres.';

export function invalid(): Error {
  return badInput.unreadableRetorno(INVALID_JSON);
}

export function tooLong(): Error {
  return badInput.unreadableRetorno(STRING_TOO_LONG);
}
