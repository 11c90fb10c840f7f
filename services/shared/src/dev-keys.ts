// The unlocked dev accounts' private keys of a chain-local home (data/dev-accounts.json), for
// eth_accounts and eth_sendTransaction: read by `noded start` and by the cluster's rpc-edge.
import { existsSync, readFileSync } from 'node:fs';
import { deriveDevAccounts } from '@noded/config';
import type { Logger } from '@noded/types';

export function devAccountKeys(file: string, logger: Logger): string[] {
  if (!existsSync(file)) return [];
  try {
    const json = JSON.parse(readFileSync(file, 'utf8')) as { mnemonic?: unknown; count?: unknown };
    if (typeof json.mnemonic !== 'string') return [];
    const count = typeof json.count === 'number' && json.count > 0 && json.count <= 1000 ? json.count : 20;
    return deriveDevAccounts(json.mnemonic, count).map((a) => a.privateKey);
  } catch (err) {
    logger.warn(
      { file, err: (err as Error).message },
      'dev accounts file unreadable; no account is unlocked',
    );
    return [];
  }
}
