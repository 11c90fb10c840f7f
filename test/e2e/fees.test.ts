// Fee suggestion and replacement by fee against a real chain-local node, with ethers v6: the tip
// ethers takes from eth_maxPriorityFeePerGas is never below 1 gwei (MIN_SUGGESTED_TIP), and a
// pending transfer is replaced by the same nonce at fees raised by the mempool's price_bump (10%),
// not by less. A 20 s timeout_commit keeps the transactions pending between two blocks.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { JsonRpcProvider, parseUnits, Wallet } from 'ethers';
import { DEV_KEYS, startLocalNode } from './harness.js';

const GWEI = parseUnits('1', 'gwei');
const TIMEOUT_COMMIT_MS = 20_000;

async function waitFor<T>(what: string, ms: number, probe: () => Promise<T | undefined>): Promise<T> {
  const until = Date.now() + ms;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > until) throw new Error(`${what}: not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

describe('fees: suggestion and replacement against noded chain-local', { timeout: 420_000 }, () => {
  let env: Awaited<ReturnType<typeof startLocalNode>>;
  let provider: JsonRpcProvider;

  before(async () => {
    env = await startLocalNode({ timeoutCommit: `${TIMEOUT_COMMIT_MS / 1000}s` });
    provider = new JsonRpcProvider(env.node.ethUrl, undefined, {
      staticNetwork: true,
      pollingInterval: 200,
      cacheTimeout: -1,
    });
  });

  after(async () => {
    provider?.destroy();
    await env?.cleanup();
  });

  it('suggests a priority fee of at least 1 gwei on an idle chain', async () => {
    const fee = await provider.getFeeData();
    assert.ok(
      fee.maxPriorityFeePerGas !== null && fee.maxPriorityFeePerGas >= GWEI,
      `maxPriorityFeePerGas ${fee.maxPriorityFeePerGas}`,
    );
    assert.ok(fee.maxFeePerGas !== null && fee.maxFeePerGas > fee.maxPriorityFeePerGas);
    assert.ok(BigInt(await provider.send('eth_maxPriorityFeePerGas', [])) >= GWEI);
  });

  it('replaces a pending transfer at +10% fees, refuses one at less, and mines the replacement', async () => {
    const wallet = new Wallet(DEV_KEYS[1], provider);
    const to = Wallet.createRandom().address;
    // Send right after a block so that all three land in the same 20 s wait before the next one.
    const start = await provider.getBlockNumber();
    const height = await waitFor('a new block', TIMEOUT_COMMIT_MS + 15_000, async () => {
      const n = await provider.getBlockNumber();
      return n > start ? n : undefined;
    });
    const fee = await provider.getFeeData();
    const maxFeePerGas = fee.maxFeePerGas!;
    const maxPriorityFeePerGas = fee.maxPriorityFeePerGas!;
    const nonce = await provider.getTransactionCount(wallet.address, 'pending');
    const base = { to, type: 2, nonce, gasLimit: 21_000n, chainId: 31337n } as const;

    const original = await wallet.sendTransaction({ ...base, value: 1n, maxFeePerGas, maxPriorityFeePerGas });

    // 9%: below price_bump, refused as underpriced.
    await assert.rejects(
      wallet.sendTransaction({
        ...base,
        value: 3n,
        maxFeePerGas: (maxFeePerGas * 109n) / 100n,
        maxPriorityFeePerGas: (maxPriorityFeePerGas * 109n) / 100n,
      }),
      (err: Error & { code?: string; info?: { error?: { message?: string } } }) => {
        assert.equal(err.code, 'REPLACEMENT_UNDERPRICED', err.message);
        assert.match(err.info?.error?.message ?? '', /underpriced/);
        return true;
      },
    );

    const replacement = await wallet.sendTransaction({
      ...base,
      value: 2n,
      maxFeePerGas: (maxFeePerGas * 110n) / 100n,
      maxPriorityFeePerGas: (maxPriorityFeePerGas * 110n) / 100n,
    });
    assert.notEqual(replacement.hash, original.hash);
    // Both still pending: sent within the block interval.
    assert.equal(await provider.getBlockNumber(), height, 'a block came before the replacement was sent');
    const pending = await provider.getTransaction(replacement.hash);
    assert.equal(pending?.blockNumber, null);

    const receipt = await provider.waitForTransaction(replacement.hash, 1, TIMEOUT_COMMIT_MS * 3);
    assert.equal(receipt?.status, 1);
    assert.equal(receipt?.blockNumber, height + 1);
    assert.equal(await provider.getTransactionReceipt(original.hash), null);
    assert.equal(await provider.getBalance(to), 2n);
    assert.equal(await provider.getTransactionCount(wallet.address), nonce + 1);
    const mined = await provider.getTransaction(replacement.hash);
    assert.equal(mined?.maxPriorityFeePerGas, (maxPriorityFeePerGas * 110n) / 100n);
  });
});
