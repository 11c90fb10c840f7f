// CometBFT JSON read back into consensus types: headers, commits (with absent and nil signatures)
// and validators survive encode -> decode unchanged, so a light block fetched over RPC verifies;
// malformed fields are refused with their path. Whole blocks (transactions, duplicate-vote
// evidence, the first block's empty commit) and transaction results too, as an rpc-edge's REST reads
// them from the consensus service: decoded, they print the same gateway JSON as the originals.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { headerHash, verifyTrustRoot } from '@noded/consensus';
import { ed25519Verify } from '@noded/crypto';
import {
  blockFromJson,
  blockJson,
  CometJsonError,
  commitFromJson,
  commitJson,
  execTxResultFromJson,
  headerFromJson,
  headerJson,
  validatorFromJson,
  validatorJson,
} from '@noded/rpc';
import { execTxResultJson } from '@noded/rpc/src/comet/encode.js';
import { protoBlock } from '@noded/rpc/src/rest/encode.js';
import type { Block, ExecTxResult, Vote } from '@noded/types';
import { CHAIN_ID, GENESIS_TIME } from '../consensus/helpers.js';
import { KEYS, lightBlock, S, setOf } from '../consensus/light-helpers.js';

const json = (v: unknown) => JSON.parse(JSON.stringify(v));
const trust = { trustingPeriodNs: 3600n * S, maxClockDriftNs: 10n * S, now: GENESIS_TIME + 100n * S };

describe('CometBFT JSON decoding', () => {
  it('reads back what the RPC writes, and the light block still verifies', () => {
    const vals = setOf(KEYS.slice(0, 4), [40n, 30n, 20n, 10n]);
    const lb = lightBlock({
      height: 9,
      vals,
      time: GENESIS_TIME + 9n * S + 123_456_789n,
      signs: (k) => k !== KEYS[3],
    });
    const header = headerFromJson(json(headerJson(lb.header)));
    assert.deepEqual(header, lb.header);
    assert.deepEqual(headerHash(header), headerHash(lb.header));
    const commit = commitFromJson(json(commitJson(lb.commit)));
    assert.deepEqual(commit, lb.commit);
    assert.equal(
      commit.signatures.filter((sig) => sig.blockIdFlag === 1).length,
      1,
      'the absent signature survives',
    );
    const validators = json(lb.validators.map(validatorJson)).map((v: unknown, i: number) =>
      validatorFromJson(v, `v[${i}]`),
    );
    assert.deepEqual(validators, lb.validators);
    verifyTrustRoot(
      CHAIN_ID,
      { header, commit, validators },
      { hash: headerHash(lb.header) },
      trust,
      ed25519Verify,
    );
    // A nil vote (flag 3) keeps its address, time and signature.
    const nil = { ...lb.commit, signatures: [{ ...lb.commit.signatures[0]!, blockIdFlag: 3 as const }] };
    assert.deepEqual(commitFromJson(json(commitJson(nil))), nil);
  });

  it('names the field that does not decode', () => {
    const lb = lightBlock({ height: 3, vals: setOf(KEYS.slice(0, 2)) });
    const h = json(headerJson(lb.header));
    const cases: Array<[() => unknown, RegExp]> = [
      [() => headerFromJson({ ...h, height: 'x' }), /^header\.height: not an integer \("x"\)$/],
      [() => headerFromJson({ ...h, time: 'yesterday' }), /^header\.time: not an RFC3339 time/],
      [() => headerFromJson({ ...h, app_hash: 'zz' }), /^header\.app_hash: encoding\/hex: invalid byte/],
      [() => headerFromJson({ ...h, last_block_id: null }), /^header\.last_block_id: not an object$/],
      [() => headerFromJson([]), /^header: not an object$/],
      [
        () => commitFromJson({ ...json(commitJson(lb.commit)), signatures: [{ block_id_flag: 7 }] }),
        /signatures\[0\]\.block_id_flag: 7 is not 1, 2 or 3/,
      ],
      [
        () => commitFromJson({ ...json(commitJson(lb.commit)), signatures: 'all' }),
        /^commit\.signatures: not a list$/,
      ],
      [
        () =>
          validatorFromJson({
            ...json(validatorJson(lb.validators[0]!)),
            pub_key: { type: 'tendermint/PubKeySecp256k1', value: '' },
          }),
        /pub_key\.type: "tendermint\/PubKeySecp256k1" is not tendermint\/PubKeyEd25519/,
      ],
      [
        () => validatorFromJson({ ...json(validatorJson(lb.validators[0]!)), voting_power: 1.5 }),
        /voting_power: not a string/,
      ],
    ];
    for (const [fn, message] of cases) {
      assert.throws(fn, (err: unknown) => err instanceof CometJsonError && message.test(err.message));
    }
  });

  it('reads back a block with transactions and evidence, the first block, and transaction results', () => {
    const lb = lightBlock({ height: 7, vals: setOf(KEYS.slice(0, 3)), time: GENESIS_TIME + 7n * S + 5n });
    const vote = (round: number, hashByte: number): Vote => ({
      type: 2,
      height: 6,
      round,
      blockId: {
        hash: new Uint8Array(32).fill(hashByte),
        partSetHeader: { total: 1, hash: new Uint8Array(32).fill(9) },
      },
      timestamp: GENESIS_TIME + 6n * S + 1_000n,
      validatorAddress: lb.validators[1]!.address,
      validatorIndex: 1,
      signature: new Uint8Array(64).fill(round + 1),
    });
    const block: Block = {
      header: lb.header,
      data: { txs: [Uint8Array.from([1, 2, 3]), Uint8Array.from([0xff])] },
      evidence: [
        {
          voteA: vote(0, 1),
          voteB: vote(0, 2),
          totalVotingPower: 30n,
          validatorPower: 10n,
          timestamp: GENESIS_TIME + 6n * S,
        },
      ],
      lastCommit: lb.commit,
    };
    const back = blockFromJson(json(blockJson(block)));
    assert.deepEqual(back, block);
    assert.deepEqual(protoBlock(back, 'P'), protoBlock(block, 'P'));
    const first: Block = { ...block, data: { txs: [] }, evidence: [], lastCommit: null };
    const firstBack = blockFromJson(json(blockJson(first)));
    assert.equal(firstBack.lastCommit, null);
    assert.deepEqual(protoBlock(firstBack), protoBlock(first));

    const results: ExecTxResult[] = [
      {
        code: 0,
        data: Uint8Array.from([7, 7]),
        log: '',
        info: '',
        gasWanted: 21_000n,
        gasUsed: 21_000n,
        events: [{ type: 'ethereum_tx', attributes: [{ key: 'txHash', value: '0xab', index: true }] }],
        codespace: '',
      },
      {
        code: 3,
        data: new Uint8Array(0),
        log: 'reverted',
        info: 'x',
        gasWanted: 5n,
        gasUsed: 4n,
        events: [],
        codespace: 'evm',
      },
    ];
    assert.deepEqual(
      results.map((r, i) => execTxResultFromJson(json(execTxResultJson(r)), `r[${i}]`)),
      results,
    );
    assert.throws(
      () => blockFromJson({ ...json(blockJson(block)), data: { txs: ['**'] } }),
      /^CometJsonError: block\.data\.txs\[0\]: not base64$/,
    );
    assert.throws(
      () => execTxResultFromJson({ ...json(execTxResultJson(results[0]!)), code: 'x' }),
      /tx_result\.code: not an integer/,
    );
  });
});
