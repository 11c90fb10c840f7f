// The block sync protocol's wire format (`/noded/blocksync/1`): one protobuf envelope per
// BlockSyncMessage, its kind chosen by the field number (a oneof, as CometBFT's blocksync.Message),
// blocks and commits in CometBFT's own encodings. Decoding is for bytes from untrusted peers: every
// malformed input is a ConsensusError('INVALID_ENCODING') naming what is wrong.
import { ConsensusError } from '../errors.js';
import { adoptBlockBytes, blockBytes } from '../hash.js';
import type { BlockSyncMessage } from '../runtime/options.js';
import { bytesOf, numberOf, ProtoWriter, readFields } from './proto.js';
import {
  decodeBlock,
  decodeCommit,
  decodeExtendedCommit,
  encodeCommit,
  encodeExtendedCommit,
} from './types.js';

const FIELD = { statusRequest: 1, status: 2, blockRequest: 3, noBlock: 4, block: 5 } as const;

/**
 * The most heights one block request may ask (`BlockRequest.count`, field 2, added beside CometBFT's
 * height; a peer that does not know it reads the first height only, which is why a node asks ranges
 * only of peers whose `Status.max_range`, field 3, says they answer them).
 */
export const MAX_BLOCK_RANGE = 64;

const fail = (why: string): never => {
  throw new ConsensusError('INVALID_ENCODING', `block sync message: ${why}`);
};

function height(what: string, n: number): number {
  if (!Number.isSafeInteger(n) || n < 0) fail(`${what} ${n} is not a non-negative integer`);
  return n;
}

export function encodeBlockSyncMessage(m: BlockSyncMessage): Uint8Array {
  const w = new ProtoWriter(128);
  const inner = new ProtoWriter(64);
  switch (m.kind) {
    case 'statusRequest':
      inner.varint(1, 1);
      w.message(FIELD.statusRequest, inner.finish());
      break;
    case 'status':
      inner.varint(1, m.height);
      inner.varint(2, m.base);
      if (m.maxRange !== undefined && m.maxRange > 1) inner.varint(3, m.maxRange);
      w.message(FIELD.status, inner.finish());
      break;
    case 'blockRequest':
      inner.varint(1, m.height);
      if (m.count !== undefined && m.count > 1) inner.varint(2, m.count);
      w.message(FIELD.blockRequest, inner.finish());
      break;
    case 'noBlock':
      inner.varint(1, m.height);
      w.message(FIELD.noBlock, inner.finish());
      break;
    case 'block':
      inner.message(1, blockBytes(m.block));
      inner.message(2, encodeCommit(m.commit));
      if (m.extendedCommit) inner.message(3, encodeExtendedCommit(m.extendedCommit));
      w.message(FIELD.block, inner.finish());
      break;
  }
  return w.finish();
}

export function decodeBlockSyncMessage(bytes: Uint8Array): BlockSyncMessage {
  const f = readFields(bytes);
  if (f.size !== 1) fail(`expected exactly one message kind, got ${f.size} fields`);
  const [field] = f.keys();
  const g = readFields(bytesOf(f, field!));
  switch (field) {
    case FIELD.statusRequest:
      return { kind: 'statusRequest' };
    case FIELD.status: {
      const h = height('status height', numberOf(g, 1));
      const base = height('status base', numberOf(g, 2));
      if (base > h) fail(`status base ${base} is above its height ${h}`);
      if (!g.has(3)) return { kind: 'status', base, height: h };
      // A peer may answer larger ranges than this node asks: it is taken at most at MAX_BLOCK_RANGE.
      const maxRange = height('status max_range', numberOf(g, 3));
      return { kind: 'status', base, height: h, maxRange: Math.max(1, Math.min(maxRange, MAX_BLOCK_RANGE)) };
    }
    case FIELD.blockRequest: {
      const from = height('request height', numberOf(g, 1));
      if (!g.has(2)) return { kind: 'blockRequest', height: from };
      const count = numberOf(g, 2);
      if (!Number.isSafeInteger(count) || count < 1 || count > MAX_BLOCK_RANGE)
        fail(`request count ${count} is not 1..${MAX_BLOCK_RANGE}`);
      return count === 1
        ? { kind: 'blockRequest', height: from }
        : { kind: 'blockRequest', height: from, count };
    }
    case FIELD.noBlock:
      return { kind: 'noBlock', height: height('no-block height', numberOf(g, 1)) };
    case FIELD.block: {
      if (!g.has(1) || !g.has(2)) fail('block response without its block or its commit');
      const blockBytes = bytesOf(g, 1);
      const block = decodeBlock(blockBytes);
      adoptBlockBytes(block, blockBytes);
      const m: BlockSyncMessage = { kind: 'block', block, commit: decodeCommit(bytesOf(g, 2)) };
      if (g.has(3)) m.extendedCommit = decodeExtendedCommit(bytesOf(g, 3));
      return m;
    }
    default:
      return fail(`unknown message field ${field}`);
  }
}
