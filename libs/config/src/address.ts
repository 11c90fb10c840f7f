// Ethereum address text: validation and EIP-55 checksums (genesis accounts, dev accounts).
import { keccak256 } from '@noded/crypto';

const ADDRESS_RE = /^0x[0-9a-fA-F]{40}$/;

/** EIP-55 mixed-case form of a 20-byte address. */
export function toChecksumAddress(address: string | Uint8Array): string {
  const hex = (
    typeof address === 'string' ? address.slice(2) : Buffer.from(address).toString('hex')
  ).toLowerCase();
  const hash = Buffer.from(keccak256(Buffer.from(hex, 'ascii'))).toString('hex');
  let out = '0x';
  for (let i = 0; i < 40; i++) out += Number.parseInt(hash[i]!, 16) >= 8 ? hex[i]!.toUpperCase() : hex[i]!;
  return out;
}

/** Why an address text is not valid, or undefined. All-lower and all-upper are accepted as geth does. */
export function checkEthAddress(text: string): string | undefined {
  if (!ADDRESS_RE.test(text)) return 'must be 0x followed by 40 hex digits';
  const body = text.slice(2);
  if (body === body.toLowerCase() || body === body.toUpperCase()) return undefined;
  return toChecksumAddress(text) === text ? undefined : 'has mixed case but a wrong EIP-55 checksum';
}
