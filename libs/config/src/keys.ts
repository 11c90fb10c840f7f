// Reading the key files (their formats are libs/crypto's key-files.ts): node_key.json and
// priv_validator_key.json, with a KeyFileError that names the file and what is wrong.
import { readFileSync } from 'node:fs';
import {
  type Ed25519Key,
  KeyFileError,
  parseNodeKeyJson,
  parseValidatorKeyJson,
  type ValidatorKey,
} from '@noded/crypto';

function readKeyFile(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (err) {
    throw new KeyFileError(
      file,
      `cannot read: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
    );
  }
}

export function loadNodeKey(file: string): Ed25519Key & { nodeId: string } {
  return parseNodeKeyJson(file, readKeyFile(file));
}

export function loadValidatorKey(file: string): ValidatorKey {
  return parseValidatorKeyJson(file, readKeyFile(file));
}
