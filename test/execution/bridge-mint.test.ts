// The bridge transaction: the proposer's tally of attested deposits (> 2/3 of the power, identical
// data) and the check every validator runs in ProcessProposal, with real ed25519 signatures over
// consensus' CanonicalVoteExtension sign bytes.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { voteExtensionSignBytes } from '@noded/consensus';
import { ed25519Address, ed25519Generate, ed25519Sign, sha256 } from '@noded/crypto';
import {
  type AttestingValidator,
  checkBridgeTx,
  type Deposit,
  decodeBridgeTx,
  encodeAttestation,
  encodeBridgeTx,
  tallyAttestations,
} from '@noded/execution';
import type { ExtendedCommitInfo, ExtendedVoteInfo } from '@noded/types';

const CHAIN = 'chain-local';
const H = 7; // the height whose precommits carry the extensions
const ROUND = 1;
const keys = [0, 1, 2, 3].map((i) => ed25519Generate(sha256(new TextEncoder().encode(`bridge-mint-${i}`))));
const validators: AttestingValidator[] = keys.map((k) => ({
  address: ed25519Address(k.publicKey),
  pubKey: k.publicKey,
  power: 10n,
}));
const input = (next = 1n) => ({ chainId: CHAIN, height: H, validators, next });

const token = '0x2222222222222222222222222222222222222222';
const dep = (
  sequence: bigint,
  recipient = '0x00000000000000000000000000000000000a11ce',
  amount = 5n,
): Deposit => ({
  sequence,
  recipient,
  token,
  amount,
  sourceBlock: 0n,
  sourceTx: '',
});

function vote(
  i: number,
  deposits: Deposit[],
  opts: { round?: number; height?: number } = {},
): ExtendedVoteInfo {
  const ext = encodeAttestation(deposits);
  return {
    validator: { address: validators[i]!.address, power: 10n },
    blockIdFlag: 2,
    voteExtension: ext,
    extensionSignature: ed25519Sign(
      keys[i]!.seed,
      voteExtensionSignBytes(CHAIN, { height: opts.height ?? H, round: opts.round ?? ROUND, extension: ext }),
    ),
  };
}

const commit = (votes: ExtendedVoteInfo[]): ExtendedCommitInfo => ({ round: ROUND, votes });

describe('bridge transaction: tally and check', () => {
  it('mints the longest run attested identically by more than 2/3 of the power', () => {
    const honest = [dep(1n), dep(2n), dep(3n)];
    const tx = tallyAttestations(
      commit([vote(0, honest), vote(1, honest), vote(2, honest.slice(0, 2)), vote(3, [])]),
      input(),
    );
    assert.ok(tx);
    // Sequence 3 has only 20 of 40: not minted; 1 and 2 have 30.
    assert.deepEqual(
      tx.deposits.map((d) => d.sequence),
      [1n, 2n],
    );
    assert.equal(tx.votes.length, 3);
    assert.equal(checkBridgeTx(decodeBridgeTx(encodeBridgeTx(tx)), input()), null);
  });

  it('a forged deposit seen by one validator (or two of four) is never minted', () => {
    const real = [dep(1n)];
    const forged = [dep(1n, '0x000000000000000000000000000000000000dead', 10n ** 20n)];
    // Two honest against one forger and one silent: 20 of 40 each, nothing has > 2/3.
    assert.equal(tallyAttestations(commit([vote(0, real), vote(1, real), vote(2, forged)]), input()), null);
    const tx = tallyAttestations(
      commit([vote(0, real), vote(1, real), vote(2, real), vote(3, forged)]),
      input(),
    );
    assert.deepEqual(
      tx?.deposits.map((d) => d.recipient),
      [real[0]!.recipient],
    );
    // A proposer claiming the forged deposit with the forger's (valid) signature is refused.
    const bad = { ...tx!, deposits: forged };
    assert.equal(
      checkBridgeTx(bad, input()),
      'deposit 1 lacks identical attestations from more than 2/3 of the voting power',
    );
  });

  it('refuses a skipped or repeated sequence number, a wrong round, a stranger, a duplicate, a tampered extension', () => {
    const ds = [dep(4n), dep(5n)];
    const votes = [vote(0, ds), vote(1, ds), vote(2, ds)];
    const tx = tallyAttestations(commit(votes), input(4n))!;
    assert.equal(checkBridgeTx(tx, input(4n)), null);
    assert.equal(checkBridgeTx(tx, input(3n)), 'the first deposit is sequence 4, but the next to mint is 3');
    assert.equal(checkBridgeTx(tx, input(5n)), 'the first deposit is sequence 4, but the next to mint is 5');
    assert.match(
      checkBridgeTx({ ...tx, round: 0 }, input(4n))!,
      /^vote 0: the extension signature of 0x[0-9a-f]{40} does not verify for height 7 round 0$/,
    );
    const stranger = ed25519Generate(sha256(new TextEncoder().encode('stranger')));
    const sv = { ...tx.votes[0]!, validator: ed25519Address(stranger.publicKey) };
    assert.match(
      checkBridgeTx({ ...tx, votes: [sv, ...tx.votes.slice(1)] }, input(4n))!,
      /was not a validator at height 7/,
    );
    assert.match(
      checkBridgeTx({ ...tx, votes: [tx.votes[0]!, tx.votes[0]!, tx.votes[1]!] }, input(4n))!,
      /appears twice/,
    );
    const tampered = { ...tx.votes[2]!, extension: encodeAttestation([dep(4n, undefined, 6n), dep(5n)]) };
    assert.match(
      checkBridgeTx({ ...tx, votes: [tx.votes[0]!, tx.votes[1]!, tampered] }, input(4n))!,
      /does not verify/,
    );
    // Two valid votes only: 20 of 40.
    assert.equal(
      checkBridgeTx({ ...tx, votes: tx.votes.slice(0, 2) }, input(4n)),
      'deposit 4 lacks identical attestations from more than 2/3 of the voting power',
    );
    // Truncated bytes do not decode (a repeated or skipped number inside the list does not either).
    const raw = encodeBridgeTx(tx);
    assert.throws(() => decodeBridgeTx(raw.subarray(0, raw.length - 1)), /ends inside vote 2/);
  });

  it('an extension made before the last block minted part of it still attests the rest', () => {
    const ds = [dep(1n), dep(2n), dep(3n)];
    const tx = tallyAttestations(commit([vote(0, ds), vote(1, ds), vote(2, ds)]), input(3n));
    assert.deepEqual(
      tx?.deposits.map((d) => d.sequence),
      [3n],
    );
    assert.equal(checkBridgeTx(tx!, input(3n)), null);
  });

  it('ignores extensions signed for another height and votes that are not commit votes', () => {
    const ds = [dep(1n)];
    const other = vote(2, ds, { height: H - 1 });
    const nil = { ...vote(3, ds), blockIdFlag: 3 as const };
    assert.equal(tallyAttestations(commit([vote(0, ds), vote(1, ds), other, nil]), input()), null);
  });
});
