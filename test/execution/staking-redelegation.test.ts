// Redelegation in the validator pool (0x7b7c…0011) through the executor on RocksDB, with the Cosmos
// SDK's semantics: the stake moves from one validator to another at once (shares at both exchange
// rates, both powers handed to consensus, no BTC leaves the pool), the entry stays slashable for
// infractions of the source committed before it until it matures, no transitive redelegation while
// an entry to the source matures, at most 16 entries at once; every refusal names its rule and
// changes nothing.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Misbehavior } from '@noded/types';
import { addr, ETH, key } from './helpers.js';
import {
  blockSeconds as blockTime,
  consAddr,
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

const ops = [key(1), key(2), key(3)]; // genesis operators, 10 BTC each
const [alice, bob] = [key(4), key(5)];

type Net = StakingNet;

function start(): Promise<Net> {
  return startStakingNet({
    operators: ops,
    accounts: [...ops, alice, bob],
    balance: 1000n * ETH,
    params: { unbonding_time: UNBONDING.toString(), slash_fraction_double_sign: '0.05' },
    appState: { rewards: { params: { validator_share: '1', block_reward: '1000000000000000000' } } },
    rocksDirPrefix: 'noded-redelegation-',
  });
}

const block = (n: Net, txs: Uint8Array[] = [], misbehavior: Misbehavior[] = []) =>
  okBlock(n, txs, { misbehavior });

describe('validator pool: redelegation', () => {
  it('moves the stake at once: shares at both rates, both powers to consensus, the BTC stays in the pool, an entry until it matures', async () => {
    const n = await start();
    try {
      const [a, b, c] = ops.map((k) => addr(k));
      await block(n, [tx(n, alice, 'delegate', [a], 5n * ETH)]);
      await block(n);
      const poolBefore = await n.ex.getBalance(POOL, BigInt(n.height));
      const supply = n.ex.totalSupply();
      const pendingA = await one(n, 'pendingRewards', [addr(alice), a]);
      assert.ok(pendingA > 0n);

      const res = await block(n, [tx(n, alice, 'redelegate', [a, b, 3n * ETH])]);
      const done = blockTime(n) + UNBONDING;
      assert.equal(BigInt(`0x${Buffer.from(res.txResults[0]!.data).toString('hex')}`), done);
      assert.deepEqual(
        updatesOf(res).sort((x, y) => (x.key < y.key ? -1 : 1)),
        [
          { key: keyHex(0), power: 12n },
          { key: keyHex(1), power: 13n },
        ].sort((x, y) => (x.key < y.key ? -1 : 1)),
      );
      assert.equal(await one(n, 'delegation', [addr(alice), a]), 2n * ETH);
      assert.equal(await one(n, 'delegation', [addr(alice), b]), 3n * ETH);
      assert.equal((await read(n, 'validator', [a])).bonded, 12n * ETH);
      assert.equal((await read(n, 'validator', [b])).bonded, 13n * ETH);
      assert.equal(await n.ex.getBalance(POOL, BigInt(n.height)), poolBefore, 'no BTC left the pool');
      assert.equal(n.ex.totalSupply(), supply + ETH, 'only the block reward was minted');
      // The source's rewards were booked before its shares changed: nothing earned is lost.
      assert.ok((await one(n, 'pendingRewards', [addr(alice), a])) >= pendingA);
      assert.deepEqual(
        (await read(n, 'delegatorValidators', [addr(alice)]))[0].map((x: string) => x.toLowerCase()),
        [a, b],
      );
      const [rc] = await n.ex.getBlockReceipts(BigInt(n.height));
      const ev = pool.parseLog(rc!.logs[0]!)!;
      assert.deepEqual(
        [ev.name, ...ev.args.toArray().map((x: unknown) => (typeof x === 'string' ? x.toLowerCase() : x))],
        ['Redelegated', addr(alice), a, b, 3n * ETH, done],
      );
      const r = await read(n, 'redelegations', [addr(alice)]);
      assert.deepEqual(
        r.toArray().map((col: unknown[]) => col.map((x) => (typeof x === 'string' ? x.toLowerCase() : x))),
        [[a], [b], [3n * ETH], [3n * ETH], [done], [BigInt(n.height)]],
      );

      // Refusals, each naming its rule and changing nothing.
      assert.equal(
        await refusal(n, alice, 'redelegate', [a, a, 1n]),
        `cannot redelegate from ${a} to itself`,
      );
      assert.equal(await refusal(n, alice, 'redelegate', [a, b, 0n]), 'redelegate amount must be > 0');
      assert.equal(
        await refusal(n, alice, 'redelegate', [a, c, 2n * ETH + 1n]),
        `redelegate amount ${2n * ETH + 1n} is more than the delegation of ${addr(alice)} to ${a} (${2n * ETH})`,
      );
      assert.equal(
        await refusal(n, alice, 'redelegate', [a, addr(bob), 1n]),
        `no validator is operated by ${addr(bob)}`,
      );
      assert.equal(
        await refusal(n, alice, 'redelegate', [a, b, 1n], 1n),
        'redelegate is not payable (sent 1 base units)',
      );
      // No transitive redelegation: b received a redelegation that is still maturing.
      assert.equal(
        await refusal(n, alice, 'redelegate', [b, c, ETH]),
        `${addr(alice)} has a redelegation to ${b} maturing at ${done} (block time ${blockTime(n)}); no redelegation from ${b} before then`,
      );
      // Once the entry matures it is gone and the move from b is accepted.
      n.time += UNBONDING * 1_000_000_000n;
      await block(n);
      assert.equal((await read(n, 'redelegations', [addr(alice)])).toArray()[0].length, 0);
      await block(n, [tx(n, alice, 'redelegate', [b, c, ETH])]);
      assert.equal(await one(n, 'delegation', [addr(alice), c]), ETH);
    } finally {
      await stop(n);
    }
  });

  it('at most 16 redelegations mature at once; the 17th is refused until the first matures', async () => {
    const n = await start();
    try {
      const [a, b] = ops.map((k) => addr(k));
      await block(n, [tx(n, bob, 'delegate', [a], 20n * ETH)]);
      await block(
        n,
        Array.from({ length: 16 }, () => tx(n, bob, 'redelegate', [a, b, ETH / 2n])),
      );
      const first = blockTime(n) + UNBONDING;
      assert.equal((await read(n, 'redelegations', [addr(bob)])).toArray()[0].length, 16);
      assert.equal(
        await refusal(n, bob, 'redelegate', [a, b, ETH]),
        `${addr(bob)} already has 16 redelegations maturing; wait for the first (at ${first})`,
      );
      n.time += UNBONDING * 1_000_000_000n;
      await block(n, [tx(n, bob, 'redelegate', [a, b, ETH])]);
      assert.equal(
        (await read(n, 'redelegations', [addr(bob)])).toArray()[0].length,
        1,
        'matured entries dropped',
      );
    } finally {
      await stop(n);
    }
  });

  it('a double sign of the source slashes the redelegations made at or after the infraction, on the destination, and burns it', async () => {
    const n = await start();
    try {
      const [a, b, c] = ops.map((k) => addr(k));
      await block(n, [tx(n, alice, 'delegate', [a], 4n * ETH)]); // height 1
      await block(n, [tx(n, alice, 'redelegate', [a, b, 2n * ETH])]); // height 2: before the infraction
      await block(n, [tx(n, alice, 'redelegate', [a, c, ETH])]); // height 3: at the infraction
      // bob holds c before: the slash takes only alice's redelegated part of c.
      await block(n, [tx(n, bob, 'delegate', [c], 3n * ETH)]); // height 4
      const supply = n.ex.totalSupply();
      const poolBefore = await n.ex.getBalance(POOL, BigInt(n.height));
      const aliceShares = await one(n, 'delegationShares', [addr(alice), c]);
      const [cTokens, cShares] = await read(n, 'validatorShares', [c]);

      const res = await block(n, [], [doubleSign(0, 3)]); // height 5
      const bondedCut = (11n * ETH * 5n) / 100n; // a holds 10 + 4 − 2 − 1
      const sharesCut = (ETH * 5n) / 100n; // 5% of the destination shares the height-3 entry bought
      const redCut = (sharesCut * cTokens) / cShares;
      assert.deepEqual(eventsOf(res, 'slash'), [
        {
          operator: a,
          address: Buffer.from(consAddr(0)).toString('hex').toUpperCase(),
          reason: 'double_sign',
          infraction_height: '3',
          power: '11',
          burned_bonded: bondedCut.toString(),
          burned_unbonding: '0',
          burned_redelegation: redCut.toString(),
        },
      ]);
      assert.equal(await one(n, 'delegationShares', [addr(alice), c]), aliceShares - sharesCut);
      assert.equal(
        await one(n, 'delegationShares', [addr(alice), b]),
        2n * ETH,
        'the entry before the infraction is not touched',
      );
      assert.deepEqual((await read(n, 'validatorShares', [c])).toArray(), [
        cTokens - redCut,
        cShares - sharesCut,
      ]);
      assert.equal(await one(n, 'delegation', [addr(bob), c]), 3n * ETH, "bob's stake at c is whole");
      assert.equal(n.ex.totalSupply(), supply + ETH - bondedCut - redCut, 'burned (the block reward minted)');
      assert.equal(await n.ex.getBalance(POOL, BigInt(n.height)), poolBefore - bondedCut - redCut);
      // c's power follows its tokens: 10 + 1 + 3 − cut, floored to 13.
      assert.ok(updatesOf(res).some((u) => u.key === keyHex(2) && u.power === 13n));
    } finally {
      await stop(n);
    }
  });

  it('a redelegation that has matured is no longer slashed for an earlier infraction', async () => {
    const n = await start();
    try {
      const [a, b] = ops.map((k) => addr(k));
      await block(n, [tx(n, alice, 'delegate', [a], 4n * ETH)]); // height 1
      await block(n, [tx(n, alice, 'redelegate', [a, b, 2n * ETH])]); // height 2
      n.time += UNBONDING * 1_000_000_000n;
      const res = await block(n, [], [doubleSign(0, 2)]);
      assert.equal(eventsOf(res, 'slash')[0]!.burned_redelegation, '0');
      assert.equal(await one(n, 'delegation', [addr(alice), b]), 2n * ETH);
    } finally {
      await stop(n);
    }
  });
});
