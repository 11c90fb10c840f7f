import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { MerkleStateManager } from '@ethereumjs/statemanager';
import { Account, Address, eoaCode7702SignAuthorization } from '@ethereumjs/util';
import { keccak256, secp256k1Sign } from '@noded/crypto';
import { Executor } from '@noded/execution';
import { chainCommon } from '@noded/execution/src/evm/common.js';
import { BRIDGE_OUT_ADDRESS, BRIDGE_OUT_CODE } from '@noded/execution/src/precompiles/bridge-out.js';
import { BTC_TOKEN_ADDRESS, BTC_TOKEN_CODE } from '@noded/execution/src/precompiles/btc-token.js';
import { ChainError, EventBus, type Hex } from '@noded/types';
import {
  AbiCoder,
  keccak256 as ethersKeccak,
  getCreate2Address,
  Interface,
  solidityPackedKeccak256,
} from 'ethers';
import { LAB_SOL, TOKEN_SOL } from './contracts.js';
import {
  addr,
  CHAIN_ID,
  compile,
  ETH,
  executorOptions,
  GWEI,
  key,
  PROPOSER,
  produceBlock,
  signTx,
  startNode,
  type TestNode,
} from './helpers.js';

const owner = key(1);
const other = key(2);
const hexOf = (b: Uint8Array): Hex => `0x${Buffer.from(b).toString('hex')}`;

describe('EVM execution through the executor', () => {
  let n: TestNode;
  let nonce = 0n;
  let token: Hex;
  let lab: Hex;
  const c = () => compile({ 'Token.sol': TOKEN_SOL, 'Lab.sol': LAB_SOL });
  const tokenIf = () => new Interface(c().Token.abi as never);
  const labIf = () => new Interface(c().Lab.abi as never);

  async function send(data: Hex, to: Hex | null, opts: { value?: bigint; gas?: bigint } = {}) {
    const raw = signTx(owner, {
      nonce: nonce++,
      to,
      data,
      value: opts.value ?? 0n,
      gas: opts.gas ?? 3_000_000n,
    });
    const res = await produceBlock(n, [raw]);
    const hash = hexOf(keccak256(raw));
    return { res: res.txResults[0], receipt: await n.ex.getReceipt(hash), hash };
  }

  async function call(to: Hex, data: Hex) {
    return n.ex.call({ from: addr(owner), to, data }, n.ex.latestHeight(), undefined, {
      gasCap: 50_000_000n,
      timeoutMs: 5000,
    });
  }

  before(async () => {
    n = await startNode([
      { address: addr(owner), balance: 1000n * ETH },
      { address: addr(other), balance: 5n * ETH },
    ]);
  });

  it('deploys a contract, emits its constructor event and serves its code', async () => {
    const deployData = (c().Token.bytecode +
      AbiCoder.defaultAbiCoder()
        .encode(['uint256'], [10n ** 24n])
        .slice(2)) as Hex;
    const { res, receipt } = await send(deployData, null);
    assert.equal(res.code, 0, res.log);
    assert.equal(receipt?.status, 1);
    assert.ok(receipt?.contractAddress);
    token = receipt.contractAddress;
    assert.equal(await n.ex.getCode(token, n.ex.latestHeight()), c().Token.deployed);
    assert.equal(receipt.logs.length, 1);
    assert.equal(receipt.logs[0].topics[0], ethersKeccak(Buffer.from('Transfer(address,address,uint256)')));
    const eth = res.events.find((e) => e.type === 'ethereum_tx');
    const attrs = Object.fromEntries(eth!.attributes.map((a) => [a.key, a.value]));
    assert.equal(attrs.ethereumTxHash, receipt.transactionHash);
    assert.equal(attrs.txIndex, '0');
    assert.equal(attrs.txGasUsed, receipt.gasUsed.toString());
    assert.equal(attrs.recipient, token);
    assert.equal(attrs.ethereumTxFailed, undefined);
  });

  it('transfers tokens, indexes the log by address and topic, and answers eth_call', async () => {
    const data = tokenIf().encodeFunctionData('transfer', [addr(other), 1234n]) as Hex;
    const { res, receipt } = await send(data, token);
    assert.equal(res.code, 0);
    assert.equal(receipt?.status, 1);
    const bal = await call(token, tokenIf().encodeFunctionData('balanceOf', [addr(other)]) as Hex);
    assert.equal(BigInt(bal.returnData), 1234n);
    const topic = ethersKeccak(Buffer.from('Transfer(address,address,uint256)')) as Hex;
    const from = 0n;
    const to = n.ex.latestHeight();
    const byAddr = await n.ex.getLogs({ fromBlock: from, toBlock: to, addresses: [token] });
    assert.equal(byAddr.length, 2);
    const toOther = `0x${'0'.repeat(24)}${addr(other).slice(2)}` as Hex;
    const byTopic = await n.ex.getLogs({ fromBlock: from, toBlock: to, topics: [topic, null, toOther] });
    assert.equal(byTopic.length, 1);
    assert.equal(byTopic[0].transactionHash, receipt?.transactionHash);
    assert.equal(byTopic[0].blockNumber, receipt?.blockNumber);
    assert.deepEqual(await n.ex.getLogs({ fromBlock: from, toBlock: to, addresses: [addr(other)] }), []);

    // The receipt's bloom (execution's own, kept with the receipt) holds the log's address and
    // topics (Yellow Paper 4.3.1), and is the bloom of the same receipt read back from the store.
    const bloom = new Uint8Array(256);
    for (const item of [receipt!.logs[0].address, ...receipt!.logs[0].topics]) {
      const h = Buffer.from(ethersKeccak(item).slice(2), 'hex');
      for (let i = 0; i < 6; i += 2) {
        const bit = ((h[i]! << 8) | h[i + 1]!) & 2047;
        bloom[255 - (bit >> 3)]! |= 1 << (bit & 7);
      }
    }
    assert.equal(receipt?.logsBloom, hexOf(bloom));
    const reopened = await Executor.open(executorOptions(n.kv, new EventBus()));
    const stored = await reopened.getReceipt(receipt!.transactionHash);
    assert.equal(stored?.logsBloom, hexOf(bloom));
    assert.deepEqual(stored, receipt);
  });

  it('records a revert with its reason: status 0, gas charged, geth errors from call and estimateGas', async () => {
    const deployed = await send(c().Lab.bytecode, null);
    lab = deployed.receipt!.contractAddress!;
    const data = labIf().encodeFunctionData('fail', [1n]) as Hex;
    const before = await n.ex.getBalance(addr(owner), n.ex.latestHeight());
    const { res, receipt } = await send(data, lab, { gas: 100_000n });
    assert.equal(res.code, 0, 'an EVM revert is a valid (included) transaction');
    assert.equal(receipt?.status, 0);
    assert.ok(receipt!.gasUsed > 21_000n);
    // No logs: the empty bloom, 256 zero bytes in hex, as for every receipt of a plain transfer.
    assert.equal(receipt?.logsBloom, `0x${'00'.repeat(256)}`);
    assert.equal(receipt?.blockHash, (await n.ex.getBlockByNumber(receipt!.blockNumber))?.hash);
    const ev = Object.fromEntries(
      res.events.find((e) => e.type === 'ethereum_tx')!.attributes.map((a) => [a.key, a.value]),
    );
    assert.equal(ev.ethereumTxFailed, 'execution reverted: custom reason');
    const after = await n.ex.getBalance(addr(owner), n.ex.latestHeight());
    assert.equal(before - after, receipt!.gasUsed * receipt!.effectiveGasPrice);

    const r = await call(lab, data);
    assert.equal(r.reverted, true);
    assert.equal(r.returnData.slice(0, 10), '0x08c379a0');
    await assert.rejects(
      n.ex.estimateGas({ from: addr(owner), to: lab, data }, n.ex.latestHeight(), undefined, {
        gasCap: 50_000_000n,
        timeoutMs: 0,
      }),
      (e: unknown) =>
        e instanceof ChainError &&
        e.code === 3 &&
        e.message === 'execution reverted: custom reason' &&
        e.data === r.returnData,
    );
    const panic = labIf().encodeFunctionData('fail', [2n]) as Hex;
    await assert.rejects(
      n.ex.estimateGas({ from: addr(owner), to: lab, data: panic }, n.ex.latestHeight(), undefined, {
        gasCap: 0n,
        timeoutMs: 0,
      }),
      (e: unknown) =>
        e instanceof ChainError && e.code === 3 && e.message === 'execution reverted: assert(false)',
    );
    const custom = labIf().encodeFunctionData('fail', [3n]) as Hex;
    await assert.rejects(
      n.ex.estimateGas({ from: addr(owner), to: lab, data: custom }, n.ex.latestHeight(), undefined, {
        gasCap: 0n,
        timeoutMs: 0,
      }),
      (e: unknown) =>
        e instanceof ChainError && e.code === 3 && e.message === 'execution reverted' && e.data !== undefined,
    );
  });

  it('deploys with CREATE2 at the predicted address and calls through nested frames', async () => {
    const salt = `0x${'ab'.repeat(32)}` as Hex;
    const predicted = await call(lab, labIf().encodeFunctionData('predict', [salt, 42n]) as Hex);
    const initCode = c().Child.bytecode + AbiCoder.defaultAbiCoder().encode(['uint256'], [42n]).slice(2);
    const expected = getCreate2Address(lab, salt, ethersKeccak(initCode)).toLowerCase();
    assert.equal(`0x${predicted.returnData.slice(26)}`, expected);
    const { receipt } = await send(labIf().encodeFunctionData('deploy', [salt, 42n]) as Hex, lab);
    assert.equal(receipt?.status, 1);
    assert.equal(receipt!.logs[0].topics[1], `0x${'0'.repeat(24)}${expected.slice(2)}`);
    const read = await call(lab, labIf().encodeFunctionData('readChild', [expected]) as Hex);
    assert.equal(BigInt(read.returnData), 42n);
    const set = await send(labIf().encodeFunctionData('setChild', [expected, 99n]) as Hex, lab);
    assert.equal(set.receipt?.status, 1);
    assert.equal(
      BigInt((await call(lab, labIf().encodeFunctionData('readChild', [expected]) as Hex)).returnData),
      99n,
    );
    // Same salt again: address collision, the outer call reverts.
    const again = await send(labIf().encodeFunctionData('deploy', [salt, 42n]) as Hex, lab, {
      gas: 500_000n,
    });
    assert.equal(again.receipt?.status, 0);
  });

  it('runs the precompiles (ecrecover, sha256, ripemd160, identity, modexp, bn254 add); 0x0a always fails', async () => {
    const digest = keccak256(Buffer.from('hello'));
    const { signature, recovery } = secp256k1Sign(digest, other);
    const rec = await call(
      lab,
      labIf().encodeFunctionData('recover', [
        hexOf(digest),
        27 + recovery,
        hexOf(signature.subarray(0, 32)),
        hexOf(signature.subarray(32)),
      ]) as Hex,
    );
    assert.equal(`0x${rec.returnData.slice(26)}`, addr(other));
    const sha = await call(lab, labIf().encodeFunctionData('sha', ['0x616263']) as Hex);
    assert.equal(sha.returnData, '0xba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    const rip = await call(lab, labIf().encodeFunctionData('ripemd', ['0x616263']) as Hex);
    assert.equal(rip.returnData.slice(0, 42), '0x8eb208f7e05d987a9b044a8e98c6b087f15a0bfc');
    const idt = await call(lab, labIf().encodeFunctionData('identity', ['0xdeadbeef']) as Hex);
    assert.equal(labIf().decodeFunctionResult('identity', idt.returnData)[0], '0xdeadbeef');
    const mod = await call(lab, labIf().encodeFunctionData('modexp', [3n, 5n, 7n]) as Hex);
    assert.equal(BigInt(mod.returnData), 3n ** 5n % 7n);
    const add = await call(lab, labIf().encodeFunctionData('ecAdd', [1n, 2n, 1n, 2n]) as Hex);
    const [x] = labIf().decodeFunctionResult('ecAdd', add.returnData);
    assert.equal(x, 0x030644e72e131a029b85045b68181585d97816a916871ca8d3c208c16d87cfd3n);
    const kzg = await n.ex.call(
      { from: addr(owner), to: '0x000000000000000000000000000000000000000a', data: `0x${'00'.repeat(192)}` },
      n.ex.latestHeight(),
      undefined,
      { gasCap: 1_000_000n, timeoutMs: 0 },
    );
    assert.ok(kzg.error !== undefined || kzg.reverted);
  });

  it('exposes block context: number, timestamp, coinbase = proposer, basefee, chain id, gas limit, prevrandao, blockhash', async () => {
    const r = await call(lab, labIf().encodeFunctionData('blockInfo') as Hex);
    const [number, time, coinbase, , chainid, gaslimit, prevrandao] = labIf().decodeFunctionResult(
      'blockInfo',
      r.returnData,
    );
    const head = (await n.ex.getBlockByNumber(n.ex.latestHeight()))!;
    assert.equal(number, head.number);
    assert.equal(time, head.timestamp);
    assert.equal(coinbase.toLowerCase(), hexOf(PROPOSER));
    assert.equal(chainid, CHAIN_ID);
    assert.equal(gaslimit, 30_000_000n);
    assert.equal(`0x${prevrandao.toString(16).padStart(64, '0')}`, head.mixHash);
    // A priced call sees the block's base fee; an unpriced one sees 0 (geth's eth_call rule).
    const priced = await n.ex.call(
      {
        from: addr(owner),
        to: lab,
        data: labIf().encodeFunctionData('blockInfo') as Hex,
        maxFeePerGas: 100n * GWEI,
      },
      n.ex.latestHeight(),
      undefined,
      { gasCap: 0n, timeoutMs: 0 },
    );
    assert.equal(labIf().decodeFunctionResult('blockInfo', priced.returnData)[3], head.baseFeePerGas);
    const prev = head.number - 1n;
    const h = await call(lab, labIf().encodeFunctionData('hashOf', [prev]) as Hex);
    assert.equal(h.returnData, (await n.ex.getBlockByNumber(prev))!.hash);
  });

  it('pays every fee to the proposer and keeps the total supply', async () => {
    const supply = n.ex.totalSupply();
    assert.equal(supply, 1005n * ETH);
    const prop = await n.ex.getBalance(hexOf(PROPOSER), n.ex.latestHeight());
    let fees = 0n;
    for (let b = 1n; b <= n.ex.latestHeight(); b++) {
      for (const r of await n.ex.getBlockReceipts(b)) fees += r.gasUsed * r.effectiveGasPrice;
    }
    assert.equal(prop, fees);
    let sum = prop;
    for (const a of [addr(owner), addr(other), token, lab])
      sum += await n.ex.getBalance(a, n.ex.latestHeight());
    assert.equal(sum, supply);
  });

  it('burns value self-destructed by a contract created in the same transaction, accounted in the supply', async () => {
    const burnCode = compile({ 'Lab.sol': LAB_SOL }).BurnOnCreate.bytecode;
    const before = n.ex.totalSupply();
    const { receipt } = await send(burnCode, null, { value: 3n * ETH });
    assert.equal(receipt?.status, 1);
    assert.equal(n.ex.totalSupply(), before - 3n * ETH);
    assert.equal(await n.ex.getCode(receipt!.contractAddress!, n.ex.latestHeight()), '0x');
  });
});

describe('EIP-7702 set-code transactions', () => {
  it('delegates an EOA to contract code; calls to the EOA run that code on its storage', async () => {
    const payer = key(20);
    const eoa = key(21);
    const n = await startNode([
      { address: addr(payer), balance: 100n * ETH },
      { address: addr(eoa), balance: ETH },
    ]);
    const c = compile({ 'Lab.sol': LAB_SOL });
    await produceBlock(n, [signTx(payer, { nonce: 0n, to: null, data: c.Lab.bytecode, gas: 3_000_000n })]);
    const lab = (await n.ex.getBlockReceipts(1n))[0].contractAddress!;
    const auth = eoaCode7702SignAuthorization({ chainId: '0x7a69', address: lab, nonce: '0x0' }, eoa);
    const labIf = new Interface(c.Lab.abi as never);
    const raw = signTx(payer, {
      type: 4,
      nonce: 1n,
      to: addr(eoa),
      data: labIf.encodeFunctionData('bump') as Hex,
      gas: 200_000n,
      authorizationList: [auth],
    });
    assert.equal((await n.ex.checkTx(raw, 'new')).code, 0);
    const res = await produceBlock(n);
    assert.equal(res.txResults[0].code, 0, res.txResults[0].log);
    assert.equal(await n.ex.getCode(addr(eoa), 2n), `0xef0100${lab.slice(2)}`);
    const counter = await n.ex.call(
      { to: addr(eoa), data: labIf.encodeFunctionData('counter') as Hex },
      2n,
      undefined,
      {
        gasCap: 0n,
        timeoutMs: 0,
      },
    );
    assert.equal(BigInt(counter.returnData), 1n, 'the delegated code ran on the EOA storage');
    assert.equal(await n.ex.getNonce(addr(eoa), 2n), 1n, 'the authorization bumped the authority nonce');
    // The delegated EOA can still send transactions (EIP-3607 exempts delegations).
    assert.equal((await n.ex.checkTx(signTx(eoa, { nonce: 1n, to: addr(payer), value: 1n }), 'new')).code, 0);
  });
});

describe('state root', () => {
  it('equals the Ethereum state root of the same accounts, code and storage (MerkleStateManager)', async () => {
    const code = '0x6001600055' as Hex;
    const accounts = [
      { address: addr(key(10)), balance: 123n * ETH },
      {
        address: addr(key(11)),
        balance: 1n,
        code,
        storage: { '0x01': '0x2a', '0x0100': `0x${'ff'.repeat(32)}` },
      },
      { address: '0x0000000000000000000000000000000000000000' as Hex, balance: 7n },
    ];
    const n = await startNode(accounts);
    const sm = new MerkleStateManager({ common: chainCommon(CHAIN_ID) });
    for (const a of accounts) {
      const address = new Address(Buffer.from(a.address.slice(2), 'hex'));
      await sm.putAccount(address, new Account(0n, a.balance));
      if (a.code) await sm.putCode(address, Buffer.from(a.code.slice(2), 'hex'));
      for (const [k, v] of Object.entries(a.storage ?? {})) {
        await sm.putStorage(
          address,
          Buffer.from(k.slice(2).padStart(64, '0'), 'hex'),
          Buffer.from(v.slice(2), 'hex'),
        );
      }
    }
    // Every genesis also holds the BTC token precompile's account: its marker code and, in slot 0,
    // the supply (the sum of the balances).
    const btc = new Address(BTC_TOKEN_ADDRESS);
    await sm.putAccount(btc, new Account(0n, 0n));
    await sm.putCode(btc, BTC_TOKEN_CODE);
    const supply = accounts.reduce((sum, a) => sum + a.balance, 0n);
    await sm.putStorage(btc, new Uint8Array(32), Buffer.from(supply.toString(16).padStart(64, '0'), 'hex'));
    // And the bridge-out precompile's, with its marker code (no app_state.bridge: no storage).
    const bridge = new Address(BRIDGE_OUT_ADDRESS);
    await sm.putAccount(bridge, new Account(0n, 0n));
    await sm.putCode(bridge, BRIDGE_OUT_CODE);
    const genesis = await n.ex.getBlockByNumber(0n);
    assert.equal(genesis!.stateRoot, hexOf(await sm.getStateRoot()));
    void solidityPackedKeccak256;
  });
});
