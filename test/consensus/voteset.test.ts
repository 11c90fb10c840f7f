// VoteSet and HeightVoteSet: what the engine relies on beyond the +2/3 arithmetic (validators.test.ts
// holds the threshold boundaries). Each case here was a mutant of voteset.ts that the suite let
// survive (docs/reliability.md, "Mutation testing").
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  blockIdOf,
  HeightVoteSet,
  VoteSet,
  voteExtensionProblem,
  voteExtensionSignBytes,
} from '@noded/consensus';
import { blockIdKey } from '@noded/consensus/src/hash.js';
import { ed25519Sign, ed25519Verify, sha256 } from '@noded/crypto';
import type { BlockId, Vote } from '@noded/types';
import { blockFor, CHAIN_ID, genesis, signedVote, testKey } from './helpers.js';

const enc = new TextEncoder();
const keys = [0, 1, 2, 3].map(testKey);
const chain = genesis(keys, [10n, 10n, 10n, 11n]);
const idx = (k: number) => chain.validators.indexOf(keys[k]!.address);
const key = (k: number) => keys[k]!;
const idA = blockIdOf(blockFor(chain, keys[0]!, 'a'));
const idB = blockIdOf(blockFor(chain, keys[0]!, 'b'));
const idC = blockIdOf(blockFor(chain, keys[0]!, 'c'));
const idD = blockIdOf(blockFor(chain, keys[0]!, 'd'));

function prevote(k: number, id: BlockId | null, round = 0): Vote {
  return signedVote(chain, key(k), 1, 1, round, id);
}
function precommit(k: number, id: BlockId | null, round = 0): Vote {
  return signedVote(chain, key(k), 2, 1, round, id);
}

describe('VoteSet refuses what does not belong to it, and counts nothing for it', () => {
  it('a vote of another height, round or type is invalid but relayable', () => {
    const set = new VoteSet(CHAIN_ID, 1, 0, 1, chain.validators);
    const cases: Array<[Vote, string]> = [
      [signedVote(chain, key(0), 1, 2, 0, idA), 'vote 2/0/1 does not belong to set 1/0/1'],
      [prevote(0, idA, 1), 'vote 1/1/1 does not belong to set 1/0/1'],
      [precommit(0, idA), 'vote 1/0/2 does not belong to set 1/0/1'],
    ];
    for (const [vote, reason] of cases)
      assert.deepEqual(set.add(vote, ed25519Verify), { status: 'invalid', reason, relayable: true });
    assert.equal(set.sum, 0n);
    assert.equal(set.powerFor(blockIdKey(idA)), 0n);
    assert.deepEqual(set.list(), []);
  });

  it('an index out of range, or an index whose validator has another address, is refused even when trusted', () => {
    const set = new VoteSet(CHAIN_ID, 1, 0, 1, chain.validators);
    const outOfRange = { ...prevote(0, idA), validatorIndex: 4 };
    assert.deepEqual(set.add(outOfRange, ed25519Verify, true), {
      status: 'invalid',
      reason: 'validator index 4 is out of range 0..3',
    });
    // keys[0]'s vote claiming keys[1]'s slot: not counted for either, even without a signature check.
    const stolen = { ...prevote(0, idA), validatorIndex: idx(1) };
    assert.deepEqual(set.add(stolen, ed25519Verify, true), {
      status: 'invalid',
      reason: `validator index ${idx(1)} does not belong to the vote's address`,
    });
    assert.equal(set.sum, 0n);
    assert.equal(set.get(idx(1)), undefined);
  });

  it('a validator is counted for at most 3 different blocks; the 4th is refused as relayable', () => {
    const set = new VoteSet(CHAIN_ID, 1, 0, 1, chain.validators);
    assert.equal(set.add(prevote(0, idA), ed25519Verify).status, 'added');
    assert.equal(set.add(prevote(0, idB), ed25519Verify).status, 'conflict');
    assert.equal(set.add(prevote(0, idC), ed25519Verify).status, 'conflict');
    assert.deepEqual(set.add(prevote(0, idD), ed25519Verify), {
      status: 'invalid',
      reason: `validator ${idx(0)} already voted for 3 different blocks`,
      relayable: true,
    });
    assert.equal(set.powerFor(blockIdKey(idD)), 0n);
    assert.equal(set.powerFor(blockIdKey(idC)), 10n);
    assert.equal(set.sum, 10n);
  });
});

describe('VoteSet majority and listings', () => {
  it('keeps the first block to reach +2/3 even when equivocators push a second one over', () => {
    const set = new VoteSet(CHAIN_ID, 1, 0, 2, chain.validators);
    for (const k of [0, 1, 2, 3]) set.add(precommit(k, idA), ed25519Verify);
    assert.deepEqual(set.twoThirdsMajority()?.blockId, idA);
    for (const k of [0, 1, 2, 3]) assert.equal(set.add(precommit(k, idB), ed25519Verify).status, 'conflict');
    assert.equal(set.hasTwoThirdsFor(blockIdKey(idB)), true, 'equivocators count for both blocks');
    assert.deepEqual(set.twoThirdsMajority()?.blockId, idA, 'the majority seen first stays');
  });

  it('lists first votes in validator order, every vote held, votes per block and who voted', () => {
    const set = new VoteSet(CHAIN_ID, 1, 0, 1, chain.validators);
    const a0 = prevote(0, idA);
    const b0 = prevote(0, idB);
    const n2 = prevote(2, null);
    set.add(n2, ed25519Verify);
    set.add(a0, ed25519Verify);
    set.add(b0, ed25519Verify);
    const order = (vs: Vote[]) => vs.map((v) => v.validatorIndex);
    assert.deepEqual(
      order(set.list()),
      [idx(0), idx(2)].sort((x, y) => x - y),
    );
    assert.deepEqual(
      set.list().find((v) => v.validatorIndex === idx(0)),
      a0,
      "a validator's first vote is its vote",
    );
    assert.equal(set.all().length, 3);
    assert.deepEqual(set.get(idx(0)), a0);
    assert.deepEqual(set.get(idx(2)), n2);
    assert.deepEqual(set.votesFor(blockIdKey(idB)), [b0]);
    assert.deepEqual(set.votesFor(''), [n2]);
    assert.deepEqual(set.votesFor(blockIdKey(idC)), []);
    assert.equal(set.powerFor(blockIdKey(idC)), 0n);
    const bits = ['_', '_', '_', '_'];
    bits[idx(0)] = 'x';
    bits[idx(2)] = 'x';
    assert.equal(set.bits(), bits.join(''));
    assert.equal(new VoteSet(CHAIN_ID, 1, 0, 1, chain.validators).bits(), '____');
  });

  it("prints CometBFT's bit array with the power ratio", () => {
    const set = new VoteSet(CHAIN_ID, 1, 0, 1, chain.validators);
    assert.equal(set.bitArrayString(), 'BA{4:____} 0/41 = 0.00');
    set.add(prevote(0, idA), ed25519Verify);
    set.add(prevote(3, idA), ed25519Verify);
    const bits = ['_', '_', '_', '_'];
    bits[idx(0)] = 'x';
    bits[idx(3)] = 'x';
    assert.equal(set.bitArrayString(), `BA{4:${bits.join('')}} 21/41 = 0.51`);
  });
});

describe('VoteSet commits', () => {
  it('marks a precommit for another block absent, not nil, and forms a commit nobody voted for', () => {
    const set = new VoteSet(CHAIN_ID, 1, 0, 2, chain.validators);
    set.add(precommit(0, idA), ed25519Verify);
    set.add(precommit(1, idB), ed25519Verify);
    set.add(precommit(2, null), ed25519Verify);
    const c = set.makeCommit(idA);
    assert.deepEqual(
      keys.map((_, k) => c.signatures[idx(k)]!.blockIdFlag),
      [2, 1, 3, 1],
    );
    assert.deepEqual(c.signatures[idx(1)], {
      blockIdFlag: 1,
      validatorAddress: new Uint8Array(0),
      timestamp: 0n,
      signature: new Uint8Array(0),
    });
    const none = set.makeCommit(idC);
    assert.deepEqual(
      keys.map((_, k) => none.signatures[idx(k)]!.blockIdFlag),
      [1, 1, 3, 1],
    );
    assert.deepEqual(set.makeExtendedCommit(idC), none);
  });

  it('an extended commit adds nothing for votes without an extension signature', () => {
    const set = new VoteSet(CHAIN_ID, 1, 0, 2, chain.validators);
    // As decoded off the wire with extensions off: empty extension fields, not absent ones.
    const empty = {
      ...precommit(0, idA),
      extension: new Uint8Array(0),
      extensionSignature: new Uint8Array(0),
    };
    set.add(empty, ed25519Verify);
    set.add(precommit(1, idA), ed25519Verify);
    assert.deepEqual(set.makeExtendedCommit(idA), set.makeCommit(idA));
  });
});

describe('vote extension checks outside non-nil precommits', () => {
  const extSig = (k: number, extension: Uint8Array) =>
    ed25519Sign(key(k).seed, voteExtensionSignBytes(CHAIN_ID, { height: 1, round: 0, extension }));

  it('a prevote with an extension is refused even with extensions on', () => {
    const ext = enc.encode('x');
    const v = { ...prevote(0, idA), extension: ext, extensionSignature: extSig(0, ext) };
    assert.equal(
      voteExtensionProblem(CHAIN_ID, v, true, key(0).publicKey, ed25519Verify),
      'a prevote or nil precommit carries a vote extension',
    );
  });

  it('a nil precommit with only an extension, or only an extension signature, is refused', () => {
    const set = new VoteSet(CHAIN_ID, 1, 0, 2, chain.validators, true);
    const onlyExt = { ...precommit(0, null), extension: enc.encode('x') };
    const onlySig = { ...precommit(1, null), extensionSignature: sha256(enc.encode('sig')) };
    for (const v of [onlyExt, onlySig])
      assert.deepEqual(set.add(v, ed25519Verify), {
        status: 'invalid',
        reason: 'a prevote or nil precommit carries a vote extension',
      });
    assert.equal(set.sum, 0n);
  });
});

describe('trusted votes (own signer, stored commits)', () => {
  it('skip the signature and extension checks: a stored precommit without its extension is still counted', () => {
    const set = new VoteSet(CHAIN_ID, 1, 0, 2, chain.validators, true);
    const stored = { ...precommit(0, idA), signature: new Uint8Array(64) };
    assert.equal(set.add(stored, ed25519Verify).status, 'invalid', 'untrusted: the signature is checked');
    assert.deepEqual(set.add(stored, ed25519Verify, true), { status: 'added' });
    assert.equal(set.powerFor(blockIdKey(idA)), 10n);
  });
});

describe('HeightVoteSet', () => {
  it('checks signatures unless told the votes are trusted, and forged votes do not count towards a round skip', () => {
    const hvs = new HeightVoteSet(CHAIN_ID, 1, chain.validators);
    for (const k of [0, 1, 3]) {
      const forged = { ...prevote(k, idA, 2), signature: new Uint8Array(64) };
      assert.deepEqual(hvs.add(forged, ed25519Verify), { status: 'invalid', reason: 'invalid signature' });
    }
    assert.equal(hvs.hasOneThirdAny(2), false);
    assert.equal(hvs.prevotes(2).sum, 0n);
  });

  it('files prevotes and precommits apart, per round, and lists the rounds in numeric order', () => {
    const hvs = new HeightVoteSet(CHAIN_ID, 1, chain.validators);
    assert.equal(hvs.add(prevote(0, idA, 10), ed25519Verify).status, 'added');
    assert.equal(hvs.add(precommit(1, idA, 2), ed25519Verify).status, 'added');
    assert.equal(hvs.add(precommit(3, null, 9), ed25519Verify).status, 'added');
    assert.equal(hvs.prevotes(10).sum, 10n);
    assert.equal(hvs.precommits(10).sum, 0n);
    assert.equal(hvs.precommits(2).sum, 10n);
    assert.equal(hvs.prevotes(2).sum, 0n);
    assert.equal(hvs.precommits(9).powerFor(''), 11n);
    assert.deepEqual(hvs.roundNumbers(), [2, 9, 10]);
  });

  it('a validator voting twice in a round counts once towards the round skip', () => {
    const hvs = new HeightVoteSet(CHAIN_ID, 1, chain.validators);
    hvs.add(prevote(0, idA, 4), ed25519Verify);
    hvs.add(precommit(0, idA, 4), ed25519Verify);
    hvs.add(prevote(0, idB, 4), ed25519Verify);
    assert.equal(hvs.hasOneThirdAny(4), false, '10 of 41, however often it votes');
    hvs.add(prevote(1, idA, 4), ed25519Verify);
    assert.equal(hvs.hasOneThirdAny(4), true, '20 of 41');
  });
});
