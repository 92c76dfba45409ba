// Runs before every test file, in its own context even when several files share a process
// (vitest.config.ts): the helpers' end-of-file cleanups (test/helpers/file-end.ts).
import { afterAll } from 'vitest';
import { endFile } from './helpers/file-end.js';

afterAll(endFile);
