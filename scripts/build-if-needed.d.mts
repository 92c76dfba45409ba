// Types of build-if-needed.mjs, for the tests of the start commands' pre-script
// (test/unit/build-if-needed.test.ts, test/integration/lean-install.test.ts).

export type WorkspaceState = 'missing' | 'stale' | 'fresh';

/** Whether `root/workspace` has compiled code, and whether it is older than its sources. */
export function workspaceState(root: string, workspace: string): WorkspaceState;

/** What the pre-script does for these states: start as they are, build, warn (stale, no compiler) or fail. */
export function decide(states: Record<string, WorkspaceState>, hasCompiler: boolean): 'start' | 'build' | 'warn' | 'fail';

/** The TypeScript compiler's entry point under `root`, or null when it is not installed. */
export function findCompiler(root: string): string | null;

/** The line said on stderr as the build starts (issue 50): the first time, or a rebuild after a change. */
export function buildNotice(states: Record<string, WorkspaceState>): string;
