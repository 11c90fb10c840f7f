// eth_getLogs criteria compiled to raw bytes, so stored logs are matched before any of them is
// rendered as hex: only the logs a query returns pay for rendering.
import { keccak256 } from '../../../crypto/index.js';
import type { Hex } from '../../../types/index.js';
import { fromHex, normAddress, padLeft } from '../bytes.js';

/** The three bloom bits of one value: byte offsets into the 256-byte bloom and their masks. */
type BloomBits = [number, number, number, number, number, number];

export interface RawLogFilter {
  /** Any of these emitters; null: any address. */
  addresses: Uint8Array[] | null;
  /** Per topic position, any of these 32-byte values; null: a wildcard. */
  topics: Array<Uint8Array[] | null>;
  addressBits: BloomBits[] | null;
  topicBits: Array<BloomBits[] | null>;
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
    addressBits: addrs.length === 0 ? null : addrs.map(bloomBits),
    topicBits: pos.map((alts) => (alts === null ? null : alts.map(bloomBits))),
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
  if (f.addressBits !== null && !anyBitsIn(bloom, f.addressBits)) return false;
  for (const alts of f.topicBits) if (alts !== null && !anyBitsIn(bloom, alts)) return false;
  return true;
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  // The last bytes differ first for topics holding small numbers or left-padded addresses.
  for (let i = a.length - 1; i >= 0; i--) if (a[i] !== b[i]) return false;
  return true;
}

function anySame(alts: Uint8Array[], v: Uint8Array): boolean {
  for (const a of alts) if (sameBytes(a, v)) return true;
  return false;
}

/**
 * Whether a stored log matches. As geth: a filter with more positions than the log has topics does
 * not match it, even when the extra positions are wildcards (eth_subscribe and eth_newFilter agree).
 */
export function logMatches(f: RawLogFilter, address: Uint8Array, topics: Uint8Array[]): boolean {
  if (f.topics.length > topics.length) return false;
  if (f.addresses !== null && !anySame(f.addresses, address)) return false;
  for (let i = 0; i < f.topics.length; i++) {
    const alts = f.topics[i];
    if (alts !== null && !anySame(alts, topics[i])) return false;
  }
  return true;
}
