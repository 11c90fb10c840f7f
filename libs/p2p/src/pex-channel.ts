// Peer exchange (PEX), CometBFT's way of finding peers beyond persistent_peers: a node with too
// few outbound peers dials addresses from its book, asks its peers for more, and when it knows
// nobody dials its seeds. An inbound peer's own listen address enters the book, which is how seeds
// and peers learn of new nodes. A node in seed mode answers an inbound peer's request, then hangs
// up on it, so that its connections stay free for the next newcomer.
//
// Messages: one byte of kind, then for `addrs` a JSON array of "id@host:port" strings.
// A peer that asks more often than the minimum interval, sends addresses it was not asked for,
// or sends more than MAX_PEX_ADDRS of them is disconnected (the host logs and bans it).
import { type Logger, PEX_PROTOCOL } from '@noded/types';
import { type AddressBook, formatPeerAddress, parsePeerAddress } from './addrbook.js';
import { P2PError } from './errors.js';
import type { P2PHost, PeerAddress } from './host.js';

// Defined in @noded/types (the gateway relay names it without libp2p).
export { PEX_PROTOCOL };
/** Addresses in one answer, at most (CometBFT's maxGetSelection). */
export const MAX_PEX_ADDRS = 250;
/** Largest PEX message: MAX_PEX_ADDRS addresses of a long DNS name each. */
export const MAX_PEX_MESSAGE_BYTES = 1 + MAX_PEX_ADDRS * 320;
/** Below this many addresses the node asks its peers for more (CometBFT's needAddressThreshold). */
export const NEED_ADDRESSES = 1000;

const KIND_REQUEST = 0x01;
const KIND_ADDRS = 0x02;

export type PexMessage = { kind: 'request' } | { kind: 'addrs'; addrs: PeerAddress[] };

export function encodePex(m: PexMessage): Uint8Array {
  if (m.kind === 'request') return Uint8Array.of(KIND_REQUEST);
  const body = new TextEncoder().encode(JSON.stringify(m.addrs.map(formatPeerAddress)));
  const out = new Uint8Array(1 + body.length);
  out[0] = KIND_ADDRS;
  out.set(body, 1);
  return out;
}

export function decodePex(bytes: Uint8Array): PexMessage {
  if (bytes.length === 0) throw new P2PError('INVALID_MESSAGE', 'pex: empty message');
  const kind = bytes[0];
  if (kind === KIND_REQUEST) {
    if (bytes.length !== 1)
      throw new P2PError('INVALID_MESSAGE', `pex: a request carries no body, got ${bytes.length - 1} bytes`);
    return { kind: 'request' };
  }
  if (kind !== KIND_ADDRS) throw new P2PError('INVALID_MESSAGE', `pex: unknown message kind ${kind}`);
  let list: unknown;
  try {
    list = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes.subarray(1)));
  } catch (err) {
    throw new P2PError('INVALID_MESSAGE', `pex: addresses are not a JSON array: ${(err as Error).message}`);
  }
  if (!Array.isArray(list)) throw new P2PError('INVALID_MESSAGE', 'pex: addresses are not a JSON array');
  if (list.length > MAX_PEX_ADDRS)
    throw new P2PError('INVALID_MESSAGE', `pex: ${list.length} addresses, more than ${MAX_PEX_ADDRS}`);
  const addrs: PeerAddress[] = [];
  for (const [i, s] of list.entries()) {
    const a = typeof s === 'string' ? parsePeerAddress(s) : undefined;
    if (!a)
      throw new P2PError(
        'INVALID_MESSAGE',
        `pex: address ${i} (${JSON.stringify(s).slice(0, 80)}) is not "<node_id>@<host>:<port>"`,
      );
    addrs.push(a);
  }
  return { kind: 'addrs', addrs };
}

export interface PexOptions {
  book: AddressBook;
  /** [p2p] seeds: dialled when the node knows nobody (or no address), and asked for addresses. */
  seeds: PeerAddress[];
  /** [p2p] seed_mode: answer inbound peers' requests, then hang up on them. */
  seedMode?: boolean;
  /** Node IDs dialled by their own loops (persistent peers): never dialled from the book. */
  persistentIds: string[];
  /** How often outbound peers are topped up and the book saved (CometBFT: 30 s). */
  ensurePeriodMs?: number;
  /** A peer asking again sooner than this is disconnected (default a third of ensurePeriodMs). */
  minRequestIntervalMs?: number;
  logger: Logger;
}

export class PexReactor {
  private readonly book: AddressBook;
  private readonly seedIds: Set<string>;
  private readonly persistent: Set<string>;
  /** When we last asked each peer. */
  private readonly askedAt = new Map<string, number>();
  /** Peers asked and not answered yet: an answer is accepted only from these, once. */
  private readonly pending = new Set<string>();
  private readonly lastRequestFrom = new Map<string, number>();
  private readonly dialing = new Set<string>();
  private readonly ensureMs: number;
  private readonly minIntervalMs: number;
  private timer: NodeJS.Timeout | undefined;
  private soon: NodeJS.Timeout | undefined;
  private running = false;
  private readonly offPeers: () => void;

  constructor(
    private readonly host: P2PHost,
    private readonly opts: PexOptions,
  ) {
    this.book = opts.book;
    this.seedIds = new Set(opts.seeds.map((s) => s.nodeId.toLowerCase()));
    this.persistent = new Set(opts.persistentIds.map((s) => s.toLowerCase()));
    this.ensureMs = opts.ensurePeriodMs ?? 30_000;
    this.minIntervalMs = opts.minRequestIntervalMs ?? Math.floor(this.ensureMs / 3);
    host.register({
      protocol: PEX_PROTOCOL,
      maxMessageBytes: MAX_PEX_MESSAGE_BYTES,
      onMessage: (peer, payload) => this.receive(peer, decodePex(payload)),
    });
    this.offPeers = host.onPeer({
      up: (peer) => this.peerUp(peer),
      down: (peer) => {
        this.askedAt.delete(peer);
        this.pending.delete(peer);
        this.lastRequestFrom.delete(peer);
      },
    });
  }

  /** Starts topping up peers (call after the host started). */
  start(): void {
    this.running = true;
    this.scheduleSoon();
    this.timer = setInterval(() => {
      this.ensurePeers();
      this.saveBook();
    }, this.ensureMs);
    this.timer.unref();
  }

  stop(): void {
    this.running = false;
    clearInterval(this.timer);
    clearTimeout(this.soon);
    this.offPeers();
    this.saveBook();
  }

  private saveBook(): void {
    try {
      this.book.save();
    } catch (err) {
      this.opts.logger.warn({ err: (err as Error).message }, 'could not save the address book');
    }
  }

  private scheduleSoon(): void {
    if (!this.running || this.soon) return;
    this.soon = setTimeout(() => {
      this.soon = undefined;
      this.ensurePeers();
    }, 0);
  }

  private peerUp(peer: string): void {
    const outbound = this.host.isOutbound(peer);
    if (outbound === false) {
      // An inbound peer's own listen address: where others can reach it.
      const a = this.host.peerAddressOf(peer);
      const hp = a && /^(?:[a-z]+:\/\/)?(.*):(\d+)$/.exec(a.listenAddr);
      if (a && hp) {
        let host = hp[1]!.replace(/^\[|\]$/g, '');
        if (host === '0.0.0.0' || host === '::' || host === '') host = a.remoteIp;
        const refusal = this.book.add({ nodeId: peer, host, port: Number(hp[2]) }, 'inbound');
        if (refusal)
          this.opts.logger.debug({ peer, reason: refusal }, 'inbound peer address not added to the book');
      }
    } else {
      this.book.markGood(peer);
    }
    if (this.seedIds.has(peer) || (outbound && this.book.size < NEED_ADDRESSES)) this.request(peer);
  }

  /**
   * Asks a peer for addresses: at most once per ensure period, and not while an earlier request
   * is unanswered (for up to three periods), so that a slow link never delivers two at once.
   */
  private request(peer: string): void {
    const at = this.askedAt.get(peer);
    if (at !== undefined) {
      const since = Date.now() - at;
      if (since < this.ensureMs || (this.pending.has(peer) && since < 3 * this.ensureMs)) return;
    }
    if (this.host.send(peer, PEX_PROTOCOL, encodePex({ kind: 'request' }))) {
      this.askedAt.set(peer, Date.now());
      this.pending.add(peer);
    }
  }

  private receive(peer: string, m: PexMessage): void {
    const now = Date.now();
    if (m.kind === 'request') {
      const last = this.lastRequestFrom.get(peer);
      if (last !== undefined && now - last < this.minIntervalMs) {
        throw new P2PError(
          'INVALID_MESSAGE',
          `pex: asked for addresses ${now - last} ms after the previous request (at least ${this.minIntervalMs} ms apart)`,
        );
      }
      this.lastRequestFrom.set(peer, now);
      const addrs = this.book.selection(MAX_PEX_ADDRS, new Set([peer]));
      this.host.send(peer, PEX_PROTOCOL, encodePex({ kind: 'addrs', addrs }));
      if (this.opts.seedMode && this.host.isOutbound(peer) === false && !this.persistent.has(peer)) {
        // Long enough for the answer to leave before the connection closes.
        const t = setTimeout(
          () => this.host.hangUp(peer, `seed mode: answered with ${addrs.length} addresses`),
          500,
        );
        t.unref();
      }
      return;
    }
    if (!this.pending.delete(peer))
      throw new P2PError('INVALID_MESSAGE', 'pex: addresses sent without a request');
    let added = 0;
    for (const a of m.addrs) {
      const fresh = !this.book.has(a.nodeId);
      if (this.book.add(a, peer) === undefined && fresh) added++;
    }
    this.opts.logger.debug({ peer, received: m.addrs.length, added }, 'peer exchange addresses');
    if (added > 0) this.scheduleSoon();
  }

  /** Tops up outbound peers from the book, asks for addresses when short, falls back to seeds. */
  private ensurePeers(): void {
    if (!this.running) return;
    const connected = new Set(this.host.peerIds());
    const need = this.host.maxOutboundPeers - this.host.outboundCount - this.dialing.size;
    let dialled = 0;
    // A seed keeps its connections for newcomers: it dials nobody from its book (no crawling).
    if (need > 0 && !this.opts.seedMode) {
      const exclude = new Set([...connected, ...this.dialing, ...this.persistent, ...this.seedIds]);
      for (const a of this.book.candidates(need, exclude)) {
        dialled++;
        void this.dialFromBook(a);
      }
    }
    if (this.book.size < NEED_ADDRESSES) {
      const askable = [...connected].filter(
        (p) => !this.askedAt.has(p) || Date.now() - this.askedAt.get(p)! >= this.ensureMs,
      );
      const pick = askable[Math.floor(Math.random() * askable.length)];
      if (pick) this.request(pick);
    }
    if (this.opts.seeds.length > 0 && dialled === 0 && (connected.size === 0 || this.book.size === 0)) {
      for (const s of this.opts.seeds) {
        if (!connected.has(s.nodeId) && !this.dialing.has(s.nodeId)) void this.dialSeed(s);
      }
    }
  }

  private async dialFromBook(a: PeerAddress): Promise<void> {
    this.dialing.add(a.nodeId);
    this.book.markAttempt(a.nodeId);
    try {
      await this.host.dial(a);
      this.book.markGood(a.nodeId);
    } catch (err) {
      this.book.markFailed(a.nodeId);
      this.opts.logger.debug(
        { peer: a.nodeId, address: `${a.host}:${a.port}`, reason: (err as Error).message },
        'dialling an address from the book failed',
      );
    } finally {
      this.dialing.delete(a.nodeId);
    }
  }

  private async dialSeed(s: PeerAddress): Promise<void> {
    this.dialing.add(s.nodeId);
    try {
      await this.host.dial(s);
    } catch (err) {
      this.opts.logger.info(
        { seed: s.nodeId, address: `${s.host}:${s.port}`, reason: (err as Error).message },
        'dialling a seed failed',
      );
    } finally {
      this.dialing.delete(s.nodeId);
    }
  }
}
