// contracts/BTCBridgeSource.sol, the source-chain side of the bridge, compiled with solc-js and run
// on the executor's EVM (any EVM chain runs it the same): lock() takes the wrapped-BTC token and
// emits AssetsLocked with sequence numbers 1, 2, 3 (two deposits in one block), refuses a zero
// amount, a zero recipient or a missing allowance; release() pays an outbound entry once, only
// for the relayer.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { keccak256 } from '@noded/crypto';
import type { Hex } from '@noded/types';
import { AbiCoder, getAddress, Interface } from 'ethers';
import { contractSource } from '../btc-token.js';
import { TOKEN_SOURCE } from '../e2e/contracts.js';
import { compileSolidity } from '../solc.js';
import { addr, ETH, key, produceBlock, signTx, startNode, type TestNode } from './helpers.js';

const c = compileSolidity(
  { 'BTCBridgeSource.sol': contractSource('BTCBridgeSource.sol'), 'TestToken.sol': TOKEN_SOURCE },
  'cancun',
);
const bridge = new Interface(c.BTCBridgeSource.abi as never[]);
const token = new Interface(c.TestToken.abi as never[]);
const opts = { gasCap: 50_000_000n, timeoutMs: 5000 };
const user = key(1);
const relayer = key(2);
const alice = addr(key(3));
const bob = addr(key(4));

const hash = (raw: Uint8Array) => `0x${Buffer.from(keccak256(raw)).toString('hex')}` as Hex;

describe('contracts/BTCBridgeSource.sol', () => {
  it('locks with sequence numbers 1, 2, 3 and releases each outbound entry once', async () => {
    const n: TestNode = await startNode([
      { address: addr(user), balance: 10n * ETH },
      { address: addr(relayer), balance: 10n * ETH },
    ]);
    let nonce = 0n;
    const tx = (to: Hex | null, data: string, k = user) =>
      signTx(k, { nonce: k === user ? nonce++ : 0n, to, data: data as Hex, gas: 3_000_000n });
    const deployToken = tx(
      null,
      c.TestToken.bytecode +
        AbiCoder.defaultAbiCoder()
          .encode(['string', 'string', 'uint256'], ['Wrapped BTC', 'WBTC', 1000n])
          .slice(2),
    );
    await produceBlock(n, [deployToken]);
    const wbtc = (await n.ex.getReceipt(hash(deployToken)))!.contractAddress!;
    const deployBridge = tx(
      null,
      c.BTCBridgeSource.bytecode +
        AbiCoder.defaultAbiCoder()
          .encode(['address', 'address', 'uint256'], [wbtc, addr(relayer), 40n])
          .slice(2),
    );
    await produceBlock(n, [deployBridge]);
    const src = (await n.ex.getReceipt(hash(deployBridge)))!.contractAddress!;
    await produceBlock(n, [tx(wbtc, token.encodeFunctionData('approve', [src, 80n]))]);

    // Two deposits in one block, then a third.
    const l1 = tx(src, bridge.encodeFunctionData('lock', [30n, alice]));
    const l2 = tx(src, bridge.encodeFunctionData('lock', [20n, bob]));
    await produceBlock(n, [l1, l2]);
    const l3 = tx(src, bridge.encodeFunctionData('lock', [5n, alice]));
    await produceBlock(n, [l3]);
    const locked = [];
    for (const raw of [l1, l2, l3]) {
      const r = (await n.ex.getReceipt(hash(raw)))!;
      assert.equal(r.status, 1);
      const ev = r.logs.map((l) => bridge.parseLog(l)).find((l) => l?.name === 'AssetsLocked')!;
      locked.push([ev.args.sequenceNumber, ev.args.recipient, ev.args.token, ev.args.amount]);
    }
    assert.deepEqual(locked, [
      [1n, getAddress(alice), getAddress(wbtc), 30n],
      [2n, getAddress(bob), getAddress(wbtc), 20n],
      [3n, getAddress(alice), getAddress(wbtc), 5n],
    ]);
    // The recipient and token are indexed: a source-chain watcher filters by topic.
    const byAlice = await n.ex.getLogs({
      fromBlock: 0n,
      toBlock: BigInt(n.height),
      addresses: [src.toLowerCase() as Hex],
      topics: [
        bridge.getEvent('AssetsLocked')!.topicHash as Hex,
        null,
        `0x${alice.slice(2).toLowerCase().padStart(64, '0')}` as Hex,
      ],
    });
    assert.equal(byAlice.length, 2);
    const call = async (to: Hex, data: string, from?: Hex) =>
      n.ex.call({ to, data: data as Hex, from }, BigInt(n.height), undefined, opts);
    const bal = async (who: Hex) =>
      BigInt((await call(wbtc, token.encodeFunctionData('balanceOf', [who]))).returnData);
    assert.equal(await bal(src), 55n);
    assert.equal(BigInt((await call(src, bridge.encodeFunctionData('lastSequence'))).returnData), 3n);

    const reason = (r: { returnData: string }) =>
      new Interface(['error Error(string)']).decodeErrorResult('Error', r.returnData)[0];
    assert.equal(
      reason(await call(src, bridge.encodeFunctionData('lock', [0n, alice]), addr(user))),
      'bridge: amount is zero',
    );
    assert.equal(
      reason(
        await call(
          src,
          bridge.encodeFunctionData('lock', [1n, '0x0000000000000000000000000000000000000000']),
          addr(user),
        ),
      ),
      'bridge: recipient is the zero address',
    );
    assert.equal(
      reason(await call(src, bridge.encodeFunctionData('lock', [41n, alice]), addr(user))),
      'bridge: amount is above maxLock',
    );
    assert.equal(BigInt((await call(src, bridge.encodeFunctionData('maxLock'))).returnData), 40n);
    assert.equal(
      reason(await call(src, bridge.encodeFunctionData('lock', [40n, alice]), addr(user))),
      'insufficient allowance',
    );

    // Release of outbound entry 7 by the relayer, once.
    const rel = signTx(relayer, {
      nonce: 0n,
      to: src,
      data: bridge.encodeFunctionData('release', [7n, bob, 12n]) as Hex,
      gas: 200_000n,
    });
    await produceBlock(n, [rel]);
    assert.equal((await n.ex.getReceipt(hash(rel)))!.status, 1);
    assert.equal(await bal(bob), 12n);
    assert.equal(
      reason(await call(src, bridge.encodeFunctionData('release', [7n, bob, 12n]), addr(relayer))),
      'bridge: outbound entry already released',
    );
    assert.equal(
      reason(await call(src, bridge.encodeFunctionData('release', [8n, bob, 1n]), addr(user))),
      'bridge: only the relayer releases',
    );
  });
});
