import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { keccak256 } from '@noded/crypto';
import { type CallRequest, type CallResult, ChainError, type Hex, type StateOverrides } from '@noded/types';
import { getCreateAddress, Interface } from 'ethers';
import { LAB_SOL } from './contracts.js';
import {
  addr,
  compile,
  ETH,
  GWEI,
  key,
  PROPOSER,
  produceBlock,
  signTx,
  startNode,
  type TestNode,
} from './helpers.js';

const owner = key(1);
const poor = key(3);
const hexOf = (b: Uint8Array): Hex => `0x${Buffer.from(b).toString('hex')}`;
const opts = { gasCap: 50_000_000n, timeoutMs: 5000 };

// First in the file: this process has decoded no transaction yet, so the shared Common holds only
// what the VM merged into it when the call runs.
describe('a call on a fresh node', () => {
  it('runs before any transaction was ever decoded', async () => {
    const target = addr(key(70));
    const n = await startNode([{ address: target, balance: 0n, code: '0x5a60005260206000f3' }]); // return GAS
    try {
      const r = await n.ex.call({ to: target, gas: 100_000n }, 0n, undefined, opts);
      assert.equal(BigInt(r.returnData), 100_000n - 21_000n - 2n);
      assert.equal(r.gasUsed, 21_000n + 2n + 3n + 6n + 3n + 3n);
    } finally {
      await n.ex.close();
    }
  });
});

describe('calls, estimates, access lists and traces', () => {
  let n: TestNode;
  let lab: Hex;
  let child: Hex;
  let nonce = 0n;
  const c = () => compile({ 'Lab.sol': LAB_SOL });
  const labIf = () => new Interface(c().Lab.abi as never);
  const enc = (fn: string, args: unknown[] = []) => labIf().encodeFunctionData(fn, args) as Hex;
  const send = async (to: Hex | null, data: Hex, gas = 3_000_000n) => {
    const raw = signTx(owner, { nonce: nonce++, to, data, gas });
    await produceBlock(n, [raw]);
    return hexOf(keccak256(raw));
  };

  before(async () => {
    n = await startNode([
      { address: addr(owner), balance: 1000n * ETH },
      { address: addr(poor), balance: ETH / 1000n },
    ]);
    const h = await send(null, c().Lab.bytecode);
    lab = (await n.ex.getReceipt(h))!.contractAddress!;
    const salt = `0x${'01'.repeat(32)}` as Hex;
    await send(lab, enc('deploy', [salt, 5n]));
    const logs = await n.ex.getLogs({ fromBlock: 0n, toBlock: n.ex.latestHeight(), addresses: [lab] });
    child = `0x${logs[0].topics[1].slice(26)}` as Hex;
  });

  it('estimates a plain transfer at 21000 and a contract call at the gas it needs', async () => {
    assert.equal(
      await n.ex.estimateGas(
        { from: addr(owner), to: addr(key(9)), value: 1n },
        n.ex.latestHeight(),
        undefined,
        opts,
      ),
      21_000n,
    );
    const est = await n.ex.estimateGas(
      { from: addr(owner), to: lab, data: enc('setChild', [child, 7n]) },
      n.ex.latestHeight(),
      undefined,
      opts,
    );
    const low = await n.ex.call(
      { from: addr(owner), to: lab, data: enc('setChild', [child, 7n]), gas: est - est / 10n },
      n.ex.latestHeight(),
      undefined,
      opts,
    );
    assert.ok(low.error === 'out of gas' || low.reverted, 'a tenth less gas than estimated fails');
    const h = await send(lab, enc('setChild', [child, 7n]), est);
    const r = await n.ex.getReceipt(h);
    assert.equal(r?.status, 1);
    assert.ok(
      est >= r!.gasUsed && est <= (r!.gasUsed * 110n) / 100n + 2300n,
      `estimate ${est} vs used ${r!.gasUsed}`,
    );
  });

  it('returns geth errors: insufficient funds for transfer, gas required exceeds allowance', async () => {
    await assert.rejects(
      n.ex.estimateGas(
        { from: addr(poor), to: addr(owner), value: ETH, gasPrice: GWEI },
        n.ex.latestHeight(),
        undefined,
        opts,
      ),
      new ChainError(-32000, 'insufficient funds for transfer'),
    );
    await assert.rejects(
      n.ex.estimateGas(
        { from: addr(owner), to: lab, data: enc('burnGas', [5000n]) },
        n.ex.latestHeight(),
        undefined,
        { gasCap: 100_000n, timeoutMs: 0 },
      ),
      new ChainError(-32000, 'gas required exceeds allowance (100000)'),
    );
    await assert.rejects(
      n.ex.call({ from: addr(poor), to: addr(owner), value: ETH }, n.ex.latestHeight(), undefined, opts),
      (e: unknown) =>
        e instanceof ChainError &&
        /^insufficient funds for gas \* price \+ value: address 0x[0-9a-f]{40} have \d+ want \d+$/.test(
          e.message,
        ),
    );
  });

  it('applies state overrides: balance, code, stateDiff and state', async () => {
    const h = n.ex.latestHeight();
    const bal = await n.ex.call(
      { to: lab, data: enc('selfBalance') },
      h,
      { [lab]: { balance: 12345n } },
      opts,
    );
    assert.equal(BigInt(bal.returnData), 12345n);
    const counter0 = BigInt(
      (await n.ex.call({ to: lab, data: enc('counter') }, h, undefined, opts)).returnData,
    );
    const slot0 = `0x${'0'.repeat(64)}` as Hex;
    const diff = await n.ex.call(
      { to: lab, data: enc('counter') },
      h,
      { [lab]: { stateDiff: { [slot0]: `0x${'0'.repeat(62)}2a` } } },
      opts,
    );
    assert.equal(BigInt(diff.returnData), 42n);
    assert.equal(
      BigInt((await n.ex.call({ to: lab, data: enc('counter') }, h, undefined, opts)).returnData),
      counter0,
      'overrides never persist',
    );
    const childIf = new Interface(c().Child.abi as never);
    const code = await n.ex.call(
      { to: addr(key(50)), data: childIf.encodeFunctionData('get') as Hex },
      h,
      { [addr(key(50))]: { code: c().Child.deployed, state: { [slot0]: `0x${'0'.repeat(63)}9` } } },
      opts,
    );
    assert.equal(BigInt(code.returnData), 9n);
  });

  it('runs a plain call (no price, no access list) exactly as the same call run as a transaction', async () => {
    // Unpriced calls with a target skip building a transaction; an empty access list sends the same
    // call through runTx. Every observable must agree: output, gas used, refusals, logs.
    const h = n.ex.latestHeight();
    const RET = '60005260206000f3'; // PUSH1 0 MSTORE PUSH1 32 PUSH1 0 RETURN: return the top of the stack
    const probe = addr(key(60));
    const run = (req: CallRequest, over?: StateOverrides) =>
      n.ex.call(req, h, over, opts).then(
        (r) => ({ ok: r }),
        (e: Error) => ({ err: e.message }),
      );
    const same = async (what: string, req: CallRequest, over?: StateOverrides) => {
      const plain = await run(req, over);
      const viaTx = await run({ ...req, accessList: [] }, over);
      assert.deepEqual(plain, viaTx, what);
      return plain;
    };
    const code = (ops: string): StateOverrides => ({ [probe]: { code: `0x${ops}` as Hex } });
    const gasAfterTouching = async (what: string, push: string) => {
      const r = await same(
        `warmth of ${what}`,
        { from: addr(owner), to: probe },
        code(`${push}31505a${RET}`),
      );
      return BigInt((r as { ok: CallResult }).ok.returnData);
    };
    const cold = await gasAfterTouching('an untouched address', `73${'42'.repeat(20)}`);
    // Warm is 2500 cheaper than cold; COINBASE, CALLER and ADDRESS cost 2 where a PUSH costs 3.
    for (const [what, push, saved] of [
      ['the coinbase', '41', 2501n],
      ['the caller', '33', 2501n],
      ['the target', '30', 2501n],
      ['ecrecover', '6001', 2500n],
      ['the point evaluation precompile', '600a', 2500n],
      ['p256verify', '610100', 2500n],
    ] as const) {
      assert.equal((await gasAfterTouching(what, push)) - cold, saved, `${what} is warm`);
    }
    for (const [what, ops] of [
      ['ORIGIN', '32'],
      ['GASPRICE', '3a'],
      ['BASEFEE', '48'],
      ['CALLVALUE', '34'],
      ['the caller balance', '3331'],
      ['the caller code hash after its nonce bump', '333f'],
      ['GAS', '5a'],
    ]) {
      await same(what, { from: addr(owner), to: probe, value: 3n }, code(`${ops}${RET}`));
      await same(`${what} from the zero address`, { to: probe }, code(`${ops}${RET}`));
    }
    const refund = await same(
      'two cleared slots (the refund capped at a fifth)',
      { to: probe },
      {
        [probe]: {
          code: '0x60006000556000600155', // SSTORE(0, 0) SSTORE(1, 0)
          stateDiff: {
            [`0x${'0'.repeat(64)}` as Hex]: `0x${'0'.repeat(63)}1`,
            [`0x${'0'.repeat(63)}1` as Hex]: `0x${'0'.repeat(63)}1`,
          },
        },
      },
    );
    // 21000 + 2 x (2100 cold + 2900 reset) + 4 pushes = 31012 before the refund of 2 x 4800; cap 6202.
    assert.equal('ok' in refund && refund.ok.gasUsed, 31_012n - 6_202n);
    const transfer = await same('a value transfer', { from: addr(owner), to: addr(key(61)), value: 5n });
    assert.equal('ok' in transfer && transfer.ok.gasUsed, 21_000n);
    const data = `0x${'ff'.repeat(1000)}` as Hex; // intrinsic 21000 + 16 * 1000, floor 21000 + 10 * 4000
    const floor = await same('the calldata floor', { to: probe, data }, code('00'));
    assert.equal('ok' in floor && floor.ok.gasUsed, 61_000n);
    assert.deepEqual(await same('gas under the floor', { to: probe, data, gas: 50_000n }, code('00')), {
      err: 'insufficient gas for floor data gas cost: have 50000, want 61000',
    });
    assert.deepEqual(
      await same('gas under the intrinsic gas', { to: probe, data, gas: 30_000n }, code('00')),
      {
        err: 'intrinsic gas too low: have 30000, want 37000',
      },
    );
    await same('a revert with a reason', { to: lab, data: enc('fail', [1n]) });
    await same('a panic', { to: lab, data: enc('fail', [2n]) });
    await same('a custom error', { to: lab, data: enc('fail', [3n]) });
    await same('out of gas', { to: lab, data: enc('burnGas', [1000n]), gas: 100_000n });
    await same('an event', { from: addr(owner), to: lab, data: enc('bump') });
    await same('a cold contract read', { to: lab, data: enc('readChild', [child]) });
    await same('a nested write', { from: addr(owner), to: lab, data: enc('setChild', [child, 9n]) });
    await same('a precompile', { to: lab, data: enc('modexp', [3n, 5n, 7n]) });
    await same('the block', { to: lab, data: enc('blockInfo') });
  });

  it('creates an access list with the touched contract slots', async () => {
    const res = await n.ex.createAccessList(
      { from: addr(owner), to: lab, data: enc('setChild', [child, 8n]) },
      n.ex.latestHeight(),
      opts,
    );
    const entries = new Map(res.accessList.map((e) => [e.address, e.storageKeys]));
    assert.deepEqual(entries.get(child), [`0x${'0'.repeat(64)}`]);
    assert.deepEqual(entries.get(lab), [`0x${'0'.repeat(64)}`]);
    assert.ok(!entries.has(addr(owner)));
    assert.equal(res.error, undefined);
    const withList = await n.ex.call(
      { from: addr(owner), to: lab, data: enc('setChild', [child, 8n]), accessList: res.accessList },
      n.ex.latestHeight(),
      undefined,
      opts,
    );
    assert.equal(withList.gasUsed, res.gasUsed);
  });

  it('traces a transaction with the struct logger (geth shape)', async () => {
    const h = await send(lab, enc('bump'), 200_000n);
    const r = await n.ex.getReceipt(h);
    const t = (await n.ex.traceTransaction(h, {})) as {
      gas: number;
      failed: boolean;
      returnValue: string;
      structLogs: Array<{
        op: string;
        pc: number;
        gas: number;
        gasCost: number;
        depth: number;
        stack?: string[];
        storage?: Record<string, string>;
      }>;
    };
    assert.equal(t.failed, false);
    assert.equal(BigInt(t.gas), r!.gasUsed);
    assert.equal(t.structLogs[0].pc, 0);
    assert.equal(t.structLogs[0].depth, 1);
    const sstore = t.structLogs.find((l) => l.op === 'SSTORE');
    assert.ok(sstore?.storage, 'SSTORE steps carry the contract storage');
    const counter = BigInt(
      (await n.ex.call({ to: lab, data: enc('counter') }, n.ex.latestHeight(), undefined, opts)).returnData,
    );
    assert.equal(BigInt(`0x${sstore.storage[`${'0'.repeat(64)}`]}`), counter);
    assert.ok(t.structLogs.every((l) => Array.isArray(l.stack)));
    const noStack = (await n.ex.traceTransaction(h, { disableStack: true })) as {
      structLogs: Array<{ stack?: unknown }>;
    };
    assert.ok(noStack.structLogs.every((l) => l.stack === undefined));
  });

  it('traces the memory a frame paid for, written or not (geth: mem.Len())', async () => {
    // MSTORE8 0xff at 0, then CALL an empty account with a 12 KB output area: the gas is paid for
    // 384 words, the call returns nothing, so only the first byte is ever written.
    const initcode = '0x60ff6000536130006000600060006000611234' + '5af100';
    const t = (await n.ex.traceCall({ from: addr(owner), data: initcode as Hex }, n.ex.latestHeight(), {
      enableMemory: true,
    })) as { failed: boolean; structLogs: Array<{ op: string; memory?: string[] }> };
    assert.equal(t.failed, false);
    const call = t.structLogs.find((l) => l.op === 'CALL');
    assert.deepEqual(call?.memory, [`ff${'0'.repeat(62)}`]);
    const stop = t.structLogs.at(-1);
    assert.equal(stop?.op, 'STOP');
    assert.equal(stop?.memory?.length, 0x3000 / 32);
    assert.equal(stop?.memory?.[0], `ff${'0'.repeat(62)}`);
    assert.ok(stop?.memory?.slice(1).every((w) => w === '0'.repeat(64)));
  });

  it('traces nested calls and reverts with callTracer', async () => {
    const h = await send(lab, enc('setChild', [child, 11n]), 300_000n);
    const t = (await n.ex.traceTransaction(h, { tracer: 'callTracer' })) as {
      type: string;
      from: string;
      to: string;
      gasUsed: string;
      calls?: Array<{ type: string; to: string; input: string }>;
    };
    assert.equal(t.type, 'CALL');
    assert.equal(t.from, addr(owner));
    assert.equal(t.to, lab);
    assert.equal(BigInt(t.gasUsed), (await n.ex.getReceipt(h))!.gasUsed);
    assert.equal(t.calls?.length, 1);
    assert.equal(t.calls?.[0].type, 'CALL');
    assert.equal(t.calls?.[0].to, child);
    const f = await send(lab, enc('fail', [1n]), 100_000n);
    const ft = (await n.ex.traceTransaction(f, { tracer: 'callTracer' })) as {
      error?: string;
      revertReason?: string;
    };
    assert.equal(ft.error, 'execution reverted');
    assert.equal(ft.revertReason, 'custom reason');
    const top = (await n.ex.traceTransaction(h, {
      tracer: 'callTracer',
      tracerConfig: { onlyTopCall: true },
    })) as { calls?: unknown[] };
    assert.equal(top.calls, undefined);
    const call = (await n.ex.traceCall(
      { from: addr(owner), to: lab, data: enc('readChild', [child]) },
      n.ex.latestHeight(),
      { tracer: 'callTracer' },
    )) as { calls?: Array<{ type: string }> };
    assert.equal(call.calls?.[0].type, 'STATICCALL');
    const blk = await n.ex.traceBlock(n.ex.latestHeight(), { tracer: 'callTracer' });
    assert.equal(blk.length, 1);
    assert.equal(blk[0].txHash, f);
  });

  it('aborts a call that exceeds its time limit', async () => {
    await assert.rejects(
      n.ex.call(
        { from: addr(owner), to: lab, data: enc('burnGas', [200_000n]) },
        n.ex.latestHeight(),
        undefined,
        { gasCap: 50_000_000n, timeoutMs: 20 },
      ),
      new ChainError(-32000, 'execution aborted (timeout = 0.02s)'),
    );
    // The aborted run left nothing behind in the reused VMs.
    const counter = BigInt(
      (await n.ex.call({ to: lab, data: enc('counter') }, n.ex.latestHeight(), undefined, opts)).returnData,
    );
    const again = await Promise.all(
      Array.from({ length: 12 }, () =>
        n.ex.call({ to: lab, data: enc('counter') }, n.ex.latestHeight(), undefined, opts),
      ),
    );
    assert.ok(again.every((r) => BigInt(r.returnData) === counter));
  });

  it('gives each repeated call the value and gas it asked for', async () => {
    // Init code returning CALLVALUE (0x34) or GAS (0x5a): PUSH1 0 MSTORE PUSH1 32 PUSH1 0 RETURN.
    const run = async (op: string, extra: { value?: bigint; gas?: bigint }) =>
      BigInt(
        (
          await n.ex.call(
            { from: addr(owner), to: null, data: `0x${op}60005260206000f3` as Hex, ...extra },
            n.ex.latestHeight(),
            undefined,
            opts,
          )
        ).returnData,
      );
    assert.equal(await run('34', { value: 1n }), 1n);
    assert.equal(await run('34', { value: 2n }), 2n);
    assert.equal(await run('34', { value: 1n }), 1n);
    const small = await run('5a', { gas: 100_000n });
    const large = await run('5a', { gas: 200_000n });
    assert.equal(large - small, 100_000n);
    assert.equal(await run('5a', { gas: 100_000n }), small);
  });

  it('runs a repeated creation call with the sender nonce of the queried state', async () => {
    // Init code that returns its own address: ADDRESS PUSH1 0 MSTORE PUSH1 32 PUSH1 0 RETURN.
    const req = { from: addr(owner), to: null, data: '0x3060005260206000f3' as Hex };
    const created = async () =>
      `0x${(await n.ex.call(req, n.ex.latestHeight(), undefined, opts)).returnData.slice(26)}`;
    const before = await created();
    assert.equal(before, getCreateAddress({ from: addr(owner), nonce }).toLowerCase());
    assert.equal(await created(), before);
    await send(addr(key(9)), '0x');
    const after = await created();
    assert.equal(after, getCreateAddress({ from: addr(owner), nonce }).toLowerCase());
    assert.notEqual(after, before);
  });
  it('publishes EthNewHead with the block and its logs after commit', async () => {
    const before = n.events.length;
    const h = await send(lab, enc('bump'), 200_000n);
    const head = n.events.slice(before).find((e) => e.kind === 'EthNewHead');
    assert.ok(head && head.kind === 'EthNewHead');
    assert.equal(head.block.number, n.ex.latestHeight());
    assert.deepEqual(head.block.transactions, [h]);
    assert.equal(head.block.miner, hexOf(PROPOSER));
    assert.equal(head.logs.length, 1);
    assert.equal(head.logs[0].transactionHash, h);
    assert.deepEqual(await n.ex.getBlockByHash(head.block.hash), head.block);
    const tx = await n.ex.getTransaction(h);
    assert.equal(tx?.blockHash, head.block.hash);
    assert.equal(tx?.gasPrice, head.block.baseFeePerGas + GWEI);
  });
});
