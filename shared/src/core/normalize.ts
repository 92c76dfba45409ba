// Text normalisation used to compare column names, field labels and messages (SPEC §1.2, §2):
// lower case, accents removed, runs of white space collapsed to one space, trimmed.

const COMBINING_MARKS = /[\u0300-\u036f]/g;
const WHITE_SPACE = /\s+/g;

export function normalize(text: string): string {
  return text.normalize('NFD').replace(COMBINING_MARKS, '').toLowerCase().replace(WHITE_SPACE, ' ').trim();
}
