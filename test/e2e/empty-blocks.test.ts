// config.toml [consensus] create_empty_blocks = false: no blocks while idle, a block soon after a tx.
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { JsonRpcProvider, Wallet } from 'ethers';
import { DEV_KEYS, initLocalHome, type RunningNode, startNode } from './harness.js';

describe('create_empty_blocks = false', { timeout: 420_000 }, () => {
  let home: string;
  let node: RunningNode | undefined;
  let provider: JsonRpcProvider;

  before(async () => {
    const init = await initLocalHome({
      timeoutCommit: '300ms',
      extra: (config) => {
        if (config.consensus) config.consensus.create_empty_blocks = false;
      },
    });
    home = init.home;
    node = await startNode(home, init.ports, [], 0n);
    provider = new JsonRpcProvider(node.ethUrl, undefined, {
      staticNetwork: true,
      cacheTimeout: -1,
      pollingInterval: 200,
    });
  });

  after(async () => {
    provider?.destroy();
    await node?.stop();
    rmSync(home, { recursive: true, force: true });
  });

  /**
   * The height once no block came for 1.5 s (at most 15 s): the first heights, and the block after one
   * that changed the state (CometBFT's proof block for the new app hash), come without a transaction.
   */
  const settled = async (): Promise<number> => {
    let h = await provider.getBlockNumber();
    for (const deadline = Date.now() + 15_000; Date.now() < deadline; ) {
      await new Promise((r) => setTimeout(r, 1500));
      const next = await provider.getBlockNumber();
      if (next === h) return h;
      h = next;
    }
    throw new Error(`blocks kept coming while idle (height ${h} after 15 s)`);
  };

  it('makes no block while idle and includes a submitted transaction promptly', async () => {
    const start = await settled();
    await new Promise((r) => setTimeout(r, 2500));
    const idle = await provider.getBlockNumber();
    assert.ok(
      idle - start <= 1,
      `idle node went from ${start} to ${idle} (timeout_commit 300ms would make ~8)`,
    );
    const wallet = new Wallet(DEV_KEYS[1], provider);
    const sent = Date.now();
    const tx = await wallet.sendTransaction({ to: Wallet.createRandom().address, value: 1n });
    const receipt = await tx.wait(1, 20_000);
    assert.equal(receipt?.status, 1);
    assert.ok(Date.now() - sent < 10_000, 'included within 10 s');
    assert.ok(receipt!.blockNumber > idle);
  });

  it('makes no block for a transaction queued behind a nonce gap', async () => {
    const wallet = new Wallet(DEV_KEYS[2], provider);
    await settled();
    const nonce = await provider.getTransactionCount(wallet.address, 'pending');
    // Nonce + 3: admitted to the pool as queued, not executable until the gap is filled.
    const raw = await wallet.signTransaction({
      to: Wallet.createRandom().address,
      value: 1n,
      nonce: nonce + 3,
      gasLimit: 21_000n,
      maxFeePerGas: 10_000_000_000n,
      maxPriorityFeePerGas: 1_000_000_000n,
      chainId: (await provider.getNetwork()).chainId,
    });
    const start = await provider.getBlockNumber();
    await provider.send('eth_sendRawTransaction', [raw]);
    await new Promise((r) => setTimeout(r, 2500));
    const later = await provider.getBlockNumber();
    assert.ok(
      later - start <= 1,
      `a gapped transaction made blocks ${start} -> ${later} (timeout_commit 300ms)`,
    );
  });
});
