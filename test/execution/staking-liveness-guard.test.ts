// The liveness guard of the validator pool's downtime jailing, through the executor on RocksDB: a
// validator over the missed-blocks limit that signs again is not jailed in a block where taking it
// out would leave 2/3 or less of the remaining voting power online (the chain would halt): the
// block carries a liveness_guard event, the node counts it, and the jail happens at the first block
// where it no longer halts the chain.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { wouldHalt } from '@noded/execution/src/precompiles/staking-slashing.js';
import type { CommitInfo } from '@noded/types';
import { addr, ETH, key, produceBlock } from './helpers.js';
import { eventsOf, keyHex, lastCommit, startStakingNet, stopStakingNet, updatesOf } from './staking-net.js';

const ops = [key(1), key(2), key(3), key(4)]; // four validators of power 10

/** Everybody of the four signs the last block except `absent`. */
const commitOf = (absent: number[]): CommitInfo =>
  lastCommit(
    absent,
    ops.map((_, i) => i),
  );

describe('validator pool: the liveness guard', () => {
  it('the rule: only a jail of a validator that signed can lower the online share, and it is held back at <= 2/3', () => {
    assert.equal(wouldHalt(true, 10n, 30n, 40n), true, '20 of 30 left online: exactly 2/3 halts');
    assert.equal(wouldHalt(true, 10n, 40n, 40n), false, '30 of 30');
    assert.equal(wouldHalt(true, 1n, 30n, 40n), false, '29 of 39 > 2/3');
    assert.equal(wouldHalt(false, 10n, 30n, 40n), false, 'an offline validator: 30 of 30 after it');
    assert.equal(wouldHalt(false, 10n, 20n, 40n), false, 'never held back when offline');
  });

  it('holds back the jail of a validator that came back while another is offline, and jails it once that no longer halts', async () => {
    const n = await startStakingNet({
      operators: ops,
      accounts: ops,
      balance: 100n * ETH,
      params: {
        signed_blocks_window: '10',
        min_signed_per_window: '0.5',
        slash_fraction_downtime: '0.01',
        downtime_jail_duration: '60',
      },
      rocksDirPrefix: 'noded-guard-',
    });
    const { ex } = n;
    try {
      await produceBlock(n, []);
      // Validator 1 misses heights 2..10 (9 > the 5 allowed of a window of 10) and signs from 11 on.
      for (let h = 2; h <= 12; h++) {
        const res = await produceBlock(n, [], undefined, { decidedLastCommit: commitOf(h <= 10 ? [1] : []) });
        assert.deepEqual(eventsOf(res, 'jail'), [], `height ${h}: not yet (start 2 + window 10)`);
      }
      // Height 13 would jail it (7 misses in the window) — but validator 2 is offline in this
      // commit: 30 of 40 signed, and without validator 1 only 20 of 30 would be online.
      const held = await produceBlock(n, [], undefined, { decidedLastCommit: commitOf([2]) });
      assert.equal(n.height, 13);
      assert.deepEqual(eventsOf(held, 'jail'), []);
      assert.deepEqual(eventsOf(held, 'slash'), []);
      assert.deepEqual(held.validatorUpdates, []);
      assert.deepEqual(eventsOf(held, 'liveness_guard'), [
        {
          operator: addr(ops[1]!),
          power: '10',
          online_power: '30',
          total_power: '40',
          missed_blocks: '7',
        },
      ]);
      assert.equal(ex.executionStats().heldBackJails, 1);

      // Height 14: everyone signs; the jail no longer halts anything and happens (6 misses left).
      const jailed = await produceBlock(n, [], undefined, { decidedLastCommit: commitOf([]) });
      assert.deepEqual(eventsOf(jailed, 'liveness_guard'), []);
      assert.deepEqual(
        eventsOf(jailed, 'jail').map((e) => e.operator),
        [addr(ops[1]!)],
      );
      assert.deepEqual(updatesOf(jailed), [{ key: keyHex(1), power: 0n }]);
      assert.equal(ex.executionStats().heldBackJails, 1);
    } finally {
      await stopStakingNet(n);
    }
  });
});
