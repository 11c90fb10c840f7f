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

/** A value the tagged copy leaves to JSON.stringify's replacer (toJSON methods, boxed primitives). */
const SLOW_PATH = Symbol('tagged JSON slow path');
/** An object neither fast writer models: one with toJSON, or a boxed primitive. */
function leftToReplacer(o: Record<string, unknown>): boolean {
  return typeof o.toJSON === 'function' || o instanceof Number || o instanceof String || o instanceof Boolean;
}

/** A value holding TaggedJsonText, which JSON.stringify cannot write verbatim: see spliced(). */
const SPLICE = Symbol('tagged JSON with texts to splice');

/**
 * `v` with every bigint, byte array and Map replaced by its tag object, everything else as is: a
 * copy that plain JSON.stringify writes as JSON.stringify(v, replacer) would. A replacer function
 * costs a call per key and takes V8 off its fast path, and a string built by hand piece by piece
 * (the encoder this replaced) cost several times the copy and V8's own stringify on a block's
 * transaction results, which are encoded at every block with a few hundred bytes per transaction
 * (docs/benchmarks.md, "Node CPU per value transfer").
 * Anything it does not model (an object with toJSON, a boxed primitive, an own "__proto__" key)
 * throws SLOW_PATH and the whole value goes through the replacer.
 */
function tagged(v: unknown): unknown {
  switch (typeof v) {
    case 'bigint':
      return { $n: v.toString() };
    case 'object': {
      if (v === null) return null;
      if (v instanceof TaggedJsonText) throw SPLICE;
      if (v instanceof Uint8Array)
        return { $b: Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('base64') };
      if (Array.isArray(v)) {
        const out = new Array<unknown>(v.length);
        for (let i = 0; i < v.length; i++) out[i] = tagged(v[i]);
        return out;
      }
      if (v instanceof Map) return { $m: tagged([...v.entries()]) };
      const o = v as Record<string, unknown>;
      if (leftToReplacer(o)) throw SLOW_PATH;
      const out: Record<string, unknown> = {};
      for (const k of Object.keys(o)) {
        if (k === '__proto__') throw SLOW_PATH;
        out[k] = tagged(o[k]);
      }
      return out;
    }
    default:
      // Strings, numbers and booleans as they are; undefined, functions and symbols too, which
      // JSON.stringify leaves out of objects and writes as null in arrays.
      return v;
  }
}

/**
 * The same text as JSON.stringify(value, replacer), written piece by piece, with each TaggedJsonText
 * written as it is: for the values that carry texts encoded before (the chain state's validator sets
 * and params, written at every block). Throws SLOW_PATH as tagged() does.
 */
function spliced(v: unknown): string | undefined {
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
          out += spliced(v[i]) ?? 'null';
        }
        return `${out}]`;
      }
      if (v instanceof Map) return `{"$m":${spliced([...v.entries()])}}`;
      const o = v as Record<string, unknown>;
      if (leftToReplacer(o)) throw SLOW_PATH;
      let out = '{';
      let first = true;
      for (const k of Object.keys(o)) {
        const e = spliced(o[k]);
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
    const out = JSON.stringify(tagged(value));
    if (out !== undefined) return out;
  } catch (err) {
    if (err === SPLICE) return toTaggedJsonSpliced(value);
    if (err !== SLOW_PATH) throw err;
  }
  return JSON.stringify(value, replacer);
}

/**
 * toTaggedJson for a value known to hold TaggedJsonText (chainstate.ts), written piece by piece
 * straight away rather than after a tagged copy that would stop at the first text.
 */
export function toTaggedJsonSpliced(value: unknown): string {
  try {
    const out = spliced(value);
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
