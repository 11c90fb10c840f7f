// scripts/patch-deps.mjs rewrites @ethereumjs/evm's call path after install (see that script):
// the installed copy must carry it, and running the script again must change nothing.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { evmCallPathPatched } from '../../libs/execution/src/evm/patched.js';

const evmFile = fileURLToPath(new URL('./evm.js', import.meta.resolve('@ethereumjs/evm')));
const script = fileURLToPath(new URL('../../../scripts/patch-deps.mjs', import.meta.url));

describe('@ethereumjs/evm call-path rewrite', () => {
  it('is in place after npm install', () => {
    assert.equal(evmCallPathPatched(), true, `${evmFile} lacks the rewrite: did postinstall run?`);
    const src = readFileSync(evmFile, 'utf8');
    assert.ok(src.includes('runState: Object.assign({}, interpreterRes.runState, result, interpreter._env)'));
    assert.ok(!/\.\.\.interpreterRes\.runState/.test(src));
  });

  it('is idempotent', () => {
    const before = readFileSync(evmFile, 'utf8');
    const r = spawnSync(process.execPath, [script], { encoding: 'utf8', timeout: 30_000 });
    assert.equal(r.status, 0, r.stderr);
    assert.equal(readFileSync(evmFile, 'utf8'), before);
  });
});
