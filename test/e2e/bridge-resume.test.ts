// The bridge watcher's start through `noded start`: app.toml [bridge] start_block is the first source
// block read (not 0), and a restarted node resumes after the last block whose deposits the chain has
// all processed instead of reading the source chain again. Every eth_getLogs range noded asks of the
// Hardhat source chain is recorded by a proxy in front of it.
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { initLocalHome, jsonRpcResult, type RunningNode, startNode, until } from './harness.js';
import {
  BTC,
  bridgeAppSection,
  countingProxy,
  type SourceChain,
  startSourceChain,
  writeBridgeGenesis,
} from './source-chain.js';

const rpc = (node: RunningNode, method: string, params: unknown[] = []) =>
  jsonRpcResult(node.ethUrl, method, params);

const lastSequence = async (node: RunningNode) =>
  ((await rpc(node, 'bridge_params')) as Record<string, string>).inbound_last_sequence;

describe('bridge watcher start: [bridge] start_block and the saved resume point', {
  timeout: 240_000,
}, () => {
  let src: SourceChain;
  let proxy: Awaited<ReturnType<typeof countingProxy>>;
  let home: string;
  let ports: Awaited<ReturnType<typeof initLocalHome>>['ports'];
  let node: RunningNode | undefined;
  let startBlock = 0n;

  before(async () => {
    src = await startSourceChain();
    proxy = await countingProxy(src.url);
    // A source chain with a history before the bridge's "deployment" that noded must not read.
    await src.mine(300);
    startBlock = await src.head();
    ({ home, ports } = await initLocalHome({
      timeoutCommit: '300ms',
      extra: (_config, app) => {
        if (!('evm' in app)) return;
        app.bridge = bridgeAppSection({ ...src, url: proxy.url }, 1, { start_block: Number(startBlock) });
      },
    }));
    writeBridgeGenesis(home, src.tokenAddress);
  });

  after(async () => {
    await node?.stop();
    proxy?.close();
    await src?.stop().catch(() => {});
    if (home) rmSync(home, { recursive: true, force: true });
  });

  it('reads from start_block, and after a restart only the source blocks it had not processed', async () => {
    node = await startNode(home, ports);
    await src.lock(1n * BTC, '0x00000000000000000000000000000000000a11ce');
    await src.mine(1);
    await until('deposit 1 minted', async () => ((await lastSequence(node!)) === '1' ? true : undefined));
    assert.ok(proxy.ranges.length > 0);
    assert.equal(proxy.ranges[0]![0], startBlock, 'the first range starts at start_block');
    assert.ok(
      proxy.ranges.every(([from]) => from >= startBlock),
      'nothing below start_block is read',
    );
    // Let a poll after the mint save the resume point past deposit 1's block.
    const readTo = await src.head();
    await until('the scan to reach the head', async () =>
      proxy.ranges.some(([, to]) => to >= readTo - 1n) ? true : undefined,
    );
    await new Promise((r) => setTimeout(r, 600));
    await node.stop();
    node = undefined;

    let scannedBefore = 0n;
    for (const [, to] of proxy.ranges) if (to > scannedBefore) scannedBefore = to;
    proxy.ranges.length = 0;
    await src.lock(2n * BTC, '0x0000000000000000000000000000000000000b0b');
    await src.mine(1);
    node = await startNode(home, ports);
    await until('deposit 2 minted after the restart', async () =>
      (await lastSequence(node!)) === '2' ? true : undefined,
    );
    assert.ok(proxy.ranges.length > 0);
    assert.ok(
      proxy.ranges[0]![0] > startBlock && proxy.ranges[0]![0] <= scannedBefore + 1n,
      `the restarted node resumes after the saved point (first range ${proxy.ranges[0]}, read to ${scannedBefore} before)`,
    );
    assert.ok(
      proxy.ranges.every(([from]) => from >= proxy.ranges[0]![0]),
      'no rescan from start_block',
    );
    assert.match(node.output(), /bridge: resuming the source-chain scan/);
  });
});
