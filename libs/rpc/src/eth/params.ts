// Decoding of positional JSON-RPC params with geth's rules and error texts, so that a client sees
// exactly what geth would answer ("invalid argument 0: json: cannot unmarshal hex string without
// 0x prefix into Go value of type common.Address", "missing value for required argument 1", ...).
import type { AccessListEntry, Hex } from '@noded/types';
import { invalidParams } from './errors.js';

/**
 * A value that could not be decoded. `goType` set: a Go json.UnmarshalTypeError ("json: cannot
 * unmarshal <value> into Go value of type <goType>"); otherwise `message` is printed as is.
 */
export class DecodeError extends Error {
  structName?: string;
  fieldPath: string[] = [];
  constructor(
    message: string,
    readonly goType?: string,
  ) {
    super(message);
    this.name = 'DecodeError';
  }

  /** The text geth prints for this error. */
  describe(): string {
    if (this.goType === undefined) return this.message;
    if (this.structName !== undefined) {
      return `json: cannot unmarshal ${this.message} into Go struct field ${this.structName}.${this.fieldPath.join('.')} of type ${this.goType}`;
    }
    return `json: cannot unmarshal ${this.message} into Go value of type ${this.goType}`;
  }
}

const typeError = (value: string, goType: string) => new DecodeError(value, goType);
const plain = (message: string) => new DecodeError(message);

/** Go's name of a JSON value's kind, as json.UnmarshalTypeError prints it. */
function jsonKind(v: unknown): string {
  if (typeof v === 'string') return 'string';
  if (typeof v === 'number') return 'number';
  if (typeof v === 'boolean') return 'bool';
  if (Array.isArray(v)) return 'array';
  return 'object';
}

export type Decoder<T> = (v: unknown) => T;

/** Decodes field `name` of a JSON object as part of Go struct `structName` (adds geth's context). */
export function field<T>(
  structName: string,
  obj: Record<string, unknown>,
  name: string,
  dec: Decoder<T>,
): T | undefined {
  const v = obj[name];
  if (v === undefined || v === null) return undefined;
  try {
    return dec(v);
  } catch (e) {
    if (e instanceof DecodeError) {
      e.structName ??= structName;
      e.fieldPath.unshift(name);
    }
    throw e;
  }
}

const HEX_RE = /^[0-9a-fA-F]*$/;
const has0x = (s: string) => s.startsWith('0x') || s.startsWith('0X');

function fixedHex(v: unknown, bytes: number, goType: string): Hex {
  if (typeof v !== 'string') throw typeError('non-string', goType);
  let raw = v;
  if (raw.length > 0) {
    if (!has0x(raw)) throw typeError('hex string without 0x prefix', goType);
    raw = raw.slice(2);
    if (raw.length % 2 !== 0) throw typeError('hex string of odd length', goType);
  }
  if (raw.length / 2 !== bytes)
    throw plain(`hex string has length ${raw.length}, want ${bytes * 2} for ${goType}`);
  if (!HEX_RE.test(raw)) throw typeError('invalid hex string', goType);
  return `0x${raw.toLowerCase()}`;
}

/** common.Address */
export const address: Decoder<Hex> = (v) => fixedHex(v, 20, 'common.Address');
/** common.Hash */
export const hash: Decoder<Hex> = (v) => fixedHex(v, 32, 'common.Hash');

/** hexutil.Bytes */
export const bytes: Decoder<Hex> = (v) => {
  const goType = 'hexutil.Bytes';
  if (typeof v !== 'string') throw typeError('non-string', goType);
  if (v.length === 0) return '0x';
  if (!has0x(v)) throw typeError('hex string without 0x prefix', goType);
  const raw = v.slice(2);
  if (raw.length % 2 !== 0) throw typeError('hex string of odd length', goType);
  if (!HEX_RE.test(raw)) throw typeError('invalid hex string', goType);
  return `0x${raw.toLowerCase()}`;
};

function hexNumber(v: unknown, goType: string, maxDigits: number, rangeMsg: string): bigint {
  if (typeof v !== 'string') throw typeError('non-string', goType);
  if (v.length === 0) return 0n;
  if (!has0x(v)) throw typeError('hex string without 0x prefix', goType);
  const raw = v.slice(2);
  if (raw.length === 0) throw typeError('hex string "0x"', goType);
  if (raw.length > 1 && raw[0] === '0') throw typeError('hex number with leading zero digits', goType);
  if (raw.length > maxDigits) throw typeError(rangeMsg, goType);
  if (!HEX_RE.test(raw)) throw typeError('invalid hex string', goType);
  return BigInt(`0x${raw}`);
}

/** *hexutil.Big (up to 256 bits) */
export const big: Decoder<bigint> = (v) => hexNumber(v, '*hexutil.Big', 64, 'hex number > 256 bits');
/** hexutil.Uint64 */
export const uint64: Decoder<bigint> = (v) => hexNumber(v, 'hexutil.Uint64', 16, 'hex number > 64 bits');
/** hexutil.Uint (used for indexes) */
export const uint: Decoder<bigint> = (v) => hexNumber(v, 'hexutil.Uint', 16, 'hex number > 64 bits');

export const bool: Decoder<boolean> = (v) => {
  if (v === null) return false;
  if (typeof v !== 'boolean') throw typeError(jsonKind(v), 'bool');
  return v;
};

export const string: Decoder<string> = (v) => {
  if (v === null) return '';
  if (typeof v !== 'string') throw typeError(jsonKind(v), 'string');
  return v;
};

/** rpc.ID (filter and subscription ids) */
export const rpcId: Decoder<string> = (v) => {
  if (typeof v !== 'string') throw typeError(jsonKind(v), 'rpc.ID');
  return v;
};

/** An argument geth accepts that this node does not implement: refused when given, never ignored. */
export function unsupported(what: string): Decoder<never> {
  return () => {
    throw new DecodeError(`${what} are not supported by this node`);
  };
}

/** A JSON value passed through untouched (typed data, tracer configs). */
export const raw: Decoder<unknown> = (v) => v;

export function arrayOf<T>(dec: Decoder<T>, goType: string): Decoder<T[]> {
  return (v) => {
    if (v === null) return [];
    if (!Array.isArray(v)) throw typeError(jsonKind(v), goType);
    return v.map((x) => dec(x));
  };
}

/** float64 (fee history percentiles) */
export const float: Decoder<number> = (v) => {
  if (typeof v !== 'number') throw typeError(jsonKind(v), 'float64');
  return v;
};

/** math.HexOrDecimal64: "0x10", "16" or 16. */
export const hexOrDecimal64: Decoder<bigint> = (v) => {
  if (typeof v === 'number') {
    if (!Number.isInteger(v) || v < 0) throw typeError(`number ${v}`, 'math.HexOrDecimal64');
    return BigInt(v);
  }
  if (typeof v !== 'string') throw typeError(jsonKind(v), 'math.HexOrDecimal64');
  const ok = has0x(v) ? /^0[xX][0-9a-fA-F]{1,16}$/.test(v) : /^[0-9]{1,20}$/.test(v);
  const n = ok ? BigInt(v) : -1n;
  if (n < 0n || n >= 1n << 64n) throw plain(`invalid hex or decimal integer "${v}"`);
  return n;
};

// ---- block parameters ----------------------------------------------------------------------

export type BlockTag = 'latest' | 'pending' | 'safe' | 'finalized' | 'earliest';
const TAGS = new Set<string>(['latest', 'pending', 'safe', 'finalized', 'earliest']);
/**
 * One frozen parameter per tag, shared by every call: a fresh `{ tag }` per call would be an object
 * literal that lives across the call's wait for the chain, which V8 may learn to allocate in the old
 * generation (see decodeArgs).
 */
const TAG_PARAMS = new Map<string, { readonly tag: BlockTag }>(
  [...TAGS].map((t) => [t, Object.freeze({ tag: t as BlockTag })]),
);
const tagParam = (t: string): { tag: BlockTag } => TAG_PARAMS.get(t) as { tag: BlockTag };

/** rpc.BlockNumber: a tag or a number. */
export type BlockNumberParam = { tag: BlockTag } | { number: bigint };
/** rpc.BlockNumberOrHash (EIP-1898). `none` when the object named neither. */
export type BlockRef = BlockNumberParam | { hash: Hex; requireCanonical: boolean } | { none: true };

const MAX_INT64 = (1n << 63n) - 1n;

/** hexutil.DecodeUint64 with its unwrapped error texts. */
function decodeUint64Text(s: string): bigint {
  if (s.length === 0) throw plain('empty hex string');
  if (!has0x(s)) throw plain('hex string without 0x prefix');
  const raw = s.slice(2);
  if (raw.length === 0) throw plain('hex string "0x"');
  if (raw.length > 1 && raw[0] === '0') throw plain('hex number with leading zero digits');
  if (!HEX_RE.test(raw)) throw plain('invalid hex string');
  if (raw.length > 16) throw plain('hex number > 64 bits');
  return BigInt(`0x${raw}`);
}

/** rpc.BlockNumber */
export const blockNumber: Decoder<BlockNumberParam> = (v) => {
  const input = typeof v === 'string' ? v : JSON.stringify(v ?? null);
  if (TAGS.has(input)) return tagParam(input);
  const n = decodeUint64Text(input);
  if (n > MAX_INT64) throw plain('block number larger than int64');
  return { number: n };
};

/** rpc.BlockNumberOrHash: tag, number, 32-byte hash, or {blockNumber} | {blockHash, requireCanonical}. */
export const blockRef: Decoder<BlockRef> = (v) => {
  if (v !== null && typeof v === 'object' && !Array.isArray(v)) {
    const o = v as Record<string, unknown>;
    const num = field('BlockNumberOrHash', o, 'blockNumber', blockNumber);
    const h = field('BlockNumberOrHash', o, 'blockHash', hash);
    const canonical = field('BlockNumberOrHash', o, 'requireCanonical', bool) ?? false;
    if (num !== undefined && h !== undefined) {
      throw plain('cannot specify both BlockHash and BlockNumber, choose one or the other');
    }
    if (num !== undefined) return num;
    if (h !== undefined) return { hash: h, requireCanonical: canonical };
    return { none: true };
  }
  if (v === null) return { none: true };
  if (typeof v !== 'string') throw typeError(jsonKind(v), 'string');
  if (TAGS.has(v)) return tagParam(v);
  if (v.length === 66) {
    const raw = v.slice(2);
    if (!has0x(v)) throw plain('hex string without 0x prefix');
    if (!HEX_RE.test(raw)) throw plain('invalid hex string');
    return { hash: `0x${raw.toLowerCase()}`, requireCanonical: false };
  }
  const n = decodeUint64Text(v);
  if (n > MAX_INT64) throw plain('blocknumber too high');
  return { number: n };
};

// ---- structured arguments ------------------------------------------------------------------

function asObject(v: unknown, goType: string): Record<string, unknown> {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) throw typeError(jsonKind(v), goType);
  return v as Record<string, unknown>;
}

/** types.AccessList */
export const accessList: Decoder<AccessListEntry[]> = (v) => {
  if (!Array.isArray(v)) throw typeError(jsonKind(v), 'types.AccessList');
  return v.map((t) => {
    const o = asObject(t, 'types.AccessTuple');
    return {
      address: field('AccessTuple', o, 'address', address) ?? '0x0000000000000000000000000000000000000000',
      storageKeys: field('AccessTuple', o, 'storageKeys', arrayOf(hash, '[]common.Hash')) ?? [],
    };
  });
};

/** ethapi.TransactionArgs as decoded by geth (both data and input kept; validated by the caller). */
export interface TransactionArgs {
  from?: Hex;
  to?: Hex;
  gas?: bigint;
  gasPrice?: bigint;
  maxFeePerGas?: bigint;
  maxPriorityFeePerGas?: bigint;
  value?: bigint;
  nonce?: bigint;
  data?: Hex;
  input?: Hex;
  accessList?: AccessListEntry[];
  chainId?: bigint;
  type?: bigint;
}

export const transactionArgs: Decoder<TransactionArgs> = (v) => {
  const o = asObject(v, 'ethapi.TransactionArgs');
  const S = 'TransactionArgs';
  const out: TransactionArgs = {};
  const set = <K extends keyof TransactionArgs>(k: K, val: TransactionArgs[K] | undefined) => {
    if (val !== undefined) out[k] = val;
  };
  set('from', field(S, o, 'from', address));
  set('to', field(S, o, 'to', address));
  set('gas', field(S, o, 'gas', uint64));
  set('gasPrice', field(S, o, 'gasPrice', big));
  set('maxFeePerGas', field(S, o, 'maxFeePerGas', big));
  set('maxPriorityFeePerGas', field(S, o, 'maxPriorityFeePerGas', big));
  set('value', field(S, o, 'value', big));
  set('nonce', field(S, o, 'nonce', uint64));
  set('data', field(S, o, 'data', bytes));
  set('input', field(S, o, 'input', bytes));
  set('accessList', field(S, o, 'accessList', accessList));
  set('chainId', field(S, o, 'chainId', big));
  set('type', field(S, o, 'type', uint64));
  return out;
};

/** override.StateOverride */
export interface DecodedAccountOverride {
  nonce?: bigint;
  code?: Hex;
  balance?: bigint;
  state?: Record<Hex, Hex>;
  stateDiff?: Record<Hex, Hex>;
}

function hashMap(v: unknown): Record<Hex, Hex> {
  const o = asObject(v, 'map[common.Hash]common.Hash');
  const out: Record<Hex, Hex> = {};
  for (const [k, val] of Object.entries(o)) out[hash(k)] = hash(val);
  return out;
}

export const stateOverride: Decoder<Record<Hex, DecodedAccountOverride>> = (v) => {
  const o = asObject(v, 'override.StateOverride');
  const out: Record<Hex, DecodedAccountOverride> = {};
  for (const [k, val] of Object.entries(o)) {
    const addr = address(k);
    const a = asObject(val, 'override.OverrideAccount');
    const S = 'OverrideAccount';
    const acc: DecodedAccountOverride = {};
    const nonce = field(S, a, 'nonce', uint64);
    const code = field(S, a, 'code', bytes);
    const balance = field(S, a, 'balance', big);
    const state = field(S, a, 'state', hashMap);
    const stateDiff = field(S, a, 'stateDiff', hashMap);
    if (nonce !== undefined) acc.nonce = nonce;
    if (code !== undefined) acc.code = code;
    if (balance !== undefined) acc.balance = balance;
    if (state !== undefined) acc.state = state;
    if (stateDiff !== undefined) acc.stateDiff = stateDiff;
    out[addr] = acc;
  }
  return out;
};

/** filters.FilterCriteria with geth's custom decoding rules and texts. */
export interface FilterCriteria {
  blockHash?: Hex;
  fromBlock?: BlockNumberParam;
  toBlock?: BlockNumberParam;
  addresses: Hex[];
  topics: Array<Hex[] | null>;
}

function filterAddress(v: unknown): Hex {
  const s = v as string;
  if (!has0x(s)) throw plain('hex string without 0x prefix');
  const raw = s.slice(2);
  if (raw.length % 2 !== 0) throw plain('hex string of odd length');
  if (!HEX_RE.test(raw)) throw plain('invalid hex string');
  if (raw.length !== 40)
    throw plain(`hex has invalid length ${raw.length / 2} after decoding; expected 20 for address`);
  return `0x${raw.toLowerCase()}`;
}

function filterTopic(v: unknown): Hex {
  if (typeof v !== 'string' || !has0x(v)) throw plain('invalid topic(s)');
  const raw = v.slice(2);
  if (raw.length !== 64 || !HEX_RE.test(raw)) throw plain('invalid topic(s)');
  return `0x${raw.toLowerCase()}`;
}

export const filterCriteria: Decoder<FilterCriteria> = (v) => {
  const o = asObject(v, 'filters.FilterCriteria');
  const S = 'input';
  const out: FilterCriteria = { addresses: [], topics: [] };
  const bh = field(S, o, 'blockHash', hash);
  const from = field(S, o, 'fromBlock', blockNumber);
  const to = field(S, o, 'toBlock', blockNumber);
  if (bh !== undefined) {
    if (from !== undefined || to !== undefined) {
      throw plain('cannot specify both BlockHash and FromBlock/ToBlock, choose one or the other');
    }
    out.blockHash = bh;
  }
  if (from !== undefined) out.fromBlock = from;
  if (to !== undefined) out.toBlock = to;
  const addr = o['address'];
  if (addr !== undefined && addr !== null) {
    if (Array.isArray(addr)) {
      addr.forEach((a, i) => {
        if (typeof a !== 'string') throw plain(`non-string address at index ${i}`);
        try {
          out.addresses.push(filterAddress(a));
        } catch (e) {
          throw plain(`invalid address at index ${i}: ${(e as Error).message}`);
        }
      });
    } else if (typeof addr === 'string') {
      try {
        out.addresses.push(filterAddress(addr));
      } catch (e) {
        throw plain(`invalid address: ${(e as Error).message}`);
      }
    } else {
      throw plain('invalid addresses in query');
    }
  }
  const topics = o['topics'];
  if (topics !== undefined && topics !== null) {
    if (!Array.isArray(topics)) throw plain('invalid topic(s)');
    for (const t of topics) {
      if (t === null) out.topics.push(null);
      else if (typeof t === 'string') out.topics.push([filterTopic(t)]);
      else if (Array.isArray(t)) {
        // A null inside an OR-list matches anything, as in geth.
        if (t.length === 0 || t.some((x) => x === null)) out.topics.push(null);
        else out.topics.push(t.map(filterTopic));
      } else throw plain('invalid topic(s)');
    }
  }
  return out;
};

/** tracers.TraceConfig / TraceCallConfig (tracer options are checked by the caller). */
export interface TraceConfigArg {
  tracer?: string;
  tracerConfig?: Record<string, unknown>;
  disableStorage?: boolean;
  disableStack?: boolean;
  enableMemory?: boolean;
  enableReturnData?: boolean;
  timeout?: string;
}

export const traceConfig: Decoder<TraceConfigArg> = (v) => {
  const o = asObject(v, 'tracers.TraceConfig');
  const S = 'TraceConfig';
  const out: TraceConfigArg = {};
  const tracer = field(S, o, 'tracer', string);
  if (tracer !== undefined) out.tracer = tracer;
  const tc = o['tracerConfig'];
  if (tc !== undefined && tc !== null) out.tracerConfig = asObject(tc, 'json.RawMessage');
  for (const k of ['disableStorage', 'disableStack', 'enableMemory', 'enableReturnData'] as const) {
    const b = field(S, o, k, bool);
    if (b !== undefined) out[k] = b;
  }
  const timeout = field(S, o, 'timeout', string);
  if (timeout !== undefined) out.timeout = timeout;
  return out;
};

// ---- positional argument lists -------------------------------------------------------------

export interface ArgSpec<T> {
  decode: Decoder<T>;
  optional: boolean;
}
/** A required argument (a Go non-pointer parameter). */
export const req = <T>(decode: Decoder<T>): ArgSpec<T> => ({ decode, optional: false });
/** An optional argument (a Go pointer parameter: missing or null gives undefined). */
export const opt = <T>(decode: Decoder<T>): ArgSpec<T | undefined> => ({ decode, optional: true });

export type ArgsOf<S extends readonly ArgSpec<unknown>[]> = {
  -readonly [K in keyof S]: S[K] extends ArgSpec<infer T> ? T : never;
};

/** geth's parsePositionalArguments: same order of checks, same texts, all -32602. */
export function decodeArgs<S extends readonly ArgSpec<unknown>[]>(params: unknown, specs: S): ArgsOf<S> {
  let list: unknown[];
  if (params === undefined || params === null) list = [];
  else if (Array.isArray(params)) list = params;
  else throw invalidParams('non-array args');
  // Built by map, not pushed onto a literal: V8 may learn that a literal's arrays live long (the
  // arguments of a call held while the chain answers) and allocate all of them in the old
  // generation from then on; an array a builtin makes is never placed there.
  const out = specs.map((spec, i) => {
    if (i >= list.length) {
      if (!spec.optional) throw invalidParams(`missing value for required argument ${i}`);
      return undefined;
    }
    const v = list[i];
    if (v === null && spec.optional) return undefined;
    try {
      return spec.decode(v);
    } catch (e) {
      if (e instanceof DecodeError) throw invalidParams(`invalid argument ${i}: ${e.describe()}`);
      throw e;
    }
  });
  if (list.length > specs.length) throw invalidParams(`too many arguments, want at most ${specs.length}`);
  return out as ArgsOf<S>;
}
