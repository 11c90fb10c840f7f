// A short kill -9 storm in CI (6 kills); `npm run storm -- --kills 100` runs the long one.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { runStorm } from './storm.js';

describe('kill -9 storm on 4 validators', { timeout: 600_000 }, () => {
  it('keeps every node on one chain with every receipt, and no validator signs twice', async () => {
    const seed = Number(process.env.NODED_STORM_SEED ?? 7);
    const r = await runStorm({ kills: 6, seed, maxPauseMs: 2000 });
    assert.equal(r.killed.length, 6);
    assert.ok(r.receiptsChecked > 0, `no transfer got a receipt during the storm (seed ${seed})`);
    assert.equal(r.blocksWithEvidence, 0, `seed ${seed}: duplicate-vote evidence was committed`);
    assert.equal(r.conflictingVoteLines, 0, `seed ${seed}: a node saw conflicting votes`);
  });
});
