import assert from 'node:assert/strict';
import { AsyncLocalStorage } from 'node:async_hooks';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { validatorKeyJson } from '@noded/config';
import {
  type ConsensusMessage,
  type ConsensusNetwork,
  ConsensusRuntime,
  type ConsensusRuntimeOptions,
  checkBlock,
  isEvidenceExpired,
  makeDuplicateVoteEvidence,
  maxDataBytes,
  TestApp,
  ValidatorSet,
  verifyDuplicateVoteEvidence,
} from '@noded/consensus';
import { ed25519Verify } from '@noded/crypto';
import { MemoryKV } from '@noded/storage';
import {
  type Application,
  type DuplicateVoteEvidence,
  EventBus,
  type FinalizeBlockRequest,
  type NodeEvent,
  type PrepareProposalRequest,
  silentLogger,
  type Vote,
} from '@noded/types';
import { CHAIN_ID, GENESIS_TIME, MS, PARAMS, TIMEOUTS, testKey, validatorsOf } from './helpers.js';

const dirs: string[] = [];
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

const key = testKey(0);

interface Node {
  dir: string;
  opts: ConsensusRuntimeOptions;
  app: TestApp;
  events: Array<{ e: NodeEvent; at: number }>;
  blockKV: MemoryKV;
  stateKV: MemoryKV;
}

function node(commitMs = 40, over: Partial<ConsensusRuntimeOptions> = {}): Node {
  const dir = mkdtempSync(join(tmpdir(), 'noded-rt-'));
  dirs.push(dir);
  const keyFile = join(dir, 'priv_validator_key.json');
  writeFileSync(keyFile, validatorKeyJson({ seed: key.seed, publicKey: key.publicKey }));
  const app = new TestApp();
  const bus = new EventBus();
  const events: Node['events'] = [];
  bus.subscribe((e) => events.push({ e, at: Date.now() }));
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
    timeouts: { ...TIMEOUTS, commit: commitMs },
    createEmptyBlocks: true,
    doubleSignCheckHeight: 0,
    privValidator: { keyFile, stateFile: join(dir, 'priv_validator_state.json') },
    walDir: join(dir, 'cs.wal'),
    blockStore: blockKV,
    stateStore: stateKV,
    app,
    bus,
    logger: silentLogger,
    ...over,
  };
  return { dir, opts, app, events, blockKV, stateKV };
}

async function runTo(
  n: Node,
  height: number,
  opts: Partial<ConsensusRuntimeOptions> = {},
): Promise<ConsensusRuntime> {
  const rt = await ConsensusRuntime.create({ ...n.opts, ...opts });
  await rt.start();
  await rt.waitForHeight(height, 20_000);
  await rt.stop();
  return rt;
}

const newBlocks = (n: Node) =>
  n.events.filter(
    (x): x is { e: Extract<NodeEvent, { kind: 'NewBlock' }>; at: number } => x.e.kind === 'NewBlock',
  );

describe('ConsensusRuntime (single validator)', () => {
  it('with timeout_commit 1s produces a block about every second and publishes the events', async () => {
    const n = node(1000);
    const rt = await runTo(n, 4);
    const blocks = newBlocks(n);
    assert.deepEqual(
      blocks.map((b) => b.e.block.header.height),
      [1, 2, 3, 4],
    );
    const intervals = blocks.slice(1).map((b, i) => b.at - blocks[i]!.at);
    const avg = intervals.reduce((a, b) => a + b, 0) / intervals.length;
    assert.ok(avg >= 900 && avg < 2000, `average block interval ${avg} ms (${intervals.join(', ')})`);
    const kinds = new Set(n.events.map((x) => x.e.kind));
    for (const k of ['NewRound', 'NewRoundStep', 'CompleteProposal', 'Vote', 'NewBlock', 'Tx'])
      assert.ok(kinds.has(k as NodeEvent['kind']), k);
    // NewBlock (with its result) comes before the block's Tx events, one per transaction, in order
    const seq = n.events.map((x) => x.e).filter((e) => e.kind === 'NewBlock' || e.kind === 'Tx');
    const first = seq.findIndex((e) => e.kind === 'NewBlock');
    const nb = seq[first] as Extract<NodeEvent, { kind: 'NewBlock' }>;
    assert.equal(nb.result.txResults.length, nb.block.data.txs.length);
    const txs = seq.slice(first + 1, first + 1 + nb.block.data.txs.length) as Array<
      Extract<NodeEvent, { kind: 'Tx' }>
    >;
    assert.deepEqual(
      txs.map((t) => [t.kind, t.height, t.index]),
      nb.block.data.txs.map((_, i) => ['Tx', 1, i]),
    );
    assert.equal(rt.blockStoreHeight(), 4);
  });

  it('stores each block with its commit before finalizeBlock and its results before commit; serves the reads', async () => {
    const n = node();
    const seen: string[] = [];
    const prepared: PrepareProposalRequest[] = [];
    const lastCommits: FinalizeBlockRequest['decidedLastCommit'][] = [];
    const app = n.app;
    const wrapped: Application = {
      info: () => app.info(),
      initChain: (r) => app.initChain(r),
      checkTx: (t, k) => app.checkTx(t, k),
      prepareProposal: async (r) => {
        prepared.push(r);
        return app.prepareProposal(r);
      },
      processProposal: (r) => app.processProposal(r),
      finalizeBlock: async (r: FinalizeBlockRequest) => {
        const stored = await n.blockKV.get(blockKey(r.height));
        seen.push(`finalize ${r.height} stored=${stored !== undefined}`);
        lastCommits.push(r.decidedLastCommit);
        return app.finalizeBlock(r);
      },
      commit: async () => {
        const h = app.height + 1;
        const results = await n.stateKV.get(keyAt('st:r:', h));
        seen.push(`commit ${h} results=${results !== undefined}`);
        return app.commit();
      },
    };
    const rt = await runTo(n, 3, { app: wrapped });
    assert.deepEqual(seen.slice(0, 6), [
      'finalize 1 stored=true',
      'commit 1 results=true',
      'finalize 2 stored=true',
      'commit 2 results=true',
      'finalize 3 stored=true',
      'commit 3 results=true',
    ]);
    // decided_last_commit: nothing at the first height, then the validator's precommit each block.
    assert.deepEqual(lastCommits[0], { round: 0, votes: [] });
    for (const c of lastCommits.slice(1, 3))
      assert.deepEqual(c?.votes, [{ validatorAddress: key.address, power: 10n, signed: true }]);
    assert.equal(prepared[0]!.maxTxBytes, maxDataBytes(PARAMS, 0, 1));
    assert.equal(prepared[0]!.height, 1);

    const b2 = (await rt.loadBlock(2))!;
    const b3 = (await rt.loadBlock(3))!;
    assert.equal(b2.header.height, 2);
    const meta2 = (await rt.loadBlockMeta(2))!;
    assert.deepEqual(b3.header.lastBlockId, meta2.blockId);
    assert.deepEqual((await rt.loadBlockByHash(meta2.blockId.hash))!.block, b2);
    const c2 = (await rt.loadCommit(2))!;
    assert.equal(c2.canonical, true);
    assert.deepEqual(c2.commit, b3.lastCommit);
    const c3 = (await rt.loadCommit(3))!;
    assert.equal(c3.canonical, false);
    assert.equal(c3.commit.signatures[0]!.blockIdFlag, 2);
    const res2 = (await rt.loadBlockResults(2))!;
    assert.equal(res2.txResults.length, b2.data.txs.length);
    assert.ok(res2.finalizeBlockEvents.length > 0);
    assert.deepEqual(
      (await rt.validators(1))!.map((v) => v.address),
      [key.address],
    );
    assert.deepEqual(await rt.consensusParams(2), PARAMS);
    assert.equal(await rt.loadBlock(99), undefined);
    assert.ok(b2.header.time < b3.header.time, 'BFT time increases');
    const sync = rt.syncInfo();
    assert.equal(sync.latestBlockHeight, rt.blockStoreHeight());
    assert.equal(sync.earliestBlockHeight, 1);
    assert.deepEqual(sync.latestAppHash, app.appHash);
    const rs = rt.roundState();
    assert.equal(rs.height, rt.blockStoreHeight() + 1);
    assert.match(rs.step, /^RoundStep/);
    assert.deepEqual(rt.validatorInfo(), { address: key.address, pubKey: key.publicKey, votingPower: 10n });
  });

  it('restarts from the same stores, WAL and signer state and continues at the next height', async () => {
    const n = node();
    const first = await runTo(n, 3);
    const stopped = first.blockStoreHeight();
    const second = await ConsensusRuntime.create(n.opts);
    assert.equal(second.blockStoreHeight(), stopped);
    await second.start();
    await second.waitForHeight(stopped + 2, 20_000);
    await second.stop();
    const heights = newBlocks(n).map((b) => b.e.block.header.height);
    assert.deepEqual(
      heights,
      Array.from({ length: heights.length }, (_, i) => i + 1),
      'no height repeated or skipped',
    );
    const pv = JSON.parse(readFileSync(join(n.dir, 'priv_validator_state.json'), 'utf8'));
    assert.ok(Number(pv.height) >= stopped + 2);
  });

  it('handshake replays the block the application lacks (app one block behind)', async () => {
    const n = node();
    const rt = await runTo(n, 3);
    const top = rt.blockStoreHeight();
    const hashAtTop = n.app.appHash;
    n.app.rollback(1);
    assert.equal(n.app.height, top - 1);
    const before = newBlocks(n).length;
    const replayed: FinalizeBlockRequest[] = [];
    const finalize = n.app.finalizeBlock.bind(n.app);
    n.app.finalizeBlock = (r) => {
      replayed.push(r);
      return finalize(r);
    };
    const again = await ConsensusRuntime.create(n.opts);
    assert.equal(n.app.height, top, 'the missing block was replayed through finalizeBlock + commit');
    // The saved state is past the replayed block: its signers come from the stored set of top - 1.
    assert.deepEqual(replayed[0]?.decidedLastCommit.votes, [
      { validatorAddress: key.address, power: 10n, signed: true },
    ]);
    assert.deepEqual(n.app.appHash, hashAtTop);
    assert.equal(newBlocks(n).length, before, 'its events were published when it was committed, not again');
    await again.start();
    await again.waitForHeight(top + 1, 20_000);
    await again.stop();
  });

  it('handshake rebuilds the state when the app committed but the state was not saved', async () => {
    const n = node();
    const snapshots = new Map<number, Uint8Array>();
    n.opts.bus.subscribe((e) => {
      if (e.kind === 'NewBlock') {
        const h = e.block.header.height;
        void n.stateKV.get(keyAt('st:state')).then((v) => v && snapshots.set(h, v));
      }
    });
    const rt = await runTo(n, 3);
    const top = rt.blockStoreHeight();
    const older = snapshots.get(top - 1);
    assert.ok(older, `state snapshot after block ${top - 1}`);
    // as if the process died after the application's commit of `top` but before the state was saved
    await n.stateKV.write([{ type: 'put', key: keyAt('st:state'), value: older }]);
    const again = await ConsensusRuntime.create(n.opts);
    assert.equal(again.chainState().lastBlockHeight, top);
    assert.deepEqual(again.chainState().appHash, n.app.appHash);
    assert.equal(n.app.height, top, 'the application was not asked to apply the block twice');
    await again.start();
    await again.waitForHeight(top + 1, 20_000);
    await again.stop();
  });

  it('refuses an application that is ahead of the stores, and one whose app hash disagrees', async () => {
    const n = node();
    await runTo(n, 2);
    const fresh = {
      ...n.opts,
      blockStore: new MemoryKV(),
      stateStore: new MemoryKV(),
      walDir: join(n.dir, 'other.wal'),
    };
    await assert.rejects(
      ConsensusRuntime.create(fresh),
      (e: Error & { code?: string }) =>
        e.code === 'HANDSHAKE' &&
        /application is ahead of consensus: application height \d+, block store height 0/.test(e.message),
    );

    const m = node();
    const rt = await runTo(m, 3);
    m.app.rollback(1);
    const real = m.app.finalizeBlock.bind(m.app);
    m.app.finalizeBlock = async (r) => ({ ...(await real(r)), appHash: new Uint8Array(32).fill(0xee) });
    await assert.rejects(
      ConsensusRuntime.create(m.opts),
      /app hash mismatch at height \d+: the application has EEEE/,
    );
    void rt;
  });

  it('double_sign_check_height refuses to start when our key signed the last blocks', async () => {
    const n = node();
    await runTo(n, 3);
    const rt = await ConsensusRuntime.create({ ...n.opts, doubleSignCheckHeight: 2 });
    await assert.rejects(
      rt.start(),
      (e: Error & { code?: string }) =>
        e.code === 'DOUBLE_SIGN_RISK' && /within double_sign_check_height 2/.test(e.message),
    );
    await rt.stop();
  });

  it('includes verified duplicate-vote evidence exactly once and passes it to finalizeBlock', async () => {
    const n = node();
    const misbehavior: FinalizeBlockRequest['misbehavior'][] = [];
    const real = n.app.finalizeBlock.bind(n.app);
    n.app.finalizeBlock = async (r) => {
      if (r.misbehavior.length > 0) misbehavior.push(r.misbehavior);
      return real(r);
    };
    const rt = await ConsensusRuntime.create(n.opts);
    await rt.start();
    await rt.waitForHeight(2, 20_000);
    const meta1 = (await rt.loadBlockMeta(1))!;
    const vals = ValidatorSet.restore((await rt.validators(1))!, null);
    const vote = (fill: number) => {
      const v = {
        type: 1 as const,
        height: 1,
        round: 5,
        blockId: {
          hash: new Uint8Array(32).fill(fill),
          partSetHeader: { total: 1, hash: new Uint8Array(32).fill(fill) },
        },
        timestamp: GENESIS_TIME + 7n * MS,
        validatorAddress: key.address,
        validatorIndex: 0,
        signature: new Uint8Array(0),
      };
      return v;
    };
    const { ed25519Sign } = await import('@noded/crypto');
    const { voteSignBytes } = await import('@noded/consensus');
    const sign = (v: ReturnType<typeof vote>) => ({
      ...v,
      signature: ed25519Sign(key.seed, voteSignBytes(CHAIN_ID, v)),
    });
    const ev = makeDuplicateVoteEvidence(sign(vote(1)), sign(vote(2)), meta1.header.time, vals);
    verifyDuplicateVoteEvidence(CHAIN_ID, ev, vals, meta1.header.time, ed25519Verify);
    const bad: DuplicateVoteEvidence = { ...ev, validatorPower: 99n };
    await assert.rejects(
      rt.submitEvidence(bad),
      (e: Error & { code?: string }) => e.code === 'INVALID_EVIDENCE' && /validator power 99/.test(e.message),
    );
    const hash = await rt.submitEvidence(ev);
    assert.equal(hash.length, 32);
    const from = rt.blockStoreHeight();
    await rt.waitForHeight(from + 3, 20_000);
    await rt.stop();
    let count = 0;
    for (let h = 1; h <= rt.blockStoreHeight(); h++) count += (await rt.loadBlock(h))!.evidence.length;
    assert.equal(count, 1, 'committed exactly once');
    assert.equal(misbehavior.length, 1);
    assert.equal(misbehavior[0]![0]!.type, 'duplicate_vote');
    assert.equal(misbehavior[0]![0]!.height, 1);
    const again = await ConsensusRuntime.create(n.opts);
    await assert.rejects(again.submitEvidence(ev), /already committed/);
    await again.stop();
  });

  it('waitForHeight rejects with the height and the deadline when it is not reached', async () => {
    const n = node(60_000);
    const rt = await ConsensusRuntime.create(n.opts);
    await rt.start();
    await rt.waitForHeight(1, 20_000);
    await assert.rejects(rt.waitForHeight(5, 50), /height 5 was not committed within 50 ms/);
    await rt.stop();
    assert.equal(rt.blockStoreHeight(), 1, 'no block after stop()');
  });
});

describe('evidence expiry', () => {
  it('expires only when both max_age_num_blocks and max_age_duration are exceeded', () => {
    const p = { ...PARAMS, evidence: { ...PARAMS.evidence, maxAgeNumBlocks: 100n, maxAgeDuration: 1000n } };
    assert.equal(isEvidenceExpired(p, 200, 5000n, 50, 1000n), true, 'both exceeded');
    assert.equal(isEvidenceExpired(p, 200, 1500n, 50, 1000n), false, 'blocks exceeded, time not');
    assert.equal(isEvidenceExpired(p, 120, 5000n, 50, 1000n), false, 'time exceeded, blocks not');
    assert.equal(isEvidenceExpired(p, 150, 2000n, 50, 1000n), false, 'exactly at the limits is not expired');
  });
});

const enc = new TextEncoder();
function keyAt(prefix: string, height?: number): Uint8Array {
  const p = enc.encode(prefix);
  if (height === undefined) return p;
  const out = new Uint8Array(p.length + 8);
  out.set(p);
  new DataView(out.buffer).setBigUint64(p.length, BigInt(height));
  return out;
}
const blockKey = (h: number) => keyAt('bs:b:', h);

describe('ConsensusRuntime and its network', () => {
  it('reports a peer that sends a forged vote or one from outside the validator set', async () => {
    const handlers: Array<(peer: string, m: ConsensusMessage) => void> = [];
    const reports: Array<{ peer: string; reason: string }> = [];
    const network: ConsensusNetwork = {
      broadcast: () => {},
      send: () => {},
      subscribe: (h) => {
        handlers.push(h);
        return () => {};
      },
      report: (peer, reason) => reports.push({ peer, reason }),
    };
    // timeout_commit of a minute: after block 1 the node waits at height 2.
    const n = node(60_000, { network });
    const rt = await ConsensusRuntime.create(n.opts);
    await rt.start();
    try {
      await rt.waitForHeight(1, 20_000);
      const height = rt.engineState().height;
      const [val] = validatorsOf([key]);
      const vote: Vote = {
        type: 1,
        height,
        round: 0,
        blockId: { hash: new Uint8Array(0), partSetHeader: { total: 0, hash: new Uint8Array(0) } },
        timestamp: GENESIS_TIME,
        validatorAddress: val!.address,
        validatorIndex: 0,
        signature: new Uint8Array(64).fill(7),
      };
      const deliver = async (peer: string, v: Vote) => {
        for (const h of handlers) h(peer, { kind: 'vote', vote: v });
        await rt.idle();
      };
      await deliver('forger', vote);
      await deliver('outsider', { ...vote, validatorIndex: 3 });
      assert.deepEqual(
        reports.map((r) => r.peer),
        ['forger', 'outsider'],
      );
      assert.match(reports[0]!.reason, /^vote \d+\/0\/1: invalid signature$/);
      assert.match(reports[1]!.reason, /validator index 3 is out of range 0\.\.0/);
    } finally {
      await rt.stop();
    }
  });
});

describe('ConsensusRuntime: block pacing and dev controls (single validator)', () => {
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

  it('skip_timeout_commit + an empty-blocks interval: a transaction is committed at once, idle blocks follow the interval', async () => {
    // timeout_commit 5 s would hold every block 5 s; the interval (400 ms) paces the empty ones.
    // The app proposes only what it was given (no generated transactions): a block of one
    // transaction is not load, so nothing batches it.
    const app = new TestApp({ autoTxs: 0 });
    const n = { ...node(5000, { skipTimeoutCommit: true, createEmptyBlocksIntervalMs: 400, app }), app };
    const rt = await ConsensusRuntime.create(n.opts);
    await rt.start();
    try {
      await rt.waitForHeight(3, 10_000);
      const idle = newBlocks(n).slice(-2);
      const gap = idle[1]!.at - idle[0]!.at;
      assert.ok(gap >= 350 && gap < 2000, `empty blocks ${gap} ms apart (interval 400 ms)`);
      const h = rt.chainState().lastBlockHeight;
      const t0 = Date.now();
      n.app.addTx('k1=v1');
      rt.txsAvailable();
      await rt.waitForHeight(h + 1, 5_000);
      const took = Date.now() - t0;
      const block = (await rt.loadBlock(h + 1))!;
      assert.equal(
        Buffer.from(block.data.txs[0]!).toString(),
        'k1=v1',
        'the transaction is in the very next block',
      );
      assert.ok(took < 300, `committed ${took} ms after txsAvailable (interval 400 ms, timeout_commit 5 s)`);
      assert.equal(n.app.value('k1'), 'v1');
      // Through consensus: the block's commit carries the validator's precommit.
      const c = await rt.loadCommit(h + 1);
      assert.equal(c?.commit.signatures[0]?.blockIdFlag, 2);
    } finally {
      await rt.stop();
    }
  });

  it('runs its work in its own async context, never in that of the caller whose input woke it', async () => {
    // A traced broadcast_tx_sync calls txsAvailable() inside its server span; the block that call
    // causes (PrepareProposal, FinalizeBlock, Commit) must not run as that request's children.
    const caller = new AsyncLocalStorage<string>();
    const seen: Array<{ call: string; store: string | undefined }> = [];
    const app = new TestApp({ autoTxs: 0 });
    for (const m of ['prepareProposal', 'processProposal', 'finalizeBlock', 'commit'] as const) {
      const f = (app[m] as (...a: unknown[]) => unknown).bind(app);
      (app as unknown as Record<string, unknown>)[m] = (...a: unknown[]) => {
        seen.push({ call: m, store: caller.getStore() });
        return f(...a);
      };
    }
    const n = { ...node(40, { createEmptyBlocks: false, app }), app };
    const rt = await ConsensusRuntime.create(n.opts);
    await rt.start();
    try {
      await rt.waitForHeight(1, 10_000);
      await sleep(200); // the runtime now waits for transactions, its queue empty
      const h = rt.chainState().lastBlockHeight;
      const before = seen.length;
      caller.run('broadcast_tx_sync', () => {
        n.app.addTx('k=v');
        rt.txsAvailable();
      });
      await rt.waitForHeight(h + 1, 5_000);
      const during = seen.slice(before);
      assert.ok(
        during.some((s) => s.call === 'finalizeBlock'),
        `the transaction's block was finalized (${during.map((s) => s.call).join(', ')})`,
      );
      assert.deepEqual(
        during.filter((s) => s.store !== undefined),
        [],
        "no application call of the block runs in the caller's context",
      );
      assert.equal(n.app.value('k'), 'v');
    } finally {
      await rt.stop();
    }
  });

  it('under load (a block of several transactions) the next block waits a quarter of timeout_commit to batch', async () => {
    // TestApp proposes two generated transactions per block besides the mempool's: always a batch.
    const n = node(2000, { skipTimeoutCommit: true, createEmptyBlocksIntervalMs: 5000 });
    const rt = await ConsensusRuntime.create(n.opts);
    await rt.start();
    try {
      await rt.waitForHeight(1, 10_000);
      const h = rt.chainState().lastBlockHeight;
      const t0 = Date.now();
      n.app.addTx('k9=v9');
      rt.txsAvailable();
      await rt.waitForHeight(h + 1, 5_000);
      const took = Date.now() - t0;
      assert.ok(took >= 300 && took < 1500, `block after ${took} ms (batch wait 500 ms, interval 5 s)`);
    } finally {
      await rt.stop();
    }
  });

  it('without skip_timeout_commit, timeout_commit still holds a transaction back (the seed pacing elsewhere)', async () => {
    const n = node(1200);
    const rt = await ConsensusRuntime.create(n.opts);
    await rt.start();
    try {
      await rt.waitForHeight(1, 10_000);
      const h = rt.chainState().lastBlockHeight;
      n.app.addTx('k2=v2');
      rt.txsAvailable();
      await sleep(400);
      assert.equal(rt.chainState().lastBlockHeight, h, 'no block before timeout_commit');
    } finally {
      await rt.stop();
    }
  });

  it('mines on request with chosen block times, refuses a time that goes back, and a restart replays the same blocks', async () => {
    const n = node(1000, { skipTimeoutCommit: true, createEmptyBlocksIntervalMs: 1000, devControls: true });
    let rt = await ConsensusRuntime.create(n.opts);
    await rt.start();
    const S = 1_000_000_000n;
    try {
      await rt.waitForHeight(1, 10_000);
      await rt.setAutomine(false);
      await rt.setIntervalMining(0);
      await sleep(1200);
      const h = rt.chainState().lastBlockHeight;
      n.app.addTx('k3=v3');
      rt.txsAvailable();
      await sleep(500);
      assert.equal(rt.chainState().lastBlockHeight, h, 'automine off and no interval: no block');

      const before = rt.chainState();
      const t1 = (before.lastBlockTime / S + 3600n) * S;
      await rt.mineBlocks(1, { firstTimeNs: t1 });
      const b1 = (await rt.loadBlock(h + 1))!;
      assert.equal(b1.header.time, t1);
      assert.equal(Buffer.from(b1.data.txs[0]!).toString(), 'k3=v3');
      // The node's own validation accepts the proposer's time, and refuses one that is not later.
      assert.equal(checkBlock(before, b1, ed25519Verify), null);
      const back = { ...b1, header: { ...b1.header, time: before.lastBlockTime } };
      assert.match(checkBlock(before, back, ed25519Verify) ?? '', /is not after the last block time/);

      await rt.mineBlocks(3, { intervalNs: 60n * S });
      const times = await Promise.all(
        [h + 2, h + 3, h + 4].map(async (x) => (await rt.loadBlock(x))!.header.time),
      );
      assert.deepEqual(
        times.slice(1).map((t, i) => (t - times[i]!) / S),
        [60n, 60n],
      );
      assert.ok(times[0]! > t1);
      // The clock offset is relative to the wall clock (here negative: the genesis time is in 2023).
      const offset0 = rt.devState().clockOffsetNs;
      assert.equal(await rt.increaseTime(7200n * S), offset0 + 7200n * S);
      await rt.mineBlocks(1);
      const b5 = (await rt.loadBlock(h + 5))!;
      assert.ok(b5.header.time - times[2]! >= 7200n * S - S, 'the next block takes the moved clock');
      await assert.rejects(rt.setNextBlockTime(b5.header.time), (err: Error & { code?: string }) => {
        assert.equal(err.code, 'INVALID_TIME');
        return true;
      });
      const top = rt.chainState().lastBlockHeight;
      const hashes = await Promise.all(
        Array.from({ length: top }, async (_, i) => (await rt.loadBlockMeta(i + 1))!.blockId.hash),
      );
      await rt.stop();

      // A restart on the same stores and WAL: the handshake accepts them and the blocks are the same.
      rt = await ConsensusRuntime.create(n.opts);
      await rt.start();
      for (let i = 1; i <= top; i++)
        assert.deepEqual((await rt.loadBlockMeta(i))!.blockId.hash, hashes[i - 1]);
      await rt.waitForHeight(top + 1, 5_000);
      assert.ok((await rt.loadBlock(top + 1))!.header.time > b5.header.time);
    } finally {
      await rt.stop();
    }
  });

  it('refuses the dev controls unless enabled and this node is the only validator', async () => {
    const n = node(200);
    const rt = await ConsensusRuntime.create(n.opts);
    await rt.start();
    try {
      const refused = (err: Error & { code?: string }) => {
        assert.equal(err.code, 'DEV_CONTROLS_REFUSED');
        return true;
      };
      await assert.rejects(rt.mineBlocks(1), refused);
      await assert.rejects(rt.setAutomine(true), refused);
      await assert.rejects(rt.increaseTime(1n), refused);
      const other = node(200, { devControls: true, privValidator: null });
      const rt2 = await ConsensusRuntime.create({
        ...other.opts,
        blockStore: new MemoryKV(),
        stateStore: new MemoryKV(),
      });
      assert.equal(rt2.devControlsRefusal(), 'this node is not the validator');
      await rt2.stop();
    } finally {
      await rt.stop();
    }
  });
});
