// Slashing, jailing and delegation shares of the validator pool (0x7b7c…0011) through the executor:
// FinalizeBlock misbehavior and decided last commits as consensus hands them over, the pool's
// views read with ethers' ABI coder, the amounts checked to the wei, and the coin supply.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import type { StakingParamsJson } from '@noded/config';
import { Executor } from '@noded/execution';
import { type KVStore, RocksKV } from '@noded/storage';
import { type CommitInfo, EventBus, type FinalizeBlockResponse, type Misbehavior } from '@noded/types';
import { addr, ETH, executorOptions, GENESIS_TIME, key, produceBlock } from './helpers.js';
import {
  balanceOf as balance,
  consAddr,
  contract,
  doubleSign,
  eventsOf,
  keyHex,
  lastCommit,
  POOL,
  poolAbi,
  type StakingNet,
  startStakingNet,
  updatesOf,
} from './staking-net.js';

const { read, refusal, tx } = contract(POOL, poolAbi);

const ops = [key(1), key(2), key(3)]; // genesis operators, 10 BTC each
const delegator = key(4);
const other = key(5);
const BALANCE = 1000n * ETH;

type Net = StakingNet;

function start(params: Partial<StakingParamsJson> = {}, kv?: KVStore): Promise<Net> {
  return startStakingNet({
    operators: ops,
    accounts: [...ops, delegator, other],
    balance: BALANCE,
    params,
    kv,
  });
}

/** Everybody signs the last block except the validators in `absent` (indexes of `ops`). */
const commitOf = (absent: number[], set = [0, 1, 2]): CommitInfo => lastCommit(absent, set);

async function block(
  n: Net,
  consensus: { misbehavior?: Misbehavior[]; decidedLastCommit?: CommitInfo } = {},
  txs: Uint8Array[] = [],
): Promise<FinalizeBlockResponse> {
  return produceBlock(n, txs, undefined, consensus);
}

/** Sends one pool call in its own block; asserts it succeeded. */
async function send(n: Net, k: Uint8Array, fn: string, args: unknown[], value = 0n, consensus = {}) {
  const res = await block(n, consensus, [tx(n, k, fn, args, value)]);
  assert.equal(res.txResults[0]!.code, 0, `${fn}: ${res.txResults[0]!.log}`);
  // A revert is code 0 too: the receipt's status says whether the call succeeded.
  const [rc] = await n.ex.getBlockReceipts(BigInt(n.height));
  assert.equal(rc!.status, 1, `${fn}: ${res.txResults[0]!.log}`);
  return res;
}

describe('validator pool: delegation shares', () => {
  it('bonding mints shares at the exchange rate; views answer what the shares are worth, to the wei', async () => {
    const n = await start({ slash_fraction_double_sign: '0.05' });
    try {
      const op = addr(ops[0]!);
      await send(n, delegator, 'delegate', [op], 5n * ETH);
      assert.equal(
        (await read(n, 'delegationShares', [addr(delegator), op]))[0],
        5n * ETH,
        '1 share per unit',
      );
      // Slash 5% of 15 BTC: the rate falls to 0.95 unit per share for every delegator at once.
      await block(n, { misbehavior: [doubleSign(0, 1)] });
      const [tokens, shares] = await read(n, 'validatorShares', [op]);
      assert.equal(tokens, 15n * ETH - (15n * ETH * 5n) / 100n);
      assert.equal(shares, 15n * ETH);
      assert.equal((await read(n, 'delegation', [addr(delegator), op]))[0], (5n * ETH * 95n) / 100n);
      assert.equal((await read(n, 'delegation', [op, op]))[0], (10n * ETH * 95n) / 100n);
    } finally {
      await n.ex.close();
    }
  });

  it('a delegation after a slash buys shares at the new rate, rounded down; undelegating burns shares rounded up', async () => {
    const n = await start({
      slash_fraction_downtime: '0.3',
      signed_blocks_window: '2',
      min_signed_per_window: '0.5',
    });
    try {
      const op = addr(ops[1]!);
      // Validator 1 signs block 1's commit and misses from height 2: jailed at height 4 (> start
      // 1 + window 2, with 2 missed of the window > 2 − round(2 × 0.5)).
      for (let h = 1; h <= 3; h++) await block(n, { decidedLastCommit: commitOf(h === 1 ? [] : [1]) });
      const res = await block(n, { decidedLastCommit: commitOf([1]) });
      assert.equal(eventsOf(res, 'slash').length, 1);
      const tokens = 7n * ETH; // 10 BTC − 30%
      assert.deepEqual([...(await read(n, 'validatorShares', [op]))], [tokens, 10n * ETH]);

      // 1 wei + 1 BTC at 0.7 unit per share: floor(amount × 10 / 7) shares.
      const amount = ETH + 1n;
      await send(n, delegator, 'delegate', [op], amount);
      const minted = (amount * 10n * ETH) / tokens;
      assert.equal((await read(n, 'delegationShares', [addr(delegator), op]))[0], minted);
      const [t2, s2] = await read(n, 'validatorShares', [op]);
      assert.equal(t2, tokens + amount);
      assert.equal(s2, 10n * ETH + minted);
      const worth = (minted * t2) / s2;
      assert.equal((await read(n, 'delegation', [addr(delegator), op]))[0], worth);
      assert.ok(worth <= amount, 'a delegation is never worth more than it paid');

      // Undelegate 1 unit: ceil(1 × shares / tokens) shares are burned, exactly 1 unit is paid.
      const poolBefore = await balance(n, POOL);
      await send(n, delegator, 'undelegate', [op, 1n]);
      const burned = (s2 + t2 - 1n) / t2;
      assert.equal((await read(n, 'delegationShares', [addr(delegator), op]))[0], minted - burned);
      assert.deepEqual([...(await read(n, 'validatorShares', [op]))], [t2 - 1n, s2 - burned]);
      const u = await read(n, 'unbondings', [addr(delegator)]);
      assert.deepEqual([...u.amounts], [1n]);
      assert.equal(await balance(n, POOL), poolBefore, 'the unbonding unit stays in the pool');

      // The whole rest: what delegation() answers can always be undelegated.
      const rest = (await read(n, 'delegation', [addr(delegator), op]))[0] as bigint;
      await send(n, delegator, 'undelegate', [op, rest]);
      assert.equal((await read(n, 'delegationShares', [addr(delegator), op]))[0] <= 1n, true);
    } finally {
      await n.ex.close();
    }
  });

  it('rounding never creates BTC: after many delegations, undelegations and slashes the pool holds every claim', async () => {
    const n = await start({ slash_fraction_double_sign: '0.333333333333333333' });
    try {
      const op = addr(ops[2]!);
      const who = [delegator, other];
      let seed = 7n;
      const rnd = (m: bigint) => {
        seed = (seed * 6364136223846793005n + 1442695040888963407n) % 2n ** 64n;
        return seed % m;
      };
      for (let i = 0; i < 12; i++) {
        const k = who[i % 2]!;
        // Delegations before the double sign; a tombstoned validator takes none after it.
        if (i < 6) await send(n, k, 'delegate', [op], 1n + rnd(3n * ETH));
        if (i === 6) await block(n, { misbehavior: [doubleSign(2, n.height)] });
        const have = (await read(n, 'delegation', [addr(k), op]))[0] as bigint;
        if (have > 1n) await send(n, k, 'undelegate', [op, 1n + rnd(have / 2n)]);
      }
      const [tokens, shares] = await read(n, 'validatorShares', [op]);
      let claims = 0n;
      for (const k of [...who, ops[2]!]) {
        const s = (await read(n, 'delegationShares', [addr(k), op]))[0] as bigint;
        claims += (s * tokens) / shares;
      }
      assert.ok(claims <= tokens, `claims ${claims} exceed the tokens ${tokens}`);
      let unbonding = 0n;
      for (const k of who) for (const a of (await read(n, 'unbondings', [addr(k)])).amounts) unbonding += a;
      let bonded = 0n;
      for (const o of ops) bonded += (await read(n, 'validatorShares', [addr(o)]))[0] as bigint;
      assert.equal(
        await balance(n, POOL),
        bonded + unbonding,
        'the pool holds exactly the bonded and unbonding BTC',
      );
    } finally {
      await n.ex.close();
    }
  });
});

describe('validator pool: double-sign slashing', () => {
  it('burns exactly the fraction of the stake and of the unbondings since the infraction, tombstones, removes the power', async () => {
    const n = await start({ slash_fraction_double_sign: '0.05', unbonding_time: '1000' });
    try {
      const op = addr(ops[0]!);
      await send(n, delegator, 'delegate', [op], 4n * ETH); // height 1
      await send(n, delegator, 'undelegate', [op, ETH]); // height 2: before the infraction
      await send(n, delegator, 'undelegate', [op, 2n * ETH]); // height 3: at the infraction
      const supply = n.ex.totalSupply();
      const poolBefore = await balance(n, POOL);

      const res = await block(n, { misbehavior: [doubleSign(0, 3)] }); // height 4
      const bondedCut = (11n * ETH * 5n) / 100n;
      const ubdCut = (2n * ETH * 5n) / 100n;
      assert.deepEqual(eventsOf(res, 'slash'), [
        {
          operator: op,
          address: Buffer.from(consAddr(0)).toString('hex').toUpperCase(),
          reason: 'double_sign',
          infraction_height: '3',
          power: '11', // 14 BTC bonded, 3 undelegated
          burned_bonded: bondedCut.toString(),
          burned_unbonding: ubdCut.toString(),
          burned_redelegation: '0',
        },
      ]);
      assert.deepEqual(eventsOf(res, 'jail'), [
        { operator: op, jailed_until: (2n ** 64n - 1n).toString(), tombstoned: 'true' },
      ]);
      assert.deepEqual(updatesOf(res), [{ key: keyHex(0), power: 0n }], 'the power leaves consensus');

      const v = await read(n, 'validator', [op]);
      assert.equal(v.bonded, 11n * ETH - bondedCut);
      assert.equal(v.jailed, true);
      assert.equal(v.votingPower, 0n);
      const u = await read(n, 'unbondings', [addr(delegator)]);
      assert.deepEqual(
        [...u.amounts],
        [ETH, 2n * ETH - ubdCut],
        'only the entry from the infraction height on',
      );
      assert.equal(await balance(n, POOL), poolBefore - bondedCut - ubdCut);
      assert.equal(
        n.ex.totalSupply(),
        supply - bondedCut - ubdCut,
        'the slashed BTC is burned from the supply',
      );
      const si = await read(n, 'signingInfo', [op]);
      assert.equal(si.tombstoned, true);
      assert.equal(si.consensusAddress.toLowerCase(), `0x${Buffer.from(consAddr(0)).toString('hex')}`);

      // The same validator's other evidence does not slash it again.
      const again = await block(n, { misbehavior: [doubleSign(0, 2)] });
      assert.deepEqual(eventsOf(again, 'slash'), []);
      assert.equal((await read(n, 'validator', [op])).bonded, 11n * ETH - bondedCut);
      assert.match(
        await refusal(n, ops[0]!, 'unjail'),
        /is tombstoned \(double-signed\) and can never be unjailed/,
      );
      assert.match(
        await refusal(n, other, 'delegate', [op], ETH),
        /is tombstoned \(double-signed\) and takes no delegation/,
      );
      // Unbonding entries keep paying out what is left of them.
      n.time += 2000n * 1_000_000_000n;
      await send(n, delegator, 'withdrawUnbonded', []);
      assert.deepEqual([...(await read(n, 'unbondings', [addr(delegator)])).amounts], []);
    } finally {
      await n.ex.close();
    }
  });

  it('every validator double-signing in one block: all are tombstoned, but the set is never handed over empty', async () => {
    const n = await start();
    try {
      await block(n);
      const res = await block(n, { misbehavior: [doubleSign(0, 1), doubleSign(1, 1), doubleSign(2, 1)] });
      assert.equal(eventsOf(res, 'jail').length, 3);
      assert.deepEqual(res.validatorUpdates, [], 'consensus cannot run without validators: the set is kept');
      for (const o of ops) {
        const v = await read(n, 'validator', [addr(o)]);
        assert.equal(v.jailed, true);
        assert.equal(v.votingPower, 10n, 'still the power consensus has');
      }
    } finally {
      await n.ex.close();
    }
  });

  it('evidence against an address that is no validator of the pool changes nothing', async () => {
    const n = await start();
    try {
      await block(n);
      const supply = n.ex.totalSupply();
      const res = await block(n, {
        misbehavior: [{ ...doubleSign(0, 1), validatorAddress: new Uint8Array(20).fill(9) }],
      });
      assert.deepEqual(eventsOf(res, 'slash'), []);
      assert.deepEqual(res.validatorUpdates, []);
      assert.equal(n.ex.totalSupply(), supply);
    } finally {
      await n.ex.close();
    }
  });
});

describe('validator pool: downtime jailing', () => {
  const params = {
    signed_blocks_window: '10',
    min_signed_per_window: '0.5',
    slash_fraction_downtime: '0.01',
    downtime_jail_duration: '60',
  };

  it('a block every validator signed changes no state once the signing infos exist (the app hash holds still)', async () => {
    const n = await start(params);
    try {
      await block(n);
      // The first commit records each validator's signing info; a miss and its expiry write too.
      await block(n, { decidedLastCommit: commitOf([]) });
      const hashes: string[] = [];
      for (let h = 0; h < 3; h++) {
        const res = await block(n, { decidedLastCommit: commitOf([]) });
        hashes.push(Buffer.from(res.appHash).toString('hex'));
      }
      assert.equal(new Set(hashes).size, 1, `app hashes of clean blocks: ${hashes.join(', ')}`);
      const missed = await block(n, { decidedLastCommit: commitOf([2]) });
      assert.notEqual(Buffer.from(missed.appHash).toString('hex'), hashes[0], 'a miss is recorded');
    } finally {
      await n.ex.close();
    }
  });

  it('missing up to window × (1 − min_signed) is allowed; one more jails, slashes and removes the power', async () => {
    const n = await start(params);
    try {
      // Height 1 has no last commit. From height 2 validator 2 misses every other block (5 of
      // 10: allowed) and validator 1 misses every block from height 2.
      await block(n);
      let jailedAt = 0;
      let jailRes: FinalizeBlockResponse | undefined;
      for (let h = 2; h <= 30; h++) {
        const absent = [h % 2 === 0 ? 2 : -1, jailedAt ? -1 : 1];
        const res = await block(n, { decidedLastCommit: commitOf(absent) });
        if (eventsOf(res, 'jail').length > 0 && !jailedAt) {
          jailedAt = h;
          jailRes = res;
        }
      }
      // Start height 2, window 10: the first height that can jail is 13 (> 2 + 10).
      assert.equal(jailedAt, 13);
      const op = addr(ops[1]!);
      const time13 = GENESIS_TIME / 1_000_000_000n + 13n;
      assert.deepEqual(eventsOf(jailRes!, 'slash'), [
        {
          operator: op,
          address: Buffer.from(consAddr(1)).toString('hex').toUpperCase(),
          reason: 'missing_signature',
          infraction_height: '11',
          power: '10',
          burned_bonded: (ETH / 10n).toString(),
          burned_unbonding: '0',
          burned_redelegation: '0',
        },
      ]);
      assert.deepEqual(eventsOf(jailRes!, 'jail'), [
        { operator: op, jailed_until: (time13 + 60n).toString(), tombstoned: 'false' },
      ]);
      assert.deepEqual(updatesOf(jailRes!), [{ key: keyHex(1), power: 0n }]);
      const v1 = await read(n, 'validator', [op]);
      assert.equal(v1.jailed, true);
      assert.equal(v1.bonded, 10n * ETH - ETH / 10n);
      const v2 = await read(n, 'validator', [addr(ops[2]!)]);
      assert.equal(v2.jailed, false, 'missing exactly the allowed blocks does not jail');
      assert.equal((await read(n, 'signingInfo', [addr(ops[2]!)])).missedBlocks, 5n);
    } finally {
      await n.ex.close();
    }
  });

  it('unjail is refused before the jail time with the time, then restores the power', async () => {
    const n = await start(params);
    try {
      await block(n);
      for (let h = 2; h <= 13; h++) await block(n, { decidedLastCommit: commitOf([1]) });
      const op = addr(ops[1]!);
      const until = (await read(n, 'signingInfo', [op])).jailedUntil as bigint;
      assert.equal(until, GENESIS_TIME / 1_000_000_000n + 13n + 60n);
      assert.match(
        await refusal(n, ops[1]!, 'unjail'),
        new RegExp(`is jailed until ${until} \\(block time \\d+, \\d+ s left\\)`),
      );
      assert.match(await refusal(n, ops[0]!, 'unjail'), /is not jailed/);
      assert.match(await refusal(n, other, 'unjail'), /operates no validator/);
      // A block at the jail end: unjail succeeds and the power comes back (floor(9.9) = 9).
      n.time = (until - 1n) * 1_000_000_000n;
      const res = await send(n, ops[1]!, 'unjail', [], 0n, { decidedLastCommit: commitOf([], [0, 2]) });
      assert.deepEqual(updatesOf(res), [{ key: keyHex(1), power: 9n }]);
      const [rc] = await n.ex.getBlockReceipts(BigInt(n.height));
      const ev = poolAbi.parseLog(rc!.logs[0]!);
      assert.deepEqual([ev?.name, ev?.args.operator.toLowerCase()], ['Unjailed', op]);
      const v = await read(n, 'validator', [op]);
      assert.equal(v.jailed, false);
      assert.equal(v.votingPower, 9n);
      // A fresh window: the blocks before it is back in the set do not count.
      const si = await read(n, 'signingInfo', [op]);
      assert.equal(si.missedBlocks, 0n);
      assert.equal(si.startHeight, BigInt(n.height));
    } finally {
      await n.ex.close();
    }
  });

  it('the missed-blocks count survives a restart on RocksDB: the jail comes at the same height', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'noded-slashing-'));
    try {
      const kv = await RocksKV.open(dir);
      const n = await start(params, kv);
      await block(n);
      for (let h = 2; h <= 9; h++) await block(n, { decidedLastCommit: commitOf([1]) });
      await n.ex.close();
      await kv.close();
      const kv2 = await RocksKV.open(dir);
      const ex = await Executor.open(executorOptions(kv2, new EventBus()));
      const n2: Net = { ...n, ex, kv: kv2 };
      try {
        const si = await read(n2, 'signingInfo', [addr(ops[1]!)]);
        assert.equal(si.startHeight, 2n);
        assert.equal(si.missedBlocks, 8n);
        let jailedAt = 0;
        for (let h = 10; h <= 14; h++) {
          const res = await block(n2, { decidedLastCommit: commitOf([1]) });
          if (!jailedAt && eventsOf(res, 'jail').length > 0) jailedAt = h;
        }
        assert.equal(jailedAt, 13);
      } finally {
        await ex.close();
        await kv2.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
