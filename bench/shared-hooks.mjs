// Module hooks for a bench process that must run the service on an earlier build of the core:
// `@censo/shared` and `@censo/shared/local` resolve to BENCH_SHARED_DIST (a `shared/dist` built by
// before.mjs) instead of the workspace's own. Loaded with `--import ./bench/shared-hooks.mjs`,
// which the process passes on to its worker threads (the job pool), so they load the same build.
import { register } from 'node:module';
import { pathToFileURL } from 'node:url';

const dist = process.env.BENCH_SHARED_DIST;
if (dist) {
  const base = pathToFileURL(`${dist}/`).href;
  const source = `
    const targets = { '@censo/shared': ${JSON.stringify(`${base}index.js`)}, '@censo/shared/local': ${JSON.stringify(`${base}local.js`)} };
    export async function resolve(specifier, context, next) {
      return specifier in targets ? next(targets[specifier], context) : next(specifier, context);
    }`;
  register(`data:text/javascript,${encodeURIComponent(source)}`);
}
