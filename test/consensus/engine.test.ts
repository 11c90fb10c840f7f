// Rule-by-rule tests of the pure engine (line numbers refer to Algorithm 1 of the Tendermint paper).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  blockIdOf,
  createEngine,
  type EngineEffect,
  type EngineEvent,
  nextChainState,
  proposerOf,
  step,
  type WalEntry,
} from '@noded/consensus';
import type { Block, FinalizeBlockResponse } from '@noded/types';
import {
  blockFor,
  config,
  Driver,
  genesis,
  hex,
  nilId,
  nonProposerSetup,
  ofKind,
  signedProposal,
  signedVote,
  testKey,
} from './helpers.js';

const keys = [0, 1, 2, 3].map(testKey);

const setup = nonProposerSetup;

function ownVote(effects: EngineEffect[]) {
  const s = ofKind(effects, 'signVote');
  assert.equal(s.length, 1, `expected one signVote, got ${effects.map((e) => e.kind).join(',')}`);
  return s[0]!.vote;
}

describe('engine: rounds, steps and timeouts', () => {
  it('starts round 0 in Propose with timeout_propose and announces the round', () => {
    const { d } = setup();
    const effs = d.send((now) => ({ kind: 'start', now }));
    assert.equal(d.state.step, 'Propose');
    const t = ofKind(effs, 'scheduleTimeout');
    assert.deepEqual(
      t.map((x) => [x.step, x.round, x.durationMs]),
      [['Propose', 0, 3000]],
    );
    assert.ok(ofKind(effs, 'publish').some((e) => e.event.kind === 'NewRound'));
  });

  it('the proposer asks the application for transactions, builds the block and signs the proposal', () => {
    const chain = genesis(keys);
    const probe = createEngine(config(null), chain, null);
    const proposer = keys.find((k) => hex(k.address) === hex(proposerOf(probe, 0).address))!;
    const d = new Driver(config(proposer), chain);
    const effs = d.send((now) => ({ kind: 'start', now }));
    const req = ofKind(effs, 'requestProposal')[0]!;
    assert.equal(req.time, chain.lastBlockTime, 'the first block carries the genesis time');
    const tx = new TextEncoder().encode('a=1');
    const effs2 = d.send((now) => ({
      kind: 'proposalTxs',
      height: 1,
      round: 0,
      txs: [tx],
      evidence: [],
      now,
    }));
    const sp = ofKind(effs2, 'signProposal')[0]!;
    assert.deepEqual(sp.block.data.txs, [tx]);
    assert.equal(sp.proposal.polRound, -1);
    assert.deepEqual(sp.proposal.blockId, blockIdOf(sp.block));
  });

  it('timeouts grow by their delta each round (propose, prevote, precommit) and timeout_commit ends a height', () => {
    const { d, others, self, keyOf } = setup();
    d.send((now) => ({ kind: 'start', now }));
    // reach round 2 through +1/3 of the votes of round 2 (L55)
    d.vote(signedVote(d.chain, others[0]!, 1, 1, 2, null));
    d.vote(signedVote(d.chain, others[1]!, 2, 1, 2, null));
    assert.equal(d.state.round, 2);
    const timeouts = () => ofKind(d.effects, 'scheduleTimeout').filter((t) => t.round === 2);
    assert.deepEqual(
      timeouts().map((t) => [t.step, t.durationMs]),
      [['Propose', 3000 + 2 * 500]],
    );
    d.signWith(self, d.timeout('Propose'));
    d.vote(signedVote(d.chain, others[2]!, 1, 1, 2, blockIdOf(blockFor(d.chain, keyOf(2)))));
    assert.equal(d.state.step, 'PrevoteWait');
    d.signWith(self, d.timeout('PrevoteWait'));
    d.vote(signedVote(d.chain, others[0]!, 2, 1, 2, null));
    assert.deepEqual(
      timeouts().map((t) => [t.step, t.durationMs]),
      [
        ['Propose', 4000],
        ['PrevoteWait', 1000 + 2 * 500],
        ['PrecommitWait', 1000 + 2 * 500],
      ],
    );
  });

  it('prevotes nil when timeout_propose expires (OnTimeoutPropose)', () => {
    const { d } = setup();
    d.send((now) => ({ kind: 'start', now }));
    const effs = d.timeout('Propose');
    assert.equal(ownVote(effs).blockId.hash.length, 0);
    assert.equal(d.state.step, 'Prevote');
  });

  it('ignores stale timeouts', () => {
    const { d } = setup();
    d.send((now) => ({ kind: 'start', now }));
    d.timeout('Propose');
    assert.deepEqual(d.timeout('Propose'), []);
    assert.deepEqual(d.timeout('PrecommitWait', 5), []);
  });

  it('writes own votes to the WAL with fsync before broadcasting them', () => {
    const { d, self } = setup();
    d.send((now) => ({ kind: 'start', now }));
    const effs = d.signWith(self, d.timeout('Propose'));
    const kinds = effs.map((e) => (e.kind === 'wal' ? `wal:${e.sync}` : e.kind));
    assert.ok(
      kinds.indexOf('wal:true') >= 0 && kinds.indexOf('wal:true') < kinds.indexOf('broadcast'),
      kinds.join(','),
    );
  });
});

describe('engine: the rules of the paper', () => {
  it('L22: prevotes a valid proposal and nil for an invalid one', () => {
    const a = setup();
    a.d.send((now) => ({ kind: 'start', now }));
    const block = blockFor(a.chain, a.keyOf(0));
    const effs = a.d.propose(signedProposal(a.keyOf(0), block, 0), block, true);
    assert.equal(
      ofKind(effs, 'validateBlock').length,
      1,
      'the runtime is asked to validate (app processProposal)',
    );
    assert.deepEqual(ownVote(a.d.effects).blockId, blockIdOf(block));

    const b = setup();
    b.d.send((now) => ({ kind: 'start', now }));
    b.d.propose(signedProposal(b.keyOf(0), block, 0), block, false);
    assert.equal(ownVote(b.d.effects).blockId.hash.length, 0);
  });

  it('refuses a proposal signed by someone other than the round proposer', () => {
    const { d, keyOf } = setup();
    d.send((now) => ({ kind: 'start', now }));
    const block = blockFor(d.chain, keyOf(0));
    // Nothing is accepted or written; the sender is reported as a forger.
    assert.deepEqual(d.propose(signedProposal(keyOf(1), block, 0), block), [
      { kind: 'rejected', reason: 'proposal 1/0: invalid signature of the proposer' },
    ]);
    assert.equal(d.state.proposals.size, 0);
  });

  it('decides on a valid commit certificate and reports a forged one without deciding', () => {
    const { d, keyOf } = setup();
    d.send((now) => ({ kind: 'start', now }));
    const block = blockFor(d.chain, keyOf(0));
    const id = blockIdOf(block);
    // In validator-set order, as a commit lists them.
    const ordered = d.chain.validators.validators.map(
      (v) => keys.find((k) => hex(k.address) === hex(v.address))!,
    );
    const sigs = (forgeFirst: boolean) =>
      ordered.map((k, i) => {
        const v = signedVote(d.chain, k, 2, 1, 0, id);
        const signature = forgeFirst && i < 2 ? new Uint8Array(64).fill(9) : v.signature;
        return { blockIdFlag: 2 as const, validatorAddress: k.address, timestamp: v.timestamp, signature };
      });
    const forged = { height: 1, round: 0, blockId: id, signatures: sigs(true) };
    const effs = d.send((now) => ({ kind: 'commitCert', block, commit: forged, now }));
    const rejected = ofKind(effs, 'rejected');
    assert.equal(rejected.length, 1);
    assert.match(rejected[0]!.reason, /^commit 1: /);
    assert.equal(d.state.decided, false);
    const good = { height: 1, round: 0, blockId: id, signatures: sigs(false) };
    const ok = d.send((now) => ({ kind: 'commitCert', block, commit: good, now }));
    assert.deepEqual(ofKind(ok, 'rejected'), []);
    assert.equal(d.state.decided, true);
  });

  it('L36 + L44: locks and precommits on a polka, precommits nil on a nil polka', () => {
    const { d, others, keyOf } = setup();
    d.send((now) => ({ kind: 'start', now }));
    const block = blockFor(d.chain, keyOf(0));
    const id = blockIdOf(block);
    d.propose(signedProposal(keyOf(0), block, 0), block);
    for (const k of others) d.vote(signedVote(d.chain, k, 1, 1, 0, id));
    assert.equal(d.state.lockedRound, 0);
    assert.equal(d.state.validRound, 0);
    assert.deepEqual(ofKind(d.effects, 'signVote').at(-1)!.vote.type, 2);
    assert.deepEqual(ofKind(d.effects, 'signVote').at(-1)!.vote.blockId, id);

    const n = setup();
    n.d.send((now) => ({ kind: 'start', now }));
    n.d.timeout('Propose');
    for (const k of n.others) n.d.vote(signedVote(n.d.chain, k, 1, 1, 0, null));
    const pc = ofKind(n.d.effects, 'signVote').at(-1)!.vote;
    assert.equal(pc.type, 2);
    assert.equal(pc.blockId.hash.length, 0);
    assert.equal(n.d.state.lockedRound, -1);
  });

  it('L34/PrevoteWait: +2/3 mixed prevotes wait timeout_prevote, then precommit nil', () => {
    const { d, others, self, keyOf } = setup();
    d.send((now) => ({ kind: 'start', now }));
    const block = blockFor(d.chain, keyOf(0));
    d.signWith(self, d.timeout('Propose'));
    d.vote(signedVote(d.chain, others[0]!, 1, 1, 0, blockIdOf(block)));
    d.vote(signedVote(d.chain, others[1]!, 1, 1, 0, null));
    assert.equal(d.state.step, 'PrevoteWait');
    const effs = d.timeout('PrevoteWait');
    assert.equal(ownVote(effs).type, 2);
    assert.equal(ownVote(effs).blockId.hash.length, 0);
  });

  it('L47/L65: +2/3 precommits of any kind start timeout_precommit, whose expiry starts the next round', () => {
    const { d, others } = setup();
    d.send((now) => ({ kind: 'start', now }));
    d.timeout('Propose');
    for (const k of others) d.vote(signedVote(d.chain, k, 2, 1, 0, null));
    assert.equal(d.state.triggeredPrecommitWait, true);
    d.timeout('PrecommitWait');
    assert.equal(d.state.round, 1);
    assert.equal(d.state.step, 'Propose');
  });

  it('L49: +2/3 precommits for a block decide it with their commit, in any round', () => {
    const { d, others, keyOf } = setup();
    d.send((now) => ({ kind: 'start', now }));
    const block = blockFor(d.chain, keyOf(0));
    const id = blockIdOf(block);
    d.propose(signedProposal(keyOf(0), block, 0), block);
    // the node moved on to round 1 meanwhile; late precommits of round 0 still decide
    d.vote(signedVote(d.chain, others[0]!, 1, 1, 1, null));
    d.vote(signedVote(d.chain, others[1]!, 1, 1, 1, null));
    assert.equal(d.state.round, 1);
    for (const k of others) d.vote(signedVote(d.chain, k, 2, 1, 0, id));
    const dec = ofKind(d.effects, 'decide');
    assert.equal(dec.length, 1);
    assert.equal(dec[0]!.round, 0);
    assert.deepEqual(dec[0]!.blockId, id);
    assert.equal(dec[0]!.commit.signatures.filter((s) => s.blockIdFlag === 2).length, 3);
    assert.equal(d.state.step, 'Commit');
  });

  it('L55: skips to a higher round on +1/3 of its votes, not on less', () => {
    const { d, others } = setup();
    d.send((now) => ({ kind: 'start', now }));
    d.vote(signedVote(d.chain, others[0]!, 1, 1, 4, null));
    assert.equal(d.state.round, 0, '1/4 of the power is not more than 1/3');
    d.vote(signedVote(d.chain, others[1]!, 2, 1, 4, null));
    assert.equal(d.state.round, 4);
  });

  it('keeps its lock: a locked validator prevotes nil for a different fresh proposal', () => {
    const { d, others, keyOf } = setup();
    d.send((now) => ({ kind: 'start', now }));
    const b0 = blockFor(d.chain, keyOf(0), 'zero');
    d.propose(signedProposal(keyOf(0), b0, 0), b0);
    for (const k of others) d.vote(signedVote(d.chain, k, 1, 1, 0, blockIdOf(b0)));
    assert.equal(d.state.lockedRound, 0);
    for (const k of others) d.vote(signedVote(d.chain, k, 2, 1, 0, null));
    d.timeout('PrecommitWait');
    assert.equal(d.state.round, 1);
    const b1 = blockFor(d.chain, keyOf(1), 'one');
    d.propose(signedProposal(keyOf(1), b1, 1), b1);
    const pv = ofKind(d.effects, 'signVote').at(-1)!.vote;
    assert.equal(pv.round, 1);
    assert.equal(pv.blockId.hash.length, 0, 'locked on b0, so nil for b1');
    // ... but prevotes its locked value when it is proposed again (L22, lockedValue = v)
  });

  it('unlocks on a higher POL (L28): prevotes a re-proposal with polRound >= lockedRound', () => {
    const { d, others, keyOf } = setup();
    d.send((now) => ({ kind: 'start', now }));
    const b0 = blockFor(d.chain, keyOf(0), 'zero');
    d.propose(signedProposal(keyOf(0), b0, 0), b0);
    for (const k of others) d.vote(signedVote(d.chain, k, 1, 1, 0, blockIdOf(b0)));
    for (const k of others) d.vote(signedVote(d.chain, k, 2, 1, 0, null));
    d.timeout('PrecommitWait');
    // round 1: a polka for b1 that this node saw only after moving on
    const b1 = blockFor(d.chain, keyOf(1), 'one');
    const id1 = blockIdOf(b1);
    for (const k of others) d.vote(signedVote(d.chain, k, 1, 1, 1, id1));
    for (const k of others) d.vote(signedVote(d.chain, k, 2, 1, 1, null));
    d.timeout('PrecommitWait', 1);
    assert.equal(d.state.round, 2);
    assert.equal(d.state.lockedRound, 0);
    // round 2: b1 re-proposed with POL round 1 > lockedRound 0
    const before = ofKind(d.effects, 'signVote').length;
    d.propose(signedProposal(keyOf(2), b1, 2, 1), b1);
    const votes = ofKind(d.effects, 'signVote').slice(before);
    assert.equal(votes.length, 1);
    assert.deepEqual(votes[0]!.vote.blockId, id1);
    assert.equal(votes[0]!.vote.round, 2);
  });

  it('refuses a re-proposal whose POL round is below its lock (L28 condition)', () => {
    const { d, others, keyOf } = setup();
    d.send((now) => ({ kind: 'start', now }));
    const bx = blockFor(d.chain, keyOf(0), 'x');
    // polka for bx at round 0 (seen), lock on by at round 1
    for (const k of others) d.vote(signedVote(d.chain, k, 1, 1, 0, blockIdOf(bx)));
    d.timeout('Propose');
    for (const k of others) d.vote(signedVote(d.chain, k, 2, 1, 0, null));
    d.timeout('PrecommitWait');
    const by = blockFor(d.chain, keyOf(1), 'y');
    d.propose(signedProposal(keyOf(1), by, 1), by);
    for (const k of others) d.vote(signedVote(d.chain, k, 1, 1, 1, blockIdOf(by)));
    assert.equal(d.state.lockedRound, 1);
    for (const k of others) d.vote(signedVote(d.chain, k, 2, 1, 1, null));
    d.timeout('PrecommitWait', 1);
    const before = ofKind(d.effects, 'signVote').length;
    d.propose(signedProposal(keyOf(2), bx, 2, 0), bx);
    const v = ofKind(d.effects, 'signVote').slice(before)[0]!.vote;
    assert.equal(v.blockId.hash.length, 0, 'POL round 0 < locked round 1 -> nil');
  });

  it('a proposer holding a valid value re-proposes it with its POL round', () => {
    const chain = genesis(keys);
    const probe = createEngine(config(null), chain, null);
    const p0 = keys.find((k) => hex(k.address) === hex(proposerOf(probe, 0).address))!;
    const p1 = keys.find((k) => hex(k.address) === hex(proposerOf(probe, 1).address))!;
    const d = new Driver(config(p1), chain);
    const others = keys.filter((k) => k !== p1);
    d.send((now) => ({ kind: 'start', now }));
    const b0 = blockFor(chain, p0);
    d.propose(signedProposal(p0, b0, 0), b0);
    for (const k of others) d.vote(signedVote(chain, k, 1, 1, 0, blockIdOf(b0)));
    for (const k of others) d.vote(signedVote(chain, k, 2, 1, 0, null));
    d.timeout('PrecommitWait');
    const sp = ofKind(d.effects, 'signProposal').at(-1)!;
    assert.equal(sp.proposal.round, 1);
    assert.equal(sp.proposal.polRound, 0);
    assert.deepEqual(sp.proposal.blockId, blockIdOf(b0));
    assert.equal(ofKind(d.effects, 'requestProposal').length, 0);
  });

  it('reports conflicting votes of one validator', () => {
    const { d, others, keyOf } = setup();
    d.send((now) => ({ kind: 'start', now }));
    const block = blockFor(d.chain, keyOf(0));
    d.vote(signedVote(d.chain, others[0]!, 1, 1, 0, null));
    const effs = d.vote(signedVote(d.chain, others[0]!, 1, 1, 0, blockIdOf(block)));
    assert.equal(ofKind(effs, 'conflictingVotes').length, 1);
  });

  it('after commit: next height in NewHeight, timeout_commit scheduled, late precommits join the last commit', () => {
    const { d, others, keyOf, chain } = setup();
    d.send((now) => ({ kind: 'start', now }));
    const block = blockFor(chain, keyOf(0));
    const id = blockIdOf(block);
    d.propose(signedProposal(keyOf(0), block, 0), block);
    for (const k of others.slice(0, 3)) d.vote(signedVote(chain, k, 2, 1, 0, id));
    const dec = ofKind(d.effects, 'decide')[0]!;
    const next = nextChainState(chain, block, id, emptyResult(chain));
    const effs = d.send((now) => ({ kind: 'committed', chain: next, now }));
    assert.equal(d.state.height, 2);
    assert.equal(d.state.step, 'NewHeight');
    // timeout_commit counts from the decision (CometBFT's StartTime = CommitTime + timeout_commit);
    // the driver's clock advanced 10 ms between the decision and the commit.
    assert.deepEqual(
      ofKind(effs, 'scheduleTimeout').map((t) => [t.step, t.durationMs]),
      [['NewHeight', 1000 - 10]],
    );
    assert.equal(d.state.lastCommit!.sum, 30n);
    void dec;
  });

  it('replaying its WAL entries into a fresh engine rebuilds the same round state', () => {
    const { d, others, keyOf, chain, self } = setup();
    d.send((now) => ({ kind: 'start', now }));
    const block = blockFor(chain, keyOf(0));
    d.signWith(self, d.propose(signedProposal(keyOf(0), block, 0), block));
    for (const k of others) d.signWith(self, d.vote(signedVote(chain, k, 1, 1, 0, blockIdOf(block))));
    const entries = ofKind(d.effects, 'wal').map((w) => w.entry);
    let fresh = createEngine(config(self), chain, null);
    fresh = step(fresh, { kind: 'start', now: entries[0]!.now }).state;
    for (const e of entries) fresh = step(fresh, e as EngineEvent).state;
    assert.equal(fresh.round, d.state.round);
    assert.equal(fresh.step, d.state.step);
    assert.equal(fresh.lockedRound, d.state.lockedRound);
    assert.equal(fresh.votes.prevotes(0).sum, d.state.votes.prevotes(0).sum);
    assert.equal(fresh.votes.precommits(0).sum, d.state.votes.precommits(0).sum);
    assert.ok(entries.some((e: WalEntry) => e.kind === 'ownVote'));
  });

  it('with create_empty_blocks = false waits at round 0 for transactions unless a proof block is needed', () => {
    const chain = genesis(keys);
    const probe = createEngine(config(null), chain, null);
    const p = keys.find((k) => hex(k.address) === hex(proposerOf(probe, 0).address))!;
    const block = blockFor(chain, p);
    const id = blockIdOf(block);
    // height 2 with an unchanged app hash: no proof block needed
    const next = nextChainState(chain, block, id, { ...emptyResult(chain), appHash: chain.appHash });
    const d = new Driver(config(keys[0]!, { createEmptyBlocks: false }), {
      ...next,
      lastBlockAppHash: chain.appHash,
    });
    d.send((now) => ({ kind: 'start', now }));
    assert.equal(d.state.step, 'NewRound');
    d.send((now) => ({ kind: 'txsAvailable', now }));
    assert.equal(d.state.step, 'Propose');
    // height 1 always needs a proof block
    const d1 = new Driver(config(keys[0]!, { createEmptyBlocks: false }), chain);
    d1.send((now) => ({ kind: 'start', now }));
    assert.equal(d1.state.step, 'Propose');
  });
});

describe('engine: the rules at their edges', () => {
  /** The scheduleTimeout effects of one step, as [step, round]. */
  const scheduled = (effs: EngineEffect[]) => ofKind(effs, 'scheduleTimeout').map((t) => [t.step, t.round]);

  it('L22: a validator locked on a block prevotes it when it is proposed again without a POL round', () => {
    const { d, others, keyOf } = setup();
    d.send((now) => ({ kind: 'start', now }));
    const b0 = blockFor(d.chain, keyOf(0), 'zero');
    d.propose(signedProposal(keyOf(0), b0, 0), b0);
    for (const k of others) d.vote(signedVote(d.chain, k, 1, 1, 0, blockIdOf(b0)));
    for (const k of others) d.vote(signedVote(d.chain, k, 2, 1, 0, null));
    d.timeout('PrecommitWait');
    assert.equal(d.state.lockedRound, 0);
    const effs = d.propose(signedProposal(keyOf(1), b0, 1), b0);
    const pv = ownVote(effs);
    assert.deepEqual([pv.type, pv.round], [1, 1]);
    assert.deepEqual(pv.blockId, blockIdOf(b0), 'locked on b0 and b0 proposed: prevote b0');
  });

  it('L28: waits in Propose for the POL prevotes, then prevotes; an invalid re-proposal gets nil', () => {
    for (const valid of [true, false]) {
      const { d, others, keyOf } = setup();
      d.send((now) => ({ kind: 'start', now }));
      const b = blockFor(d.chain, keyOf(0), 'pol');
      const id = blockIdOf(b);
      // Round 0 ends with precommits for nil; two prevotes for b are seen, not a polka.
      d.timeout('Propose');
      d.vote(signedVote(d.chain, others[0]!, 1, 1, 0, id));
      d.vote(signedVote(d.chain, others[1]!, 1, 1, 0, id));
      for (const k of others) d.vote(signedVote(d.chain, k, 2, 1, 0, null));
      d.timeout('PrecommitWait');
      assert.equal(d.state.round, 1);
      const before = ofKind(d.effects, 'signVote').length;
      d.propose(signedProposal(keyOf(1), b, 1, 0), b, valid);
      assert.equal(d.state.step, 'Propose', 'no +2/3 prevotes at the POL round yet');
      assert.equal(ofKind(d.effects, 'signVote').length, before);
      // The third prevote of round 0 completes the POL.
      d.vote(signedVote(d.chain, others[2]!, 1, 1, 0, id));
      const votes = ofKind(d.effects, 'signVote').slice(before);
      assert.equal(votes.length, 1, `valid=${valid}`);
      assert.deepEqual([votes[0]!.vote.type, votes[0]!.vote.round], [1, 1]);
      assert.deepEqual(votes[0]!.vote.blockId, valid ? id : nilId(), `valid=${valid}`);
      assert.equal(d.state.step, 'Prevote');
    }
  });

  it('L28: locked in a round after the POL round on the same block, it still prevotes the block', () => {
    const { d, others, keyOf } = setup();
    d.send((now) => ({ kind: 'start', now }));
    const b = blockFor(d.chain, keyOf(0), 'same');
    const id = blockIdOf(b);
    // Round 0: a polka for b that this node did not use (it had timed out to nil).
    d.timeout('Propose');
    for (const k of others) d.vote(signedVote(d.chain, k, 1, 1, 0, id));
    for (const k of others) d.vote(signedVote(d.chain, k, 2, 1, 0, null));
    d.timeout('PrecommitWait');
    // Round 1: b proposed with POL round 0, locked on in round 1.
    d.propose(signedProposal(keyOf(1), b, 1, 0), b);
    for (const k of others) d.vote(signedVote(d.chain, k, 1, 1, 1, id));
    assert.equal(d.state.lockedRound, 1);
    for (const k of others) d.vote(signedVote(d.chain, k, 2, 1, 1, null));
    d.timeout('PrecommitWait', 1);
    // Round 2: b again with POL round 0 < locked round 1, but it is the locked block.
    const before = ofKind(d.effects, 'signVote').length;
    d.propose(signedProposal(keyOf(2), b, 2, 0), b);
    const v = ofKind(d.effects, 'signVote').slice(before)[0]!.vote;
    assert.deepEqual([v.type, v.round], [1, 2]);
    assert.deepEqual(v.blockId, id);
  });

  it('L36 after Prevote: a late polka sets the valid block, not the lock, and signs nothing', () => {
    const { d, others, self, keyOf } = setup();
    d.send((now) => ({ kind: 'start', now }));
    const b = blockFor(d.chain, keyOf(0));
    const id = blockIdOf(b);
    const ownPrevote = d.propose(signedProposal(keyOf(0), b, 0), b);
    assert.deepEqual(ownVote(d.effects).blockId, id);
    d.vote(signedVote(d.chain, others[0]!, 1, 1, 0, id));
    d.vote(signedVote(d.chain, others[1]!, 1, 1, 0, id));
    d.vote(signedVote(d.chain, others[2]!, 1, 1, 0, null));
    assert.equal(d.state.step, 'PrevoteWait');
    const pc = d.timeout('PrevoteWait');
    assert.deepEqual(ownVote(pc).blockId, nilId());
    assert.equal(d.state.step, 'Precommit');
    // Its own prevote for b arrives (signed late): now 30 of 40 prevoted b.
    const before = ofKind(d.effects, 'signVote').length;
    d.signWith(self, ownPrevote);
    assert.equal(d.state.validRound, 0);
    assert.equal(d.state.validBlock!.key, d.state.proposals.get(0)!.key);
    assert.equal(d.state.lockedRound, -1);
    assert.equal(d.state.lockedBlock, null);
    assert.equal(d.state.step, 'Precommit');
    assert.equal(ofKind(d.effects, 'signVote').length, before);
  });

  it('L44 from PrevoteWait: the vote completing a nil polka precommits nil at once', () => {
    const { d, others, self, keyOf } = setup();
    d.send((now) => ({ kind: 'start', now }));
    const ownNil = d.timeout('Propose');
    const id = blockIdOf(blockFor(d.chain, keyOf(0)));
    d.vote(signedVote(d.chain, others[0]!, 1, 1, 0, id));
    d.vote(signedVote(d.chain, others[1]!, 1, 1, 0, null));
    const wait = d.vote(signedVote(d.chain, others[2]!, 1, 1, 0, null));
    assert.equal(d.state.step, 'PrevoteWait');
    assert.deepEqual(scheduled(wait), [['PrevoteWait', 0]], 'timeout_prevote is scheduled once');
    const effs = d.signWith(self, ownNil);
    const pc = ofKind(effs, 'signVote');
    assert.equal(pc.length, 1);
    assert.deepEqual([pc[0]!.vote.type, pc[0]!.vote.blockId], [2, nilId()]);
    assert.equal(d.state.step, 'Precommit');
    assert.deepEqual(scheduled(effs), [], 'no second timeout_prevote');
  });

  it('L47: from Prevote the wait is scheduled once without a step change; from Precommit it is PrecommitWait', () => {
    const a = setup();
    a.d.send((now) => ({ kind: 'start', now }));
    a.d.timeout('Propose');
    a.d.vote(signedVote(a.d.chain, a.others[0]!, 2, 1, 0, null));
    a.d.vote(signedVote(a.d.chain, a.others[1]!, 2, 1, 0, null));
    const effs = a.d.vote(signedVote(a.d.chain, a.others[2]!, 2, 1, 0, null));
    assert.deepEqual(scheduled(effs), [['PrecommitWait', 0]]);
    assert.equal(a.d.state.step, 'Prevote');
    assert.equal(a.d.state.triggeredPrecommitWait, true);
    assert.equal(
      ofKind(effs, 'publish').filter((e) => e.event.kind === 'NewRoundStep').length,
      0,
      'the step did not change',
    );

    const b = setup();
    b.d.send((now) => ({ kind: 'start', now }));
    b.d.timeout('Propose');
    for (const k of b.others) b.d.vote(signedVote(b.d.chain, k, 1, 1, 0, null));
    assert.equal(b.d.state.step, 'Precommit');
    b.d.vote(signedVote(b.d.chain, b.others[0]!, 2, 1, 0, null));
    b.d.vote(signedVote(b.d.chain, b.others[1]!, 2, 1, 0, null));
    const effs2 = b.d.vote(signedVote(b.d.chain, b.others[2]!, 2, 1, 0, null));
    assert.deepEqual(scheduled(effs2), [['PrecommitWait', 0]]);
    assert.equal(b.d.state.step, 'PrecommitWait');
    assert.ok(
      ofKind(effs2, 'publish').some(
        (e) => e.event.kind === 'NewRoundStep' && e.event.step === 'RoundStepPrecommitWait',
      ),
    );
  });

  it('L49 before the block: commits once the proposal arrives; precommits for another part set never decide', () => {
    const { d, others, keyOf } = setup();
    d.send((now) => ({ kind: 'start', now }));
    const b = blockFor(d.chain, keyOf(0));
    const id = blockIdOf(b);
    for (const k of others) d.vote(signedVote(d.chain, k, 2, 1, 0, id));
    assert.equal(d.state.step, 'Commit');
    assert.equal(d.state.commitRound, 0);
    assert.equal(d.state.decided, false);
    assert.equal(ofKind(d.effects, 'decide').length, 0);
    d.propose(signedProposal(keyOf(0), b, 0), b);
    const dec = ofKind(d.effects, 'decide');
    assert.equal(dec.length, 1);
    assert.deepEqual(dec[0]!.blockId, id);
    assert.equal(d.state.decided, true);

    // +2/3 precommits for the block's hash with another part set header: the block held is not it.
    const o = setup();
    o.d.send((now) => ({ kind: 'start', now }));
    const other = {
      hash: id.hash,
      partSetHeader: { total: id.partSetHeader.total + 1, hash: id.partSetHeader.hash },
    };
    o.d.propose(signedProposal(o.keyOf(0), b, 0), b);
    for (const k of o.others) o.d.vote(signedVote(o.d.chain, k, 2, 1, 0, other));
    assert.equal(o.d.state.step, 'Commit');
    assert.equal(o.d.state.decided, false);
    assert.equal(ofKind(o.d.effects, 'decide').length, 0);
  });

  it('one event applies every rule it enables: the validation completing L22 also applies L36', () => {
    const { d, others, keyOf } = setup();
    d.send((now) => ({ kind: 'start', now }));
    const b = blockFor(d.chain, keyOf(0));
    const id = blockIdOf(b);
    for (const k of others) d.vote(signedVote(d.chain, k, 1, 1, 0, id));
    assert.equal(d.state.step, 'Propose', 'a polka without the proposal does not move Propose');
    const effs = d.propose(signedProposal(keyOf(0), b, 0), b);
    const signs = ofKind(effs, 'signVote').map((e) => [e.vote.type, hex(e.vote.blockId.hash)]);
    assert.deepEqual(signs, [
      [1, hex(id.hash)],
      [2, hex(id.hash)],
    ]);
    assert.equal(d.state.lockedRound, 0);
    assert.equal(d.state.step, 'Precommit');
  });

  it('L36 in Prevote goes straight to Precommit; in PrevoteWait it locks too; never on an invalid block', () => {
    const a = setup();
    a.d.send((now) => ({ kind: 'start', now }));
    const b = blockFor(a.d.chain, a.keyOf(0));
    const id = blockIdOf(b);
    a.d.propose(signedProposal(a.keyOf(0), b, 0), b);
    a.d.vote(signedVote(a.d.chain, a.others[0]!, 1, 1, 0, id));
    a.d.vote(signedVote(a.d.chain, a.others[1]!, 1, 1, 0, id));
    const polka = a.d.vote(signedVote(a.d.chain, a.others[2]!, 1, 1, 0, id));
    assert.deepEqual(scheduled(polka), [], 'no timeout_prevote on the way');
    assert.deepEqual(
      ofKind(polka, 'publish')
        .filter((e) => e.event.kind === 'NewRoundStep')
        .map((e) => (e.event.kind === 'NewRoundStep' ? e.event.step : '')),
      ['RoundStepPrecommit'],
    );

    // PrevoteWait first (two for the block, one nil), then this node's own prevote completes the polka.
    const w = setup();
    w.d.send((now) => ({ kind: 'start', now }));
    const own = w.d.propose(signedProposal(w.keyOf(0), b, 0), b);
    w.d.vote(signedVote(w.d.chain, w.others[0]!, 1, 1, 0, id));
    w.d.vote(signedVote(w.d.chain, w.others[1]!, 1, 1, 0, id));
    w.d.vote(signedVote(w.d.chain, w.others[2]!, 1, 1, 0, null));
    assert.equal(w.d.state.step, 'PrevoteWait');
    const effs = w.d.signWith(w.self, own);
    const pc = ofKind(effs, 'signVote');
    assert.equal(pc.length, 1);
    assert.deepEqual([pc[0]!.vote.type, pc[0]!.vote.blockId], [2, id]);
    assert.equal(w.d.state.lockedRound, 0);
    assert.equal(w.d.state.validRound, 0);

    // The same polka for a block the application refused: no lock, no precommit for it.
    const n = setup();
    n.d.send((now) => ({ kind: 'start', now }));
    n.d.propose(signedProposal(n.keyOf(0), b, 0), b, false);
    for (const k of n.others) n.d.vote(signedVote(n.d.chain, k, 1, 1, 0, id));
    assert.equal(n.d.state.lockedRound, -1);
    assert.equal(n.d.state.validRound, -1);
    assert.equal(n.d.state.step, 'PrevoteWait');
    assert.ok(ofKind(n.d.effects, 'signVote').every((e) => e.vote.type === 1));
  });

  it('L44 only from Prevote and PrevoteWait: a nil polka in Propose waits, and in Precommit signs nothing more', () => {
    const { d, others, self } = setup();
    d.send((now) => ({ kind: 'start', now }));
    for (const k of others) d.vote(signedVote(d.chain, k, 1, 1, 0, null));
    assert.equal(d.state.step, 'Propose');
    assert.equal(ofKind(d.effects, 'signVote').length, 0);
    const ownNil = d.timeout('Propose');
    // Timing out in Propose prevotes nil, and the nil polka already there precommits nil at once.
    assert.deepEqual(
      ofKind(ownNil, 'signVote').map((e) => e.vote.type),
      [1, 2],
    );
    assert.deepEqual(scheduled(ownNil), [], 'straight to Precommit, no timeout_prevote on the way');
    assert.equal(d.state.step, 'Precommit');
    const later = d.signWith(self, ownNil);
    assert.equal(ofKind(later, 'signVote').length, 0, 'no second precommit');
    assert.equal(d.state.step, 'Precommit');
  });

  it('L47 while waiting for transactions in NewRound', () => {
    const chain = genesis(keys);
    const probe = createEngine(config(null), chain, null);
    const p = keys.find((k) => hex(k.address) === hex(proposerOf(probe, 0).address))!;
    const block = blockFor(chain, p);
    const next = nextChainState(chain, block, blockIdOf(block), {
      ...emptyResult(chain),
      appHash: chain.appHash,
    });
    const h2 = { ...next, lastBlockAppHash: chain.appHash };
    const d = new Driver(config(null, { createEmptyBlocks: false }), h2);
    d.send((now) => ({ kind: 'start', now }));
    assert.equal(d.state.step, 'NewRound');
    const voters = keys.slice(0, 3);
    d.vote(signedVote(h2, voters[0]!, 2, 2, 0, null));
    d.vote(signedVote(h2, voters[1]!, 2, 2, 0, null));
    const effs = d.vote(signedVote(h2, voters[2]!, 2, 2, 0, null));
    assert.deepEqual(scheduled(effs), [['PrecommitWait', 0]]);
    assert.equal(d.state.step, 'NewRound');
  });

  it('between heights (NewHeight) and once in Commit, votes apply no rule', () => {
    const { d, others, keyOf, chain } = setup();
    d.send((now) => ({ kind: 'start', now }));
    const block = blockFor(chain, keyOf(0));
    const id = blockIdOf(block);
    for (const k of others) d.vote(signedVote(chain, k, 2, 1, 0, id));
    assert.equal(d.state.step, 'Commit');
    // In Commit, waiting for the block: a prevote changes nothing.
    const inCommit = d.vote(signedVote(chain, others[0]!, 1, 1, 0, id));
    assert.deepEqual(
      inCommit.map((e) => e.kind),
      ['wal', 'publish'],
    );
    d.propose(signedProposal(keyOf(0), block, 0), block);
    assert.equal(ofKind(d.effects, 'decide').length, 1);
    const next = nextChainState(chain, block, id, emptyResult(chain));
    d.send((now) => ({ kind: 'committed', chain: next, now }));
    assert.equal(d.state.step, 'NewHeight');
    // +1/3 of round 1 and +2/3 precommits of round 0 at height 2 before timeout_commit: still NewHeight.
    const before = d.effects.length;
    d.vote(signedVote(next, others[0]!, 1, 2, 1, null));
    d.vote(signedVote(next, others[1]!, 1, 2, 1, null));
    for (const k of others) d.vote(signedVote(next, k, 2, 2, 0, null));
    assert.equal(d.state.step, 'NewHeight');
    assert.equal(d.state.round, 0);
    const kinds = new Set(d.effects.slice(before).map((e) => e.kind));
    assert.deepEqual([...kinds].sort(), ['publish', 'wal']);
    assert.deepEqual(scheduled(d.effects.slice(before)), []);
  });

  it('the validation completing L28 also applies L36 in the same event', () => {
    const { d, others, keyOf } = setup();
    d.send((now) => ({ kind: 'start', now }));
    const b = blockFor(d.chain, keyOf(0), 'pol');
    const id = blockIdOf(b);
    // Round 0: a polka for b this node did not use; round 1: a polka for b before the proposal.
    d.timeout('Propose');
    for (const k of others) d.vote(signedVote(d.chain, k, 1, 1, 0, id));
    for (const k of others) d.vote(signedVote(d.chain, k, 2, 1, 0, null));
    d.timeout('PrecommitWait');
    for (const k of others) d.vote(signedVote(d.chain, k, 1, 1, 1, id));
    assert.equal(d.state.round, 1);
    const effs = d.propose(signedProposal(keyOf(1), b, 1, 0), b);
    assert.deepEqual(
      ofKind(effs, 'signVote').map((e) => [e.vote.type, e.vote.round, hex(e.vote.blockId.hash)]),
      [
        [1, 1, hex(id.hash)],
        [2, 1, hex(id.hash)],
      ],
    );
    assert.equal(d.state.lockedRound, 1);
  });

  it('L36 needs step >= Prevote: a polka seen while Propose waits for a POL sets no valid block', () => {
    const { d, others, keyOf } = setup();
    d.send((now) => ({ kind: 'start', now }));
    const b = blockFor(d.chain, keyOf(0), 'pol');
    const id = blockIdOf(b);
    // Round 0: two prevotes for b, not a POL.
    d.timeout('Propose');
    d.vote(signedVote(d.chain, others[0]!, 1, 1, 0, id));
    d.vote(signedVote(d.chain, others[1]!, 1, 1, 0, id));
    for (const k of others) d.vote(signedVote(d.chain, k, 2, 1, 0, null));
    d.timeout('PrecommitWait');
    // Round 1: b re-proposed with POL round 0 (incomplete), then a polka for b in round 1.
    d.propose(signedProposal(keyOf(1), b, 1, 0), b);
    for (const k of others) d.vote(signedVote(d.chain, k, 1, 1, 1, id));
    assert.equal(d.state.step, 'Propose');
    assert.equal(d.state.validRound, -1);
    assert.equal(d.state.validBlock, null);
    assert.equal(d.state.polkaSeen, false);
  });

  it('L55: votes of the current or an earlier round never skip', () => {
    const { d, others } = setup();
    d.send((now) => ({ kind: 'start', now }));
    d.vote(signedVote(d.chain, others[0]!, 1, 1, 2, null));
    d.vote(signedVote(d.chain, others[1]!, 1, 1, 2, null));
    assert.equal(d.state.round, 2);
    const before = ofKind(d.effects, 'publish').filter((e) => e.event.kind === 'NewRound').length;
    d.vote(signedVote(d.chain, others[0]!, 2, 1, 1, null));
    d.vote(signedVote(d.chain, others[1]!, 2, 1, 1, null));
    d.vote(signedVote(d.chain, others[2]!, 1, 1, 2, null));
    assert.equal(d.state.round, 2);
    assert.equal(ofKind(d.effects, 'publish').filter((e) => e.event.kind === 'NewRound').length, before);
  });
});

function emptyResult(chain: { appHash: Uint8Array }): FinalizeBlockResponse {
  return {
    events: [],
    txResults: [],
    validatorUpdates: [],
    consensusParamUpdates: null,
    appHash: new Uint8Array([...chain.appHash].reverse()),
  };
}

export type { Block };
