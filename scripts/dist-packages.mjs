#!/usr/bin/env node
// Run by `npm run build` after tsc (npm workspaces, scripts/workspaces-migrate.mjs): makes the
// compiled tree in dist/ resolve `@noded/<pkg>` to itself. For each workspace of the root
// package.json it copies the package's package.json beside its compiled files (dist/libs/x/, where
// "./index.js" is the compiled index) and links dist/node_modules/@noded/x -> ../../libs/x, so that
// Node, looking up from any file in dist/, finds the compiled package before the source one in
// ./node_modules (npm's link to libs/x, which holds .ts only). Relative links: a copy of dist/
// (cp -r dist .tmp/dist-name, the Docker image's /opt/noded/dist) resolves to its own files.
// Idempotent; a workspace that is gone loses its link.
//
// First it drops what tsc left from an earlier build: tsc writes the files of today's sources and
// never deletes, so a source moved or deleted would leave its compiled .js/.d.ts/.map behind (a test
// file that still runs, a module that still resolves, a package copied into an image with files that
// belong to nobody). Every .js, .d.ts and .map under dist/ (outside dist/node_modules, which is
// rebuilt below and whose links are not followed) whose .ts source is gone is removed, then every
// directory left empty, and the package.json of a workspace that is gone.
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmdirSync,
  rmSync,
  statSync,
  symlinkSync,
} from 'node:fs';
import { dirname, join, posix, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const DIST = join(ROOT, process.argv[2] ?? 'dist');
const root = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
const globs = root.workspaces ?? [];

/** Workspace directories, relative to the root: "libs/*" is every libs/<x> with a package.json. */
function workspaceDirs() {
  const out = [];
  for (const glob of globs) {
    if (!glob.endsWith('/*')) {
      out.push(glob);
      continue;
    }
    const parent = glob.slice(0, -2);
    if (!existsSync(join(ROOT, parent))) continue;
    for (const d of readdirSync(join(ROOT, parent)).sort()) {
      if (existsSync(join(ROOT, parent, d, 'package.json'))) out.push(posix.join(parent, d));
    }
  }
  return out;
}

if (!existsSync(DIST)) {
  process.stderr.write(`dist-packages: ${DIST} does not exist; run tsc first\n`);
  process.exit(1);
}
/** The source a compiled file came from: x.js, x.d.ts, x.js.map, x.d.ts.map -> x.ts; else undefined. */
function sourceOf(rel) {
  const m = /^(.*?)(\.d\.ts\.map|\.js\.map|\.d\.ts|\.js)$/.exec(rel);
  return m ? `${m[1]}.ts` : undefined;
}

/**
 * Removes under `dir` (relative to DIST) the compiled files whose source is gone, and directories
 * left empty; returns how many files went. Links are neither followed nor removed.
 */
function prune(dir) {
  let removed = 0;
  for (const e of readdirSync(join(DIST, dir), { withFileTypes: true })) {
    const rel = dir === '' ? e.name : posix.join(dir, e.name);
    if (e.isDirectory()) {
      if (rel === 'node_modules') continue;
      removed += prune(rel);
      if (readdirSync(join(DIST, rel)).length === 0) rmdirSync(join(DIST, rel));
    } else if (e.isFile()) {
      const source = e.name === 'package.json' ? rel : sourceOf(rel);
      if (source !== undefined && !existsSync(join(ROOT, source))) {
        rmSync(join(DIST, rel));
        removed++;
      }
    }
  }
  return removed;
}
const pruned = prune('');
if (pruned > 0)
  process.stdout.write(`dist-packages: ${pruned} compiled files whose source is gone removed\n`);

const linksDir = join(DIST, 'node_modules');
rmSync(linksDir, { recursive: true, force: true });
let n = 0;
for (const dir of workspaceDirs()) {
  const manifest = JSON.parse(readFileSync(join(ROOT, dir, 'package.json'), 'utf8'));
  const compiled = join(DIST, dir);
  if (!existsSync(compiled) || !statSync(compiled).isDirectory()) {
    process.stderr.write(`dist-packages: ${dir} has no compiled files in ${relative(ROOT, compiled)}\n`);
    process.exit(1);
  }
  copyFileSync(join(ROOT, dir, 'package.json'), join(compiled, 'package.json'));
  const link = join(linksDir, ...manifest.name.split('/'));
  mkdirSync(dirname(link), { recursive: true });
  symlinkSync(relative(dirname(link), compiled), link, 'dir');
  n++;
}
process.stdout.write(`dist-packages: ${n} packages linked in ${relative(ROOT, linksDir)}\n`);
