// Bridge in end to end: a real source chain (Hardhat on 127.0.0.1 with contracts/BTCBridgeSource.sol
// and a wrapped-BTC TestToken) and a noded validator with [bridge] enable = true and vote extensions
// on from height 1. A lock on the source chain becomes native BTC of the recipient on noded once
// `confirmations` blocks bury it; several deposits of one source block; a restart of noded in the
// middle mints each deposit exactly once; a deposit above genesis max_deposit_amount is skipped,
// logged and counted while the next is minted; a source chain that stops is logged while blocks go on.
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { Contract, JsonRpcProvider, Wallet } from 'ethers';
import { compileBtcContracts } from '../btc-token.js';
import { initLocalHome, jsonRpcResult, type RunningNode, startNode, until } from './harness.js';
import { BTC, initBridgeHome, type SourceChain, startSourceChain } from './source-chain.js';

const rpc = (node: RunningNode, method: string, params: unknown[] = []) =>
  jsonRpcResult(node.ethUrl, method, params);

const BTC_TOKEN = '0x7b7c000000000000000000000000000000000000';
const CONFIRMATIONS = 2;
/** genesis app_state.bridge.max_deposit_amount: a larger deposit is processed without a mint. */
const CAP = 100n * BTC;

const balance = async (node: RunningNode, a: string) =>
  BigInt((await rpc(node, 'eth_getBalance', [a, 'latest'])) as string);
const height = async (node: RunningNode) => BigInt((await rpc(node, 'eth_blockNumber')) as string);

/** A recipient that has never held anything (`_i` names the test using it). */
const fresh = (_i: number) => Wallet.createRandom().address.toLowerCase();

describe('bridge in: Hardhat source chain -> noded', { timeout: 300_000 }, () => {
  let src: SourceChain;
  let home: string;
  let ports: Awaited<ReturnType<typeof initLocalHome>>['ports'];
  let node: RunningNode;
  let minted = 0n;

  before(async () => {
    src = await startSourceChain();
    ({ home, ports } = await initBridgeHome(src, CONFIRMATIONS, { max_deposit_amount: CAP.toString() }));
    node = await startNode(home, ports);
  });

  after(async () => {
    await node?.stop();
    await src?.stop().catch(() => {});
    if (home) rmSync(home, { recursive: true, force: true });
  });

  const supply = async () => {
    const p = new JsonRpcProvider(node.ethUrl, undefined, { staticNetwork: true, cacheTimeout: -1 });
    try {
      const btc = new Contract(BTC_TOKEN, compileBtcContracts().IBTC!.abi as never, p);
      return (await btc.totalSupply()) as bigint;
    } finally {
      p.destroy();
    }
  };

  it('mints the locked amount to the recipient once the deposit is `confirmations` deep, and counts it in the supply', async () => {
    const r = fresh(1);
    const supply0 = await supply();
    await src.lock((3n * BTC) / 2n, r);
    // Not deep enough yet: a few noded blocks go by without a mint.
    const h0 = await height(node);
    await until('three noded blocks', async () => ((await height(node)) >= h0 + 3n ? true : undefined));
    assert.equal(await balance(node, r), 0n, 'not minted before the confirmations');
    await src.mine(CONFIRMATIONS);
    await until('the mint', async () => ((await balance(node, r)) > 0n ? true : undefined));
    assert.equal(await balance(node, r), (3n * BTC) / 2n);
    minted += (3n * BTC) / 2n;
    assert.equal(await supply(), supply0 + (3n * BTC) / 2n, 'totalSupply counts the bridged BTC');
    const params = (await rpc(node, 'bridge_params')) as Record<string, string>;
    assert.equal(params.inbound_last_sequence, '1');
    assert.equal(params.total_bridged_in, minted.toString());
    assert.equal(params.inbound_token, src.tokenAddress);
    const rest = (await (await fetch(`${node.apiUrl}/noded/bridge/v1/params`)).json()) as {
      params: Record<string, string>;
    };
    assert.equal(rest.params.inbound_last_sequence, '1');
    // The gauges are set after each poll of the source chain (every 200 ms here).
    const metrics = await until('the bridge gauges', async () => {
      const text = await (await fetch(`${node.metricsUrl}/metrics`)).text();
      return /_bridge_last_minted_sequence\{chain_id="chain-local"\} 1$/m.test(text) ? text : undefined;
    });
    assert.match(metrics, /_bridge_last_observed_sequence\{chain_id="chain-local"\} 1$/m);
    assert.match(metrics, /_bridge_last_attested_sequence\{chain_id="chain-local"\} 1$/m);
    assert.match(metrics, /_bridge_pending_deposits\{chain_id="chain-local"\} 0$/m);
  });

  it('mints several deposits of one source block, in sequence order', async () => {
    const [a, b] = [fresh(2), fresh(3)];
    await src.lockInOneBlock([
      { amount: 2n * BTC, recipient: a },
      { amount: 5n, recipient: b },
      { amount: 1n * BTC, recipient: a },
    ]);
    await src.mine(CONFIRMATIONS);
    await until('sequence 4', async () => {
      const p = (await rpc(node, 'bridge_params')) as Record<string, string>;
      return p.inbound_last_sequence === '4' ? true : undefined;
    });
    assert.equal(await balance(node, a), 3n * BTC);
    assert.equal(await balance(node, b), 5n);
    minted += 3n * BTC + 5n;
  });

  it('a restart of noded in the middle mints every deposit exactly once', async () => {
    const r = fresh(4);
    await src.lock(7n, r);
    await src.lock(11n, r);
    await node.stop();
    await src.mine(CONFIRMATIONS);
    node = await startNode(home, ports);
    await until('sequence 6', async () => {
      const p = (await rpc(node, 'bridge_params')) as Record<string, string>;
      return p.inbound_last_sequence === '6' ? true : undefined;
    });
    // More blocks: nothing is minted twice.
    const h = await height(node);
    await until('five more blocks', async () => ((await height(node)) >= h + 5n ? true : undefined));
    assert.equal(await balance(node, r), 18n);
    minted += 18n;
    const params = (await rpc(node, 'bridge_params')) as Record<string, string>;
    assert.equal(params.total_bridged_in, minted.toString());
  });

  it('a deposit above max_deposit_amount mints nothing, is logged and counted, and the next deposit is minted', async () => {
    const [big, small] = [fresh(5), fresh(6)];
    await src.lock(CAP + 1n, big);
    await src.lock(2n, small);
    await src.mine(CONFIRMATIONS);
    await until('sequence 8', async () => {
      const p = (await rpc(node, 'bridge_params')) as Record<string, string>;
      return p.inbound_last_sequence === '8' ? true : undefined;
    });
    assert.equal(await balance(node, big), 0n, 'the over-cap deposit is never minted');
    assert.equal(await balance(node, small), 2n, 'the deposit after it is not held up');
    minted += 2n;
    const params = (await rpc(node, 'bridge_params')) as Record<string, string | null>;
    assert.equal(params.total_bridged_in, minted.toString());
    assert.equal(params.max_deposit_amount, CAP.toString());
    assert.equal(params.over_cap_deposits, '1');
    assert.equal(params.over_cap_amount, (CAP + 1n).toString());
    assert.match(node.output(), /bridge: deposit above max_deposit_amount; skipped, nothing minted/);
    await until('the over-cap gauge', async () => {
      const text = await (await fetch(`${node.metricsUrl}/metrics`)).text();
      return /_bridge_over_cap_deposits\{chain_id="chain-local"\} 1$/m.test(text) ? true : undefined;
    });
  });

  it('a source chain that stops is logged; noded keeps making blocks and mints nothing new', async () => {
    const before = (await rpc(node, 'bridge_params')) as Record<string, string>;
    await src.stop();
    const h = await height(node);
    await until('blocks while the source is down', async () =>
      (await height(node)) >= h + 5n ? true : undefined,
    );
    assert.match(node.output(), /bridge: reading the source chain failed; retrying at the next poll/);
    const metrics = await (await fetch(`${node.metricsUrl}/metrics`)).text();
    const errors = Number(/_bridge_errors_total\{chain_id="chain-local"\} (\d+)/.exec(metrics)?.[1] ?? 0);
    assert.ok(errors > 0, 'bridge errors counted');
    assert.deepEqual((await rpc(node, 'bridge_params')) as Record<string, string>, {
      ...before,
      window_start: ((await rpc(node, 'bridge_params')) as Record<string, string>).window_start,
    });
  });
});
