// Route arguments decoded as CometBFT's RPC server decodes them: JSON-RPC params through cmtjson
// (64-bit integers must be JSON strings, []byte is base64, HexBytes is hex), URI query values
// through its rules (bare integers, 0x-prefixed hex for bytes and strings, "quoted" strings, else JSON).

/** How one argument is typed on the Go side. */
export type ParamKind =
  | 'int64' // int64, 0 when absent
  | 'int64ptr' // *int64, undefined when absent
  | 'intptr' // *int, undefined when absent
  | 'uint' // uint, 0 when absent
  | 'string'
  | 'bool'
  | 'bytes' // []byte: base64 in JSON
  | 'hexbytes' // bytes.HexBytes: hex in JSON
  | 'strings' // []string
  | 'evidence'; // types.Evidence (cmtjson {type, value})

export interface ParamSpec {
  name: string;
  kind: ParamKind;
}

export type ArgValue = number | undefined | string | boolean | Uint8Array | string[] | unknown;

/** An argument that cannot be converted; the route answers "Invalid params". */
export class ParamError extends Error {
  readonly code = 'RPC_PARAM';
  constructor(message: string) {
    super(message);
    this.name = 'ParamError';
  }
}

const GO_KIND: Record<ParamKind, string> = {
  int64: 'int64',
  int64ptr: 'int64',
  intptr: 'int',
  uint: 'uint',
  string: 'string',
  bool: 'bool',
  bytes: 'slice',
  hexbytes: 'slice',
  strings: 'slice',
  evidence: 'interface',
};

const GO_TYPE: Record<ParamKind, string> = {
  int64: 'int64',
  int64ptr: 'int64',
  intptr: 'int',
  uint: 'uint',
  string: 'string',
  bool: 'bool',
  bytes: '[]uint8',
  hexbytes: 'bytes.HexBytes',
  strings: '[]string',
  evidence: 'types.Evidence',
};

function defaultFor(kind: ParamKind): ArgValue {
  switch (kind) {
    case 'int64':
    case 'uint':
      return 0;
    case 'int64ptr':
    case 'intptr':
      return undefined;
    case 'string':
      return '';
    case 'bool':
      return false;
    case 'bytes':
    case 'hexbytes':
      return new Uint8Array(0);
    case 'strings':
      return [];
    case 'evidence':
      return null;
  }
}

function jsonTypeName(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'object') return 'object';
  return typeof v;
}

const INT64_MAX = 2n ** 63n - 1n;
const INT64_MIN = -(2n ** 63n);

/** Decimal integer text -> number within the Go type's range. */
function parseIntText(text: string, kind: ParamKind): number {
  if (!/^-?\d+$/.test(text)) {
    if (/^-?\d+(\.\d+)?([eE][+-]?\d+)?$/.test(text)) {
      throw new ParamError(`json: cannot unmarshal number ${text} into Go value of type ${GO_TYPE[kind]}`);
    }
    const first = text.length > 0 ? text[0] : '';
    throw new ParamError(
      first === ''
        ? 'unexpected end of JSON input'
        : `invalid character '${first}' looking for beginning of value`,
    );
  }
  const big = BigInt(text);
  if (kind === 'uint' && big < 0n) {
    throw new ParamError(`json: cannot unmarshal number ${text} into Go value of type uint`);
  }
  if (big > INT64_MAX || big < INT64_MIN) {
    throw new ParamError(`json: cannot unmarshal number ${text} into Go value of type ${GO_TYPE[kind]}`);
  }
  if (big > BigInt(Number.MAX_SAFE_INTEGER) || big < -BigInt(Number.MAX_SAFE_INTEGER)) {
    // Heights, pages and chunks never get near 2^53; keep the value exact by refusing it.
    throw new ParamError(`integer ${text} is out of range (|n| <= ${Number.MAX_SAFE_INTEGER})`);
  }
  return Number(big);
}

function decodeBase64Strict(text: string): Uint8Array {
  const clean = text.replace(/[\r\n]/g, '');
  if (clean.length % 4 !== 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(clean)) {
    const bad = clean.search(/[^A-Za-z0-9+/=]/);
    throw new ParamError(`illegal base64 data at input byte ${bad >= 0 ? bad : clean.length}`);
  }
  return new Uint8Array(Buffer.from(clean, 'base64'));
}

function decodeHex(text: string): Uint8Array {
  if (text.length % 2 !== 0) throw new ParamError('encoding/hex: odd length hex string');
  const bad = text.search(/[^0-9a-fA-F]/);
  if (bad >= 0)
    throw new ParamError(
      `encoding/hex: invalid byte: U+${text.charCodeAt(bad).toString(16).toUpperCase().padStart(4, '0')} '${text[bad]}'`,
    );
  return new Uint8Array(Buffer.from(text, 'hex'));
}

/** Converts one JSON-RPC parameter (already JSON-parsed) to the argument value. */
export function fromJson(kind: ParamKind, value: unknown): ArgValue {
  if (value === null || value === undefined) return defaultFor(kind);
  switch (kind) {
    case 'int64':
    case 'int64ptr':
    case 'intptr':
    case 'uint':
      if (typeof value !== 'string') {
        throw new ParamError(
          `invalid 64-bit integer encoding ${JSON.stringify(JSON.stringify(value))}, expected string`,
        );
      }
      return parseIntText(value, kind);
    case 'string':
      if (typeof value !== 'string') {
        throw new ParamError(`json: cannot unmarshal ${jsonTypeName(value)} into Go value of type string`);
      }
      return value;
    case 'bool':
      if (typeof value !== 'boolean') {
        throw new ParamError(`json: cannot unmarshal ${jsonTypeName(value)} into Go value of type bool`);
      }
      return value;
    case 'bytes':
      if (typeof value !== 'string') {
        throw new ParamError(`json: cannot unmarshal ${jsonTypeName(value)} into Go value of type []uint8`);
      }
      return decodeBase64Strict(value);
    case 'hexbytes':
      if (typeof value !== 'string') throw new ParamError(`invalid hex string: ${JSON.stringify(value)}`);
      return decodeHex(value);
    case 'strings':
      if (!Array.isArray(value) || value.some((v) => typeof v !== 'string')) {
        throw new ParamError(`json: cannot unmarshal ${jsonTypeName(value)} into Go value of type []string`);
      }
      return value as string[];
    case 'evidence':
      if (typeof value !== 'object') {
        throw new ParamError(
          `json: cannot unmarshal ${jsonTypeName(value)} into Go value of type types.Evidence`,
        );
      }
      return value;
  }
}

function parseJsonText(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    const first = text.trim()[0] ?? '';
    throw new ParamError(
      first === ''
        ? 'unexpected end of JSON input'
        : `invalid character '${first}' looking for beginning of value`,
    );
  }
}

/** Converts one URI query value (`/block?height=5`) to the argument value. */
export function fromUri(kind: ParamKind, text: string): ArgValue {
  if (text === '') return defaultFor(kind);
  const isInt = /^-?[0-9]+$/.test(text);
  const isHex = text.toLowerCase().startsWith('0x');
  const isQuoted = text.length >= 2 && text.startsWith('"') && text.endsWith('"');
  const isInteger = kind === 'int64' || kind === 'int64ptr' || kind === 'intptr' || kind === 'uint';
  const isBytes = kind === 'bytes' || kind === 'hexbytes';

  if (isInt && isInteger) return parseIntText(text, kind);
  if (isHex) {
    if (kind !== 'string' && !isBytes) {
      throw new ParamError(`got a hex string arg, but expected '${GO_KIND[kind]}'`);
    }
    const bytes = decodeHex(text.slice(2));
    return kind === 'string' ? Buffer.from(bytes).toString('utf8') : bytes;
  }
  if (isQuoted && isBytes) {
    const s = parseJsonText(text);
    if (typeof s !== 'string')
      throw new ParamError(`json: cannot unmarshal ${jsonTypeName(s)} into Go value of type string`);
    return new Uint8Array(Buffer.from(s, 'utf8'));
  }
  if (kind === 'hexbytes') {
    // HexBytes.UnmarshalJSON wants a quoted hex string.
    throw new ParamError(`invalid hex string: ${text}`);
  }
  return fromJson(kind, parseJsonText(text));
}
