// Reading the deployment recipes (deploy/, the compose files, .env.example) in tests, and running
// the operators' own tools on them (kubectl, promtool, systemd-analyze, logrotate). A tool that is
// missing makes the test fail with what to install (.ci/run installs them), never skip.
import { execFile } from 'node:child_process';
import { accessSync, constants, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse, parseAllDocuments } from 'yaml';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));

export const read = (file: string): string => readFileSync(path.join(ROOT, file), 'utf8');

/** Every environment variable loadConfig reads, from its own source. */
export function settingsRead(): string[] {
  const source = read('shared/src/runtime/config.ts');
  const names = [...source.matchAll(/env(?:\.|, ')([A-Z][A-Z0-9_]+)/g)].map((m) => m[1]!);
  return [...new Set(names)].sort();
}

/**
 * Variables a recipe may set that loadConfig does not read, and who reads them. Kept small on
 * purpose: anything else a recipe sets is a typo or a setting that does not exist.
 */
export const READ_BY_THE_RUNTIME = new Map([
  ['AWS_ACCESS_KEY_ID', 'the AWS SDK (the bucket credentials, SPEC §6)'],
  ['AWS_SECRET_ACCESS_KEY', 'the AWS SDK'],
  ['NODE_EXTRA_CA_CERTS', 'Node.js at start: the internal CA for rediss://, PostgreSQL TLS, S3 and OIDC'],
  ['NODE_OPTIONS', 'Node.js at start'],
]);

export const isKnownVariable = (name: string): boolean => settingsRead().includes(name) || READ_BY_THE_RUNTIME.has(name);

/** The version the recipes must pin (package.json). */
export const VERSION = (JSON.parse(read('package.json')) as { version: string }).version;

export interface ComposeService {
  image?: string;
  environment?: Record<string, string>;
  env_file?: string | string[];
  command?: string[] | string;
  entrypoint?: string[] | string;
  ports?: string[];
  volumes?: string[];
  user?: string;
  profiles?: string[];
  depends_on?: Record<string, { condition?: string; required?: boolean }>;
  healthcheck?: { test?: string[] | string };
  deploy?: { replicas?: number };
  read_only?: boolean;
  cap_drop?: string[];
  network_mode?: string;
}
export interface ComposeFile {
  name?: string;
  services: Record<string, ComposeService>;
}

export function compose(file: string): ComposeFile {
  // `!reset` (Compose 2.24+) clears a list of the file it overrides.
  return parse(read(file), { merge: true, customTags: [{ tag: '!reset', collection: 'seq', resolve: () => [] }] }) as ComposeFile;
}

/** `${NAME:-default}` → default, `${NAME:?message}` → undefined (required), plain text as is. */
export function interpolationDefault(value: string): string | undefined {
  const match = /^\$\{[A-Z_][A-Z0-9_]*(?::?([-?]))(.*)\}$/.exec(value);
  if (!match) return value;
  return match[1] === '-' ? match[2] : undefined;
}

/** Services that run this project's image (the API and the worker), by name. */
export function censoServices(file: ComposeFile): Array<[string, ComposeService]> {
  return Object.entries(file.services).filter(([, service]) => /censo-api:/.test(interpolationDefault(service.image ?? '') ?? ''));
}

/** An env file as systemd's EnvironmentFile and Compose's env_file read it: NAME=value lines. */
export interface EnvEntry {
  readonly name: string;
  readonly value: string;
  /** The comment lines right above it (its block), without the `#`. */
  readonly comment: string[];
}

export function parseEnvFile(text: string): EnvEntry[] {
  const entries: EnvEntry[] = [];
  let comment: string[] = [];
  for (const line of text.split('\n')) {
    if (line.trim() === '') {
      comment = [];
      continue;
    }
    if (line.startsWith('#')) {
      comment.push(line.replace(/^#\s?/, ''));
      continue;
    }
    const match = /^([A-Za-z_][A-Za-z0-9_]*)=(.*)$/.exec(line);
    if (!match) throw new Error(`not a NAME=value line: ${line}`);
    entries.push({ name: match[1]!, value: match[2]!, comment });
  }
  return entries;
}

/** Every YAML document of a file (Kubernetes manifests hold several). */
export function yamlDocuments(file: string): unknown[] {
  return parseAllDocuments(read(file)).map((doc) => {
    if (doc.errors.length > 0) throw new Error(`${file}: ${doc.errors[0]!.message}`);
    return doc.toJS() as unknown;
  });
}

/** A `key=value` directive file (systemd unit), as [section, key, value] triples. */
export function unitDirectives(text: string): Array<{ section: string; key: string; value: string }> {
  const out: Array<{ section: string; key: string; value: string }> = [];
  let section = '';
  for (const line of text.split('\n')) {
    const trimmed = line.trim();
    if (trimmed === '' || trimmed.startsWith('#') || trimmed.startsWith(';')) continue;
    const header = /^\[(.+)\]$/.exec(trimmed);
    if (header) {
      section = header[1]!;
      continue;
    }
    const match = /^([A-Za-z]+)=(.*)$/.exec(trimmed);
    if (!match) throw new Error(`not a directive: ${line}`);
    out.push({ section, key: match[1]!, value: match[2]! });
  }
  return out;
}

const TOOL_SOURCES: Record<string, string> = {
  kubectl: 'Debian package kubernetes-client (or any kubectl >= 1.20, whose `kubectl kustomize` builds the overlay)',
  promtool: 'Debian package prometheus',
  logrotate: 'Debian package logrotate',
  'redis-server': 'Debian package redis-server',
  openssl: 'Debian package openssl',
  'systemd-analyze': 'Debian package systemd',
};

/** The tool's path on PATH; throws (the test fails) with what to install when it is missing. */
export function requireTool(name: string): string {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    const candidate = path.join(dir, name);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not in this folder
    }
  }
  throw new Error(`${name} is not on PATH: install it (${TOOL_SOURCES[name] ?? name}); .ci/run does`);
}

export function hasTool(name: string): boolean {
  try {
    requireTool(name);
    return true;
  } catch {
    return false;
  }
}

export interface ToolRun {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs a tool to its end (at most `timeoutMs`), whatever its exit code. */
export function runTool(file: string, args: readonly string[], options: { cwd?: string; timeoutMs?: number } = {}): Promise<ToolRun> {
  return new Promise((resolve, reject) => {
    execFile(
      file,
      args,
      { cwd: options.cwd ?? ROOT, timeout: options.timeoutMs ?? 60_000, maxBuffer: 16 * 1024 * 1024 },
      (err, stdout, stderr) => {
        if (err && typeof err.code !== 'number') return reject(err);
        resolve({ code: typeof err?.code === 'number' ? err.code : 0, stdout, stderr });
      },
    );
  });
}
