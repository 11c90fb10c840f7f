// Hardhat 2 runs a test file whose `it` blocks each start from a fixture through the real loadFixture
// of @nomicfoundation/hardhat-network-helpers 1.x (evm_snapshot after the fixture's first run; later
// calls evm_revert to it, which must answer true, then evm_snapshot again), against a chain-local
// node (blocks on demand).
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { compile, TOKEN_SOURCE } from './contracts.js';
import { runHardhat, writeHardhatProject } from './hardhat-project.js';
import { initLocalHome, type RunningNode, repoRoot, startNode } from './harness.js';

// The real loadFixture of @nomicfoundation/hardhat-network-helpers 1.x (a dev dependency): it checks
// web3_clientVersion, takes evm_snapshot after the fixture's first run, then evm_revert + evm_snapshot.
const TEST = `
const { ethers } = require('hardhat');
const { loadFixture, mine, reset, time: clock } = require('@nomicfoundation/hardhat-network-helpers');
const assert = require('node:assert/strict');
const TOKEN = require('./token.json');


async function deployToken() {
  const [owner, other] = await ethers.getSigners();
  const factory = new ethers.ContractFactory(TOKEN.abi, TOKEN.bytecode, owner);
  const token = await factory.deploy('Fixture', 'FIX', 1000000n);
  await token.waitForDeployment();
  const height = await ethers.provider.getBlockNumber();
  const time = (await ethers.provider.getBlock('latest')).timestamp;
  return { token, owner, other, height, time };
}

describe('loadFixture on noded', function () {
  it('the fixture deploys; a transfer moves tokens', async function () {
    const { token, other } = await loadFixture(deployToken);
    await (await token.transfer(other.address, 100n)).wait();
    assert.equal(await token.balanceOf(other.address), 100n);
  });

  it('the next test starts from the fixture again', async function () {
    const { token, owner, other, height } = await loadFixture(deployToken);
    assert.equal(await ethers.provider.getBlockNumber(), height);
    assert.equal(await token.balanceOf(other.address), 0n);
    assert.equal(await token.balanceOf(owner.address), 1000000n);
    await (await token.transfer(other.address, 7n)).wait();
    await mine(3);
    assert.equal(await token.balanceOf(other.address), 7n);
  });

  it('time moved in a test is back at the fixture in the next', async function () {
    const { time } = await loadFixture(deployToken);
    await clock.increase(86400);
    const moved = (await ethers.provider.getBlock('latest')).timestamp;
    assert.ok(moved >= time + 86400, 'moved ' + moved);
  });

  it('after it, a block is made at the fixture height + 1 at the restored time', async function () {
    const { token, other, height, time } = await loadFixture(deployToken);
    const receipt = await (await token.transfer(other.address, 1n)).wait();
    assert.equal(receipt.blockNumber, height + 1);
    const t = (await ethers.provider.getBlock(receipt.blockNumber)).timestamp;
    assert.ok(t < time + 86400, 'the day added in the previous test is gone: ' + t + ' vs ' + time);
    assert.equal(await ethers.provider.getTransactionCount(other.address), 0);
  });

  it('reset() brings the chain back to its genesis; the fixture runs again after it', async function () {
    const { token } = await loadFixture(deployToken);
    const address = await token.getAddress();
    await reset();
    assert.equal(await ethers.provider.getBlockNumber(), 0);
    assert.equal(await ethers.provider.getCode(address), '0x');
    const again = await loadFixture(deployToken);
    assert.equal(await again.token.getAddress(), address, 'same deployer nonce 0, same address');
    assert.equal(again.height, 1);
  });
});
`;

describe('Hardhat 2: loadFixture against chain-local', { timeout: 300_000 }, () => {
  let home: string;
  let node: RunningNode | undefined;
  const project = join(repoRoot(), '.tmp', `hardhat-fixture-${process.pid}`);

  before(async () => {
    // Blocks on demand as chain-local's default; the empty block once an hour instead of every second,
    // so that the heights asserted do not move between two reads.
    const init = await initLocalHome({
      extra: (config) => {
        if (config.consensus) config.consensus.create_empty_blocks_interval = '3600s';
      },
    });
    home = init.home;
    node = await startNode(home, init.ports);
    const { abi, bytecode } = compile(TOKEN_SOURCE).TestToken!;
    writeHardhatProject(project, node.ethUrl, {
      'test/fixture.cjs': TEST,
      'test/token.json': JSON.stringify({ abi, bytecode }),
    });
  });

  after(async () => {
    await node?.stop();
    rmSync(project, { recursive: true, force: true });
    if (home) rmSync(home, { recursive: true, force: true });
  });

  it('hardhat test passes with loadFixture over five it blocks (reset() included)', async () => {
    const r = await runHardhat(project, ['test', '--no-compile']);
    assert.equal(r.code, 0, r.out);
    assert.match(r.out, /5 passing/);
  });
});
