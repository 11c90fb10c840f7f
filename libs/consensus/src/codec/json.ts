// Tagged JSON for records that are stored or sent but never hashed (WAL entries, chain state,
// block results, network messages): bigint becomes {"$n":"<decimal>"}, bytes become
// {"$b":"<base64>"}. Plain JSON otherwise, so a record stays readable with standard tools.
import { ConsensusError } from '../errors.js';

/**
 * Text already in tagged JSON, written verbatim where it stands in a value (the chain state carries
 * its validator sets, which are encoded once and stored beside it too).
 */
export class TaggedJsonText {
  constructor(readonly text: string) {}
}

function replacer(this: Record<string, unknown>, key: string, value: unknown): unknown {
  const original = this[key];
  if (original instanceof TaggedJsonText) return JSON.parse(original.text);
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

/** A value the direct encoder leaves to JSON.stringify (toJSON methods, boxed primitives). */
const SLOW_PATH = Symbol('tagged JSON slow path');

/**
 * The same text as JSON.stringify(value, replacer), written directly: a replacer function costs a
 * call per key and makes V8 leave its fast path, and the block meta, the chain state and its
 * validator sets are encoded at every block (about half the time on the records block sync writes
 * at each block). Anything it does not model (an object with toJSON, a boxed primitive) throws
 * SLOW_PATH and the whole value goes through JSON.stringify.
 */
function direct(v: unknown): string | undefined {
  switch (typeof v) {
    case 'string':
      return JSON.stringify(v);
    case 'number':
      return Number.isFinite(v) ? `${v}` : 'null';
    case 'boolean':
      return v ? 'true' : 'false';
    case 'bigint':
      return `{"$n":"${v}"}`;
    case 'object': {
      if (v === null) return 'null';
      if (v instanceof TaggedJsonText) return v.text;
      if (v instanceof Uint8Array)
        return `{"$b":"${Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('base64')}"}`;
      if (Array.isArray(v)) {
        let out = '[';
        for (let i = 0; i < v.length; i++) {
          if (i > 0) out += ',';
          out += direct(v[i]) ?? 'null';
        }
        return `${out}]`;
      }
      if (v instanceof Map) return `{"$m":${direct([...v.entries()])}}`;
      const o = v as Record<string, unknown>;
      if (
        typeof o.toJSON === 'function' ||
        v instanceof Number ||
        v instanceof String ||
        v instanceof Boolean
      )
        throw SLOW_PATH;
      let out = '{';
      let first = true;
      for (const k of Object.keys(o)) {
        const e = direct(o[k]);
        if (e === undefined) continue;
        out += first ? `${JSON.stringify(k)}:${e}` : `,${JSON.stringify(k)}:${e}`;
        first = false;
      }
      return `${out}}`;
    }
    default:
      // undefined, functions and symbols: left out of objects, null in arrays, as JSON does.
      return undefined;
  }
}

export function toTaggedJson(value: unknown): string {
  try {
    const out = direct(value);
    if (out !== undefined) return out;
  } catch (err) {
    if (err !== SLOW_PATH) throw err;
  }
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
