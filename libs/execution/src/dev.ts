// Dev-chain operations (chain-local only): the state changes of anvil_setBalance & co. and the
// transactions of impersonated senders travel as consensus transactions of their own, so they are
// proposed, voted, written to the block store and the WAL like any transaction, and a replay of
// the block store applies them again in the same place (docs/json-rpc.md, "Dev-chain methods").
//
// Wire form: DEV_TX_MAGIC, then the RLP list [kind, ...fields]. The first byte 0xbd is an RLP
// string header, which no Ethereum transaction starts with (typed ones start below 0x80, legacy
// ones with a list header of 0xc0 or more), so the two forms never collide.
import { bigIntToBytes, bytesToBigInt, concat, equal, toHex } from './bytes.js';
import { asBytes, asList, type RlpDecoded, rlpDecode, rlpEncode } from './rlp.js';

/** "\xbd" + "dev". */
export const DEV_TX_MAGIC = Uint8Array.of(0xbd, 0x64, 0x65, 0x76);

/** The consensus chain whose blocks may carry dev operations. */
export const DEV_CHAIN_ID = 'chain-local';

const KIND = { balance: 1, nonce: 2, code: 3, storage: 4, impersonated: 16 } as const;

export type DevOp =
  | { kind: 'balance'; address: Uint8Array; value: bigint }
  | { kind: 'nonce'; address: Uint8Array; value: bigint }
  | { kind: 'code'; address: Uint8Array; code: Uint8Array }
  | { kind: 'storage'; address: Uint8Array; slot: Uint8Array; value: Uint8Array }
  /** `raw`: the transaction with a placeholder signature; `sender` is who sends it. */
  | { kind: 'impersonated'; sender: Uint8Array; raw: Uint8Array };

/** A consensus transaction that is a dev operation rather than an Ethereum transaction. */
export class DevOpFormatError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DevOpFormatError';
  }
}

export function isDevTx(raw: Uint8Array): boolean {
  return raw.length >= DEV_TX_MAGIC.length && equal(raw.subarray(0, DEV_TX_MAGIC.length), DEV_TX_MAGIC);
}

export function encodeDevOp(op: DevOp): Uint8Array {
  const n = bigIntToBytes;
  let body: Uint8Array;
  switch (op.kind) {
    case 'balance':
      body = rlpEncode([n(BigInt(KIND.balance)), op.address, n(op.value)]);
      break;
    case 'nonce':
      body = rlpEncode([n(BigInt(KIND.nonce)), op.address, n(op.value)]);
      break;
    case 'code':
      body = rlpEncode([n(BigInt(KIND.code)), op.address, op.code]);
      break;
    case 'storage':
      body = rlpEncode([n(BigInt(KIND.storage)), op.address, op.slot, op.value]);
      break;
    case 'impersonated':
      body = rlpEncode([n(BigInt(KIND.impersonated)), op.sender, op.raw]);
      break;
  }
  return concat(DEV_TX_MAGIC, body);
}

const UINT256_MAX = (1n << 256n) - 1n;
const UINT64_MAX = (1n << 64n) - 1n;

/** Decodes a dev operation; throws DevOpFormatError naming what is wrong. */
export function decodeDevOp(raw: Uint8Array): DevOp {
  if (!isDevTx(raw)) throw new DevOpFormatError('not a dev operation (missing its prefix)');
  let f: RlpDecoded[];
  try {
    f = asList(rlpDecode(raw.subarray(DEV_TX_MAGIC.length)), 'dev operation');
  } catch (err) {
    throw new DevOpFormatError(`dev operation: ${(err as Error).message}`);
  }
  const bytes = (i: number, what: string): Uint8Array => {
    const v = f[i];
    if (v === undefined) throw new DevOpFormatError(`dev operation: missing ${what}`);
    try {
      return asBytes(v, what);
    } catch {
      throw new DevOpFormatError(`dev operation: ${what} must be a byte string`);
    }
  };
  const address = (i: number): Uint8Array => {
    const a = bytes(i, 'address');
    if (a.length !== 20) throw new DevOpFormatError(`dev operation: address has ${a.length} bytes, want 20`);
    return a;
  };
  const uint = (i: number, what: string, max: bigint): bigint => {
    const b = bytes(i, what);
    if (b.length > 0 && b[0] === 0)
      throw new DevOpFormatError(`dev operation: ${what} has leading zero bytes`);
    const v = bytesToBigInt(b);
    if (v > max) throw new DevOpFormatError(`dev operation: ${what} ${v} is above ${max}`);
    return v;
  };
  const want = (n: number) => {
    if (f.length !== n) throw new DevOpFormatError(`dev operation: ${f.length} fields, want ${n}`);
  };
  const kind = Number(uint(0, 'kind', 255n));
  switch (kind) {
    case KIND.balance:
      want(3);
      return { kind: 'balance', address: address(1), value: uint(2, 'balance', UINT256_MAX) };
    case KIND.nonce:
      want(3);
      return { kind: 'nonce', address: address(1), value: uint(2, 'nonce', UINT64_MAX) };
    case KIND.code:
      want(3);
      return { kind: 'code', address: address(1), code: bytes(2, 'code') };
    case KIND.storage: {
      want(4);
      const slot = bytes(2, 'slot');
      const value = bytes(3, 'value');
      if (slot.length !== 32)
        throw new DevOpFormatError(`dev operation: slot has ${slot.length} bytes, want 32`);
      if (value.length !== 32)
        throw new DevOpFormatError(`dev operation: value has ${value.length} bytes, want 32`);
      return { kind: 'storage', address: address(1), slot, value };
    }
    case KIND.impersonated:
      want(3);
      return { kind: 'impersonated', sender: address(1), raw: bytes(2, 'transaction') };
    default:
      throw new DevOpFormatError(`dev operation: unknown kind ${kind}`);
  }
}

/** A short description for logs and ABCI results. */
export function describeDevOp(op: DevOp): string {
  switch (op.kind) {
    case 'balance':
      return `set balance of ${toHex(op.address)} to ${op.value}`;
    case 'nonce':
      return `set nonce of ${toHex(op.address)} to ${op.value}`;
    case 'code':
      return `set code of ${toHex(op.address)} (${op.code.length} bytes)`;
    case 'storage':
      return `set storage ${toHex(op.slot)} of ${toHex(op.address)} to ${toHex(op.value)}`;
    case 'impersonated':
      return `transaction of impersonated ${toHex(op.sender)}`;
  }
}
