// Hardhat 2 drives a default chain-local node (blocks on demand) with the calls
// @nomicfoundation/hardhat-network-helpers makes for time.increase, time.increaseTo and mine
// (evm_setNextBlockTimestamp + hardhat_mine, hardhat_mine with a count and an interval), and
// evm_increaseTime + evm_mine, through its own provider; a signer's transfer is mined on demand.
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { runHardhat, writeHardhatProject } from './hardhat-project.js';
import { initLocalHome, type RunningNode, repoRoot, startNode } from './harness.js';

const REPO = repoRoot();

// The helpers' own sequences (hardhat-network-helpers 1.x): time.increase(n) = setNextBlockTimestamp
// (latest + n) then mine(); time.increaseTo(t) the same with t; mine(blocks, {interval}) =
// hardhat_mine(hex blocks, hex interval).
const TEST = `
const { network, ethers } = require('hardhat');
const hex = (n) => '0x' + n.toString(16);

describe('time and mining on noded', function () {
  const p = network.provider;
  const latest = async () => Number((await p.send('eth_getBlockByNumber', ['latest', false])).timestamp);
  const height = async () => Number(await p.send('eth_blockNumber', []));
  const increase = async (n) => {
    const t = (await latest()) + n;
    await p.send('evm_setNextBlockTimestamp', [hex(t)]);
    await p.send('hardhat_mine', ['0x1']);
    return t;
  };

  it('time.increase, time.increaseTo, mine(n, {interval}), evm_increaseTime + evm_mine', async function () {
    const t1 = await increase(3600);
    if ((await latest()) !== t1) throw new Error('time.increase: latest ' + (await latest()) + ' != ' + t1);
    const t2 = t1 + 86400;
    await p.send('evm_setNextBlockTimestamp', [hex(t2)]);
    await p.send('hardhat_mine', ['0x1']);
    if ((await latest()) !== t2) throw new Error('time.increaseTo: ' + (await latest()) + ' != ' + t2);
    const h0 = await height();
    await p.send('hardhat_mine', [hex(5), hex(12)]);
    if ((await height()) !== h0 + 5) throw new Error('mine(5): height ' + (await height()));
    if ((await latest()) < t2 + 4 * 12) throw new Error('mine interval: ' + (await latest()));
    const before = await latest();
    await p.send('evm_increaseTime', [600]);
    await p.send('evm_mine', []);
    if ((await latest()) < before + 600) throw new Error('evm_increaseTime: ' + (await latest()));
  });

  it('a signer transfer is mined on demand, in a block after the moved time', async function () {
    const [signer] = await ethers.getSigners();
    const before = await latest();
    const tx = await signer.sendTransaction({ to: '0x000000000000000000000000000000000000dEaD', value: 1n });
    const receipt = await tx.wait();
    if (receipt.status !== 1) throw new Error('status ' + receipt.status);
    const block = await ethers.provider.getBlock(receipt.blockNumber);
    if (block.timestamp < before) throw new Error('block time went back: ' + block.timestamp + ' < ' + before);
  });
});
`;

describe('Hardhat 2: time and mining helpers against chain-local', { timeout: 300_000 }, () => {
  let home: string;
  let node: RunningNode | undefined;
  const project = join(REPO, '.tmp', `hardhat-dev-${process.pid}`);

  before(async () => {
    const init = await initLocalHome(); // the chain-local defaults: blocks on demand
    home = init.home;
    node = await startNode(home, init.ports);
    writeHardhatProject(project, node.ethUrl, { 'test/time.cjs': TEST });
  });

  after(async () => {
    await node?.stop();
    rmSync(project, { recursive: true, force: true });
    if (home) rmSync(home, { recursive: true, force: true });
  });

  it('hardhat test passes with the helpers time.increase, time.increaseTo and mine', async () => {
    const r = await runHardhat(project, ['test', '--no-compile']);
    assert.equal(r.code, 0, r.out);
    assert.match(r.out, /2 passing/);
  });
});
