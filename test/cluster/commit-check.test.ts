// A read replica checks the commit of every height it applies (libs/stream CommitChecker): a real
// single-validator consensus runtime drives the executor with the `lightBlocks` option (as the
// cluster's consensus service does), the executor's outbox records carry each height's light block,
// and a replica applies them from the genesis record, verifying each against the genesis validators
// and then each previous header; across a reopen it still verifies. A height without a commit,
// with a forged signature, with another height's commit, signed by another validator set (a chain
// of its own, self-consistent), with an Ethereum block that is not the signed one, or built on
// another app hash, is refused with the reason, and nothing of it is written.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { RLP } from '@ethereumjs/rlp';
import { validatorKeyJson } from '@noded/config';
import { decodeLightBlock, encodeLightBlock } from '@noded/consensus';
import { keccak256 } from '@noded/crypto';
import { Executor } from '@noded/execution';
import { MemoryKV } from '@noded/storage';
import {
  CommitCheckError,
  CommitChecker,
  decodeCommitted,
  encodeCommitted,
  ReplicaStore,
} from '@noded/stream';
import { type Application, EventBus, type FinalizeBlockRequest, type ValidatorUpdate } from '@noded/types';
import { testKey, validatorsOf } from '../consensus/helpers.js';
import {
  addr,
  ETH,
  executorOptions,
  GENESIS_TIME,
  GWEI,
  genesisState,
  key,
  signTx,
  TEST_CONSENSUS_PARAMS,
} from '../execution/helpers.js';
import { Chain, VALIDATOR_KEY } from './helpers.js';

const cleanups: Array<() => unknown> = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

const sender = key(1);
const appState = genesisState([{ address: addr(sender), balance: 10n * ETH }]);

/** Runs a chain of `validator` over a fresh executor to `height`; returns its outbox records in order. */
async function recordsOf(
  validator: ReturnType<typeof testKey>,
  height: number,
  transfer: boolean,
  /** Validator updates the application returns at a height (as staking does), on top of the executor's. */
  updates?: { at: number; updates: ValidatorUpdate[] },
) {
  const kv = new MemoryKV();
  const executor = await Executor.open(
    executorOptions(kv, new EventBus(), { outbox: { encode: encodeCommitted } }),
  );
  cleanups.push(() => executor.close());
  const app: Application = !updates
    ? executor
    : new Proxy(executor, {
        get(target, prop) {
          if (prop === 'finalizeBlock')
            return async (req: FinalizeBlockRequest) => {
              const res = await target.finalizeBlock(req);
              return req.height === updates.at
                ? { ...res, validatorUpdates: [...res.validatorUpdates, ...updates.updates] }
                : res;
            };
          const v = Reflect.get(target, prop);
          return typeof v === 'function' ? v.bind(target) : v;
        },
      });
  const chain = new Chain(app, {
    chainId: 'chain-local',
    lightBlocks: true,
    genesis: {
      time: GENESIS_TIME,
      initialHeight: 1,
      validators: validatorsOf([validator]),
      consensusParams: TEST_CONSENSUS_PARAMS,
      appState,
    },
  });
  cleanups.push(() => chain.remove());
  // Chain writes VALIDATOR_KEY's key file; another validator signs with its own.
  writeFileSync(
    join(chain.dir, 'priv_validator_key.json'),
    validatorKeyJson({ seed: validator.seed, publicKey: validator.publicKey }),
  );
  await chain.runTo(1);
  if (transfer) {
    const checked = await executor.checkTx(
      signTx(sender, { nonce: 0n, to: addr(key(2)), value: ETH, maxFee: 20n * GWEI, tip: GWEI }),
      'new',
    );
    assert.equal(checked.code, 0, checked.log);
  }
  await chain.runTo(height);
  const entries = await executor.outboxEntries(1_000);
  return entries.map((e) => decodeCommitted(e.record));
}

const checker = () =>
  new CommitChecker({
    chainId: 'chain-local',
    initialHeight: 1,
    genesisValidators: validatorsOf([VALIDATOR_KEY]),
    consensusParams: TEST_CONSENSUS_PARAMS,
    genesisTime: GENESIS_TIME,
  });

const refusedWith = (code: string, re: RegExp) => (err: unknown) => {
  assert.ok(err instanceof CommitCheckError, `a CommitCheckError, got ${String(err)}`);
  assert.equal(err.code, code, err.message);
  assert.match(err.message, re);
  return true;
};

describe('state-store: the commit of every height is checked', () => {
  it('applies a chain whose every height +2/3 signed; refuses one without a valid commit for its block', async () => {
    const records = await recordsOf(VALIDATOR_KEY, 5, true);
    const top = records.at(-1)!.height;
    assert.ok(top >= 5, `heights 0..${top}`);
    assert.equal(records[0]!.height, 0);
    assert.equal(records[0]!.lightBlock, undefined, 'the genesis record carries no commit');
    for (const r of records.slice(1)) {
      assert.ok(r.lightBlock && r.lightBlock.length > 0, `height ${r.height} carries its light block`);
      const lb = decodeLightBlock(r.lightBlock);
      assert.equal(lb.header.height, r.height);
      assert.equal(lb.commit.signatures.length, 1);
    }

    // From the genesis record to the top, each verified; a reopened replica verifies from its own height.
    const kv = new MemoryKV();
    let replica = await ReplicaStore.open(kv, 'chain-local', checker());
    for (const r of records.slice(0, 3)) assert.equal(await replica.apply(r), true);
    replica = await ReplicaStore.open(kv, 'chain-local', checker());
    assert.equal(replica.height, 2);
    for (const r of records.slice(3, -1)) assert.equal(await replica.apply(r), true);
    assert.equal(replica.height, top - 1);

    const last = records.at(-1)!;
    const prev = records.at(-2)!;
    const lb = decodeLightBlock(last.lightBlock!);
    const refuse = async (r: typeof last, code: string, re: RegExp) => {
      await assert.rejects(replica.apply(r), refusedWith(code, re));
      assert.equal(replica.height, top - 1, 'nothing of the refused height is applied');
      assert.equal(await replica.record(top), undefined);
    };

    // no commit at all
    await refuse(
      { ...last, lightBlock: undefined },
      'NO_COMMIT',
      new RegExp(`height ${top} carries no commit`),
    );
    // a commit that does not decode
    await refuse(
      { ...last, lightBlock: Uint8Array.of(1, 2, 3) },
      'BAD_COMMIT',
      /CommittedHeight\.light_block does not decode/,
    );
    // a forged signature
    const sig = Uint8Array.from(lb.commit.signatures[0]!.signature);
    sig[0]! ^= 0xff;
    const forgedSig = encodeLightBlock({
      ...lb,
      commit: { ...lb.commit, signatures: [{ ...lb.commit.signatures[0]!, signature: sig }] },
    });
    await refuse(
      { ...last, lightBlock: forgedSig },
      'INVALID_COMMIT',
      /FORGED_SIGNATURE.*signature 0 is invalid/,
    );
    // another height's (genuine) commit
    await refuse(
      { ...last, lightBlock: prev.lightBlock },
      'NOT_THIS_BLOCK',
      new RegExp(`height ${top} carries the commit of height ${top - 1}`),
    );
    // a validator set that is not the header's
    const other = testKey(7);
    const wrongSet = encodeLightBlock({ ...lb, validators: validatorsOf([other]) });
    await refuse({ ...last, lightBlock: wrongSet }, 'INVALID_COMMIT', /VALIDATORS_HASH/);
    // the genuine commit, but another Ethereum block (its mix_hash is not the signed block's hash)
    const fields = RLP.decode(last.headerRlp) as Uint8Array[];
    fields[13] = new Uint8Array(32).fill(9);
    const headerRlp = RLP.encode(fields);
    await refuse(
      { ...last, headerRlp, blockHash: keccak256(headerRlp) },
      'NOT_THIS_BLOCK',
      /mix_hash 0x(09){32} is not the consensus block 0x[0-9a-f]{64} that the commit signs/,
    );
    // a block hash that is not its header's
    await refuse(
      { ...last, blockHash: new Uint8Array(32).fill(3) },
      'NOT_THIS_BLOCK',
      /is not the hash of its header_rlp/,
    );

    // The genuine height applies.
    assert.equal(await replica.apply(last), true);
    assert.equal(replica.height, top);
  });

  it('follows a validator set the application changes (as staking does) from the header that announced it', async () => {
    // At height 2 the application adds a validator of power 1 (the runtime's own, power 10, still
    // signs more than 2/3): consensus' set changes at height 4 (H + 2), as CometBFT's.
    const joined = testKey(3);
    const records = await recordsOf(VALIDATOR_KEY, 7, false, {
      at: 2,
      updates: [{ pubKey: joined.publicKey, power: 1n }],
    });
    const setAt = (h: number) => decodeLightBlock(records[h]!.lightBlock!).validators;
    assert.equal(setAt(3).length, 1, 'one validator until height 3');
    assert.equal(setAt(4).length, 2, 'two from height 4');
    assert.ok(setAt(4).some((v) => Buffer.compare(v.pubKey, joined.publicKey) === 0));
    assert.equal(decodeLightBlock(records[4]!.lightBlock!).commit.signatures.length, 2);

    const replica = await ReplicaStore.open(new MemoryKV(), 'chain-local', checker());
    for (const r of records.slice(0, 4)) assert.equal(await replica.apply(r), true);
    // Height 4 with the set of height 3 (what a stale or forged proof would carry) is refused...
    const lb4 = decodeLightBlock(records[4]!.lightBlock!);
    const stale = encodeLightBlock({ ...lb4, validators: setAt(3) });
    await assert.rejects(
      replica.apply({ ...records[4]!, lightBlock: stale }),
      refusedWith('INVALID_COMMIT', /VALIDATORS_HASH/),
    );
    // ...the real one, signed under the new set, applies, and so does every height after it.
    for (const r of records.slice(4)) assert.equal(await replica.apply(r), true);
    assert.equal(replica.height, records.at(-1)!.height);
  });

  it('refuses a chain signed by validators that are not the genesis set, and results the next header contradicts', async () => {
    const ours = await recordsOf(VALIDATOR_KEY, 3, false);
    // A chain of its own, self-consistent and signed, by a validator the genesis does not name.
    const theirs = await recordsOf(testKey(5), 3, false);
    assert.deepEqual(theirs[0]!.blockHash, ours[0]!.blockHash, 'the same genesis block');
    const replica = await ReplicaStore.open(new MemoryKV(), 'chain-local', checker());
    assert.equal(await replica.apply(ours[0]!), true);
    assert.deepEqual(theirs[1]!.parentHash, replica.blockHash, 'their height 1 chains by parent hash');
    await assert.rejects(
      replica.apply(theirs[1]!),
      refusedWith('INVALID_COMMIT', /height 1: its commit does not verify \(VALIDATORS_HASH\)/),
    );
    assert.equal(replica.height, 0);

    // Height 1 with another app hash (its results) applies (its own commit is valid), but the next
    // signed header names the real one: height 2 is refused.
    assert.equal(await replica.apply({ ...ours[1]!, appHash: new Uint8Array(32).fill(4) }), true);
    await assert.rejects(
      replica.apply(ours[2]!),
      refusedWith(
        'NOT_THIS_BLOCK',
        /the signed header's app_hash 0x[0-9a-f]{64} is not the app hash 0x(04){32} of height 1/,
      ),
    );
    assert.equal(replica.height, 1);
  });
});
