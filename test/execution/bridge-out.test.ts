// The bridge-out precompile (0x7b7c…0012) through the real executor in process: a burn inside a
// reverted frame leaves no entry and no burn (the block commits, so the supply check agreed), a
// contract bridging out is the entry's sender, the outflow window resets with block time, and a
// genesis without app_state.bridge (or with a bad one) refuses precisely.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { keccak256 } from '@noded/crypto';
import { Executor } from '@noded/execution';
import { MemoryKV } from '@noded/storage';
import { EventBus, type Hex } from '@noded/types';
import { Interface } from 'ethers';
import { BTC, contractSource } from '../btc-token.js';
import { compileSolidity } from '../solc.js';
import {
  addr,
  ETH,
  executorOptions,
  GENESIS_TIME,
  genesisState,
  key,
  produceBlock,
  signTx,
  startNode,
  TEST_CONSENSUS_PARAMS,
  type TestNode,
} from './helpers.js';

const BRIDGE = '0x7b7c000000000000000000000000000000000012' as Hex;
const PROBE = `// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;
import {BRIDGE_OUT} from "./IBridgeOut.sol";
address constant BTC = 0x7b7C000000000000000000000000000000000000;
contract BridgeProbe {
    receive() external payable {}
    function outThenRevert(uint256 amount) external {
        BRIDGE_OUT.bridgeOut(BTC, amount, 1, hex"aa");
        revert("probe: undone");
    }
    function tryOut(uint256 amount) external returns (bool ok) {
        try this.outThenRevert(amount) { ok = true; } catch { ok = false; }
    }
    function out(uint256 amount) external returns (uint256) {
        return BRIDGE_OUT.bridgeOut(BTC, amount, 1, hex"bb");
    }
}
`;
const c = compileSolidity(
  { 'IBridgeOut.sol': contractSource('IBridgeOut.sol'), 'BridgeProbe.sol': PROBE },
  'cancun',
);
const bridge = new Interface(c.IBridgeOut.abi as never[]);
const probe = new Interface(c.BridgeProbe.abi as never[]);
const opts = { gasCap: 50_000_000n, timeoutMs: 5000 };
const A = key(1);

async function nodeWith(appBridge: unknown): Promise<TestNode> {
  const bus = new EventBus();
  const ex = await Executor.open(executorOptions(new MemoryKV(), bus));
  await ex.initChain({
    chainId: 'chain-local',
    time: GENESIS_TIME,
    initialHeight: 1,
    validators: [],
    consensusParams: TEST_CONSENSUS_PARAMS,
    appState: { ...genesisState([{ address: addr(A), balance: 100n * ETH }]), bridge: appBridge },
  });
  return { ex, kv: new MemoryKV(), bus, events: [], height: 0, time: GENESIS_TIME };
}

async function send(n: TestNode, to: Hex | null, data: string, value = 0n, gas = 3_000_000n) {
  const nonce = await n.ex.getNonce(addr(A), BigInt(n.height));
  const raw = signTx(A, { nonce, to, data: data as Hex, value, gas });
  await produceBlock(n, [raw]);
  const r = await n.ex.getReceipt(`0x${Buffer.from(keccak256(raw)).toString('hex')}`);
  assert.ok(r);
  return r;
}

async function view(n: TestNode, fn: string, args: unknown[] = []) {
  const r = await n.ex.call(
    { to: BRIDGE, data: bridge.encodeFunctionData(fn, args) as Hex },
    BigInt(n.height),
    undefined,
    opts,
  );
  assert.equal(r.reverted, undefined, `${fn} reverted: ${r.returnData}`);
  return bridge.decodeFunctionResult(fn, r.returnData);
}

describe('bridge-out precompile in the executor', () => {
  it('a reverted frame leaves no entry and no burn; a contract bridging out is the sender', async () => {
    const n = await nodeWith({
      admin: addr(A),
      min_amount: '1',
      window_seconds: '100',
      max_outflow_per_window: (10n * ETH).toString(),
      chains: [1],
    });
    const deployed = await send(n, null, c.BridgeProbe.bytecode);
    const p = deployed.contractAddress!;
    await send(n, p, '0x', 5n * ETH, 100_000n);
    const supply = n.ex.totalSupply();
    const tried = await send(n, p, probe.encodeFunctionData('tryOut', [ETH]));
    assert.equal(tried.status, 1);
    assert.equal(tried.logs.length, 0, 'the reverted BridgeOut log is gone');
    assert.equal((await view(n, 'outboundCount'))[0], 0n);
    assert.equal(n.ex.totalSupply(), supply, 'no burn was counted');
    assert.equal(await n.ex.getBalance(p, BigInt(n.height)), 5n * ETH);

    const out = await send(n, p, probe.encodeFunctionData('out', [2n * ETH]));
    assert.equal(out.status, 1);
    assert.equal(n.ex.totalSupply(), supply - 2n * ETH);
    assert.equal(await n.ex.getBalance(p, BigInt(n.height)), 3n * ETH);
    const [sender, amount, chain, recipient] = await view(n, 'outbound', [1n]);
    assert.deepEqual(
      [sender.toLowerCase(), amount, chain, recipient],
      [p.toLowerCase(), 2n * ETH, 1n, '0xbb'],
    );
    assert.deepEqual([...(await view(n, 'outboundByRecipient', ['0xbb']))[0]], [1n]);
    // The token's view of the supply follows the burn too.
    const ts = await n.ex.call({ to: BTC as Hex, data: '0x18160ddd' }, BigInt(n.height), undefined, opts);
    assert.equal(BigInt(ts.returnData), supply - 2n * ETH);
  });

  it('the outflow window resets with block time', async () => {
    const n = await nodeWith({
      admin: addr(A),
      min_amount: '1',
      window_seconds: '3',
      max_outflow_per_window: '100',
      chains: [1],
    });
    const out = (amount: bigint) =>
      send(n, BRIDGE, bridge.encodeFunctionData('bridgeOut', [BTC, amount, 1, '0x01']), 0n, 300_000n);
    // Blocks are one second apart from genesis time 1,700,000,000: block 1 (t = 1,700,000,001, a
    // multiple of 3) opens a window that block 2 shares.
    const first = await out(60n);
    assert.equal(first.status, 1);
    const over = await out(41n);
    assert.equal(over.status, 0, '60 + 41 is above the limit of 100 in one window');
    const [, , , , windowStart, used] = await view(n, 'params');
    assert.equal(windowStart, 1_700_000_001n);
    assert.equal(used, 60n);
    // Blocks 3-5 close the window; block 6 (t = 1,700,000,006) is in the next one, where 100 fits.
    for (let i = 0; i < 3; i++) await produceBlock(n, []);
    const full = await out(100n);
    assert.equal(full.status, 1);
    const [, , , , start2, used2, total] = await view(n, 'params');
    assert.equal(start2, 1_700_000_004n);
    assert.equal(used2, 100n);
    assert.equal(total, 160n);
    assert.equal((await view(n, 'outboundCount'))[0], 2n);
  });

  it('without app_state.bridge bridgeOut refuses; a bad app_state.bridge stops InitChain', async () => {
    const n = await startNode([{ address: addr(A), balance: ETH }]);
    const r = await n.ex.call(
      {
        to: BRIDGE,
        from: addr(A),
        data: bridge.encodeFunctionData('bridgeOut', [BTC, 1n, 1, '0x01']) as Hex,
      },
      0n,
      undefined,
      opts,
    );
    assert.equal(r.reverted, true);
    assert.equal(
      new Interface(['error Error(string)']).decodeErrorResult('Error', r.returnData)[0],
      'bridge: bridge-out is not configured (genesis has no app_state.bridge)',
    );
    await assert.rejects(
      nodeWith({
        admin: addr(A),
        min_amount: '1',
        window_seconds: '0',
        max_outflow_per_window: '1',
        chains: [1],
      }),
      /genesis\.json:app_state\.bridge\.window_seconds: must be >= 1, got "0"/,
    );
  });
});
