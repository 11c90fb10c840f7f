// The CometBFT tx index of a running node (data/tx_index.db, written on the node's tx-index thread):
// a transaction sent with ethers is found by tx, tx_search and block_search on :26657; with
// [tx_index] indexer = "null" those answer that indexing is disabled and /status says "off".
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { JsonRpcProvider, Wallet } from 'ethers';
import { DEV_KEYS, type RunningNode, startLocalNode } from './harness.js';

interface CometReply {
  result?: Record<string, unknown>;
  error?: { code: number; message: string; data?: string };
}

async function comet(
  node: RunningNode,
  method: string,
  params: Record<string, unknown>,
): Promise<CometReply> {
  const res = await fetch(node.cometUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  return (await res.json()) as CometReply;
}

/** Asks until `ready` holds: the index is written just after the block is announced. */
async function poll(ask: () => Promise<CometReply>, ready: (r: CometReply) => boolean): Promise<CometReply> {
  let last: CometReply = {};
  for (let i = 0; i < 100; i++) {
    last = await ask();
    if (ready(last)) return last;
    await new Promise((r) => setTimeout(r, 50));
  }
  return last;
}

async function sendTransfer(node: RunningNode): Promise<{ raw: string; height: number }> {
  const provider = new JsonRpcProvider(node.ethUrl, undefined, {
    staticNetwork: true,
    cacheTimeout: -1,
    pollingInterval: 100,
  });
  try {
    const wallet = new Wallet(DEV_KEYS[2], provider);
    const raw = await wallet.signTransaction(
      await wallet.populateTransaction({ to: Wallet.createRandom().address, value: 12345n }),
    );
    const tx = await provider.broadcastTransaction(raw);
    const receipt = await tx.wait(1, 20_000);
    assert.equal(receipt?.status, 1);
    return { raw, height: receipt!.blockNumber };
  } finally {
    provider.destroy();
  }
}

describe('tx index of a running node', { timeout: 420_000 }, () => {
  let node: RunningNode | undefined;
  let cleanup: (() => Promise<void>) | undefined;

  before(async () => {
    ({ node, cleanup } = await startLocalNode({ timeoutCommit: '300ms' }));
  });

  after(async () => {
    await cleanup?.();
  });

  it('finds a sent transaction by tx, tx_search and block_search', async () => {
    const { raw, height } = await sendTransfer(node!);
    const sha = createHash('sha256')
      .update(Buffer.from(raw.slice(2), 'hex'))
      .digest('hex')
      .toUpperCase();
    const found = await poll(
      // JSON-RPC bytes params are base64, as CometBFT's.
      () => comet(node!, 'tx', { hash: Buffer.from(sha, 'hex').toString('base64') }),
      (r) => r.result !== undefined,
    );
    assert.equal(found.error, undefined, JSON.stringify(found.error));
    assert.equal(found.result?.height, String(height));
    assert.equal(found.result?.hash, sha);
    assert.equal((found.result?.tx_result as { code: number } | undefined)?.code, 0);

    const search = await comet(node!, 'tx_search', { query: `tx.height=${height}` });
    const txs = (search.result?.txs ?? []) as Array<{ hash: string }>;
    assert.ok(
      txs.some((t) => t.hash === sha),
      `tx_search tx.height=${height} lists ${sha}: ${JSON.stringify(txs)}`,
    );
    const byAmount = await comet(node!, 'tx_search', { query: "ethereum_tx.amount='12345'" });
    assert.deepEqual(
      (byAmount.result?.txs as Array<{ hash: string }> | undefined)?.map((t) => t.hash),
      [sha],
    );
    const blocks = await comet(node!, 'block_search', { query: `block.height=${height}` });
    assert.equal(blocks.result?.total_count, '1');

    const bad = await comet(node!, 'tx_search', { query: "tx.hash='zz'" });
    assert.match(bad.error?.data ?? '', /invalid hex string "zz"/, JSON.stringify(bad));
  });
});

describe('[tx_index] indexer = "null"', { timeout: 420_000 }, () => {
  let node: RunningNode | undefined;
  let cleanup: (() => Promise<void>) | undefined;

  before(async () => {
    ({ node, cleanup } = await startLocalNode({
      timeoutCommit: '300ms',
      extra: (config) => {
        if (config.tx_index) config.tx_index.indexer = 'null';
      },
    }));
  });

  after(async () => {
    await cleanup?.();
  });

  it('indexes nothing, says so on tx, tx_search and block_search, and /status shows it off', async () => {
    const status = await comet(node!, 'status', {});
    const info = status.result?.node_info as { other: { tx_index: string } };
    assert.equal(info.other.tx_index, 'off');

    const { raw, height } = await sendTransfer(node!);
    const sha = createHash('sha256')
      .update(Buffer.from(raw.slice(2), 'hex'))
      .digest('hex');
    const tx = await comet(node!, 'tx', { hash: Buffer.from(sha, 'hex').toString('base64') });
    assert.equal(tx.error?.data, 'transaction indexing is disabled', JSON.stringify(tx));
    const search = await comet(node!, 'tx_search', { query: `tx.height=${height}` });
    assert.equal(search.error?.data, 'transaction indexing is disabled', JSON.stringify(search));
    const blocks = await comet(node!, 'block_search', { query: `block.height=${height}` });
    assert.equal(blocks.error?.data, 'block indexing is disabled', JSON.stringify(blocks));
  });
});
