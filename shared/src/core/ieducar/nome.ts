// The Receita's name as i-Educar keeps names (issue 56). INEP's return writes names in capitals;
// i-Educar writes a name as typed, spaces collapsed and trimmed (clsPessoa_::cleanUpName,
// LegacyPerson's saving hook), and in capitals only where `legacy.app.uppercase_names` is on (off
// by default, config/legacy.php). The script cannot read that setting, so it follows the row: a
// name i-Educar holds in capitals gets the Receita's capitals, any other gets them in the case
// people type names (`nomeComoDigitado`). Both are written into the script; the choice is made in
// the database, per row (docs/ieducar.md).

/** Particles written in lower case inside a name, as people type them in Brazil. */
const PARTICULAS: ReadonlySet<string> = new Set(['da', 'das', 'de', 'del', 'della', 'der', 'di', 'do', 'dos', 'du', 'e', 'van', 'von']);

/**
 * What a name may hold: letters (with their combining marks), single spaces, an apostrophe and a
 * hyphen. Anything else (control characters, a backslash, `;`, `$`, digits, quotes other than an
 * apostrophe) says the Receita's value is not a name: it is listed, never written.
 */
const NOME = /^[\p{L}\p{M}]+(?:[ '-][\p{L}\p{M}]+|')*$/u;

/** The Receita's name as written in i-Educar (spaces collapsed, NFC), or `null` when it is no name. */
export function nomeReceita(value: string): string | null {
  const nome = value.normalize('NFC').replace(/ +/g, ' ').trim();
  return NOME.test(nome) ? nome : null;
}

const upperFirst = (text: string) => {
  const [first = '', ...rest] = [...text];
  return first.toLocaleUpperCase('pt-BR') + rest.join('');
};

/** One word, first letter up: also after an apostrophe that follows one letter (D'Ávila, O'Brien). */
function palavra(word: string, first: boolean): string {
  const lower = word.toLocaleLowerCase('pt-BR');
  if (!first && PARTICULAS.has(lower)) return lower;
  return lower
    .split('-')
    .map((part) => {
      const elided = /^(\p{L}\p{M}*)'(.+)$/u.exec(part);
      return elided ? `${upperFirst(elided[1]!)}'${upperFirst(elided[2]!)}` : upperFirst(part);
    })
    .join('-');
}

/** `MARIA D'ÁVILA DOS SANTOS` → `Maria D'Ávila dos Santos`: the case people type names in. */
export function nomeComoDigitado(nome: string): string {
  return nome
    .split(' ')
    .map((word, i) => palavra(word, i === 0))
    .join(' ');
}
