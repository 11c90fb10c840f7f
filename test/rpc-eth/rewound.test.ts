// After the dev chain's evm_revert (the ChainRewound event): the eth_call cache forgets its height,
// so a height that comes again is computed again; polling filters drop what belongs to removed
// blocks and keep the rest.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CallCache } from '@noded/rpc/src/eth/call-cache.js';
import { FilterManager } from '@noded/rpc/src/eth/filters.js';
import type { EthBlock, EthLog, Hex } from '@noded/types';

const h32 = (n: number) => `0x${n.toString(16).padStart(64, '0')}` as Hex;
const block = (n: number) => ({ number: BigInt(n), hash: h32(1000 + n) }) as EthBlock;
const log = (n: number) =>
  ({
    address: `0x${'11'.repeat(20)}`,
    topics: [],
    data: '0x',
    blockNumber: BigInt(n),
    blockHash: h32(1000 + n),
    transactionHash: h32(n),
    transactionIndex: 0n,
    logIndex: 0n,
    removed: false,
  }) as EthLog;

describe('caches after ChainRewound', () => {
  it('CallCache.reset: the same height asks again', async () => {
    const cache = new CallCache<number>(() => 1);
    let runs = 0;
    const run = async () => ++runs;
    assert.equal(await cache.get(5n, 'k', run), 1);
    assert.equal(await cache.get(5n, 'k', run), 1);
    cache.reset();
    // Height 5 again after a revert to 3 and two new blocks: not the old answer.
    assert.equal(await cache.get(5n, 'k', run), 2);
    assert.equal(runs, 2);
  });

  it('FilterManager.onRewound drops block hashes and logs of removed heights only', () => {
    const fm = new FilterManager({ cap: 10, timeoutMs: 0, maxItems: 100 });
    const blocks = fm.install({ kind: 'blocks' });
    const logs = fm.install({ kind: 'logs', spec: { criteria: {}, addresses: [], topics: [] } });
    for (const n of [3, 4, 5, 6]) fm.onHead(block(n), [log(n)]);
    fm.onRewound(4);
    assert.deepEqual(fm.takeChanges(blocks).items, [h32(1003), h32(1004)]);
    assert.deepEqual(
      (fm.takeChanges(logs).items as EthLog[]).map((l) => l.blockNumber),
      [3n, 4n],
    );
    // New blocks at the reverted heights are reported as usual.
    fm.onHead(block(5), [log(5)]);
    assert.deepEqual(fm.takeChanges(blocks).items, [h32(1005)]);
    fm.close();
  });
});
