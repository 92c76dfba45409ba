// Types of import-cycles.mjs, for test/unit/architecture.test.ts.

/** The import circles among `dir`'s TypeScript modules, each as its modules relative to `dir`. */
export function findCycles(dir: string): string[][];
