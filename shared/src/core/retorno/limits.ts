// Limits every return reader applies, whatever the format.

/**
 * Excel's own cell limit (SPEC §5): a longer cell or JSON string makes the return unreadable, so
 * a small file cannot inflate to gigabytes of text in memory. Counted in UTF-16 units, as
 * JavaScript's `length` and Excel count.
 */
export const MAX_CELL_CHARS = 32_767;
