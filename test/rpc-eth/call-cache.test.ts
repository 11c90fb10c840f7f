// eth_call answers an identical call at the same height once, whatever the number of askers.
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import { CALL_CACHE_MAX_RESULT, CallCache, callKey } from '@noded/rpc/src/eth/call-cache.js';
import { ChainError, type Hex } from '@noded/types';
import { addr, LOGGER, REVERT_STRING, word } from './fake-chain.js';
import { call, type Harness, rpc, startHarness } from './helpers.js';

describe('eth_call result cache over HTTP', () => {
  let h: Harness;
  before(async () => {
    h = await startHarness();
    h.chain.mineMany(3);
  });
  after(() => h.close());
  beforeEach(() => {
    h.chain.mine();
    h.chain.callCount = 0;
  });

  it('answers a repeated call at the same height without the chain, and asks again at the next height', async () => {
    const req = { to: LOGGER, data: '0x70a08231' };
    assert.equal(await call(h.url, 'eth_call', [req, 'latest']), word(42));
    assert.equal(await call(h.url, 'eth_call', [req, 'latest']), word(42));
    // The same call spelled differently (checksummed address, upper-case hex, input for data).
    await call(h.url, 'eth_call', [{ to: LOGGER.toUpperCase().replace('0X', '0x'), input: '0x70A08231' }]);
    assert.equal(h.chain.callCount, 1);
    // A different call is its own entry.
    await call(h.url, 'eth_call', [{ ...req, from: addr(7) }, 'latest']);
    assert.equal(h.chain.callCount, 2);
    h.chain.mine();
    await call(h.url, 'eth_call', [req, 'latest']);
    assert.equal(h.chain.callCount, 3);
    assert.equal(h.chain.seen.call?.height, h.chain.latestHeight());
  });

  it('shares one execution among identical calls in flight', async () => {
    h.chain.slowMs = 50;
    try {
      const { SLOW } = await import('./fake-chain.js');
      const replies = await Promise.all(
        Array.from({ length: 6 }, () => call(h.url, 'eth_call', [{ to: SLOW }, 'latest'])),
      );
      assert.deepEqual(new Set(replies), new Set([word(42)]));
      assert.equal(h.chain.callCount, 1);
    } finally {
      h.chain.slowMs = 0;
    }
  });

  it('runs every call at an older height, with state overrides, or that failed', async () => {
    const req = { to: LOGGER };
    const older = `0x${(h.chain.latestHeight() - 1n).toString(16)}`;
    await call(h.url, 'eth_call', [req, 'latest']);
    await call(h.url, 'eth_call', [req, older]);
    await call(h.url, 'eth_call', [req, older]);
    assert.equal(h.chain.callCount, 3);
    const over = { [LOGGER]: { balance: '0x10' } };
    await call(h.url, 'eth_call', [req, 'latest', over]);
    await call(h.url, 'eth_call', [req, 'latest', over]);
    assert.equal(h.chain.callCount, 5);
    h.chain.callCount = 0;
    const failing = addr(0xfa11);
    h.chain.failCall = {
      to: failing,
      error: new ChainError(-32000, 'insufficient funds for gas * price + value'),
    };
    try {
      for (let i = 0; i < 2; i++) {
        const r = await rpc(h.url, 'eth_call', [{ to: failing }, 'latest']);
        assert.equal(r.error?.message, 'insufficient funds for gas * price + value');
      }
      assert.equal(h.chain.callCount, 2);
    } finally {
      h.chain.failCall = undefined;
    }
  });

  it('keeps reverts: the same revert is answered again with its reason and data', async () => {
    const first = await rpc(h.url, 'eth_call', [{ to: REVERT_STRING }, 'latest']);
    const second = await rpc(h.url, 'eth_call', [{ to: REVERT_STRING }, 'latest']);
    assert.equal(first.error?.message, 'execution reverted: nope');
    assert.deepEqual(second.error, first.error);
    assert.equal(h.chain.callCount, 1);
  });
});

describe('CallCache', () => {
  const size = (r: Hex) => r.length;
  /** A run that counts how often the cache called it. */
  const counted = () => {
    const counter = {
      runs: 0,
      run: async () => {
        counter.runs++;
        return '0x01' as Hex;
      },
    };
    return counter;
  };

  it('holds at most its size, dropping the oldest entry first', async () => {
    const c = new CallCache<Hex>(size, 2);
    const counter = counted();
    const run = counter.run;
    await c.get(1n, 'a', run);
    await c.get(1n, 'b', run);
    await c.get(1n, 'c', run);
    assert.equal(c.count, 2);
    await c.get(1n, 'b', run);
    await c.get(1n, 'c', run);
    assert.equal(counter.runs, 3);
    await c.get(1n, 'a', run);
    assert.equal(counter.runs, 4);
    assert.deepEqual(c.stats, { hits: 2, misses: 4 });
  });

  it('keeps only some misses while a client scans more distinct calls than it holds, and all again after', async () => {
    const c = new CallCache<Hex>(size, 256);
    const counter = counted();
    const run = counter.run;
    // 1,024 distinct calls asked in turn, 20 times, at one height: keeping every miss, each entry
    // is pushed out 256 calls later and none is ever hit.
    for (let cycle = 0; cycle < 20; cycle++)
      for (let k = 0; k < 1024; k++) await c.get(1n, `holder${k}`, run);
    assert.equal(c.sampling, true, 'the scan was recognised');
    const scanHits = c.stats.hits;
    assert.ok(scanHits > 20 * 1024 * 0.1, `kept entries are asked again: ${scanHits} hits of ${20 * 1024}`);
    assert.equal(counter.runs, 20 * 1024 - scanHits);
    // A dApp polling a few calls: once a window sees mostly hits every miss is kept again.
    for (let i = 0; i < 3 * 1024; i++) await c.get(1n, `poll${i % 4}`, run);
    assert.equal(c.sampling, false, 'back to keeping every miss');
    const before = counter.runs;
    await c.get(1n, 'fresh', run);
    await c.get(1n, 'fresh', run);
    assert.equal(counter.runs, before + 1, 'a new call is kept at once');
  });

  it('never samples a workload that mostly hits', async () => {
    const c = new CallCache<Hex>(size, 256);
    const counter = counted();
    const run = counter.run;
    // Each call asked twice in a row: half the lookups hit, which is not a scan.
    for (let k = 0; k < 4096; k++) {
      await c.get(1n, `c${k}`, run);
      await c.get(1n, `c${k}`, run);
    }
    assert.equal(c.sampling, false);
    assert.equal(counter.runs, 4096);
  });

  it('forgets results larger than CALL_CACHE_MAX_RESULT and empties itself at a newer height', async () => {
    const c = new CallCache<Hex>(size);
    const big = `0x${'ab'.repeat(CALL_CACHE_MAX_RESULT / 2)}` as Hex;
    await c.get(5n, 'big', async () => big);
    await Promise.resolve();
    assert.equal(c.count, 0);
    await c.get(5n, 'small', async () => '0x02' as Hex);
    assert.equal(c.count, 1);
    await c.get(6n, 'other', async () => '0x03' as Hex);
    assert.equal(c.count, 1);
    // An older height than the newest asked is run, not kept.
    await c.get(5n, 'small', async () => '0x04' as Hex);
    assert.equal(c.count, 1);
  });

  it('rejects every waiter of a failed run and keeps nothing of it', async () => {
    const c = new CallCache<Hex>(size);
    let fail = true;
    const run = async () => {
      await new Promise((r) => setTimeout(r, 5));
      if (fail) throw new Error('boom');
      return '0x05' as Hex;
    };
    const results = await Promise.allSettled([c.get(1n, 'k', run), c.get(1n, 'k', run)]);
    assert.deepEqual(
      results.map((r) => r.status),
      ['rejected', 'rejected'],
    );
    assert.equal(c.count, 0);
    fail = false;
    assert.equal(await c.get(1n, 'k', run), '0x05');
  });

  it('keys a call by its fields, whatever the hex case and number spelling', () => {
    assert.equal(
      callKey({ to: '0xABCDEF', data: '0xAA', gas: 0x10n }),
      callKey({ to: '0xabcdef', data: '0xaa', gas: 16n }),
    );
    assert.notEqual(callKey({ to: '0xabcdef', gas: 16n }), callKey({ to: '0xabcdef', gas: 17n }));
  });
});
