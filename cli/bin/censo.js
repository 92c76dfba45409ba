#!/usr/bin/env node
// The `censo` bin: committed (not built), so `npm ci` can link it before `npm run build` exists;
// the command itself is the compiled cli/dist/main.js.
import '../dist/main.js';
