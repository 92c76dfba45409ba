// Loaded with `node --import` (NODE_OPTIONS): writes the URL of every module the process imports
// to LOADED_MODULES_FILE, one a line, so a test can tell what a process never loaded.
import { register } from 'node:module';
import process from 'node:process';

const file = process.env.LOADED_MODULES_FILE;
if (file) {
  const hooks = `
import { appendFileSync } from 'node:fs';
export async function resolve(specifier, context, next) {
  const result = await next(specifier, context);
  appendFileSync(${JSON.stringify(file)}, result.url + '\\n');
  return result;
}`;
  register(`data:text/javascript,${encodeURIComponent(hooks)}`);
}
