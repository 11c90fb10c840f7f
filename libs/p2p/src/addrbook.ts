// The address book: peers this node has heard of (from seeds, peers' PEX answers and inbound
// peers' own listen addresses), with when each was last tried and last worked, so that peer
// exchange can pick whom to dial. It is a cache, kept as JSON in config/addrbook.json (CometBFT's
// file): written whole to a temporary file and renamed, so a crash leaves the old or the new book.
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { isWireNodeId, type Logger, type PeerAddress, parsePeerAddress } from '@noded/types';

/** Addresses kept; past this, the entry that failed most (then the oldest) makes room. */
export const MAX_BOOK_SIZE = 1000;
/** Consecutive failed dials after which an address that never worked is dropped. */
export const MAX_FAILED_ATTEMPTS = 8;

export interface BookEntry extends PeerAddress {
  /** Who told us: a peer's node ID, "seed" or "inbound". */
  source: string;
  addedMs: number;
  lastAttemptMs: number;
  lastSuccessMs: number;
  /** Failed dials since the last success. */
  failures: number;
}

// Defined in @noded/types (the gateway relay parses addresses without libp2p).
export { parsePeerAddress };

/** Parses dial_peers / dial_seeds addresses, naming the first bad one. */
export function peerAddresses(list: string[]): PeerAddress[] {
  return list.map((s) => {
    const a = parsePeerAddress(s);
    if (!a) throw new Error(`address (${s}) is not "<node_id>@<host>:<port>" with a 40-hex-digit node id`);
    return a;
  });
}

export function formatPeerAddress(a: PeerAddress): string {
  return `${a.nodeId}@${a.host.includes(':') ? `[${a.host}]` : a.host}:${a.port}`;
}

/**
 * Whether a host can be reached from the public internet: false for unspecified, loopback,
 * private, link-local and shared (CGNAT) ranges. Names are taken as routable. With
 * addr_book_strict (the default) only routable addresses enter the book, as in CometBFT.
 */
export function isRoutable(host: string): boolean {
  const v = isIP(host);
  if (v === 4) {
    const [a, b] = host.split('.').map(Number) as [number, number];
    if (a === 0 || a === 10 || a === 127 || a >= 224) return false;
    if (a === 169 && b === 254) return false;
    if (a === 172 && b >= 16 && b <= 31) return false;
    if (a === 192 && b === 168) return false;
    if (a === 100 && b >= 64 && b <= 127) return false;
    return true;
  }
  if (v === 6) {
    const h = host.toLowerCase();
    if (h === '::' || h === '::1') return false;
    if (/^f[cd]/.test(h) || /^fe[89ab]/.test(h)) return false;
    if (h.startsWith('::ffff:')) return isRoutable(h.slice(7));
    return true;
  }
  return host !== 'localhost';
}

export interface AddressBookOptions {
  /** Where the book is kept; undefined keeps it in memory only. */
  file?: string;
  /** addr_book_strict: refuse addresses that are not routable. */
  strict: boolean;
  /** This node's ID, never added. */
  selfId: string;
  maxSize?: number;
  logger: Logger;
  now?: () => number;
}

export class AddressBook {
  private readonly entries = new Map<string, BookEntry>();
  private dirty = false;
  private readonly now: () => number;

  constructor(private readonly opts: AddressBookOptions) {
    this.now = opts.now ?? Date.now;
    if (opts.file) this.load(opts.file);
  }

  get size(): number {
    return this.entries.size;
  }

  has(nodeId: string): boolean {
    return this.entries.has(nodeId);
  }

  get(nodeId: string): BookEntry | undefined {
    return this.entries.get(nodeId);
  }

  /**
   * Adds or refreshes an address; returns why it was refused, or undefined when it is in the book.
   * A known node ID keeps its history; its address is updated only by the node itself (source
   * "inbound") so a peer cannot redirect another node's entry.
   */
  add(addr: PeerAddress, source: string): string | undefined {
    const id = addr.nodeId.toLowerCase();
    if (!isWireNodeId(id)) return `node ID ${addr.nodeId} is not 40 hex characters`;
    if (id === this.opts.selfId) return 'this is the node itself';
    if (!Number.isInteger(addr.port) || addr.port < 1 || addr.port > 65535)
      return `port ${addr.port} is out of range`;
    if (addr.host === '' || addr.host === '0.0.0.0' || addr.host === '::')
      return `host ${JSON.stringify(addr.host)} cannot be dialled`;
    if (this.opts.strict && !isRoutable(addr.host))
      return `${addr.host} is not a routable address (addr_book_strict = true)`;
    const known = this.entries.get(id);
    if (known) {
      if (source === 'inbound' && (known.host !== addr.host || known.port !== addr.port)) {
        known.host = addr.host;
        known.port = addr.port;
        this.dirty = true;
      }
      return undefined;
    }
    const max = this.opts.maxSize ?? MAX_BOOK_SIZE;
    if (this.entries.size >= max) this.evictOne();
    this.entries.set(id, {
      nodeId: id,
      host: addr.host,
      port: addr.port,
      source,
      addedMs: this.now(),
      lastAttemptMs: 0,
      lastSuccessMs: 0,
      failures: 0,
    });
    this.dirty = true;
    return undefined;
  }

  markAttempt(nodeId: string): void {
    const e = this.entries.get(nodeId);
    if (!e) return;
    e.lastAttemptMs = this.now();
    this.dirty = true;
  }

  markGood(nodeId: string): void {
    const e = this.entries.get(nodeId);
    if (!e) return;
    e.lastSuccessMs = this.now();
    e.failures = 0;
    this.dirty = true;
  }

  /** A dial failed: an address that never worked goes after MAX_FAILED_ATTEMPTS. */
  markFailed(nodeId: string): void {
    const e = this.entries.get(nodeId);
    if (!e) return;
    e.failures++;
    if (e.failures >= MAX_FAILED_ATTEMPTS && e.lastSuccessMs === 0) this.entries.delete(nodeId);
    this.dirty = true;
  }

  remove(nodeId: string): void {
    if (this.entries.delete(nodeId)) this.dirty = true;
  }

  /**
   * Up to `n` addresses to dial, not in `exclude`, and not tried recently: an address waits
   * 30 s after a failed dial, doubling per failure up to an hour. Shuffled, those that worked before first.
   */
  candidates(n: number, exclude: ReadonlySet<string>): PeerAddress[] {
    const now = this.now();
    const ready = [...this.entries.values()].filter((e) => {
      if (exclude.has(e.nodeId)) return false;
      if (e.failures === 0) return true;
      const wait = Math.min(3_600_000, 30_000 * 2 ** (e.failures - 1));
      return now - e.lastAttemptMs >= wait;
    });
    shuffle(ready);
    ready.sort((a, b) => Number(b.lastSuccessMs > 0) - Number(a.lastSuccessMs > 0));
    return ready.slice(0, n).map(({ nodeId, host, port }) => ({ nodeId, host, port }));
  }

  /** Addresses to share with a peer that asked: a random selection, `max` at most, not `exclude`. */
  selection(max: number, exclude: ReadonlySet<string>): PeerAddress[] {
    const all = [...this.entries.values()].filter((e) => !exclude.has(e.nodeId) && e.failures < 3);
    shuffle(all);
    return all.slice(0, max).map(({ nodeId, host, port }) => ({ nodeId, host, port }));
  }

  /** Writes the book if it changed (temporary file, then rename). */
  save(): void {
    const file = this.opts.file;
    if (!file || !this.dirty) return;
    const doc = { version: 1, addrs: [...this.entries.values()] };
    const tmp = `${file}.tmp`;
    writeFileSync(tmp, `${JSON.stringify(doc, null, 2)}\n`, { mode: 0o600 });
    renameSync(tmp, file);
    this.dirty = false;
  }

  private evictOne(): void {
    let worst: BookEntry | undefined;
    for (const e of this.entries.values()) {
      if (
        !worst ||
        e.failures > worst.failures ||
        (e.failures === worst.failures && e.addedMs < worst.addedMs)
      )
        worst = e;
    }
    if (worst) this.entries.delete(worst.nodeId);
  }

  /**
   * Reads the book. A book that cannot be read is moved aside (to <file>.corrupt) with a warning
   * that names the file and the fault: it is a cache, rebuilt from seeds and peers, and must not
   * keep a node from starting. Entries that break a rule are dropped one by one, each logged.
   */
  private load(file: string): void {
    if (!existsSync(file)) return;
    const log = this.opts.logger;
    let doc: unknown;
    try {
      doc = JSON.parse(readFileSync(file, 'utf8'));
    } catch (err) {
      renameSync(file, `${file}.corrupt`);
      log.warn(
        { file, reason: (err as Error).message, movedTo: `${file}.corrupt` },
        'address book is not valid JSON; starting with an empty one',
      );
      return;
    }
    const addrs = (doc as { addrs?: unknown }).addrs;
    if (typeof doc !== 'object' || doc === null || !Array.isArray(addrs)) {
      renameSync(file, `${file}.corrupt`);
      log.warn(
        { file, reason: 'no "addrs" array', movedTo: `${file}.corrupt` },
        'address book has an unknown shape; starting with an empty one',
      );
      return;
    }
    for (const [i, raw] of addrs.entries()) {
      const e = raw as Partial<BookEntry>;
      const refusal =
        typeof e?.nodeId !== 'string' || typeof e.host !== 'string' || typeof e.port !== 'number'
          ? 'nodeId, host and port are required'
          : this.add({ nodeId: e.nodeId, host: e.host, port: e.port }, String(e.source ?? 'book'));
      if (refusal) {
        log.warn({ file, entry: i, reason: refusal }, 'address book entry dropped');
        continue;
      }
      const kept = this.entries.get(e.nodeId!.toLowerCase())!;
      kept.addedMs = num(e.addedMs, kept.addedMs);
      kept.lastAttemptMs = num(e.lastAttemptMs, 0);
      kept.lastSuccessMs = num(e.lastSuccessMs, 0);
      kept.failures = num(e.failures, 0);
    }
    this.dirty = false;
  }
}

function num(v: unknown, fallback: number): number {
  return typeof v === 'number' && Number.isFinite(v) && v >= 0 ? v : fallback;
}

function shuffle<T>(a: T[]): void {
  for (let i = a.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [a[i], a[j]] = [a[j]!, a[i]!];
  }
}
