// Tagged JSON for records that are stored or sent but never hashed (WAL entries, chain state,
// block results, network messages): bigint becomes {"$n":"<decimal>"}, bytes become
// {"$b":"<base64>"}. Plain JSON otherwise, so a record stays readable with standard tools.
import { ConsensusError } from '../errors.js';

function replacer(this: Record<string, unknown>, key: string, value: unknown): unknown {
  const original = this[key];
  if (typeof original === 'bigint') return { $n: original.toString() };
  if (original instanceof Uint8Array)
    return { $b: Buffer.from(original.buffer, original.byteOffset, original.byteLength).toString('base64') };
  if (original instanceof Map) return { $m: [...original.entries()] };
  return value;
}

function reviver(_key: string, value: unknown): unknown {
  if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
    const o = value as Record<string, unknown>;
    const keys = Object.keys(o);
    if (keys.length === 1) {
      if (typeof o.$n === 'string') return BigInt(o.$n);
      if (typeof o.$b === 'string') return new Uint8Array(Buffer.from(o.$b, 'base64'));
      if (Array.isArray(o.$m)) return new Map(o.$m as Array<[unknown, unknown]>);
    }
  }
  return value;
}

export function toTaggedJson(value: unknown): string {
  return JSON.stringify(value, replacer);
}

export function fromTaggedJson<T>(text: string): T {
  try {
    return JSON.parse(text, reviver) as T;
  } catch (err) {
    throw new ConsensusError('INVALID_ENCODING', `tagged JSON: ${(err as Error).message}`);
  }
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

export function encodeTagged(value: unknown): Uint8Array {
  return encoder.encode(toTaggedJson(value));
}

export function decodeTagged<T>(bytes: Uint8Array): T {
  return fromTaggedJson<T>(decoder.decode(bytes));
}
