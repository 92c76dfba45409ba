// The census txt sent with a return, as the i-Educar script needs it (issue 59): which persons it
// holds under which code (field 3, i-Educar's idpes) and with which values, and the school of each
// (field 2 of the record 00 before it). A script made with it changes only those persons, and only
// where the return's "sent" value is the one the txt holds: a return naming an idpes the school
// never sent, or a value it never sent, reaches nobody.
import { censoField, CENSO_FIELD, parseRecord30, visitCensoLines } from '../censo/txt.js';

/** What one record 30 sent, for the fields the script writes. */
export interface PessoaEnviada {
  readonly linha: number;
  readonly codigo: string;
  /** The INEP code of the school (record 00, field 2) the record belongs to; '' before any record 00. */
  readonly escola: string;
  readonly inep: string;
  readonly cpf: string;
  readonly nome: string;
  readonly data_nascimento: string;
}

export interface TxtEnviado {
  /** The schools' INEP codes, in the file's order (record 00, field 2). */
  readonly escolas: readonly string[];
  /** Record 30s by line number. */
  readonly porLinha: ReadonlyMap<number, PessoaEnviada>;
  /** The first record 30 of each code (SPEC §3.2: the match without `linha`). */
  readonly porCodigo: ReadonlyMap<string, PessoaEnviada>;
}

/** Reads the txt once, keeping only record 30's fields 3–7 and the schools (one school's file: small). */
export async function readTxtEnviado(path: string): Promise<TxtEnviado> {
  let escolas: string[] = [];
  let porLinha = new Map<number, PessoaEnviada>();
  let porCodigo = new Map<string, PessoaEnviada>();
  let escola = '';
  await visitCensoLines(path, {
    line(linha, text) {
      if (text.startsWith('00|')) {
        escola = (text.split('|', 3)[1] ?? '').trim();
        if (escola !== '' && !escolas.includes(escola)) escolas.push(escola);
        return;
      }
      const fields = parseRecord30(text);
      if (fields === null) return;
      const pessoa: PessoaEnviada = {
        linha,
        codigo: censoField(fields, CENSO_FIELD.codigo).trim(),
        escola,
        inep: censoField(fields, CENSO_FIELD.inep),
        cpf: censoField(fields, CENSO_FIELD.cpf),
        nome: censoField(fields, CENSO_FIELD.nome),
        data_nascimento: censoField(fields, CENSO_FIELD.dataNascimento),
      };
      porLinha.set(linha, pessoa);
      if (!porCodigo.has(pessoa.codigo)) porCodigo.set(pessoa.codigo, pessoa);
    },
    restart() {
      escolas = [];
      porLinha = new Map();
      porCodigo = new Map();
      escola = '';
    },
  });
  return { escolas, porLinha, porCodigo };
}
