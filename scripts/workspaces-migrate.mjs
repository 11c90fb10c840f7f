#!/usr/bin/env node
// `node scripts/workspaces-migrate.mjs [--check]`: turns the tree into npm workspaces (issue 22,
// "Layout"; docs/cluster.md, "Packages"). Deterministic and idempotent: it derives everything from
// the tree as it finds it (no list of files), so a second run changes nothing and a file added later
// is handled by the same rules. `--check` writes nothing and exits 1 if a run would change a file.
//
// What it does, by rule:
// 1. Packages: every directory libs/<x> and services/<x> that holds a .ts file is one workspace:
//    libs/<x> is `@noded/<x>`, services/noded (the CLI and the all-in-one node) is `@noded/cli`, any
//    other services/<x> is `@noded/service-<x>` (services/consensus cannot be `@noded/consensus`,
//    the lib's name).
// 2. Imports: in libs/, services/, test/, bench/, scripts/ and bin/, a relative specifier ('../x')
//    in an import, export-from, import() or require() whose target lies in another package than the
//    importing file becomes `@noded/<pkg>` (target `<pkg dir>/index.js`) or `@noded/<pkg>/<path in
//    the package>` (any other file). Imports inside one package, imports between test/ and bench/
//    (the root package), comments, URLs (`new URL('../..', import.meta.url)`) and generated code
//    (src/gen/) are left as they are.
// 3. package.json per package: name, the root's version, private, type module, `exports` ("." is
//    index.js where there is an index.ts; "./*" every file by its path in the package, which is how
//    tests reach internals) and `dependencies`: the workspaces and the npm packages its files import,
//    each npm package at the range the root package.json had for it.
// 4. The root package.json: `workspaces` (libs/*, services/*); `dependencies` become the CLI alone
//    (bin/noded.js runs it); what test/, bench/ and scripts/ import and the root no longer declares
//    joins `devDependencies`; `build` runs scripts/dist-packages.mjs after tsc, then
//    scripts/build-native.mjs (libs/native's add-on) (the compiled tree in
//    dist/ gets each package.json and dist/node_modules/@noded/* links, so Node resolves @noded/x
//    from dist/ to dist/libs/x: one `tsc -p tsconfig.json`, the same dist/ layout as before).
// 5. Dockerfile: each workspace's package.json is copied before each `npm ci` (npm needs them to
//    install a workspace tree) and the runtime stage copies dist/node_modules; .dockerignore lets
//    scripts/dist-packages.mjs into the build context.
// 6. tsconfig.json: `paths` from @noded/x to libs/x/index.ts and @noded/x/* to libs/x/* (sources
//    next to the tsconfig, so a copy of the tree compiles its own files, and no link is needed to
//    type-check); scripts/mutate.mjs builds its sandbox with `npm run build` (dist-packages.mjs too).
// After it: `npm install` (links the workspaces, rewrites package-lock.json), then `npm run build`.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { dirname, join, posix } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const CHECK = process.argv.includes('--check');
const SCOPE = '@noded';
const PACKAGE_GROUPS = ['libs', 'services'];
const SOURCE_ROOTS = ['libs', 'services', 'test', 'bench', 'scripts', 'bin'];
const CODE = /\.(ts|mts|cts|js|mjs|cjs)$/;
const SKIP_DIRS = new Set(['node_modules', 'dist', '.tmp', 'fixtures', 'artifacts', 'cache', '.hardhat']);
/** Generated code (scripts/proto.sh, checked by SHA256SUMS) is scanned for dependencies, never rewritten. */
const GENERATED = /(^|\/)src\/gen\//;

const read = (rel) => readFileSync(join(ROOT, rel), 'utf8');
const changed = [];
function write(rel, text) {
  const abs = join(ROOT, rel);
  if (existsSync(abs) && readFileSync(abs, 'utf8') === text) return;
  changed.push(rel);
  if (!CHECK) writeFileSync(abs, text);
}

function walk(relDir, out = []) {
  const abs = join(ROOT, relDir);
  if (!existsSync(abs)) return out;
  for (const e of readdirSync(abs, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1))) {
    const rel = posix.join(relDir, e.name);
    if (e.isDirectory()) {
      if (!SKIP_DIRS.has(e.name)) walk(rel, out);
    } else if (CODE.test(e.name) && !e.name.endsWith('.d.ts')) out.push(rel);
  }
  return out;
}

// ---- 1. packages --------------------------------------------------------------------------------
function packageName(group, dir) {
  if (group === 'libs') return `${SCOPE}/${dir}`;
  return dir === 'noded' ? `${SCOPE}/cli` : `${SCOPE}/service-${dir}`;
}
const packages = [];
for (const group of PACKAGE_GROUPS) {
  for (const dir of readdirSync(join(ROOT, group)).sort()) {
    const rel = `${group}/${dir}`;
    if (!statSync(join(ROOT, rel)).isDirectory()) continue;
    if (!walk(rel).some((f) => f.endsWith('.ts'))) continue;
    packages.push({
      dir: rel,
      name: packageName(group, dir),
      hasIndex: existsSync(join(ROOT, rel, 'index.ts')),
      // A service with src/main.ts runs on its own (its image needs no CLI): `noded-<x>`.
      bin:
        group === 'services' && existsSync(join(ROOT, rel, 'src', 'main.ts'))
          ? { [`noded-${dir}`]: './src/main.js' }
          : undefined,
    });
  }
}
const names = new Map();
for (const p of packages) {
  if (names.has(p.name)) throw new Error(`${p.dir} and ${names.get(p.name)} would both be ${p.name}`);
  names.set(p.name, p.dir);
}
/** The package a repository path belongs to, or undefined (the root package: test/, bench/, ...). */
const packageOf = (rel) => packages.find((p) => rel === p.dir || rel.startsWith(`${p.dir}/`));

// ---- 2. imports ---------------------------------------------------------------------------------
// A specifier in an import/export declaration, import(), require() or `import '...'`. Matches on a
// line that is a comment (// ..., /* ..., * ...) are not code and are skipped.
const SPECIFIER =
  /(\bfrom\s*|\bimport\s*\(\s*|\brequire\s*\(\s*|^\s*import\s+|[;}]\s*import\s+)(['"])([^'"\n]+)\2/gm;

function isCommentAt(text, index) {
  const lineStart = text.lastIndexOf('\n', index - 1) + 1;
  const head = text.slice(lineStart, index).trimStart();
  return head.startsWith('//') || head.startsWith('*') || head.startsWith('/*');
}

/** `import ... from` spans lines: a match's own position is where `from` is. */
function specifiers(text) {
  const out = [];
  for (const m of text.matchAll(SPECIFIER)) {
    const at = m.index + m[1].length;
    if (isCommentAt(text, m.index + (m[1].match(/^\s*/)?.[0].length ?? 0))) continue;
    const typeOnly = /^\s*from/.test(m[1]) && isTypeOnly(text, m.index);
    out.push({ start: at, end: at + m[3].length + 2, quote: m[2], spec: m[3], typeOnly });
  }
  return out;
}

/**
 * Whether the `import ... from` / `export ... from` that ends at `fromAt` brings in types only, so
 * tsc erases it and the compiled file does not load the package: `import type ...`, `export type
 * ...`, or braces in which every name is marked `type` (`import { type A, type B }`). Anything else
 * counts as a runtime import (an unmarked import of a type that tsc elides is counted too: safe).
 */
function isTypeOnly(text, fromAt) {
  const head = text.slice(0, fromAt);
  const starts = [...head.matchAll(/^[ \t]*(import|export)\b/gm)];
  const start = starts.at(-1);
  if (start === undefined) return false;
  const clause = head.slice(start.index).trim();
  if (/^(import|export)\s+type\b/.test(clause)) return true;
  const braces = clause.match(/^(import|export)\s*\{([^}]*)\}\s*$/);
  if (!braces) return false;
  const names = braces[2]
    .split(',')
    .map((n) => n.trim())
    .filter(Boolean);
  return names.length > 0 && names.every((n) => /^type\s/.test(n));
}

function rewriteTarget(file, spec) {
  if (!spec.startsWith('./') && !spec.startsWith('../')) return undefined;
  const target = posix.normalize(posix.join(posix.dirname(file), spec));
  const from = packageOf(file);
  const to = packageOf(target);
  if (!to || to === from) return undefined;
  const inside = target.slice(to.dir.length + 1);
  if (inside === 'index.js' && to.hasIndex) return to.name;
  return `${to.name}/${inside}`;
}

/** The npm package a bare specifier names (`@scope/name/sub` -> `@scope/name`), or undefined. */
function npmPackage(spec) {
  // A module name (npm's rules: lower case, no spaces); other strings after `from` are prose.
  if (!/^(@[a-z0-9][\w.-]*\/)?[a-z][\w.-]*(\/[\w./-]*)?$/.test(spec)) return undefined;
  const parts = spec.split('/');
  const name = spec.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
  if (builtinModules.includes(name)) return undefined;
  return name;
}

const imports = new Map(); // package dir or '' (root) -> Set of package names imported
// package dir -> Set of package names that its files import for their types only (never loaded)
const typeImports = new Map();
let rewritten = 0;
for (const root of SOURCE_ROOTS) {
  for (const file of walk(root)) {
    const text = read(file);
    const owner = packageOf(file)?.dir ?? '';
    const used = imports.get(owner) ?? new Set();
    imports.set(owner, used);
    const typesUsed = typeImports.get(owner) ?? new Set();
    typeImports.set(owner, typesUsed);
    let out = '';
    let last = 0;
    for (const s of specifiers(text)) {
      const next = GENERATED.test(file) ? undefined : rewriteTarget(file, s.spec);
      const spec = next ?? s.spec;
      const pkg = npmPackage(spec);
      if (pkg) (s.typeOnly ? typesUsed : used).add(pkg);
      if (next !== undefined) {
        out += `${text.slice(last, s.start)}${s.quote}${next}${s.quote}`;
        last = s.end;
        rewritten++;
      }
    }
    if (last > 0) write(file, out + text.slice(last));
  }
}

// ---- 3. package.json per package ----------------------------------------------------------------
const rootPkg = JSON.parse(read('package.json'));
// Ranges as the root declared them before this ran; after a run they live in the packages too.
const ranges = new Map();
for (const p of packages) {
  const path = `${p.dir}/package.json`;
  if (!existsSync(join(ROOT, path))) continue;
  const manifest = JSON.parse(read(path));
  for (const field of ['devDependencies', 'dependencies'])
    for (const [n, r] of Object.entries(manifest[field] ?? {})) ranges.set(n, r);
}
for (const field of ['devDependencies', 'dependencies']) {
  for (const [n, r] of Object.entries(rootPkg[field] ?? {})) ranges.set(n, r);
}
const undeclared = [];
function dependenciesOf(used, selfName) {
  const deps = {};
  for (const n of [...used].sort()) {
    if (n === selfName) continue;
    if (names.has(n)) deps[n] = rootPkg.version;
    else if (ranges.has(n)) deps[n] = ranges.get(n);
    else undeclared.push(n);
  }
  return deps;
}
const json = (o) => `${JSON.stringify(o, null, 2)}\n`;
for (const p of packages) {
  const runtime = imports.get(p.dir) ?? new Set();
  const deps = dependenciesOf(runtime, p.name);
  // Imported for types only: needed to build, not to run. A workspace's types come through
  // tsconfig.json's `paths`, so it is not listed at all; an npm package is a devDependency. Listed
  // as a devDependency, a workspace would still be installed by `npm ci --omit=dev --workspace
  // <service>` (npm follows a workspace's dev edges there), the install of one service's image.
  const typesOnly = [...(typeImports.get(p.dir) ?? [])].filter((n) => !runtime.has(n) && !names.has(n));
  const devDeps = dependenciesOf(new Set(typesOnly), p.name);
  const manifest = {
    name: p.name,
    version: rootPkg.version,
    private: true,
    type: 'module',
    license: rootPkg.license,
    exports: { ...(p.hasIndex ? { '.': './index.js' } : {}), './*': './*' },
    ...(p.bin ? { bin: p.bin } : {}),
    dependencies: deps,
    ...(Object.keys(devDeps).length > 0 ? { devDependencies: devDeps } : {}),
  };
  write(`${p.dir}/package.json`, json(manifest));
}

// ---- 4. root package.json -----------------------------------------------------------------------
const cli = packages.find((p) => p.name === `${SCOPE}/cli`);
const rootUsed = new Set([...(imports.get('') ?? []), ...(typeImports.get('') ?? [])]);
const dev = { ...(rootPkg.devDependencies ?? {}) };
for (const n of rootUsed) {
  if (names.has(n) || dev[n] !== undefined) continue;
  if (ranges.has(n)) dev[n] = ranges.get(n);
  else undeclared.push(n);
}
// Tests and benches import the workspaces too: the root depends on every package (dev), so that
// `npm ci` at the root links them all, and on the CLI (prod), which bin/noded.js runs.
for (const p of packages) if (rootUsed.has(p.name) && p !== cli) dev[p.name] = rootPkg.version;
// Production dependencies that no file imports by name (a peer such as rxjs for @nestjs/core,
// something loaded by a string) stay where they were: the root, so that `npm ci --omit=dev` keeps them.
const importedByPackages = new Set(
  packages.flatMap((p) => [...(imports.get(p.dir) ?? []), ...(typeImports.get(p.dir) ?? [])]),
);
const keptDeps = {};
for (const [n, r] of Object.entries(rootPkg.dependencies ?? {})) {
  if (!names.has(n) && !importedByPackages.has(n) && !rootUsed.has(n)) keptDeps[n] = r;
}
const sortKeys = (o) => Object.fromEntries(Object.entries(o).sort(([a], [b]) => (a < b ? -1 : 1)));
const nextRoot = {};
for (const [k, v] of Object.entries(rootPkg)) {
  if (k === 'workspaces') continue;
  if (k === 'dependencies') {
    nextRoot.workspaces = PACKAGE_GROUPS.map((g) => `${g}/*`);
    nextRoot.dependencies = sortKeys({ ...keptDeps, ...(cli ? { [cli.name]: rootPkg.version } : {}) });
    continue;
  }
  nextRoot[k] = k === 'devDependencies' ? sortKeys(dev) : v;
}
const BUILD = 'tsc -p tsconfig.json && node scripts/dist-packages.mjs && node scripts/build-native.mjs';
nextRoot.scripts = { ...nextRoot.scripts, build: BUILD };
write('package.json', json(nextRoot));

// ---- tsconfig.json paths and the mutation sandbox's build ----------------------------------------
// `paths` resolve @noded/x to the sources next to the tsconfig, not through node_modules: a copy of
// the tree (Stryker's sandbox, whose node_modules links back to the original) compiles its own
// files, and a type check needs no `npm install` for the links.
/** JSON as this repository writes it: objects one key a line, arrays of strings on one line. */
function formatJson(value, indent = '') {
  if (Array.isArray(value)) return `[${value.map((v) => JSON.stringify(v)).join(', ')}]`;
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  const inner = `${indent}  `;
  const body = Object.entries(value).map(([k, v]) => `${inner}${JSON.stringify(k)}: ${formatJson(v, inner)}`);
  return body.length === 0 ? '{}' : `{\n${body.join(',\n')}\n${indent}}`;
}
const tsconfig = JSON.parse(read('tsconfig.json'));
const paths = {};
for (const p of [...packages].sort((a, b) => (a.name < b.name ? -1 : 1))) {
  if (p.hasIndex) paths[p.name] = [`./${p.dir}/index.ts`];
  paths[`${p.name}/*`] = [`./${p.dir}/*`];
}
tsconfig.compilerOptions = { ...tsconfig.compilerOptions, paths };
write('tsconfig.json', `${formatJson(tsconfig)}\n`);
if (existsSync(join(ROOT, 'scripts/mutate.mjs'))) {
  // The sandbox's dist/ needs its package links too (scripts/dist-packages.mjs): the whole build.
  write(
    'scripts/mutate.mjs',
    read('scripts/mutate.mjs').replace(
      "buildCommand: 'npx tsc -p tsconfig.json',",
      "buildCommand: 'npm run build',",
    ),
  );
}

// ---- 5. Dockerfile and .dockerignore ------------------------------------------------------------
if (existsSync(join(ROOT, 'Dockerfile'))) {
  const MARK = '# The workspaces: each package.json (npm ci installs a workspace tree from them).';
  const copies = packages.map((p) => `COPY ${p.dir}/package.json ${p.dir}/package.json`).join('\n');
  let text = read('Dockerfile');
  // Drop what an earlier run wrote, then write it again from the packages found now.
  text = text.replace(
    new RegExp(`${MARK.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\n(COPY \\S+/package\\.json \\S+\\n)*`, 'g'),
    '',
  );
  text = text.replace(/^(COPY package\.json package-lock\.json \.\/\n)/gm, `$1${MARK}\n${copies}\n`);
  const distModules = 'COPY --from=build /src/dist/node_modules dist/node_modules';
  if (!text.includes(distModules)) {
    text = text.replace(/^(COPY --from=build \/src\/dist\/services dist\/services\n)/m, `$1${distModules}\n`);
  }
  if (!text.includes('scripts/dist-packages.mjs')) {
    text = text.replace(
      /^(COPY bench bench\n)/m,
      '$1COPY scripts/dist-packages.mjs scripts/dist-packages.mjs\n',
    );
  }
  write('Dockerfile', text);
}
if (existsSync(join(ROOT, '.dockerignore'))) {
  let text = read('.dockerignore');
  if (!text.includes('!scripts/dist-packages.mjs')) {
    text = text.replace(/^(!scripts\/patch-deps\.mjs\n)/m, '$1!scripts/dist-packages.mjs\n');
  }
  write('.dockerignore', text);
}

// ---- imports order: Biome sorts @noded/* among the other packages ------------------------------
const sources = changed.filter((f) => CODE.test(f) && !f.endsWith('.mjs'));
if (!CHECK && sources.length > 0) {
  const biome = join(ROOT, 'node_modules', '.bin', 'biome');
  for (let i = 0; i < sources.length; i += 200) {
    const r = spawnSync(biome, ['check', '--write', ...sources.slice(i, i + 200)], {
      cwd: ROOT,
      encoding: 'utf8',
    });
    if (r.status !== 0) {
      process.stderr.write(r.stdout + r.stderr);
      throw new Error('biome check --write failed on the rewritten files');
    }
  }
}

const uniq = [...new Set(undeclared)].sort();
process.stdout.write(
  `workspaces-migrate: ${packages.length} packages, ${rewritten} imports rewritten, ` +
    `${changed.length} files ${CHECK ? 'would change' : 'changed'}\n` +
    (uniq.length
      ? `not declared in the root package.json, left out of dependencies: ${uniq.join(', ')}\n`
      : ''),
);
if (CHECK && changed.length > 0) {
  for (const f of changed) process.stdout.write(`  ${f}\n`);
  process.exit(1);
}
