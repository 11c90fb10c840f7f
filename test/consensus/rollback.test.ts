// The consensus side of the dev chain's evm_revert: devSnapshot/devRewind on a live runtime bring
// the block store, the state store, the WAL and the double-sign guard back to the snapshot's height
// (the application through its callback, after the intent file is written); finishRollback
// completes a revert whose process stopped after the intent; refusals without dev controls.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { validatorKeyJson } from '@noded/config';
import {
  BlockStore,
  ConsensusRuntime,
  type ConsensusRuntimeOptions,
  finishRollback,
  NodeFs,
  StateStore,
  TestApp,
} from '@noded/consensus';
import { writeRollbackIntent } from '@noded/consensus/src/runtime/rollback.js';
import { MemoryKV } from '@noded/storage';
import { EventBus, type NodeEvent, silentLogger } from '@noded/types';
import { CHAIN_ID, GENESIS_TIME, PARAMS, TIMEOUTS, testKey, validatorsOf } from './helpers.js';

const dirs: string[] = [];
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

const key = testKey(0);

function node(devControls: boolean) {
  const dir = mkdtempSync(join(tmpdir(), 'noded-rewind-'));
  dirs.push(dir);
  const keyFile = join(dir, 'priv_validator_key.json');
  writeFileSync(keyFile, validatorKeyJson({ seed: key.seed, publicKey: key.publicKey }));
  const bus = new EventBus();
  const events: NodeEvent[] = [];
  bus.subscribe((e) => events.push(e));
  const blockKV = new MemoryKV();
  const stateKV = new MemoryKV();
  const opts: ConsensusRuntimeOptions = {
    chainId: CHAIN_ID,
    genesis: {
      time: GENESIS_TIME,
      initialHeight: 1,
      validators: validatorsOf([key]),
      consensusParams: PARAMS,
      appState: { test: true },
    },
    timeouts: { ...TIMEOUTS, commit: 1000 },
    createEmptyBlocks: true,
    createEmptyBlocksIntervalMs: 1000,
    skipTimeoutCommit: true,
    devControls,
    doubleSignCheckHeight: 0,
    privValidator: { keyFile, stateFile: join(dir, 'priv_validator_state.json') },
    walDir: join(dir, 'cs.wal'),
    blockStore: blockKV,
    stateStore: stateKV,
    app: new TestApp(),
    bus,
    logger: silentLogger,
  };
  return { dir, opts, events, blockKV, stateKV, intent: join(dir, 'rollback.json') };
}

const signedHeight = (dir: string) =>
  Number(
    (JSON.parse(readFileSync(join(dir, 'priv_validator_state.json'), 'utf8')) as { height: string }).height,
  );

describe('consensus: evm_revert across the stores', { timeout: 60_000 }, () => {
  it('devRewind brings block store, state store, WAL and double-sign guard back; nothing is made until asked', async () => {
    const n = node(true);
    const rt = await ConsensusRuntime.create(n.opts);
    await rt.start();
    try {
      await rt.waitForHeight(1, 10_000);
      await rt.setIntervalMining(0);
      await rt.mineBlocks(2);
      const snapHeight = rt.chainState().lastBlockHeight;
      const snapHash = (await rt.loadBlockMeta(snapHeight))!.blockId.hash;
      const snap = await rt.devSnapshot(async () => ({ app: 'point' }));
      assert.equal(snap.target.chainState.lastBlockHeight, snapHeight);
      await rt.increaseTime(3_600_000_000_000n);
      await rt.mineBlocks(3);
      const top = rt.chainState().lastBlockHeight;
      assert.equal(top, snapHeight + 3);
      assert.ok(signedHeight(n.dir) >= top);

      const calls: Array<[unknown, number, boolean]> = [];
      await rt.devRewind(snap, {
        intentFile: n.intent,
        rollbackApp: async (app, height) => {
          calls.push([app, height, existsSync(n.intent)]);
        },
      });
      assert.deepEqual(
        calls,
        [[{ app: 'point' }, snapHeight, true]],
        'the application goes after the intent',
      );
      assert.equal(existsSync(n.intent), false, 'the intent is removed at the end');
      assert.equal(rt.chainState().lastBlockHeight, snapHeight);
      assert.equal(rt.devState().clockOffsetNs, snap.clockOffsetNs, 'the dev clock is the snapshot’s');
      assert.ok(n.events.some((e) => e.kind === 'ChainRewound' && e.height === snapHeight));
      assert.equal(await rt.loadBlock(snapHeight + 1), undefined);
      assert.deepEqual((await rt.loadBlockMeta(snapHeight))!.blockId.hash, snapHash);
      assert.equal(signedHeight(n.dir), snapHeight, 'the double-sign guard moved back');
      // The stores as a restart would read them.
      const bs = await BlockStore.open(n.blockKV);
      assert.equal(bs.height, snapHeight);
      const st = new StateStore(n.stateKV);
      assert.equal((await st.loadState())!.lastBlockHeight, snapHeight);
      assert.equal(await st.loadResults(snapHeight + 1), undefined);
      assert.ok(await st.loadResults(snapHeight));
      for (const f of readdirSync(join(n.dir, 'cs.wal'))) assert.match(f, /^wal$/);
      // Automine is on and interval mining off: no block comes by itself after the revert.
      await new Promise((r) => setTimeout(r, 1500));
      assert.equal(rt.chainState().lastBlockHeight, snapHeight);
      // (Going on from there needs an application that went back too: the e2e tests do it with the executor.)
    } finally {
      await rt.stop();
    }
  });

  it('refuses snapshots and reverts without dev controls, changing nothing', async () => {
    const n = node(false);
    const rt = await ConsensusRuntime.create(n.opts);
    await rt.start();
    try {
      await rt.waitForHeight(1, 10_000);
      const refused = (err: Error & { code?: string }) => err.code === 'DEV_CONTROLS_REFUSED';
      await assert.rejects(
        rt.devSnapshot(async () => null),
        refused,
      );
      const fake = {
        target: { chainState: rt.chainState(), app: null },
        clockOffsetNs: 0n,
        nextBlockTimeNs: null,
        timeMoved: false,
      };
      await assert.rejects(
        rt.devRewind(fake, { intentFile: n.intent, rollbackApp: async () => {} }),
        refused,
      );
      assert.equal(existsSync(n.intent), false);
    } finally {
      await rt.stop();
    }
  });

  it('finishRollback completes a revert whose process stopped after writing the intent', async () => {
    const n = node(true);
    const rt = await ConsensusRuntime.create(n.opts);
    await rt.start();
    await rt.waitForHeight(1, 10_000);
    await rt.setIntervalMining(0);
    const snap = await rt.devSnapshot(async () => ({ at: 'snap' }));
    const h = snap.target.chainState.lastBlockHeight;
    await rt.mineBlocks(3);
    await rt.stop();
    // The process wrote the intent and stopped before anything else.
    const fs = new NodeFs();
    await writeRollbackIntent(fs, n.intent, snap.target);
    const seen: Array<[unknown, number]> = [];
    const finished = await finishRollback({
      fs,
      intentFile: n.intent,
      blockStore: await BlockStore.open(n.blockKV),
      stateStore: new StateStore(n.stateKV),
      walDir: join(n.dir, 'cs.wal'),
      privValidatorStateFile: join(n.dir, 'priv_validator_state.json'),
      rollbackApp: async (app, height) => {
        seen.push([app, height]);
      },
      logger: silentLogger,
    });
    assert.equal(finished, h);
    assert.deepEqual(seen, [[{ at: 'snap' }, h]]);
    assert.equal(existsSync(n.intent), false);
    assert.equal((await BlockStore.open(n.blockKV)).height, h);
    assert.equal((await new StateStore(n.stateKV).loadState())!.lastBlockHeight, h);
    assert.equal(signedHeight(n.dir), h);
    assert.deepEqual(readdirSync(join(n.dir, 'cs.wal')), []);
    // Nothing left to finish; an unreadable intent is an error naming the file.
    assert.equal(await finishRollback({ fs, intentFile: n.intent } as never), undefined);
    writeFileSync(n.intent, '{"version":1,');
    await assert.rejects(
      finishRollback({ fs, intentFile: n.intent } as never),
      (err: Error) => err.message.includes(n.intent) && /unreadable revert intent/.test(err.message),
    );
    await fs.close();
  });
});
