// Unlocked accounts of a development chain (chain-local only): the keys behind eth_accounts,
// eth_sendTransaction, eth_sign, personal_sign and eth_signTypedData_v4. Other networks pass null.
import {
  ethAddressFromPrivateKey,
  isValidSecp256k1PrivateKey,
  keccak256,
  secp256k1Sign,
} from '@noded/crypto';
import type { Hex } from '@noded/types';
import { parseTypedData, typedDataDigest } from './eip712.js';
import { bytesToHex, hexToBytes } from './hex.js';
import { type SignedTx, signTransaction, type UnsignedTx } from './tx-codec.js';

/** A private key that cannot be used; the message says which one (by position, never by value). */
export class DevAccountKeyError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DevAccountKeyError';
  }
}

export class DevAccounts {
  private readonly keys = new Map<Hex, Uint8Array>();
  private readonly order: Hex[] = [];

  /** @param privateKeys 0x-prefixed 32-byte secp256k1 keys, in the order eth_accounts lists them. */
  constructor(privateKeys: readonly string[]) {
    privateKeys.forEach((k, i) => {
      if (!/^0x[0-9a-fA-F]{64}$/.test(k)) {
        throw new DevAccountKeyError(`dev account key #${i} must be 0x followed by 64 hex digits`);
      }
      const key = hexToBytes(k);
      if (!isValidSecp256k1PrivateKey(key)) {
        throw new DevAccountKeyError(`dev account key #${i} is not a valid secp256k1 private key`);
      }
      const address = bytesToHex(ethAddressFromPrivateKey(key));
      if (!this.keys.has(address)) this.order.push(address);
      this.keys.set(address, key);
    });
  }

  /** Lowercase addresses, in construction order. */
  accounts(): Hex[] {
    return [...this.order];
  }

  has(address: string): boolean {
    return this.keys.has(address.toLowerCase() as Hex);
  }

  private key(address: string): Uint8Array {
    const key = this.keys.get(address.toLowerCase() as Hex);
    if (key === undefined) throw new DevAccountKeyError(`unknown account ${address}`);
    return key;
  }

  /** 65-byte r || s || v signature of a 32-byte digest with v = 27 + recovery id (geth's eth_sign form). */
  signDigest(address: string, digest: Uint8Array): Hex {
    const { signature, recovery } = secp256k1Sign(digest, this.key(address));
    const out = new Uint8Array(65);
    out.set(signature);
    out[64] = 27 + recovery;
    return bytesToHex(out);
  }

  /** EIP-191 version 0x45: keccak256("\x19Ethereum Signed Message:\n" + len + message). */
  signMessage(address: string, message: Uint8Array): Hex {
    const prefix = Buffer.from(`\x19Ethereum Signed Message:\n${message.length}`, 'utf8');
    return this.signDigest(address, keccak256(Buffer.concat([prefix, message])));
  }

  /** EIP-712 (eth_signTypedData_v4); `typedData` is the object or its JSON string. */
  signTypedData(address: string, typedData: unknown): Hex {
    const digest = typedDataDigest(parseTypedData(typedData));
    return this.signDigest(address, digest);
  }

  signTransaction(address: string, tx: UnsignedTx): SignedTx {
    return signTransaction(tx, this.key(address));
  }
}
