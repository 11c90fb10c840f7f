// Fuzzing the P2P codecs (libs/p2p): node info (handshake JSON), stream frames reassembled from
// arbitrary chunk boundaries, mempool transaction batches. Valid values round-trip; bytes from a
// hostile peer fail only with P2PError.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  decodeNodeInfo,
  decodeTxBatch,
  encodeNodeInfo,
  encodeTxBatch,
  FrameReader,
  frame,
  MAX_NODE_INFO_BYTES,
  type NodeInfo,
  P2PError,
} from '@noded/p2p';
import fc from 'fast-check';
import { check, chunked, hex, hostileBytes, onlyThrows, rec, text } from './fuzz.js';

const nodeId = fc.uint8Array({ minLength: 20, maxLength: 20 }).map(hex);
const uint = fc.oneof(fc.nat({ max: 20 }), fc.maxSafeNat());

const nodeInfo: fc.Arbitrary<NodeInfo> = rec({
  protocolVersion: rec({ p2p: uint, block: uint, app: uint }),
  id: nodeId,
  listenAddr: text(256),
  network: text(64),
  version: text(64),
  channels: fc.array(text(64), { maxLength: 32 }),
  moniker: text(128),
  other: rec({ txIndex: fc.constantFrom('on' as const, 'off' as const), rpcAddress: text(256) }),
}).filter((i) => encodeNodeInfo(i).length <= MAX_NODE_INFO_BYTES);

/** A node info as JSON with one field replaced by any JSON value (or removed). */
const damagedNodeInfoJson = fc
  .tuple(
    nodeInfo,
    fc.constantFrom(
      'protocolVersion',
      'protocolVersion.p2p',
      'protocolVersion.block',
      'protocolVersion.app',
      'id',
      'listenAddr',
      'network',
      'version',
      'channels',
      'channels.0',
      'moniker',
      'other',
      'other.txIndex',
      'other.rpcAddress',
      '',
    ),
    fc.option(fc.jsonValue({ maxDepth: 2 }), { nil: undefined }),
  )
  .map(([info, path, value]) => {
    const root = JSON.parse(JSON.stringify(info)) as Record<string, unknown>;
    if (path === '') return new TextEncoder().encode(JSON.stringify(value ?? null));
    const keys = path.split('.');
    let at: Record<string, unknown> = root;
    for (const k of keys.slice(0, -1)) {
      const next = at[k];
      if (typeof next !== 'object' || next === null) return encodeNodeInfo(info);
      at = next as Record<string, unknown>;
    }
    if (value === undefined) delete at[keys.at(-1)!];
    else at[keys.at(-1)!] = value;
    return new TextEncoder().encode(JSON.stringify(root));
  });

const tx = fc.uint8Array({ minLength: 1, maxLength: 200 });

describe('fuzz: P2P codecs', () => {
  it('node info: decodeNodeInfo(encodeNodeInfo(x)) = x', () => {
    check(
      fc.property(nodeInfo, (info) => {
        assert.deepStrictEqual(decodeNodeInfo(encodeNodeInfo(info)), info);
      }),
    );
  });

  it("node info: hostile bytes and damaged fields fail only with P2PError('HANDSHAKE')", () => {
    check(
      fc.property(
        fc.oneof(
          hostileBytes(nodeInfo.map(encodeNodeInfo), 2048),
          damagedNodeInfoJson,
          fc.json().map((t) => new TextEncoder().encode(t)),
        ),
        (bytes) => {
          const r = onlyThrows(() => decodeNodeInfo(bytes), P2PError);
          if (!r.ok) assert.equal((r.error as P2PError).code, 'HANDSHAKE');
          else assert.deepStrictEqual(decodeNodeInfo(encodeNodeInfo(r.value)), r.value);
        },
      ),
    );
  });

  it('frames: any split of a frame stream into chunks gives back the payloads, in order', () => {
    check(
      fc.property(
        fc.array(fc.uint8Array({ maxLength: 300 }), { maxLength: 8 }),
        fc.array(fc.nat(), { maxLength: 12 }),
        (payloads, cuts) => {
          const stream = Buffer.concat(payloads.map(frame));
          const reader = new FrameReader(300, 'fuzz');
          const got: Uint8Array[] = [];
          for (const chunk of chunked(stream, cuts)) got.push(...reader.push(chunk));
          assert.deepStrictEqual(
            got.map((g) => Uint8Array.from(g)),
            payloads,
          );
          assert.equal(reader.pending, 0);
        },
      ),
    );
  });

  it("frames: hostile chunks fail only with P2PError('OVERSIZED'), and never yield a frame over the limit", () => {
    check(
      fc.property(
        fc.integer({ min: 0, max: 256 }),
        fc.array(
          fc.oneof(
            fc.uint8Array({ maxLength: 64 }),
            fc.uint8Array({ maxLength: 300 }).map(frame),
            hostileBytes(fc.uint8Array({ maxLength: 64 }).map(frame), 64),
          ),
          { maxLength: 8 },
        ),
        (max, chunks) => {
          const reader = new FrameReader(max, 'fuzz');
          for (const chunk of chunks) {
            const r = onlyThrows(() => reader.push(chunk), P2PError);
            if (!r.ok) {
              assert.equal((r.error as P2PError).code, 'OVERSIZED');
              return;
            }
            for (const f of r.value) assert.ok(f.length <= max);
          }
        },
      ),
    );
  });

  it('tx batches: decodeTxBatch(encodeTxBatch(txs)) = txs', () => {
    check(
      fc.property(fc.array(tx, { maxLength: 10 }), (txs) => {
        const back = decodeTxBatch(encodeTxBatch(txs));
        assert.deepStrictEqual(
          back.map((t) => Uint8Array.from(t)),
          txs,
        );
      }),
    );
  });

  it("tx batches: hostile bytes fail only with P2PError('INVALID_MESSAGE')", () => {
    check(
      fc.property(hostileBytes(fc.array(tx, { maxLength: 6 }).map(encodeTxBatch)), (bytes) => {
        const r = onlyThrows(() => decodeTxBatch(bytes), P2PError);
        if (!r.ok) assert.equal((r.error as P2PError).code, 'INVALID_MESSAGE');
        else assert.deepStrictEqual(encodeTxBatch(r.value), Uint8Array.from(bytes));
      }),
    );
  });
});
