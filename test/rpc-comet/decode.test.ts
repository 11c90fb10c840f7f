// CometBFT JSON read back into consensus types: headers, commits (with absent and nil signatures)
// and validators survive encode -> decode unchanged, so a light block fetched over RPC verifies;
// malformed fields are refused with their path.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { headerHash, verifyTrustRoot } from '../../libs/consensus/index.js';
import { ed25519Verify } from '../../libs/crypto/index.js';
import {
  CometJsonError,
  commitFromJson,
  commitJson,
  headerFromJson,
  headerJson,
  validatorFromJson,
  validatorJson,
} from '../../libs/rpc/index.js';
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
});
