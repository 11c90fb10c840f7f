// The consensus channel: the runtime's ConsensusNetwork port over the P2P host.
//
// Frames start with a type byte. Votes, statuses and evidence travel whole (type 0, the consensus
// library's wire envelope). A message that carries a block (a proposal, or a committed block for a
// peer catching up) travels as a head (type 1: the proposal or the commit, whose block ID holds the
// part set header) followed by the block's 64 KiB parts (type 2), each with its merkle proof against
// that header, as CometBFT gossips block parts; so a 21 MB block is never one message. A receiver
// checks every part against the head's part set hash before keeping it, rebuilds the block when the
// set is complete and hands the whole message to the engine, which checks that the block is the one
// the head names. A peer whose bytes do not decode, or whose part does not prove, is disconnected and
// nothing it sent reaches the engine. Where vote extensions are on, a committed block's head is its
// extended commit (head kind 2), so the extensions reach the behind node with the block.
import {
  BLOCK_PART_SIZE,
  blockBytes,
  type ConsensusMessage,
  type ConsensusNetwork,
  decodeBlock,
  decodeCommit,
  decodeConsensusMessage,
  decodeExtendedCommit,
  decodeProposal,
  encodeCommit,
  encodeConsensusMessage,
  encodeExtendedCommit,
  encodeProposal,
} from '@noded/consensus';
import { merkleAuntsAll, merkleRootFromProof } from '@noded/crypto';
import type { Block, Commit, PartSetHeader, Proposal } from '@noded/types';
import { P2PError } from './errors.js';
import type { ChannelHost } from './host.js';

export const CONSENSUS_PROTOCOL = '/noded/consensus/1';

const WHOLE = 0;
const HEAD = 1;
const PART = 2;
const HEAD_PROPOSAL = 0;
const HEAD_COMMIT = 1;
/** A block sync commit where vote extensions are on: the extended commit alone (it is the commit, with the extensions). */
const HEAD_EXTENDED_COMMIT = 2;
/** Block sets being reassembled per peer; the oldest is dropped beyond this. */
const MAX_PARTIAL_PER_PEER = 2;
/**
 * Bytes of unfinished block sets over all peers, in blocks of max_bytes. A head is not checked
 * before its parts arrive (its signature is the engine's to check), so without this budget peers
 * could hold max_bytes of memory each; beyond it the oldest unfinished set anywhere is dropped.
 */
const PARTIAL_BUDGET_BLOCKS = 4;
/** Room for a part's proof (aunts) and its fields around BLOCK_PART_SIZE bytes. */
const PART_SLACK = 64 * 1024;
/** A proposal or commit head (without its block) is small; anything larger is refused. */
const MAX_HEAD_BYTES = 1024 * 1024;

interface Split {
  parts: Uint8Array[];
  aunts: Uint8Array[][];
}

/** Block parts and proofs are computed once per block object, however many peers it goes to. */
const splits = new WeakMap<Block, Split>();

function splitBlock(block: Block): Split {
  let s = splits.get(block);
  if (!s) {
    const bytes = blockBytes(block);
    const parts: Uint8Array[] = [];
    for (let o = 0; o < bytes.length || parts.length === 0; o += BLOCK_PART_SIZE) {
      parts.push(bytes.subarray(o, o + BLOCK_PART_SIZE));
    }
    s = { parts, aunts: merkleAuntsAll(parts).aunts };
    splits.set(block, s);
  }
  return s;
}

const fail = (why: string): never => {
  throw new P2PError('INVALID_MESSAGE', `consensus channel: ${why}`);
};

function u32(view: DataView, at: number, what: string): number {
  if (at + 4 > view.byteLength) fail(`truncated ${what}`);
  return view.getUint32(at);
}

// Head: [1][kind u8][encoded proposal or commit]
function encodeHead(kind: number, body: Uint8Array): Uint8Array {
  const out = new Uint8Array(2 + body.length);
  out[0] = HEAD;
  out[1] = kind;
  out.set(body, 2);
  return out;
}

// Part: [2][kind u8][index u32][total u32][height u32][round u32][psh hash 32][n aunts u8]
//       [aunts 32 each][part bytes]
const PART_FIXED = 1 + 1 + 4 * 4 + 32 + 1;

function encodePart(
  kind: number,
  height: number,
  round: number,
  psh: PartSetHeader,
  index: number,
  part: Uint8Array,
  aunts: Uint8Array[],
): Uint8Array {
  const out = new Uint8Array(PART_FIXED + aunts.length * 32 + part.length);
  const view = new DataView(out.buffer);
  out[0] = PART;
  out[1] = kind;
  view.setUint32(2, index);
  view.setUint32(6, psh.total);
  view.setUint32(10, height);
  view.setUint32(14, round);
  out.set(psh.hash, 18);
  out[50] = aunts.length;
  let at = PART_FIXED;
  for (const a of aunts) {
    out.set(a, at);
    at += 32;
  }
  out.set(part, at);
  return out;
}

interface Partial {
  peer: string;
  key: string;
  bytes: number;
  kind: number;
  head: Proposal | Commit;
  total: number;
  parts: Array<Uint8Array | undefined>;
  have: number;
}

const keyOf = (kind: number, height: number, round: number, hash: Uint8Array) =>
  `${kind}:${height}:${round}:${Buffer.from(hash).toString('hex')}`;

/** The frames of one message on the consensus channel: whole, or a head and the block's parts. */
export function consensusFrames(m: ConsensusMessage): Uint8Array[] {
  if (m.kind !== 'proposal' && m.kind !== 'commit') {
    const body = encodeConsensusMessage(m);
    const out = new Uint8Array(1 + body.length);
    out[0] = WHOLE;
    out.set(body, 1);
    return [out];
  }
  const ext = m.kind === 'commit' ? m.extendedCommit : undefined;
  const kind = m.kind === 'proposal' ? HEAD_PROPOSAL : ext ? HEAD_EXTENDED_COMMIT : HEAD_COMMIT;
  const id = m.kind === 'proposal' ? m.proposal.blockId : m.commit.blockId;
  const height = m.kind === 'proposal' ? m.proposal.height : m.commit.height;
  const round = m.kind === 'proposal' ? m.proposal.round : (ext ?? m.commit).round;
  const head = encodeHead(
    kind,
    m.kind === 'proposal'
      ? encodeProposal(m.proposal)
      : ext
        ? encodeExtendedCommit(ext)
        : encodeCommit(m.commit),
  );
  const split = splitBlock(m.block);
  const frames = [head];
  split.parts.forEach((part, i) => {
    frames.push(encodePart(kind, height, round, id.partSetHeader, i, part, split.aunts[i]!));
  });
  return frames;
}

export class ConsensusChannel implements ConsensusNetwork {
  private readonly handlers = new Set<(peer: string, message: ConsensusMessage) => void>();
  private readonly partial = new Map<string, Map<string, Partial>>();
  private readonly maxParts: number;
  /** Every unfinished set, oldest first (for the budget). */
  private readonly order: Partial[] = [];
  private partialBytes = 0;
  private readonly budget: number;

  constructor(
    private readonly host: ChannelHost,
    maxBlockBytes: number,
  ) {
    this.maxParts = Math.ceil(maxBlockBytes / BLOCK_PART_SIZE) + 1;
    this.budget = PARTIAL_BUDGET_BLOCKS * maxBlockBytes;
    host.register({
      protocol: CONSENSUS_PROTOCOL,
      maxMessageBytes: Math.max(MAX_HEAD_BYTES, BLOCK_PART_SIZE + PART_SLACK),
      // An error thrown here disconnects the peer with it as the reason.
      onMessage: (peer, payload) => this.receive(peer, payload),
    });
    host.onPeer({
      up: () => {},
      down: (peer) => {
        for (const p of [...(this.partial.get(peer)?.values() ?? [])]) this.drop(p);
        this.partial.delete(peer);
      },
    });
  }

  broadcast(message: ConsensusMessage): void {
    if (this.host.peerCount === 0) return;
    for (const frame of consensusFrames(message)) this.host.broadcast(CONSENSUS_PROTOCOL, frame);
  }

  send(peer: string, message: ConsensusMessage): void {
    for (const frame of consensusFrames(message)) this.host.send(peer, CONSENSUS_PROTOCOL, frame);
  }

  /** The runtime found the peer's message forged or malformed: it is disconnected. */
  report(peer: string, reason: string): void {
    this.host.disconnect(peer, `invalid consensus message: ${reason}`);
  }

  subscribe(handler: (peer: string, message: ConsensusMessage) => void): () => void {
    this.handlers.add(handler);
    return () => this.handlers.delete(handler);
  }

  /** Messages being reassembled from a peer (for tests and diagnostics). */
  partialCount(peer: string): number {
    return this.partial.get(peer)?.size ?? 0;
  }

  private deliver(peer: string, message: ConsensusMessage): void {
    for (const h of this.handlers) h(peer, message);
  }

  private receive(peer: string, payload: Uint8Array): void {
    if (payload.length === 0) fail('empty frame');
    const type = payload[0];
    if (type === WHOLE) {
      const m = decodeConsensusMessage(payload.subarray(1));
      if (m.kind === 'proposal' || m.kind === 'commit')
        fail(`a ${m.kind} must come as a head and block parts`);
      this.deliver(peer, m);
      return;
    }
    if (type === HEAD) this.receiveHead(peer, payload);
    else if (type === PART) this.receivePart(peer, payload);
    else fail(`unknown frame type ${type}`);
  }

  private receiveHead(peer: string, payload: Uint8Array): void {
    if (payload.length < 2) fail('truncated head');
    const kind = payload[1];
    const body = payload.subarray(2);
    let head: Proposal | Commit;
    let height: number;
    let round: number;
    let psh: PartSetHeader;
    if (kind === HEAD_PROPOSAL) {
      const p = decodeProposal(body);
      head = p;
      ({ height, round } = p);
      psh = p.blockId.partSetHeader;
    } else if (kind === HEAD_COMMIT || kind === HEAD_EXTENDED_COMMIT) {
      const c = kind === HEAD_COMMIT ? decodeCommit(body) : decodeExtendedCommit(body);
      head = c;
      ({ height, round } = c);
      psh = c.blockId.partSetHeader;
    } else {
      fail(`unknown head kind ${kind}`);
      return;
    }
    if (!Number.isSafeInteger(height) || height < 0 || height > 0xffffffff) fail(`head height ${height}`);
    if (!Number.isSafeInteger(round) || round < 0 || round > 0xffffffff) fail(`head round ${round}`);
    if (psh.total < 1 || psh.total > this.maxParts) {
      fail(`part set of ${psh.total} parts, outside 1..${this.maxParts} (block max_bytes)`);
    }
    if (psh.hash.length !== 32) fail(`part set hash of ${psh.hash.length} bytes`);
    let mine = this.partial.get(peer);
    if (!mine) {
      mine = new Map();
      this.partial.set(peer, mine);
    }
    const key = keyOf(kind, height, round, psh.hash);
    if (mine.has(key)) return;
    if (mine.size >= MAX_PARTIAL_PER_PEER) this.drop(mine.values().next().value!);
    const p: Partial = {
      peer,
      key,
      bytes: 0,
      kind,
      head,
      total: psh.total,
      parts: new Array(psh.total),
      have: 0,
    };
    mine.set(key, p);
    this.order.push(p);
  }

  private drop(p: Partial): void {
    this.partial.get(p.peer)?.delete(p.key);
    const i = this.order.indexOf(p);
    if (i >= 0) this.order.splice(i, 1);
    this.partialBytes -= p.bytes;
  }

  private receivePart(peer: string, payload: Uint8Array): void {
    if (payload.length < PART_FIXED) fail('truncated block part');
    const view = new DataView(payload.buffer, payload.byteOffset, payload.byteLength);
    const kind = payload[1]!;
    const index = u32(view, 2, 'part index');
    const total = u32(view, 6, 'part total');
    const height = u32(view, 10, 'part height');
    const round = u32(view, 14, 'part round');
    const hash = payload.subarray(18, 50);
    const nAunts = payload[50]!;
    const partAt = PART_FIXED + nAunts * 32;
    if (partAt > payload.length) fail('truncated part proof');
    const bytes = payload.subarray(partAt);
    if (bytes.length === 0 || bytes.length > BLOCK_PART_SIZE) fail(`block part of ${bytes.length} bytes`);
    const p = this.partial.get(peer)?.get(keyOf(kind, height, round, hash));
    // A part of a set this node no longer tracks (dropped as the oldest) is ignored.
    if (!p) return;
    if (total !== p.total || index >= total)
      fail(`part ${index} of ${total}, but the head says ${p.total} parts`);
    if (p.parts[index]) return;
    const aunts: Uint8Array[] = [];
    for (let i = 0; i < nAunts; i++)
      aunts.push(payload.subarray(PART_FIXED + i * 32, PART_FIXED + (i + 1) * 32));
    const root = merkleRootFromProof(bytes, index, total, aunts);
    if (!root || Buffer.compare(root, hash) !== 0) {
      fail(`block part ${index} of ${total} at height ${height} does not prove against its part set hash`);
    }
    p.parts[index] = bytes.slice();
    p.have++;
    p.bytes += bytes.length;
    this.partialBytes += bytes.length;
    while (this.partialBytes > this.budget && this.order.length > 0 && this.order[0] !== p)
      this.drop(this.order[0]!);
    if (p.have < p.total) return;
    this.drop(p);
    let size = 0;
    for (const part of p.parts) size += part!.length;
    const whole = new Uint8Array(size);
    let at = 0;
    for (const part of p.parts) {
      whole.set(part!, at);
      at += part!.length;
    }
    const block = decodeBlock(whole);
    if (p.kind === HEAD_PROPOSAL)
      this.deliver(peer, { kind: 'proposal', proposal: p.head as Proposal, block });
    else if (p.kind === HEAD_COMMIT) this.deliver(peer, { kind: 'commit', block, commit: p.head as Commit });
    else {
      const ext = p.head as Commit;
      this.deliver(peer, { kind: 'commit', block, commit: ext, extendedCommit: ext });
    }
  }
}
