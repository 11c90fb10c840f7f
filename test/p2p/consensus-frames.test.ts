// The consensus channel's frames and its part-set bookkeeping, over an in-memory host (the host is
// only I/O: the channel's own code decodes, proves, counts and drops). Real hosts carry the same
// frames in consensus-channel.test; here each frame is handed to the channel's receiver directly,
// so the exact error (which disconnects the peer) and what is or is not delivered can be asserted.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  BLOCK_PART_SIZE,
  blockBytes,
  blockIdOf,
  type ConsensusMessage,
  encodeCommit,
  encodeConsensusMessage,
  encodeExtendedCommit,
  encodeProposal,
  makeBlock,
} from '@noded/consensus';
import { merkleRootFromProof } from '@noded/crypto';
import {
  type Channel,
  type ChannelHost,
  CONSENSUS_PROTOCOL,
  ConsensusChannel,
  consensusFrames,
  P2PError,
  type PeerEvents,
} from '@noded/p2p';
import type { Block, Commit, Proposal } from '@noded/types';
import { genesis, signedProposal, signedVote, testKey } from '../consensus/helpers.js';

const keys = [testKey(0), testKey(1), testKey(2), testKey(3)];
const chain = genesis(keys);

/** A host with no network: what the channel sends is recorded, and frames are handed in by `receive`. */
class MemoryHost implements ChannelHost {
  channel?: Channel;
  events: PeerEvents[] = [];
  peerCount = 1;
  sent: Array<{ peer: string; protocol: string; payload: Uint8Array }> = [];
  broadcasts: Array<{ protocol: string; payload: Uint8Array }> = [];
  disconnects: Array<{ peer: string; reason: string }> = [];
  register(channel: Channel): void {
    this.channel = channel;
  }
  onPeer(events: PeerEvents): () => void {
    this.events.push(events);
    return () => {};
  }
  peerIds(): string[] {
    return [];
  }
  send(peer: string, protocol: string, payload: Uint8Array): boolean {
    this.sent.push({ peer, protocol, payload });
    return true;
  }
  broadcast(protocol: string, payload: Uint8Array): void {
    this.broadcasts.push({ protocol, payload });
  }
  disconnect(peer: string, reason: string): void {
    this.disconnects.push({ peer, reason });
  }
  /** Hands a frame to the channel as the host does; returns the error that would disconnect the peer. */
  receive(peer: string, payload: Uint8Array): Error | undefined {
    try {
      this.channel!.onMessage(peer, payload);
      return undefined;
    } catch (err) {
      return err as Error;
    }
  }
  down(peer: string): void {
    for (const e of this.events) e.down(peer);
  }
}

function setup(maxBlockBytes = 22020096) {
  const host = new MemoryHost();
  const channel = new ConsensusChannel(host, maxBlockBytes);
  const got: Array<{ peer: string; m: ConsensusMessage }> = [];
  channel.subscribe((peer, m) => got.push({ peer, m }));
  /** Frames that must be accepted without an error. */
  const feed = (peer: string, ...frames: Uint8Array[]) => {
    for (const f of frames) assert.equal(host.receive(peer, f), undefined);
  };
  return { host, channel, got, feed };
}

/** A block of about `bytes` bytes of transactions; `tag` makes blocks of one size differ. */
function bigBlock(bytes: number, tag = 0): Block {
  const txs: Uint8Array[] = [];
  for (let i = 0; i * 10_000 < bytes; i++) txs.push(new Uint8Array(10_000).fill((i + tag * 7) % 251));
  return makeBlock(chain, {
    height: 1,
    time: chain.lastBlockTime,
    txs,
    evidence: [],
    lastCommit: null,
    proposerAddress: keys[0]!.address,
  });
}

function proposalOf(block: Block, round = 0) {
  const proposal = signedProposal(keys[0]!, block, round);
  return { proposal, frames: consensusFrames({ kind: 'proposal', proposal, block }) };
}

function commitOf(block: Block, withExtensions = false): Commit {
  const id = blockIdOf(block);
  return {
    height: 1,
    round: 2,
    blockId: id,
    signatures: keys.map((k, i) => {
      const v = signedVote(chain, k, 2, 1, 2, id);
      return {
        blockIdFlag: 2,
        validatorAddress: k.address,
        timestamp: v.timestamp,
        signature: v.signature,
        ...(withExtensions
          ? { extension: new Uint8Array([i, 1, 2]), extensionSignature: new Uint8Array(64).fill(i + 1) }
          : {}),
      };
    }),
  };
}

/** The fields of a part frame, read as the layout comment of the channel describes them. */
function partFields(f: Uint8Array) {
  const view = new DataView(f.buffer, f.byteOffset, f.byteLength);
  const nAunts = f[50]!;
  const aunts: Uint8Array[] = [];
  for (let i = 0; i < nAunts; i++) aunts.push(f.subarray(51 + i * 32, 51 + (i + 1) * 32));
  return {
    type: f[0],
    kind: f[1],
    index: view.getUint32(2),
    total: view.getUint32(6),
    height: view.getUint32(10),
    round: view.getUint32(14),
    hash: f.subarray(18, 50),
    aunts,
    part: f.subarray(51 + nAunts * 32),
  };
}

function withU32(f: Uint8Array, at: number, value: number): Uint8Array {
  const out = f.slice();
  new DataView(out.buffer).setUint32(at, value);
  return out;
}

function head(kind: number, body: Uint8Array): Uint8Array {
  return new Uint8Array([1, kind, ...body]);
}

const message = (err: Error | undefined) => {
  assert.ok(err instanceof P2PError, `expected a P2PError, got ${err}`);
  assert.equal(err.code, 'INVALID_MESSAGE');
  return err.message;
};

describe('consensus channel frames', () => {
  it('registers its protocol with a 1 MiB message limit (a head, or a part with its proof)', () => {
    const { host } = setup();
    assert.equal(host.channel!.protocol, CONSENSUS_PROTOCOL);
    assert.equal(CONSENSUS_PROTOCOL, '/noded/consensus/1', 'the protocol ID peers negotiate');
    assert.equal(host.channel!.maxMessageBytes, 1024 * 1024);
  });

  it('a vote is one whole frame: type 0 and the wire envelope', () => {
    const vote = signedVote(chain, keys[1]!, 1, 1, 0, null);
    const frames = consensusFrames({ kind: 'vote', vote });
    assert.equal(frames.length, 1);
    assert.deepEqual(frames[0], new Uint8Array([0, ...encodeConsensusMessage({ kind: 'vote', vote })]));
  });

  it('a proposal is a head (type 1, kind 0, the proposal) and parts of 64 KiB that prove against its part set hash', () => {
    const block = bigBlock(200_000);
    const { proposal, frames } = proposalOf(block, 3);
    const bytes = blockBytes(block);
    const total = Math.ceil(bytes.length / BLOCK_PART_SIZE);
    assert.equal(total, 4);
    assert.equal(frames.length, 1 + total);
    assert.deepEqual(frames[0], head(0, encodeProposal(proposal)));
    const psh = proposal.blockId.partSetHeader;
    frames.slice(1).forEach((f, i) => {
      const p = partFields(f);
      assert.deepEqual(
        [p.type, p.kind, p.index, p.total, p.height, p.round],
        [2, 0, i, total, 1, 3],
        `part ${i}`,
      );
      assert.deepEqual(p.hash, psh.hash);
      assert.deepEqual(p.part, bytes.subarray(i * BLOCK_PART_SIZE, (i + 1) * BLOCK_PART_SIZE));
      assert.deepEqual(merkleRootFromProof(p.part, i, total, p.aunts), psh.hash, `part ${i} proves`);
    });
    assert.equal(partFields(frames[4]!).part.length, bytes.length - 3 * BLOCK_PART_SIZE);
  });

  it('a block of exactly 64 KiB is one part, with no empty part after it', () => {
    // A found size: one transaction of 65,267 bytes makes a 65,536-byte block at height 1.
    const block = makeBlock(chain, {
      height: 1,
      time: chain.lastBlockTime,
      txs: [new Uint8Array(65_267).fill(1)],
      evidence: [],
      lastCommit: null,
      proposerAddress: keys[0]!.address,
    });
    assert.equal(blockBytes(block).length, BLOCK_PART_SIZE);
    const { proposal, frames } = proposalOf(block);
    assert.equal(proposal.blockId.partSetHeader.total, 1);
    assert.equal(frames.length, 2);
    const { got, feed } = setup();
    feed('p1', ...frames);
    assert.equal(got.length, 1);
  });

  it('a small block is one part; a commit head is kind 1, an extended commit kind 2 with its own round', () => {
    const block = bigBlock(1);
    const commit = commitOf(block);
    const frames = consensusFrames({ kind: 'commit', block, commit });
    assert.equal(frames.length, 2);
    assert.deepEqual(frames[0], head(1, encodeCommit(commit)));
    assert.deepEqual(partFields(frames[1]!).part, blockBytes(block));
    assert.deepEqual([partFields(frames[1]!).kind, partFields(frames[1]!).round], [1, 2]);
    const ext = { ...commitOf(block, true), round: 5 };
    const extFrames = consensusFrames({ kind: 'commit', block, commit, extendedCommit: ext });
    assert.deepEqual(extFrames[0], head(2, encodeExtendedCommit(ext)));
    assert.deepEqual([partFields(extFrames[1]!).kind, partFields(extFrames[1]!).round], [2, 5]);
  });

  it('send, broadcast and report go to the host; broadcast sends nothing without peers', () => {
    const { host, channel } = setup();
    const block = bigBlock(70_000);
    const { proposal, frames } = proposalOf(block);
    channel.send('p1', { kind: 'proposal', proposal, block });
    assert.deepEqual(
      host.sent.map((s) => [s.peer, s.protocol]),
      frames.map(() => ['p1', CONSENSUS_PROTOCOL]),
    );
    assert.deepEqual(
      host.sent.map((s) => s.payload),
      frames,
    );
    channel.broadcast({ kind: 'proposal', proposal, block });
    assert.deepEqual(
      host.broadcasts.map((b) => b.payload),
      frames,
    );
    assert.ok(host.broadcasts.every((b) => b.protocol === CONSENSUS_PROTOCOL));
    host.peerCount = 0;
    channel.broadcast({ kind: 'proposal', proposal, block });
    assert.equal(host.broadcasts.length, frames.length);
    channel.report('p2', 'forged vote');
    assert.deepEqual(host.disconnects, [{ peer: 'p2', reason: 'invalid consensus message: forged vote' }]);
  });
});

describe('consensus channel: receiving', () => {
  it('rebuilds a proposal from its parts in any order and delivers it once to every subscriber', () => {
    const { host, channel, got, feed } = setup();
    const other: ConsensusMessage[] = [];
    const unsubscribe = channel.subscribe((_p, m) => other.push(m));
    const block = bigBlock(200_000);
    const { proposal, frames } = proposalOf(block);
    feed('p1', frames[0]!, frames[3]!, frames[1]!);
    assert.equal(channel.partialCount('p1'), 1);
    assert.equal(got.length, 0, 'nothing before the last part');
    feed('p1', frames[4]!, frames[2]!);
    assert.equal(got.length, 1);
    assert.equal(got[0]!.peer, 'p1');
    const m = got[0]!.m;
    assert.equal(m.kind, 'proposal');
    if (m.kind === 'proposal') {
      assert.deepEqual(m.proposal, proposal);
      assert.deepEqual(blockBytes(m.block), blockBytes(block));
    }
    assert.deepEqual(other, [m]);
    assert.equal(channel.partialCount('p1'), 0);
    unsubscribe();
    feed('p1', ...frames);
    assert.equal(got.length, 2);
    assert.equal(other.length, 1, 'an unsubscribed handler gets nothing more');
    assert.equal(host.disconnects.length, 0);
  });

  it('delivers a commit, and an extended commit as both the commit and its extensions', () => {
    const { got, feed } = setup();
    const block = bigBlock(100_000);
    const commit = commitOf(block);
    feed('p1', ...consensusFrames({ kind: 'commit', block, commit }));
    const ext = commitOf(block, true);
    feed('p2', ...consensusFrames({ kind: 'commit', block, commit, extendedCommit: ext }));
    assert.equal(got.length, 2);
    const [a, b] = got.map((g) => g.m);
    assert.equal(a!.kind, 'commit');
    assert.equal(b!.kind, 'commit');
    if (a!.kind === 'commit' && b!.kind === 'commit') {
      assert.deepEqual(a.commit, commit);
      assert.equal(a.extendedCommit, undefined);
      assert.deepEqual(b.commit, ext);
      assert.deepEqual(b.extendedCommit, ext);
      assert.deepEqual(blockBytes(b.block), blockBytes(block));
    }
  });

  it('delivers a whole vote or status, and refuses a whole proposal or commit', () => {
    const { host, got } = setup();
    const vote = signedVote(chain, keys[1]!, 2, 1, 0, null);
    assert.equal(host.receive('p1', consensusFrames({ kind: 'vote', vote })[0]!), undefined);
    assert.deepEqual(got, [{ peer: 'p1', m: { kind: 'vote', vote } }]);
    const block = bigBlock(1);
    const { proposal } = proposalOf(block);
    const whole = (m: ConsensusMessage) => new Uint8Array([0, ...encodeConsensusMessage(m)]);
    assert.equal(
      message(host.receive('p1', whole({ kind: 'proposal', proposal, block }))),
      'consensus channel: a proposal must come as a head and block parts',
    );
    assert.equal(
      message(host.receive('p1', whole({ kind: 'commit', block, commit: commitOf(block) }))),
      'consensus channel: a commit must come as a head and block parts',
    );
    assert.equal(got.length, 1);
  });

  it('refuses an empty frame, an unknown frame type and a bad head, naming what is wrong', () => {
    const { host, channel } = setup(100_000);
    assert.equal(message(host.receive('p1', new Uint8Array(0))), 'consensus channel: empty frame');
    assert.equal(
      message(host.receive('p1', new Uint8Array([3, 0]))),
      'consensus channel: unknown frame type 3',
    );
    assert.equal(message(host.receive('p1', new Uint8Array([1]))), 'consensus channel: truncated head');
    const block = bigBlock(1);
    const { proposal } = proposalOf(block);
    const body = encodeProposal(proposal);
    assert.equal(message(host.receive('p1', head(3, body))), 'consensus channel: unknown head kind 3');
    const withProposal = (p: Partial<Proposal>) => head(0, encodeProposal({ ...proposal, ...p }));
    assert.equal(
      message(host.receive('p1', withProposal({ height: 2 ** 32 }))),
      `consensus channel: head height ${2 ** 32}`,
    );
    assert.equal(
      message(host.receive('p1', withProposal({ round: 2 ** 32 }))),
      `consensus channel: head round ${2 ** 32}`,
    );
    assert.equal(
      message(host.receive('p1', withProposal({ height: -1 }))),
      'consensus channel: head height -1',
    );
    assert.equal(
      message(host.receive('p1', withProposal({ round: -2 }))),
      'consensus channel: head round -2',
    );
    // Two bytes are a head with an empty body: the proposal decoder's error, not "truncated".
    assert.throws(() => host.channel!.onMessage('p1', new Uint8Array([1, 0])), {
      name: 'ConsensusError',
      message: 'proposal type 0 is not 32',
    });
    const psh = proposal.blockId.partSetHeader;
    const withPsh = (total: number, hash = psh.hash) =>
      withProposal({ blockId: { ...proposal.blockId, partSetHeader: { total, hash } } });
    // max_bytes 100,000: at most ceil(100000 / 65536) + 1 = 3 parts.
    assert.equal(
      message(host.receive('p1', withPsh(0))),
      'consensus channel: part set of 0 parts, outside 1..3 (block max_bytes)',
    );
    assert.equal(
      message(host.receive('p1', withPsh(4))),
      'consensus channel: part set of 4 parts, outside 1..3 (block max_bytes)',
    );
    assert.equal(
      message(host.receive('p1', withPsh(1, psh.hash.subarray(0, 31)))),
      'consensus channel: part set hash of 31 bytes',
    );
    assert.equal(channel.partialCount('p1'), 0, 'no refused head is kept');
    // The bounds themselves are accepted: 3 parts, height and round 2^32 - 1.
    assert.equal(host.receive('p1', withPsh(3)), undefined);
    assert.equal(host.receive('p2', withProposal({ height: 2 ** 32 - 1, round: 2 ** 32 - 1 })), undefined);
    assert.equal(host.receive('p2', withProposal({ height: 0, round: 0, polRound: -1 })), undefined);
    assert.equal(channel.partialCount('p1'), 1);
    assert.equal(channel.partialCount('p2'), 2);
  });

  it('refuses a truncated or oversized part, and a part whose total or index disagrees with its head', () => {
    const { host, got, feed } = setup();
    const block = bigBlock(140_000);
    const { frames } = proposalOf(block);
    const total = frames.length - 1;
    assert.equal(total, 3);
    feed('p1', frames[0]!);
    const part = frames[1]!;
    assert.equal(
      message(host.receive('p1', part.subarray(0, 50))),
      'consensus channel: truncated block part',
    );
    // Exactly the fixed fields, no proof and no bytes: an empty part, not a truncated one.
    const bare = part.slice(0, 51);
    bare[50] = 0;
    assert.equal(message(host.receive('p1', bare)), 'consensus channel: block part of 0 bytes');
    const tooManyAunts = part.slice(0, 51 + 64);
    tooManyAunts[50] = 3;
    assert.equal(message(host.receive('p1', tooManyAunts)), 'consensus channel: truncated part proof');
    const nAunts = part[50]!;
    assert.equal(
      message(host.receive('p1', part.subarray(0, 51 + nAunts * 32))),
      'consensus channel: block part of 0 bytes',
    );
    const oversized = new Uint8Array(51 + nAunts * 32 + BLOCK_PART_SIZE + 1);
    oversized.set(part.subarray(0, 51 + nAunts * 32));
    assert.equal(
      message(host.receive('p1', oversized)),
      `consensus channel: block part of ${BLOCK_PART_SIZE + 1} bytes`,
    );
    assert.equal(
      message(host.receive('p1', withU32(part, 6, 4))),
      'consensus channel: part 0 of 4, but the head says 3 parts',
    );
    assert.equal(
      message(host.receive('p1', withU32(frames[3]!, 2, 3))),
      'consensus channel: part 3 of 3, but the head says 3 parts',
    );
    const forged = frames[2]!.slice();
    forged[forged.length - 1]! ^= 1;
    assert.equal(
      message(host.receive('p1', forged)),
      'consensus channel: block part 1 of 3 at height 1 does not prove against its part set hash',
    );
    // A part proven at another index (the right bytes, the wrong place) does not prove either.
    assert.match(
      message(host.receive('p1', withU32(frames[2]!, 2, 0))),
      /block part 0 of 3 .* does not prove/,
    );
    // None of that was kept: the genuine parts still complete the block.
    feed('p1', frames[1]!, frames[2]!, frames[3]!);
    assert.equal(got.length, 1);
    assert.deepEqual(blockBytes((got[0]!.m as { block: Block }).block), blockBytes(block));
  });

  it('a part of no head it holds is ignored; a repeated head or part changes nothing', () => {
    const { got, channel, feed } = setup();
    const block = bigBlock(140_000);
    const { frames } = proposalOf(block);
    feed('p1', frames[1]!, frames[2]!);
    assert.equal(channel.partialCount('p1'), 0);
    feed('p2', frames[0]!);
    feed('p1', frames[3]!);
    assert.equal(channel.partialCount('p1'), 0, "another peer's head is not this peer's");
    feed('p2', frames[1]!, frames[2]!, frames[0]!);
    assert.equal(got.length, 0, 'two distinct parts of three');
    feed('p2', frames[3]!);
    assert.equal(got.length, 1);
    assert.deepEqual(blockBytes((got[0]!.m as { block: Block }).block), blockBytes(block));
    // A part for the same block under another round is another set.
    const { frames: round1 } = proposalOf(block, 1);
    feed('p2', frames[0]!, round1[1]!);
    assert.equal(channel.partialCount('p2'), 1);
  });

  it('keeps a copy of each part: a host reusing its read buffer does not change the block', () => {
    const { got, feed } = setup();
    const block = bigBlock(140_000);
    const { frames } = proposalOf(block);
    const first = frames[1]!.slice();
    feed('p1', frames[0]!, first);
    first.fill(0);
    feed('p1', frames[2]!, frames[3]!);
    assert.equal(got.length, 1);
    assert.deepEqual(blockBytes((got[0]!.m as { block: Block }).block), blockBytes(block));
  });

  it('keeps two unfinished sets per peer: a third head drops the oldest, and a peer going down drops its sets', () => {
    const { got, channel, host, feed } = setup();
    const [a, b, c] = [0, 1, 2].map((t) => proposalOf(bigBlock(140_000, t)).frames);
    feed('p1', a![0]!, a![1]!, b![0]!, b![1]!);
    assert.equal(channel.partialCount('p1'), 2);
    feed('p1', c![0]!);
    assert.equal(channel.partialCount('p1'), 2);
    feed('p1', a![2]!, a![3]!, c![1]!, c![2]!, c![3]!);
    assert.equal(got.length, 1, 'the oldest set was dropped: only the newest completes');
    assert.deepEqual(blockIdOf((got[0]!.m as { block: Block }).block), blockIdOf(bigBlock(140_000, 2)));
    feed('p1', b![2]!, b![3]!);
    assert.equal(got.length, 2);
    feed('p1', a![0]!, a![1]!, a![2]!);
    host.down('p1');
    assert.equal(channel.partialCount('p1'), 0);
    feed('p1', a![3]!);
    assert.equal(got.length, 2, 'the parts of a peer that went down are gone');
  });

  // max_bytes 100,000: 3 parts at most, and unfinished sets may hold 4 x 100,000 bytes in all.
  // Each block of 140,000 bytes is three parts, two of 65,536 bytes.
  const TWO_PARTS = 2 * BLOCK_PART_SIZE;

  it('beyond the byte budget of unfinished sets, the oldest set anywhere is dropped, never the one being filled', () => {
    const { got, feed } = setup(100_000);
    // A set delivered first (it leaves the order of unfinished sets with its bytes).
    feed('p9', ...proposalOf(bigBlock(140_000, 9)).frames);
    const sets = [0, 1, 2, 3].map((t) => proposalOf(bigBlock(140_000, t)).frames);
    // Three sets of two parts each: 393,216 bytes, within 400,000.
    for (const [i, f] of sets.slice(0, 3).entries()) feed(`p${i}`, f[0]!, f[1]!, f[2]!);
    assert.ok(3 * TWO_PARTS <= 400_000);
    // The fourth set's first part passes the budget: p0's set (the oldest) goes.
    feed('p3', sets[3]![0]!, sets[3]![1]!);
    feed('p0', sets[0]![3]!);
    assert.equal(got.length, 1, "p0's set was dropped");
    feed('p1', sets[1]![3]!);
    feed('p2', sets[2]![3]!);
    feed('p3', sets[3]![2]!, sets[3]![3]!);
    assert.deepEqual(
      got.map((g) => g.peer),
      ['p9', 'p1', 'p2', 'p3'],
    );
  });

  it('unfinished sets may hold exactly the budget; a peer that sent nothing going down changes nothing', () => {
    // max_bytes 65,536: a budget of 4 x 65,536 bytes, and blocks of 2 parts.
    const { got, host, feed } = setup(65_536);
    host.down('never-sent-anything');
    const sets = [0, 1, 2, 3].map((t) => proposalOf(bigBlock(70_000, t)).frames);
    assert.ok(sets.every((f) => f.length === 3));
    for (const [i, f] of sets.entries()) feed(`p${i}`, f[0]!, f[1]!);
    // 4 x 65,536 bytes held: at the budget, not past it, so p0's set is still there.
    feed('p0', sets[0]![2]!);
    assert.deepEqual(
      got.map((g) => g.peer),
      ['p0'],
    );
    // A fifth set: its first part fills the budget again, its last passes it and p1's set (now
    // the oldest) is dropped.
    const fifth = proposalOf(bigBlock(70_000, 4)).frames;
    feed('p4', fifth[0]!, fifth[1]!, fifth[2]!);
    feed('p1', sets[1]![2]!);
    feed('p2', sets[2]![2]!);
    assert.deepEqual(
      got.map((g) => g.peer),
      ['p0', 'p4', 'p2'],
    );
  });

  it('the oldest set may pass the budget itself while it is the one being filled', () => {
    const { got, feed } = setup(100_000);
    const sets = [0, 1, 2, 3].map((t) => proposalOf(bigBlock(140_000, t)).frames);
    feed('p0', sets[0]![0]!, sets[0]![1]!);
    feed('p1', sets[1]![0]!, sets[1]![1]!, sets[1]![2]!);
    feed('p2', sets[2]![0]!, sets[2]![1]!, sets[2]![2]!);
    feed('p3', sets[3]![0]!, sets[3]![1]!);
    // 393,216 bytes held; p0's second part takes it past 400,000, but p0's set is the oldest: it
    // stays, and so do the others (only sets older than the one being filled are dropped).
    feed('p0', sets[0]![2]!, sets[0]![3]!);
    assert.deepEqual(
      got.map((g) => g.peer),
      ['p0'],
    );
    feed('p1', sets[1]![3]!);
    feed('p2', sets[2]![3]!);
    feed('p3', sets[3]![2]!, sets[3]![3]!);
    assert.deepEqual(
      got.map((g) => g.peer),
      ['p0', 'p1', 'p2', 'p3'],
    );
  });

  it('delivered and dropped sets give their bytes back to the budget', () => {
    const { got, host, feed } = setup(100_000);
    // Four whole blocks delivered one after the other (3 x 140,000 bytes, more than the budget).
    for (let t = 0; t < 4; t++) feed('p0', ...proposalOf(bigBlock(140_000, t)).frames);
    assert.equal(got.length, 4);
    // Two sets of p1 going down with two parts each (262,144 bytes).
    const down = [4, 5].map((t) => proposalOf(bigBlock(140_000, t)).frames);
    for (const f of down) feed('p1', f[0]!, f[1]!, f[2]!);
    host.down('p1');
    // Two sets filled side by side: 262,144 bytes at most, within the budget only if nothing leaked.
    const [x, y] = [6, 7].map((t) => proposalOf(bigBlock(140_000, t)).frames);
    feed('p2', x![0]!);
    feed('p3', y![0]!);
    feed('p2', x![1]!, x![2]!);
    feed('p3', y![1]!, y![2]!);
    feed('p2', x![3]!);
    feed('p3', y![3]!);
    assert.deepEqual(
      got.slice(4).map((g) => g.peer),
      ['p2', 'p3'],
    );
  });
});
