// The mempool channel: a transaction admitted by this node's pool (from RPC or from a peer) goes to
// every peer not known to have it, and a peer that connects gets what the pool already holds; a
// transaction from a peer goes through the pool's own CheckTx.
// Frames carry a batch: [u32 length][tx bytes] repeated. Invalid transactions are dropped (a peer
// may have judged them on another state); an undecodable frame disconnects the peer.
import { keccak256 } from '@noded/crypto';
import type { Logger } from '@noded/types';
import { P2PError } from './errors.js';
import type { ChannelHost } from './host.js';

export const MEMPOOL_PROTOCOL = '/noded/mempool/1';
/** A batch's bytes before it is sent; a single larger transaction goes alone. */
const BATCH_BYTES = 1024 * 1024;
/** Transaction hashes remembered per peer, so that a transaction is not sent back where it came from. */
const KNOWN_PER_PEER = 20_000;
/** Transactions from peers waiting for CheckTx; above this, new ones are dropped. */
const MAX_INBOUND_BACKLOG = 20_000;

export interface GossipPool {
  checkTx(tx: Uint8Array, kind: 'new'): Promise<{ code: number; log: string }>;
  /** Calls `listener` for every transaction the pool admits; returns the unsubscriber. */
  onTxAdmitted(listener: (raw: Uint8Array, hash: string) => void): () => void;
  /**
   * What the pool holds now, each sender's in nonce order (sent to a peer when it connects); a pool
   * in another process answers asynchronously.
   */
  pendingTxs?(): Uint8Array[] | Promise<Uint8Array[]>;
}

const hexOf = (b: Uint8Array) => `0x${Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('hex')}`;

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
  private readonly outbox: Array<{ raw: Uint8Array; hash: string }> = [];
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
      onMessage: (peer, payload) => this.receive(peer, decodeTxBatch(payload)),
    });
    this.offPeers = host.onPeer({ up: (peer) => this.greet(peer), down: (peer) => this.known.delete(peer) });
    this.unsubscribe = pool.onTxAdmitted((raw, hash) => {
      this.outbox.push({ raw, hash });
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
  private sendTo(peer: string, items: Array<{ raw: Uint8Array; hash: string }>): void {
    const known = this.knownOf(peer);
    let batch: Uint8Array[] = [];
    let bytes = 0;
    for (const it of items) {
      if (known.has(it.hash)) continue;
      known.add(it.hash);
      if (bytes + it.raw.length > BATCH_BYTES && batch.length > 0) {
        this.host.send(peer, MEMPOOL_PROTOCOL, encodeTxBatch(batch));
        batch = [];
        bytes = 0;
      }
      batch.push(it.raw);
      bytes += it.raw.length + 4;
    }
    if (batch.length > 0) this.host.send(peer, MEMPOOL_PROTOCOL, encodeTxBatch(batch));
  }

  private receive(peer: string, txs: Uint8Array[]): void {
    const known = this.knownOf(peer);
    const fresh: Uint8Array[] = [];
    for (const tx of txs) {
      known.add(hexOf(keccak256(tx)));
      if (this.backlog >= MAX_INBOUND_BACKLOG) continue;
      fresh.push(tx.slice());
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
      for (const tx of fresh) {
        try {
          await this.pool.checkTx(tx, 'new');
        } catch (err) {
          this.log.warn({ peer, err: (err as Error).message }, 'CheckTx of a gossiped transaction failed');
        } finally {
          this.backlog--;
        }
      }
    });
  }
}
