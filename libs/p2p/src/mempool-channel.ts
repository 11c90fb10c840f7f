// The mempool channel: a transaction admitted by this node's pool (from RPC or from a peer) goes to
// every peer not known to have it, and a peer that connects gets what the pool already holds; a
// transaction from a peer goes through the pool's own CheckTx.
// /noded/mempool/1 frames carry a batch: [u32 length][tx bytes] repeated. /noded/mempool/2 frames
// carry the same batch with each transaction's trace context (docs/p2p.md): sent, to a peer that
// lists it, only for a batch in which some transaction has one (a traced cluster validator), so an
// untraced node's gossip is /noded/mempool/1 byte for byte. Invalid transactions are dropped (a peer
// may have judged them on another state); an undecodable frame disconnects the peer.
import { keccak256 } from '@noded/crypto';
import { linkActiveSpan, type TraceCarrier, withTraceCarrier } from '@noded/telemetry';
import type { Logger } from '@noded/types';
import { P2PError } from './errors.js';
import type { ChannelHost } from './host.js';

export const MEMPOOL_PROTOCOL = '/noded/mempool/1';
/** The same gossip with each transaction's W3C trace context, so a trace goes on at the next node. */
export const MEMPOOL_TRACED_PROTOCOL = '/noded/mempool/2';
/** A transaction's trace context on the wire at most (traceparent is 55 bytes, tracestate <= 512). */
export const MAX_GOSSIP_TRACE_BYTES = 1024;
/** Keys of one trace context at most (traceparent, tracestate, and what another propagator adds). */
const MAX_GOSSIP_TRACE_KEYS = 8;
/** A batch's bytes before it is sent; a single larger transaction goes alone. */
const BATCH_BYTES = 1024 * 1024;
/** Transaction hashes remembered per peer, so that a transaction is not sent back where it came from. */
const KNOWN_PER_PEER = 20_000;
/** Transactions from peers waiting for CheckTx; above this, new ones are dropped. */
const MAX_INBOUND_BACKLOG = 20_000;

export interface GossipPool {
  checkTx(tx: Uint8Array, kind: 'new'): Promise<{ code: number; log: string }>;
  /**
   * Calls `listener` for every transaction the pool admits, with the trace context of the work that
   * admitted it when the pool knows one; returns the unsubscriber.
   */
  onTxAdmitted(listener: (raw: Uint8Array, hash: string, trace?: TraceCarrier) => void): () => void;
  /**
   * What the pool holds now, each sender's in nonce order (sent to a peer when it connects); a pool
   * in another process answers asynchronously.
   */
  pendingTxs?(): Uint8Array[] | Promise<Uint8Array[]>;
}

const hexOf = (b: Uint8Array) => `0x${Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('hex')}`;

interface GossipItem {
  raw: Uint8Array;
  hash: string;
  trace?: TraceCarrier;
  /** The trace context's bytes on /noded/mempool/2 (its JSON), counted in a batch's size. */
  traceBytes?: number;
}

class KnownSet {
  private readonly set = new Set<string>();
  add(h: string): void {
    if (this.set.has(h)) return;
    this.set.add(h);
    if (this.set.size > KNOWN_PER_PEER) this.set.delete(this.set.values().next().value!);
  }
  has(h: string): boolean {
    return this.set.has(h);
  }
}

export function encodeTxBatch(txs: Uint8Array[]): Uint8Array {
  let size = 0;
  for (const t of txs) size += 4 + t.length;
  const out = new Uint8Array(size);
  const view = new DataView(out.buffer);
  let at = 0;
  for (const t of txs) {
    view.setUint32(at, t.length);
    out.set(t, at + 4);
    at += 4 + t.length;
  }
  return out;
}

/** A transaction as /noded/mempool/2 carries it: its bytes and, when it has one, its trace context. */
export interface TracedTx {
  tx: Uint8Array;
  trace?: TraceCarrier;
}

/**
 * A /noded/mempool/2 batch: `[u32 length][tx bytes][u16 length][trace context]` repeated, the trace
 * context the UTF-8 JSON of an object of strings (`{"traceparent":"00-..."}`), length 0 when none.
 */
export function encodeTracedTxBatch(txs: TracedTx[]): Uint8Array {
  const traces = txs.map((t) => {
    if (t.trace === undefined || Object.keys(t.trace).length === 0) return new Uint8Array(0);
    const b = Buffer.from(JSON.stringify(t.trace), 'utf8');
    return b.length <= MAX_GOSSIP_TRACE_BYTES ? b : new Uint8Array(0);
  });
  let size = 0;
  txs.forEach((t, i) => {
    size += 4 + t.tx.length + 2 + traces[i]!.length;
  });
  const out = new Uint8Array(size);
  const view = new DataView(out.buffer);
  let at = 0;
  txs.forEach((t, i) => {
    view.setUint32(at, t.tx.length);
    out.set(t.tx, at + 4);
    at += 4 + t.tx.length;
    const tr = traces[i]!;
    view.setUint16(at, tr.length);
    out.set(tr, at + 2);
    at += 2 + tr.length;
  });
  return out;
}

function traceOf(bytes: Uint8Array, at: number): TraceCarrier {
  let v: unknown;
  try {
    v = JSON.parse(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8'));
  } catch {
    throw new P2PError('INVALID_MESSAGE', `traced tx batch: the trace context at byte ${at} is not JSON`);
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v))
    throw new P2PError(
      'INVALID_MESSAGE',
      `traced tx batch: the trace context at byte ${at} is not an object`,
    );
  const entries = Object.entries(v);
  if (entries.length > MAX_GOSSIP_TRACE_KEYS)
    throw new P2PError(
      'INVALID_MESSAGE',
      `traced tx batch: the trace context at byte ${at} has ${entries.length} keys (at most ${MAX_GOSSIP_TRACE_KEYS})`,
    );
  for (const [k, x] of entries)
    if (typeof x !== 'string')
      throw new P2PError(
        'INVALID_MESSAGE',
        `traced tx batch: the trace context at byte ${at} has a ${typeof x} under ${JSON.stringify(k)} (strings only)`,
      );
  return v as TraceCarrier;
}

/** Decodes a /noded/mempool/2 batch; what breaks its shape is a P2PError naming where. */
export function decodeTracedTxBatch(bytes: Uint8Array): TracedTx[] {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out: TracedTx[] = [];
  let at = 0;
  while (at < bytes.length) {
    if (at + 4 > bytes.length)
      throw new P2PError('INVALID_MESSAGE', `traced tx batch: truncated length at byte ${at}`);
    const n = view.getUint32(at);
    if (n === 0) throw new P2PError('INVALID_MESSAGE', `traced tx batch: empty transaction at byte ${at}`);
    if (at + 4 + n + 2 > bytes.length)
      throw new P2PError('INVALID_MESSAGE', `traced tx batch: transaction of ${n} bytes runs past the end`);
    const tx = bytes.subarray(at + 4, at + 4 + n);
    at += 4 + n;
    const m = view.getUint16(at);
    if (m > MAX_GOSSIP_TRACE_BYTES)
      throw new P2PError(
        'INVALID_MESSAGE',
        `traced tx batch: a trace context of ${m} bytes at byte ${at} (at most ${MAX_GOSSIP_TRACE_BYTES})`,
      );
    if (at + 2 + m > bytes.length)
      throw new P2PError('INVALID_MESSAGE', `traced tx batch: trace context of ${m} bytes runs past the end`);
    out.push(m === 0 ? { tx } : { tx, trace: traceOf(bytes.subarray(at + 2, at + 2 + m), at + 2) });
    at += 2 + m;
  }
  return out;
}

export function decodeTxBatch(bytes: Uint8Array): Uint8Array[] {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out: Uint8Array[] = [];
  let at = 0;
  while (at < bytes.length) {
    if (at + 4 > bytes.length)
      throw new P2PError('INVALID_MESSAGE', `tx batch: truncated length at byte ${at}`);
    const n = view.getUint32(at);
    if (n === 0) throw new P2PError('INVALID_MESSAGE', `tx batch: empty transaction at byte ${at}`);
    if (at + 4 + n > bytes.length)
      throw new P2PError('INVALID_MESSAGE', `tx batch: transaction of ${n} bytes runs past the end`);
    out.push(bytes.subarray(at + 4, at + 4 + n));
    at += 4 + n;
  }
  return out;
}

export class MempoolChannel {
  private readonly known = new Map<string, KnownSet>();
  private readonly outbox: GossipItem[] = [];
  private flushScheduled = false;
  private backlog = 0;
  private chain: Promise<void> = Promise.resolve();
  private readonly unsubscribe: () => void;
  private readonly offPeers: () => void;

  constructor(
    private readonly host: ChannelHost,
    private readonly pool: GossipPool,
    maxTxBytes: number,
    private readonly log: Logger,
  ) {
    host.register({
      protocol: MEMPOOL_PROTOCOL,
      maxMessageBytes: Math.max(BATCH_BYTES, maxTxBytes) + 4,
      onMessage: (peer, payload) =>
        this.receive(
          peer,
          decodeTxBatch(payload).map((tx) => ({ tx })),
        ),
    });
    host.register({
      protocol: MEMPOOL_TRACED_PROTOCOL,
      maxMessageBytes: Math.max(BATCH_BYTES, maxTxBytes) + 6 + MAX_GOSSIP_TRACE_BYTES,
      onMessage: (peer, payload) => {
        const txs = decodeTracedTxBatch(payload);
        // The frame's span (a gateway's relayed frame is delivered in one) links to each transaction's.
        linkActiveSpan(txs.map((t) => t.trace));
        this.receive(peer, txs);
      },
    });
    this.offPeers = host.onPeer({ up: (peer) => this.greet(peer), down: (peer) => this.known.delete(peer) });
    this.unsubscribe = pool.onTxAdmitted((raw, hash, trace) => {
      this.outbox.push(
        trace === undefined
          ? { raw, hash }
          : { raw, hash, trace, traceBytes: Buffer.byteLength(JSON.stringify(trace)) },
      );
      if (!this.flushScheduled) {
        this.flushScheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  close(): void {
    this.unsubscribe();
    this.offPeers();
  }

  private knownOf(peer: string): KnownSet {
    let k = this.known.get(peer);
    if (!k) {
      k = new KnownSet();
      this.known.set(peer, k);
    }
    return k;
  }

  private flush(): void {
    this.flushScheduled = false;
    const items = this.outbox.splice(0);
    if (items.length === 0) return;
    for (const peer of this.host.peerIds()) this.sendTo(peer, items);
  }

  /** A new peer gets the transactions the pool already holds (CometBFT walks its whole list too). */
  private greet(peer: string): void {
    const got = this.pool.pendingTxs?.() ?? [];
    if (Array.isArray(got)) {
      this.greetWith(peer, got);
      return;
    }
    got.then(
      (txs) => {
        if (this.host.peerIds().includes(peer)) this.greetWith(peer, txs);
      },
      (err: Error) => this.log.warn({ peer, err: err.message }, 'reading the pool for a new peer failed'),
    );
  }

  private greetWith(peer: string, txs: Uint8Array[]): void {
    if (txs.length === 0) return;
    this.sendTo(
      peer,
      txs.map((raw) => ({ raw, hash: hexOf(keccak256(raw)) })),
    );
  }

  /** Sends `items` the peer is not known to have, in batches of up to BATCH_BYTES. */
  private sendTo(peer: string, items: GossipItem[]): void {
    const known = this.knownOf(peer);
    let batch: GossipItem[] = [];
    let bytes = 0;
    for (const it of items) {
      if (known.has(it.hash)) continue;
      known.add(it.hash);
      // Counted as /noded/mempool/2 would carry it, so a traced batch stays within the frame limit.
      const size = it.raw.length + 4 + (it.trace === undefined ? 0 : 2 + (it.traceBytes ?? 0));
      if (bytes + size > BATCH_BYTES && batch.length > 0) {
        this.sendBatch(peer, batch);
        batch = [];
        bytes = 0;
      }
      batch.push(it);
      bytes += size;
    }
    if (batch.length > 0) this.sendBatch(peer, batch);
  }

  /**
   * A batch with trace contexts goes on /noded/mempool/2 to a peer that lists it; anything else (no
   * context, or a peer of a version before it: send() says it does not list it) on /noded/mempool/1.
   */
  private sendBatch(peer: string, batch: GossipItem[]): void {
    if (
      batch.some((it) => it.trace !== undefined) &&
      this.host.send(
        peer,
        MEMPOOL_TRACED_PROTOCOL,
        encodeTracedTxBatch(batch.map((it) => (it.trace ? { tx: it.raw, trace: it.trace } : { tx: it.raw }))),
      )
    )
      return;
    this.host.send(peer, MEMPOOL_PROTOCOL, encodeTxBatch(batch.map((it) => it.raw)));
  }

  private receive(peer: string, txs: TracedTx[]): void {
    const known = this.knownOf(peer);
    const fresh: TracedTx[] = [];
    for (const { tx, trace } of txs) {
      known.add(hexOf(keccak256(tx)));
      if (this.backlog >= MAX_INBOUND_BACKLOG) continue;
      fresh.push(trace === undefined ? { tx: tx.slice() } : { tx: tx.slice(), trace });
    }
    if (fresh.length < txs.length) {
      this.log.debug(
        { peer, dropped: txs.length - fresh.length },
        'mempool gossip backlog full; transactions dropped',
      );
    }
    this.backlog += fresh.length;
    // One batch after another, in order, so a sender's nonces arrive as they were sent.
    this.chain = this.chain.then(async () => {
      for (const { tx, trace } of fresh) {
        try {
          // With its trace context: this node's CheckTx of it continues the trace it came with.
          await withTraceCarrier(trace, () => this.pool.checkTx(tx, 'new'));
        } catch (err) {
          this.log.warn({ peer, err: (err as Error).message }, 'CheckTx of a gossiped transaction failed');
        } finally {
          this.backlog--;
        }
      }
    });
  }
}
