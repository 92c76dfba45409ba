// The "next version" a rolling upgrade installs (SPEC §9), and the rollback leaves (§12): a copy of
// this build whose only change is the next job contract version (its jobs of the core need it, and
// so its group jobs, GROUP_JOB_CONTRACT_VERSION being the larger of the two), laid out as a release is (package.json files and dist/, the
// API's page and queries), in a folder of the run. Its node_modules holds links to this tree's
// packages, except the workspaces, which point at the copy: so the upgraded processes run the
// copy's code on the same dependencies, and their jobs carry version N+1.
import { access, cp, mkdir, readFile, readdir, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { ROOT } from './procs.mjs';

const CONTRACT = 'shared/dist/queue/contract.js';
const VERSION = /export const JOB_CONTRACT_VERSION = (\d+);/;
/** The version a job of the core carries: the next release changes that job, so its jobs need the new version. */
const CORE_VERSION = /export const CORE_JOB_CONTRACT_VERSION = (\d+);/;
/** What a start needs of each workspace (the CLI is not started by the suite). */
const PARTS = {
  shared: ['package.json', 'dist'],
  'services/worker': ['package.json', 'dist'],
  'services/api': ['package.json', 'dist', 'web', 'queries', 'data'],
};
const WORKSPACE_LINKS = { shared: 'shared', worker: 'services/worker', api: 'services/api' };

/** The contract version this tree's build carries. */
export async function currentContractVersion(root = ROOT) {
  const match = VERSION.exec(await readFile(path.join(root, CONTRACT), 'utf8'));
  if (!match) throw new Error(`${CONTRACT} does not declare JOB_CONTRACT_VERSION as the suite expects`);
  return Number(match[1]);
}

/** Builds the next version in `dir`; returns its root and both contract versions. */
export async function prepareNextRelease(dir) {
  await cp(path.join(ROOT, 'package.json'), path.join(dir, 'package.json'));
  for (const [workspace, parts] of Object.entries(PARTS)) {
    for (const part of parts) await cp(path.join(ROOT, workspace, part), path.join(dir, workspace, part), { recursive: true });
  }
  const from = await currentContractVersion();
  const contract = path.join(dir, CONTRACT);
  const next = (await readFile(contract, 'utf8'))
    .replace(VERSION, `export const JOB_CONTRACT_VERSION = ${from + 1};`)
    .replace(CORE_VERSION, `export const CORE_JOB_CONTRACT_VERSION = ${from + 1};`);
  await writeFile(contract, next);
  if ((await currentContractVersion(dir)) !== from + 1 || CORE_VERSION.exec(next)?.[1] !== String(from + 1)) {
    throw new Error('could not raise the contract version of the next release');
  }

  const modules = path.join(dir, 'node_modules');
  await mkdir(path.join(modules, '@censo'), { recursive: true });
  for (const entry of await readdir(path.join(ROOT, 'node_modules'))) {
    if (entry === '@censo' || entry === '.bin' || entry.startsWith('.')) continue;
    await symlink(path.join(ROOT, 'node_modules', entry), path.join(modules, entry));
  }
  for (const [name, workspace] of Object.entries(WORKSPACE_LINKS)) {
    await symlink(path.join(dir, workspace), path.join(modules, '@censo', name));
    // A workspace's own node_modules holds what npm could not hoist (a version pinned apart,
    // such as services/api's @fastify/static): without it the copy's processes cannot start.
    const own = path.join(ROOT, workspace, 'node_modules');
    if (await exists(own)) await symlink(own, path.join(dir, workspace, 'node_modules'));
  }
  return { root: dir, from, to: from + 1 };
}

const exists = (file) =>
  access(file).then(
    () => true,
    () => false,
  );
