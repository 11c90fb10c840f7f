// Protobuf encodings of light blocks, in CometBFT's tendermint.types layout:
//   LightBlock   { SignedHeader signed_header = 1; ValidatorSet validator_set = 2; }
//   SignedHeader { Header header = 1; Commit commit = 2; }
//   ValidatorSet { repeated Validator validators = 1; Validator proposer = 2; int64 total_voting_power = 3; }
//   Validator    { bytes address = 1; PublicKey pub_key = 2; int64 voting_power = 3; int64 proposer_priority = 4; }
//   PublicKey    { oneof sum { bytes ed25519 = 1; bytes secp256k1 = 2; } }
// Decoding takes untrusted bytes: anything malformed is a ConsensusError('INVALID_ENCODING').
// Whether the contents can be trusted is verify.ts's business.
import type { Validator } from '@noded/types';
import { bytesOf, int64Of, ProtoWriter, readFields, repeatedBytesOf } from '../codec/proto.js';
import { decodeCommit, decodeHeader, encodeCommit, encodeHeader } from '../codec/types.js';
import { ConsensusError } from '../errors.js';
import type { LightBlock, SignedHeader } from './verify.js';

/** More validators than this in one set is refused when decoding (CometBFT's MaxVotesCount). */
export const MAX_LIGHT_VALIDATORS = 10_000;

const bad = (why: string): never => {
  throw new ConsensusError('INVALID_ENCODING', `light block: ${why}`);
};

function encodeValidator(v: Validator): Uint8Array {
  const pk = new ProtoWriter(40);
  pk.bytes(1, v.pubKey);
  const w = new ProtoWriter(96);
  w.bytes(1, v.address);
  w.message(2, pk.finish());
  w.varint(3, v.votingPower);
  w.varint(4, v.proposerPriority);
  return w.finish();
}

function decodeValidator(bytes: Uint8Array): Validator {
  const f = readFields(bytes);
  const pk = readFields(bytesOf(f, 2));
  if (pk.has(2)) bad('secp256k1 validator keys are not supported');
  const pubKey = bytesOf(pk, 1);
  if (pubKey.length !== 32) bad(`validator public key of ${pubKey.length} bytes, not an ed25519 key`);
  const address = bytesOf(f, 1);
  if (address.length !== 20) bad(`validator address of ${address.length} bytes`);
  return { address, pubKey, votingPower: int64Of(f, 3), proposerPriority: int64Of(f, 4) };
}

export function encodeValidatorSet(validators: readonly Validator[]): Uint8Array {
  const w = new ProtoWriter(64 + validators.length * 80);
  let total = 0n;
  for (const v of validators) {
    w.message(1, encodeValidator(v));
    total += v.votingPower;
  }
  w.varint(3, total);
  return w.finish();
}

export function decodeValidatorSet(bytes: Uint8Array): Validator[] {
  const f = readFields(bytes);
  const list = repeatedBytesOf(f, 1);
  if (list.length > MAX_LIGHT_VALIDATORS) bad(`${list.length} validators, over ${MAX_LIGHT_VALIDATORS}`);
  return list.map(decodeValidator);
}

export function encodeSignedHeader(sh: SignedHeader): Uint8Array {
  const w = new ProtoWriter(1024);
  w.message(1, encodeHeader(sh.header));
  w.message(2, encodeCommit(sh.commit));
  return w.finish();
}

export function decodeSignedHeader(bytes: Uint8Array): SignedHeader {
  const f = readFields(bytes);
  if (!f.has(1)) bad('no header');
  if (!f.has(2)) bad('no commit');
  return { header: decodeHeader(bytesOf(f, 1)), commit: decodeCommit(bytesOf(f, 2)) };
}

export function encodeLightBlock(lb: LightBlock): Uint8Array {
  const w = new ProtoWriter(2048);
  w.message(1, encodeSignedHeader(lb));
  w.message(2, encodeValidatorSet(lb.validators));
  return w.finish();
}

export function decodeLightBlock(bytes: Uint8Array): LightBlock {
  const f = readFields(bytes);
  if (!f.has(1)) bad('no signed header');
  if (!f.has(2)) bad('no validator set');
  const sh = decodeSignedHeader(bytesOf(f, 1));
  return { ...sh, validators: decodeValidatorSet(bytesOf(f, 2)) };
}
