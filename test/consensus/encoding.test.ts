import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  blockIdOf,
  blockSize,
  checkBlock,
  commitHash,
  decodeBlock,
  encodeBlock,
  evidenceListHash,
  headerHash,
  makeDuplicateVoteEvidence,
  partSetHeaderOf,
  proposalSignBytes,
  txsHash,
  voteSignBytes,
} from '@noded/consensus';
import { merkleRoot, sha256 } from '@noded/crypto';
import type { Block, Header } from '@noded/types';
import {
  blockFor,
  CHAIN_ID,
  GENESIS_TIME,
  genesis,
  MS,
  nilId,
  PARAMS,
  signedVote,
  testKey,
} from './helpers.js';

const enc = new TextEncoder();
const h = (b: Uint8Array) => Buffer.from(b).toString('hex').toUpperCase();
const GO_ZERO_TIME_TS = [0x2a, 0xb, 0x8, 0x80, 0x92, 0xb8, 0xc3, 0x98, 0xfe, 0xff, 0xff, 0xff, 0x1];

describe('canonical sign bytes (CometBFT v0.38 test vectors)', () => {
  const vote = (type: 0 | 1 | 2, height: number, round: number) => ({
    type,
    height,
    round,
    blockId: nilId(),
    timestamp: 0n,
  });

  it('encodes an empty vote as the zero timestamp only', () => {
    assert.deepEqual([...voteSignBytes('', vote(0, 0, 0))], [0xd, ...GO_ZERO_TIME_TS]);
  });

  it('encodes height and round as sfixed64 and the type as a varint', () => {
    const fixed = (n: number) => [n, 0, 0, 0, 0, 0, 0, 0];
    assert.deepEqual(
      [...voteSignBytes('', vote(2, 1, 1))],
      [0x21, 0x8, 0x2, 0x11, ...fixed(1), 0x19, ...fixed(1), ...GO_ZERO_TIME_TS],
    );
    assert.deepEqual(
      [...voteSignBytes('', vote(1, 1, 1))],
      [0x21, 0x8, 0x1, 0x11, ...fixed(1), 0x19, ...fixed(1), ...GO_ZERO_TIME_TS],
    );
    assert.deepEqual(
      [...voteSignBytes('', vote(0, 1, 1))],
      [0x1f, 0x11, ...fixed(1), 0x19, ...fixed(1), ...GO_ZERO_TIME_TS],
    );
  });

  it('appends the chain id last', () => {
    const fixed = (n: number) => [n, 0, 0, 0, 0, 0, 0, 0];
    assert.deepEqual(
      [...voteSignBytes('test_chain_id', vote(0, 1, 1))],
      [
        0x2e,
        0x11,
        ...fixed(1),
        0x19,
        ...fixed(1),
        ...GO_ZERO_TIME_TS,
        0x32,
        0xd,
        ...enc.encode('test_chain_id'),
      ],
    );
  });

  it('includes the canonical block id for non-nil votes and leaves it out for nil', () => {
    const id = {
      hash: new Uint8Array(32).fill(1),
      partSetHeader: { total: 1, hash: new Uint8Array(32).fill(2) },
    };
    const withId = voteSignBytes(CHAIN_ID, {
      type: 1,
      height: 5,
      round: 0,
      blockId: id,
      timestamp: GENESIS_TIME,
    });
    const nil = voteSignBytes(CHAIN_ID, {
      type: 1,
      height: 5,
      round: 0,
      blockId: nilId(),
      timestamp: GENESIS_TIME,
    });
    // field 4, CanonicalBlockID {1: hash, 2: {1: total, 2: hash}} = 2+32 + 2+(2+34) = 72 bytes
    assert.ok(h(withId).includes(`22480A20${'01'.repeat(32)}122408011220${'02'.repeat(32)}`));
    assert.equal(withId.length - nil.length, 74);
  });

  it('encodes a proposal as a length-delimited CanonicalProposal with pol_round as int64', () => {
    const id = {
      hash: enc.encode('--June_15_2020_amino_was_removed'),
      partSetHeader: { total: 111, hash: enc.encode('--June_15_2020_amino_was_removed') },
    };
    const ts = BigInt(Date.parse('2018-02-11T07:09:22.765Z')) * MS;
    const got = proposalSignBytes('test_chain_id', {
      height: 12345,
      round: 23456,
      polRound: -1,
      blockId: id,
      timestamp: ts,
    });
    const le = (n: number) => {
      const b = Buffer.alloc(8);
      b.writeBigInt64LE(BigInt(n));
      return [...b];
    };
    const bid = [0x0a, 32, ...id.hash, 0x12, 36, 0x08, 111, 0x12, 32, ...id.hash];
    const tsBytes = [0x08, ...varint(1518332962n), 0x10, ...varint(765000000n)];
    const body = [
      0x08,
      0x20,
      0x11,
      ...le(12345),
      0x19,
      ...le(23456),
      0x20,
      0xff,
      0xff,
      0xff,
      0xff,
      0xff,
      0xff,
      0xff,
      0xff,
      0xff,
      0x01,
      0x2a,
      bid.length,
      ...bid,
      0x32,
      tsBytes.length,
      ...tsBytes,
      0x3a,
      13,
      ...enc.encode('test_chain_id'),
    ];
    assert.deepEqual([...got], [...varint(BigInt(body.length)), ...body]);
  });
});

function varint(v: bigint): number[] {
  const out: number[] = [];
  while (v > 0x7fn) {
    out.push(Number(v & 0x7fn) | 0x80);
    v >>= 7n;
  }
  out.push(Number(v));
  return out;
}

describe('block hashing', () => {
  it('hashes a header like CometBFT (TestHeaderHash vector)', () => {
    const header: Header = {
      version: { block: 1, app: 2 },
      chainId: 'chainId',
      height: 3,
      time: BigInt(Date.UTC(2019, 9, 13, 16, 14, 44)) * MS,
      lastBlockId: { hash: new Uint8Array(32), partSetHeader: { total: 6, hash: new Uint8Array(32) } },
      lastCommitHash: sha256(enc.encode('last_commit_hash')),
      dataHash: sha256(enc.encode('data_hash')),
      validatorsHash: sha256(enc.encode('validators_hash')),
      nextValidatorsHash: sha256(enc.encode('next_validators_hash')),
      consensusHash: sha256(enc.encode('consensus_hash')),
      appHash: sha256(enc.encode('app_hash')),
      lastResultsHash: sha256(enc.encode('last_results_hash')),
      evidenceHash: sha256(enc.encode('evidence_hash')),
      proposerAddress: sha256(enc.encode('proposer_address')).subarray(0, 20),
    };
    assert.equal(h(headerHash(header)), 'F740121F553B5418C3EFBD343C2DBFE9E007BB67B0D020A0741374BAB65242A4');
  });

  it('builds RFC 6962 merkle trees', () => {
    const leaf = (x: Uint8Array) => sha256(Buffer.concat([Buffer.from([0]), x]));
    const inner = (l: Uint8Array, r: Uint8Array) => sha256(Buffer.concat([Buffer.from([1]), l, r]));
    const [a, b, c] = ['a', 'b', 'c'].map((s) => enc.encode(s)) as [Uint8Array, Uint8Array, Uint8Array];
    assert.deepEqual(merkleRoot([]), sha256(new Uint8Array(0)));
    assert.deepEqual(merkleRoot([a]), leaf(a));
    assert.deepEqual(merkleRoot([a, b, c]), inner(inner(leaf(a), leaf(b)), leaf(c)));
    assert.deepEqual(txsHash([a, b]), inner(leaf(sha256(a)), leaf(sha256(b))));
    assert.deepEqual(commitHash(null), new Uint8Array(0));
  });

  it('splits blocks into 64 KiB parts', () => {
    assert.equal(partSetHeaderOf(new Uint8Array(10)).total, 1);
    assert.equal(partSetHeaderOf(new Uint8Array(65536)).total, 1);
    assert.equal(partSetHeaderOf(new Uint8Array(65537)).total, 2);
    assert.deepEqual(partSetHeaderOf(new Uint8Array(10)).hash, merkleRoot([new Uint8Array(10)]));
  });

  it('round-trips a block with evidence and last commit through its protobuf encoding', () => {
    const keys = [0, 1, 2, 3].map(testKey);
    const chain = genesis(keys);
    const va = signedVote(chain, keys[1]!, 2, 1, 0, null);
    const vb = signedVote(chain, keys[1]!, 2, 1, 0, {
      hash: sha256(enc.encode('x')),
      partSetHeader: { total: 1, hash: sha256(enc.encode('y')) },
    });
    const ev = makeDuplicateVoteEvidence(va, vb, GENESIS_TIME, chain.validators);
    const base = blockFor(chain, keys[0]!);
    const block: Block = {
      ...base,
      evidence: [ev],
      header: { ...base.header, evidenceHash: evidenceListHash([ev]) },
      lastCommit: {
        height: 7,
        round: 2,
        blockId: {
          hash: sha256(enc.encode('b')),
          partSetHeader: { total: 1, hash: sha256(enc.encode('p')) },
        },
        signatures: [
          {
            blockIdFlag: 2,
            validatorAddress: keys[0]!.address,
            timestamp: GENESIS_TIME + 5n,
            signature: new Uint8Array(64).fill(3),
          },
          {
            blockIdFlag: 1,
            validatorAddress: new Uint8Array(0),
            timestamp: 0n,
            signature: new Uint8Array(0),
          },
          {
            blockIdFlag: 3,
            validatorAddress: keys[2]!.address,
            timestamp: GENESIS_TIME - 7n,
            signature: new Uint8Array(64).fill(4),
          },
        ],
      },
    };
    const bytes = encodeBlock(block);
    const back = decodeBlock(bytes);
    assert.deepEqual(back, block);
    assert.deepEqual(blockIdOf(back), blockIdOf(block));
    assert.equal(blockSize(block), bytes.length);
  });

  it('rejects a proposal over consensus_params.block.max_bytes', () => {
    const keys = [testKey(0)];
    const small = { ...PARAMS, block: { maxBytes: 2000n, maxGas: -1n } };
    const chain = { ...genesis(keys), consensusParams: small };
    const ok = blockFor(chain, keys[0]!);
    assert.equal(
      checkBlock(chain, ok, () => true),
      null,
    );
    const big = { ...ok, data: { txs: [new Uint8Array(3000).fill(65)] } };
    big.header = { ...ok.header, dataHash: txsHash(big.data.txs) };
    assert.match(
      checkBlock(chain, big, () => true) ?? '',
      /block size \d+ exceeds consensus_params.block.max_bytes 2000/,
    );
  });

  it('rejects blocks whose header does not match the chain state', () => {
    const keys = [testKey(0), testKey(1)];
    const chain = genesis(keys);
    const b = blockFor(chain, keys[0]!);
    assert.match(
      checkBlock(chain, { ...b, header: { ...b.header, appHash: new Uint8Array(32) } }, () => true) ?? '',
      /app_hash/,
    );
    assert.match(
      checkBlock(chain, { ...b, header: { ...b.header, height: 2 } }, () => true) ?? '',
      /height 2 is not 1/,
    );
    assert.match(
      checkBlock(chain, { ...b, header: { ...b.header, time: b.header.time + 1n } }, () => true) ?? '',
      /genesis time/,
    );
    assert.match(
      checkBlock(chain, { ...b, header: { ...b.header, proposerAddress: new Uint8Array(20) } }, () => true) ??
        '',
      /not a validator/,
    );
    assert.match(checkBlock(chain, { ...b, data: { txs: [] } }, () => true) ?? '', /data_hash/);
  });
});
