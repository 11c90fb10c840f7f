// Block sync's fast path (docs/p2p.md, "Block sync"): while catching up, a node fsyncs only the block
// store and the block results, and a power failure that loses everything else must still restart
// cleanly. A validator runtime and a fresh non-validator runtime talk over an in-memory network; the
// syncing node's stores record which writes were synced, and a "power failure" keeps only those.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { validatorKeyJson } from '../../libs/config/index.js';
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
} from '../../libs/consensus/index.js';
import { type BatchOp, MemoryKV } from '../../libs/storage/index.js';
import { type CommitOptions, EventBus, silentLogger } from '../../libs/types/index.js';
import { CHAIN_ID, GENESIS_TIME, PARAMS, TIMEOUTS, testKey, validatorsOf } from './helpers.js';

const dirs: string[] = [];
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** A MemoryKV that remembers its writes, to rebuild what a power failure would leave: the synced ones and all before them. */
class PowerKV extends MemoryKV {
  readonly log: Array<{ ops: BatchOp[]; sync: boolean }> = [];
  override async write(ops: BatchOp[], options?: { sync?: boolean }): Promise<void> {
    this.log.push({ ops, sync: options?.sync === true });
    await super.write(ops);
  }
  /** The store after a power failure now: up to and including the last synced write (RocksDB's WAL fsync covers all before it). */
  async durable(): Promise<PowerKV> {
    let last = -1;
    this.log.forEach((w, i) => {
      if (w.sync) last = i;
    });
    const copy = new PowerKV();
    for (const w of this.log.slice(0, last + 1)) await copy.write(w.ops, { sync: w.sync });
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
  /** Each application commit: its height, whether it asked for durability, and what a power failure at that moment would keep. */
  commits: Array<{ height: number; durable: boolean; blockOnDisk: number; resultsOnDisk: boolean }>;
}

/** Wraps the app's commit to check, at each commit, what is on disk already. */
function recordCommits(s: Synced): void {
  const real = s.app.commit.bind(s.app);
  s.app.commit = async (o?: CommitOptions) => {
    const height = s.app.height + 1;
    const blocks = await BlockStore.open(await s.blockKV.durable());
    const results = await new StateStore(await s.stateKV.durable()).loadResults(height);
    s.commits.push({
      height,
      durable: o?.durable !== false,
      blockOnDisk: blocks.height,
      resultsOnDisk: results !== undefined,
    });
    return real();
  };
}

describe('block sync: fewer fsyncs while catching up, and a power failure during it', () => {
  it('fsyncs only the block and its results before each commit, and restarts cleanly from what was synced', async () => {
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

    const s: Synced = { app: new TestApp(), blockKV: new PowerKV(), stateKV: new PowerKV(), commits: [] };
    recordCommits(s);
    // The power failure: while block 15 executes, its block store write already synced, the state
    // of 14 not yet (it is synced with the results of 15).
    let crash: { blockKV: PowerKV; stateKV: PowerKV; appHeight: number; lastDurable: number } | undefined;
    const finalize = s.app.finalizeBlock.bind(s.app);
    s.app.finalizeBlock = async (req) => {
      if (req.height === 15 && !crash) {
        await new Promise((r) => setImmediate(r));
        crash = {
          blockKV: await s.blockKV.durable(),
          stateKV: await s.stateKV.durable(),
          appHeight: s.app.height,
          lastDurable: Math.max(0, ...s.commits.filter((c) => c.durable).map((c) => c.height)),
        };
      }
      return finalize(req);
    };
    const sOpts = baseOpts(join(dir, 's'), s.app, { blockStore: s.blockKV, stateStore: s.stateKV });
    const first = await ConsensusRuntime.create({ ...sOpts, network: net.b });
    await first.start();
    await first.waitForHeight(20, 30_000);
    await first.stop();

    // Every commit while catching up skipped its own fsync, but only after the block and its results were on disk.
    assert.ok(s.commits.length >= 20);
    const fast = s.commits.filter((c) => !c.durable);
    assert.ok(fast.length >= 15, `${fast.length} of ${s.commits.length} commits took the fast path`);
    for (const c of s.commits) {
      assert.ok(
        c.blockOnDisk >= c.height,
        `block ${c.height} was on disk before its commit (${c.blockOnDisk})`,
      );
      assert.ok(c.resultsOnDisk, `results of ${c.height} were on disk before its commit`);
    }

    // Power failure at that moment: the stores keep their synced writes; two ways the application may come back.
    assert.ok(crash, 'block 15 was synced');
    const { blockKV: lostBlocks, stateKV: lostState, appHeight, lastDurable } = crash;
    for (const appCameBack of ['at its last durable commit', 'with every commit (the OS wrote them)']) {
      const app = new TestApp();
      // Rebuild the application's commits up to where this case leaves it, from the validator's blocks.
      const to = appCameBack.startsWith('at') ? lastDurable : appHeight;
      await app.initChain({
        chainId: CHAIN_ID,
        time: GENESIS_TIME,
        initialHeight: 1,
        validators: validatorsOf([key]),
        consensusParams: PARAMS,
        appState: { test: true },
      });
      for (let h = 1; h <= to; h++) {
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
      const blockKV = await lostBlocks.durable();
      const stateKV = await lostState.durable();
      const stateBefore = (await new StateStore(stateKV).loadState())?.lastBlockHeight ?? 0;
      const storeBefore = (await BlockStore.open(blockKV)).height;
      assert.equal(storeBefore, 15, 'block 15 was on disk');
      assert.equal(stateBefore, 13, 'the state of 14 was not (two blocks behind the block store)');
      const again = await ConsensusRuntime.create({
        ...sOpts,
        app,
        blockStore: blockKV,
        stateStore: stateKV,
        network: net.b,
      });
      assert.equal(
        again.chainState().lastBlockHeight,
        (await BlockStore.open(blockKV)).height,
        `${appCameBack} (state on disk ${stateBefore}): the handshake brought the state to the block store`,
      );
      await again.start();
      const tip = v.blockStoreHeight();
      await again.waitForHeight(tip, 30_000);
      await again.stop();
      for (let h = 1; h <= tip; h++) {
        const a = await v.loadBlockMeta(h);
        const b = await again.loadBlockMeta(h);
        assert.deepEqual(b?.blockId.hash, a?.blockId.hash, `${appCameBack}: block ${h}`);
      }
      // The application rebuilt by the handshake and sync holds the validator's app hash at its height.
      await v.waitForHeight(app.height + 1, 10_000);
      const next = await v.loadBlockMeta(app.height + 1);
      assert.ok(next, `the validator has block ${app.height + 1}`);
      assert.deepEqual(app.appHash, next.header.appHash, `${appCameBack}: app hash at ${app.height}`);
    }
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
