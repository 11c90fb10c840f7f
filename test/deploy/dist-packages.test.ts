// scripts/dist-packages.mjs, the step `npm run build` runs after tsc: it drops compiled files whose
// source is gone (tsc never deletes; a moved file left its old .js behind, which a reused tree then
// ran or copied into a service image), keeps everything else, and links dist/node_modules/@noded/*.
// Run on a small tree of its own: a copy of the script in a temporary directory takes that directory
// as its repository (it finds the root from its own path), so the real dist/ is never touched.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  readFileSync,
  readlinkSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join } from 'node:path';
import { after, describe, it } from 'node:test';
import { removeDir, tempDir } from '../cli/helpers.js';
import { repoRoot } from '../e2e/harness.js';

const dirs: string[] = [];
after(() => {
  for (const d of dirs) removeDir(d);
});

function put(root: string, rel: string, text = '') {
  mkdirSync(dirname(join(root, rel)), { recursive: true });
  writeFileSync(join(root, rel), text);
}

const COMPILED = (base: string) => [`${base}.js`, `${base}.js.map`, `${base}.d.ts`, `${base}.d.ts.map`];

describe('scripts/dist-packages.mjs', () => {
  it('removes the compiled files whose source is gone, keeps the live ones, and links the packages', () => {
    const root = tempDir('noded-distpkg-');
    dirs.push(root);
    const outside = tempDir('noded-distpkg-outside-');
    dirs.push(outside);
    mkdirSync(join(root, 'scripts'));
    copyFileSync(
      join(repoRoot(), 'scripts', 'dist-packages.mjs'),
      join(root, 'scripts', 'dist-packages.mjs'),
    );
    put(root, 'package.json', JSON.stringify({ name: 'noded', version: '0.1.0', workspaces: ['libs/*'] }));
    put(root, 'libs/a/package.json', JSON.stringify({ name: '@noded/a', version: '0.1.0', type: 'module' }));
    put(root, 'libs/a/index.ts', "export { live } from './src/live.js';\n");
    put(root, 'libs/a/src/live.ts', 'export const live = 1;\n');
    put(root, 'test/kept.test.ts');
    // What tsc made from today's sources...
    for (const f of [
      ...COMPILED('libs/a/index'),
      ...COMPILED('libs/a/src/live'),
      ...COMPILED('test/kept.test'),
    ])
      put(root, `dist/${f}`, f.endsWith('.js') ? 'export const live = 1;\n' : '');
    // ...and what an earlier build left: a moved file, a directory of removed tests, a gone package.
    const stale = [
      ...COMPILED('dist/libs/a/src/moved'),
      ...COMPILED('dist/test/old/gone.test'),
      'dist/libs/b/package.json',
      ...COMPILED('dist/libs/b/index'),
    ];
    for (const f of stale) put(root, f);
    // Not a compiled file: left alone whatever its name says.
    put(root, 'dist/libs/a/src/notes.txt', 'kept');
    // A link in dist/node_modules to a directory outside, holding a .js without source: not followed.
    put(outside, 'lib/orphan.js', 'kept');
    mkdirSync(join(root, 'dist/node_modules/@noded'), { recursive: true });
    symlinkSync(join(outside, 'lib'), join(root, 'dist/node_modules/@noded/elsewhere'), 'dir');

    const r = spawnSync(process.execPath, [join(root, 'scripts', 'dist-packages.mjs')], {
      cwd: root,
      encoding: 'utf8',
    });
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, new RegExp(`${stale.length} compiled files whose source is gone removed`));
    assert.match(r.stdout, /1 packages linked/);

    const gone = stale.filter((f) => existsSync(join(root, f)));
    assert.deepEqual(gone, [], 'stale files left');
    assert.equal(existsSync(join(root, 'dist/test/old')), false, 'an emptied directory is left');
    assert.equal(existsSync(join(root, 'dist/libs/b')), false, "a gone package's directory is left");
    for (const f of [
      ...COMPILED('libs/a/index'),
      ...COMPILED('libs/a/src/live'),
      ...COMPILED('test/kept.test'),
    ])
      assert.ok(existsSync(join(root, 'dist', f)), `${f} was removed`);
    assert.equal(readFileSync(join(root, 'dist/libs/a/src/notes.txt'), 'utf8'), 'kept');
    assert.equal(readFileSync(join(outside, 'lib/orphan.js'), 'utf8'), 'kept', 'a link was followed');
    // The links are made anew: only the workspaces that exist.
    assert.equal(readlinkSync(join(root, 'dist/node_modules/@noded/a')), '../../libs/a');
    assert.equal(existsSync(join(root, 'dist/node_modules/@noded/elsewhere')), false);
    assert.ok(existsSync(join(root, 'dist/libs/a/package.json')));

    // A second run has nothing to remove and changes nothing.
    const again = spawnSync(process.execPath, [join(root, 'scripts', 'dist-packages.mjs')], {
      cwd: root,
      encoding: 'utf8',
    });
    assert.equal(again.status, 0, again.stderr);
    assert.doesNotMatch(again.stdout, /removed/);
  });
});
