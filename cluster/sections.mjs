// CLUSTER.md holds two reports: the fault suite's (report.mjs rewrites the whole file) and the
// scale profile's (escala.mjs), which lives between two markers. Each writer keeps the other's
// part: the fault suite carries the marked section over unchanged, the scale profile replaces
// only what lies between its markers.
export const ESCALA_START = '<!-- escala:inicio -->';
export const ESCALA_END = '<!-- escala:fim -->';

/** The marked section of `text`, markers included, or null when it has none (or only half). */
export function escalaSection(text) {
  const start = text.indexOf(ESCALA_START);
  const end = text.indexOf(ESCALA_END, start + ESCALA_START.length);
  if (start < 0 || end < 0) return null;
  return text.slice(start, end + ESCALA_END.length);
}

/**
 * `text` with its marked section's content replaced by `body` (markers kept, everything outside
 * them untouched); with no section yet, the section is appended at the end.
 */
export function withEscalaSection(text, body) {
  const section = `${ESCALA_START}\n${body.trim()}\n${ESCALA_END}`;
  const old = escalaSection(text);
  if (old !== null) return text.replace(old, () => section);
  return `${text.replace(/\n*$/, '')}${text.trim() ? '\n\n' : ''}${section}\n`;
}
