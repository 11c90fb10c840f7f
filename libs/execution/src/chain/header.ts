// The Ethereum header of each block (Osaka layout: London base fee, Shanghai withdrawals root,
// Cancun blob fields and beacon root, Prague requests hash). Its keccak256 is the block hash that
// clients see, and it doubles as the app hash consensus agrees on (it commits to the state root,
// receipts root, transactions root, bloom, gas and base fee).
import { keccak256, sha256 } from '@noded/crypto';
import { bigIntToBytes, bytesToBigInt } from '../bytes.js';
import { asBytes, asList, rlpDecode, rlpEncode } from '../rlp.js';
import { EMPTY_TRIE_ROOT } from '../trie/mpt.js';

/** keccak256(rlp([])): hash of an empty uncle list. */
export const EMPTY_UNCLES_HASH = keccak256(Uint8Array.of(0xc0));
/** EIP-7685 requests hash of a block without requests: sha256 of nothing. */
export const EMPTY_REQUESTS_HASH = sha256(new Uint8Array(0));
export const ZERO32 = new Uint8Array(32);
export const ZERO_ADDRESS = new Uint8Array(20);

export interface EthHeader {
  parentHash: Uint8Array;
  coinbase: Uint8Array;
  stateRoot: Uint8Array;
  transactionsRoot: Uint8Array;
  receiptsRoot: Uint8Array;
  logsBloom: Uint8Array;
  number: bigint;
  gasLimit: bigint;
  gasUsed: bigint;
  timestamp: bigint;
  extraData: Uint8Array;
  mixHash: Uint8Array;
  baseFeePerGas: bigint;
}

export function encodeHeader(h: EthHeader): Uint8Array {
  return rlpEncode([
    h.parentHash,
    EMPTY_UNCLES_HASH,
    h.coinbase,
    h.stateRoot,
    h.transactionsRoot,
    h.receiptsRoot,
    h.logsBloom,
    bigIntToBytes(0n),
    bigIntToBytes(h.number),
    bigIntToBytes(h.gasLimit),
    bigIntToBytes(h.gasUsed),
    bigIntToBytes(h.timestamp),
    h.extraData,
    h.mixHash,
    new Uint8Array(8),
    bigIntToBytes(h.baseFeePerGas),
    EMPTY_TRIE_ROOT,
    bigIntToBytes(0n),
    bigIntToBytes(0n),
    ZERO32,
    EMPTY_REQUESTS_HASH,
  ]);
}

export function decodeHeader(enc: Uint8Array): EthHeader {
  const l = asList(rlpDecode(enc), 'header').map((x, i) => asBytes(x, `header field ${i}`));
  return {
    parentHash: l[0],
    coinbase: l[2],
    stateRoot: l[3],
    transactionsRoot: l[4],
    receiptsRoot: l[5],
    logsBloom: l[6],
    number: bytesToBigInt(l[8]),
    gasLimit: bytesToBigInt(l[9]),
    gasUsed: bytesToBigInt(l[10]),
    timestamp: bytesToBigInt(l[11]),
    extraData: l[12],
    mixHash: l[13],
    baseFeePerGas: bytesToBigInt(l[15]),
  };
}

/** 2048-bit log bloom (yellow paper 4.3.1). */
export function bloomAdd(bloom: Uint8Array, item: Uint8Array): void {
  const h = keccak256(item);
  for (let i = 0; i < 6; i += 2) {
    const bit = ((h[i] << 8) | h[i + 1]) & 2047;
    bloom[255 - (bit >> 3)] |= 1 << (bit & 7);
  }
}

export function bloomMayContain(bloom: Uint8Array, item: Uint8Array): boolean {
  const h = keccak256(item);
  for (let i = 0; i < 6; i += 2) {
    const bit = ((h[i] << 8) | h[i + 1]) & 2047;
    if ((bloom[255 - (bit >> 3)] & (1 << (bit & 7))) === 0) return false;
  }
  return true;
}
