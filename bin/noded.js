#!/usr/bin/env node
// Entry point of the `noded` binary: the compiled CLI lives in dist/ (built by `npm run build`).
// `noded start` and `noded service` run once more as a child with glibc's malloc variables set when
// they are missing (services/noded/src/cli/malloc-env.ts says why; NODED_MALLOC_ENV=off opts out).
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const dist = (path) => fileURLToPath(new URL(`../dist/services/noded/src/cli/${path}`, import.meta.url));
const cli = dist('main.js');
if (!existsSync(cli)) {
  process.stderr.write('noded: not built yet; run `npm run build` in the project root first\n');
  process.exit(1);
}
const { mallocReexecEnv, runAsChild, runsOnGlibc, watchParent } = await import(dist('malloc-env.js'));
let childEnv;
try {
  childEnv = mallocReexecEnv(process.argv.slice(2), process.env, runsOnGlibc());
} catch (err) {
  process.stderr.write(`noded: ${err.message}\n`);
  process.exit(1);
}
if (childEnv === undefined) {
  watchParent();
  await import(cli);
} else runAsChild(fileURLToPath(import.meta.url), process.argv.slice(2), childEnv);
