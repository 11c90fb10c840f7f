// Hardhat 2 compiles, deploys and tests a contract against a real noded node configured as a network.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { PROBE_SOURCE } from './contracts.js';
import { DEV_KEYS, repoRoot, startLocalNode } from './harness.js';

const REPO = repoRoot();

const CONFIG = (url: string) => `
const { subtask } = require('hardhat/config');
const { TASK_COMPILE_SOLIDITY_GET_SOLC_BUILD } = require('hardhat/builtin-tasks/task-names');
require('@nomicfoundation/hardhat-ethers');

// Offline: use the solc-js build that ships in the solc npm package instead of downloading one.
subtask(TASK_COMPILE_SOLIDITY_GET_SOLC_BUILD, async (args, _hre, runSuper) => {
  const solc = require('solc');
  const long = solc.version().replace('.Emscripten.clang', '');
  if (args.solcVersion === long.split('+')[0]) {
    return { compilerPath: require.resolve('solc/soljson.js'), isSolcJs: true, version: args.solcVersion, longVersion: long };
  }
  return runSuper();
});

module.exports = {
  solidity: { version: require('solc').version().split('+')[0], settings: { evmVersion: 'cancun' } },
  defaultNetwork: 'noded',
  networks: {
    noded: { url: ${JSON.stringify(url)}, chainId: 31337, accounts: ${JSON.stringify(DEV_KEYS.slice(0, 2))} },
    // Hardhat's default for an HTTP network: the node's unlocked accounts (needed to send from an
    // impersonated address, which Hardhat otherwise refuses with HH103 for want of its key).
    nodedRemote: { url: ${JSON.stringify(url)}, chainId: 31337, accounts: 'remote' },
  },
  mocha: { timeout: 60000 },
};
`;

const TEST = `
const { ethers } = require('hardhat');

describe('Probe on noded', function () {
  it('deploys, bumps, emits and reverts with a reason', async function () {
    const [signer] = await ethers.getSigners();
    const probe = await ethers.deployContract('Probe');
    await probe.waitForDeployment();
    const tx = await probe.bump('from hardhat');
    const receipt = await tx.wait();
    if (receipt.status !== 1) throw new Error('bump failed');
    const counter = await probe.counter();
    if (counter !== 1n) throw new Error('counter is ' + counter);
    const events = await probe.queryFilter(probe.filters.Bumped(signer.address));
    if (events.length !== 1 || events[0].args.note !== 'from hardhat') throw new Error('event missing');
    let reason = '';
    try { await probe.failWithReason(); } catch (e) { reason = e.reason || e.message; }
    if (!/probe says no/.test(reason)) throw new Error('revert reason not surfaced: ' + reason);
    const net = await ethers.provider.getNetwork();
    if (net.chainId !== 31337n) throw new Error('chain id ' + net.chainId);
  });
});
`;

const IMPERSONATION_TEST = `
const { ethers, network } = require('hardhat');

describe('impersonation on noded', function () {
  it('funds and impersonates an account without a key (hardhat_setBalance, getImpersonatedSigner)', async function () {
    const probe = await ethers.deployContract('Probe');
    await probe.waitForDeployment();
    const whale = ethers.Wallet.createRandom().address;
    await network.provider.send('hardhat_setBalance', [whale, '0xde0b6b3a7640000']);
    if ((await ethers.provider.getBalance(whale)) !== 10n ** 18n) throw new Error('balance not set');
    const imp = await ethers.getImpersonatedSigner(whale);
    const receipt = await (await probe.connect(imp).bump('impersonated')).wait();
    if (receipt.status !== 1 || receipt.from.toLowerCase() !== whale.toLowerCase()) {
      throw new Error('impersonated send: status ' + receipt.status + ' from ' + receipt.from);
    }
    const events = await probe.queryFilter(probe.filters.Bumped(whale));
    if (events.length !== 1) throw new Error('the impersonated sender emitted ' + events.length + ' events');
    let name = '';
    // Hardhat's HTTP provider hands the node's error on as a ProviderError whose data is the revert
    // data (code 3), which the contract's interface decodes.
    try { await probe.connect(imp).failWithCustom(); } catch (e) {
      const parsed = e.code === 3 && e.data ? probe.interface.parseError(e.data) : null;
      name = parsed ? parsed.name + '(' + parsed.args[0] + ')' : 'code ' + e.code + ' data ' + e.data + ': ' + e.message;
    }
    if (name !== 'NotAllowed(42)') throw new Error('custom error not decoded: ' + name);
    await network.provider.send('hardhat_stopImpersonatingAccount', [whale]);
  });
});
`;

function runHardhat(cwd: string, args: string[]): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const cli = join(REPO, 'node_modules', 'hardhat', 'internal', 'cli', 'cli.js');
    const p = spawn(process.execPath, [cli, ...args], {
      cwd,
      env: { ...process.env, HARDHAT_DISABLE_TELEMETRY_PROMPT: 'true', CI: 'true' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    p.stdout.on('data', (d) => {
      out += d;
    });
    p.stderr.on('data', (d) => {
      out += d;
    });
    const timer = setTimeout(() => p.kill('SIGKILL'), 150_000);
    p.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, out });
    });
  });
}

describe('Hardhat 2 against noded chain-local', { timeout: 300_000 }, () => {
  let env: Awaited<ReturnType<typeof startLocalNode>>;
  const project = join(REPO, '.tmp', `hardhat-${process.pid}`);

  before(async () => {
    env = await startLocalNode({ timeoutCommit: '300ms' });
    mkdirSync(join(project, 'contracts'), { recursive: true });
    mkdirSync(join(project, 'test'), { recursive: true });
    writeFileSync(join(project, 'hardhat.config.cjs'), CONFIG(env.node.ethUrl));
    writeFileSync(join(project, 'package.json'), '{"name":"hh-e2e","private":true}');
    writeFileSync(join(project, 'contracts', 'Probe.sol'), PROBE_SOURCE.replace('^0.8.20', '^0.8.20'));
    writeFileSync(join(project, 'test', 'probe.cjs'), TEST);
    writeFileSync(join(project, 'test', 'impersonation.cjs'), IMPERSONATION_TEST);
  });

  after(async () => {
    await env?.cleanup();
    rmSync(project, { recursive: true, force: true });
  });

  it('runs `hardhat test --network noded` green', async () => {
    const { code, out } = await runHardhat(project, [
      'test',
      '--network',
      'noded',
      '--config',
      'hardhat.config.cjs',
      'test/probe.cjs',
    ]);
    assert.equal(code, 0, out);
    assert.match(out, /1 passing/);
  });

  it('impersonates and funds an account through Hardhat (hardhat_setBalance, getImpersonatedSigner)', async () => {
    const { code, out } = await runHardhat(project, [
      'test',
      '--network',
      'nodedRemote',
      '--config',
      'hardhat.config.cjs',
      'test/impersonation.cjs',
    ]);
    assert.equal(code, 0, out);
    assert.match(out, /1 passing/);
  });
});
