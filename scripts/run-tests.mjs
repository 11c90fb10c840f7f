// Runs every compiled test file under dist/test with node's test runner.
// Usage: [NODED_DIST=dir] node scripts/run-tests.mjs [substring filter ...]
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

function walk(dir) {
  const out = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...walk(p));
    else if (name.endsWith('.test.js')) out.push(p);
  }
  return out;
}

const filters = process.argv.slice(2);
const dist = process.env.NODED_DIST ?? 'dist';
const files = walk(`${dist}/test`)
  .filter((f) => filters.length === 0 || filters.some((s) => f.includes(s)))
  .sort();
if (files.length === 0) {
  console.error('no test files matched');
  process.exit(1);
}
const res = spawnSync(
  process.execPath,
  ['--test', '--test-concurrency=2', '--test-timeout=600000', '--enable-source-maps', ...files],
  { stdio: 'inherit' },
);
process.exit(res.status ?? 1);
