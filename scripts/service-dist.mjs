#!/usr/bin/env node
// `node scripts/service-dist.mjs <built dist> <out dist>`: the compiled files one service's image
// needs (Dockerfile, stage `service`; docs/deploy.md "Per-service images"). Run in the image's
// directory after `npm ci --omit=dev --workspace @noded/service-<name>`: the workspaces npm linked
// in ./node_modules/@noded are that service's closure, so exactly those are copied from <built
// dist> (the build stage's dist/) to <out dist>, each with its package.json, and
// <out dist>/node_modules/@noded/<x> links to each (relative, as scripts/dist-packages.mjs makes
// them), so that Node resolves @noded/<x> from the compiled files to the compiled package.
// It prints the packages and the size of ./node_modules (apparent bytes, links not followed): the
// service's closure, as docs/deploy.md "Per-service images" tables it.
import {
  cpSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readlinkSync,
  rmSync,
  symlinkSync,
} from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

const [from, to] = process.argv.slice(2);
if (!from || !to) {
  process.stderr.write('usage: node scripts/service-dist.mjs <built dist> <out dist>\n');
  process.exit(2);
}
const here = process.cwd();
const scope = join(here, 'node_modules', '@noded');
if (!existsSync(scope)) {
  process.stderr.write(`service-dist: ${scope} does not exist; run npm ci --workspace <service> first\n`);
  process.exit(1);
}
const out = resolve(to);
rmSync(join(out, 'node_modules'), { recursive: true, force: true });
const copied = [];
for (const name of readdirSync(scope).sort()) {
  // npm's link of a workspace: node_modules/@noded/x -> ../../libs/x (or services/x).
  const dir = relative(here, resolve(scope, readlinkSync(join(scope, name))));
  const compiled = join(resolve(from), dir);
  if (!existsSync(join(compiled, 'package.json'))) {
    process.stderr.write(`service-dist: @noded/${name} (${dir}) has no compiled package in ${compiled}\n`);
    process.exit(1);
  }
  cpSync(compiled, join(out, dir), { recursive: true });
  const link = join(out, 'node_modules', '@noded', name);
  mkdirSync(dirname(link), { recursive: true });
  symlinkSync(relative(dirname(link), join(out, dir)), link, 'dir');
  copied.push(dir);
}
/** Apparent bytes and files under `dir`, links counted as themselves and not followed. */
function size(dir) {
  let bytes = 0;
  let files = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) {
      const s = size(p);
      bytes += s.bytes;
      files += s.files;
    } else {
      bytes += lstatSync(p).size;
      files++;
    }
  }
  return { bytes, files };
}
const closure = size(join(here, 'node_modules'));
process.stdout.write(
  `service-dist: ${copied.length} packages: ${copied.join(' ')}; node_modules ${(closure.bytes / 2 ** 20).toFixed(1)} MiB in ${closure.files} files\n`,
);
