// The BTC token precompile (0x7b7c…0000) through the real executor in process: genesis code and
// supply, transfers by transactions and from contracts, reverted frames leaving nothing behind,
// the refusals (static context, DELEGATECALL, native value, bad calldata), fixed gas, the supply
// after a burn, and allowances surviving a reopen of the RocksDB store.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { keccak256 } from '@noded/crypto';
import { Executor } from '@noded/execution';
import { BTC_TOKEN_GAS } from '@noded/execution/src/precompiles/btc-token.js';
import { RocksKV } from '@noded/storage';
import { EventBus, type Hex } from '@noded/types';
import { getAddress, getCreateAddress, Interface, TypedDataEncoder } from 'ethers';
import { BTC, compileBtcContracts } from '../btc-token.js';
import {
  addr,
  CHAIN_ID,
  ETH,
  executorOptions,
  key,
  produceBlock,
  signTx,
  startNode,
  type TestNode,
} from './helpers.js';

const c = compileBtcContracts();
const token = new Interface([
  'function name() view returns (string)',
  'function symbol() view returns (string)',
  'function decimals() view returns (uint8)',
  'function totalSupply() view returns (uint256)',
  'function balanceOf(address) view returns (uint256)',
  'function transfer(address,uint256) returns (bool)',
  'function approve(address,uint256) returns (bool)',
  'function allowance(address,address) view returns (uint256)',
  'function transferFrom(address,address,uint256) returns (bool)',
  'function nonces(address) view returns (uint256)',
  'function DOMAIN_SEPARATOR() view returns (bytes32)',
  'event Transfer(address indexed from, address indexed to, uint256 value)',
]);
const probe = new Interface(c.BTCProbe.abi as never[]);
const opts = { gasCap: 50_000_000n, timeoutMs: 5000 };
const errorIface = new Interface(['error Error(string)']);

const A = key(1);
const B = key(2);
const carol = addr(key(3));
const D = key(4);
const GENESIS = 100n * ETH + 5n * ETH;

async function read(n: TestNode, data: string, from?: Hex, height?: bigint) {
  return n.ex.call({ to: BTC as Hex, data: data as Hex, from }, height ?? BigInt(n.height), undefined, opts);
}

function reason(returnData: string): string {
  return errorIface.decodeErrorResult('Error', returnData)[0] as string;
}

/** Sends one transaction in its own block; returns its receipt. */
async function send(n: TestNode, k: Uint8Array, to: string | null, data: string, value = 0n, gas = 300_000n) {
  const nonce = await n.ex.getNonce(addr(k), BigInt(n.height));
  const raw = signTx(k, { nonce, to: to as Hex, data: data as Hex, value, gas });
  await produceBlock(n, [raw]);
  const hash = `0x${Buffer.from(keccak256(raw)).toString('hex')}` as Hex;
  const r = await n.ex.getReceipt(hash);
  assert.ok(r, 'receipt');
  return r;
}

describe('BTC token precompile in the executor', () => {
  let n: TestNode;
  let probeAddr: Hex;

  before(async () => {
    n = await startNode([
      { address: addr(A), balance: 100n * ETH },
      { address: addr(B), balance: 5n * ETH },
    ]);
    const r = await send(n, A, null, c.BTCProbe.bytecode, 0n, 3_000_000n);
    probeAddr = r.contractAddress!;
    assert.equal(probeAddr.toLowerCase(), getCreateAddress({ from: addr(A), nonce: 0 }).toLowerCase());
    await send(n, A, probeAddr, '0x', 3n * ETH, 100_000n);
  });

  it('has code, metadata, the genesis supply and native balances', async () => {
    assert.equal(await n.ex.getCode(BTC as Hex, 0n), '0x60006000fd');
    const dec = (fn: string, r: { returnData: string }) => token.decodeFunctionResult(fn, r.returnData)[0];
    assert.equal(dec('name', await read(n, token.encodeFunctionData('name'))), 'Bitcoin');
    assert.equal(dec('symbol', await read(n, token.encodeFunctionData('symbol'))), 'BTC');
    assert.equal(dec('decimals', await read(n, token.encodeFunctionData('decimals'))), 18n);
    assert.equal(dec('totalSupply', await read(n, token.encodeFunctionData('totalSupply'))), GENESIS);
    assert.equal(n.ex.totalSupply(), GENESIS);
    for (const who of [addr(A), addr(B), probeAddr, carol]) {
      const r = await read(n, token.encodeFunctionData('balanceOf', [who]));
      assert.equal(dec('balanceOf', r), await n.ex.getBalance(who, BigInt(n.height)));
    }
    const sep = await read(n, token.encodeFunctionData('DOMAIN_SEPARATOR'));
    const want = TypedDataEncoder.hashDomain({
      name: 'Bitcoin',
      version: '1',
      chainId: CHAIN_ID,
      verifyingContract: BTC,
    });
    assert.equal(sep.returnData, want);
    // A contract sees the code too (Solidity's extcodesize check) and the same balances.
    const size = await n.ex.call(
      { to: probeAddr, data: probe.encodeFunctionData('codeSize') as Hex },
      BigInt(n.height),
      undefined,
      opts,
    );
    assert.equal(BigInt(size.returnData), 5n);
  });

  it('transfer by a transaction moves native BTC, logs Transfer and charges the fixed gas', async () => {
    const h0 = BigInt(n.height);
    const aBefore = await n.ex.getBalance(addr(A), h0);
    const cBefore = await n.ex.getBalance(carol, h0);
    const data = token.encodeFunctionData('transfer', [carol, ETH]);
    const r = await send(n, A, BTC, data);
    assert.equal(r.status, 1);
    const bytes = Buffer.from(data.slice(2), 'hex');
    const zeros = bytes.filter((b) => b === 0).length;
    const intrinsic = 21_000n + 4n * BigInt(zeros) + 16n * BigInt(bytes.length - zeros);
    assert.equal(r.gasUsed, intrinsic + BTC_TOKEN_GAS.transfer);
    const h1 = BigInt(n.height);
    assert.equal(await n.ex.getBalance(carol, h1), cBefore + ETH);
    assert.equal(await n.ex.getBalance(addr(A), h1), aBefore - ETH - r.gasUsed * r.effectiveGasPrice);
    assert.equal(r.logs.length, 1);
    const ev = token.parseLog(r.logs[0])!;
    assert.equal(r.logs[0].address.toLowerCase(), BTC.toLowerCase());
    assert.deepEqual(
      [ev.name, ev.args[0], ev.args[1], ev.args[2]],
      ['Transfer', getAddress(addr(A)), getAddress(carol), ETH],
    );
    const logs = await n.ex.getLogs({ fromBlock: h1, toBlock: h1, addresses: [BTC.toLowerCase() as Hex] });
    assert.equal(logs.length, 1);
    assert.equal(logs[0].transactionHash, r.transactionHash);
    assert.equal(n.ex.totalSupply(), GENESIS, 'a transfer keeps the supply');
  });

  it('a reverted frame leaves neither balances, allowances nor logs behind', async () => {
    const h0 = BigInt(n.height);
    const pBefore = await n.ex.getBalance(probeAddr, h0);
    const cBefore = await n.ex.getBalance(carol, h0);
    const r = await send(n, A, probeAddr, probe.encodeFunctionData('tryInner', [carol, ETH]));
    assert.equal(r.status, 1);
    assert.equal(probe.decodeEventLog('Probed', r.logs[0].data, r.logs[0].topics)[0], false);
    assert.equal(r.logs.length, 1, 'only Probed: the inner Transfer was reverted with its frame');
    const h1 = BigInt(n.height);
    assert.equal(await n.ex.getBalance(probeAddr, h1), pBefore);
    assert.equal(await n.ex.getBalance(carol, h1), cBefore);
    const failed = await send(n, A, probeAddr, probe.encodeFunctionData('sendThenRevert', [carol, ETH]));
    assert.equal(failed.status, 0);
    assert.equal(failed.logs.length, 0);
    assert.equal(await n.ex.getBalance(carol, BigInt(n.height)), cBefore);
    // A contract's own transfer lands, and its balance read through the token matches.
    const ok = await send(n, A, probeAddr, probe.encodeFunctionData('send', [carol, 2n]));
    assert.equal(ok.status, 1);
    assert.equal(await n.ex.getBalance(carol, BigInt(n.height)), cBefore + 2n);
    const both = await n.ex.call(
      { to: probeAddr, data: probe.encodeFunctionData('balances', [probeAddr]) as Hex },
      BigInt(n.height),
      undefined,
      opts,
    );
    const [viaToken, native] = probe.decodeFunctionResult('balances', both.returnData);
    assert.equal(viaToken, native);
    assert.equal(native, pBefore - 2n);
  });

  it('refuses STATICCALL writes, DELEGATECALL, native value and bad calldata', async () => {
    const h = BigInt(n.height);
    const call = (data: string, value?: bigint) =>
      n.ex.call({ to: probeAddr, data: data as Hex, value, from: addr(A) }, h, undefined, opts);
    const st = await call(probe.encodeFunctionData('staticTransfer', [carol, 1n]));
    assert.equal(probe.decodeFunctionResult('staticTransfer', st.returnData)[0], false);
    const sb = probe.decodeFunctionResult(
      'staticBalance',
      (await call(probe.encodeFunctionData('staticBalance', [carol]))).returnData,
    );
    assert.equal(sb[0], true, 'a view function works under STATICCALL');
    const dg = probe.decodeFunctionResult(
      'delegateTransfer',
      (await call(probe.encodeFunctionData('delegateTransfer', [carol, 1n]))).returnData,
    );
    assert.equal(dg[0], false);
    assert.equal(
      reason(dg[1]),
      'BTC: the token must be called directly, not through DELEGATECALL or CALLCODE',
    );
    const pay = probe.decodeFunctionResult(
      'payTransfer',
      (await call(probe.encodeFunctionData('payTransfer', [carol, 1n]), 5n)).returnData,
    );
    assert.equal(pay[0], false);
    assert.equal(reason(pay[1]), 'BTC: transfer(address,uint256) is not payable (5 sent)');

    const direct = async (data: string, value?: bigint) => {
      const r = await n.ex.call(
        { to: BTC as Hex, data: data as Hex, from: addr(A), value },
        h,
        undefined,
        opts,
      );
      assert.equal(r.reverted, true, `${data} must revert`);
      return reason(r.returnData);
    };
    const transfer = token.encodeFunctionData('transfer', [carol, 1n]);
    assert.equal(await direct(transfer, 1n), 'BTC: transfer(address,uint256) is not payable (1 sent)');
    assert.equal(
      await direct(transfer.slice(0, 2 + 8 + 64)),
      'BTC: calldata for transfer(address,uint256) is 36 bytes, want at least 68',
    );
    assert.equal(await direct('0xdeadbeef'), 'BTC: unknown function selector 0xdeadbeef');
    const permit = new Interface([
      'function permit(address,address,uint256,uint256,uint8,bytes32,bytes32)',
    ]).encodeFunctionData('permit', [
      carol,
      carol,
      1n,
      1n << 40n,
      27,
      `0x${'11'.repeat(32)}`,
      `0x${'22'.repeat(32)}`,
    ]);
    const v300 = `${permit.slice(0, 10 + 64 * 4)}${(300).toString(16).padStart(64, '0')}${permit.slice(10 + 64 * 5)}`;
    assert.equal(
      await direct(v300),
      'BTC: argument v of permit(address,address,uint256,uint256,uint8,bytes32,bytes32) is 300, which does not fit uint8',
    );
    assert.match(
      await direct(permit),
      /^BTC: invalid permit signature: it is not 0x[0-9a-f]{40}'s signature/,
    );
    assert.equal(await direct('0x01'), 'BTC: calldata of 1 bytes has no function selector');
    const dirty = `0xa9059cbb${'ff'.repeat(12)}${carol.slice(2)}${'00'.repeat(31)}01`;
    assert.match(await direct(dirty), /^BTC: argument to of transfer\(address,uint256\) is not an address/);
    assert.equal(
      await direct(token.encodeFunctionData('transfer', [carol, 1000n * ETH])),
      `BTC: transfer amount ${1000n * ETH} exceeds the balance ${await n.ex.getBalance(addr(A), h)} of ${addr(A).toLowerCase()}`,
    );
    assert.equal(
      await direct(token.encodeFunctionData('transfer', ['0x0000000000000000000000000000000000000000', 1n])),
      'BTC: transfer to the zero address',
    );
    // A transaction sending value to the token reverts and the value stays with the sender.
    const r = await send(n, B, BTC, transfer, 7n);
    assert.equal(r.status, 0);
    assert.equal(await n.ex.getBalance(BTC as Hex, BigInt(n.height)), 0n);
    // Too little gas for the fixed cost: out of gas, nothing moved.
    const low = await n.ex.call(
      { to: BTC as Hex, data: transfer as Hex, from: addr(A), gas: 40_000n },
      h,
      undefined,
      opts,
    );
    assert.equal(low.error, 'out of gas');
  });

  it('totalSupply follows a burn (self-destruct in the creating transaction)', async () => {
    // Init code ADDRESS SELFDESTRUCT: the created contract names itself, and the value it holds is gone.
    const r = await send(n, A, null, '0x30ff', 2n * ETH, 100_000n);
    assert.equal(r.status, 1);
    assert.equal(n.ex.totalSupply(), GENESIS - 2n * ETH);
    const ts = await read(n, token.encodeFunctionData('totalSupply'));
    assert.equal(BigInt(ts.returnData), GENESIS - 2n * ETH);
    const before = await read(n, token.encodeFunctionData('totalSupply'), undefined, BigInt(n.height - 1));
    assert.equal(BigInt(before.returnData), GENESIS, 'the height before the burn still reads the old supply');
  });
});

describe('BTC token allowances on RocksDB', () => {
  const dir = mkdtempSync(join(tmpdir(), 'noded-btc-token-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('approve, transferFrom (finite and infinite) and the allowances after a reopen', async () => {
    const kv = await RocksKV.open(join(dir, 'application.db'));
    const n = await startNode(
      [
        { address: addr(A), balance: 10n * ETH },
        { address: addr(B), balance: 10n * ETH },
        { address: addr(D), balance: 10n * ETH },
      ],
      {},
      kv,
    );
    const spender = addr(B);
    const approve = await send(n, A, BTC, token.encodeFunctionData('approve', [spender, 3n * ETH]));
    assert.equal(approve.status, 1);
    assert.equal(approve.logs.length, 1);
    const allowance = async (owner: Hex, who: Hex) =>
      BigInt((await read(n, token.encodeFunctionData('allowance', [owner, who]))).returnData);
    assert.equal(await allowance(addr(A), spender), 3n * ETH);
    const tooMuch = await n.ex.call(
      {
        to: BTC as Hex,
        from: spender,
        data: token.encodeFunctionData('transferFrom', [addr(A), carol, 4n * ETH]) as Hex,
      },
      BigInt(n.height),
      undefined,
      opts,
    );
    assert.equal(
      reason(tooMuch.returnData),
      `BTC: transfer amount ${4n * ETH} exceeds the allowance ${3n * ETH} of ${spender.toLowerCase()} from ${addr(A).toLowerCase()}`,
    );
    const pulled = await send(n, B, BTC, token.encodeFunctionData('transferFrom', [addr(A), carol, ETH]));
    assert.equal(pulled.status, 1);
    assert.equal(pulled.gasUsed > BTC_TOKEN_GAS.transferFrom, true);
    assert.equal(await allowance(addr(A), spender), 2n * ETH);
    assert.equal(await n.ex.getBalance(carol, BigInt(n.height)), ETH);
    // An infinite allowance is not spent down.
    const max = (1n << 256n) - 1n;
    await send(n, A, BTC, token.encodeFunctionData('approve', [addr(D), max]));
    const infinite = await send(n, D, BTC, token.encodeFunctionData('transferFrom', [addr(A), carol, ETH]));
    assert.equal(infinite.status, 1);
    assert.equal(infinite.logs.length, 1, 'Transfer only: spending an allowance emits no Approval');
    assert.equal(await allowance(addr(A), addr(D)), max);
    assert.equal(await n.ex.getBalance(carol, BigInt(n.height)), 2n * ETH);
    const root = (await n.ex.getBlockByNumber(BigInt(n.height)))!.stateRoot;
    await n.ex.close();
    await kv.close();

    const kv2 = await RocksKV.open(join(dir, 'application.db'));
    const ex = await Executor.open(executorOptions(kv2, new EventBus()));
    try {
      const h = BigInt((await ex.info()).lastBlockHeight);
      assert.equal((await ex.getBlockByNumber(h))!.stateRoot, root);
      const q = async (owner: Hex, who: Hex) =>
        BigInt(
          (
            await ex.call(
              { to: BTC as Hex, data: token.encodeFunctionData('allowance', [owner, who]) as Hex },
              h,
              undefined,
              opts,
            )
          ).returnData,
        );
      assert.equal(await q(addr(A), spender), 2n * ETH);
      assert.equal(await q(addr(A), addr(D)), max);
      assert.equal(await q(addr(D), addr(A)), 0n);
      assert.equal(ex.totalSupply(), 30n * ETH);
    } finally {
      await ex.close();
      await kv2.close();
    }
  });
});
