// Key files in CometBFT's formats, so operators' tooling reads them unchanged:
//   config/node_key.json            {"priv_key":{"type":"tendermint/PrivKeyEd25519","value":b64(seed||pub)}}
//   config/priv_validator_key.json  {"address":HEX,"pub_key":{...PubKeyEd25519...},"priv_key":{...}}
//   data/priv_validator_state.json  {"height":"0","round":0,"step":0}
// Parsing and writing only: the files are read by libs/config (loadNodeKey, loadValidatorKey) and by
// consensus' FilePV, so that this lib never touches the disk.
import { randomBytes } from 'node:crypto';
import { ed25519Address, ed25519PublicKey, nodeIdFromPublicKey } from './ed25519.js';

export const PRIV_KEY_TYPE = 'tendermint/PrivKeyEd25519';
export const PUB_KEY_TYPE = 'tendermint/PubKeyEd25519';

export interface Ed25519Key {
  seed: Uint8Array;
  publicKey: Uint8Array;
}

export interface ValidatorKey extends Ed25519Key {
  /** Upper-case hex of the CometBFT address, as CometBFT writes it. */
  address: string;
}

export class KeyFileError extends Error {
  constructor(
    readonly file: string,
    reason: string,
  ) {
    super(`${file}: ${reason}`);
    this.name = 'KeyFileError';
  }
}

export function newEd25519Key(seed: Uint8Array = randomBytes(32)): Ed25519Key {
  return { seed: new Uint8Array(seed), publicKey: ed25519PublicKey(seed) };
}

function privKeyJson(key: Ed25519Key) {
  return { type: PRIV_KEY_TYPE, value: Buffer.concat([key.seed, key.publicKey]).toString('base64') };
}

export function nodeKeyJson(key: Ed25519Key): string {
  return `${JSON.stringify({ priv_key: privKeyJson(key) }, null, 2)}\n`;
}

export function validatorKeyJson(key: Ed25519Key): string {
  const address = Buffer.from(ed25519Address(key.publicKey)).toString('hex').toUpperCase();
  const body = {
    address,
    pub_key: { type: PUB_KEY_TYPE, value: Buffer.from(key.publicKey).toString('base64') },
    priv_key: privKeyJson(key),
  };
  return `${JSON.stringify(body, null, 2)}\n`;
}

export function initialValidatorStateJson(): string {
  return `${JSON.stringify({ height: '0', round: 0, step: 0 }, null, 2)}\n`;
}

function parsePrivKey(file: string, field: unknown): Ed25519Key {
  const f = field as { type?: unknown; value?: unknown } | undefined;
  if (!f || typeof f !== 'object') throw new KeyFileError(file, 'priv_key: missing');
  if (f.type !== PRIV_KEY_TYPE)
    throw new KeyFileError(file, `priv_key.type: must be "${PRIV_KEY_TYPE}", got ${JSON.stringify(f.type)}`);
  if (typeof f.value !== 'string') throw new KeyFileError(file, 'priv_key.value: must be a base64 string');
  const raw = Buffer.from(f.value, 'base64');
  if (raw.length !== 64)
    throw new KeyFileError(
      file,
      `priv_key.value: must hold 64 bytes (seed and public key), got ${raw.length}`,
    );
  const seed = new Uint8Array(raw.subarray(0, 32));
  const publicKey = ed25519PublicKey(seed);
  if (!Buffer.from(publicKey).equals(raw.subarray(32))) {
    throw new KeyFileError(file, 'priv_key.value: the public key half does not match the private key');
  }
  return { seed, publicKey };
}

function parseJson(file: string, text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new KeyFileError(file, `not valid JSON: ${(err as Error).message}`);
  }
}

/** node_key.json's text (read from `file`, which error messages name). */
export function parseNodeKeyJson(file: string, text: string): Ed25519Key & { nodeId: string } {
  const json = parseJson(file, text) as { priv_key?: unknown };
  const key = parsePrivKey(file, json?.priv_key);
  return { ...key, nodeId: nodeIdFromPublicKey(key.publicKey) };
}

/** priv_validator_key.json's text (read from `file`, which error messages name). */
export function parseValidatorKeyJson(file: string, text: string): ValidatorKey {
  const json = parseJson(file, text) as {
    priv_key?: unknown;
    address?: unknown;
    pub_key?: { value?: unknown };
  };
  const key = parsePrivKey(file, json?.priv_key);
  const address = Buffer.from(ed25519Address(key.publicKey)).toString('hex').toUpperCase();
  if (json.address !== undefined && String(json.address).toUpperCase() !== address) {
    throw new KeyFileError(
      file,
      `address: ${JSON.stringify(json.address)} does not match the key (expected ${address})`,
    );
  }
  if (
    json.pub_key?.value !== undefined &&
    json.pub_key.value !== Buffer.from(key.publicKey).toString('base64')
  ) {
    throw new KeyFileError(file, 'pub_key.value: does not match the private key');
  }
  return { ...key, address };
}
