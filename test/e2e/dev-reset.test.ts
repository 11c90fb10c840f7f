// anvil_reset / hardhat_reset against a real chain-local node process through ethers: the chain comes
// back at its genesis (block 0 with its hash, the genesis balances, no code, nonce 0, receipts and
// blocks of the removed heights gone, the dev clock at zero), every snapshot is forgotten, blocks
// are made again from height 1, and a restart after a reset comes back where the chain is. Forking
// options are refused; a home without the recorded genesis point is refused naming the file.
import assert from 'node:assert/strict';
import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ContractFactory, type InterfaceAbi, JsonRpcProvider, Wallet } from 'ethers';
import { compile, TOKEN_SOURCE } from './contracts.js';
import { DEV_ADDRESSES, DEV_KEYS, initLocalHome, jsonRpc, type RunningNode, startNode } from './harness.js';

const rpc = jsonRpc;

async function ok(url: string, method: string, params: unknown[] = []): Promise<unknown> {
  const r = await rpc(url, method, params);
  if (r.error) throw new Error(`${method}: ${r.error.code} ${r.error.message}`);
  return r.result;
}

describe('anvil_reset / hardhat_reset on a chain-local node', { timeout: 300_000 }, () => {
  let home: string;
  let ports: Awaited<ReturnType<typeof initLocalHome>>['ports'];
  let node: RunningNode;

  const provider = () =>
    new JsonRpcProvider(node.ethUrl, undefined, {
      staticNetwork: true,
      pollingInterval: 50,
      cacheTimeout: -1,
    });

  before(async () => {
    // Blocks on demand, and an empty block only once an hour, so that nothing moves between reads.
    ({ home, ports } = await initLocalHome({
      extra: (config) => {
        if (config.consensus) config.consensus.create_empty_blocks_interval = '3600s';
      },
    }));
    node = await startNode(home, ports, [], 0n);
  });

  after(async () => {
    await node?.stop();
    if (home) rmSync(home, { recursive: true, force: true });
  });

  it('brings back the genesis state and forgets every snapshot; blocks follow from height 1', async () => {
    const p = provider();
    const genesis = await p.getBlock(0);
    assert.ok(genesis?.hash);
    const balances = await Promise.all(DEV_ADDRESSES.slice(0, 3).map((a) => p.getBalance(a)));
    assert.ok(existsSync(join(home, 'data', 'dev-genesis.json')), 'the genesis point is recorded at start');

    const wallet = new Wallet(DEV_KEYS[0]!, p);
    const { abi, bytecode } = compile(TOKEN_SOURCE).TestToken!;
    const token = await new ContractFactory(abi as InterfaceAbi, bytecode, wallet).deploy(
      'Reset',
      'RST',
      1000n,
    );
    await token.waitForDeployment();
    const tokenAddress = await token.getAddress();
    const sent = await (await wallet.sendTransaction({ to: DEV_ADDRESSES[2], value: 4242n })).wait();
    assert.ok(sent);
    await ok(node.ethUrl, 'evm_increaseTime', [86_400]);
    await ok(node.ethUrl, 'anvil_mine', [3]);
    const snap = await ok(node.ethUrl, 'evm_snapshot');
    assert.ok((await p.getBlockNumber()) >= 5);

    assert.equal(await ok(node.ethUrl, 'anvil_reset'), null);

    assert.equal(await p.getBlockNumber(), 0);
    assert.equal((await p.getBlock(0))?.hash, genesis.hash);
    assert.equal(await p.getBlock(1), null);
    assert.deepEqual(await Promise.all(DEV_ADDRESSES.slice(0, 3).map((a) => p.getBalance(a))), balances);
    assert.equal(await p.getCode(tokenAddress), '0x');
    assert.equal(await p.getTransactionCount(DEV_ADDRESSES[0]!, 'latest'), 0);
    assert.equal(await p.getTransactionCount(DEV_ADDRESSES[0]!, 'pending'), 0);
    assert.equal(await p.getTransactionReceipt(sent.hash), null);
    assert.equal(await p.getTransaction(sent.hash), null);
    // The dev clock is back at zero: the offset reported is the one just added.
    assert.equal(await ok(node.ethUrl, 'evm_increaseTime', [0]), '0x0');
    // A snapshot taken before the reset is gone, as in anvil.
    assert.equal(await ok(node.ethUrl, 'evm_revert', [snap]), false);
    // CometBFT's view agrees.
    const status = (await (await fetch(`${node.cometUrl}/status`)).json()) as {
      result: { sync_info: { latest_block_height: string } };
    };
    assert.equal(status.result.sync_info.latest_block_height, '0');

    // The same transaction (nonce 0 again) is mined at height 1, block time after genesis.
    const again = await (
      await new Wallet(DEV_KEYS[0]!, provider()).sendTransaction({ to: DEV_ADDRESSES[2], value: 4242n })
    ).wait();
    assert.equal(again?.blockNumber, 1);
    assert.equal(again?.status, 1);
    const b1 = await p.getBlock(1);
    assert.ok(b1 && b1.timestamp >= genesis.timestamp);
    assert.ok(b1.timestamp < genesis.timestamp + 86_400, 'the increased time was reset too');

    assert.equal(await ok(node.ethUrl, 'hardhat_reset', [{}]), true);
    assert.equal(await provider().getBlockNumber(), 0);
  });

  it('a restart after a reset comes back at the same height with the same hashes', async () => {
    const p = provider();
    const r = await (
      await new Wallet(DEV_KEYS[1]!, p).sendTransaction({ to: DEV_ADDRESSES[3], value: 1n })
    ).wait();
    assert.ok(r);
    await ok(node.ethUrl, 'anvil_reset', []);
    const r2 = await (
      await new Wallet(DEV_KEYS[1]!, provider()).sendTransaction({ to: DEV_ADDRESSES[3], value: 2n })
    ).wait();
    assert.ok(r2);
    const before = await provider().getBlock('latest');
    await node.stop('SIGKILL');
    node = await startNode(home, ports, [], 0n);
    const afterRestart = await provider().getBlock(before!.number);
    assert.equal(afterRestart?.hash, before!.hash);
    assert.equal((await provider().getTransactionReceipt(r2.hash))?.blockNumber, r2.blockNumber);
    assert.equal(await provider().getTransactionReceipt(r.hash), null);
    // And it still resets after the restart (the genesis point is on disk).
    assert.equal(await ok(node.ethUrl, 'anvil_reset'), null);
    assert.equal(await provider().getBlockNumber(), 0);
  });

  it('refuses forking options and unknown options, changing nothing', async () => {
    await (
      await new Wallet(DEV_KEYS[2]!, provider()).sendTransaction({ to: DEV_ADDRESSES[3], value: 1n })
    ).wait();
    const height = await provider().getBlockNumber();
    const fork = await rpc(node.ethUrl, 'anvil_reset', [
      { forking: { jsonRpcUrl: 'http://127.0.0.1:1', blockNumber: 1 } },
    ]);
    assert.equal(fork.error?.code, -32000);
    assert.match(
      fork.error?.message ?? '',
      /^anvil_reset: forking is not supported \(noded cannot fork "http:\/\/127\.0\.0\.1:1"\)/,
    );
    const unknown = await rpc(node.ethUrl, 'hardhat_reset', [{ fork: true }]);
    assert.deepEqual(unknown.error, {
      code: -32602,
      message: 'hardhat_reset: unknown option "fork" (forking)',
    });
    const notObject = await rpc(node.ethUrl, 'anvil_reset', [7]);
    assert.equal(notObject.error?.code, -32602);
    assert.equal(await provider().getBlockNumber(), height);
  });

  it('a home without the recorded genesis point is refused, naming the file', async () => {
    const file = join(home, 'data', 'dev-genesis.json');
    await node.stop();
    rmSync(file);
    node = await startNode(home, ports, [], 0n);
    // The chain has blocks, so the point is not recorded again at start.
    assert.ok((await provider().getBlockNumber()) > 0);
    assert.equal(existsSync(file), false);
    const height = await provider().getBlockNumber();
    const r = await rpc(node.ethUrl, 'anvil_reset');
    assert.equal(r.error?.code, -32000);
    assert.match(
      r.error?.message ?? '',
      /dev-genesis\.json is missing: this home made its first block before/,
    );
    assert.equal(await provider().getBlockNumber(), height);
  });
});
