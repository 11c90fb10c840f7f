// The validator pool precompile (0x7b7c…0011) through the executor: genesis bonds, createValidator,
// delegate, undelegate, withdrawUnbonded, the validator updates FinalizeBlock returns, refusals
// that change nothing, and the coin supply with the bonded BTC in the pool account.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import type { StakingParamsJson } from '@noded/config';
import { keccak256 } from '@noded/crypto';
import { Executor } from '@noded/execution';
import { stakingFunctions } from '@noded/execution/src/precompiles/staking.js';
import { type KVStore, MemoryKV, RocksKV } from '@noded/storage';
import { EventBus, type Hex } from '@noded/types';
import { Interface } from 'ethers';
import { compileSolidity } from '../solc.js';
import {
  addr,
  ETH,
  executorOptions,
  GENESIS_TIME,
  genesisState,
  initLocalChain,
  key,
  produceBlock,
  signTx,
} from './helpers.js';
import {
  balanceOf as balance,
  consensusKey,
  contract,
  CALL_OPTS as opts,
  POOL,
  poolAbi as pool,
  type StakingNet,
  startStakingNet,
} from './staking-net.js';

const { read, tx } = contract(POOL, pool);
const hexOf = (b: Uint8Array): Hex => `0x${Buffer.from(b).toString('hex')}`;

const ops = [key(1), key(2)]; // genesis operators
const newcomer = key(3);
const delegator = key(4);
const BALANCE = 1000n * ETH;

type Net = StakingNet;

function startStakingNode(params: Partial<StakingParamsJson> = {}, kv?: KVStore): Promise<Net> {
  return startStakingNet({
    operators: ops,
    monikers: ops.map((_, i) => `genesis-${i}`),
    accounts: [ops[0]!, ops[1]!, newcomer, delegator],
    balance: BALANCE,
    params,
    kv,
  });
}

/** Sends one pool call in its own block; returns the block's FinalizeBlock answer and the receipt. */
async function send(n: Net, k: Uint8Array, fn: string, args: unknown[], value = 0n) {
  const raw = tx(n, k, fn, args, value);
  const res = await produceBlock(n, [raw]);
  const receipt = await n.ex.getReceipt(hexOf(keccak256(raw)));
  assert.ok(receipt, 'the transaction is in the block');
  return { res, receipt, tx: res.txResults[0]! };
}

describe('validator pool: genesis', () => {
  it('bonds the genesis validators in the pool account, on top of the accounts', async () => {
    const n = await startStakingNode();
    try {
      const [list] = await read(n, 'validators');
      assert.deepEqual(
        list.map((a: string) => a.toLowerCase()),
        ops.map((k) => addr(k)),
      );
      const v = await read(n, 'validator', [addr(ops[1]!)]);
      assert.equal(v.consensusPubKey, hexOf(consensusKey(1)));
      assert.equal(v.moniker, 'genesis-1');
      assert.equal(v.bonded, 10n * ETH);
      assert.equal(v.votingPower, 10n);
      assert.equal(v.jailed, false);
      assert.equal(await balance(n, POOL), 20n * ETH, 'the pool holds the bonds');
      assert.equal(
        await balance(n, addr(ops[0]!)),
        BALANCE,
        'the genesis bond does not come out of the account',
      );
      assert.equal(n.ex.totalSupply(), 4n * BALANCE + 20n * ETH);
      const p = await read(n, 'params');
      assert.equal(p.minSelfBond, ETH);
      assert.equal(p.powerReduction, ETH);
      assert.equal(p.slashFractionDoubleSign, 5n * 10n ** 16n);
      assert.equal(p.unbondingTime, 1209600n);
    } finally {
      await n.ex.close();
    }
  });

  it('refuses a genesis whose bond does not give the consensus power, naming the entry', async () => {
    const bus = new EventBus();
    const ex = await Executor.open(executorOptions(new MemoryKV(), bus));
    try {
      await assert.rejects(
        initLocalChain(
          ex,
          [{ address: new Uint8Array(20), pubKey: consensusKey(0), votingPower: 10n, proposerPriority: 0n }],
          {
            ...genesisState([]),
            staking: {
              validators: [
                {
                  operator: addr(ops[0]!),
                  pub_key: Buffer.from(consensusKey(0)).toString('base64'),
                  self_bond: (9n * ETH).toString(),
                },
              ],
            },
          },
        ),
        /app_state\.staking\.validators\[0\]\.self_bond: gives power 9 .* but validators\[0\]\.power is 10/,
      );
    } finally {
      await ex.close();
    }
  });

  it('a chain without app_state.staking keeps its set and the pool refuses with the reason', async () => {
    const bus = new EventBus();
    const ex = await Executor.open(executorOptions(new MemoryKV(), bus));
    try {
      await initLocalChain(ex, [], genesisState([{ address: addr(newcomer), balance: BALANCE }]));
      const r = await ex.call(
        { to: POOL, data: pool.encodeFunctionData('validators') as Hex },
        0n,
        undefined,
        opts,
      );
      assert.equal(r.reverted, true);
      assert.equal(
        pool.parseError(r.returnData)?.args[0],
        'staking is not enabled on this chain (its genesis has no app_state.staking)',
      );
    } finally {
      await ex.close();
    }
  });
});

describe('validator pool: bonding changes the validator set', () => {
  it('createValidator bonds the value and FinalizeBlock hands the new power to consensus once', async () => {
    const n = await startStakingNode();
    try {
      const supply = n.ex.totalSupply();
      const pk = consensusKey(7);
      const before = await balance(n, addr(newcomer));
      const { res, receipt } = await send(
        n,
        newcomer,
        'createValidator',
        [pk, 'newcomer', 500],
        25n * ETH + 1n,
      );
      assert.equal(receipt.status, 1);
      assert.deepEqual(res.validatorUpdates, [{ pubKey: pk, power: 25n }]);
      const v = await read(n, 'validator', [addr(newcomer)]);
      assert.equal(v.bonded, 25n * ETH + 1n);
      assert.equal(v.votingPower, 25n);
      assert.equal(v.commissionBps, 500n);
      assert.equal(
        await read(n, 'delegation', [addr(newcomer), addr(newcomer)]).then((r) => r[0]),
        25n * ETH + 1n,
      );
      assert.equal(await balance(n, POOL), 45n * ETH + 1n);
      const fee = BigInt(receipt.gasUsed) * BigInt(receipt.effectiveGasPrice);
      assert.equal(await balance(n, addr(newcomer)), before - 25n * ETH - 1n - fee);
      assert.equal(n.ex.totalSupply(), supply, 'bonding moves BTC, it creates or destroys none');
      const log = pool.parseLog(receipt.logs[0]!);
      assert.equal(log?.name, 'ValidatorCreated');
      assert.equal(log?.args.operator.toLowerCase(), addr(newcomer));
      assert.equal(log?.args.selfBond, 25n * ETH + 1n);
      const idle = await produceBlock(n, []);
      assert.deepEqual(idle.validatorUpdates, [], 'no update without a change');
    } finally {
      await n.ex.close();
    }
  });

  it("editValidator changes the moniker and commission of the caller's validator only, with its event", async () => {
    const n = await startStakingNode();
    try {
      const op = addr(ops[0]!);
      const long = 'é'.repeat(35); // 70 bytes of UTF-8: the longest moniker
      const { receipt, res } = await send(n, ops[0]!, 'editValidator', [long, 1234]);
      assert.equal(receipt.status, 1);
      assert.deepEqual(res.validatorUpdates, [], 'the power does not change');
      const ev = pool.parseLog(receipt.logs[0]!);
      assert.deepEqual(
        [ev?.name, ev?.args.operator.toLowerCase(), ev?.args.moniker, ev?.args.commissionBps],
        ['ValidatorEdited', op, long, 1234n],
      );
      const v = await read(n, 'validator', [op]);
      assert.deepEqual([v.moniker, v.commissionBps, v.votingPower], [long, 1234n, 10n]);
      // A shorter moniker leaves nothing of the longer one behind.
      await send(n, ops[0]!, 'editValidator', ['v0', 0]);
      const w = await read(n, 'validator', [op]);
      assert.deepEqual([w.moniker, w.commissionBps], ['v0', 0n]);
      assert.equal(
        (await read(n, 'validator', [addr(ops[1]!)])).moniker,
        'genesis-1',
        'the other is untouched',
      );

      for (const [k, args, reason] of [
        [delegator, ['x', 0], `${addr(delegator)} operates no validator`],
        [ops[0]!, ['x', 10001], 'commissionBps 10001 is over 10000 (100%)'],
        [
          ops[0]!,
          ['x'.repeat(71), 0],
          'editValidator(string,uint16): argument 1 is 71 bytes long, longer than 70',
        ],
      ] as Array<[Uint8Array, unknown[], string | RegExp]>) {
        const r = await send(n, k, 'editValidator', args);
        assert.equal(r.receipt.status, 0);
        const call = await n.ex.call(
          { from: addr(k), to: POOL, data: pool.encodeFunctionData('editValidator', args) as Hex },
          BigInt(n.height),
          undefined,
          opts,
        );
        const why = pool.parseError(call.returnData)?.args[0] ?? '';
        if (typeof reason === 'string') assert.equal(why, reason);
        else assert.match(why, reason);
      }
      const after = await read(n, 'validator', [op]);
      assert.deepEqual([after.moniker, after.commissionBps], ['v0', 0n], 'refusals change nothing');
    } finally {
      await n.ex.close();
    }
  });

  it('delegate raises the power; undelegate lowers it, unbonds for unbonding_time, then pays out', async () => {
    const n = await startStakingNode({ unbonding_time: '5' });
    try {
      const supply = n.ex.totalSupply();
      const target = addr(ops[0]!);
      const d = await send(n, delegator, 'delegate', [target], 7n * ETH);
      assert.deepEqual(d.res.validatorUpdates, [{ pubKey: consensusKey(0), power: 17n }]);
      const ev = pool.parseLog(d.receipt.logs[0]!);
      assert.equal(ev?.name, 'Delegated');
      assert.equal(ev?.args.amount, 7n * ETH);

      const u = await send(n, delegator, 'undelegate', [target, 3n * ETH]);
      assert.deepEqual(u.res.validatorUpdates, [{ pubKey: consensusKey(0), power: 14n }]);
      const blockTime = GENESIS_TIME / 1_000_000_000n + BigInt(n.height);
      const uev = pool.parseLog(u.receipt.logs[0]!);
      assert.deepEqual(
        [uev?.name, uev?.args.delegator.toLowerCase(), uev?.args.operator.toLowerCase()],
        ['Undelegated', addr(delegator), target],
      );
      assert.deepEqual([uev?.args.amount, uev?.args.completionTime], [3n * ETH, blockTime + 5n]);
      const [ops0, amounts, times] = await read(n, 'unbondings', [addr(delegator)]);
      assert.deepEqual(
        ops0.map((a: string) => a.toLowerCase()),
        [target],
      );
      assert.deepEqual([...amounts], [3n * ETH]);
      assert.deepEqual([...times], [blockTime + 5n]);
      assert.equal(await balance(n, POOL), 27n * ETH, 'unbonding BTC stays in the pool');

      // Before maturity: refused with the time it completes, nothing paid.
      const early = await send(n, delegator, 'withdrawUnbonded', []);
      assert.equal(early.receipt.status, 0);
      assert.match(
        early.tx.log,
        /no unbonding entry .* has matured yet \(block time \d+, the next completes at \d+\)/,
      );
      assert.equal(await balance(n, POOL), 27n * ETH);

      for (let i = 0; i < 4; i++) await produceBlock(n, []);
      const before = await balance(n, addr(delegator));
      const w = await send(n, delegator, 'withdrawUnbonded', []);
      assert.equal(w.receipt.status, 1);
      const fee = BigInt(w.receipt.gasUsed) * BigInt(w.receipt.effectiveGasPrice);
      assert.equal(await balance(n, addr(delegator)), before + 3n * ETH - fee);
      const wev = pool.parseLog(w.receipt.logs[0]!);
      assert.deepEqual(
        [wev?.name, wev?.args.delegator.toLowerCase(), wev?.args.amount],
        ['Withdrawn', addr(delegator), 3n * ETH],
      );
      assert.equal(await balance(n, POOL), 24n * ETH);
      assert.deepEqual([...(await read(n, 'unbondings', [addr(delegator)]))[1]], []);
      assert.equal((await read(n, 'delegation', [addr(delegator), target]))[0], 4n * ETH);
      assert.equal(n.ex.totalSupply(), supply);
    } finally {
      await n.ex.close();
    }
  });

  it('only the top max_validators by power are active; dropping below the last one removes it', async () => {
    const n = await startStakingNode({ max_validators: '2' });
    try {
      // 11 > 10 = 10: the newcomer outranks the genesis validator with the higher address.
      const c = await send(n, newcomer, 'createValidator', [consensusKey(9), 'third', 0], 11n * ETH);
      const loser = [addr(ops[0]!), addr(ops[1]!)].sort()[1]!;
      const loserIdx = ops.findIndex((k) => addr(k) === loser);
      assert.deepEqual(
        c.res.validatorUpdates.map((u) => [hexOf(u.pubKey), u.power]).sort(),
        [
          [hexOf(consensusKey(loserIdx)), 0n],
          [hexOf(consensusKey(9)), 11n],
        ].sort(),
      );
      assert.equal((await read(n, 'validator', [loser])).votingPower, 0n);
      // Undelegating 2 BTC (power 9 < 10) drops the newcomer out again; the other comes back.
      const u = await send(n, newcomer, 'undelegate', [addr(newcomer), 2n * ETH]);
      assert.deepEqual(
        u.res.validatorUpdates.map((x) => [hexOf(x.pubKey), x.power]).sort(),
        [
          [hexOf(consensusKey(loserIdx)), 10n],
          [hexOf(consensusKey(9)), 0n],
        ].sort(),
      );
    } finally {
      await n.ex.close();
    }
  });

  it("never hands consensus a set over CometBFT's total power cap (2^63 / 8)", async () => {
    const n = await startStakingNode({ power_reduction: '1', min_self_bond: '1' });
    try {
      const d = await send(n, delegator, 'delegate', [addr(ops[0]!)], 2n ** 60n);
      assert.equal(d.receipt.status, 1);
      assert.deepEqual(d.res.validatorUpdates, [], '2^60 + 20 is over the cap: the set is kept');
      assert.equal((await read(n, 'validator', [addr(ops[0]!)])).votingPower, 10n);
      const u = await send(n, delegator, 'undelegate', [addr(ops[0]!), 2n ** 60n - 1000n]);
      assert.deepEqual(u.res.validatorUpdates, [{ pubKey: consensusKey(0), power: 1010n }]);
    } finally {
      await n.ex.close();
    }
  });

  it('never hands consensus an empty set: the last validator leaving keeps the set', async () => {
    const n = await startStakingNode();
    try {
      const a = await send(n, ops[0]!, 'undelegate', [addr(ops[0]!), 10n * ETH]);
      assert.deepEqual(a.res.validatorUpdates, [{ pubKey: consensusKey(0), power: 0n }]);
      const b = await send(n, ops[1]!, 'undelegate', [addr(ops[1]!), 10n * ETH]);
      assert.deepEqual(b.res.validatorUpdates, [], 'the set would be empty: it is kept');
      assert.equal((await read(n, 'validator', [addr(ops[1]!)])).votingPower, 10n);
    } finally {
      await n.ex.close();
    }
  });
});

describe('validator pool: refusals change nothing', () => {
  const cases: Array<{
    what: string;
    k: Uint8Array;
    fn: string;
    args: unknown[];
    value?: bigint;
    reason: RegExp;
  }> = [
    {
      what: 'a self-bond below min_self_bond',
      k: newcomer,
      fn: 'createValidator',
      args: [consensusKey(5), 'x', 0],
      value: ETH - 1n,
      reason: /^self-bond 999999999999999999 is below min_self_bond 1000000000000000000$/,
    },
    {
      what: 'a consensus key already bonded',
      k: newcomer,
      fn: 'createValidator',
      args: [consensusKey(0), 'x', 0],
      value: 2n * ETH,
      reason: /^consensusPubKey 0x[0-9a-f]{64} is already the key of validator 0x[0-9a-f]{40}$/,
    },
    {
      what: 'a key that is not an ed25519 point',
      k: newcomer,
      fn: 'createValidator',
      args: [`0x${'ff'.repeat(32)}`, 'x', 0],
      value: 2n * ETH,
      reason: /is not an ed25519 public key$/,
    },
    {
      what: 'a commission over 100%',
      k: newcomer,
      fn: 'createValidator',
      args: [consensusKey(5), 'x', 10001],
      value: 2n * ETH,
      reason: /^commissionBps 10001 is over 10000 \(100%\)$/,
    },
    {
      what: 'a second validator of one operator',
      k: ops[0]!,
      fn: 'createValidator',
      args: [consensusKey(5), 'x', 0],
      value: 2n * ETH,
      reason: /already operates a validator$/,
    },
    {
      what: 'a delegation to nobody',
      k: delegator,
      fn: 'delegate',
      args: [addr(key(99))],
      value: ETH,
      reason: /^no validator is operated by 0x/,
    },
    {
      what: 'undelegating more than delegated',
      k: delegator,
      fn: 'undelegate',
      args: [addr(ops[0]!), 1n],
      reason: /^undelegate amount 1 is more than the delegation of .* \(0\)$/,
    },
    {
      what: 'value sent to a function that is not payable',
      k: ops[0]!,
      fn: 'undelegate',
      args: [addr(ops[0]!), 1n],
      value: 5n,
      reason: /^undelegate is not payable \(sent 5 base units\)$/,
    },
    {
      what: 'unjail of a validator that is not jailed',
      k: ops[0]!,
      fn: 'unjail',
      args: [],
      reason: /is not jailed$/,
    },
  ];
  for (const c of cases) {
    it(`refuses ${c.what} with the reason, and the value comes back`, async () => {
      const n = await startStakingNode();
      try {
        const poolBefore = await balance(n, POOL);
        const [listBefore] = await read(n, 'validators');
        const before = await balance(n, addr(c.k));
        const { receipt } = await send(n, c.k, c.fn, c.args, c.value ?? 0n);
        assert.equal(receipt.status, 0);
        const r = await n.ex.call(
          { from: addr(c.k), to: POOL, value: c.value, data: pool.encodeFunctionData(c.fn, c.args) as Hex },
          BigInt(n.height),
          undefined,
          opts,
        );
        assert.equal(r.reverted, true);
        assert.match(pool.parseError(r.returnData)?.args[0] ?? '', c.reason);
        const fee = BigInt(receipt.gasUsed) * BigInt(receipt.effectiveGasPrice);
        assert.equal(await balance(n, addr(c.k)), before - fee);
        assert.equal(await balance(n, POOL), poolBefore);
        assert.deepEqual([...(await read(n, 'validators'))[0]], [...listBefore]);
        assert.equal(receipt.logs.length, 0);
      } finally {
        await n.ex.close();
      }
    });
  }
});

describe('validator pool: on RocksDB', () => {
  it('a created validator and its pending unbonding survive a restart', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'noded-staking-'));
    try {
      const kv = await RocksKV.open(dir);
      const n = await startStakingNode({}, kv);
      await send(n, newcomer, 'createValidator', [consensusKey(8), 'persisted', 100], 3n * ETH);
      await send(n, newcomer, 'undelegate', [addr(newcomer), ETH]);
      const root = (await n.ex.getBlockByNumber(BigInt(n.height)))?.stateRoot;
      await n.ex.close();
      await kv.close();
      const kv2 = await RocksKV.open(dir);
      const ex = await Executor.open(executorOptions(kv2, new EventBus()));
      try {
        const h = BigInt(n.height);
        assert.equal((await ex.getBlockByNumber(h))?.stateRoot, root);
        const r = await ex.call(
          { to: POOL, data: pool.encodeFunctionData('validator', [addr(newcomer)]) as Hex },
          h,
          undefined,
          opts,
        );
        const v = pool.decodeFunctionResult('validator', r.returnData);
        assert.equal(v.moniker, 'persisted');
        assert.equal(v.bonded, 2n * ETH);
        assert.equal(v.votingPower, 2n);
        const u = await ex.call(
          { to: POOL, data: pool.encodeFunctionData('unbondings', [addr(newcomer)]) as Hex },
          h,
          undefined,
          opts,
        );
        assert.deepEqual([...pool.decodeFunctionResult('unbondings', u.returnData)[1]], [ETH]);
      } finally {
        await ex.close();
        await kv2.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

const POOL_USER_SOL = `
// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.20;
import "IValidatorPool.sol";

contract PoolUser {
    IValidatorPool constant POOL = IValidatorPool(0x7B7C000000000000000000000000000000000011);

    function delegateTo(address op) external payable {
        POOL.delegate{value: msg.value}(op);
    }

    function powerOf(address op) external view returns (uint256 power) {
        (,,, power,,) = POOL.validator(op);
    }

    function viaDelegatecall(address op) external payable returns (bool ok, bytes memory ret) {
        (ok, ret) = address(POOL).delegatecall(abi.encodeCall(IValidatorPool.delegate, (op)));
    }
}
`;

describe('validator pool: the Solidity interface (contracts/IValidatorPool.sol)', () => {
  const iface = readFileSync(new URL('../../../contracts/IValidatorPool.sol', import.meta.url), 'utf8');
  const out = compileSolidity({ 'IValidatorPool.sol': iface, 'PoolUser.sol': POOL_USER_SOL });

  it('declares exactly the functions the precompile answers', () => {
    const abi = new Interface(out.IValidatorPool!.abi as never);
    const declared: string[] = [];
    abi.forEachFunction((f) => declared.push(f.format('sighash')));
    assert.deepEqual(declared.sort(), stakingFunctions().sort());
    const events: string[] = [];
    abi.forEachEvent((e) => events.push(e.format('sighash')));
    assert.deepEqual(events.sort(), [
      'AllRewardsClaimed(address,uint256,uint256)',
      'Delegated(address,address,uint256)',
      'Redelegated(address,address,address,uint256,uint256)',
      'RewardsClaimed(address,address,uint256,uint256)',
      'Undelegated(address,address,uint256,uint256)',
      'Unjailed(address)',
      'ValidatorCreated(address,bytes32,string,uint16,uint256)',
      'ValidatorEdited(address,string,uint16)',
      'Withdrawn(address,uint256)',
    ]);
  });

  it('a contract delegates through the interface and reads the power; a delegatecall is refused', async () => {
    const n = await startStakingNode();
    try {
      const user = new Interface(out.PoolUser!.abi as never);
      const nonce = () => {
        const v = n.nonces.get(delegator) ?? 0n;
        n.nonces.set(delegator, v + 1n);
        return v;
      };
      await produceBlock(n, [
        signTx(delegator, { nonce: nonce(), to: null, data: out.PoolUser!.bytecode, gas: 2_000_000n }),
      ]);
      const contract = (await n.ex.getBlockReceipts(BigInt(n.height)))[0]!.contractAddress!;
      const target = addr(ops[1]!);
      const res = await produceBlock(n, [
        signTx(delegator, {
          nonce: nonce(),
          to: contract,
          value: 5n * ETH,
          data: user.encodeFunctionData('delegateTo', [target]) as Hex,
          gas: 300_000n,
        }),
      ]);
      assert.deepEqual(res.validatorUpdates, [{ pubKey: consensusKey(1), power: 15n }]);
      assert.equal(
        (await read(n, 'delegation', [contract, target]))[0],
        5n * ETH,
        'the contract is the delegator',
      );
      const power = await n.ex.call(
        { to: contract, data: user.encodeFunctionData('powerOf', [target]) as Hex },
        BigInt(n.height),
        undefined,
        opts,
      );
      assert.equal(BigInt(power.returnData), 15n);

      const dc = await n.ex.call(
        {
          from: addr(delegator),
          to: contract,
          value: ETH,
          data: user.encodeFunctionData('viaDelegatecall', [target]) as Hex,
        },
        BigInt(n.height),
        undefined,
        opts,
      );
      const [ok, ret] = user.decodeFunctionResult('viaDelegatecall', dc.returnData);
      assert.equal(ok, false);
      assert.equal(
        pool.parseError(ret)?.args[0],
        'the validator pool cannot be reached by delegatecall or callcode',
      );
    } finally {
      await n.ex.close();
    }
  });
});
