// Development accounts of chain-local: BIP-39 mnemonic -> BIP-32 m/44'/60'/0'/0/i, as Hardhat, anvil
// and wallets derive them, so tools' default accounts hold funds on a fresh chain-local node.

import { ethAddressFromPrivateKey } from '@noded/crypto';
import { HDKey } from '@scure/bip32';
import { mnemonicToSeedSync, validateMnemonic } from '@scure/bip39';
import { wordlist } from '@scure/bip39/wordlists/english.js';
import { toChecksumAddress } from './address.js';

export interface DevAccount {
  /** EIP-55 checksummed 0x address. */
  address: string;
  /** 0x-prefixed 32-byte hex private key. */
  privateKey: string;
}

export class MnemonicError extends Error {
  readonly code = 'MNEMONIC_INVALID';
  constructor(reason: string) {
    super(`mnemonic: ${reason}`);
    this.name = 'MnemonicError';
  }
}

/** Collapses runs of whitespace, as wallets do before deriving. */
export function normalizeMnemonic(mnemonic: string): string {
  return mnemonic.trim().split(/\s+/).join(' ');
}

export function deriveDevAccounts(mnemonic: string, count: number): DevAccount[] {
  const words = normalizeMnemonic(mnemonic);
  if (!Number.isSafeInteger(count) || count < 0) throw new RangeError(`count must be >= 0, got ${count}`);
  if (!validateMnemonic(words, wordlist)) {
    const n = words === '' ? 0 : words.split(' ').length;
    throw new MnemonicError(
      `must be a BIP-39 English mnemonic of 12, 15, 18, 21 or 24 words with a valid checksum (got ${n} words)`,
    );
  }
  const root = HDKey.fromMasterSeed(mnemonicToSeedSync(words));
  const out: DevAccount[] = [];
  for (let i = 0; i < count; i++) {
    const key = root.derive(`m/44'/60'/0'/0/${i}`).privateKey!;
    out.push({
      address: toChecksumAddress(ethAddressFromPrivateKey(key)),
      privateKey: `0x${Buffer.from(key).toString('hex')}`,
    });
  }
  return out;
}
