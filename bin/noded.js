#!/usr/bin/env node
// Entry point of the `noded` binary: the compiled CLI lives in dist/ (built by `npm run build`).
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const cli = fileURLToPath(new URL('../dist/services/noded/src/cli/main.js', import.meta.url));
if (!existsSync(cli)) {
  process.stderr.write('noded: not built yet; run `npm run build` in the project root first\n');
  process.exit(1);
}
await import(cli);
