// The engine's event handlers, through step(): what each input is checked for, what it records in
// the WAL (and whether with fsync), what it emits, and what it must leave alone (another height, a
// stale round, a duplicate, a forged input). engine.test.ts covers the paper's rules; this file the
// handlers in front of them, including the resume of a replayed round on `start`.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  blockIdOf,
  createEngine,
  decodeBlockSyncMessage,
  type EngineEffect,
  type EngineEvent,
  encodeBlock,
  encodeCommit,
  genesisChainState,
  makeBlock,
  nextChainState,
  proposerOf,
  step,
  voteExtensionSignBytes,
} from '@noded/consensus';
import { ProtoWriter } from '@noded/consensus/src/codec/proto.js';
import { blockBytes, blockSize } from '@noded/consensus/src/hash.js';
import { ed25519Sign, sha256 } from '@noded/crypto';
import type { Block, Commit, FinalizeBlockResponse, Proposal, Vote } from '@noded/types';
import {
  blockFor,
  CHAIN_ID,
  config,
  Driver,
  GENESIS_TIME,
  genesis,
  hex,
  MS,
  nonProposerSetup,
  ofKind,
  PARAMS,
  signedProposal,
  signedVote,
  type TestKey,
  testKey,
  validatorsOf,
} from './helpers.js';

const keys = [0, 1, 2, 3].map(testKey);

const setup = nonProposerSetup;

/** The proposer of round 0 driving its own engine. */
function proposerSetup() {
  const chain = genesis(keys);
  const probe = createEngine(config(null), chain, null);
  const me = keys.find((k) => hex(k.address) === hex(proposerOf(probe, 0).address))!;
  return { chain, me, others: keys.filter((k) => k !== me), d: new Driver(config(me), chain) };
}

const kinds = (effs: EngineEffect[]) =>
  effs.map((e) => (e.kind === 'wal' ? `wal:${e.entry.kind}:${e.sync}` : e.kind));
const walOf = (effs: EngineEffect[]) => ofKind(effs, 'wal');

function emptyResult(chain: { appHash: Uint8Array }): FinalizeBlockResponse {
  return {
    events: [],
    txResults: [],
    validatorUpdates: [],
    consensusParamUpdates: null,
    appHash: new Uint8Array([...chain.appHash].reverse()),
  };
}

describe('engine handlers: timeouts', () => {
  it('each timeout applies only at its height, round and steps, and is written to the WAL when it does', () => {
    const { d, self } = setup();
    // NewHeight timeout: only in NewHeight.
    const nh = d.timeout('NewHeight');
    assert.deepEqual(kinds(nh).slice(0, 1), ['wal:timeout:false']);
    assert.equal(d.state.step, 'Propose');
    assert.deepEqual(d.timeout('NewHeight'), [], 'not in Propose');
    // Propose: another height or round changes nothing.
    const other = (ev: Partial<Extract<EngineEvent, { kind: 'timeout' }>>) =>
      d.send((now) => ({ kind: 'timeout', height: 1, round: 0, step: 'Propose', now, ...ev }));
    assert.deepEqual(other({ height: 2 }), []);
    assert.deepEqual(other({ round: 1 }), []);
    assert.deepEqual(other({ step: 'PrevoteWait' }), [], 'PrevoteWait in Propose');
    assert.deepEqual(other({ step: 'PrecommitWait', round: 1 }), [], 'PrecommitWait of another round');
    const pr = d.timeout('Propose');
    assert.equal(walOf(pr).length, 1);
    assert.deepEqual(walOf(pr)[0]!.entry, {
      kind: 'timeout',
      height: 1,
      round: 0,
      step: 'Propose',
      now: d.now,
    });
    assert.equal(d.state.step, 'Prevote');
    d.signWith(self, pr);
    assert.deepEqual(d.timeout('Propose'), [], 'not in Prevote');
    // PrevoteWait: from Prevote (its round only) to Precommit nil.
    assert.deepEqual(other({ step: 'PrevoteWait', round: 1 }), []);
    const pw = d.timeout('PrevoteWait');
    assert.deepEqual(kinds(pw).slice(0, 1), ['wal:timeout:false']);
    assert.equal(d.state.step, 'Precommit');
    assert.equal(ofKind(pw, 'signVote')[0]!.vote.type, 2);
    assert.deepEqual(d.timeout('PrevoteWait'), [], 'not in Precommit');
    // PrecommitWait: from Precommit (its round only) to the next round.
    const pcw = d.timeout('PrecommitWait');
    assert.deepEqual(kinds(pcw).slice(0, 1), ['wal:timeout:false']);
    assert.equal(d.state.round, 1);
    assert.deepEqual(d.timeout('PrecommitWait', 0), [], 'of the round left behind');
  });

  it('timeout_prevote applies in PrevoteWait; timeout_precommit never in NewHeight or Commit', () => {
    const { d, others, keyOf, chain } = setup();
    d.send((now) => ({ kind: 'start', now }));
    d.timeout('Propose');
    d.vote(signedVote(chain, others[0]!, 1, 1, 0, null));
    d.vote(signedVote(chain, others[1]!, 1, 1, 0, blockIdOf(blockFor(chain, keyOf(0)))));
    d.vote(signedVote(chain, others[2]!, 1, 1, 0, blockIdOf(blockFor(chain, keyOf(0), 'x'))));
    assert.equal(d.state.step, 'PrevoteWait');
    d.timeout('PrevoteWait');
    assert.equal(d.state.step, 'Precommit');
    // NewHeight: a fresh engine ignores timeout_precommit (and timeout_prevote).
    const fresh = setup().d;
    assert.deepEqual(fresh.timeout('PrecommitWait'), []);
    assert.deepEqual(fresh.timeout('PrevoteWait'), []);
    assert.equal(fresh.state.step, 'NewHeight');
    // Commit: decided, the height's timeouts change nothing.
    const c = setup();
    c.d.send((now) => ({ kind: 'start', now }));
    const block = blockFor(c.chain, c.keyOf(0));
    c.d.propose(signedProposal(c.keyOf(0), block, 0), block);
    for (const k of c.others) c.d.vote(signedVote(c.chain, k, 2, 1, 0, blockIdOf(block)));
    assert.equal(c.d.state.step, 'Commit');
    assert.deepEqual(c.d.timeout('PrecommitWait'), []);
    assert.equal(c.d.state.round, 0);
  });
});

describe('engine handlers: proposals', () => {
  it("a peer's proposal: written to the WAL, published, sent for validation; its block is kept by hash", () => {
    const { d, keyOf, chain } = setup();
    d.send((now) => ({ kind: 'start', now }));
    const block = blockFor(chain, keyOf(0));
    const p = signedProposal(keyOf(0), block, 0);
    const id = blockIdOf(block);
    const effs = d.send((now) => ({ kind: 'proposal', proposal: p, block, now }));
    assert.deepEqual(kinds(effs), ['wal:proposal:false', 'publish', 'validateBlock']);
    assert.deepEqual(walOf(effs)[0]!.entry, { kind: 'proposal', proposal: p, block, now: d.now });
    assert.deepEqual(ofKind(effs, 'publish')[0]!.event, {
      kind: 'CompleteProposal',
      height: 1,
      round: 0,
      blockId: id,
      proposal: p,
    });
    assert.deepEqual(ofKind(effs, 'validateBlock')[0], {
      kind: 'validateBlock',
      height: 1,
      round: 0,
      block,
      blockId: id,
    });
    assert.equal(d.state.validity.get([...d.state.proposals.values()][0]!.key), 'pending');
    assert.deepEqual(d.state.blocks.get(hex(id.hash))?.blockId, id);
    assert.equal(d.state.step, 'Propose', 'no prevote before the answer');
  });

  it('ignores a proposal of another height, a second one for a round, and rounds or POL rounds out of range', () => {
    const { d, keyOf, chain } = setup();
    d.send((now) => ({ kind: 'start', now }));
    const block = blockFor(chain, keyOf(0));
    const send = (p: Proposal, b: Block = block) =>
      d.send((now) => ({ kind: 'proposal', proposal: p, block: b, now }));
    const resign = (p: Proposal) => signedProposal(keyOf(0), block, p.round, p.polRound);
    assert.deepEqual(send({ ...signedProposal(keyOf(0), block, 0), height: 2 }), []);
    for (const [round, polRound] of [
      [-1, -1],
      [0.5, -1],
      [1, -2],
      [1, 1],
      [1, 2],
      [2, 0.5],
    ] as const) {
      const p = { ...resign({ round: 0, polRound: -1 } as Proposal), round, polRound };
      assert.deepEqual(send(p), [], `round ${round}, POL round ${polRound}`);
    }
    assert.equal(d.state.proposals.size, 0);
    const first = send(signedProposal(keyOf(0), block, 0));
    assert.equal(ofKind(first, 'validateBlock').length, 1);
    const other = blockFor(chain, keyOf(0), 'other');
    assert.deepEqual(send(signedProposal(keyOf(0), other, 0), other), [], 'the round already has one');
    assert.deepEqual(d.state.proposals.get(0)!.blockId, blockIdOf(block));
    // POL round exactly round - 1 is in range (the proposer of round 2 re-proposing round 1's polka).
    const b2 = blockFor(chain, keyOf(2), 'two');
    const ok = d.send((now) => ({
      kind: 'proposal',
      proposal: signedProposal(keyOf(2), b2, 2, 1),
      block: b2,
      now,
    }));
    assert.equal(ofKind(ok, 'validateBlock').length, 1);
    assert.equal(d.state.proposals.get(2)!.proposal.polRound, 1);
  });

  it('rejects a block that does not hash to the block ID and a signature not of the round proposer, keeping neither', () => {
    const { d, keyOf, chain } = setup();
    d.send((now) => ({ kind: 'start', now }));
    const block = blockFor(chain, keyOf(0));
    const other = blockFor(chain, keyOf(0), 'other');
    const p = signedProposal(keyOf(0), block, 0);
    const effs = d.send((now) => ({ kind: 'proposal', proposal: p, block: other, now }));
    assert.deepEqual(effs, [
      { kind: 'rejected', reason: 'proposal 1/0: the block does not hash to its block ID' },
    ]);
    const forged = signedProposal(keyOf(1), block, 0);
    assert.deepEqual(
      d.send((now) => ({ kind: 'proposal', proposal: forged, block, now })),
      [{ kind: 'rejected', reason: 'proposal 1/0: invalid signature of the proposer' }],
    );
    assert.equal(d.state.proposals.size, 0);
    assert.equal(d.state.blocks.size, 0);
    // The genuine proposal is still taken.
    assert.equal(
      ofKind(
        d.send((now) => ({ kind: 'proposal', proposal: p, block, now })),
        'validateBlock',
      ).length,
      1,
    );
  });

  it('a block that fails the header checks is invalid at once: no validation asked, prevote nil', () => {
    const { d, keyOf, chain, self } = setup();
    d.send((now) => ({ kind: 'start', now }));
    const bad = makeBlock(chain, {
      height: 1,
      time: chain.lastBlockTime + 1n,
      txs: [],
      evidence: [],
      lastCommit: null,
      proposerAddress: keyOf(0).address,
    });
    const effs = d.send((now) => ({
      kind: 'proposal',
      proposal: signedProposal(keyOf(0), bad, 0),
      block: bad,
      now,
    }));
    assert.equal(ofKind(effs, 'validateBlock').length, 0);
    assert.equal(d.state.validity.get(d.state.proposals.get(0)!.key), false);
    const v = ofKind(effs, 'signVote')[0]!.vote;
    assert.deepEqual(
      [v.type, v.round, v.blockId.hash.length, v.validatorIndex],
      [1, 0, 0, chain.validators.indexOf(self.address)],
    );
  });

  it('a block already judged is not validated again when proposed in a later round', () => {
    const { d, keyOf, chain, others } = setup();
    d.send((now) => ({ kind: 'start', now }));
    const block = blockFor(chain, keyOf(0));
    d.propose(signedProposal(keyOf(0), block, 0), block, false);
    for (const k of others) d.vote(signedVote(chain, k, 2, 1, 0, null));
    d.timeout('PrecommitWait');
    const effs = d.send((now) => ({
      kind: 'proposal',
      proposal: signedProposal(keyOf(1), block, 1),
      block,
      now,
    }));
    assert.equal(ofKind(effs, 'validateBlock').length, 0);
    assert.equal(ofKind(effs, 'signVote')[0]!.vote.blockId.hash.length, 0, 'still invalid: prevote nil');
  });

  it('its own proposal: written with fsync, broadcast, taken as valid, and its pending request cleared', () => {
    const { d } = proposerSetup();
    d.send((now) => ({ kind: 'start', now }));
    d.send((now) => ({ kind: 'proposalTxs', height: 1, round: 0, txs: [], evidence: [], now }));
    const sp = ofKind(d.effects, 'signProposal')[0]!;
    assert.equal(d.state.pendingProposal?.stage, 'sign');
    // Another height, or a round that has a proposal: nothing.
    assert.deepEqual(
      d.send((now) => ({
        kind: 'ownProposal',
        proposal: { ...sp.proposal, height: 2 },
        block: sp.block,
        now,
      })),
      [],
    );
    assert.equal(d.state.pendingProposal?.stage, 'sign');
    const effs = d.send((now) => ({ kind: 'ownProposal', proposal: sp.proposal, block: sp.block, now }));
    assert.deepEqual(kinds(effs).slice(0, 3), ['wal:ownProposal:true', 'broadcast', 'publish']);
    assert.deepEqual(ofKind(effs, 'broadcast')[0]!.message, {
      kind: 'proposal',
      proposal: sp.proposal,
      block: sp.block,
    });
    assert.equal(ofKind(effs, 'validateBlock').length, 0);
    assert.equal(d.state.validity.get(d.state.proposals.get(0)!.key), true);
    assert.deepEqual(ofKind(effs, 'signVote')[0]!.vote.blockId, blockIdOf(sp.block));
    assert.equal(d.state.pendingProposal, null);
    assert.deepEqual(
      d.send((now) => ({ kind: 'ownProposal', proposal: sp.proposal, block: sp.block, now })),
      [],
      'the round has it',
    );
  });

  it("a signed proposal of an earlier round leaves the current round's pending request alone", () => {
    const { d } = proposerSetup();
    d.send((now) => ({ kind: 'start', now }));
    d.send((now) => ({ kind: 'proposalTxs', height: 1, round: 0, txs: [], evidence: [], now }));
    const sp = ofKind(d.effects, 'signProposal')[0]!;
    const pending = { round: 3, stage: 'txs' as const, time: GENESIS_TIME, lastCommit: null };
    d.state.pendingProposal = pending;
    d.send((now) => ({ kind: 'ownProposal', proposal: sp.proposal, block: sp.block, now }));
    assert.equal(d.state.pendingProposal, pending);
  });

  it('a validation answer counts once, for a pending block of this height only', () => {
    const { d, keyOf, chain } = setup();
    d.send((now) => ({ kind: 'start', now }));
    const block = blockFor(chain, keyOf(0));
    const id = blockIdOf(block);
    d.send((now) => ({ kind: 'proposal', proposal: signedProposal(keyOf(0), block, 0), block, now }));
    const answer = (over: Partial<Extract<EngineEvent, { kind: 'blockValidated' }>>) =>
      d.send((now) => ({
        kind: 'blockValidated',
        height: 1,
        blockHash: id.hash,
        valid: false,
        now,
        ...over,
      }));
    assert.deepEqual(answer({ height: 2 }), []);
    assert.deepEqual(answer({ blockHash: new Uint8Array(32) }), [], 'an unknown block');
    assert.equal(d.state.validity.get(d.state.proposals.get(0)!.key), 'pending');
    const effs = answer({ valid: true });
    assert.deepEqual(walOf(effs)[0]!.entry, {
      kind: 'blockValidated',
      height: 1,
      blockHash: id.hash,
      valid: true,
      now: d.now,
    });
    assert.equal(d.state.validity.get(d.state.proposals.get(0)!.key), true);
    assert.deepEqual(ofKind(effs, 'signVote')[0]!.vote.blockId, id);
    assert.deepEqual(answer({ valid: false }), [], 'a second answer');
    assert.equal(d.state.validity.get(d.state.proposals.get(0)!.key), true);
  });
});

describe('engine handlers: votes', () => {
  it("a peer's vote: WAL without fsync, published, not broadcast; a duplicate or a stale round changes nothing", () => {
    const { d, others, chain } = setup();
    d.send((now) => ({ kind: 'start', now }));
    const v = signedVote(chain, others[0]!, 1, 1, 0, null);
    const effs = d.vote(v);
    assert.deepEqual(kinds(effs), ['wal:vote:false', 'publish']);
    assert.deepEqual(walOf(effs)[0]!.entry, { kind: 'vote', vote: v, now: d.now });
    assert.deepEqual(ofKind(effs, 'publish')[0]!.event, { kind: 'Vote', vote: v });
    assert.deepEqual(d.vote(v), [], 'a duplicate');
    for (const round of [-1, 1.5]) {
      const bad = { ...signedVote(chain, others[1]!, 1, 1, 0, null), round };
      assert.deepEqual(d.vote(bad), [], `round ${round}`);
    }
    assert.equal(d.state.votes.prevotes(0).all().length, 1);
    assert.deepEqual(d.vote(signedVote(chain, others[1]!, 1, 3, 0, null)), [], 'a vote of a later height');
  });

  it('rejects a forged vote by name; a vote an honest peer may relay, or its own, is not reported', () => {
    const { d, others, chain, self } = setup();
    d.send((now) => ({ kind: 'start', now }));
    const forged = { ...signedVote(chain, others[0]!, 1, 1, 0, null), signature: new Uint8Array(64) };
    assert.deepEqual(d.vote(forged), [{ kind: 'rejected', reason: 'vote 1/0/1: invalid signature' }]);
    const wrongIndex = { ...signedVote(chain, others[0]!, 1, 1, 0, null), validatorIndex: 9 };
    assert.deepEqual(d.vote(wrongIndex), [
      { kind: 'rejected', reason: 'vote 1/0/1: validator index 9 is out of range 0..3' },
    ]);
    // An own vote with a bad index is not a peer's fault.
    assert.deepEqual(
      d.send((now) => ({
        kind: 'ownVote',
        vote: { ...signedVote(chain, self, 1, 1, 0, null), validatorIndex: 9 },
        now,
      })),
      [],
    );
    // A fourth block of one validator in one round is refused as relayable: no report.
    const v = (tag: string) =>
      signedVote(chain, others[1]!, 1, 1, 0, blockIdOf(blockFor(chain, others[1]!, tag)));
    d.vote(v('a'));
    d.vote(v('b'));
    d.vote(v('c'));
    assert.deepEqual(d.vote(v('d')), []);
    assert.equal(d.state.votes.prevotes(0).all().length, 3, 'three blocks of one validator are counted');
  });

  it('an equivocating vote is counted, written to the WAL and reported as conflicting, nothing published', () => {
    const { d, others, chain, keyOf } = setup();
    d.send((now) => ({ kind: 'start', now }));
    const a = signedVote(chain, others[0]!, 1, 1, 0, null);
    const b = signedVote(chain, others[0]!, 1, 1, 0, blockIdOf(blockFor(chain, keyOf(0))));
    d.vote(a);
    const effs = d.vote(b);
    assert.deepEqual(kinds(effs), ['wal:vote:false', 'conflictingVotes']);
    assert.deepEqual(ofKind(effs, 'conflictingVotes')[0], { kind: 'conflictingVotes', voteA: a, voteB: b });
    assert.equal(d.state.votes.prevotes(0).all().length, 2, 'both votes are held');
  });

  it('its own vote: WAL with fsync before the broadcast, and only that vote leaves the pending list', () => {
    const { d, self, chain } = setup();
    d.send((now) => ({ kind: 'start', now }));
    const pv = ofKind(d.timeout('Propose'), 'signVote')[0]!.vote;
    // Another pending vote of the same round but the other type, and one of the same type in another round.
    const pc = { ...pv, type: 2 as const };
    const pv1 = { ...pv, round: 1 };
    d.state.pendingVotes.push(pc, pv1);
    const signed: Vote = signedVote(chain, self, 1, 1, 0, null, pv.timestamp);
    const effs = d.send((now) => ({ kind: 'ownVote', vote: signed, now }));
    assert.deepEqual(kinds(effs).slice(0, 3), ['wal:ownVote:true', 'broadcast', 'publish']);
    assert.deepEqual(ofKind(effs, 'broadcast')[0]!.message, { kind: 'vote', vote: signed });
    assert.deepEqual(d.state.pendingVotes, [pc, pv1]);
  });

  it('its own precommit for a block, seen again after a restart, restores the lock it implies', () => {
    const { d, self, chain, keyOf } = setup();
    d.send((now) => ({ kind: 'start', now }));
    const block = blockFor(chain, keyOf(0));
    const id = blockIdOf(block);
    // Without the proposal: the lock is the block ID alone.
    d.send((now) => ({ kind: 'ownVote', vote: signedVote(chain, self, 2, 1, 0, id), now }));
    assert.equal(d.state.lockedRound, 0);
    assert.deepEqual(d.state.lockedBlock?.blockId, id);
    // A nil precommit, or a prevote, locks nothing.
    const e = setup();
    e.d.send((now) => ({ kind: 'start', now }));
    e.d.send((now) => ({ kind: 'ownVote', vote: signedVote(chain, e.self, 2, 1, 0, null), now }));
    e.d.send((now) => ({ kind: 'ownVote', vote: signedVote(chain, e.self, 1, 1, 0, id), now }));
    assert.deepEqual([e.d.state.lockedRound, e.d.state.lockedBlock], [-1, null]);
    // With the proposal known, the lock is its record; an own precommit of an earlier round does not move it.
    const f = setup();
    f.d.send((now) => ({ kind: 'start', now }));
    f.d.send((now) => ({ kind: 'proposal', proposal: signedProposal(keyOf(0), block, 0), block, now }));
    f.d.send((now) => ({ kind: 'ownVote', vote: signedVote(chain, f.self, 2, 1, 0, id), now }));
    assert.equal(f.d.state.lockedBlock, f.d.state.proposals.get(0));
    const g = setup();
    g.d.send((now) => ({ kind: 'start', now }));
    g.d.send((now) => ({ kind: 'ownVote', vote: signedVote(chain, g.self, 2, 1, 2, id), now }));
    const other = blockIdOf(blockFor(chain, keyOf(0), 'x'));
    g.d.send((now) => ({ kind: 'ownVote', vote: signedVote(chain, g.self, 2, 1, 1, other), now }));
    assert.equal(g.d.state.lockedRound, 2);
    assert.deepEqual(g.d.state.lockedBlock?.blockId, id);
    // A peer's precommit (even one signed with this node's key) restores nothing.
    const h = setup();
    h.d.send((now) => ({ kind: 'start', now }));
    h.d.vote(signedVote(chain, h.self, 2, 1, 0, id));
    assert.equal(h.d.state.lockedRound, -1);
  });

  it('late precommits of the last height join its commit; other rounds, prevotes and older heights do not', () => {
    const { d, others, keyOf, chain } = setup();
    d.send((now) => ({ kind: 'start', now }));
    const block = blockFor(chain, keyOf(0));
    const id = blockIdOf(block);
    d.propose(signedProposal(keyOf(0), block, 0), block);
    for (const k of others.slice(0, 3)) d.vote(signedVote(chain, k, 2, 1, 0, id));
    const next = nextChainState(chain, block, id, emptyResult(chain));
    d.send((now) => ({ kind: 'committed', chain: next, now }));
    assert.equal(d.state.height, 2);
    const before = d.state.lastCommit!.sum;
    assert.deepEqual(d.vote(signedVote(chain, others[0]!, 1, 1, 0, id)), [], 'a prevote');
    assert.deepEqual(d.vote(signedVote(chain, others[0]!, 2, 1, 1, id)), [], 'another round');
    assert.equal(d.state.lastCommit!.sum, before);
    const self = keys.find((k) => !others.includes(k))!;
    const late = signedVote(chain, self, 2, 1, 0, id);
    const effs = d.vote(late);
    assert.deepEqual(kinds(effs), ['wal:vote:false']);
    assert.equal(d.state.lastCommit!.sum, before + 10n);
    // An equivocating late precommit is reported and written.
    const conflicting = signedVote(chain, others[0]!, 2, 1, 0, null);
    const c = d.vote(conflicting);
    assert.deepEqual(kinds(c), ['conflictingVotes', 'wal:vote:false']);
    assert.equal(ofKind(c, 'conflictingVotes')[0]!.voteB, conflicting);
    // A duplicate or a forged one is neither.
    assert.deepEqual(d.vote(late), []);
    assert.deepEqual(
      d.vote({ ...signedVote(chain, others[1]!, 2, 1, 0, null), signature: new Uint8Array(64) }),
      [],
    );
  });
});

describe('engine handlers: start after a replay', () => {
  it('in Propose: re-arms timeout_propose and asks again for the proposal it was building', () => {
    const { d } = proposerSetup();
    d.send((now) => ({ kind: 'start', now }));
    const req = ofKind(d.effects, 'requestProposal')[0]!;
    const effs = d.send((now) => ({ kind: 'start', now }));
    assert.deepEqual(
      effs.map((e) => e.kind),
      ['scheduleTimeout', 'requestProposal'],
    );
    assert.deepEqual(
      ofKind(effs, 'scheduleTimeout').map((t) => [t.step, t.round, t.durationMs]),
      [['Propose', 0, 3000]],
    );
    assert.deepEqual(ofKind(effs, 'requestProposal')[0], req);
    // Once built, it is the signature that is asked again.
    d.send((now) => ({ kind: 'proposalTxs', height: 1, round: 0, txs: [], evidence: [], now }));
    const sp = ofKind(d.effects, 'signProposal')[0]!;
    const again = d.send((now) => ({ kind: 'start', now }));
    assert.deepEqual(
      again.map((e) => e.kind),
      ['scheduleTimeout', 'signProposal'],
    );
    assert.deepEqual(ofKind(again, 'signProposal')[0], sp);
  });

  it('a pending proposal of another round, or outside Propose, is not asked again', () => {
    const { d } = proposerSetup();
    d.send((now) => ({ kind: 'start', now }));
    d.state.pendingProposal = {
      ...(d.state.pendingProposal as object),
      round: 1,
    } as typeof d.state.pendingProposal;
    assert.deepEqual(
      d.send((now) => ({ kind: 'start', now })).map((e) => e.kind),
      ['scheduleTimeout'],
    );
    const e = proposerSetup();
    e.d.send((now) => ({ kind: 'start', now }));
    e.d.timeout('Propose');
    assert.equal(e.d.state.step, 'Prevote');
    assert.notEqual(e.d.state.pendingProposal, null);
    const effs = e.d.send((now) => ({ kind: 'start', now }));
    assert.deepEqual(
      effs.map((x) => x.kind),
      ['signVote'],
      'only the unanswered prevote',
    );
  });

  it('re-asks unanswered votes and validations, and re-arms timeout_prevote and timeout_precommit where they run', () => {
    const { d, others, keyOf, chain } = setup();
    d.send((now) => ({ kind: 'start', now }));
    const block = blockFor(chain, keyOf(0));
    const p = signedProposal(keyOf(0), block, 0);
    d.send((now) => ({ kind: 'proposal', proposal: p, block, now }));
    const validate = ofKind(d.effects, 'validateBlock')[0]!;
    d.timeout('Propose');
    const pv = ofKind(d.effects, 'signVote')[0]!;
    let effs = d.send((now) => ({ kind: 'start', now }));
    assert.deepEqual(effs, [pv, validate], 'in Prevote: the vote and the validation, no timeout');
    d.vote(signedVote(chain, others[0]!, 1, 1, 0, null));
    d.vote(signedVote(chain, others[1]!, 1, 1, 0, null));
    d.vote(signedVote(chain, others[2]!, 1, 1, 0, blockIdOf(block)));
    assert.equal(d.state.step, 'PrevoteWait');
    effs = d.send((now) => ({ kind: 'start', now }));
    assert.deepEqual(kinds(effs), ['scheduleTimeout', 'signVote', 'validateBlock']);
    assert.deepEqual(
      ofKind(effs, 'scheduleTimeout').map((t) => [t.step, t.round, t.durationMs]),
      [['PrevoteWait', 0, 1000]],
    );
    // Precommit with timeout_precommit running.
    d.send((now) => ({
      kind: 'blockValidated',
      height: 1,
      blockHash: blockIdOf(block).hash,
      valid: true,
      now,
    }));
    d.timeout('PrevoteWait');
    for (const k of others) d.vote(signedVote(chain, k, 2, 1, 0, null));
    assert.equal(d.state.triggeredPrecommitWait, true);
    effs = d.send((now) => ({ kind: 'start', now }));
    assert.deepEqual(
      ofKind(effs, 'scheduleTimeout').map((t) => [t.step, t.round, t.durationMs]),
      [['PrecommitWait', 0, 1000]],
    );
    assert.equal(ofKind(effs, 'validateBlock').length, 0, 'answered validations are not asked again');
  });

  it('decided but not committed: the decision is issued again, and no timeout in Commit', () => {
    const { d, others, keyOf, chain } = setup();
    d.send((now) => ({ kind: 'start', now }));
    const block = blockFor(chain, keyOf(0));
    d.propose(signedProposal(keyOf(0), block, 0), block);
    // timeout_precommit started by +2/3 precommits of any kind, then the decision.
    d.vote(signedVote(chain, others[0]!, 2, 1, 0, null));
    d.vote(signedVote(chain, others[1]!, 2, 1, 0, blockIdOf(block)));
    d.vote(signedVote(chain, others[2]!, 2, 1, 0, blockIdOf(block)));
    assert.equal(d.state.triggeredPrecommitWait, true);
    const self = keys.find((k) => !others.includes(k))!;
    d.send((now) => ({ kind: 'ownVote', vote: signedVote(chain, self, 2, 1, 0, blockIdOf(block)), now }));
    const dec = ofKind(d.effects, 'decide')[0]!;
    assert.equal(d.state.step, 'Commit');
    assert.equal(d.state.triggeredPrecommitWait, true);
    const effs = d.send((now) => ({ kind: 'start', now }));
    assert.deepEqual(ofKind(effs, 'scheduleTimeout'), []);
    assert.deepEqual(ofKind(effs, 'decide'), [dec]);
  });

  it('a replayed round resumes where it was: WAL entries into a fresh engine, then start', () => {
    const { d, self, chain, keyOf } = setup();
    d.send((now) => ({ kind: 'start', now }));
    const block = blockFor(chain, keyOf(0));
    d.signWith(self, d.propose(signedProposal(keyOf(0), block, 0), block));
    const entries = walOf(d.effects).map((w) => w.entry);
    let fresh = createEngine(config(self), chain, null);
    fresh = step(fresh, { kind: 'start', now: GENESIS_TIME }).state;
    for (const e of entries) fresh = step(fresh, e as EngineEvent).state;
    assert.equal(fresh.step, 'Prevote');
    const r = step(fresh, { kind: 'start', now: GENESIS_TIME + 5000n * MS });
    assert.deepEqual(r.effects, [], 'the prevote was answered: nothing to re-ask');
  });
});

// ---------------------------------------------------------------------------------------------
// The height's end and the transitions (engine.ts from onCommitCert on: `npm run mutate -- engine-commit`)

/** Keys in validator-set order, as a commit lists its signatures. */
function ordered(chain: ReturnType<typeof genesis>): TestKey[] {
  return chain.validators.validators.map((v) => keys.find((k) => hex(k.address) === hex(v.address))!);
}

/** A commit of `block` at `round` signed by every validator (with extensions when `ext`). */
function commitFor(chain: ReturnType<typeof genesis>, block: Block, round = 0, ext = false): Commit {
  const id = blockIdOf(block);
  return {
    height: block.header.height,
    round,
    blockId: id,
    signatures: ordered(chain).map((k) => {
      const v = signedVote(chain, k, 2, block.header.height, round, id);
      const extension = new TextEncoder().encode(`ext of ${hex(k.address).slice(0, 4)}`);
      return {
        blockIdFlag: 2 as const,
        validatorAddress: k.address,
        timestamp: v.timestamp,
        signature: v.signature,
        ...(ext
          ? {
              extension,
              extensionSignature: ed25519Sign(
                k.seed,
                voteExtensionSignBytes(CHAIN_ID, { height: block.header.height, round, extension }),
              ),
            }
          : {}),
      };
    }),
  };
}

/** The genesis of `keys` with vote extensions from height 1. */
function extGenesis(list: TestKey[] = keys) {
  return genesisChainState(
    {
      chainId: CHAIN_ID,
      time: GENESIS_TIME,
      initialHeight: 1,
      validators: validatorsOf(list),
      consensusParams: { ...PARAMS, abci: { voteExtensionsEnableHeight: 1n } },
    },
    sha256(new TextEncoder().encode('app-genesis')),
  );
}

describe('engine handlers: a commit certificate', () => {
  it('decides at once in its round: Commit step, the decision with the block, nothing in the WAL', () => {
    const { d, keyOf, chain } = setup();
    d.send((now) => ({ kind: 'start', now }));
    const block = blockFor(chain, keyOf(0));
    const commit = commitFor(chain, block, 3);
    assert.deepEqual(
      d.send((now) => ({ kind: 'commitCert', block, commit: { ...commit, height: 2 }, now })),
      [],
    );
    const effs = d.send((now) => ({ kind: 'commitCert', block, commit, now }));
    assert.deepEqual(kinds(effs), ['publish', 'decide']);
    assert.deepEqual(ofKind(effs, 'publish')[0]!.event, {
      kind: 'NewRoundStep',
      height: 1,
      round: 0,
      step: 'RoundStepCommit',
    });
    assert.deepEqual(ofKind(effs, 'decide')[0], {
      kind: 'decide',
      height: 1,
      round: 3,
      block,
      blockId: blockIdOf(block),
      commit,
      extendedCommit: null,
    });
    assert.deepEqual(
      [d.state.step, d.state.decided, d.state.commitRound, d.state.commitTime, d.state.decidedCommit],
      ['Commit', true, 3, d.now, commit],
    );
    assert.deepEqual(
      d.send((now) => ({ kind: 'commitCert', block, commit, now })),
      [],
      'decided already',
    );
  });

  it('refuses a commit for another block, naming it, and decides nothing', () => {
    const { d, keyOf, chain } = setup();
    d.send((now) => ({ kind: 'start', now }));
    const block = blockFor(chain, keyOf(0));
    const other = blockFor(chain, keyOf(0), 'other');
    assert.deepEqual(
      d.send((now) => ({ kind: 'commitCert', block: other, commit: commitFor(chain, block), now })),
      [{ kind: 'rejected', reason: "commit 1: the block does not hash to the commit's block ID" }],
    );
    assert.equal(d.state.decided, false);
    assert.equal(d.state.blocks.size, 0);
  });

  it("a block sync response's block keeps the bytes it came in: canonical bytes decide, any other encoding of the same block is refused", () => {
    const { d, keyOf, chain } = setup();
    d.send((now) => ({ kind: 'start', now }));
    const block = blockFor(chain, keyOf(0));
    const commit = commitFor(chain, block);
    // The same block with an unknown field after its own: it decodes to an equal block, but its
    // parts are other bytes, so its part set header is not the one the commit signed.
    const canonical = encodeBlock(block);
    const padded = new Uint8Array([...canonical, 0x78, 0x01]);
    const response = (blockBytes: Uint8Array) => {
      const inner = new ProtoWriter();
      inner.message(1, blockBytes);
      inner.message(2, encodeCommit(commit));
      const w = new ProtoWriter();
      w.message(5, inner.finish());
      return decodeBlockSyncMessage(w.finish());
    };
    const odd = response(padded);
    assert.ok(odd.kind === 'block');
    assert.deepEqual(odd.block, block, 'the unknown field is not part of the decoded block');
    assert.deepEqual(blockIdOf(odd.block).hash, blockIdOf(block).hash);
    assert.notDeepEqual(blockIdOf(odd.block).partSetHeader, blockIdOf(block).partSetHeader);
    assert.equal(blockSize(odd.block), padded.length);
    assert.deepEqual(
      d.send((now) => ({ kind: 'commitCert', block: odd.block, commit: odd.commit, now })),
      [{ kind: 'rejected', reason: "commit 1: the block does not hash to the commit's block ID" }],
    );
    assert.equal(d.state.decided, false);
    const good = response(canonical);
    assert.ok(good.kind === 'block');
    assert.deepEqual(blockIdOf(good.block), blockIdOf(block));
    assert.deepEqual(blockBytes(good.block), canonical);
    const effs = d.send((now) => ({ kind: 'commitCert', block: good.block, commit: good.commit, now }));
    assert.deepEqual(ofKind(effs, 'decide')[0]!.blockId, blockIdOf(block));
  });

  it('with vote extensions on, the extended commit decides; without it only when the next height is known committed', () => {
    const chain = extGenesis();
    const block = blockFor(chain, keys[0]!);
    const plain = commitFor(chain, block);
    const ext = commitFor(chain, block, 0, true);
    const fresh = () => {
      const d = new Driver(config(keys[1]!), chain);
      d.send((now) => ({ kind: 'start', now }));
      return d;
    };
    let d = fresh();
    assert.deepEqual(
      d.send((now) => ({ kind: 'commitCert', block, commit: plain, now })),
      [
        {
          kind: 'rejected',
          reason:
            'commit 1: vote extensions are enabled at height 1, but the block came without its extended commit',
        },
      ],
    );
    assert.deepEqual(
      ofKind(
        d.send((now) => ({ kind: 'commitCert', block, commit: plain, nextHeightCommitted: false, now })),
        'rejected',
      ).length,
      1,
    );
    // A forged extension signature is refused by the extension check.
    const forged = {
      ...ext,
      signatures: ext.signatures.map((s, i) =>
        i === 0 ? { ...s, extensionSignature: new Uint8Array(64) } : s,
      ),
    };
    const rej = ofKind(
      d.send((now) => ({ kind: 'commitCert', block, commit: plain, extendedCommit: forged, now })),
      'rejected',
    );
    assert.equal(rej.length, 1);
    assert.match(rej[0]!.reason, /^commit 1: .*extension/);
    // The extended commit must be for the same block as the commit.
    const otherBlock = blockFor(chain, keys[0]!, 'other');
    assert.deepEqual(
      d.send((now) => ({
        kind: 'commitCert',
        block,
        commit: commitFor(chain, otherBlock),
        extendedCommit: ext,
        now,
      })),
      [{ kind: 'rejected', reason: "commit 1: the block does not hash to the commit's block ID" }],
    );
    assert.equal(d.state.decided, false);
    const effs = d.send((now) => ({ kind: 'commitCert', block, commit: plain, extendedCommit: ext, now }));
    const dec = ofKind(effs, 'decide')[0]!;
    assert.deepEqual(dec.commit, ext);
    assert.deepEqual(
      dec.extendedCommit?.signatures.map((s) => s.extension),
      ext.signatures.map((s) => s.extension),
    );
    // The plain commit decides when height + 1 is known committed: no extensions are kept.
    d = fresh();
    const effs2 = d.send((now) => ({
      kind: 'commitCert',
      block,
      commit: plain,
      nextHeightCommitted: true,
      now,
    }));
    const dec2 = ofKind(effs2, 'decide')[0]!;
    assert.deepEqual(dec2.commit, plain);
    assert.equal(dec2.extendedCommit, null);
    assert.equal(d.state.decidedWithoutExtensions, true);
    // An extended commit given beside it still decides with its extensions.
    d = fresh();
    const dec3 = ofKind(
      d.send((now) => ({
        kind: 'commitCert',
        block,
        commit: plain,
        extendedCommit: ext,
        nextHeightCommitted: true,
        now,
      })),
      'decide',
    )[0]!;
    assert.deepEqual(dec3.commit, ext);
    assert.equal(d.state.decidedWithoutExtensions, false);
  });

  it("a decision's precommits become the next height's last commit: the commit's signatures and later votes", () => {
    const { d, keyOf, chain } = setup();
    d.send((now) => ({ kind: 'start', now }));
    const block = blockFor(chain, keyOf(0));
    const commit = commitFor(chain, block);
    // One validator absent from the commit.
    const partial = {
      ...commit,
      signatures: commit.signatures.map((s, i) => (i === 0 ? { ...s, blockIdFlag: 1 as const } : s)),
    };
    d.send((now) => ({ kind: 'commitCert', block, commit: partial, now }));
    d.send((now) => ({
      kind: 'committed',
      chain: nextChainState(chain, block, blockIdOf(block), emptyResult(chain)),
      now,
    }));
    assert.equal(d.state.lastCommit!.sum, 30n);
    assert.equal(d.state.lastCommit!.get(0), undefined);
    assert.deepEqual(d.state.lastCommit!.height, 1);
  });
});

describe('engine handlers: transactions and the proposal', () => {
  it('transactions available before the round start it in Propose; announced again they change nothing', () => {
    const chain = genesis(keys);
    const probe = createEngine(config(null), chain, null);
    const p = keys.find((k) => hex(k.address) === hex(proposerOf(probe, 0).address))!;
    const block = blockFor(chain, p);
    const next = nextChainState(chain, block, blockIdOf(block), {
      ...emptyResult(chain),
      appHash: chain.appHash,
    });
    const h2 = { ...next, lastBlockAppHash: chain.appHash };
    const cfg = config(keys[0]!, { createEmptyBlocks: false });
    // Announced while still in NewHeight: kept, not written; the round then starts in Propose.
    const a = new Driver(cfg, h2);
    assert.deepEqual(
      a.send((now) => ({ kind: 'txsAvailable', now })),
      [],
    );
    a.send((now) => ({ kind: 'start', now }));
    assert.equal(a.state.step, 'Propose');
    // Announced in NewRound: written to the WAL, then Propose; a second time, nothing.
    const b = new Driver(cfg, h2);
    b.send((now) => ({ kind: 'start', now }));
    assert.equal(b.state.step, 'NewRound');
    const effs = b.send((now) => ({ kind: 'txsAvailable', now }));
    assert.deepEqual(
      walOf(effs).map((w) => [w.entry, w.sync]),
      [[{ kind: 'txsAvailable', now: b.now }, false]],
    );
    assert.equal(b.state.step, 'Propose');
    assert.deepEqual(
      b.send((now) => ({ kind: 'txsAvailable', now })),
      [],
    );
    // The app hash changed at the last block: a proof block is due, no wait.
    const c = new Driver(cfg, nextChainState(chain, block, blockIdOf(block), emptyResult(chain)));
    c.send((now) => ({ kind: 'start', now }));
    assert.equal(c.state.step, 'Propose');
  });

  it('the proposer builds its block from the answer: WAL, then the proposal to sign, at the time it asked', () => {
    const { d, me, chain } = proposerSetup();
    d.send((now) => ({ kind: 'start', now }));
    const req = ofKind(d.effects, 'requestProposal')[0]!;
    assert.deepEqual(req, {
      kind: 'requestProposal',
      height: 1,
      round: 0,
      time: chain.lastBlockTime,
      proposerAddress: me.address,
      validatorCount: 4,
    });
    const tx = new TextEncoder().encode('a=1');
    const ans = (over: Partial<Extract<EngineEvent, { kind: 'proposalTxs' }>>) =>
      d.send((now) => ({ kind: 'proposalTxs', height: 1, round: 0, txs: [tx], evidence: [], now, ...over }));
    assert.deepEqual(ans({ height: 2 }), []);
    assert.deepEqual(ans({ round: 1 }), []);
    assert.equal(d.state.pendingProposal?.stage, 'txs');
    // With four validators the proposer does not pick the time: the BFT time of the request stands.
    const effs = ans({ time: chain.lastBlockTime + 60_000n * MS });
    assert.deepEqual(kinds(effs), ['wal:proposalTxs:false', 'signProposal']);
    const sp = ofKind(effs, 'signProposal')[0]!;
    assert.equal(sp.block.header.time, chain.lastBlockTime);
    assert.deepEqual(sp.block.data.txs, [tx]);
    assert.deepEqual(sp.block.header.proposerAddress, me.address);
    assert.deepEqual(sp.proposal, {
      height: 1,
      round: 0,
      polRound: -1,
      blockId: blockIdOf(sp.block),
      timestamp: d.now,
      signature: new Uint8Array(0),
    });
    assert.deepEqual(d.state.pendingProposal, {
      round: 0,
      stage: 'sign',
      proposal: sp.proposal,
      block: sp.block,
    });
    assert.deepEqual(ans({}), [], 'a second answer');
  });

  it('an answer after the round moved on is dropped with its request', () => {
    const { d } = proposerSetup();
    d.send((now) => ({ kind: 'start', now }));
    d.timeout('Propose');
    assert.equal(d.state.step, 'Prevote');
    const effs = d.send((now) => ({ kind: 'proposalTxs', height: 1, round: 0, txs: [], evidence: [], now }));
    assert.deepEqual(effs, []);
    assert.equal(d.state.pendingProposal, null);
  });

  it('transactions past block.max_bytes are dropped from the end until the block fits', () => {
    const small = genesisChainState(
      {
        chainId: CHAIN_ID,
        time: GENESIS_TIME,
        initialHeight: 1,
        validators: validatorsOf(keys),
        consensusParams: { ...PARAMS, block: { maxBytes: 10_000n, maxGas: -1n } },
      },
      sha256(new TextEncoder().encode('app-genesis')),
    );
    const probe = createEngine(config(null), small, null);
    const me = keys.find((k) => hex(k.address) === hex(proposerOf(probe, 0).address))!;
    const d = new Driver(config(me), small);
    d.send((now) => ({ kind: 'start', now }));
    const txs = [1, 2, 3].map((i) => new Uint8Array(4000).fill(i));
    const effs = d.send((now) => ({ kind: 'proposalTxs', height: 1, round: 0, txs, evidence: [], now }));
    const sp = ofKind(effs, 'signProposal')[0]!;
    assert.deepEqual(sp.block.data.txs, txs.slice(0, 2));
    const fits = d.send((now) => ({
      kind: 'proposalTxs',
      height: 1,
      round: 0,
      txs: txs.slice(0, 1),
      evidence: [],
      now,
    }));
    assert.deepEqual(fits, [], 'answered already');
  });

  it('a sole validator picks its block time after the last block, and its votes stay after that time', () => {
    const k = keys[0]!;
    const chain1 = genesis([k]);
    const b1 = blockFor(chain1, k);
    const chain2 = nextChainState(chain1, b1, blockIdOf(b1), emptyResult(chain1));
    const picked = chain2.lastBlockTime + 100_000n * MS;
    for (const [time, expected] of [
      [picked, picked],
      [chain2.lastBlockTime, chain2.lastBlockTime],
      [undefined, chain2.lastBlockTime],
    ] as const) {
      const d = new Driver(config(k), chain2);
      d.send((now) => ({ kind: 'start', now }));
      const effs = d.send((now) => ({
        kind: 'proposalTxs',
        height: 2,
        round: 0,
        txs: [],
        evidence: [],
        now,
        ...(time === undefined ? {} : { time }),
      }));
      const sp = ofKind(effs, 'signProposal')[0]!;
      assert.equal(sp.block.header.time, expected, `time ${time}`);
      if (time !== picked) continue;
      // Its prevote for that block is timestamped 1 ms after the block, later than the clock.
      const own = d.send((now) => ({ kind: 'ownProposal', proposal: sp.proposal, block: sp.block, now }));
      const pv = ofKind(own, 'signVote')[0]!.vote;
      assert.ok(d.now < picked);
      assert.equal(pv.timestamp, picked + 1_000_000n);
    }
  });
});

describe('engine handlers: rounds, votes and the next height', () => {
  it('a round start announces the round with its proposer, its time and a clean slate of its flags', () => {
    const { d, chain, others, keyOf } = setup();
    const effs = d.send((now) => ({ kind: 'start', now }));
    const p0 = proposerOf(d.state, 0);
    assert.deepEqual(
      ofKind(effs, 'publish').map((e) => e.event),
      [
        {
          kind: 'NewRound',
          height: 1,
          round: 0,
          proposerAddress: p0.address,
          proposerIndex: chain.validators.indexOf(p0.address),
        },
        { kind: 'NewRoundStep', height: 1, round: 0, step: 'RoundStepNewRound' },
        { kind: 'NewRoundStep', height: 1, round: 0, step: 'RoundStepPropose' },
      ],
    );
    assert.equal(d.state.startTime, d.now);
    // A polka and timeout_precommit in round 0, then round 1 starts without them.
    const block = blockFor(chain, keyOf(0));
    d.propose(signedProposal(keyOf(0), block, 0), block);
    for (const k of others) d.vote(signedVote(chain, k, 1, 1, 0, blockIdOf(block)));
    for (const k of others) d.vote(signedVote(chain, k, 2, 1, 0, null));
    assert.deepEqual([d.state.polkaSeen, d.state.triggeredPrecommitWait], [true, true]);
    const r1 = d.timeout('PrecommitWait');
    const p1 = proposerOf(d.state, 1);
    assert.deepEqual(ofKind(r1, 'publish')[0]!.event, {
      kind: 'NewRound',
      height: 1,
      round: 1,
      proposerAddress: p1.address,
      proposerIndex: chain.validators.indexOf(p1.address),
    });
    assert.deepEqual(
      [d.state.polkaSeen, d.state.triggeredPrecommitWait, d.state.startTime],
      [false, false, d.now],
    );
  });

  it('votes carry the height, round, validator and a time after the last block; a non-validator signs none', () => {
    const { d, self, chain } = setup();
    d.send((now) => ({ kind: 'start', now }));
    d.now = GENESIS_TIME - 1000n * MS; // a clock behind the genesis time
    const v = ofKind(d.timeout('Propose'), 'signVote')[0]!;
    assert.deepEqual(v, {
      kind: 'signVote',
      extend: false,
      vote: {
        type: 1,
        height: 1,
        round: 0,
        blockId: { hash: new Uint8Array(0), partSetHeader: { total: 0, hash: new Uint8Array(0) } },
        timestamp: chain.lastBlockTime + 1_000_000n,
        validatorAddress: self.address,
        validatorIndex: chain.validators.indexOf(self.address),
        signature: new Uint8Array(0),
      },
    });
    assert.deepEqual(d.state.pendingVotes, [v.vote]);
    // A clock ahead: the vote carries the clock.
    const e = setup();
    e.d.send((now) => ({ kind: 'start', now }));
    const w = ofKind(e.d.timeout('Propose'), 'signVote')[0]!;
    assert.equal(w.vote.timestamp, e.d.now);
    // No own address in the set: no vote at all.
    const n = new Driver(config(null), chain);
    n.send((now) => ({ kind: 'start', now }));
    assert.deepEqual(ofKind(n.timeout('Propose'), 'signVote'), []);
    assert.equal(n.state.step, 'Prevote');
    assert.deepEqual(n.state.pendingVotes, []);
  });

  it('an own precommit for a block is extended only where vote extensions are on', () => {
    for (const [chain, extend] of [
      [genesis(keys), false],
      [extGenesis(), true],
    ] as const) {
      const probe = createEngine(config(null), chain, null);
      const p = keys.find((k) => hex(k.address) === hex(proposerOf(probe, 0).address))!;
      const self = keys.find((k) => k !== p)!;
      const d = new Driver(config(self), chain);
      d.send((now) => ({ kind: 'start', now }));
      const block = blockFor(chain, p);
      d.propose(signedProposal(p, block, 0), block);
      const effs = keys
        .filter((k) => k !== self)
        .flatMap((k) => d.vote(signedVote(chain, k, 1, 1, 0, blockIdOf(block))));
      const pc = ofKind(effs, 'signVote')[0]!;
      assert.deepEqual([pc.vote.type, pc.extend], [2, extend]);
    }
  });

  it('the committed block ends the height: everything of it is reset and timeout_commit counts from the decision', () => {
    const { d, chain, keyOf, others, self } = setup();
    d.send((now) => ({ kind: 'start', now }));
    const block = blockFor(chain, keyOf(0));
    const id = blockIdOf(block);
    const next = nextChainState(chain, block, id, emptyResult(chain));
    assert.deepEqual(
      d.send((now) => ({ kind: 'committed', chain: next, now })),
      [],
      'not decided',
    );
    d.signWith(self, d.propose(signedProposal(keyOf(0), block, 0), block));
    d.send((now) => ({ kind: 'txsAvailable', now }));
    for (const k of others) d.vote(signedVote(chain, k, 1, 1, 0, id));
    d.vote(signedVote(chain, others[0]!, 2, 1, 0, id));
    d.vote(signedVote(chain, others[1]!, 2, 1, 0, id));
    // Precommit still pending with the signer; then the decision.
    d.vote(signedVote(chain, others[2]!, 2, 1, 0, id));
    assert.equal(d.state.decided, true);
    assert.ok(d.state.pendingVotes.length > 0 && d.state.lockedRound === 0);
    assert.deepEqual(
      d.send((now) => ({ kind: 'committed', chain: { ...next, lastBlockHeight: 2 }, now })),
      [],
      'a chain state of another height',
    );
    d.now += 4000n * MS; // executing the block took longer than timeout_commit
    const effs = d.send((now) => ({ kind: 'committed', chain: next, now }));
    assert.deepEqual(effs, [
      { kind: 'publish', event: { kind: 'NewRoundStep', height: 2, round: 0, step: 'RoundStepNewHeight' } },
      { kind: 'scheduleTimeout', height: 2, round: 0, step: 'NewHeight', durationMs: 0 },
    ]);
    const s = d.state;
    assert.deepEqual(
      {
        height: s.height,
        round: s.round,
        step: s.step,
        startTime: s.startTime,
        ownIndex: s.ownIndex,
        proposals: s.proposals.size,
        blocks: s.blocks.size,
        validity: s.validity.size,
        lockedRound: s.lockedRound,
        lockedBlock: s.lockedBlock,
        validRound: s.validRound,
        validBlock: s.validBlock,
        polkaSeen: s.polkaSeen,
        triggeredPrecommitWait: s.triggeredPrecommitWait,
        commitRound: s.commitRound,
        decided: s.decided,
        decidedCommit: s.decidedCommit,
        decidedWithoutExtensions: s.decidedWithoutExtensions,
        commitTime: s.commitTime,
        pendingVotes: s.pendingVotes,
        pendingProposal: s.pendingProposal,
        txsAvailable: s.txsAvailable,
        proposers: s.proposers.size,
        prevotes: s.votes.prevotes(0).all().length,
        chain: s.chain === next,
      },
      {
        height: 2,
        round: 0,
        step: 'NewHeight',
        startTime: d.now,
        ownIndex: next.validators.indexOf(self.address),
        proposals: 0,
        blocks: 0,
        validity: 0,
        lockedRound: -1,
        lockedBlock: null,
        validRound: -1,
        validBlock: null,
        polkaSeen: false,
        triggeredPrecommitWait: false,
        commitRound: -1,
        decided: false,
        decidedCommit: null,
        decidedWithoutExtensions: false,
        commitTime: null,
        pendingVotes: [],
        pendingProposal: null,
        txsAvailable: false,
        proposers: 0,
        prevotes: 0,
        chain: true,
      },
    );
    assert.equal(s.votes.height, 2);
    assert.equal(s.lastCommit!.sum, 30n);
  });

  it("a non-validator's next height has no own index; a validator proposing height 2 asks with the last commit's time", () => {
    const chain = genesis(keys);
    const probe = createEngine(config(null), chain, null);
    const p0 = keys.find((k) => hex(k.address) === hex(proposerOf(probe, 0).address))!;
    const block = blockFor(chain, p0);
    const id = blockIdOf(block);
    const next = nextChainState(chain, block, id, emptyResult(chain));
    const p2 = keys.find(
      (k) => hex(k.address) === hex(proposerOf(createEngine(config(null), next, null), 0).address),
    )!;
    for (const own of [null, p2]) {
      const d = new Driver(config(own), chain);
      d.send((now) => ({ kind: 'start', now }));
      d.propose(signedProposal(p0, block, 0), block);
      const ts = [3000n, 1000n, 2000n, 4000n];
      ordered(chain).forEach((k, i) => {
        if (own && k === own) {
          d.send((now) => ({
            kind: 'ownVote',
            vote: signedVote(chain, k, 2, 1, 0, id, GENESIS_TIME + ts[i]! * MS),
            now,
          }));
        } else d.vote(signedVote(chain, k, 2, 1, 0, id, GENESIS_TIME + ts[i]! * MS));
      });
      d.send((now) => ({ kind: 'committed', chain: next, now }));
      assert.equal(d.state.ownIndex, own ? next.validators.indexOf(own.address) : -1);
      const effs = d.timeout('NewHeight');
      if (!own) {
        assert.deepEqual(ofKind(effs, 'requestProposal'), []);
        continue;
      }
      const req = ofKind(effs, 'requestProposal')[0]!;
      // The BFT time of the last commit: its power-weighted median (CometBFT's: the earliest time by
      // which half the power has signed), after the last block.
      assert.equal(req.height, 2);
      assert.ok(req.time > next.lastBlockTime);
      assert.equal(req.time, GENESIS_TIME + 2000n * MS);
      const pp = d.state.pendingProposal;
      assert.ok(pp && pp.stage === 'txs');
      assert.equal(pp.lastCommit!.height, 1);
      assert.equal(pp.lastCommit!.signatures.filter((s) => s.blockIdFlag === 2).length, 4);
    }
  });

  it("with vote extensions the proposer of height 2 hands PrepareProposal the last height's extended votes", () => {
    const chain = extGenesis();
    const probe = createEngine(config(null), chain, null);
    const p0 = keys.find((k) => hex(k.address) === hex(proposerOf(probe, 0).address))!;
    const block = blockFor(chain, p0);
    const id = blockIdOf(block);
    const next = nextChainState(chain, block, id, emptyResult(chain));
    const p2 = keys.find(
      (k) => hex(k.address) === hex(proposerOf(createEngine(config(null), next, null), 0).address),
    )!;
    const d = new Driver(config(p2), chain);
    d.send((now) => ({ kind: 'start', now }));
    const ext = commitFor(chain, block, 0, true);
    d.send((now) => ({ kind: 'commitCert', block, commit: ext, extendedCommit: ext, now }));
    d.send((now) => ({ kind: 'committed', chain: next, now }));
    const req = ofKind(d.timeout('NewHeight'), 'requestProposal')[0]!;
    assert.ok(req.localLastCommit, 'extended votes handed over');
    assert.equal(req.localLastCommit.round, 0);
    assert.deepEqual(
      req.localLastCommit.votes.map((v) => [
        hex(v.validator.address),
        v.validator.power,
        v.blockIdFlag,
        v.voteExtension,
      ]),
      ext.signatures.map((s) => [hex(s.validatorAddress), 10n, 2, s.extension]),
    );
    assert.deepEqual(
      req.localLastCommit.votes.map((v) => v.extensionSignature),
      ext.signatures.map((s) => s.extensionSignature),
    );
  });
});

describe('engine handlers: what the mutation runs asked for', () => {
  it('start re-asks the validation of the pending block, not of an earlier proposal', () => {
    const { d, keyOf, chain, others } = setup();
    d.send((now) => ({ kind: 'start', now }));
    const a = blockFor(chain, keyOf(0), 'a');
    d.propose(signedProposal(keyOf(0), a, 0), a);
    for (const k of others) d.vote(signedVote(chain, k, 2, 1, 0, null));
    d.timeout('PrecommitWait');
    const b = blockFor(chain, keyOf(1), 'b');
    d.send((now) => ({ kind: 'proposal', proposal: signedProposal(keyOf(1), b, 1), block: b, now }));
    const v = ofKind(
      d.send((now) => ({ kind: 'start', now })),
      'validateBlock',
    );
    assert.deepEqual(
      v.map((e) => [e.round, hex(e.blockId.hash)]),
      [[1, hex(blockIdOf(b).hash)]],
    );
  });

  it('a lock restored from its own precommit is the record of the block precommitted, among several', () => {
    const { d, keyOf, chain, self } = setup();
    d.send((now) => ({ kind: 'start', now }));
    const a = blockFor(chain, keyOf(0), 'a');
    const b = blockFor(chain, keyOf(1), 'b');
    d.send((now) => ({ kind: 'proposal', proposal: signedProposal(keyOf(0), a, 0), block: a, now }));
    d.send((now) => ({ kind: 'proposal', proposal: signedProposal(keyOf(1), b, 1), block: b, now }));
    d.send((now) => ({ kind: 'ownVote', vote: signedVote(chain, self, 2, 1, 1, blockIdOf(b)), now }));
    assert.equal(d.state.lockedBlock, d.state.proposals.get(1));
  });

  it('a precommit of the height before, with no last commit held (the first height), is ignored', () => {
    const { d, others, chain } = setup();
    d.send((now) => ({ kind: 'start', now }));
    assert.equal(d.state.lastCommit, null);
    assert.deepEqual(d.vote({ ...signedVote(chain, others[0]!, 2, 0, 0, null) }), []);
    assert.deepEqual(d.vote({ ...signedVote(chain, others[0]!, 1, 0, 0, null) }), []);
  });

  it('a decision on a commit certificate is issued again with its block on start', () => {
    const { d, keyOf, chain } = setup();
    d.send((now) => ({ kind: 'start', now }));
    const block = blockFor(chain, keyOf(0));
    const dec = ofKind(
      d.send((now) => ({ kind: 'commitCert', block, commit: commitFor(chain, block), now })),
      'decide',
    );
    assert.deepEqual(
      ofKind(
        d.send((now) => ({ kind: 'start', now })),
        'decide',
      ),
      dec,
    );
  });

  it('an answer for a round this node left by a round skip is dropped, even in the next Propose', () => {
    const { d, others } = proposerSetup();
    d.send((now) => ({ kind: 'start', now }));
    const chain = d.chain;
    d.vote(signedVote(chain, others[0]!, 1, 1, 1, null));
    d.vote(signedVote(chain, others[1]!, 1, 1, 1, null));
    assert.deepEqual([d.state.round, d.state.step], [1, 'Propose']);
    assert.equal(d.state.pendingProposal?.round, 0, 'not the proposer of round 1: the old request stays');
    const effs = d.send((now) => ({ kind: 'proposalTxs', height: 1, round: 0, txs: [], evidence: [], now }));
    assert.deepEqual(effs, []);
    assert.equal(d.state.pendingProposal, null);
  });

  it("a sole validator's picked time counts only after the last block and past the BFT time it asked for", () => {
    const k = keys[0]!;
    const chain1 = genesis([k]);
    const b1 = blockFor(chain1, k);
    const id1 = blockIdOf(b1);
    const chain2 = nextChainState(chain1, b1, id1, emptyResult(chain1));
    const signedAt = chain2.lastBlockTime + 5000n * MS;
    const v = signedVote(chain1, k, 2, 1, 0, id1, signedAt);
    const commit1: Commit = {
      height: 1,
      round: 0,
      blockId: id1,
      signatures: [
        { blockIdFlag: 2, validatorAddress: k.address, timestamp: signedAt, signature: v.signature },
      ],
    };
    const last = chain2.lastBlockTime;
    for (const [time, expected] of [
      [last - 5n * MS, signedAt],
      [last, signedAt],
      [last + 1n, last + 1n],
    ] as const) {
      const d = new Driver(config(k), chain2);
      d.state = createEngine(config(k), chain2, commit1);
      d.send((now) => ({ kind: 'start', now }));
      const req = ofKind(d.effects, 'requestProposal')[0]!;
      assert.equal(req.time, signedAt, 'the BFT time of the last commit');
      const effs = d.send((now) => ({
        kind: 'proposalTxs',
        height: 2,
        round: 0,
        txs: [],
        evidence: [],
        time,
        now,
      }));
      assert.equal(ofKind(effs, 'signProposal')[0]!.block.header.time, expected, `picked ${time}`);
    }
    // A block 1 ms after the last one: the vote for it is 1 ms after the block, with the clock behind.
    const d = new Driver(config(k), chain2);
    d.send((now) => ({ kind: 'start', now }));
    const sp = ofKind(
      d.send((now) => ({
        kind: 'proposalTxs',
        height: 2,
        round: 0,
        txs: [],
        evidence: [],
        time: last + MS,
        now,
      })),
      'signProposal',
    )[0]!;
    d.now = last - 1000n * MS;
    const pv = ofKind(
      d.send({ kind: 'ownProposal', proposal: sp.proposal, block: sp.block, now: d.now }),
      'signVote',
    )[0]!;
    assert.equal(pv.vote.timestamp, last + 2n * MS);
  });

  it('with vote extensions, a height decided on a plain commit still makes the whole last commit', () => {
    const chain = extGenesis();
    const block = blockFor(chain, keys[0]!);
    const d = new Driver(config(keys[1]!), chain);
    d.send((now) => ({ kind: 'start', now }));
    d.send((now) => ({
      kind: 'commitCert',
      block,
      commit: commitFor(chain, block),
      nextHeightCommitted: true,
      now,
    }));
    d.send((now) => ({
      kind: 'committed',
      chain: nextChainState(chain, block, blockIdOf(block), emptyResult(chain)),
      now,
    }));
    assert.equal(d.state.lastCommit!.sum, 40n);
  });

  it('timeout_prevote and timeout_precommit are each their own setting', () => {
    const chain = genesis(keys);
    const probe = createEngine(config(null), chain, null);
    const proposers = [0, 1, 2].map((r) => hex(proposerOf(probe, r).address));
    const self = keys.find((k) => !proposers.includes(hex(k.address)))!;
    const others = keys.filter((k) => k !== self);
    const timeouts = {
      ...config(null).timeouts,
      prevote: 1100,
      prevoteDelta: 70,
      precommit: 1300,
      precommitDelta: 90,
    };
    const d = new Driver(config(self, { timeouts }), chain);
    d.send((now) => ({ kind: 'start', now }));
    d.vote(signedVote(chain, others[0]!, 1, 1, 1, null));
    d.vote(signedVote(chain, others[1]!, 2, 1, 1, null));
    assert.equal(d.state.round, 1);
    d.signWith(self, d.timeout('Propose'));
    d.vote(signedVote(chain, others[2]!, 1, 1, 1, blockIdOf(blockFor(chain, others[2]!))));
    d.signWith(self, d.timeout('PrevoteWait'));
    d.vote(signedVote(chain, others[0]!, 2, 1, 1, null));
    assert.deepEqual(
      ofKind(d.effects, 'scheduleTimeout')
        .filter((t) => t.step === 'PrevoteWait' || t.step === 'PrecommitWait')
        .map((t) => [t.step, t.durationMs]),
      [
        ['PrevoteWait', 1100 + 70],
        ['PrecommitWait', 1300 + 90],
      ],
    );
  });

  it('create_empty_blocks = false: the first height with an empty genesis app hash still needs its proof block; round 1 never waits', () => {
    const empty = genesisChainState(
      {
        chainId: CHAIN_ID,
        time: GENESIS_TIME,
        initialHeight: 1,
        validators: validatorsOf(keys),
        consensusParams: PARAMS,
      },
      new Uint8Array(0),
    );
    const a = new Driver(config(keys[0]!, { createEmptyBlocks: false }), empty);
    a.send((now) => ({ kind: 'start', now }));
    assert.equal(a.state.step, 'Propose');
    // Height 2, app hash unchanged: round 0 waits, round 1 (reached by a round skip) proposes.
    const chain = genesis(keys);
    const probe = createEngine(config(null), chain, null);
    const p = keys.find((k) => hex(k.address) === hex(proposerOf(probe, 0).address))!;
    const block = blockFor(chain, p);
    const next = nextChainState(chain, block, blockIdOf(block), {
      ...emptyResult(chain),
      appHash: chain.appHash,
    });
    const h2 = { ...next, lastBlockAppHash: chain.appHash };
    const d = new Driver(config(keys[0]!, { createEmptyBlocks: false }), h2);
    d.send((now) => ({ kind: 'start', now }));
    assert.equal(d.state.step, 'NewRound');
    const others = keys.filter((k) => k !== keys[0]);
    d.vote(signedVote(h2, others[0]!, 1, 2, 1, null));
    d.vote(signedVote(h2, others[1]!, 1, 2, 1, null));
    assert.deepEqual([d.state.round, d.state.step], [1, 'Propose']);
  });

  it('a block.max_bytes smaller than any block: every transaction dropped, and the empty block proposed', () => {
    const tiny = genesisChainState(
      {
        chainId: CHAIN_ID,
        time: GENESIS_TIME,
        initialHeight: 1,
        validators: validatorsOf(keys),
        consensusParams: { ...PARAMS, block: { maxBytes: 100n, maxGas: -1n } },
      },
      sha256(new TextEncoder().encode('app-genesis')),
    );
    const me = keys.find(
      (k) => hex(k.address) === hex(proposerOf(createEngine(config(null), tiny, null), 0).address),
    )!;
    const d = new Driver(config(me), tiny);
    d.send((now) => ({ kind: 'start', now }));
    const txs = [new Uint8Array(10).fill(1), new Uint8Array(10).fill(2)];
    const sp = ofKind(
      d.send((now) => ({ kind: 'proposalTxs', height: 1, round: 0, txs, evidence: [], now })),
      'signProposal',
    )[0]!;
    assert.deepEqual(sp.block.data.txs, []);
  });

  it('a node whose key is not in the validator set signs no vote', () => {
    const { chain } = setup();
    const outsider = testKey(9);
    const d = new Driver(config(outsider), chain);
    assert.equal(d.state.ownIndex, -1);
    d.send((now) => ({ kind: 'start', now }));
    assert.deepEqual(ofKind(d.timeout('Propose'), 'signVote'), []);
    assert.deepEqual(d.state.pendingVotes, []);
  });
});
