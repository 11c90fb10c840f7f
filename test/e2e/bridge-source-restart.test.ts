// Bridge in across a source chain that stops and comes back with its state: the source chain is
// anvil with a state file (`--state`: loaded at start, written at exit), a single noded validator
// with [bridge] enable = true. A deposit is minted; a second is locked and the source stops before
// it is `confirmations` deep; while the source is down noded keeps making blocks and mints nothing;
// anvil restarts from its state (same blocks, same contracts, the next sequence number), a third
// deposit is locked, and every deposit is minted exactly once, in order (the block results' bridge_mint
// events, the recipients' balances, total_bridged_in).
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { Wallet } from 'ethers';
import { initLocalHome, jsonRpcResult, type RunningNode, startNode, until } from './harness.js';
import { BTC, bridgeMints, initBridgeHome, type SourceChain, startSourceChain } from './source-chain.js';

const rpc = (node: RunningNode, method: string, params: unknown[] = []) =>
  jsonRpcResult(node.ethUrl, method, params);

const CONFIRMATIONS = 2;

const balance = async (node: RunningNode, a: string) =>
  BigInt((await rpc(node, 'eth_getBalance', [a, 'latest'])) as string);
const height = async (node: RunningNode) => BigInt((await rpc(node, 'eth_blockNumber')) as string);
const params = async (node: RunningNode) => (await rpc(node, 'bridge_params')) as Record<string, string>;

describe('bridge in: an anvil source chain stopped and restarted from its state', {
  timeout: 180_000,
}, () => {
  let src: SourceChain;
  let home: string;
  let ports: Awaited<ReturnType<typeof initLocalHome>>['ports'];
  let node: RunningNode;

  before(async () => {
    src = await startSourceChain(undefined, { engine: 'anvil' });
    ({ home, ports } = await initBridgeHome(src, CONFIRMATIONS));
    node = await startNode(home, ports);
  });

  after(async () => {
    await node?.stop();
    await src?.stop().catch(() => {});
    if (home) rmSync(home, { recursive: true, force: true });
  });

  it('mints nothing while the source is down, and every deposit exactly once after it comes back', async () => {
    const [a, b, c] = [0, 1, 2].map(() => Wallet.createRandom().address.toLowerCase()) as [
      string,
      string,
      string,
    ];
    await src.lock(3n * BTC, a);
    await src.mine(CONFIRMATIONS);
    await until('sequence 1', async () =>
      (await params(node)).inbound_last_sequence === '1' ? true : undefined,
    );
    assert.equal(await balance(node, a), 3n * BTC);

    // Sequence 2 is locked, not yet deep enough, when the source chain stops.
    await src.lock(5n * BTC, b);
    const headBefore = await src.head();
    const hashBefore = (
      (await src.provider.send('eth_getBlockByNumber', [`0x${headBefore.toString(16)}`, false])) as {
        hash: string;
      }
    ).hash;
    await src.halt();
    const down = await params(node);
    const h = await height(node);
    await until('five blocks while the source is down', async () =>
      (await height(node)) >= h + 5n ? true : undefined,
    );
    assert.match(node.output(), /bridge: reading the source chain failed; retrying at the next poll/);
    const still = await params(node);
    assert.equal(still.inbound_last_sequence, '1', 'nothing minted while the source is down');
    assert.equal(still.total_bridged_in, down.total_bridged_in);
    assert.equal(await balance(node, b), 0n);

    // anvil comes back from its state file: the same blocks, the deposit of sequence 2 in them.
    await src.restart();
    assert.equal(await src.head(), headBefore, 'the restarted source chain has the blocks it had');
    const again = (await src.provider.send('eth_getBlockByNumber', [
      `0x${headBefore.toString(16)}`,
      false,
    ])) as {
      hash: string;
    };
    assert.equal(again.hash, hashBefore, 'the same block at the same height');
    await src.lock(7n * BTC, c);
    await src.mine(CONFIRMATIONS);
    await until('sequence 3', async () =>
      (await params(node)).inbound_last_sequence === '3' ? true : undefined,
    );
    assert.match(node.output(), /bridge: the source chain answers again/);

    // More blocks: nothing is minted twice.
    const h2 = await height(node);
    await until('five more blocks', async () => ((await height(node)) >= h2 + 5n ? true : undefined));
    assert.equal(await balance(node, a), 3n * BTC);
    assert.equal(await balance(node, b), 5n * BTC);
    assert.equal(await balance(node, c), 7n * BTC);
    const p = await params(node);
    assert.equal(p.inbound_last_sequence, '3');
    assert.equal(p.total_bridged_in, (15n * BTC).toString());
    const mints = await bridgeMints(node.cometUrl, 1, Number(await height(node)));
    assert.deepEqual(
      mints.map((m) => [m.sequence, m.recipient, m.amount]),
      [
        [1n, a, 3n * BTC],
        [2n, b, 5n * BTC],
        [3n, c, 7n * BTC],
      ],
      'each sequence number minted once, in order',
    );
  });
});
