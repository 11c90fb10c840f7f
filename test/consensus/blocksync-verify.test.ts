// Block sync's commit signatures checked ahead on a worker thread (runtime/commit-verifier.ts,
// docs/p2p.md "Block sync"): a chain of four validators (each commit four signatures) is made by four
// runtimes over an in-memory network, then a fresh node syncs it over the block sync protocol from a
// runtime serving the first validator's stores. Every signature the node checks must be answered by
// the thread's verdicts, no block may reach the application before its commit's verdict is in, and a
// commit with one bad signature among four, or one short of a signature, is refused with the
// engine's own reason and its peer reported, as without the thread.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { validatorKeyJson } from '@noded/config';
import {
  type BlockSyncMessage,
  type BlockSyncNetwork,
  type ConsensusMessage,
  type ConsensusNetwork,
  ConsensusRuntime,
  type ConsensusRuntimeOptions,
  TestApp,
  voteSignBytes,
} from '@noded/consensus';
import { CommitVerifier } from '@noded/consensus/src/runtime/commit-verifier.js';
import { ed25519Verify } from '@noded/crypto';
import { MemoryKV } from '@noded/storage';
import type { Commit } from '@noded/types';
import { EventBus, type Logger, silentLogger } from '@noded/types';
import { CHAIN_ID, GENESIS_TIME, genesis, PARAMS, signedVote, testKey, validatorsOf } from './helpers.js';

const dirs: string[] = [];
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

const KEYS = [0, 1, 2, 3].map((i) => testKey(40 + i));
const FAST = {
  propose: 300,
  proposeDelta: 50,
  prevote: 100,
  prevoteDelta: 20,
  precommit: 100,
  precommitDelta: 20,
  commit: 5,
};
const TOP = 12;

function opts(dir: string, app: TestApp, over: Partial<ConsensusRuntimeOptions>): ConsensusRuntimeOptions {
  return {
    chainId: CHAIN_ID,
    genesis: {
      time: GENESIS_TIME,
      initialHeight: 1,
      validators: validatorsOf(KEYS),
      consensusParams: PARAMS,
      appState: { test: true },
    },
    timeouts: FAST,
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

/** A full mesh of `n` in-memory consensus endpoints; messages arrive on a later turn of the event loop. */
function mesh(n: number): ConsensusNetwork[] {
  const handlers = new Map<number, (peer: string, m: ConsensusMessage) => void>();
  return Array.from({ length: n }, (_, self) => ({
    broadcast: (m: ConsensusMessage) => {
      for (let o = 0; o < n; o++) if (o !== self) setImmediate(() => handlers.get(o)?.(`v${self}`, m));
    },
    send: (peer: string, m: ConsensusMessage) => {
      const o = Number(peer.slice(1));
      setImmediate(() => handlers.get(o)?.(`v${self}`, m));
    },
    subscribe: (h: (peer: string, m: ConsensusMessage) => void) => {
      handlers.set(self, h);
      return () => handlers.delete(self);
    },
  }));
}

/** The four validators' chain, at least TOP blocks; the first validator's stores and application. */
async function chainOfFour(dir: string): Promise<{ blockKV: MemoryKV; stateKV: MemoryKV; app: TestApp }> {
  const nets = mesh(KEYS.length);
  const nodes = await Promise.all(
    KEYS.map(async (k, i) => {
      const keyFile = join(dir, `v${i}_key.json`);
      writeFileSync(keyFile, validatorKeyJson({ seed: k.seed, publicKey: k.publicKey }));
      const s = { blockKV: new MemoryKV(), stateKV: new MemoryKV(), app: new TestApp() };
      const rt = await ConsensusRuntime.create(
        opts(join(dir, `v${i}`), s.app, {
          privValidator: { keyFile, stateFile: join(dir, `v${i}_state.json`) },
          blockStore: s.blockKV,
          stateStore: s.stateKV,
          network: nets[i],
        }),
      );
      return { ...s, rt };
    }),
  );
  for (const n of nodes) await n.rt.start();
  await nodes[0]!.rt.waitForHeight(TOP + 1, 60_000);
  for (const n of nodes) await n.rt.stop();
  return nodes[0]!;
}

/** Two endpoints of an in-memory block sync protocol; what A sends goes through `tamper`; B's reports are kept. */
/** A runtime in dir/serve answering block sync for `chain` on `net.a`, started; `top` is its height. */
async function serveChain(
  dir: string,
  chain: Awaited<ReturnType<typeof chainOfFour>>,
  net: ReturnType<typeof syncLink>,
): Promise<{ server: ConsensusRuntime; top: number }> {
  mkdirSync(join(dir, 'serve'));
  const server = await ConsensusRuntime.create(
    opts(join(dir, 'serve'), chain.app, {
      blockStore: chain.blockKV,
      stateStore: chain.stateKV,
      blockSync: net.a,
    }),
  );
  await server.start();
  return { server, top: server.blockStoreHeight() };
}

/** Block message `m` with signature `index` of its commit forged: `mask` flipped in its byte `at`. */
function forgeSignature<M extends Extract<BlockSyncMessage, { kind: 'block' }>>(
  m: M,
  index: number,
  at: number,
  mask: number,
): M {
  const signatures = m.commit.signatures.map((s, i) => {
    if (i !== index) return s;
    const bad = new Uint8Array(s.signature);
    bad[at]! ^= mask;
    return { ...s, signature: bad };
  });
  return { ...m, commit: { ...m.commit, signatures } };
}

/** `onReport` is called as B reports A, before B goes on: what B had stored and applied then. */
function syncLink(
  tamper: (m: BlockSyncMessage) => BlockSyncMessage,
  onReport?: (reason: string) => void,
): {
  a: BlockSyncNetwork;
  b: BlockSyncNetwork;
  reports: string[];
} {
  const handlers = new Map<string, (peer: string, m: BlockSyncMessage) => void>();
  const reports: string[] = [];
  const end = (self: string, other: string): BlockSyncNetwork => {
    const deliver = (m: BlockSyncMessage) => {
      const t = self === 'a' ? tamper(m) : m;
      setImmediate(() => handlers.get(other)?.(self, t));
    };
    return {
      broadcast: deliver,
      send: (_peer, m) => deliver(m),
      subscribe: (h) => {
        handlers.set(self, h);
        return () => handlers.delete(self);
      },
      report: (_peer, reason) => {
        if (self !== 'b') return;
        reports.push(reason);
        onReport?.(reason);
      },
    };
  };
  return { a: end('a', 'b'), b: end('b', 'a'), reports };
}

/** A logger that keeps the `block sync progress` lines. */
function progressLogger(lines: Array<Record<string, number>>): Logger {
  const info = (obj: object | string, msg?: string) => {
    if (typeof obj === 'object' && msg === 'block sync progress') lines.push(obj as Record<string, number>);
  };
  const l: Logger = { ...silentLogger, info: info as Logger['info'], child: () => l };
  return l;
}

describe('block sync: commit signatures checked ahead on a worker thread', () => {
  it('answers every signature of a 4-validator chain from the thread, applies no block before its verdict, and refuses a bad or a short commit as before', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'noded-bsync-verify-'));
    dirs.push(dir);
    const chain = await chainOfFour(dir);

    // What A sends B: block 5 with the third of its four signatures forged (one byte flipped),
    // then block 7 with its commit one signature short (each once), then everything as it is. B
    // asks again at once after each refusal, so the next stage is set, and what B had stored and
    // applied is read, as B reports A.
    let mode: 'forge' | 'short' | 'honest' = 'forge';
    const sent: Record<string, number> = { forge: 0, short: 0 };
    const app = new TestApp();
    let rt: ConsensusRuntime | undefined;
    const atReport: Array<{ reason: string; stored: number; applied: number }> = [];
    const net = syncLink(
      (m) => {
        if (m.kind !== 'block') return m;
        const h = m.block.header.height;
        if (mode === 'forge' && h === 5 && sent.forge === 0) {
          sent.forge!++;
          return forgeSignature(m, 2, 10, 0x01);
        }
        if (mode === 'short' && h === 7 && sent.short === 0) {
          sent.short!++;
          return { ...m, commit: { ...m.commit, signatures: m.commit.signatures.slice(0, 3) } };
        }
        return m;
      },
      (reason) => {
        atReport.push({ reason, stored: rt?.blockStoreHeight() ?? -1, applied: app.height });
        if (reason.startsWith('commit 5:')) mode = 'short';
        else if (reason.startsWith('commit 7:')) mode = 'honest';
      },
    );
    const { server, top } = await serveChain(dir, chain, net);
    assert.ok(top >= TOP, `the validators made ${top} blocks`);

    const lines: Array<Record<string, number>> = [];
    const node = opts(join(dir, 'node'), app, { blockSync: net.b, logger: progressLogger(lines) });
    rt = await ConsensusRuntime.create(node);
    // Every block handed to the application: its height, and where its commit stood on the thread then.
    const applied: Array<{ height: number; check: string | undefined }> = [];
    const finalize = app.finalizeBlock.bind(app);
    app.finalizeBlock = async (req) => {
      applied.push({ height: req.height, check: rt.blockSyncCommitCheck(req.height) });
      return finalize(req);
    };
    await rt.start();

    const waitReport = async (re: RegExp) => {
      const deadline = Date.now() + 30_000;
      while (!net.reports.some((r) => re.test(r)) && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 10));
      assert.ok(
        net.reports.some((r) => re.test(r)),
        `a report matching ${re} (got ${JSON.stringify(net.reports)})`,
      );
    };
    await waitReport(/^commit 5: commit for height 5: signature 2 is invalid$/);
    await waitReport(/^commit 7: commit for height 7: has 3 signatures for 4 validators$/);
    const forged = atReport.find((r) => r.reason.startsWith('commit 5:'))!;
    assert.ok(
      forged.stored >= 0 && forged.stored < 5,
      `the block with the forged signature was not stored: ${JSON.stringify(forged)}`,
    );
    assert.ok(forged.applied < 5, `nor applied: ${JSON.stringify(forged)}`);
    const short = atReport.find((r) => r.reason.startsWith('commit 7:'))!;
    assert.ok(
      short.stored >= 0 && short.stored < 7,
      `the block with the short commit was not stored: ${JSON.stringify(short)}`,
    );
    assert.ok(short.applied < 7, `nor applied: ${JSON.stringify(short)}`);
    await rt.waitForHeight(top, 30_000);
    await rt.stop();
    await server.stop();

    assert.ok(sent.forge === 1 && sent.short === 1, 'both tampered blocks went out, once each');
    assert.equal(net.reports.length, 2, `exactly the two refusals: ${JSON.stringify(net.reports)}`);
    assert.deepEqual(
      applied.map((a) => a.height),
      Array.from({ length: top }, (_, i) => i + 1),
      'each height applied once, in order',
    );
    for (const a of applied)
      assert.equal(a.check, 'done', `block ${a.height} reached the application after its commit's verdict`);
    for (let h = 1; h <= top; h++)
      assert.deepEqual(
        (await rt.loadBlockMeta(h))?.blockId.hash,
        (await server.loadBlockMeta(h))?.blockId.hash,
        `block ${h} is the validators'`,
      );
    // Every signature check of the synced blocks (and of the refused ones) was the thread's verdict.
    const ahead = lines.reduce((s, l) => s + (l.sigsAhead ?? 0), 0);
    const inline = lines.reduce((s, l) => s + (l.sigsInline ?? 0), 0);
    assert.equal(inline, 0, 'no signature was checked on the main thread');
    assert.ok(ahead >= 4 * top, `${ahead} signatures answered by the thread for ${top} blocks of four`);
  });

  it('checks inline, with the same refusal, when the thread is off', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'noded-bsync-verify-'));
    dirs.push(dir);
    const chain = await chainOfFour(dir);
    let forge = true;
    const net = syncLink((m) => {
      if (m.kind !== 'block' || !forge || m.block.header.height !== 3) return m;
      return forgeSignature(m, 0, 0, 0x80);
    });
    const { server, top } = await serveChain(dir, chain, net);
    const lines: Array<Record<string, number>> = [];
    const app = new TestApp();
    const rt = await ConsensusRuntime.create(
      opts(join(dir, 'node'), app, {
        blockSync: net.b,
        blockSyncVerifyThread: false,
        logger: progressLogger(lines),
      }),
    );
    await rt.start();
    const deadline = Date.now() + 30_000;
    while (net.reports.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    assert.deepEqual(net.reports, ['commit 3: commit for height 3: signature 0 is invalid']);
    assert.equal(app.height, 2, 'block 3 with the forged commit was not applied');
    forge = false;
    await rt.waitForHeight(top, 30_000);
    await rt.stop();
    await server.stop();
    assert.equal(rt.blockSyncCommitCheck(top), undefined, 'nothing went to a thread');
    assert.equal(
      lines.some((l) => 'sigsAhead' in l),
      false,
      'no thread counts in the progress lines',
    );
  });

  it('stops the thread once the node is caught up, and starts it again when the node falls behind', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'noded-bsync-verify-'));
    dirs.push(dir);
    const chain = await chainOfFour(dir);
    // The server's statuses say it stores up to `cap`: first half the chain, then all of it, as if
    // the chain had moved on while the node was at the tip.
    let cap = 6;
    const net = syncLink((m) => (m.kind === 'status' ? { ...m, height: Math.min(m.height, cap) } : m));
    const { server, top } = await serveChain(dir, chain, net);
    assert.ok(top >= TOP, `the validators made ${top} blocks`);
    const lines: Array<Record<string, number>> = [];
    const app = new TestApp();
    const rt = await ConsensusRuntime.create(
      opts(join(dir, 'node'), app, { blockSync: net.b, logger: progressLogger(lines) }),
    );
    const until = async (what: string, ok: () => boolean) => {
      const deadline = Date.now() + 30_000;
      while (!ok() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
      assert.ok(ok(), what);
    };
    const ahead = () => lines.reduce((s, l) => s + (l.sigsAhead ?? 0), 0);
    try {
      assert.equal(rt.blockSyncVerifierRunning(), false, 'no thread before any block');
      await rt.start();
      await until('the thread runs while the node catches up', () => rt.blockSyncVerifierRunning());
      await rt.waitForHeight(cap, 30_000);
      await until('the thread is stopped at the tip', () => !rt.blockSyncVerifierRunning());
      assert.equal(app.height, cap, 'the node applied every block up to the cap');
      const first = ahead();
      assert.ok(first >= 4 * (cap - 1), `${first} signatures answered by the first thread`);
      // Still at the tip a while later: the thread stays stopped (not restarted by the status rounds).
      await new Promise((r) => setTimeout(r, 1500));
      assert.equal(rt.blockSyncVerifierRunning(), false, 'no thread while nothing is behind');

      cap = top;
      await until('the thread runs again once the node is behind', () => rt.blockSyncVerifierRunning());
      await rt.waitForHeight(top, 30_000);
      assert.ok(ahead() > first, `the new thread answered signatures (${ahead() - first})`);
      await until('and is stopped again at the tip', () => !rt.blockSyncVerifierRunning());
      for (let h = 1; h <= top; h++)
        assert.deepEqual(
          (await rt.loadBlockMeta(h))?.blockId.hash,
          (await server.loadBlockMeta(h))?.blockId.hash,
          `block ${h} is the validators'`,
        );
    } finally {
      await rt.stop();
      await server.stop();
    }
  });
});

describe('CommitVerifier: the thread itself', () => {
  it('gives a verdict for each of four signatures, the forged one false, and answers only the exact key, message and signature it checked', async () => {
    const chain = genesis(KEYS);
    const blockId = {
      hash: new Uint8Array(32).fill(7),
      partSetHeader: { total: 1, hash: new Uint8Array(32).fill(8) },
    };
    // In the set's order (by power, then address), as a commit holds them.
    const keys = [...KEYS].sort(
      (x, y) => chain.validators.indexOf(x.address) - chain.validators.indexOf(y.address),
    );
    const votes = keys.map((k) => signedVote(chain, k, 2, 3, 0, blockId));
    const commit: Commit = {
      height: 3,
      round: 0,
      blockId,
      signatures: votes.map((v) => ({
        blockIdFlag: 2 as const,
        validatorAddress: v.validatorAddress,
        timestamp: v.timestamp,
        signature: v.signature,
      })),
    };
    const forged = new Uint8Array(votes[1]!.signature);
    forged[5]! ^= 0x04;
    commit.signatures[1] = { ...commit.signatures[1]!, signature: forged };

    const done: number[] = [];
    let wake: () => void = () => {};
    const verifier = new CommitVerifier(
      CHAIN_ID,
      (h) => {
        done.push(h);
        wake();
      },
      silentLogger,
    );
    try {
      verifier.submit(3, commit, chain.validators);
      assert.equal(verifier.status(3), 'pending');
      await new Promise<void>((r) => {
        wake = r;
        if (done.length > 0) r();
        setTimeout(r, 10_000);
      });
      assert.deepEqual(done, [3]);
      assert.equal(verifier.status(3), 'done');
      keys.forEach((k, i) => {
        const msg = voteSignBytes(CHAIN_ID, votes[i]!);
        const sig = commit.signatures[i]!.signature;
        assert.equal(verifier.lookup(k.publicKey, msg, sig), i !== 1, `verdict of signature ${i}`);
        assert.equal(ed25519Verify(k.publicKey, msg, sig), i !== 1, `node:crypto agrees on signature ${i}`);
      });
      // Another message under a checked signature, or another key: no verdict (the caller checks).
      const other = voteSignBytes(CHAIN_ID, { ...votes[0]!, round: 1 });
      assert.equal(verifier.lookup(keys[0]!.publicKey, other, commit.signatures[0]!.signature), undefined);
      assert.equal(
        verifier.lookup(
          keys[2]!.publicKey,
          voteSignBytes(CHAIN_ID, votes[0]!),
          commit.signatures[0]!.signature,
        ),
        undefined,
      );
      assert.deepEqual(verifier.take(), { ahead: 4, inline: 2 });
      // A commit short of a signature is not sent: the engine refuses it by its count.
      verifier.submit(
        4,
        { ...commit, height: 4, signatures: commit.signatures.slice(0, 3) },
        chain.validators,
      );
      assert.equal(verifier.status(4), undefined);
      verifier.forgetBelow(4);
      assert.equal(verifier.status(3), undefined);
      assert.equal(
        verifier.lookup(
          keys[0]!.publicKey,
          voteSignBytes(CHAIN_ID, votes[0]!),
          commit.signatures[0]!.signature,
        ),
        undefined,
        'forgotten once applied',
      );
    } finally {
      await verifier.close();
    }
  });
  it('never holds the process open: a process whose thread runs, its answer taken, exits on its own', () => {
    // A child process starts the thread with one commit and waits for its verdict (a timer holds
    // it until then); after that nothing else keeps its event loop alive, so it must exit while the
    // thread still runs (the thread and its reply port are unref'd).
    const lib = new URL('../../libs/consensus/src/runtime/commit-verifier.js', import.meta.url).href;
    const helpers = new URL('./helpers.js', import.meta.url).href;
    const child = `
      import { CommitVerifier } from ${JSON.stringify(lib)};
      import { genesis, signedVote, testKey } from ${JSON.stringify(helpers)};
      const keys = [0, 1, 2, 3].map((i) => testKey(40 + i));
      const chain = genesis(keys);
      const blockId = { hash: new Uint8Array(32).fill(7), partSetHeader: { total: 1, hash: new Uint8Array(32).fill(8) } };
      const sorted = [...keys].sort((x, y) => chain.validators.indexOf(x.address) - chain.validators.indexOf(y.address));
      const signatures = sorted.map((k) => {
        const v = signedVote(chain, k, 2, 3, 0, blockId);
        return { blockIdFlag: 2, validatorAddress: v.validatorAddress, timestamp: v.timestamp, signature: v.signature };
      });
      // Holds the process until the answer (the thread itself does not).
      const hold = setTimeout(() => process.stdout.write('no answer\\n'), 10_000);
      const v = new CommitVerifier(${JSON.stringify(CHAIN_ID)}, (h) => {
        clearTimeout(hold);
        process.stdout.write('answered ' + h + ' ' + v.running + '\\n');
      }, { debug() {}, info() {}, warn() {}, error() {}, child() { return this; } });
      v.submit(3, { height: 3, round: 0, blockId, signatures }, chain.validators);
    `;
    // A file, not `-e`: the thread would inherit `--input-type` and fail to start.
    const dir = mkdtempSync(join(tmpdir(), 'noded-bsync-verify-'));
    dirs.push(dir);
    writeFileSync(join(dir, 'child.mjs'), child);
    const r = spawnSync(process.execPath, [join(dir, 'child.mjs')], {
      encoding: 'utf8',
      timeout: 15_000,
    });
    assert.equal(r.error, undefined, `the process exited by itself (${r.error?.message})`);
    assert.equal(r.status, 0, `exit code (stderr: ${r.stderr})`);
    assert.equal(r.stdout, 'answered 3 true\n', 'the thread answered, and was still running at exit');
  });
});
