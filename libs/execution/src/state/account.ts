// The account record as Ethereum encodes it in the state trie: rlp([nonce, balance, storageRoot,
// codeHash]). The same bytes are stored in the flat table, so a flat read and a trie leaf agree.
import { bigIntToBytes, bytesToBigInt, equal } from '../bytes.js';
import { asBytes, asList, rlpDecode, rlpEncode } from '../rlp.js';
import { EMPTY_TRIE_ROOT } from '../trie/mpt.js';

/** keccak256 of empty code. */
export const EMPTY_CODE_HASH = Uint8Array.from(
  Buffer.from('c5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470', 'hex'),
);

export interface AccountData {
  nonce: bigint;
  balance: bigint;
  storageRoot: Uint8Array;
  codeHash: Uint8Array;
}

export function newAccount(): AccountData {
  return { nonce: 0n, balance: 0n, storageRoot: EMPTY_TRIE_ROOT, codeHash: EMPTY_CODE_HASH };
}

export function encodeAccount(a: AccountData): Uint8Array {
  return rlpEncode([bigIntToBytes(a.nonce), bigIntToBytes(a.balance), a.storageRoot, a.codeHash]);
}

export function decodeAccount(b: Uint8Array): AccountData {
  const l = asList(rlpDecode(b), 'account');
  if (l.length !== 4) throw new Error(`account record has ${l.length} fields, want 4`);
  return {
    nonce: bytesToBigInt(asBytes(l[0], 'nonce')),
    balance: bytesToBigInt(asBytes(l[1], 'balance')),
    storageRoot: asBytes(l[2], 'storageRoot'),
    codeHash: asBytes(l[3], 'codeHash'),
  };
}

export function accountsEqual(a: AccountData | null | undefined, b: AccountData | null | undefined): boolean {
  if (!a || !b) return !a && !b;
  return (
    a.nonce === b.nonce &&
    a.balance === b.balance &&
    equal(a.storageRoot, b.storageRoot) &&
    equal(a.codeHash, b.codeHash)
  );
}

export function hasCode(a: AccountData): boolean {
  return !equal(a.codeHash, EMPTY_CODE_HASH);
}
