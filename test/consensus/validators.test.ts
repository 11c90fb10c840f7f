import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { blockIdOf, HeightVoteSet, ValidatorSet, VoteSet } from '@noded/consensus';
import { blockIdKey } from '@noded/consensus/src/hash.js';
import { ed25519Verify } from '@noded/crypto';
import type { BlockId, Validator } from '@noded/types';
import { blockFor, CHAIN_ID, genesis, signedVote, testKey } from './helpers.js';

const enc = new TextEncoder();

/** A set as NewValidatorSet builds it: sorted by power then address, priorities 0, incremented once. */
function newSet(vals: Array<[string | Uint8Array, bigint]>): ValidatorSet {
  const list: Validator[] = vals.map(([a, p]) => ({
    address: typeof a === 'string' ? enc.encode(a) : a,
    pubKey: new Uint8Array(32),
    votingPower: p,
    proposerPriority: 0n,
  }));
  list.sort((x, y) =>
    x.votingPower !== y.votingPower
      ? x.votingPower > y.votingPower
        ? -1
        : 1
      : Buffer.compare(x.address, y.address),
  );
  const set = ValidatorSet.restore(list, null);
  set.incrementProposerPriority(1);
  return set;
}

const name = (v: Validator) => new TextDecoder().decode(v.address);

describe('proposer selection (weighted round-robin with priorities)', () => {
  it('matches CometBFT TestProposerSelection1 on unequal powers', () => {
    const set = newSet([
      ['foo', 1000n],
      ['bar', 300n],
      ['baz', 330n],
    ]);
    const got: string[] = [];
    for (let i = 0; i < 99; i++) {
      got.push(name(set.proposer));
      set.incrementProposerPriority(1);
    }
    const expected =
      'foo baz foo bar foo foo baz foo bar foo foo baz foo foo bar foo baz foo foo bar' +
      ' foo foo baz foo bar foo foo baz foo bar foo foo baz foo foo bar foo baz foo foo bar' +
      ' foo baz foo foo bar foo baz foo foo bar foo baz foo foo foo baz bar foo foo foo baz' +
      ' foo bar foo foo baz foo bar foo foo baz foo bar foo foo baz foo bar foo foo baz foo' +
      ' foo bar foo baz foo foo bar foo baz foo foo bar foo baz foo foo';
    assert.equal(got.join(' '), expected);
  });

  it('goes in address order for equal powers and lets a heavier validator propose twice in a row', () => {
    const a = (n: number) => {
      const x = new Uint8Array(20);
      x[19] = n;
      return x;
    };
    const equal = newSet([
      [a(0), 100n],
      [a(1), 100n],
      [a(2), 100n],
    ]);
    for (let i = 0; i < 15; i++) {
      assert.equal(equal.proposer.address[19], i % 3);
      equal.incrementProposerPriority(1);
    }
    const heavy400 = newSet([
      [a(0), 100n],
      [a(1), 100n],
      [a(2), 400n],
    ]);
    assert.equal(heavy400.proposer.address[19], 2);
    heavy400.incrementProposerPriority(1);
    assert.equal(heavy400.proposer.address[19], 0);
    const heavy401 = newSet([
      [a(0), 100n],
      [a(1), 100n],
      [a(2), 401n],
    ]);
    assert.equal(heavy401.proposer.address[19], 2);
    heavy401.incrementProposerPriority(1);
    assert.equal(heavy401.proposer.address[19], 2);
  });

  it('gives each validator proposer turns in proportion to its power', () => {
    const set = newSet([
      ['a', 1n],
      ['b', 2n],
      ['c', 3n],
      ['d', 4n],
    ]);
    const counts = new Map<string, number>();
    for (let i = 0; i < 1000; i++) {
      counts.set(name(set.proposer), (counts.get(name(set.proposer)) ?? 0) + 1);
      set.incrementProposerPriority(1);
    }
    assert.deepEqual(
      ['a', 'b', 'c', 'd'].map((k) => counts.get(k)),
      [100, 200, 300, 400],
    );
  });

  it('is deterministic across heights and rounds (copies agree, rounds do not disturb the height)', () => {
    const keys = [0, 1, 2, 3].map(testKey);
    const chain = genesis(keys, [5n, 10n, 15n, 20n]);
    const copy = ValidatorSet.restore(chain.validators.validators, chain.validators.proposerAddress);
    for (let r = 0; r < 12; r++)
      assert.deepEqual(copy.proposerForRound(r).address, chain.validators.proposerForRound(r).address);
    const before = chain.validators.validators.map((v) => v.proposerPriority);
    chain.validators.proposerForRound(7);
    assert.deepEqual(
      chain.validators.validators.map((v) => v.proposerPriority),
      before,
    );
    // round r of a height = round-0 set incremented r times
    assert.deepEqual(
      chain.validators.proposerForRound(3).address,
      chain.validators.copyIncrement(3).proposer.address,
    );
  });

  it('adds a new validator at -1.125 x total power, centres priorities and keeps the canonical order', () => {
    const keys = [0, 1, 2].map(testKey);
    const set = ValidatorSet.create(keys.slice(0, 2).map((k) => ({ pubKey: k.publicKey, votingPower: 10n })));
    set.applyChanges([{ pubKey: keys[2]!.publicKey, votingPower: 30n }]);
    assert.deepEqual(set.validators[0]!.address, keys[2]!.address);
    assert.equal(set.totalVotingPower, 50n);
    const sum = set.validators.reduce((a, v) => a + v.proposerPriority, 0n);
    assert.ok(sum >= -3n && sum <= 3n, `priorities are centred (sum ${sum})`);
    assert.ok(set.validators[0]!.proposerPriority < 0n, 'the newcomer starts behind');
    set.applyChanges([{ pubKey: keys[0]!.publicKey, votingPower: 0n }]);
    assert.equal(set.size, 2);
    assert.throws(
      () => set.applyChanges([{ pubKey: keys[0]!.publicKey, votingPower: 0n }]),
      /not a validator/,
    );
    assert.throws(
      () => set.applyChanges([{ pubKey: keys[1]!.publicKey, votingPower: -1n }]),
      /can't be negative/,
    );
  });
});

describe('VoteSet', () => {
  const keys = [0, 1, 2, 3].map(testKey);
  const chain = genesis(keys, [10n, 10n, 10n, 11n]);
  const block = blockFor(chain, keys[0]!);
  const id = blockIdOf(block);

  it('tallies by voting power with a strict +2/3 threshold and nil votes', () => {
    const set = new VoteSet(CHAIN_ID, 1, 0, 1, chain.validators);
    const by = (k: number) => keys[k]!;
    assert.equal(set.add(signedVote(chain, by(0), 1, 1, 0, id), ed25519Verify).status, 'added');
    assert.equal(set.add(signedVote(chain, by(1), 1, 1, 0, id), ed25519Verify).status, 'added');
    assert.equal(set.hasTwoThirdsAny(), false);
    assert.equal(set.add(signedVote(chain, by(2), 1, 1, 0, null), ed25519Verify).status, 'added');
    // 30 of 41 > 2/3 any; block has 20 of 41
    assert.equal(set.hasTwoThirdsAny(), true);
    assert.equal(set.twoThirdsMajority(), null);
    assert.equal(set.add(signedVote(chain, by(3), 1, 1, 0, id), ed25519Verify).status, 'added');
    assert.equal(set.powerFor(set.twoThirdsMajority()!.key), 31n);
    assert.deepEqual(set.twoThirdsMajority()!.blockId, id);
    assert.equal(set.powerFor(''), 10n);
  });

  it('reports a conflicting vote, still counts it for its block, and refuses bad signatures and indexes', () => {
    const set = new VoteSet(CHAIN_ID, 1, 0, 2, chain.validators);
    const first = signedVote(chain, keys[0]!, 2, 1, 0, null);
    assert.equal(set.add(first, ed25519Verify).status, 'added');
    assert.equal(set.add(first, ed25519Verify).status, 'duplicate');
    const second = signedVote(chain, keys[0]!, 2, 1, 0, id);
    const res = set.add(second, ed25519Verify);
    assert.equal(res.status, 'conflict');
    assert.deepEqual(res.status === 'conflict' && res.existing, first);
    assert.equal(set.powerFor(''), 10n);
    assert.equal(set.sum, 10n, 'the equivocator counts once towards the total');
    const forged = { ...signedVote(chain, keys[1]!, 2, 1, 0, id), signature: new Uint8Array(64) };
    assert.equal(set.add(forged, ed25519Verify).status, 'invalid');
    const wrongIndex = { ...signedVote(chain, keys[1]!, 2, 1, 0, id), validatorIndex: 2 };
    assert.equal(set.add(wrongIndex, ed25519Verify).status, 'invalid');
  });

  it('forms a commit with commit, nil and absent flags', () => {
    const set = new VoteSet(CHAIN_ID, 1, 0, 2, chain.validators);
    set.add(signedVote(chain, keys[0]!, 2, 1, 0, id), ed25519Verify);
    set.add(signedVote(chain, keys[1]!, 2, 1, 0, null), ed25519Verify);
    set.add(signedVote(chain, keys[3]!, 2, 1, 0, id), ed25519Verify);
    const commit = set.makeCommit(id);
    const flags = chain.validators.validators.map(
      (v) => commit.signatures[chain.validators.indexOf(v.address)]!.blockIdFlag,
    );
    const byKey = keys.map((k) => commit.signatures[chain.validators.indexOf(k.address)]!.blockIdFlag);
    assert.deepEqual(byKey, [2, 3, 1, 2]);
    assert.equal(flags.length, 4);
  });
});

describe('VoteSet thresholds at the exact boundaries', () => {
  // Total power 60: 1/2 is 30, 2/3 is 40, 1/3 is 20. The powers let votes land exactly on each.
  const keys = [0, 1, 2, 3, 4].map(testKey);
  const powers = [20n, 19n, 10n, 10n, 1n];
  const chain = genesis(keys, powers);
  const id = blockIdOf(blockFor(chain, keys[0]!));
  const key = blockIdKey(id);

  /** Adds prevotes for `id` from validators `who` (indexes into `keys`) to a fresh set. */
  function setWith(who: number[], blockId: BlockId | null = id): VoteSet {
    const set = new VoteSet(CHAIN_ID, 1, 0, 1, chain.validators);
    for (const k of who)
      assert.equal(set.add(signedVote(chain, keys[k]!, 1, 1, 0, blockId), ed25519Verify).status, 'added');
    return set;
  }

  it('exactly 1/2 and between 1/2 and 2/3 of the power is not a majority', () => {
    for (const who of [
      [0, 2],
      [1, 2, 4],
      [0, 2, 4],
      [0, 1],
    ]) {
      const set = setWith(who);
      const power = set.powerFor(key);
      assert.ok(power >= 30n && power < 40n, `${power} of 60`);
      assert.equal(set.twoThirdsMajority(), null, `${power} of 60 is no +2/3 majority`);
      assert.equal(set.hasTwoThirdsFor(key), false, `${power} of 60`);
      assert.equal(set.hasTwoThirdsAny(), false, `${power} of 60`);
    }
  });

  it('exactly 2/3 of the power is not a majority; one more unit of power is', () => {
    const exact = setWith([0, 2, 3]);
    assert.equal(exact.powerFor(key), 40n);
    assert.equal(exact.twoThirdsMajority(), null, '40 of 60 is exactly 2/3, not more');
    assert.equal(exact.hasTwoThirdsFor(key), false);
    assert.equal(exact.hasTwoThirdsAny(), false);

    assert.equal(exact.add(signedVote(chain, keys[4]!, 1, 1, 0, id), ed25519Verify).status, 'added');
    assert.equal(exact.powerFor(key), 41n);
    assert.deepEqual(exact.twoThirdsMajority()?.blockId, id, '41 of 60 is more than 2/3');
    assert.equal(exact.hasTwoThirdsFor(key), true);
    assert.equal(exact.hasTwoThirdsAny(), true);
  });

  it('exactly 2/3 of the power voting for anything (split votes) is not +2/3 any; one more unit is', () => {
    const set = setWith([0, 2]);
    assert.equal(set.add(signedVote(chain, keys[3]!, 1, 1, 0, null), ed25519Verify).status, 'added');
    assert.equal(set.sum, 40n);
    assert.equal(set.hasTwoThirdsAny(), false, '40 of 60 voted: exactly 2/3');
    assert.equal(set.add(signedVote(chain, keys[4]!, 1, 1, 0, null), ed25519Verify).status, 'added');
    assert.equal(set.sum, 41n);
    assert.equal(set.hasTwoThirdsAny(), true);
    assert.equal(set.twoThirdsMajority(), null, 'no single block has +2/3');
  });

  it('a nil majority needs more than 2/3 too', () => {
    const exact = setWith([0, 2, 3], null);
    assert.equal(exact.twoThirdsMajority(), null);
    assert.equal(exact.add(signedVote(chain, keys[4]!, 1, 1, 0, null), ed25519Verify).status, 'added');
    assert.equal(exact.twoThirdsMajority()?.key, '');
  });

  it('round skipping needs more than 1/3 of the power in the round: exactly 1/3 is not', () => {
    const hvs = new HeightVoteSet(CHAIN_ID, 1, chain.validators);
    assert.equal(hvs.add(signedVote(chain, keys[2]!, 1, 1, 3, id), ed25519Verify).status, 'added');
    assert.equal(hvs.add(signedVote(chain, keys[3]!, 2, 1, 3, null), ed25519Verify).status, 'added');
    assert.equal(hvs.hasOneThirdAny(3), false, '20 of 60 is exactly 1/3');
    assert.equal(hvs.add(signedVote(chain, keys[4]!, 2, 1, 3, id), ed25519Verify).status, 'added');
    assert.equal(hvs.hasOneThirdAny(3), true, '21 of 60 is more than 1/3');
  });
});
