// scripts/patch-deps.mjs rewrites @ethereumjs/evm's call path and interpreter loop after install
// (see that script): the installed copy must carry both, and running the script again must change
// nothing. What the EVM computes is covered by the execution and RPC tests, which run on the
// patched copy; the tracer test below checks that the slow path still serves 'step' listeners.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { evmFilesUnpatched } from '@noded/execution/src/evm/patched.js';

const esm = (name: string) => fileURLToPath(new URL(`./${name}`, import.meta.resolve('@ethereumjs/evm')));
const utilFile = fileURLToPath(new URL('./bytes.js', import.meta.resolve('@ethereumjs/util')));
const script = fileURLToPath(new URL('../../../scripts/patch-deps.mjs', import.meta.url));

describe('EthereumJS rewrites (scripts/patch-deps.mjs)', () => {
  it('are in place after npm install', () => {
    assert.deepEqual(evmFilesUnpatched(), [], 'did postinstall run?');
    const evm = readFileSync(esm('evm.js'), 'utf8');
    assert.ok(evm.includes('runState: Object.assign({}, interpreterRes.runState, result, interpreter._env)'));
    assert.ok(!/\.\.\.interpreterRes\.runState/.test(evm));
    const interpreter = readFileSync(esm('interpreter.js'), 'utf8');
    assert.ok(interpreter.includes('const stepping = this.runStepSync(opCodeObj);'));
    assert.ok(!interpreter.includes('await this.runStep(opCodeObj);'));
    const gas = readFileSync(esm('opcodes/gas.js'), 'utf8');
    // MSTORE's memory-expansion gas never awaits: a plain function now; SSTORE's reads state.
    assert.match(gas, /0x52,\s+function \(runState, gas, common\)/);
    assert.match(gas, /0x55,\s+async function \(runState, gas, common\)/);
    const util = readFileSync(utilFile, 'utf8');
    assert.ok(!util.includes('new Uint8Array([...new Uint8Array(length - msg.length), ...msg])'));
  });

  it('are idempotent', () => {
    const files = [esm('evm.js'), esm('interpreter.js'), esm('opcodes/gas.js'), utilFile];
    const before = files.map((f) => readFileSync(f, 'utf8'));
    const r = spawnSync(process.execPath, [script], { encoding: 'utf8', timeout: 30_000 });
    assert.equal(r.status, 0, r.stderr);
    assert.deepEqual(
      files.map((f) => readFileSync(f, 'utf8')),
      before,
    );
  });
});
