// eth_getLogs criteria compiled to raw bytes, so stored logs are matched before any of them is
// rendered as hex: only the logs a query returns pay for rendering.
import { keccak256 } from '@noded/crypto';
import type { Hex } from '@noded/types';
import { fromHex, normAddress, padLeft } from '../bytes.js';
import type { StoredLog } from './store.js';

/** The three bloom bits of one value: byte offsets into the 256-byte bloom and their masks. */
type BloomBits = [number, number, number, number, number, number];

export interface RawLogFilter {
  /** Any of these emitters; null: any address. */
  addresses: Uint8Array[] | null;
  /** Per topic position, any of these 32-byte values; null: a wildcard. */
  topics: Array<Uint8Array[] | null>;
  /** The bloom bits of the addresses and topics, computed when a first block's bloom is checked. */
  bits?: { addresses: BloomBits[] | null; topics: Array<BloomBits[] | null> };
}

function bloomBits(item: Uint8Array): BloomBits {
  const h = keccak256(item);
  const out = [0, 0, 0, 0, 0, 0] as BloomBits;
  for (let i = 0; i < 3; i++) {
    const bit = ((h[2 * i] << 8) | h[2 * i + 1]) & 2047;
    out[2 * i] = 255 - (bit >> 3);
    out[2 * i + 1] = 1 << (bit & 7);
  }
  return out;
}

/** Distinct values, by content. */
function distinct(values: Uint8Array[]): Uint8Array[] {
  const seen = new Set<string>();
  return values.filter((v) => {
    const k = Buffer.from(v).toString('hex');
    if (seen.has(k)) return false;
    seen.add(k);
    return true;
  });
}

/**
 * Compiles addresses (empty: any) and topics (per position: null or [] is a wildcard, an array
 * lists alternatives) to bytes; topics shorter than 32 bytes are left-padded as the RPC reads them.
 */
export function compileLogFilter(
  addresses: Hex[] | undefined,
  topics: Array<Hex | Hex[] | null> | undefined,
): RawLogFilter {
  const addrs = distinct((addresses ?? []).map((a) => fromHex(normAddress(a))));
  const pos = (topics ?? []).map((t) => {
    if (t === null) return null;
    const alts = distinct((Array.isArray(t) ? t : [t]).map((x) => padLeft(fromHex(x), 32)));
    return alts.length === 0 ? null : alts;
  });
  return {
    addresses: addrs.length === 0 ? null : addrs,
    topics: pos,
  };
}

function bitsIn(bloom: Uint8Array, b: BloomBits): boolean {
  return (bloom[b[0]] & b[1]) !== 0 && (bloom[b[2]] & b[3]) !== 0 && (bloom[b[4]] & b[5]) !== 0;
}

function anyBitsIn(bloom: Uint8Array, alts: BloomBits[]): boolean {
  for (const b of alts) if (bitsIn(bloom, b)) return true;
  return false;
}

/** False when a block with this logs bloom surely has no matching log. */
export function bloomMayMatch(f: RawLogFilter, bloom: Uint8Array): boolean {
  f.bits ??= {
    addresses: f.addresses === null ? null : f.addresses.map(bloomBits),
    topics: f.topics.map((alts) => (alts === null ? null : alts.map(bloomBits))),
  };
  if (f.bits.addresses !== null && !anyBitsIn(bloom, f.bits.addresses)) return false;
  for (const alts of f.bits.topics) if (alts !== null && !anyBitsIn(bloom, alts)) return false;
  return true;
}

/** Reads RLP item headers in place: after `read`, the item's payload is `buf[start, end)`. */
class RlpCursor {
  start = 0;
  end = 0;
  list = false;
  constructor(private readonly buf: Uint8Array) {}

  /** The item at `pos`, which must end by `limit`. */
  read(pos: number, limit: number): this {
    const b = this.buf;
    if (pos >= limit) throw corrupt(pos);
    const p = b[pos];
    let start: number;
    let len: number;
    if (p < 0x80) {
      start = pos;
      len = 1;
    } else if (p <= 0xb7) {
      start = pos + 1;
      len = p - 0x80;
    } else if (p <= 0xbf) {
      start = pos + 1 + (p - 0xb7);
      len = this.length(pos + 1, start, limit);
    } else if (p <= 0xf7) {
      start = pos + 1;
      len = p - 0xc0;
    } else {
      start = pos + 1 + (p - 0xf7);
      len = this.length(pos + 1, start, limit);
    }
    if (start + len > limit) throw corrupt(pos);
    this.start = start;
    this.end = start + len;
    this.list = p >= 0xc0;
    return this;
  }

  /** A list at `pos`. */
  expectList(pos: number, limit: number): this {
    this.read(pos, limit);
    if (!this.list) throw corrupt(pos);
    return this;
  }

  private length(from: number, to: number, limit: number): number {
    if (to > limit || to - from > 6) throw corrupt(from);
    let n = 0;
    for (let i = from; i < to; i++) n = n * 256 + this.buf[i];
    return n;
  }
}

function corrupt(pos: number): Error {
  return new Error(`stored receipts record is corrupt at byte ${pos}`);
}

function sameAt(buf: Uint8Array, start: number, end: number, want: Uint8Array): boolean {
  if (end - start !== want.length) return false;
  for (let i = want.length - 1; i >= 0; i--) if (buf[start + i] !== want[i]) return false;
  return true;
}

function anySameAt(buf: Uint8Array, start: number, end: number, alts: Uint8Array[]): boolean {
  for (const a of alts) if (sameAt(buf, start, end, a)) return true;
  return false;
}

/** Each receipts record's receipt offsets, found once (a cached record is the same buffer each time). */
const startsOf = new WeakMap<Uint8Array, Uint32Array>();

function receiptStarts(enc: Uint8Array, c: RlpCursor, receiptsEnd: number): Uint32Array {
  const known = startsOf.get(enc);
  if (known) return known;
  const out: number[] = [];
  c.expectList(0, enc.length);
  for (let r = c.start; r < receiptsEnd; r = c.end) {
    out.push(r);
    c.expectList(r, receiptsEnd);
  }
  const starts = Uint32Array.from(out);
  startsOf.set(enc, starts);
  return starts;
}

/**
 * Walks a block's stored receipts record (RLP list of [type, status, cumulativeGasUsed, gasUsed,
 * effectiveGasPrice, from, to, contractAddress, logs]) and compares each log's address and topics
 * in place; only a matching log is cut out and passed to `visit` with its receipt index `i` and its
 * logIndex counted over the whole block. `visit` returns false to stop the walk. With `only`
 * (receipt index -> logIndex of its first log, from the log index) the walk visits just those
 * receipts, jumping to each by its offset in the record.
 */
export function scanLogs(
  enc: Uint8Array,
  f: RawLogFilter,
  visit: (i: number, logIndex: number, log: StoredLog) => boolean,
  only?: ReadonlyMap<number, number>,
): void {
  const c = new RlpCursor(enc);
  const want = f.topics.length;
  const topicStart: number[] = [];
  const topicEnd: number[] = [];
  c.expectList(0, enc.length);
  const receiptsEnd = c.end;
  let r = c.start;
  let logIndex = 0;
  let left = only ? only.size : Number.POSITIVE_INFINITY;
  // With `only`, the receipts' offsets (found once per record) let the walk jump to each one listed.
  const starts = only ? receiptStarts(enc, c, receiptsEnd) : undefined;
  const picked = only ? [...only.keys()].sort((a, b) => a - b) : undefined;
  for (let i = 0, k = 0; r < receiptsEnd && left > 0; i++) {
    if (picked && starts) {
      i = picked[k++]!;
      if (i >= starts.length) return;
      r = starts[i]!;
    }
    c.expectList(r, receiptsEnd);
    const receiptEnd = c.end;
    r = c.end;
    if (only) {
      logIndex = only.get(i)!;
      left--;
    }
    let p = c.start;
    for (let field = 0; field < 8; field++) p = c.read(p, receiptEnd).end;
    c.expectList(p, receiptEnd);
    const logsEnd = c.end;
    let lp = c.start;
    while (lp < logsEnd) {
      c.expectList(lp, logsEnd);
      const logEnd = c.end;
      lp = c.end;
      c.read(c.start, logEnd);
      const addrStart = c.start;
      const addrEnd = c.end;
      c.expectList(addrEnd, logEnd);
      const topicsEnd = c.end;
      let tp = c.start;
      let n = 0;
      while (tp < topicsEnd) {
        c.read(tp, topicsEnd);
        topicStart[n] = c.start;
        topicEnd[n] = c.end;
        n++;
        tp = c.end;
      }
      // The positions past the first (indexed arguments) usually differ first; the address and the
      // event signature are shared by most logs of a block the index named.
      let ok = want <= n;
      for (let t = 1; ok && t < want; t++) {
        const alts = f.topics[t];
        if (alts !== null) ok = anySameAt(enc, topicStart[t], topicEnd[t], alts);
      }
      if (ok && f.addresses !== null) ok = anySameAt(enc, addrStart, addrEnd, f.addresses);
      if (ok && want > 0 && f.topics[0] !== null)
        ok = anySameAt(enc, topicStart[0], topicEnd[0], f.topics[0]);
      if (ok) {
        c.read(topicsEnd, logEnd);
        const topics: Uint8Array[] = [];
        for (let t = 0; t < n; t++) topics.push(enc.subarray(topicStart[t], topicEnd[t]));
        const log = { address: enc.subarray(addrStart, addrEnd), topics, data: enc.subarray(c.start, c.end) };
        if (!visit(i, logIndex, log)) return;
      }
      logIndex++;
    }
  }
}
