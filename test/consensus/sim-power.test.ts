// The simulator with validator-set changes returned by FinalizeBlock (the path the validator pool
// drives): validator 0's power tripled at height 2 and restored at height 4 take effect at heights
// 4 and 6 (H + 2, as CometBFT) on every honest node, under every fault mix, with no invariant broken.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FAULT_MODES, runSimulation } from '@noded/consensus/src/sim/simulation.js';

describe('simulation with validator-set changes', () => {
  it('applies FinalizeBlock power changes two heights later, safely and live, across the fault mixes', async () => {
    let runs = 0;
    for (const faults of FAULT_MODES) {
      for (let seed = 1; seed <= 6; seed++) {
        const r = await runSimulation({ seed: seed * 97 + faults.length, faults, powerChanges: true });
        assert.deepEqual(r.violations, [], `seed ${r.params.seed} ${faults}`);
        assert.ok(r.heights >= 7, `seed ${r.params.seed} ${faults}: only ${r.heights} heights`);
        const v = r.validatorsHashes;
        // Heights 1-3: the genesis set; 4-5: validator 0 tripled; 6 on: the genesis set again.
        assert.equal(v[1], v[0]);
        assert.equal(v[2], v[0]);
        assert.notEqual(v[3], v[2], `seed ${r.params.seed} ${faults}: the change at 2 is in force at 4`);
        assert.equal(v[4], v[3]);
        assert.equal(v[5], v[0], `seed ${r.params.seed} ${faults}: the change at 4 is in force at 6`);
        runs++;
      }
    }
    assert.equal(runs, 24);
  });
});
