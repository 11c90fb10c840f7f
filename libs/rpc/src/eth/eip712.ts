// EIP-712 typed structured data hashing (eth_signTypedData_v4): encodeType, hashStruct and the
// 0x1901-prefixed digest, with arrays, nested structs and all atomic types.
import { keccak256 } from '@noded/crypto';

export interface TypedDataField {
  name: string;
  type: string;
}

export interface TypedData {
  types: Record<string, TypedDataField[]>;
  primaryType: string;
  domain: Record<string, unknown>;
  message: Record<string, unknown>;
}

/** A typed-data document that cannot be hashed; the message names the bad part. */
export class TypedDataError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TypedDataError';
  }
}

// Domain fields in the order EIP-712 defines, used when a document omits types.EIP712Domain.
const DOMAIN_FIELDS: TypedDataField[] = [
  { name: 'name', type: 'string' },
  { name: 'version', type: 'string' },
  { name: 'chainId', type: 'uint256' },
  { name: 'verifyingContract', type: 'address' },
  { name: 'salt', type: 'bytes32' },
];

const isRecord = (v: unknown): v is Record<string, unknown> =>
  v !== null && typeof v === 'object' && !Array.isArray(v);

/** Validates the JSON shape of a typed-data document (object or JSON string, as wallets send it). */
export function parseTypedData(input: unknown): TypedData {
  let v = input;
  if (typeof v === 'string') {
    try {
      v = JSON.parse(v);
    } catch {
      throw new TypedDataError('typed data is a string that is not JSON');
    }
  }
  if (!isRecord(v)) throw new TypedDataError('typed data must be an object');
  const { types, primaryType, domain, message } = v;
  if (!isRecord(types)) throw new TypedDataError('typed data: "types" must be an object');
  if (typeof primaryType !== 'string') throw new TypedDataError('typed data: "primaryType" must be a string');
  if (!isRecord(domain)) throw new TypedDataError('typed data: "domain" must be an object');
  if (message !== undefined && !isRecord(message))
    throw new TypedDataError('typed data: "message" must be an object');
  const outTypes: Record<string, TypedDataField[]> = {};
  for (const [name, fields] of Object.entries(types)) {
    if (!Array.isArray(fields)) throw new TypedDataError(`typed data: type ${name} must be a list of fields`);
    outTypes[name] = fields.map((f, i) => {
      if (!isRecord(f) || typeof f['name'] !== 'string' || typeof f['type'] !== 'string') {
        throw new TypedDataError(`typed data: field ${i} of type ${name} needs string "name" and "type"`);
      }
      return { name: f['name'], type: f['type'] };
    });
  }
  if (outTypes['EIP712Domain'] === undefined) {
    outTypes['EIP712Domain'] = DOMAIN_FIELDS.filter((f) => domain[f.name] !== undefined);
  }
  if (primaryType !== 'EIP712Domain' && outTypes[primaryType] === undefined) {
    throw new TypedDataError(`typed data: primaryType ${primaryType} is not defined in types`);
  }
  return { types: outTypes, primaryType, domain, message: (message as Record<string, unknown>) ?? {} };
}

const baseType = (t: string) => t.replace(/(\[\d*\])+$/, '');

function dependencies(types: Record<string, TypedDataField[]>, name: string, found: Set<string>): void {
  if (found.has(name) || types[name] === undefined) return;
  found.add(name);
  for (const f of types[name]) dependencies(types, baseType(f.type), found);
}

/** encodeType: the primary type, then its referenced struct types sorted by name. */
export function encodeType(types: Record<string, TypedDataField[]>, primary: string): string {
  const deps = new Set<string>();
  dependencies(types, primary, deps);
  deps.delete(primary);
  return [primary, ...[...deps].sort()]
    .map((t) => `${t}(${types[t]!.map((f) => `${f.type} ${f.name}`).join(',')})`)
    .join('');
}

function toBigint(v: unknown, type: string): bigint {
  if (typeof v === 'bigint') return v;
  if (typeof v === 'number' && Number.isSafeInteger(v)) return BigInt(v);
  if (typeof v === 'string' && /^-?(0x[0-9a-fA-F]+|[0-9]+)$/.test(v)) {
    return v.startsWith('-') ? -BigInt(v.slice(1)) : BigInt(v);
  }
  throw new TypedDataError(`typed data: ${JSON.stringify(v)} is not a valid ${type}`);
}

function hexBytes(v: unknown, type: string): Uint8Array {
  if (typeof v !== 'string' || !/^0x([0-9a-fA-F]{2})*$/.test(v)) {
    throw new TypedDataError(`typed data: ${JSON.stringify(v)} is not a hex byte string for ${type}`);
  }
  return new Uint8Array(Buffer.from(v.slice(2), 'hex'));
}

function word(n: bigint): Uint8Array {
  return new Uint8Array(Buffer.from(n.toString(16).padStart(64, '0'), 'hex'));
}

function encodeValue(types: Record<string, TypedDataField[]>, type: string, value: unknown): Uint8Array {
  const array = /^(.*)\[(\d*)\]$/.exec(type);
  if (array) {
    if (!Array.isArray(value)) throw new TypedDataError(`typed data: ${type} value must be an array`);
    if (array[2] !== '' && value.length !== Number(array[2])) {
      throw new TypedDataError(`typed data: ${type} needs ${array[2]} elements, got ${value.length}`);
    }
    const parts = value.map((v) => encodeValue(types, array[1]!, v));
    return keccak256(Buffer.concat(parts));
  }
  if (types[type] !== undefined) {
    if (!isRecord(value)) throw new TypedDataError(`typed data: ${type} value must be an object`);
    return hashStruct(types, type, value);
  }
  if (type === 'string') {
    if (typeof value !== 'string')
      throw new TypedDataError(`typed data: string value expected, got ${JSON.stringify(value)}`);
    return keccak256(Buffer.from(value, 'utf8'));
  }
  if (type === 'bytes') return keccak256(hexBytes(value, type));
  if (type === 'bool') {
    if (typeof value !== 'boolean' && value !== 'true' && value !== 'false') {
      throw new TypedDataError(`typed data: bool value expected, got ${JSON.stringify(value)}`);
    }
    return word(value === true || value === 'true' ? 1n : 0n);
  }
  if (type === 'address') {
    const b = hexBytes(value, type);
    if (b.length !== 20)
      throw new TypedDataError(`typed data: address must be 20 bytes, got ${JSON.stringify(value)}`);
    return word(BigInt(value as string));
  }
  const fixed = /^bytes(\d+)$/.exec(type);
  if (fixed) {
    const size = Number(fixed[1]);
    const b = hexBytes(value, type);
    if (size < 1 || size > 32 || b.length !== size) {
      throw new TypedDataError(`typed data: ${type} needs ${size} bytes, got ${JSON.stringify(value)}`);
    }
    const out = new Uint8Array(32);
    out.set(b);
    return out;
  }
  const int = /^(u?)int(\d*)$/.exec(type);
  if (int) {
    const bits = int[2] === '' ? 256 : Number(int[2]);
    if (bits < 8 || bits > 256 || bits % 8 !== 0)
      throw new TypedDataError(`typed data: unknown type ${type}`);
    const n = toBigint(value, type);
    const signed = int[1] === '';
    const min = signed ? -(1n << BigInt(bits - 1)) : 0n;
    const max = signed ? (1n << BigInt(bits - 1)) - 1n : (1n << BigInt(bits)) - 1n;
    if (n < min || n > max) throw new TypedDataError(`typed data: ${value} is out of range for ${type}`);
    return word(n < 0n ? (1n << 256n) + n : n);
  }
  throw new TypedDataError(`typed data: unknown type ${type}`);
}

/** hashStruct(s) = keccak256(typeHash || encodeData(s)). */
export function hashStruct(
  types: Record<string, TypedDataField[]>,
  primary: string,
  data: Record<string, unknown>,
): Uint8Array {
  const fields = types[primary];
  if (fields === undefined) throw new TypedDataError(`typed data: unknown struct type ${primary}`);
  const parts: Uint8Array[] = [keccak256(Buffer.from(encodeType(types, primary), 'utf8'))];
  for (const f of fields) {
    const v = data[f.name];
    if (v === undefined || v === null)
      throw new TypedDataError(`typed data: missing value for field ${primary}.${f.name}`);
    parts.push(encodeValue(types, f.type, v));
  }
  return keccak256(Buffer.concat(parts));
}

/** The digest a wallet signs: keccak256(0x19 0x01 || domainSeparator || hashStruct(message)). */
export function typedDataDigest(td: TypedData): Uint8Array {
  const domainSeparator = hashStruct(td.types, 'EIP712Domain', td.domain);
  const parts = [Buffer.from([0x19, 0x01]), domainSeparator];
  if (td.primaryType !== 'EIP712Domain') parts.push(hashStruct(td.types, td.primaryType, td.message));
  return keccak256(Buffer.concat(parts));
}
