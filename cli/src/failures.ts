// How the CLI fails: a bad input (exit 1, the same Portuguese `erro` the API answers) or a wrong
// usage (exit 2). Messages go to stderr, prefixed with the command's name.

/** The input cannot be used: a file missing or unreadable, a return the service would refuse. */
export class InputError extends Error {}

/** The command line itself is wrong (beyond what commander checks). */
export class BadUsage extends Error {}

export function fail(message: string, code: 1 | 2): number {
  process.stderr.write(`censo: ${message}\n`);
  return code;
}
