// Block sync's batched durability (docs/p2p.md, "Block sync"): while catching up, a node holds each
// block's block store writes, results, state and application commit in memory; at a sync point
// every few blocks it writes the held blocks with fsync, then the held state with fsync, then the
// application's held commits. A kill -9 (every write issued is in the operating system,
// what was held is gone) and a power failure (only what was synced, or more) at any point in a batch
// must restart cleanly. A validator runtime and a fresh non-validator runtime talk over an in-memory
// network; the syncing node's stores record which writes were synced.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { validatorKeyJson } from '@noded/config';
import {
  BlockStore,
  type BlockSyncMessage,
  type BlockSyncNetwork,
  type ConsensusMessage,
  type ConsensusNetwork,
  ConsensusRuntime,
  type ConsensusRuntimeOptions,
  type EngineState,
  proposerOf,
  StateStore,
  TestApp,
  testVoteExtension,
} from '@noded/consensus';
import { type BatchOp, MemoryKV } from '@noded/storage';
import { type CommitOptions, EventBus, silentLogger } from '@noded/types';
import { CHAIN_ID, GENESIS_TIME, PARAMS, TIMEOUTS, testKey, validatorsOf } from './helpers.js';

const dirs: string[] = [];
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/**
 * A MemoryKV that remembers its writes, to rebuild what a crash would leave: after a kill -9 every
 * write (they are in the operating system), after a power failure the synced ones and all before
 * them (RocksDB's WAL fsync covers every write before it).
 */
class PowerKV extends MemoryKV {
  readonly log: Array<{ ops: BatchOp[]; sync: boolean }> = [];
  override async write(ops: BatchOp[], options?: { sync?: boolean }): Promise<void> {
    this.log.push({ ops, sync: options?.sync === true });
    await super.write(ops);
  }
  /** The store after a power failure now. */
  async durable(): Promise<PowerKV> {
    let last = -1;
    this.log.forEach((w, i) => {
      if (w.sync) last = i;
    });
    return this.replay(last + 1);
  }
  /** The store after a kill -9 now: every write. */
  async killed(): Promise<PowerKV> {
    return this.replay(this.log.length);
  }
  private async replay(n: number): Promise<PowerKV> {
    const copy = new PowerKV();
    for (const w of this.log.slice(0, n)) await copy.write(w.ops, { sync: w.sync });
    return copy;
  }
}

/** Two endpoints of an in-memory network; messages arrive on a later turn of the event loop. */
function link(): { a: ConsensusNetwork; b: ConsensusNetwork } {
  const handlers = new Map<string, (peer: string, m: ConsensusMessage) => void>();
  const end = (self: string, other: string): ConsensusNetwork => {
    const deliver = (m: ConsensusMessage) => setImmediate(() => handlers.get(other)?.(self, m));
    return {
      broadcast: deliver,
      send: (_peer, m) => deliver(m),
      subscribe: (h) => {
        handlers.set(self, h);
        return () => handlers.delete(self);
      },
    };
  };
  return { a: end('a', 'b'), b: end('b', 'a') };
}

const key = testKey(0);

function baseOpts(
  dir: string,
  app: TestApp,
  over: Partial<ConsensusRuntimeOptions>,
): ConsensusRuntimeOptions {
  return {
    chainId: CHAIN_ID,
    genesis: {
      time: GENESIS_TIME,
      initialHeight: 1,
      validators: validatorsOf([key]),
      consensusParams: PARAMS,
      appState: { test: true },
    },
    timeouts: { ...TIMEOUTS, commit: 10 },
    createEmptyBlocks: true,
    doubleSignCheckHeight: 0,
    privValidator: null,
    walDir: join(dir, 'cs.wal'),
    blockStore: new MemoryKV(),
    stateStore: new MemoryKV(),
    app,
    bus: new EventBus(),
    logger: silentLogger,
    gossipIntervalMs: 30,
    ...over,
  };
}

interface Synced {
  app: TestApp;
  blockKV: PowerKV;
  stateKV: PowerKV;
  /**
   * Each application commit: its height, whether it asked for durability or to be held, the block
   * store's height after a power failure at that moment, and whether its block was written at all.
   */
  commits: Array<{ height: number; durable: boolean; hold: boolean; blockOnDisk: number; written: boolean }>;
  /** Whenever the application wrote (a commit not held, or flushHeld): what was on disk then. */
  writes: Array<{ appWritten: number; blockOnDisk: number; resultsOnDisk: boolean; stateOnDisk: number }>;
}

/**
 * Wraps the app's commit and flushHeld to check, at each, what is written and what is on disk
 * already: the application's written commits never pass the block store on disk, nor the results.
 */
function recordCommits(s: Synced): void {
  const onDisk = async () => {
    const blocks = await BlockStore.open(await s.blockKV.durable());
    const state = new StateStore(await s.stateKV.durable());
    const appWritten = s.app.writtenHeight;
    s.writes.push({
      appWritten,
      blockOnDisk: blocks.height,
      resultsOnDisk: appWritten === 0 || (await state.loadResults(appWritten)) !== undefined,
      stateOnDisk: (await state.loadState())?.lastBlockHeight ?? 0,
    });
  };
  const real = s.app.commit.bind(s.app);
  s.app.commit = async (o?: CommitOptions) => {
    const height = s.app.height + 1;
    const blocks = await BlockStore.open(await s.blockKV.durable());
    const written = await BlockStore.open(await s.blockKV.killed());
    s.commits.push({
      height,
      durable: o?.durable !== false,
      hold: o?.hold === true,
      blockOnDisk: blocks.height,
      written: written.height >= height,
    });
    const out = await real(o);
    if (!o?.hold) await onDisk();
    return out;
  };
  const flush = s.app.flushHeld.bind(s.app);
  s.app.flushHeld = async () => {
    await flush();
    await onDisk();
  };
}

/** Sync points in these tests: every 5 blocks. */
const SYNC_EVERY = 5;

/** The application of `key`'s chain, brought to `height` with the validator's blocks. */
async function appAt(v: ConsensusRuntime, height: number): Promise<TestApp> {
  const app = new TestApp();
  await app.initChain({
    chainId: CHAIN_ID,
    time: GENESIS_TIME,
    initialHeight: 1,
    validators: validatorsOf([key]),
    consensusParams: PARAMS,
    appState: { test: true },
  });
  for (let h = 1; h <= height; h++) {
    const b = (await v.loadBlock(h))!;
    await app.finalizeBlock({
      height: h,
      time: b.header.time,
      proposerAddress: b.header.proposerAddress,
      hash: new Uint8Array(32),
      txs: b.data.txs,
      misbehavior: [],
      decidedLastCommit: { round: 0, votes: [] },
    });
    await app.commit();
  }
  return app;
}

describe('block sync: batched durability while catching up, and a kill -9 or a power failure during it', () => {
  it('fsyncs the block store and the state every few blocks, and restarts cleanly from what a crash leaves', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'noded-bsync-'));
    dirs.push(dir);
    const keyFile = join(dir, 'priv_validator_key.json');
    writeFileSync(keyFile, validatorKeyJson({ seed: key.seed, publicKey: key.publicKey }));
    const vApp = new TestApp();
    const vOpts = baseOpts(join(dir, 'v'), vApp, {
      privValidator: { keyFile, stateFile: join(dir, 'priv_validator_state.json') },
      timeouts: { ...TIMEOUTS, commit: 1 },
    });
    // The validator makes 40 blocks alone, then slows down and serves the syncing node.
    const solo = await ConsensusRuntime.create(vOpts);
    await solo.start();
    await solo.waitForHeight(40, 30_000);
    await solo.stop();
    const net = link();
    const v = await ConsensusRuntime.create({
      ...vOpts,
      network: net.a,
      timeouts: { ...TIMEOUTS, commit: 400 },
    });
    await v.start();

    const s: Synced = {
      app: new TestApp(),
      blockKV: new PowerKV(),
      stateKV: new PowerKV(),
      commits: [],
      writes: [],
    };
    recordCommits(s);
    // The crash: while a block from 12 on executes with the application's commits (in memory) ahead
    // of the block store on disk (in the middle of a batch, after a sync point).
    type Crash = {
      killed: [PowerKV, PowerKV];
      lost: [PowerKV, PowerKV];
      appHeight: number;
      appWritten: number;
    };
    let crash: Crash | undefined;
    const finalize = s.app.finalizeBlock.bind(s.app);
    s.app.finalizeBlock = async (req) => {
      if (req.height >= 12 && !crash) {
        await new Promise((r) => setImmediate(r));
        const lostBlocks = await s.blockKV.durable();
        if ((await BlockStore.open(lostBlocks)).height < s.app.height)
          crash = {
            killed: [await s.blockKV.killed(), await s.stateKV.killed()],
            lost: [lostBlocks, await s.stateKV.durable()],
            appHeight: s.app.height,
            appWritten: s.app.writtenHeight,
          };
      }
      return finalize(req);
    };
    const sOpts = baseOpts(join(dir, 's'), s.app, {
      blockStore: s.blockKV,
      stateStore: s.stateKV,
      catchupSyncBlocks: SYNC_EVERY,
    });
    const first = await ConsensusRuntime.create({ ...sOpts, network: net.b });
    await first.start();
    await first.waitForHeight(25, 30_000);
    await first.stop();

    // Every commit while catching up skipped its own fsync; the block store was synced at least
    // every SYNC_EVERY blocks, and mostly not at each; the blocks and commits between two sync
    // points were held, the others' blocks written before them.
    assert.ok(s.commits.length >= 25);
    const fast = s.commits.filter((c) => !c.durable);
    assert.ok(fast.length >= 20, `${fast.length} of ${s.commits.length} commits took the fast path`);
    for (const c of s.commits) {
      // A block is written before its commit, or held with it until the sync point writes both.
      assert.ok(
        c.hold ? !c.written : c.written,
        `block ${c.height}: written before its commit unless held (held: ${c.hold}, written: ${c.written})`,
      );
      assert.ok(
        c.height - c.blockOnDisk < SYNC_EVERY,
        `block ${c.height}: the block store on disk (${c.blockOnDisk}) at most ${SYNC_EVERY - 1} blocks behind`,
      );
      assert.equal(c.hold, !c.durable && c.blockOnDisk < c.height, `block ${c.height}: held iff not on disk`);
    }
    const batched = fast.filter((c) => c.hold).length;
    assert.ok(batched >= fast.length / 2, `${batched} of ${fast.length} commits held until a sync point`);
    const syncedBlockWrites = s.blockKV.log.filter((w) => w.sync).length;
    assert.ok(
      syncedBlockWrites <= s.commits.length - batched,
      `${syncedBlockWrites} synced block store writes for ${s.commits.length} blocks`,
    );
    // The invariant a power failure relies on: whenever the application wrote, its commits were not
    // past the blocks and results on disk, nor was the state on disk.
    assert.ok(s.writes.length >= 5 && s.writes.length < s.commits.length, `${s.writes.length} writes`);
    for (const w of s.writes) {
      assert.ok(
        w.appWritten <= w.blockOnDisk && w.resultsOnDisk,
        `the application wrote height ${w.appWritten} with the blocks on disk to ${w.blockOnDisk} (results: ${w.resultsOnDisk})`,
      );
      assert.ok(w.stateOnDisk <= w.blockOnDisk, `state ${w.stateOnDisk} past blocks ${w.blockOnDisk}`);
    }

    assert.ok(crash, 'a crash point in the middle of a batch');
    const { appHeight, appWritten } = crash;
    assert.ok(appWritten < appHeight, `held commits at the crash: written ${appWritten} of ${appHeight}`);
    const restart = async (what: string, app: TestApp, [blockKV, stateKV]: [PowerKV, PowerKV]) => {
      const storeBefore = (await BlockStore.open(blockKV)).height;
      const stateBefore = (await new StateStore(stateKV).loadState())?.lastBlockHeight ?? 0;
      assert.ok(
        stateBefore <= storeBefore,
        `${what}: the state (${stateBefore}) is not past the blocks (${storeBefore})`,
      );
      assert.ok(app.height <= storeBefore, `${what}: the application (${app.height}) is not past the blocks`);
      const again = await ConsensusRuntime.create({
        ...sOpts,
        app,
        blockStore: blockKV,
        stateStore: stateKV,
        network: net.b,
      });
      assert.equal(
        again.chainState().lastBlockHeight,
        storeBefore,
        `${what} (state on disk ${stateBefore}, application ${app.height}): the handshake brought the state to the block store`,
      );
      await again.start();
      const tip = v.blockStoreHeight();
      await again.waitForHeight(tip, 30_000);
      await again.stop();
      for (let h = 1; h <= tip; h++) {
        const a = await v.loadBlockMeta(h);
        const b = await again.loadBlockMeta(h);
        assert.deepEqual(b?.blockId.hash, a?.blockId.hash, `${what}: block ${h}`);
      }
      // The application rebuilt by the handshake and sync holds the validator's app hash at its height.
      await v.waitForHeight(app.height + 1, 10_000);
      const next = await v.loadBlockMeta(app.height + 1);
      assert.ok(next, `the validator has block ${app.height + 1}`);
      assert.deepEqual(app.appHash, next.header.appHash, `${what}: app hash at ${app.height}`);
    };

    // kill -9: every write issued is kept, the application's written commits too; its held ones
    // (in memory) are gone.
    await restart('kill -9', await appAt(v, appWritten), [
      await crash.killed[0].killed(),
      await crash.killed[1].killed(),
    ]);

    // Power failure: the stores keep their synced writes; the application keeps its last fsynced
    // commit, or more of its written ones (the OS wrote them), which never pass the blocks on disk.
    const lostStore = (await BlockStore.open(crash.lost[0])).height;
    assert.ok(
      lostStore < appHeight && appHeight - lostStore < SYNC_EVERY,
      `blocks on disk ${lostStore}, application ${appHeight} (in memory)`,
    );
    assert.ok(appWritten <= lostStore, `written commits ${appWritten}, blocks on disk ${lostStore}`);
    const lastDurable = Math.max(
      0,
      ...s.commits.filter((c) => c.durable && c.height <= appHeight).map((c) => c.height),
    );
    for (const [what, to] of [
      ['power failure, the application at its last synced commit', lastDurable],
      ['power failure, the application at its last written commit', appWritten],
    ] as const)
      await restart(what, await appAt(v, to), [await crash.lost[0].durable(), await crash.lost[1].durable()]);

    // What used to need a reset (the application past the blocks on disk) cannot arise: the state
    // store's and the application's writes of a batch wait in memory for the block store's fsync.
    await v.stop();
  });
});

// Vote extensions and block sync (issue 24): a node that catches up by block sync gets each block's
// extended commit, checks its extension signatures, and hands the last height's extensions to its
// next proposal. A block may come without its extended commit only when the next height is known
// committed (the node will not propose it), so a store written before extended commits were kept
// per height still serves its old heights. A has 5 of 7 voting power and makes blocks alone; B
// (power 2) syncs from A.
describe('block sync with vote extensions', () => {
  const a = testKey(0);
  const b = testKey(1);
  const powers = [5n, 2n];
  const EXT_PARAMS = { ...PARAMS, abci: { voteExtensionsEnableHeight: 1n } };
  const FAST = {
    propose: 150,
    proposeDelta: 50,
    prevote: 80,
    prevoteDelta: 20,
    precommit: 80,
    precommitDelta: 20,
    commit: 10,
  };
  const TOP = 12;

  function opts(dir: string, app: TestApp, over: Partial<ConsensusRuntimeOptions>): ConsensusRuntimeOptions {
    const o = baseOpts(dir, app, over);
    return {
      ...o,
      genesis: { ...o.genesis, validators: validatorsOf([a, b], powers), consensusParams: EXT_PARAMS },
      timeouts: FAST,
      ...over,
    };
  }

  /**
   * A's chain: at least TOP blocks made alone (its 5 of 7 is over 2/3), each with A's extension.
   * With `bProposesNext`, A stops where B is the round-0 proposer of the next height (a node alone
   * at the tip moves to a next round only with 2/3 of the prevotes, so B proposes only in round 0).
   */
  async function chainOfA(
    dir: string,
    bProposesNext = false,
  ): Promise<{ blockKV: MemoryKV; stateKV: MemoryKV; app: TestApp; top: number }> {
    const keyFile = join(dir, 'a_key.json');
    writeFileSync(keyFile, validatorKeyJson({ seed: a.seed, publicKey: a.publicKey }));
    const s = { blockKV: new MemoryKV(), stateKV: new MemoryKV(), app: new TestApp({ extensionTag: 'A' }) };
    for (let attempt = 0; attempt < 40; attempt++) {
      const rt = await ConsensusRuntime.create(
        opts(join(dir, 'a'), s.app, {
          privValidator: { keyFile, stateFile: join(dir, 'a_state.json') },
          blockStore: s.blockKV,
          stateStore: s.stateKV,
        }),
      );
      await rt.start();
      await rt.waitForHeight(Math.max(TOP, rt.blockStoreHeight() + 1), 30_000);
      await rt.stop();
      const next = proposerOf(rt.engineState() as EngineState, 0);
      if (!bProposesNext || Buffer.from(next.address).equals(Buffer.from(b.address)))
        return { ...s, top: rt.blockStoreHeight() };
    }
    throw new Error('A never stopped where B proposes next');
  }

  /** A again, no longer signing (so the chain stays at its height), serving B over `net`. */
  async function serveA(
    dir: string,
    chain: Awaited<ReturnType<typeof chainOfA>>,
    net: ConsensusNetwork,
    extra: Partial<ConsensusRuntimeOptions> = {},
  ) {
    const rt = await ConsensusRuntime.create(
      opts(join(dir, 'a2'), chain.app, {
        blockStore: chain.blockKV,
        stateStore: chain.stateKV,
        network: net,
        ...extra,
      }),
    );
    await rt.start();
    return rt;
  }

  function nodeB(dir: string, net: ConsensusNetwork, extra: Partial<ConsensusRuntimeOptions> = {}) {
    const keyFile = join(dir, 'b_key.json');
    writeFileSync(keyFile, validatorKeyJson({ seed: b.seed, publicKey: b.publicKey }));
    const app = new TestApp({ extensionTag: 'B' });
    const blockKV = new MemoryKV();
    return {
      app,
      blockKV,
      opts: opts(join(dir, 'b'), app, {
        privValidator: { keyFile, stateFile: join(dir, 'b_state.json') },
        blockStore: blockKV,
        network: net,
        ...extra,
      }),
    };
  }

  /** Two endpoints of an in-memory block sync protocol; B's reports are recorded. */
  function syncLink(): { a: BlockSyncNetwork; b: BlockSyncNetwork; reports: string[] } {
    const handlers = new Map<string, (peer: string, m: BlockSyncMessage) => void>();
    const reports: string[] = [];
    const end = (self: string, other: string): BlockSyncNetwork => {
      const deliver = (m: BlockSyncMessage) => setImmediate(() => handlers.get(other)?.(self, m));
      return {
        broadcast: deliver,
        send: (_peer, m) => deliver(m),
        subscribe: (h) => {
          handlers.set(self, h);
          return () => handlers.delete(self);
        },
        report: (_peer, reason) => {
          if (self === 'b') reports.push(reason);
        },
      };
    };
    return { a: end('a', 'b'), b: end('b', 'a'), reports };
  }

  /** Passes A's messages to B through `tamper` (which may change or drop them); B's reports are recorded. */
  function tamperedLink(tamper: (m: ConsensusMessage) => ConsensusMessage | null): {
    a: ConsensusNetwork;
    b: ConsensusNetwork;
    reports: string[];
  } {
    const { a: la, b: lb } = link();
    const reports: string[] = [];
    const a: ConsensusNetwork = {
      broadcast: (m) => {
        const t = tamper(m);
        if (t) la.broadcast(t);
      },
      send: (p, m) => {
        const t = tamper(m);
        if (t) la.send(p, t);
      },
      subscribe: (h) => la.subscribe(h),
    };
    const b: ConsensusNetwork = { ...lb, report: (_peer, reason) => reports.push(reason) };
    return { a, b, reports };
  }

  it("carries each extended commit, and the synced node proposes with the last height's extensions", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'noded-bsync-ext-'));
    dirs.push(dir);
    const chain = await chainOfA(dir, true);
    const TOP = chain.top;
    const net = tamperedLink((m) => m);
    const server = await serveA(dir, chain, net.a);
    const node = nodeB(dir, net.b);
    const rt = await ConsensusRuntime.create(node.opts);
    await rt.start();
    await rt.waitForHeight(TOP, 30_000);
    // B, at TOP + 1 and unable to commit without A, proposes in round 0.
    const deadline = Date.now() + 20_000;
    while (!node.app.localLastCommits.some((c) => c.height === TOP + 1) && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 20));
    await rt.stop();
    await server.stop();
    assert.deepEqual(net.reports, [], 'no block was refused');

    const proposal = node.app.localLastCommits.find((c) => c.height === TOP + 1);
    assert.ok(proposal, `B proposed at height ${TOP + 1}`);
    const top = (await rt.loadBlockMeta(TOP))!;
    const attested = proposal.commit.votes.filter(
      (v) =>
        v.blockIdFlag === 2 &&
        Buffer.from(v.voteExtension).equals(Buffer.from(testVoteExtension(TOP, top.blockId.hash, 'A'))) &&
        v.extensionSignature.length === 64,
    );
    const power = attested.reduce((s, v) => s + v.validator.power, 0n);
    assert.equal(power, 5n, "A's extension of height TOP, signed, reached B's PrepareProposal");
    assert.ok(power * 3n > 7n * 2n, 'more than 2/3 of the voting power');

    // B keeps the extended commit of every synced height, so it can serve them in turn.
    const store = await BlockStore.open(node.blockKV);
    for (let h = 1; h <= TOP; h++) {
      const ec = await store.loadExtendedCommit(h);
      const meta = (await store.loadBlockMeta(h))!;
      const sig = ec?.signatures.find((s) => Buffer.from(s.validatorAddress).equals(Buffer.from(a.address)));
      assert.ok(sig?.extension, `extended commit of ${h} with A's extension`);
      assert.deepEqual(sig.extension, testVoteExtension(h, meta.blockId.hash, 'A'), `extension of ${h}`);
    }
  });

  it('refuses a block whose extended commit is forged, or missing where the next height is not known committed, and reports the peer', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'noded-bsync-ext-'));
    dirs.push(dir);
    const chain = await chainOfA(dir);
    const top = chain.top;
    let mode: 'forge' | 'strip' | 'honest' = 'forge';
    const net = tamperedLink((m) => {
      if (m.kind !== 'commit' || !m.extendedCommit || mode === 'honest') return m;
      // Block 5 is forged; A's top block (no peer stores the height after it) and block 6 are stripped.
      if (mode === 'strip' && (m.commit.height === top || m.commit.height === 6))
        return { kind: 'commit', block: m.block, commit: m.commit };
      if (m.commit.height !== 5 || mode === 'strip') return m;
      // Another extension under A's real extension signature (the precommit signatures stay valid).
      const signatures = m.extendedCommit.signatures.map((s) =>
        s.extension ? { ...s, extension: new TextEncoder().encode('mint 1000 BTC to the forger') } : s,
      );
      const forged = { ...m.extendedCommit, signatures };
      return { ...m, commit: forged, extendedCommit: forged };
    });
    const server = await serveA(dir, chain, net.a);
    const node = nodeB(dir, net.b);
    const rt = await ConsensusRuntime.create(node.opts);
    await rt.start();
    const waitReport = async (re: RegExp) => {
      const deadline = Date.now() + 10_000;
      while (!net.reports.some((r) => re.test(r)) && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 20));
      assert.ok(
        net.reports.some((r) => re.test(r)),
        `a report matching ${re} (got ${JSON.stringify(net.reports)})`,
      );
    };
    await waitReport(
      /^commit 5: extended commit for height 5: signature \d \(validator [0-9a-f]+\): invalid vote extension signature$/,
    );
    assert.equal(rt.blockStoreHeight(), 4, 'the forged block 5 was not stored');
    // Stripped: block 6 is taken on its commit (A works above it, so B will not propose height 7),
    // but the top block is refused: B, at the tip, would need its extensions for its next proposal.
    mode = 'strip';
    const re = new RegExp(
      `^commit ${top}: vote extensions are enabled at height ${top}, but the block came without its extended commit$`,
    );
    await waitReport(re);
    assert.equal(rt.blockStoreHeight(), top - 1, `block ${top} without its extended commit was not stored`);
    assert.equal(
      net.reports.filter((r) => /without its extended commit/.test(r)).every((r) => re.test(r)),
      true,
      `only block ${top} was refused for a missing extended commit: ${JSON.stringify(net.reports)}`,
    );
    mode = 'honest';
    await rt.waitForHeight(top, 30_000);
    await rt.stop();
    await server.stop();
    const store = await BlockStore.open(node.blockKV);
    for (const h of [5, top]) {
      const ec = await store.loadExtendedCommit(h);
      const meta = (await rt.loadBlockMeta(h))!;
      assert.deepEqual(
        ec?.signatures.find((s) => s.extension)?.extension,
        testVoteExtension(h, meta.blockId.hash, 'A'),
        `block ${h} is stored with A's real extension`,
      );
    }
    assert.equal(await store.loadExtendedCommit(6), undefined, 'block 6 came without one and keeps none');
    assert.ok(await store.loadBlock(6), 'block 6 is stored');
  });

  it('a store without the extended commits below its top still serves those blocks; the synced node proposes with the top one', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'noded-bsync-ext-'));
    dirs.push(dir);
    const chain = await chainOfA(dir, true);
    const TOP = chain.top;
    // What a block store written before extended commits were kept per height holds: the top one only.
    const dropped: Uint8Array[] = [];
    const prefix = Buffer.from('bs:ec:');
    for await (const [k] of chain.blockKV.iterate({})) {
      const b = Buffer.from(k);
      if (b.subarray(0, prefix.length).equals(prefix) && Number(b.readBigUInt64BE(prefix.length)) < TOP)
        dropped.push(k.slice());
    }
    assert.equal(dropped.length, TOP - 1, 'extended commits of 1..TOP-1 dropped');
    await chain.blockKV.write(dropped.map((key) => ({ type: 'del' as const, key })));

    // Over the consensus channel (the simulator's way), then over the block sync protocol (the
    // node's way: a NoBlock before), each time a fresh B from nothing.
    for (const leg of ['consensus channel', 'block sync protocol'] as const) {
      const legDir = join(dir, leg.replaceAll(' ', '-'));
      mkdirSync(legDir);
      const net = tamperedLink((m) => m);
      const sync = leg === 'block sync protocol' ? syncLink() : undefined;
      const server = await serveA(legDir, chain, net.a, sync ? { blockSync: sync.a } : {});
      const node = nodeB(legDir, net.b, sync ? { blockSync: sync.b } : {});
      const rt = await ConsensusRuntime.create(node.opts);
      await rt.start();
      await rt.waitForHeight(TOP, 30_000);
      const deadline = Date.now() + 20_000;
      while (!node.app.localLastCommits.some((c) => c.height === TOP + 1) && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 20));
      await rt.stop();
      await server.stop();
      assert.deepEqual([...net.reports, ...(sync?.reports ?? [])], [], `${leg}: no block was refused`);

      const store = await BlockStore.open(node.blockKV);
      for (let h = 1; h < TOP; h++) {
        assert.ok(await store.loadBlock(h), `${leg}: block ${h} synced`);
        assert.equal(
          await store.loadExtendedCommit(h),
          undefined,
          `${leg}: no extended commit kept for ${h}`,
        );
      }
      const top = (await rt.loadBlockMeta(TOP))!;
      const sig = (await store.loadExtendedCommit(TOP))?.signatures.find((s) => s.extension);
      assert.deepEqual(
        sig?.extension,
        testVoteExtension(TOP, top.blockId.hash, 'A'),
        `${leg}: the top one is kept`,
      );
      // B's first proposal still gets A's extension of the last height.
      const proposal = node.app.localLastCommits.find((c) => c.height === TOP + 1);
      assert.ok(proposal, `${leg}: B proposed at height ${TOP + 1}`);
      const attested = proposal.commit.votes.filter((v) =>
        Buffer.from(v.voteExtension).equals(Buffer.from(testVoteExtension(TOP, top.blockId.hash, 'A'))),
      );
      assert.equal(
        attested.reduce((s, v) => s + v.validator.power, 0n),
        5n,
      );
    }
  });
});
