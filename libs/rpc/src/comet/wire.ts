// Primitive encodings of CometBFT's JSON (libs/json + gogoproto jsonpb): upper-case hex for hashes
// and addresses, base64 for raw bytes, decimal strings for 64-bit integers, RFC3339Nano UTC times.
import type { TimeNs } from '@noded/types';

/** HexBytes: upper-case hex, "" for empty. */
export function hexUpper(bytes: Uint8Array | undefined | null): string {
  if (!bytes || bytes.length === 0) return '';
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('hex').toUpperCase();
}

/** []byte as Go's encoding/json writes it: base64, or null for an empty (nil) slice. */
export function b64OrNull(bytes: Uint8Array | undefined | null): string | null {
  if (!bytes || bytes.length === 0) return null;
  return b64(bytes);
}

export function b64(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64');
}

export function fromB64(text: string): Uint8Array {
  return new Uint8Array(Buffer.from(text, 'base64'));
}

/** Strict hex decoding (even length, hex digits only); throws with Go's message otherwise. */
export function fromHex(text: string): Uint8Array {
  const clean = text.startsWith('0x') || text.startsWith('0X') ? text.slice(2) : text;
  if (clean.length % 2 !== 0) throw new Error('encoding/hex: odd length hex string');
  const bad = clean.search(/[^0-9a-fA-F]/);
  if (bad >= 0)
    throw new Error(
      `encoding/hex: invalid byte: U+${clean.charCodeAt(bad).toString(16).toUpperCase().padStart(4, '0')} '${clean[bad]}'`,
    );
  return new Uint8Array(Buffer.from(clean, 'hex'));
}

/** int64 / uint64 / int as cmtjson writes them: a decimal string. */
export function str(n: number | bigint): string {
  return typeof n === 'bigint' ? n.toString(10) : Math.trunc(n).toString(10);
}

const NS_PER_SEC = 1_000_000_000n;

/** Go's zero time.Time, which CometBFT prints for absent commit signatures. */
export const GO_ZERO_TIME = '0001-01-01T00:00:00Z';

/**
 * A TimeNs as Go's time.Time MarshalJSON writes it in UTC (RFC3339Nano): fractional seconds with
 * trailing zeros removed, no fraction at all for whole seconds.
 */
export function rfc3339Nano(ns: TimeNs): string {
  let secs = ns / NS_PER_SEC;
  let frac = ns % NS_PER_SEC;
  if (frac < 0n) {
    frac += NS_PER_SEC;
    secs -= 1n;
  }
  const iso = new Date(Number(secs) * 1000).toISOString(); // YYYY-MM-DDTHH:MM:SS.000Z
  const base = iso.slice(0, 19);
  if (frac === 0n) return `${base}Z`;
  const digits = frac.toString().padStart(9, '0').replace(/0+$/, '');
  return `${base}.${digits}Z`;
}

/** Parses an RFC3339 time (any offset, up to nanosecond precision) into TimeNs; undefined if invalid. */
export function parseRfc3339(text: string): TimeNs | undefined {
  const m = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?([Zz]|[+-]\d{2}:\d{2})$/.exec(
    text,
  );
  if (!m) return undefined;
  const [, y, mo, d, h, mi, s, fraction, zone] = m;
  const month = Number(mo);
  const day = Number(d);
  // Go's time.Parse ranges: seconds 0-59 (no leap second), zone offsets up to 24:60.
  if (month < 1 || month > 12 || day < 1 || day > 31 || Number(h) > 23 || Number(mi) > 59 || Number(s) > 59) {
    return undefined;
  }
  const date = utcMs(Number(y), month, day);
  if (new Date(date).getUTCDate() !== day) return undefined;
  let ms = date + ((Number(h) * 60 + Number(mi)) * 60 + Number(s)) * 1000;
  if (zone !== 'Z' && zone !== 'z') {
    const sign = zone[0] === '-' ? -1 : 1;
    const zoneHours = Number(zone.slice(1, 3));
    const zoneMinutes = Number(zone.slice(4, 6));
    if (zoneHours > 24 || zoneMinutes > 60) return undefined;
    ms -= sign * (zoneHours * 60 + zoneMinutes) * 60_000;
  }
  const fracNs = fraction ? BigInt(fraction.padEnd(9, '0')) : 0n;
  return BigInt(ms) * 1_000_000n + fracNs;
}

/** Parses a DATE (YYYY-MM-DD) as midnight UTC; undefined if invalid. */
export function parseDate(text: string): TimeNs | undefined {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(text);
  if (!m) return undefined;
  const [y, mo, d] = [Number(m[1]), Number(m[2]), Number(m[3])];
  if (mo < 1 || mo > 12 || d < 1) return undefined;
  const ms = utcMs(y, mo, d);
  if (new Date(ms).getUTCDate() !== d) return undefined;
  return BigInt(ms) * 1_000_000n;
}

/**
 * Milliseconds of midnight UTC of a date (month 1-12). Not Date.UTC, which reads years 0-99 as
 * 1900-1999: "0050-01-01" is the year 50, as in Go.
 */
function utcMs(year: number, month: number, day: number): number {
  const t = new Date(0);
  t.setUTCFullYear(year, month - 1, day);
  return t.getTime();
}

export function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
