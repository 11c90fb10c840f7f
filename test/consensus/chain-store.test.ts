// The state store's records (libs/consensus/src/runtime/stores.ts): the chain state and the validator
// sets and params stored beside it are each encoded once a block, and a validator set's text is
// reused until it changes. What is written must stay byte for byte what the plain encoding of
// storeChainState / storeValidatorSet wrote before, since stores written then are read now.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  type ChainState,
  encodeTagged,
  makeBlock,
  nextChainState,
  StateStore,
  ValidatorSet,
} from '@noded/consensus';
import { storeChainState, storeValidatorSet } from '@noded/consensus/src/chainstate.js';
import { blockIdOf } from '@noded/consensus/src/hash.js';
import { MemoryKV } from '@noded/storage';
import type { FinalizeBlockResponse } from '@noded/types';
import { genesis, PARAMS, testKey } from './helpers.js';

const keys = [0, 1, 2, 3].map(testKey);
const enc = new TextEncoder();

function heightKey(prefix: string, h: number): Uint8Array {
  const p = enc.encode(prefix);
  const out = new Uint8Array(p.length + 8);
  out.set(p);
  new DataView(out.buffer).setBigUint64(p.length, BigInt(h));
  return out;
}

/** The records as saveState wrote them before it encoded each value once. */
function reference(s: ChainState): Map<string, string> {
  const h = s.lastBlockHeight;
  const text = (v: unknown) => Buffer.from(encodeTagged(v)).toString('hex');
  const k = (key: Uint8Array) => Buffer.from(key).toString('hex');
  const m = new Map<string, string>([
    [k(enc.encode('st:state')), text(storeChainState(s))],
    [k(heightKey('st:v:', h + 1)), text(storeValidatorSet(s.validators))],
    [k(heightKey('st:v:', h + 2)), text(storeValidatorSet(s.nextValidators))],
    [k(heightKey('st:p:', h + 1)), text(s.consensusParams)],
  ]);
  if (h >= s.initialHeight) m.set(k(heightKey('st:v:', h)), text(storeValidatorSet(s.lastValidators)));
  return m;
}

/** Every record a saveState of `s` writes, by hex key. */
async function written(s: ChainState): Promise<Map<string, string>> {
  const kv = new MemoryKV();
  await new StateStore(kv).saveState(s);
  const out = new Map<string, string>();
  for await (const [k, v] of kv.iterate({}))
    out.set(Buffer.from(k).toString('hex'), Buffer.from(v).toString('hex'));
  return out;
}

const response = (over: Partial<FinalizeBlockResponse> = {}): FinalizeBlockResponse => ({
  events: [],
  txResults: [],
  validatorUpdates: [],
  consensusParamUpdates: null,
  appHash: new Uint8Array(32).fill(7),
  ...over,
});

function next(s: ChainState, res: FinalizeBlockResponse = response()): ChainState {
  const block = makeBlock(s, {
    height: s.lastBlockHeight + 1,
    time: s.lastBlockTime + 1_000_000_000n,
    txs: [],
    evidence: [],
    lastCommit: null,
    proposerAddress: s.validators.proposer.address,
  });
  return nextChainState(s, block, blockIdOf(block), res);
}

describe('state store records', () => {
  it('are the same bytes as the plain encodings, block after block, through validator and param updates', async () => {
    let s = genesis(keys, [10n, 20n, 30n, 40n]);
    assert.deepEqual(await written(s), reference(s), 'genesis');
    for (let i = 1; i <= 12; i++) {
      let res = response();
      if (i === 4) res = response({ validatorUpdates: [{ pubKey: keys[1]!.publicKey, power: 55n }] });
      if (i === 7) res = response({ validatorUpdates: [{ pubKey: keys[0]!.publicKey, power: 0n }] });
      if (i === 9)
        res = response({
          consensusParamUpdates: { ...PARAMS, block: { ...PARAMS.block, maxGas: 12_345n } },
        });
      s = next(s, res);
      // Twice: the second save takes every set's text from its cache.
      assert.deepEqual(await written(s), reference(s), `height ${s.lastBlockHeight}`);
      assert.deepEqual(await written(s), reference(s), `height ${s.lastBlockHeight}, again`);
    }
  });

  it('a set changed in place after it was saved is saved with its change, and loads as it is', async () => {
    const kv = new MemoryKV();
    const store = new StateStore(kv);
    const s = next(next(genesis(keys)));
    await store.saveState(s);
    const h = s.lastBlockHeight;
    // Priorities and power written directly into the members, not through the set's methods.
    const v0 = s.validators.validators[0]!;
    v0.proposerPriority += 17n;
    s.nextValidators.validators[2]!.votingPower = 99n;
    await store.saveState(s);
    assert.deepEqual(await written(s), reference(s));
    const loaded = await store.loadValidators(h + 1);
    assert.equal(loaded!.validators[0]!.proposerPriority, v0.proposerPriority);
    assert.equal((await store.loadValidators(h + 2))!.validators[2]!.votingPower, 99n);
    assert.equal((await store.loadState())!.validators.validators[0]!.proposerPriority, v0.proposerPriority);
  });

  it("a set's text follows its increments, copies and changes, and a copy's change leaves the original's", () => {
    const set = genesis(keys, [10n, 20n, 30n, 40n]).validators;
    const text = (v: ValidatorSet) => new TextDecoder().decode(encodeTagged(storeValidatorSet(v)));
    assert.equal(set.storedJson(), text(set));
    const copy = set.copy();
    assert.equal(copy.storedJson(), set.storedJson());
    copy.incrementProposerPriority(1);
    assert.equal(copy.storedJson(), text(copy));
    assert.notEqual(copy.storedJson(), set.storedJson());
    assert.equal(set.storedJson(), text(set), 'the original is not moved by its copy');
    copy.applyChanges([{ pubKey: keys[3]!.publicKey, votingPower: 0n }]);
    assert.equal(copy.storedJson(), text(copy));
    assert.equal(copy.size, 3);
    const restored = ValidatorSet.restore(copy.validators, copy.proposerAddress);
    assert.equal(restored.storedJson(), copy.storedJson());
    assert.equal(ValidatorSet.empty().storedJson(), text(ValidatorSet.empty()));
  });
});
