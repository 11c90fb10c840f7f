// The bridge transaction: at index 0 of a block, it mints the deposits that more than 2/3 of the
// voting power attested identically in their vote extensions of the previous height, and carries
// those signed extensions so every validator can check the support in ProcessProposal (they never
// see the proposer's extended commit). Built by the proposer (tallyAttestations), checked by
// everyone (checkBridgeTx), applied by FinalizeBlock.
import { voteExtensionSignBytes } from '@noded/consensus';
import { ed25519Verify } from '@noded/crypto';
import type { ExtendedCommitInfo } from '@noded/types';
import { type Deposit, decodeAttestation, encodeAttestation, sameDeposit } from './deposits.js';

/** "\xbd" + "brg": not an Ethereum transaction (those start with a type byte < 0x80 or an RLP list). */
export const BRIDGE_TX_MAGIC = Uint8Array.of(0xbd, 0x62, 0x72, 0x67);
const VERSION = 1;
const SIG_BYTES = 64;

export class BridgeTxError extends Error {
  readonly code = 'BRIDGE_TX';
  constructor(message: string) {
    super(message);
    this.name = 'BridgeTxError';
  }
}

/** A validator's signed extension, as the bridge transaction carries it. */
export interface SupportingVote {
  /** 20 bytes. */
  validator: Uint8Array;
  extension: Uint8Array;
  extensionSignature: Uint8Array;
}

export interface BridgeTx {
  /** The round of the previous height's commit (the extensions' sign bytes bind it). */
  round: number;
  /** The deposits minted, consecutive sequence numbers. */
  deposits: Deposit[];
  votes: SupportingVote[];
}

/** A member of the validator set that signed the previous height's commit. */
export interface AttestingValidator {
  address: Uint8Array;
  pubKey: Uint8Array;
  power: bigint;
}

export function isBridgeTx(raw: Uint8Array): boolean {
  return raw.length >= 4 && BRIDGE_TX_MAGIC.every((b, i) => raw[i] === b);
}

const u32 = (n: number) => Uint8Array.of(n >>> 24, (n >>> 16) & 0xff, (n >>> 8) & 0xff, n & 0xff);

/**
 * magic (4) | version 1 | round (4 BE) | attestation length (4 BE) | attestation (deposits) |
 * vote count (2 BE) | per vote: address (20) | extension length (4 BE) | extension | signature (64).
 */
export function encodeBridgeTx(tx: BridgeTx): Uint8Array {
  const att = encodeAttestation(tx.deposits);
  const parts: Uint8Array[] = [BRIDGE_TX_MAGIC, Uint8Array.of(VERSION), u32(tx.round), u32(att.length), att];
  parts.push(Uint8Array.of(tx.votes.length >> 8, tx.votes.length & 0xff));
  for (const v of tx.votes)
    parts.push(v.validator, u32(v.extension.length), v.extension, v.extensionSignature);
  return Buffer.concat(parts);
}

export function decodeBridgeTx(raw: Uint8Array): BridgeTx {
  if (!isBridgeTx(raw)) throw new BridgeTxError('not a bridge transaction');
  let o = 4;
  const need = (n: number, what: string) => {
    if (o + n > raw.length) throw new BridgeTxError(`bridge transaction ends inside ${what}`);
  };
  const readU32 = (what: string) => {
    need(4, what);
    const v = ((raw[o]! << 24) >>> 0) + (raw[o + 1]! << 16) + (raw[o + 2]! << 8) + raw[o + 3]!;
    o += 4;
    return v;
  };
  need(1, 'its version');
  if (raw[o] !== VERSION) throw new BridgeTxError(`bridge transaction version ${raw[o]} is not ${VERSION}`);
  o++;
  const round = readU32('the round');
  const attLen = readU32('the attestation length');
  need(attLen, 'the deposits');
  let deposits: Deposit[];
  try {
    deposits = decodeAttestation(raw.subarray(o, o + attLen));
  } catch (err) {
    throw new BridgeTxError(`bridge transaction deposits: ${(err as Error).message}`);
  }
  if (deposits.length === 0) throw new BridgeTxError('bridge transaction mints no deposit');
  o += attLen;
  need(2, 'the vote count');
  const n = (raw[o]! << 8) | raw[o + 1]!;
  o += 2;
  const votes: SupportingVote[] = [];
  for (let i = 0; i < n; i++) {
    need(20, `vote ${i}'s validator`);
    const validator = raw.slice(o, o + 20);
    o += 20;
    const len = readU32(`vote ${i}'s extension length`);
    need(len + SIG_BYTES, `vote ${i}'s extension`);
    const extension = raw.slice(o, o + len);
    o += len;
    const extensionSignature = raw.slice(o, o + SIG_BYTES);
    o += SIG_BYTES;
    votes.push({ validator, extension, extensionSignature });
  }
  if (o !== raw.length)
    throw new BridgeTxError(`bridge transaction has ${raw.length - o} bytes after its last vote`);
  return { round, deposits, votes };
}

const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');

/**
 * The attested deposits of one signed extension that count: those of a well-formed attestation from
 * `next` (the chain's last processed sequence + 1) on. An extension made before the previous block
 * minted some of its deposits still attests the rest. Anything else attests nothing.
 */
function attested(ext: Uint8Array, next: bigint): Deposit[] {
  try {
    const ds = decodeAttestation(ext);
    const i = ds.findIndex((d) => d.sequence === next);
    return i < 0 ? [] : ds.slice(i);
  } catch {
    return [];
  }
}

/**
 * The longest run of deposits from `next` on, each attested identically (sequence, recipient, token,
 * amount) by validators holding more than 2/3 of `total`, among `votes` (already checked).
 */
function supported(
  votes: Array<{ power: bigint; deposits: Deposit[] }>,
  total: bigint,
  next: bigint,
): Deposit[] {
  const out: Deposit[] = [];
  for (let i = 0; ; i++) {
    // The candidates for position i: each distinct deposit and the power behind it.
    const tally: Array<{ d: Deposit; power: bigint }> = [];
    for (const v of votes) {
      const d = v.deposits[i];
      if (!d || d.sequence !== next + BigInt(i)) continue;
      const t = tally.find((x) => sameDeposit(x.d, d));
      if (t) t.power += v.power;
      else tally.push({ d, power: v.power });
    }
    const win = tally.find((t) => t.power * 3n > total * 2n);
    if (!win) return out;
    out.push({ ...win.d, sourceBlock: 0n, sourceTx: '' });
  }
}

export interface TallyInput {
  chainId: string;
  /** The previous height (whose precommits carry the extensions). */
  height: number;
  validators: AttestingValidator[];
  /** The chain's last processed sequence + 1. */
  next: bigint;
}

/**
 * The proposer's bridge transaction from its extended commit (PrepareProposal's localLastCommit), or
 * null when no deposit has more than 2/3 support. Extensions whose signature does not verify, or from
 * a validator outside the set, are left out (consensus checked them; this does not trust that).
 */
export function tallyAttestations(commit: ExtendedCommitInfo, input: TallyInput): BridgeTx | null {
  const byAddr = new Map(input.validators.map((v) => [hex(v.address), v]));
  const total = input.validators.reduce((a, v) => a + v.power, 0n);
  const counted: Array<{ power: bigint; deposits: Deposit[]; vote: SupportingVote }> = [];
  const seen = new Set<string>();
  for (const v of commit.votes) {
    if (v.blockIdFlag !== 2 || v.extensionSignature.length !== SIG_BYTES) continue;
    const key = hex(v.validator.address);
    const val = byAddr.get(key);
    if (!val || seen.has(key)) continue;
    const signBytes = voteExtensionSignBytes(input.chainId, {
      height: input.height,
      round: commit.round,
      extension: v.voteExtension,
    });
    if (!ed25519Verify(val.pubKey, signBytes, v.extensionSignature)) continue;
    seen.add(key);
    const deposits = attested(v.voteExtension, input.next);
    if (deposits.length === 0) continue;
    counted.push({
      power: val.power,
      deposits,
      vote: { validator: val.address, extension: v.voteExtension, extensionSignature: v.extensionSignature },
    });
  }
  const deposits = supported(counted, total, input.next);
  if (deposits.length === 0) return null;
  // Only the extensions that attest the first minted deposit identically are carried (the others
  // add nothing a checker needs).
  const votes = counted
    .filter((c) => c.deposits[0] && sameDeposit(c.deposits[0], deposits[0]!))
    .map((c) => c.vote);
  return { round: commit.round, deposits, votes };
}

/**
 * Why a proposed bridge transaction must be refused, or null: every carried extension must be
 * signed by a distinct member of the set over (extension, height, round, chain id), and every
 * minted deposit, from `next` on without a gap or repeat, must be attested identically by more than
 * 2/3 of the total power among them.
 */
export function checkBridgeTx(tx: BridgeTx, input: TallyInput): string | null {
  const byAddr = new Map(input.validators.map((v) => [hex(v.address), v]));
  const total = input.validators.reduce((a, v) => a + v.power, 0n);
  const seen = new Set<string>();
  const counted: Array<{ power: bigint; deposits: Deposit[] }> = [];
  for (const [i, v] of tx.votes.entries()) {
    const key = hex(v.validator);
    const val = byAddr.get(key);
    if (!val) return `vote ${i}: 0x${key} was not a validator at height ${input.height}`;
    if (seen.has(key)) return `vote ${i}: 0x${key} appears twice`;
    seen.add(key);
    const signBytes = voteExtensionSignBytes(input.chainId, {
      height: input.height,
      round: tx.round,
      extension: v.extension,
    });
    if (!ed25519Verify(val.pubKey, signBytes, v.extensionSignature))
      return `vote ${i}: the extension signature of 0x${key} does not verify for height ${input.height} round ${tx.round}`;
    counted.push({ power: val.power, deposits: attested(v.extension, input.next) });
  }
  const first = tx.deposits[0];
  if (!first || first.sequence !== input.next)
    return `the first deposit is sequence ${first?.sequence ?? 'none'}, but the next to mint is ${input.next}`;
  const backed = supported(counted, total, input.next);
  for (const [i, d] of tx.deposits.entries()) {
    const b = backed[i];
    if (!b || !sameDeposit(b, d))
      return `deposit ${d.sequence} lacks identical attestations from more than 2/3 of the voting power`;
  }
  return null;
}
