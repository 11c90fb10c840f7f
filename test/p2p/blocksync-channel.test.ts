// Block sync's own protocol (/noded/blocksync/1) over real hosts on 127.0.0.1: a fresh node syncs a
// 60-block chain from three serving peers at once; one of them corrupts every block it serves from
// height 20 on. The syncing node disconnects it, asks its heights of the other two, and ends with the
// validator's block at every height.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { validatorKeyJson } from '@noded/config';
import {
  type BlockSyncMessage,
  ConsensusRuntime,
  type ConsensusRuntimeOptions,
  decodeBlockSyncMessage,
  encodeBlockSyncMessage,
  TestApp,
} from '@noded/consensus';
import { BLOCKSYNC_PROTOCOL, BlockSyncChannel, type P2PHost } from '@noded/p2p';
import { MemoryKV } from '@noded/storage';
import { EventBus, type Logger, silentLogger } from '@noded/types';
import { CHAIN_ID, GENESIS_TIME, PARAMS, TIMEOUTS, testKey, validatorsOf } from '../consensus/helpers.js';
import { startTestHost, stopTestHosts, until } from './helpers.js';

const TOP = 60;
const CORRUPT_FROM = 20;
const dirs: string[] = [];
const runtimes: ConsensusRuntime[] = [];
after(async () => {
  for (const r of runtimes.splice(0)) await r.stop();
  await stopTestHosts();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

const key = testKey(0);

function opts(dir: string, app: TestApp, over: Partial<ConsensusRuntimeOptions>): ConsensusRuntimeOptions {
  return {
    chainId: CHAIN_ID,
    genesis: {
      time: GENESIS_TIME,
      initialHeight: 1,
      validators: validatorsOf([key]),
      consensusParams: PARAMS,
      appState: { test: true },
    },
    timeouts: { ...TIMEOUTS, commit: 1 },
    createEmptyBlocks: true,
    doubleSignCheckHeight: 0,
    privValidator: null,
    walDir: join(dir, 'cs.wal'),
    blockStore: new MemoryKV(),
    stateStore: new MemoryKV(),
    app,
    bus: new EventBus(),
    logger: silentLogger,
    ...over,
  };
}

async function copyKV(kv: MemoryKV): Promise<MemoryKV> {
  const out = new MemoryKV();
  const ops = [];
  for await (const [k, v] of kv.iterate({})) ops.push({ type: 'put' as const, key: k, value: v });
  await out.write(ops);
  return out;
}

/** Warnings logged by the syncing node's host (its disconnections). */
function recordingLogger(lines: Array<{ msg: string; obj: Record<string, unknown> }>): Logger {
  const rec =
    (level: string) =>
    (obj: unknown, msg?: string): void => {
      if (level === 'warn') lines.push({ msg: msg ?? '', obj: (obj ?? {}) as Record<string, unknown> });
    };
  const l: Logger = {
    trace: rec('trace'),
    debug: rec('debug'),
    info: rec('info'),
    warn: rec('warn'),
    error: rec('error'),
    child: () => l,
  } as Logger;
  return l;
}

/** A serving peer's channel that counts the blocks it sends and, with `corrupt`, breaks their commit signature. */
class ServingChannel extends BlockSyncChannel {
  served = 0;
  /** Heights asked by each block request received (a range asks several). */
  readonly requests: number[] = [];
  constructor(
    private readonly h: P2PHost,
    maxBlockBytes: number,
    private readonly corrupt: boolean,
  ) {
    super(h, maxBlockBytes);
    this.subscribe(
      (_peer, m) => {
        if (m.kind === 'blockRequest') this.requests.push(m.count ?? 1);
      },
      () => {},
    );
  }
  override send(peer: string, m: BlockSyncMessage): void {
    if (m.kind === 'block') this.served++;
    if (m.kind !== 'block' || !this.corrupt || m.block.header.height < CORRUPT_FROM) {
      super.send(peer, m);
      return;
    }
    // Round-trip through the codec so the stored commit object is not touched.
    const copy = decodeBlockSyncMessage(encodeBlockSyncMessage(m));
    if (copy.kind !== 'block') throw new Error('unreachable');
    const sig = copy.commit.signatures[0]!.signature;
    sig[0] = sig[0]! ^ 0xff;
    this.h.send(peer, BLOCKSYNC_PROTOCOL, encodeBlockSyncMessage(copy));
  }
}

describe('block sync protocol, three serving peers', () => {
  it('spreads requests, disconnects the peer serving corrupt blocks, and completes from the others', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'noded-bsp-'));
    dirs.push(dir);
    const keyFile = join(dir, 'key.json');
    writeFileSync(keyFile, validatorKeyJson({ seed: key.seed, publicKey: key.publicKey }));
    // The chain: TOP blocks from the only validator, with a few transactions.
    const vApp = new TestApp();
    const blockKV = new MemoryKV();
    const stateKV = new MemoryKV();
    const v = await ConsensusRuntime.create(
      opts(join(dir, 'v'), vApp, {
        privValidator: { keyFile, stateFile: join(dir, 'state.json') },
        blockStore: blockKV,
        stateStore: stateKV,
      }),
    );
    for (let i = 0; i < 20; i++) vApp.addTx(`k${i}=v${i}`);
    await v.start();
    await v.waitForHeight(TOP, 30_000);
    await v.stop();
    const top = v.blockStoreHeight();

    // Three serving peers on copies of that chain (non-validators: the chain stays at `top`).
    const servers: Array<{ id: string; port: number; channel: ServingChannel }> = [];
    for (let i = 0; i < 3; i++) {
      let channel!: ServingChannel;
      const t = await startTestHost((h) => {
        channel = new ServingChannel(h, Number(PARAMS.block.maxBytes), i === 2);
      });
      const rt = await ConsensusRuntime.create(
        opts(join(dir, `s${i}`), new TestApp(), {
          blockStore: await copyKV(blockKV),
          stateStore: await copyKV(stateKV),
          blockSync: channel,
        }),
      );
      await rt.start();
      runtimes.push(rt);
      servers.push({ id: t.id, port: t.port, channel });
    }
    const bad = servers[2]!;

    // The fresh node, dialling all three; a small window so that every peer gets requests.
    const warnings: Array<{ msg: string; obj: Record<string, unknown> }> = [];
    let syncChannel!: BlockSyncChannel;
    const s = await startTestHost(
      (h) => {
        syncChannel = new BlockSyncChannel(h, Number(PARAMS.block.maxBytes));
      },
      {
        peers: servers.map((x) => ({ nodeId: x.id, host: '127.0.0.1', port: x.port })),
        logger: recordingLogger(warnings),
        banMs: 60_000,
      },
    );
    await until('connected to the three', () => s.host.peerCount === 3);
    const sApp = new TestApp();
    const syncer = await ConsensusRuntime.create(
      opts(join(dir, 'sync'), sApp, { blockSync: syncChannel, blockSyncWindow: 4 }),
    );
    runtimes.push(syncer);
    await syncer.start();
    await syncer.waitForHeight(top, 30_000);

    // The corrupt peer was disconnected for its block, and nothing of it was applied.
    const drop = warnings.find((w) => w.msg === 'disconnecting peer' && w.obj.peer === bad.id);
    assert.ok(drop, `the corrupt peer was disconnected (warnings: ${JSON.stringify(warnings)})`);
    assert.match(
      String(drop.obj.reason),
      /^invalid block sync message: commit \d+: commit for height \d+: signature 0 is invalid$/,
    );
    assert.ok(!s.host.peerIds().includes(bad.id), 'not connected any more');
    assert.equal(s.host.peerCount, 2);
    for (let h = 1; h <= top; h++) {
      const a = await v.loadBlockMeta(h);
      const b = await syncer.loadBlockMeta(h);
      assert.deepEqual(b?.blockId.hash, a?.blockId.hash, `block ${h}`);
    }
    assert.equal(sApp.height, top);
    assert.deepEqual(sApp.appHash, vApp.appHash, 'same application state');
    // Requests went to all three (the bad one until it was dropped), not one peer at a time.
    const served = servers.map((x) => x.channel.served);
    assert.ok(served[0]! > 0 && served[1]! > 0 && served[2]! > 0, `blocks served per peer: ${served}`);
    assert.ok(served[2]! < top, `the corrupt peer served ${served[2]} of ${top}`);
    // The peers answer ranges (their statuses say so): requests ask several heights, never more than the window (4).
    for (const x of servers.slice(0, 2)) {
      const rs = x.channel.requests;
      assert.ok(Math.max(...rs) > 1 && Math.max(...rs) <= 4, `request sizes ${rs}`);
      assert.ok(rs.length < x.channel.served, `${rs.length} requests for ${x.channel.served} blocks`);
    }
    assert.equal(syncer.syncInfo().catchingUp, false, 'caught up');
  });
});
