// Typed transaction encoding for the dev accounts' eth_sendTransaction (legacy with EIP-155,
// EIP-2930, EIP-1559), and the few fields of a raw transaction the RPC checks before the mempool
// does (fee cap, EIP-155 replay protection).
import { encode, type Input } from '@ethereumjs/rlp';
import { keccak256, rlpListBounds, secp256k1Sign } from '@noded/crypto';
import type { AccessListEntry, Hex } from '@noded/types';
import { bigintToBytes, bytesToBigint, bytesToHex, hexToBytes } from './hex.js';

export interface UnsignedTx {
  type: 0 | 1 | 2;
  chainId: bigint;
  nonce: bigint;
  gas: bigint;
  to: Hex | null;
  value: bigint;
  data: Hex;
  /** Types 0 and 1. */
  gasPrice?: bigint;
  /** Type 2. */
  maxFeePerGas?: bigint;
  maxPriorityFeePerGas?: bigint;
  accessList: AccessListEntry[];
}

export interface SignedTx {
  raw: Uint8Array;
  hash: Hex;
}

function accessListRlp(list: AccessListEntry[]): Input {
  return list.map((e) => [hexToBytes(e.address), e.storageKeys.map((k) => hexToBytes(k))]);
}

function concat(prefix: number, body: Uint8Array): Uint8Array {
  const out = new Uint8Array(body.length + 1);
  out[0] = prefix;
  out.set(body, 1);
  return out;
}

/** r, s and recovery id of a signature. */
interface Signature {
  recovery: number;
  r: bigint;
  s: bigint;
}

/** Signs with secp256k1 (native) and returns the network encoding and the transaction hash. */
export function signTransaction(tx: UnsignedTx, privateKey: Uint8Array): SignedTx {
  return encodeTransaction(tx, (digest) => {
    const { signature, recovery } = secp256k1Sign(digest, privateKey);
    return {
      recovery,
      r: bytesToBigint(signature.subarray(0, 32)),
      s: bytesToBigint(signature.subarray(32)),
    };
  });
}

/**
 * The transaction of an impersonated sender (anvil_impersonateAccount) with a placeholder
 * signature: recovery id 0, r = 2^160 + the sender's address, s = 1. It recovers to no one; the
 * chain takes the sender from the dev operation that carries it. Putting the address in r makes
 * the hash depend on the sender, so two impersonated senders never share a transaction hash.
 */
export function impersonatedTransaction(tx: UnsignedTx, sender: Hex): SignedTx {
  const r = (1n << 160n) + BigInt(sender);
  return encodeTransaction(tx, () => ({ recovery: 0, r, s: 1n }));
}

function encodeTransaction(tx: UnsignedTx, sign: (digest: Uint8Array) => Signature): SignedTx {
  const to = tx.to === null ? new Uint8Array() : hexToBytes(tx.to);
  const data = hexToBytes(tx.data);
  const n = bigintToBytes;
  let raw: Uint8Array;
  if (tx.type === 0) {
    const fields: Input[] = [n(tx.nonce), n(tx.gasPrice ?? 0n), n(tx.gas), to, n(tx.value), data];
    const digest = keccak256(encode([...fields, n(tx.chainId), new Uint8Array(), new Uint8Array()]));
    const sig = sign(digest);
    const v = BigInt(sig.recovery) + tx.chainId * 2n + 35n;
    raw = encode([...fields, n(v), n(sig.r), n(sig.s)]);
  } else {
    const fields: Input[] =
      tx.type === 1
        ? [
            n(tx.chainId),
            n(tx.nonce),
            n(tx.gasPrice ?? 0n),
            n(tx.gas),
            to,
            n(tx.value),
            data,
            accessListRlp(tx.accessList),
          ]
        : [
            n(tx.chainId),
            n(tx.nonce),
            n(tx.maxPriorityFeePerGas ?? 0n),
            n(tx.maxFeePerGas ?? 0n),
            n(tx.gas),
            to,
            n(tx.value),
            data,
            accessListRlp(tx.accessList),
          ];
    const digest = keccak256(concat(tx.type, encode(fields)));
    const sig = sign(digest);
    raw = concat(tx.type, encode([...fields, n(BigInt(sig.recovery)), n(sig.r), n(sig.s)]));
  }
  return { raw, hash: bytesToHex(keccak256(raw)) };
}

/** What the RPC checks in a raw transaction before handing it to the chain. */
export interface RawTxSummary {
  type: number;
  gas: bigint;
  /** gasPrice (types 0, 1) or maxFeePerGas (types 2, 3, 4): the most each unit of gas may cost. */
  feeCap: bigint;
  /** Legacy transactions: false when v is 27/28 (no EIP-155 chain id). Typed ones always carry a chain id. */
  replayProtected: boolean;
}

/**
 * Reads the fee fields of a raw transaction; throws on bytes that are not a transaction. The
 * fields are read in place (rlpListBounds accepts exactly what @ethereumjs/rlp decodes): every
 * eth_sendRawTransaction passes here, and decoding copied every field of the transaction.
 */
export function summarizeRawTransaction(raw: Uint8Array): RawTxSummary {
  if (raw.length === 0) throw new Error('empty transaction');
  const first = raw[0]!;
  const legacy = first >= 0xc0;
  const body = legacy ? raw : raw.subarray(1);
  const at = rlpListBounds(body);
  if (at === undefined) {
    throw new Error(
      legacy ? 'legacy transaction is no canonical RLP list' : 'typed transaction payload must be a list',
    );
  }
  const int = (i: number): bigint => {
    const start = at[3 * i];
    if (start === undefined || body[start]! >= 0xc0) throw new Error('expected a byte string field');
    return bytesToBigint(body.subarray(at[3 * i + 1], at[3 * i + 2]));
  };
  if (legacy) {
    if (at.length !== 27) throw new Error('legacy transaction must have 9 fields');
    const v = int(6);
    return { type: 0, gas: int(2), feeCap: int(1), replayProtected: v !== 27n && v !== 28n };
  }
  if (first === 1) return { type: 1, gas: int(3), feeCap: int(2), replayProtected: true };
  if (first === 2 || first === 4) return { type: first, gas: int(4), feeCap: int(3), replayProtected: true };
  throw new Error(`unsupported transaction type ${first}`);
}
