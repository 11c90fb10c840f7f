// The engine's gossip queries: what a node re-sends on its own (its votes of this and the last
// round, the prevotes of a re-proposal's POL round), the status it announces, and what a peer at
// the same height lacks by its status (the proposal, votes by its bits, and a behind peer's
// catch-up with this node's round). Driven through step() by the real engine.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  blockIdOf,
  type ConsensusMessage,
  createEngine,
  gossipMessages,
  isOwnProposer,
  messagesForPeer,
  proposerOf,
  statusMessage,
} from '@noded/consensus';
import type { Vote } from '@noded/types';
import { blockFor, config, Driver, genesis, hex, signedProposal, signedVote, testKey } from './helpers.js';

const keys = [0, 1, 2, 3].map(testKey);
type Status = Extract<ConsensusMessage, { kind: 'status' }>;

/** A validator that is not the proposer of rounds 0..2, with the proposers' keys. */
function setup(own = true) {
  const chain = genesis(keys);
  const probe = createEngine(config(null), chain, null);
  const proposers = [0, 1, 2, 3].map((r) => hex(proposerOf(probe, r).address));
  const self = keys.find((k) => !proposers.slice(0, 3).includes(hex(k.address)))!;
  const keyOf = (r: number) => keys.find((k) => hex(k.address) === proposers[r])!;
  const others = keys.filter((k) => k !== self);
  const d = new Driver(config(own ? self : null), chain);
  return { chain, self, others, keyOf, d };
}

/** What a message list is, in a form assert can compare: `P<round>` or `<type>/<round>/<validator>/<block>`. */
function describeAll(
  ms: Array<{ kind: 'proposal'; proposal: { round: number } } | { kind: 'vote'; vote: Vote }>,
) {
  return ms.map((m) => {
    if (m.kind === 'proposal') return `P${m.proposal.round}`;
    // Anything but a vote message (a wrong kind would not be sent as one) shows as such.
    if (m.kind !== 'vote') return `kind ${JSON.stringify((m as { kind: unknown }).kind)}`;
    const v = m.vote;
    return `${v.type === 1 ? 'pv' : 'pc'}/${v.round}/${v.validatorIndex}/${v.blockId.hash.length === 0 ? 'nil' : hex(v.blockId.hash).slice(0, 6)}`;
  });
}

function status(d: Driver, overrides: Partial<Status> = {}): Status {
  return { kind: 'status', height: d.state.height, round: d.state.round, step: 'Propose', ...overrides };
}

describe('engine gossip: what a node re-sends', () => {
  it('its own prevote and precommit of the current and the previous round, in that order, no older', () => {
    const { d, self, others, keyOf, chain } = setup();
    const me = chain.validators.indexOf(self.address);
    d.signWith(
      self,
      d.send((now) => ({ kind: 'start', now })),
    );
    assert.deepEqual(gossipMessages(d.state), [], 'nothing signed yet');
    const b0 = blockFor(chain, keyOf(0));
    d.signWith(self, d.propose(signedProposal(keyOf(0), b0, 0), b0));
    const h0 = hex(blockIdOf(b0).hash).slice(0, 6);
    assert.deepEqual(describeAll(gossipMessages(d.state)), [`pv/0/${me}/${h0}`]);
    const effs = others.flatMap((k) => d.vote(signedVote(chain, k, 1, 1, 0, null)));
    d.signWith(self, effs);
    assert.deepEqual(describeAll(gossipMessages(d.state)), [`pv/0/${me}/${h0}`, `pc/0/${me}/nil`]);
    // Round 1: the node's round-0 votes are still re-sent, beside its round-1 prevote.
    for (const k of others) d.vote(signedVote(chain, k, 2, 1, 0, null));
    d.signWith(self, d.timeout('PrecommitWait'));
    d.signWith(self, d.timeout('Propose', 1));
    assert.equal(d.state.round, 1);
    assert.deepEqual(describeAll(gossipMessages(d.state)), [
      `pv/0/${me}/${h0}`,
      `pc/0/${me}/nil`,
      `pv/1/${me}/nil`,
    ]);
    // Round 2: round 0 is no longer re-sent.
    d.signWith(self, d.timeout('PrecommitWait', 1));
    assert.equal(d.state.round, 2);
    assert.deepEqual(describeAll(gossipMessages(d.state)), [`pv/1/${me}/nil`]);
    // Another validator's votes are never among them.
    assert.ok(gossipMessages(d.state).every((m) => m.kind === 'vote' && m.vote.validatorIndex === me));
  });

  it("the prevotes of the current proposal's POL round for its block, whether or not the node votes", () => {
    for (const own of [true, false]) {
      const { d, others, keyOf, chain } = setup(own);
      d.send((now) => ({ kind: 'start', now }));
      const b0 = blockFor(chain, keyOf(0), 'zero');
      const other = blockFor(chain, keyOf(0), 'other');
      const id0 = blockIdOf(b0);
      // Round 0: two prevotes for b0, one for another block (no polka).
      d.vote(signedVote(chain, others[0]!, 1, 1, 0, id0));
      d.vote(signedVote(chain, others[1]!, 1, 1, 0, id0));
      d.vote(signedVote(chain, others[2]!, 1, 1, 0, blockIdOf(other)));
      d.timeout('PrecommitWait');
      assert.equal(d.state.round, 1);
      assert.deepEqual(gossipMessages(d.state), [], own ? 'this node signed nothing' : 'no own votes');
      // Round 1: b0 re-proposed with POL round 0.
      d.propose(signedProposal(keyOf(1), b0, 1, 0), b0);
      const sent = gossipMessages(d.state);
      const idx = (k: (typeof keys)[0]) => chain.validators.indexOf(k.address);
      assert.deepEqual(
        describeAll(sent).sort(),
        [
          `pv/0/${idx(others[0]!)}/${hex(id0.hash).slice(0, 6)}`,
          `pv/0/${idx(others[1]!)}/${hex(id0.hash).slice(0, 6)}`,
        ].sort(),
        'only the POL round prevotes for the proposed block',
      );
    }
  });

  it('nothing between heights, even with a vote or proposal of the next height already held', () => {
    const { d, self, others, keyOf, chain } = setup();
    assert.equal(d.state.step, 'NewHeight');
    const b0 = blockFor(chain, keyOf(0));
    d.propose(signedProposal(keyOf(0), b0, 0), b0);
    d.vote(signedVote(chain, others[0]!, 1, 1, 0, blockIdOf(b0)));
    d.send((now) => ({ kind: 'ownVote', vote: signedVote(chain, self, 1, 1, 0, blockIdOf(b0)), now }));
    assert.equal(d.state.step, 'NewHeight');
    assert.equal(d.state.votes.prevotes(0).all().length, 2);
    assert.deepEqual(gossipMessages(d.state), []);
    assert.deepEqual(messagesForPeer(d.state, status(d, { hasProposal: false })), []);
  });
  it('a validator at index 0 re-sends its votes too', () => {
    const chain = genesis(keys);
    const first = keys.find((k) => chain.validators.indexOf(k.address) === 0)!;
    const d = new Driver(config(first), chain);
    d.send((now) => ({ kind: 'start', now }));
    d.signWith(first, d.timeout('Propose'));
    assert.deepEqual(describeAll(gossipMessages(d.state)), ['pv/0/0/nil']);
  });
});

describe('engine gossip: status and what a peer lacks', () => {
  it('the status names the height, round, step, the vote bits of the round and whether it holds the proposal', () => {
    const { d, others, keyOf, chain } = setup();
    d.send((now) => ({ kind: 'start', now }));
    assert.deepEqual(statusMessage(d.state), {
      kind: 'status',
      height: 1,
      round: 0,
      step: 'Propose',
      prevotes: '____',
      precommits: '____',
      hasProposal: false,
    });
    const b0 = blockFor(chain, keyOf(0));
    d.propose(signedProposal(keyOf(0), b0, 0), b0);
    const i = chain.validators.indexOf(others[1]!.address);
    d.vote(signedVote(chain, others[1]!, 1, 1, 0, blockIdOf(b0)));
    d.vote(signedVote(chain, others[2]!, 2, 1, 0, null));
    const j = chain.validators.indexOf(others[2]!.address);
    const bits = (at: number) => [0, 1, 2, 3].map((n) => (n === at ? 'x' : '_')).join('');
    assert.deepEqual(statusMessage(d.state), {
      kind: 'status',
      height: 1,
      round: 0,
      step: 'Prevote',
      prevotes: bits(i),
      precommits: bits(j),
      hasProposal: true,
    });
    // In round 1 the bits are round 1's (none yet), and round 1 has no proposal.
    for (const k of others) d.vote(signedVote(chain, k, 2, 1, 0, null));
    d.timeout('PrecommitWait');
    assert.deepEqual(statusMessage(d.state), {
      kind: 'status',
      height: 1,
      round: 1,
      step: 'Propose',
      prevotes: '____',
      precommits: '____',
      hasProposal: false,
    });
  });

  it('a peer of the same round gets the proposal it lacks and the votes its bits miss, nothing it has', () => {
    const { d, others, keyOf, chain } = setup();
    d.send((now) => ({ kind: 'start', now }));
    const b0 = blockFor(chain, keyOf(0));
    const h = hex(blockIdOf(b0).hash).slice(0, 6);
    d.propose(signedProposal(keyOf(0), b0, 0), b0);
    const idx = others.map((k) => chain.validators.indexOf(k.address));
    d.vote(signedVote(chain, others[0]!, 1, 1, 0, blockIdOf(b0)));
    d.vote(signedVote(chain, others[1]!, 1, 1, 0, null));
    d.vote(signedVote(chain, others[2]!, 2, 1, 0, null));
    const bits = (set: number[]) => [0, 1, 2, 3].map((n) => (set.includes(n) ? 'x' : '_')).join('');
    const sorted = (xs: string[]) => [...xs].sort();
    // A peer that holds nothing (no bits at all) gets all of it.
    assert.deepEqual(
      sorted(describeAll(messagesForPeer(d.state, status(d)))),
      sorted(['P0', `pv/0/${idx[0]}/${h}`, `pv/0/${idx[1]}/nil`, `pc/0/${idx[2]}/nil`]),
    );
    // A peer with the proposal and one prevote gets the other prevote and the precommit.
    assert.deepEqual(
      sorted(
        describeAll(
          messagesForPeer(
            d.state,
            status(d, { hasProposal: true, prevotes: bits([idx[0]!]), precommits: bits([]) }),
          ),
        ),
      ),
      sorted([`pv/0/${idx[1]}/nil`, `pc/0/${idx[2]}/nil`]),
    );
    // A peer holding everything gets nothing; the bits of the other vote type do not count.
    assert.deepEqual(
      messagesForPeer(
        d.state,
        status(d, { hasProposal: true, prevotes: bits([idx[0]!, idx[1]!]), precommits: bits([idx[2]!]) }),
      ),
      [],
    );
    assert.deepEqual(
      describeAll(
        messagesForPeer(
          d.state,
          status(d, { hasProposal: true, prevotes: bits([idx[2]!]), precommits: bits([idx[0]!, idx[1]!]) }),
        ),
      ).sort(),
      sorted([`pv/0/${idx[0]}/${h}`, `pv/0/${idx[1]}/nil`, `pc/0/${idx[2]}/nil`]),
    );
  });

  it('a peer at another height gets nothing; a peer ahead in rounds gets only what this node holds of its round', () => {
    const { d, others, keyOf, chain } = setup();
    d.send((now) => ({ kind: 'start', now }));
    const b0 = blockFor(chain, keyOf(0));
    d.propose(signedProposal(keyOf(0), b0, 0), b0);
    d.vote(signedVote(chain, others[0]!, 1, 1, 0, blockIdOf(b0)));
    d.vote(signedVote(chain, others[1]!, 1, 1, 2, null));
    assert.deepEqual(messagesForPeer(d.state, status(d, { height: 2 })), []);
    assert.deepEqual(messagesForPeer(d.state, status(d, { height: 0 })), []);
    const ahead = messagesForPeer(d.state, status(d, { round: 2 }));
    assert.deepEqual(describeAll(ahead), [`pv/2/${chain.validators.indexOf(others[1]!.address)}/nil`]);
  });

  it('a peer rounds behind also gets the proposal and every vote of this node round, to skip to it', () => {
    const { d, others, keyOf, chain } = setup();
    d.send((now) => ({ kind: 'start', now }));
    const b0 = blockFor(chain, keyOf(0), 'zero');
    d.propose(signedProposal(keyOf(0), b0, 0), b0);
    for (const k of others) d.vote(signedVote(chain, k, 2, 1, 0, null));
    d.timeout('PrecommitWait');
    const b1 = blockFor(chain, keyOf(1), 'one');
    const h1 = hex(blockIdOf(b1).hash).slice(0, 6);
    d.propose(signedProposal(keyOf(1), b1, 1), b1);
    const idx = others.map((k) => chain.validators.indexOf(k.address));
    d.vote(signedVote(chain, others[0]!, 1, 1, 1, blockIdOf(b1)));
    d.vote(signedVote(chain, others[1]!, 2, 1, 1, null));
    assert.equal(d.state.round, 1);
    // The peer in round 0 holds round 0 entirely: it gets round 1 whole, even votes its round-0 bits mark.
    const all = 'xxxx';
    const got = describeAll(
      messagesForPeer(d.state, status(d, { round: 0, hasProposal: true, prevotes: all, precommits: all })),
    );
    assert.deepEqual(got, ['P1', `pv/1/${idx[0]}/${h1}`, `pc/1/${idx[1]}/nil`]);
    // A round without a proposal yet: the catch-up sends its votes only.
    const e = setup();
    e.d.send((now) => ({ kind: 'start', now }));
    const v = signedVote(chain, others[0]!, 1, 1, 1, null);
    e.d.vote(v);
    e.d.vote(signedVote(chain, others[1]!, 1, 1, 1, null));
    assert.equal(e.d.state.round, 1);
    assert.equal(e.d.state.proposals.size, 0);
    assert.deepEqual(
      describeAll(messagesForPeer(e.d.state, status(e.d, { round: 0, hasProposal: true }))).sort(),
      [`pv/1/${idx[0]}/nil`, `pv/1/${idx[1]}/nil`].sort(),
    );
    // A peer of this node's own round is not sent the round twice.
    assert.deepEqual(
      describeAll(messagesForPeer(d.state, status(d, { round: 1 }))).sort(),
      ['P1', `pv/1/${idx[0]}/${h1}`, `pc/1/${idx[1]}/nil`].sort(),
    );
  });

  it('the proposer of a round is the validator set rotation, and isOwnProposer says whether it is this node', () => {
    const { d, chain } = setup();
    for (let r = 0; r < 6; r++) {
      const expected = chain.validators.proposerForRound(r);
      assert.deepEqual(proposerOf(d.state, r).address, expected.address);
      assert.deepEqual(proposerOf(d.state, r).address, expected.address, 'asked twice, the same');
      const own = keys.find((k) => hex(k.address) === hex(expected.address))!;
      assert.equal(isOwnProposer(new Driver(config(own), chain).state, r), true);
      assert.equal(isOwnProposer(d.state, r), hex(d.state.config.ownAddress!) === hex(expected.address));
      assert.equal(isOwnProposer(new Driver(config(null), chain).state, r), false);
    }
  });
});
