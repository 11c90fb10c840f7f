// When unbonding and redelegation entries mature, through the executor on RocksDB (issue 25):
// - a redelegation away from a validator outside the active set follows the Cosmos SDK's
//   getBeginInfo: from a validator that never was in the set (or whose unbonding is over) it
//   completes at once with no entry; from one that left the set it matures when the validator's
//   unbonding ends; from one in the set (back in it) after unbonding_time;
// - matured entries are pruned at the end of the block they mature in: the pool account's storage
//   slots, counted in the RocksDB table of the latest state, go back to what they were before the
//   entries were made (the unbonding entries once withdrawn), at most 64 queue elements a block.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { fromHex } from '@noded/execution/src/bytes.js';
import { namedSlots } from '@noded/execution/src/precompiles/slots.js';
import { SlotMap, StakingStore } from '@noded/execution/src/precompiles/staking-state.js';
import { addr, ETH, key, produceBlock } from './helpers.js';
import {
  blockSeconds as blockTime,
  consensusKey,
  contract,
  doubleSign,
  eventsOf,
  keyHex,
  okBlock,
  POOL,
  poolAbi as pool,
  type StakingNet,
  startStakingNet,
  stopStakingNet as stop,
  updatesOf,
} from './staking-net.js';

const { read, one, refusal, tx } = contract(POOL, pool);
const UNBONDING = 1000n; // seconds (blocks are 1 s apart; the tests jump the clock)
const SECOND = 1_000_000_000n;

const ops = [key(1), key(2), key(3)]; // genesis operators, 10 BTC each
const [alice, carol] = [key(4), key(6)];
const delegators = Array.from({ length: 5 }, (_, i) => key(10 + i));

function start(): Promise<StakingNet> {
  return startStakingNet({
    operators: ops,
    accounts: [...ops, alice, carol, ...delegators],
    balance: 1000n * ETH,
    params: { unbonding_time: UNBONDING.toString(), max_validators: '3' },
    rocksDirPrefix: 'noded-maturity-',
  });
}

const block = (n: StakingNet, txs: Uint8Array[] = []) => okBlock(n, txs);

const lower = (x: unknown) => (typeof x === 'string' ? x.toLowerCase() : x);
const returned = (res: Awaited<ReturnType<typeof block>>, i = 0) =>
  BigInt(`0x${Buffer.from(res.txResults[i]!.data).toString('hex')}`);

/** The Redelegated events of the latest block, as [delegator, src, dst, amount, completionTime]. */
async function redelegatedEvents(n: StakingNet): Promise<unknown[][]> {
  const out: unknown[][] = [];
  for (const rc of await n.ex.getBlockReceipts(BigInt(n.height)))
    for (const log of rc!.logs) {
      const ev = pool.parseLog(log);
      if (ev?.name === 'Redelegated') out.push(ev.args.toArray().map(lower));
    }
  return out;
}

/** The delegator's maturing redelegations as the view lists them, one row per entry. */
async function entries(n: StakingNet, who: Uint8Array): Promise<unknown[][]> {
  const cols = (await read(n, 'redelegations', [addr(who)])).toArray() as unknown[][];
  return cols[0]!.map((_, i) => cols.map((c) => lower(c[i])));
}

/**
 * The pool account's storage slots in the latest state: the keys of RocksDB's latest-storage table
 * (prefix 0x11 ‖ address) under the pool's address. A slot written with 0 is deleted from it.
 */
async function poolSlots(n: StakingNet): Promise<number> {
  const prefix = Buffer.concat([Buffer.of(0x11), Buffer.from(POOL.slice(2), 'hex')]);
  const end = Buffer.concat([prefix, Buffer.alloc(32, 0xff)]);
  let count = 0;
  for await (const _ of n.kv.iterate({ gte: prefix, lte: end })) count++;
  return count;
}

describe('validator pool: redelegation from a validator outside the active set', () => {
  it('from a validator never in the set: completes at once, no entry, and the next move is not transitive', async () => {
    const n = await start();
    try {
      const [a, b] = ops.map((k) => addr(k));
      // carol's validator (power 1) is fourth with max_validators 3: never handed to consensus.
      const created = await block(n, [tx(n, carol, 'createValidator', [consensusKey(3), 'outside', 0], ETH)]);
      assert.deepEqual(updatesOf(created), []);
      await block(n, [tx(n, alice, 'delegate', [addr(carol)], 4n * ETH)]);
      assert.equal((await read(n, 'validator', [addr(carol)])).votingPower, 0n);
      assert.deepEqual((await read(n, 'validatorStatus', [addr(carol)])).toArray(), [1n, 0n, 0n], 'unbonded');

      const res = await block(n, [tx(n, alice, 'redelegate', [addr(carol), a, 3n * ETH])]);
      const now = blockTime(n);
      assert.equal(returned(res), now, 'completionTime is the block time');
      assert.deepEqual(await redelegatedEvents(n), [[addr(alice), addr(carol), a, 3n * ETH, now]]);
      assert.deepEqual(await entries(n, alice), [], 'no entry is kept');
      assert.equal(await one(n, 'delegation', [addr(alice), addr(carol)]), ETH);
      assert.equal(await one(n, 'delegation', [addr(alice), a]), 3n * ETH);
      assert.deepEqual(updatesOf(res), [{ key: keyHex(0), power: 13n }]);
      // Nothing is maturing towards a, so moving on from it is not a transitive redelegation.
      await block(n, [tx(n, alice, 'redelegate', [a, b, ETH])]);
      assert.deepEqual(
        (await entries(n, alice)).map((e) => e.slice(0, 3)),
        [[a, b, ETH]],
      );
    } finally {
      await stop(n);
    }
  });

  it('from a validator that left the set: matures when its unbonding ends, then at once; back in the set: after unbonding_time', async () => {
    const n = await start();
    try {
      const [a, b, c] = ops.map((k) => addr(k));
      await block(n, [tx(n, alice, 'delegate', [c], 4n * ETH)]);
      assert.deepEqual((await read(n, 'validatorStatus', [c])).toArray(), [3n, 0n, 0n], 'bonded');
      // c's operator keeps 0.5 BTC of self-bond, below min_self_bond: c leaves the set.
      const left = await block(n, [tx(n, ops[2]!, 'undelegate', [c, (19n * ETH) / 2n])]);
      assert.deepEqual(updatesOf(left), [{ key: keyHex(2), power: 0n }]);
      const unbondingEnd = blockTime(n) + UNBONDING;
      // The unbonding height is the height of the block that took c out of the set.
      const leftAt = BigInt(n.height);
      assert.deepEqual(
        (await read(n, 'validatorStatus', [c])).toArray(),
        [2n, unbondingEnd, leftAt],
        'unbonding',
      );

      const res = await block(n, [tx(n, alice, 'redelegate', [c, a, ETH])]);
      assert.equal(returned(res), unbondingEnd, "c's unbonding end, not block time + unbonding_time");
      assert.deepEqual(await redelegatedEvents(n), [[addr(alice), c, a, ETH, unbondingEnd]]);
      assert.deepEqual(await entries(n, alice), [[c, a, ETH, ETH, unbondingEnd, BigInt(n.height)]]);

      // Once c's unbonding is over the entry is gone and the next move away from c completes at once.
      n.time += (unbondingEnd - blockTime(n)) * SECOND;
      await block(n);
      assert.deepEqual(await entries(n, alice), []);
      assert.deepEqual(
        (await read(n, 'validatorStatus', [c])).toArray(),
        [1n, unbondingEnd, leftAt],
        'unbonded',
      );
      const now1 = await block(n, [tx(n, alice, 'redelegate', [c, b, ETH])]);
      assert.equal(returned(now1), blockTime(n));
      assert.deepEqual(await entries(n, alice), []);

      // c's operator bonds again: c is back in the set and a move away from it waits unbonding_time.
      const back = await block(n, [tx(n, ops[2]!, 'delegate', [c], ETH)]);
      assert.deepEqual(updatesOf(back), [{ key: keyHex(2), power: 3n }]);
      assert.deepEqual((await read(n, 'validatorStatus', [c])).toArray(), [3n, 0n, 0n], 'bonded again');
      const later = await block(n, [tx(n, alice, 'redelegate', [c, b, ETH / 2n])]);
      assert.equal(returned(later), blockTime(n) + UNBONDING);
      assert.equal((await entries(n, alice)).length, 1);
    } finally {
      await stop(n);
    }
  });

  it('a redelegation at once takes no entry: the 17th in a block is accepted', async () => {
    const n = await start();
    try {
      const a = addr(ops[0]!);
      await block(n, [tx(n, carol, 'createValidator', [consensusKey(3), 'outside', 0], ETH)]);
      // 9 BTC: carol's validator stays fourth, out of the set.
      await block(n, [tx(n, alice, 'delegate', [addr(carol)], 8n * ETH)]);
      await block(
        n,
        Array.from({ length: 17 }, () => tx(n, alice, 'redelegate', [addr(carol), a, ETH / 4n])),
      );
      assert.equal(await one(n, 'delegation', [addr(alice), a]), (17n * ETH) / 4n);
      assert.deepEqual(await entries(n, alice), []);
      // A move from a bonded validator still counts against the 16.
      await block(
        n,
        Array.from({ length: 16 }, () => tx(n, alice, 'redelegate', [a, addr(ops[1]!), ETH / 4n])),
      );
      assert.match(
        await refusal(n, alice, 'redelegate', [a, addr(ops[1]!), 1n]),
        /already has 16 redelegations maturing/,
      );
    } finally {
      await stop(n);
    }
  });
});

describe('validator pool: matured entries are pruned', () => {
  it("the pool's storage slots go back to their count before the entries once they matured (and the unbonding ones were withdrawn)", async () => {
    const n = await start();
    try {
      const [a, b] = ops.map((k) => addr(k));
      await block(
        n,
        delegators.flatMap((d) => [tx(n, d, 'delegate', [a], 3n * ETH), tx(n, d, 'delegate', [b], ETH)]),
      );
      await block(n);
      const before = await poolSlots(n);

      await block(
        n,
        delegators.flatMap((d) => [
          tx(n, d, 'undelegate', [a, ETH / 2n]),
          tx(n, d, 'redelegate', [a, b, ETH]),
        ]),
      );
      const during = await poolSlots(n);
      // Per delegator: an unbonding entry (4 slots) and its count, a redelegation entry (6) and its
      // count, its place in a's list of unbonding and of redelegating delegators (2 each), and two
      // maturity queue elements (2 each); once: the two lists' lengths and the queue's tail.
      assert.equal(during - before, delegators.length * (5 + 7 + 2 + 2 + 4) + 3);

      // One second before maturity nothing is pruned.
      n.time += (UNBONDING - 2n) * SECOND;
      await block(n);
      assert.equal(await poolSlots(n), during);
      for (const d of delegators) assert.equal((await entries(n, d)).length, 1);

      // The block they mature in prunes the redelegations, both lists and the queue.
      await block(n);
      for (const d of delegators) assert.deepEqual(await entries(n, d), []);
      assert.equal(
        await poolSlots(n),
        before + delegators.length * 5,
        'the unbonding entries wait to be paid',
      );

      await block(
        n,
        delegators.map((d) => tx(n, d, 'withdrawUnbonded')),
      );
      assert.equal(await poolSlots(n), before);
      for (const d of delegators) {
        assert.equal(await one(n, 'delegation', [addr(d), a]), (3n * ETH) / 2n);
        assert.equal(await one(n, 'delegation', [addr(d), b]), 2n * ETH);
      }
    } finally {
      await stop(n);
    }
  });

  it('at most 64 matured queue elements are taken a block; the rest go at the next block', async () => {
    const n = await start();
    try {
      const [a, b] = ops.map((k) => addr(k));
      await block(
        n,
        delegators.map((d) => tx(n, d, 'delegate', [a], 10n * ETH)),
      );
      await block(n);
      const before = await poolSlots(n);
      // 5 × 14 = 70 redelegations, each a queue element.
      await block(
        n,
        delegators.flatMap((d) => Array.from({ length: 14 }, () => tx(n, d, 'redelegate', [a, b, ETH / 2n]))),
      );
      n.time += UNBONDING * SECOND;
      await block(n);
      // Every delegator had an element among the first 64: its matured entries and its place in a's
      // list are gone. Left: 6 elements (2 slots each) and the queue's head and tail.
      for (const d of delegators) assert.deepEqual(await entries(n, d), []);
      // Kept per delegator: its shares of b, and b's place and index in its list of validators.
      const kept = before + delegators.length * 3;
      assert.equal(await poolSlots(n), kept + 6 * 2 + 2);
      await block(n);
      assert.equal(await poolSlots(n), kept);
    } finally {
      await stop(n);
    }
  });

  it('a matured unbonding entry is not slashed and its delegator is no longer walked', async () => {
    const n = await start();
    try {
      const a = addr(ops[0]!);
      await block(n, [tx(n, alice, 'delegate', [a], 4n * ETH)]);
      await block(n, [tx(n, alice, 'undelegate', [a, 2n * ETH])]);
      const infraction = n.height;
      n.time += UNBONDING * SECOND;
      await block(n);
      const res = await produceBlock(n, [], undefined, { misbehavior: [doubleSign(0, infraction)] });
      assert.equal(eventsOf(res, 'slash')[0]!.burned_unbonding, '0');
      const [, amounts] = (await read(n, 'unbondings', [addr(alice)])).toArray();
      assert.deepEqual([...amounts], [2n * ETH], 'the matured entry is paid in full');
      await block(n, [tx(n, alice, 'withdrawUnbonded')]);
    } finally {
      await stop(n);
    }
  });
});

describe('validator pool: the per-validator lists of delegators', () => {
  const slot = namedSlots('noded.staking/');
  const op = fromHex(addr(ops[0]!));
  const [d1, d2, d3] = delegators.map((k) => fromHex(addr(k)));

  it('a removal moves the last member into the gap and clears its slots; lists written before the index was kept are searched', async () => {
    for (const legacy of [false, true]) {
      const m = new SlotMap();
      const store = new StakingStore(m);
      for (const d of [d1!, d2!, d3!]) await store.noteUnbondingDelegator(op, d);
      await store.noteUnbondingDelegator(op, d2!); // already listed: nothing changes
      assert.equal(m.slots.size, 7, 'three members, their three indexes and the length');
      // An earlier version wrote 1 into every member's `.has` slot.
      if (legacy) for (const d of [d1!, d2!, d3!]) m.writeSlot('', slot('ubdd.has', op, d), Uint8Array.of(1));
      await store.dropUnbondingDelegator(op, d1!);
      assert.deepEqual(
        await store.unbondingDelegators(op),
        [d3!, d2!],
        `${legacy ? 'legacy: ' : ''}last moved first`,
      );
      await store.dropUnbondingDelegator(op, d1!); // not listed: nothing changes
      await store.dropUnbondingDelegator(op, d2!);
      assert.deepEqual(await store.unbondingDelegators(op), [d3!]);
      await store.dropUnbondingDelegator(op, d3!);
      assert.deepEqual(await store.unbondingDelegators(op), []);
      const left = [...m.slots.values()].filter((v) => v.length > 0);
      assert.equal(left.length, 0, 'every slot of the list is cleared');
    }
  });
});
