// Vote extensions (ABCI 2.0): encodings, the checks a precommit passes before it is counted, the
// signer, the WAL, the live runtime (extendVote, verifyVoteExtension, the extended commit handed to
// PrepareProposal and kept across a restart) and the simulator with extensions on.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { validatorKeyJson } from '@noded/config';
import {
  type ConsensusMessage,
  type ConsensusNetwork,
  ConsensusRuntime,
  type ConsensusRuntimeOptions,
  decodeConsensusMessage,
  decodeExtendedCommit,
  decodeVote,
  type EngineEvent,
  type EngineState,
  encodeCommit,
  encodeConsensusMessage,
  encodeExtendedCommit,
  encodeVote,
  FilePV,
  genesisChainState,
  isValidTestVoteExtension,
  MAX_VOTE_EXTENSION_BYTES,
  makeBlock,
  makeDuplicateVoteEvidence,
  NodeFs,
  runSimulation,
  runSweep,
  type SimResult,
  step,
  TestApp,
  testVoteExtension,
  VoteSet,
  voteExtensionSignBytes,
  voteExtensionsEnabled,
  voteSignBytes,
  Wal,
} from '@noded/consensus';
import { ed25519Sign, ed25519Verify, sha256 } from '@noded/crypto';
import { MemoryKV } from '@noded/storage';
import { type Commit, EventBus, type Logger, silentLogger, type Vote } from '@noded/types';
import {
  CHAIN_ID,
  config,
  Driver,
  GENESIS_TIME,
  MS,
  PARAMS,
  signedProposal,
  signedVote,
  TIMEOUTS,
  testKey,
  validatorsOf,
} from './helpers.js';

const dirs: string[] = [];
function tmp(): string {
  const d = mkdtempSync(join(tmpdir(), 'noded-vx-'));
  dirs.push(d);
  return d;
}
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

const enc = new TextEncoder();
const keys = [0, 1, 2, 3].map(testKey);

function extChain(enableHeight = 1n) {
  return genesisChainState(
    {
      chainId: CHAIN_ID,
      time: GENESIS_TIME,
      initialHeight: 1,
      validators: validatorsOf(keys),
      consensusParams: { ...PARAMS, abci: { voteExtensionsEnableHeight: enableHeight } },
    },
    sha256(enc.encode('app-genesis')),
  );
}

const blockId = {
  hash: sha256(enc.encode('block')),
  partSetHeader: { total: 1, hash: sha256(enc.encode('parts')) },
};

/** A precommit for `blockId` by keys[i], its extension signed (or `extSig` given). */
function extendedPrecommit(
  i: number,
  extension: Uint8Array,
  opts: { height?: number; round?: number; extSig?: Uint8Array } = {},
): Vote {
  const chain = extChain();
  const v = signedVote(chain, keys[i]!, 2, opts.height ?? 1, opts.round ?? 0, blockId);
  const extensionSignature =
    opts.extSig ??
    ed25519Sign(
      keys[i]!.seed,
      voteExtensionSignBytes(CHAIN_ID, { height: v.height, round: v.round, extension }),
    );
  return { ...v, extension, extensionSignature };
}

describe('vote extension encodings', () => {
  it('signs CanonicalVoteExtension: length-delimited extension, sfixed64 height and round, chain id', () => {
    const bytes = voteExtensionSignBytes('test_chain_id', {
      height: 1,
      round: 2,
      extension: enc.encode('ext'),
    });
    const body = [
      [0x0a, 3, ...enc.encode('ext')],
      [0x11, 1, 0, 0, 0, 0, 0, 0, 0],
      [0x19, 2, 0, 0, 0, 0, 0, 0, 0],
      [0x22, 13, ...enc.encode('test_chain_id')],
    ].flat();
    assert.deepEqual([...bytes], [body.length, ...body]);
    // Height, round and chain id are bound: none of them can be swapped.
    const other = voteExtensionSignBytes('test_chain_id', {
      height: 2,
      round: 2,
      extension: enc.encode('ext'),
    });
    assert.notDeepEqual(other, bytes);
  });

  it('carries extension and extension signature in Vote fields 9 and 10 (P2P and WAL) and nothing when absent', () => {
    const v = extendedPrecommit(1, enc.encode('hello'));
    const back = decodeVote(encodeVote(v));
    assert.deepEqual(back, v);
    const msg: ConsensusMessage = { kind: 'vote', vote: v };
    assert.deepEqual(decodeConsensusMessage(encodeConsensusMessage(msg)), msg);
    const plain = signedVote(extChain(), keys[1]!, 2, 1, 0, blockId);
    const plainBytes = encodeVote(plain);
    assert.deepEqual(decodeVote(plainBytes), plain, 'no extension keys appear');
    assert.ok(encodeVote(v).length > plainBytes.length + 64 + 5);
  });

  it('keeps extensions in the stored extended commit but never in the Commit that is hashed', () => {
    const v = extendedPrecommit(1, enc.encode('deposit-1'));
    const extended: Commit = {
      height: 1,
      round: 0,
      blockId,
      signatures: [
        {
          blockIdFlag: 2,
          validatorAddress: v.validatorAddress,
          timestamp: v.timestamp,
          signature: v.signature,
          extension: v.extension!,
          extensionSignature: v.extensionSignature!,
        },
        { blockIdFlag: 1, validatorAddress: new Uint8Array(0), timestamp: 0n, signature: new Uint8Array(0) },
      ],
    };
    assert.deepEqual(decodeExtendedCommit(encodeExtendedCommit(extended)), extended);
    const { extension: _e, extensionSignature: _s, ...bare } = extended.signatures[0]!;
    const plain: Commit = { ...extended, signatures: [bare, extended.signatures[1]!] };
    assert.deepEqual(encodeCommit(extended), encodeCommit(plain));
    // A block sync message carries the extended commit beside the plain one (field 3), or none.
    const block = makeBlock(extChain(), {
      height: 1,
      time: GENESIS_TIME,
      txs: [],
      evidence: [],
      lastCommit: null,
      proposerAddress: keys[0]!.address,
    });
    const withExt: ConsensusMessage = { kind: 'commit', block, commit: plain, extendedCommit: extended };
    assert.deepEqual(decodeConsensusMessage(encodeConsensusMessage(withExt)), withExt);
    const without: ConsensusMessage = { kind: 'commit', block, commit: plain };
    assert.deepEqual(decodeConsensusMessage(encodeConsensusMessage(without)), without);
  });

  it('leaves extensions out of duplicate-vote evidence', () => {
    const a = extendedPrecommit(1, enc.encode('a'));
    const b = { ...signedVote(extChain(), keys[1]!, 2, 1, 0, null) };
    const ev = makeDuplicateVoteEvidence(a, b, GENESIS_TIME, extChain().validators);
    for (const v of [ev.voteA, ev.voteB]) {
      assert.equal(v.extension, undefined);
      assert.equal(v.extensionSignature, undefined);
    }
  });
});

describe('VoteSet with vote extensions', () => {
  const set = (enabled: boolean) => new VoteSet(CHAIN_ID, 1, 0, 2, extChain().validators, enabled);

  it('counts a non-nil precommit only with a signed extension within the size cap', () => {
    const s = set(true);
    assert.deepEqual(s.add(extendedPrecommit(0, enc.encode('ok')), ed25519Verify), { status: 'added' });
    assert.deepEqual(s.add(extendedPrecommit(1, new Uint8Array(0)), ed25519Verify), { status: 'added' });
    const noSig = { ...extendedPrecommit(2, enc.encode('x')), extensionSignature: new Uint8Array(0) };
    assert.deepEqual(s.add(noSig, ed25519Verify), {
      status: 'invalid',
      reason: 'precommit without a vote extension signature',
    });
    const tampered = { ...extendedPrecommit(2, enc.encode('x')), extension: enc.encode('y') };
    assert.deepEqual(s.add(tampered, ed25519Verify), {
      status: 'invalid',
      reason: 'invalid vote extension signature',
    });
    const big = extendedPrecommit(3, new Uint8Array(MAX_VOTE_EXTENSION_BYTES + 1));
    assert.deepEqual(s.add(big, ed25519Verify), {
      status: 'invalid',
      reason: `vote extension is ${MAX_VOTE_EXTENSION_BYTES + 1} bytes, over the limit of ${MAX_VOTE_EXTENSION_BYTES}`,
    });
    assert.equal(
      s.add(extendedPrecommit(3, new Uint8Array(MAX_VOTE_EXTENSION_BYTES)), ed25519Verify).status,
      'added',
    );
    assert.equal(s.sum, 30n, 'three precommits counted, the refused ones not');
    const c = s.makeExtendedCommit(blockId);
    const at = (i: number) => extChain().validators.indexOf(keys[i]!.address);
    assert.deepEqual(c.signatures[at(0)]!.extension, enc.encode('ok'));
    assert.equal(c.signatures[at(0)]!.extensionSignature!.length, 64);
    assert.equal(c.signatures[at(2)]!.blockIdFlag, 1, 'the refused precommit is absent');
    assert.equal(s.makeCommit(blockId).signatures[at(0)]!.extension, undefined);
  });

  it('refuses extensions on nil precommits, and any extension where they are off', () => {
    const withExt = (v: Vote): Vote => ({
      ...v,
      extension: enc.encode('e'),
      extensionSignature: new Uint8Array(64),
    });
    const nil = withExt(signedVote(extChain(), keys[0]!, 2, 1, 0, null));
    assert.deepEqual(set(true).add(nil, ed25519Verify), {
      status: 'invalid',
      reason: 'a prevote or nil precommit carries a vote extension',
    });
    assert.deepEqual(set(false).add(extendedPrecommit(0, enc.encode('e')), ed25519Verify), {
      status: 'invalid',
      reason: 'vote extensions are not enabled at height 1, but the vote carries one',
    });
    assert.equal(
      set(false).add(signedVote(extChain(), keys[0]!, 2, 1, 0, blockId), ed25519Verify).status,
      'added',
    );
  });

  it('turns on at vote_extensions_enable_height (0 never)', () => {
    const p = (h: bigint) => ({ ...PARAMS, abci: { voteExtensionsEnableHeight: h } });
    assert.equal(voteExtensionsEnabled(p(0n), 1), false);
    assert.equal(voteExtensionsEnabled(p(5n), 4), false);
    assert.equal(voteExtensionsEnabled(p(5n), 5), true);
    assert.equal(voteExtensionsEnabled(p(5n), 6), true);
  });
});

describe('engine with vote extensions', () => {
  it('asks to extend only its non-nil precommits and rejects a peer precommit with a forged extension', () => {
    const chain = extChain();
    const d = new Driver(config(keys[1]!), chain);
    const proposer = keys.find((k) =>
      k.address.every((b, i) => b === chain.validators.proposerForRound(0).address[i]),
    )!;
    d.send((now) => ({ kind: 'start', now }));
    const b = block1(chain, proposer);
    const effs = d.propose(signedProposal(proposer, b, 0), b);
    const prevote = effs.find((e) => e.kind === 'signVote');
    assert.ok(prevote && prevote.kind === 'signVote');
    assert.equal(prevote.vote.type, 1);
    assert.equal(prevote.extend, false);
    const pid = prevote.vote.blockId;
    // Polka from the others: our precommit for the block is due and must be extended.
    const more = [0, 2, 3].flatMap((i) => d.vote(signedVote(chain, keys[i]!, 1, 1, 0, pid)));
    const pc = more.find((e) => e.kind === 'signVote');
    assert.ok(pc && pc.kind === 'signVote');
    assert.equal(pc.vote.type, 2);
    assert.equal(pc.extend, true);
    const good = signedVote(chain, keys[0]!, 2, 1, 0, pid);
    const forged = {
      ...good,
      extension: enc.encode('x'),
      extensionSignature: ed25519Sign(
        keys[2]!.seed,
        voteExtensionSignBytes(CHAIN_ID, { height: 1, round: 0, extension: enc.encode('x') }),
      ),
    };
    const rej = d.vote(forged);
    assert.deepEqual(
      rej.filter((e) => e.kind === 'rejected'),
      [{ kind: 'rejected', reason: 'vote 1/0/2: invalid vote extension signature' }],
    );
    assert.equal(d.state.votes.precommits(0).get(0), undefined, 'not counted');
  });

  it('keeps a nil precommit unextended', () => {
    const chain = extChain();
    const d = new Driver(config(keys[1]!), chain);
    d.send((now) => ({ kind: 'start', now }));
    const effs = d.send((now) => ({ kind: 'timeout', height: 1, round: 0, step: 'Propose', now }));
    const nilPrevotes = [0, 2, 3].flatMap((i) => d.vote(signedVote(chain, keys[i]!, 1, 1, 0, null)));
    const pc = [...effs, ...nilPrevotes].filter((e) => e.kind === 'signVote').at(-1);
    assert.ok(pc && pc.kind === 'signVote');
    assert.equal(pc.vote.type, 2);
    assert.equal(pc.vote.blockId.hash.length, 0);
    assert.equal(pc.extend, false);
  });
});

function block1(chain: ReturnType<typeof extChain>, proposer: (typeof keys)[number]) {
  return makeBlock(chain, {
    height: 1,
    time: chain.lastBlockTime,
    txs: [enc.encode('k=v')],
    evidence: [],
    lastCommit: null,
    proposerAddress: proposer.address,
  });
}

describe('signer and WAL with vote extensions', () => {
  it('signs the extension beside the vote; the same precommit re-signed carries a new extension signature', async () => {
    const dir = tmp();
    const pv = await FilePV.fromKey(keys[0]!, join(dir, 'pv.json'), new NodeFs());
    const chain = extChain();
    const unsigned = { ...signedVote(chain, keys[0]!, 2, 5, 0, blockId), signature: new Uint8Array(0) };
    const v1 = await pv.signVote(CHAIN_ID, { ...unsigned, extension: enc.encode('one') }, true);
    assert.ok(
      ed25519Verify(keys[0]!.publicKey, voteExtensionSignBytes(CHAIN_ID, v1), v1.extensionSignature!),
    );
    const v2 = await pv.signVote(CHAIN_ID, { ...unsigned, extension: enc.encode('two') }, true);
    assert.deepEqual(v2.signature, v1.signature, 'the vote itself is the stored signature');
    assert.deepEqual(v2.extension, enc.encode('two'));
    assert.ok(
      ed25519Verify(keys[0]!.publicKey, voteExtensionSignBytes(CHAIN_ID, v2), v2.extensionSignature!),
    );
    const prevote = await pv.signVote(CHAIN_ID, { ...unsigned, type: 1, height: 6 });
    assert.equal(prevote.extensionSignature, undefined);
  });

  it('replays own and received precommits with their extensions from the WAL after a restart', async () => {
    const dir = tmp();
    const fs = new NodeFs();
    const wal = await Wal.open(fs, dir, silentLogger);
    const own = extendedPrecommit(0, enc.encode('own'), { height: 2 });
    const peer = extendedPrecommit(1, enc.encode('peer'), { height: 2 });
    await wal.writeEndHeight(1);
    await wal.write(2, { kind: 'ownVote', vote: own, now: GENESIS_TIME }, true);
    await wal.write(2, { kind: 'vote', vote: peer, now: GENESIS_TIME + MS }, false);
    await wal.close();
    await fs.close();
    const fs2 = new NodeFs();
    const again = await Wal.open(fs2, dir, silentLogger);
    const got = again.entriesFor(2).map((r) => r.entry as Extract<EngineEvent, { kind: 'vote' | 'ownVote' }>);
    assert.deepEqual(
      got.map((e) => e.vote),
      [own, peer],
    );
    await again.close();
    await fs2.close();
  });
});

// ---------------------------------------------------------------------------------------------
// The live runtime, one validator (the node's own extension path) and a network port.

const key = testKey(0);

function recorder(): { logger: Logger; lines: string[] } {
  const lines: string[] = [];
  const rec =
    (level: string) =>
    (o: unknown, m?: string): void => {
      lines.push(
        `${level} ${typeof o === 'string' ? o : `${m ?? ''} ${JSON.stringify(o, (_k, v) => (typeof v === 'bigint' ? String(v) : v))}`}`,
      );
    };
  const logger: Logger = {
    trace: () => {},
    debug: () => {},
    info: rec('info') as Logger['info'],
    warn: rec('warn') as Logger['warn'],
    error: rec('error') as Logger['error'],
    child: () => logger,
  };
  return { logger, lines };
}

function runtimeOpts(enableHeight: bigint, over: Partial<ConsensusRuntimeOptions> = {}) {
  const dir = tmp();
  const keyFile = join(dir, 'priv_validator_key.json');
  writeFileSync(keyFile, validatorKeyJson({ seed: key.seed, publicKey: key.publicKey }));
  const app = new TestApp();
  const opts: ConsensusRuntimeOptions = {
    chainId: CHAIN_ID,
    genesis: {
      time: GENESIS_TIME,
      initialHeight: 1,
      validators: validatorsOf([key]),
      consensusParams: { ...PARAMS, abci: { voteExtensionsEnableHeight: enableHeight } },
      appState: { test: true },
    },
    timeouts: { ...TIMEOUTS, commit: 30 },
    createEmptyBlocks: true,
    doubleSignCheckHeight: 0,
    privValidator: { keyFile, stateFile: join(dir, 'priv_validator_state.json') },
    walDir: join(dir, 'cs.wal'),
    blockStore: new MemoryKV(),
    stateStore: new MemoryKV(),
    app,
    bus: new EventBus(),
    logger: silentLogger,
    ...over,
  };
  return { opts, app };
}

/** Every extended vote PrepareProposal got is this validator's, signed, for the block committed below it. */
async function checkLocalLastCommits(rt: ConsensusRuntime, app: TestApp): Promise<void> {
  for (const { height, commit } of app.localLastCommits) {
    assert.equal(commit.votes.length, 1);
    const v = commit.votes[0]!;
    assert.equal(v.blockIdFlag, 2);
    assert.deepEqual(v.validator.address, key.address);
    const below = await rt.loadBlock(height - 1);
    const meta = await rt.loadBlock(height);
    assert.ok(below && meta);
    const hash = meta.header.lastBlockId.hash;
    assert.ok(isValidTestVoteExtension(height - 1, hash, v.voteExtension), `extension of ${height - 1}`);
    assert.deepEqual(v.voteExtension, testVoteExtension(height - 1, hash, 'node'));
    assert.ok(
      ed25519Verify(
        key.publicKey,
        voteExtensionSignBytes(CHAIN_ID, {
          height: height - 1,
          round: commit.round,
          extension: v.voteExtension,
        }),
        v.extensionSignature,
      ),
    );
  }
}

describe('ConsensusRuntime with vote extensions', () => {
  it('extends its precommits from the enable height and hands them to the next PrepareProposal', async () => {
    const { opts, app } = runtimeOpts(3n);
    const rt = await ConsensusRuntime.create(opts);
    await rt.start();
    await rt.waitForHeight(6, 20_000);
    await rt.stop();
    const heights = app.localLastCommits.map((x) => x.height);
    assert.ok(heights.length >= 3, `extended commits at ${heights.join(',')}`);
    assert.equal(heights[0], 4, 'the first extended commit is that of the enable height, given at 4');
    await checkLocalLastCommits(rt, app);
    // The commits inside blocks (hashed) carry no extension.
    const b5 = await rt.loadBlock(5);
    assert.equal(b5!.lastCommit!.signatures[0]!.extension, undefined);
  });

  it('without an enable height nothing is extended and PrepareProposal gets no extended commit', async () => {
    const { opts, app } = runtimeOpts(0n);
    const rt = await ConsensusRuntime.create(opts);
    await rt.start();
    await rt.waitForHeight(3, 20_000);
    await rt.stop();
    assert.deepEqual(app.localLastCommits, []);
  });

  it('a restarted proposer still has the extended commit of its last height (stored, not rebuilt)', async () => {
    const { opts, app } = runtimeOpts(1n);
    const first = await ConsensusRuntime.create(opts);
    await first.start();
    await first.waitForHeight(3, 20_000);
    await first.stop();
    const top = first.blockStoreHeight();
    const before = app.localLastCommits.length;
    const second = await ConsensusRuntime.create(opts);
    await second.start();
    await second.waitForHeight(top + 2, 20_000);
    await second.stop();
    const after = app.localLastCommits.slice(before);
    assert.equal(after[0]!.height, top + 1, 'the first proposal after the restart');
    assert.ok(after[0]!.commit.votes[0]!.voteExtension.length > 0);
    await checkLocalLastCommits(second, app);
  });

  it('an application that fails to extend, or extends past the cap, still votes with an empty extension', async () => {
    for (const bad of ['throws', 'oversized'] as const) {
      const { logger, lines } = recorder();
      const { opts, app } = runtimeOpts(1n, { logger });
      app.extendVote = async () => {
        if (bad === 'throws') throw new Error('no source chain');
        return new Uint8Array(MAX_VOTE_EXTENSION_BYTES + 1);
      };
      const rt = await ConsensusRuntime.create(opts);
      await rt.start();
      await rt.waitForHeight(3, 20_000);
      await rt.stop();
      assert.ok(app.localLastCommits.length > 0);
      for (const { commit } of app.localLastCommits) {
        assert.equal(commit.votes[0]!.voteExtension.length, 0);
        assert.equal(commit.votes[0]!.extensionSignature.length, 64, 'the empty extension is signed');
      }
      assert.ok(
        lines.some((l) =>
          bad === 'throws'
            ? l.startsWith('error extendVote failed; precommitting with an empty extension') &&
              l.includes('no source chain')
            : l.startsWith('error extendVote returned an extension over the limit'),
        ),
        lines.join('\n'),
      );
    }
  });

  it('drops a peer precommit the application refuses (logged, peer not blamed) and reports a forged extension', async () => {
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
    const { logger, lines } = recorder();
    const { opts, app } = runtimeOpts(1n, { network, logger, timeouts: { ...TIMEOUTS, commit: 60_000 } });
    const rt = await ConsensusRuntime.create(opts);
    await rt.start();
    try {
      await rt.waitForHeight(1, 20_000);
      const s: EngineState = rt.engineState();
      const h = s.height;
      const id = {
        hash: sha256(enc.encode('other')),
        partSetHeader: { total: 1, hash: sha256(enc.encode('p')) },
      };
      const base: Vote = {
        type: 2,
        height: h,
        round: 0,
        blockId: id,
        timestamp: GENESIS_TIME + 1000n * MS,
        validatorAddress: key.address,
        validatorIndex: 0,
        signature: new Uint8Array(0),
      };
      base.signature = ed25519Sign(key.seed, voteSignBytes(CHAIN_ID, base));
      const withExt = (extension: Uint8Array): Vote => ({
        ...base,
        extension,
        extensionSignature: ed25519Sign(
          key.seed,
          voteExtensionSignBytes(CHAIN_ID, { height: h, round: 0, extension }),
        ),
      });
      const deliver = async (peer: string, v: Vote) => {
        for (const fn of handlers) fn(peer, { kind: 'vote', vote: v });
        await rt.idle();
      };
      await deliver('relay', withExt(enc.encode('not-what-the-app-makes')));
      assert.equal(app.rejectedExtensions, 1);
      assert.equal(rt.engineState().votes.precommits(0).get(0), undefined, 'not counted');
      assert.deepEqual(reports, [], 'an honest relay is not blamed for the application’s verdict');
      assert.ok(
        lines.some((l) =>
          l.startsWith('warn the application rejected a vote extension; precommit not counted'),
        ),
      );
      await deliver('relay', withExt(enc.encode('not-what-the-app-makes')));
      assert.equal(app.rejectedExtensions, 1, 'the verdict is remembered, not asked again');
      await deliver('forger', {
        ...withExt(testVoteExtension(h, id.hash, 'x')),
        extension: enc.encode('swapped'),
      });
      assert.deepEqual(reports, [
        { peer: 'forger', reason: `vote ${h}/0/2: invalid vote extension signature` },
      ]);
      assert.equal(rt.engineState().votes.precommits(0).get(0), undefined);
    } finally {
      await rt.stop();
    }
  });
});

describe('simulation with vote extensions', () => {
  it('holds every invariant on 120 seeds with extensions on from height 2, Byzantine ones sending bad extensions', async () => {
    const results: SimResult[] = [];
    const summary = await runSweep({
      seeds: 120,
      from: 5001,
      voteExtensionsEnableHeight: 2,
      onResult: (r) => results.push(r),
    });
    assert.equal(
      summary.violations,
      0,
      summary.failures.map((f) => `${f.violations.join('; ')}\n  ${f.replay}`).join('\n'),
    );
    assert.ok(
      results.reduce((a, r) => a + r.badExtensions, 0) > 50,
      'Byzantine validators sent bad extensions',
    );
    assert.ok(results.some((r) => r.params.faults === 'crash' && r.crashes > 0 && r.extendedProposals > 0));
    for (const r of results) {
      assert.ok(r.heights >= 8, `seed ${r.params.seed} committed only ${r.heights} heights`);
      assert.ok(r.extendedProposals > 0, `seed ${r.params.seed}: no proposal had > 2/3 of extensions`);
    }
  });

  it('catches a proposer handed an extension its signer never made (the invariant can fail)', async () => {
    const tamper = (s: EngineState, e: EngineEvent) => {
      const r = step(s, e);
      for (const eff of r.effects) {
        if (eff.kind === 'requestProposal' && eff.localLastCommit) {
          const v = eff.localLastCommit.votes.find((x) => x.extensionSignature.length > 0);
          if (v) v.voteExtension = enc.encode('vx:tampered');
        }
      }
      return r;
    };
    const r = await runSimulation({
      seed: 7,
      validators: 4,
      byzantine: 0,
      faults: 'none',
      voteExtensionsEnableHeight: 1,
      engineStep: tamper,
    });
    assert.ok(
      r.violations.some((v) =>
        /^extensions: node \d proposed \d+ with an extension of [0-9a-f]{8} that is not signed by it$/.test(
          v,
        ),
      ),
      r.violations.join('\n'),
    );
  });
});
