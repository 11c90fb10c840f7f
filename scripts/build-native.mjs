#!/usr/bin/env node
// Run by `npm run build` after tsc: compiles libs/native/src/noded_native.cc into
// <dist>/libs/native/noded_native.node (a Node-API add-on: no Node version is baked in) and writes
// noded_native.json beside it with the @nxtedition/rocksdb version whose headers it was compiled
// against (libs/native checks it at load). Needs a C++ compiler ($CXX, else g++) and Node's headers
// (npm's `nodedir` setting, else <node prefix>/include/node). Skips the compile when the add-on is
// newer than its source and the headers' package has not changed.
//
// Without a compiler or the headers it prints why and exits 0: the node runs without the add-on
// (it only gives memory back sooner; libs/native says so at start), and the tests that need the
// add-on fail naming it.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const DIST = join(ROOT, process.argv[2] ?? 'dist');
const SOURCE = join(ROOT, 'libs/native/src/noded_native.cc');
const OUT_DIR = join(DIST, 'libs/native');
const OUT = join(OUT_DIR, 'noded_native.node');
const STAMP = join(OUT_DIR, 'noded_native.json');

const warn = (message) => {
  process.stderr.write(`build-native: ${message}; the node runs without libs/native's add-on\n`);
  process.exit(0);
};

if (process.platform !== 'linux') warn(`${process.platform} is not Linux (the add-on calls glibc)`);

const require = createRequire(join(ROOT, 'libs/native/package.json'));
let rocksDir;
try {
  rocksDir = dirname(require.resolve('@nxtedition/rocksdb/package.json'));
} catch {
  let dir = dirname(require.resolve('@nxtedition/rocksdb'));
  while (!existsSync(join(dir, 'package.json'))) dir = dirname(dir);
  rocksDir = dir;
}
const rocksVersion = JSON.parse(readFileSync(join(rocksDir, 'package.json'), 'utf8')).version;
const rocksInclude = join(rocksDir, 'deps/rocksdb/rocksdb/include');
if (!existsSync(join(rocksInclude, 'rocksdb/db.h'))) warn(`${rocksInclude} has no rocksdb/db.h`);

const nodeIncludes = [
  process.env.npm_config_nodedir && join(process.env.npm_config_nodedir, 'include/node'),
  join(dirname(dirname(process.execPath)), 'include/node'),
  '/usr/include/node',
  '/usr/local/include/node',
].filter(Boolean);
const nodeInclude = nodeIncludes.find((d) => existsSync(join(d, 'node_api.h')));
if (nodeInclude === undefined) warn(`no node_api.h in ${nodeIncludes.join(', ')}`);

const stamp = { rocksdb: rocksVersion, source: statSync(SOURCE).mtimeMs };
if (existsSync(OUT) && existsSync(STAMP)) {
  try {
    const old = JSON.parse(readFileSync(STAMP, 'utf8'));
    if (old.rocksdb === stamp.rocksdb && old.source === stamp.source) process.exit(0);
  } catch {
    // rebuild below
  }
}

const cxx = process.env.CXX || 'g++';
mkdirSync(OUT_DIR, { recursive: true });
const tmp = `${OUT}.${process.pid}.tmp`;
const args = [
  '-std=c++20',
  '-O2',
  '-fPIC',
  '-shared',
  '-fvisibility=hidden',
  '-Wall',
  `-I${nodeInclude}`,
  `-I${rocksInclude}`,
  SOURCE,
  '-o',
  tmp,
];
const run = spawnSync(cxx, args, { stdio: ['ignore', 'inherit', 'inherit'] });
if (run.error) warn(`cannot run ${cxx}: ${run.error.message}`);
if (run.status !== 0) {
  process.stderr.write(`build-native: ${cxx} ${args.join(' ')} failed (exit ${run.status})\n`);
  process.exit(1);
}
renameSync(tmp, OUT);
writeFileSync(STAMP, `${JSON.stringify(stamp)}\n`);
process.stdout.write(`build-native: ${OUT} (for @nxtedition/rocksdb ${rocksVersion})\n`);
