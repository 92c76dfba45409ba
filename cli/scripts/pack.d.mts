// Types of pack.mjs, for the tests that stage or pack the CLI (test/cli/censo-process.ts, install.test.ts).

/** The package, unpacked, in `folder/package`; returns that path. */
export function stageCli(folder: string): Promise<string>;

/** Builds the .tgz into `destination`; returns its path. */
export function packCli(destination: string): Promise<string>;
