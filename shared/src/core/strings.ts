// Strings that outlive the text they were cut from.

/**
 * A copy of `text` that holds no reference to a larger string. V8 represents a substring of 13
 * or more characters as a view into its parent, so keeping one `correto` cut from a workbook's
 * shared-string block keeps the whole block alive. The merge keeps 100k divergences until its
 * answer is written: copying lets the parents go.
 */
export function detached(text: string): string {
  // The concatenation is flattened into a fresh string by slice(), which then views that string
  // (one character longer), not the original parent.
  return text.length < 13 ? text : (' ' + text).slice(1);
}
