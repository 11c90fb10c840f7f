// Light client verification, as CometBFT's light/verifier.go: pure functions that decide whether a
// header (with its commit and validator set) can be trusted given one already trusted.
//
// - Adjacent (untrusted height = trusted height + 1): the untrusted header's validators_hash must be
//   the trusted header's next_validators_hash, and more than 2/3 of that set must have signed it.
// - Non-adjacent (skipping): more than `trustLevel` (1/3 by default) of the *trusted* set's power
//   must have signed the untrusted header (so at least one correct validator vouches for it while
//   the trusted header is within the trusting period), and more than 2/3 of the untrusted header's
//   own validator set must have signed it.
// - Both: same chain, height increasing, time increasing and not beyond now + max clock drift, the
//   trusted header not older than the trusting period, the commit for exactly this header, the
//   supplied validator set hashing to the header's validators_hash.
//
// Commit signatures are checked with the consensus' own vote sign bytes and verifyCommit (block.ts).
// Every refusal is a LightClientError whose code names the rule and whose message gives the values.
import { ed25519Address } from '@noded/crypto';
import type { Commit, Header, TimeNs, Validator } from '@noded/types';
import { commitSigVote, type Verifier, verifyCommit } from '../block.js';
import { voteSignBytes } from '../codec/types.js';
import { bytesEqual, headerHash, hexUpper } from '../hash.js';
import { ValidatorSet } from '../validators.js';

/** A header with the commit that signs it (CometBFT's SignedHeader). */
export interface SignedHeader {
  header: Header;
  commit: Commit;
}

/** A signed header with the validator set of its height (CometBFT's LightBlock). */
export interface LightBlock extends SignedHeader {
  /** In the set's canonical order (the order validators_hash and the commit's indexes use). */
  validators: Validator[];
}

export type LightErrorCode =
  /** The light block is malformed or inconsistent in itself (commit of another header, ...). */
  | 'INVALID_LIGHT_BLOCK'
  | 'WRONG_CHAIN'
  /** The untrusted height is not above the trusted one (or not adjacent when it must be). */
  | 'HEIGHT'
  /** The untrusted header's time is not after the trusted header's time. */
  | 'TIME'
  /** The untrusted header's time is beyond now + max clock drift. */
  | 'FUTURE'
  /** The trusted header is older than the trusting period: it can vouch for nothing any more. */
  | 'EXPIRED'
  /** The supplied validator set does not hash to the header's validators_hash. */
  | 'VALIDATORS_HASH'
  /** Adjacent header whose validators_hash is not the trusted next_validators_hash. */
  | 'NEXT_VALIDATORS_HASH'
  /** A commit signature does not verify (or a validator signed twice). */
  | 'FORGED_SIGNATURE'
  /** The signatures present are not more than 2/3 of the header's own validator set. */
  | 'INSUFFICIENT_POWER'
  /** Skipping: not more than the trust level of the trusted set signed; bisection may still work. */
  | 'NOT_ENOUGH_TRUST'
  /** A header reached by the hash chain (backwards) or a trust hash does not match. */
  | 'HASH_MISMATCH'
  /** A light block needed for bisection could not be fetched. */
  | 'FETCH';

export class LightClientError extends Error {
  constructor(
    readonly code: LightErrorCode,
    /** Height of the light block being verified. */
    readonly height: number,
    message: string,
  ) {
    super(message);
    this.name = 'LightClientError';
  }
}

/** The trust a light client grants: CometBFT's defaults are 1/3, 168h (set by the operator), 10s. */
export interface TrustOptions {
  /** How long a verified header can vouch for later ones (below the unbonding period). */
  trustingPeriodNs: bigint;
  /** How far in the future a header's time may be compared with `now`. */
  maxClockDriftNs: bigint;
  /** The verifier's current time. */
  now: TimeNs;
  /** Fraction of the trusted set's power needed to skip; default 1/3, at least 1/3 and at most 1. */
  trustLevel?: { numerator: bigint; denominator: bigint };
}

export const DEFAULT_TRUST_LEVEL = { numerator: 1n, denominator: 3n } as const;
/** CometBFT's default max clock drift (light.MaxClockDrift). */
export const DEFAULT_MAX_CLOCK_DRIFT_NS = 10_000_000_000n;

const NS_PER_S = 1_000_000_000n;

function isoTime(t: TimeNs): string {
  const ms = t / 1_000_000n;
  const d = new Date(Number(ms));
  return Number.isNaN(d.getTime()) ? `${t}ns` : d.toISOString();
}

function durationText(ns: bigint): string {
  const s = ns / NS_PER_S;
  if (s % 3600n === 0n && s > 0n) return `${s / 3600n}h`;
  if (s % 60n === 0n && s > 0n) return `${s / 60n}m`;
  return `${s}s`;
}

/** Whether `header` is older than the trusting period at `now` (light.HeaderExpired). */
export function headerExpired(header: Header, trustingPeriodNs: bigint, now: TimeNs): boolean {
  return !(header.time + trustingPeriodNs > now);
}

function trustLevelOf(opts: TrustOptions): { numerator: bigint; denominator: bigint } {
  const level = opts.trustLevel ?? DEFAULT_TRUST_LEVEL;
  // ValidateTrustLevel: 1/3 <= level <= 1 and a non-zero denominator.
  if (
    level.denominator <= 0n ||
    level.numerator * 3n < level.denominator ||
    level.numerator > level.denominator
  ) {
    throw new RangeError(
      `trust level ${level.numerator}/${level.denominator} must be within [1/3, 1] (light.ValidateTrustLevel)`,
    );
  }
  return level;
}

/** The set a light block carries, with every member's address checked against its key. */
function validatorSetOf(lb: LightBlock): ValidatorSet {
  const h = lb.header.height;
  if (lb.validators.length === 0) throw new LightClientError('INVALID_LIGHT_BLOCK', h, 'empty validator set');
  for (const v of lb.validators) {
    if (v.pubKey.length !== 32) {
      throw new LightClientError(
        'INVALID_LIGHT_BLOCK',
        h,
        `validator ${hexUpper(v.address)} has a public key of ${v.pubKey.length} bytes, not an ed25519 key`,
      );
    }
    if (!bytesEqual(ed25519Address(v.pubKey), v.address)) {
      throw new LightClientError(
        'INVALID_LIGHT_BLOCK',
        h,
        `validator address ${hexUpper(v.address)} is not the address of its public key`,
      );
    }
    if (v.votingPower <= 0n) {
      throw new LightClientError(
        'INVALID_LIGHT_BLOCK',
        h,
        `validator ${hexUpper(v.address)} has voting power ${v.votingPower}`,
      );
    }
  }
  try {
    return ValidatorSet.restore(lb.validators, null);
  } catch (err) {
    throw new LightClientError('INVALID_LIGHT_BLOCK', h, (err as Error).message);
  }
}

/**
 * A light block on its own (SignedHeader.ValidateBasic plus the validator set): the header belongs
 * to `chainId`, the commit is for this header (same height, block ID hash = header hash), and the
 * validator set is the one the header names. Returns the set, ready for commit checks.
 */
export function checkLightBlock(chainId: string, lb: LightBlock): ValidatorSet {
  const h = lb.header;
  if (!Number.isSafeInteger(h.height) || h.height <= 0) {
    throw new LightClientError('INVALID_LIGHT_BLOCK', h.height, `header height ${h.height} is not positive`);
  }
  if (h.chainId !== chainId) {
    throw new LightClientError(
      'WRONG_CHAIN',
      h.height,
      `header belongs to another chain "${h.chainId}", not "${chainId}"`,
    );
  }
  if (lb.commit.height !== h.height) {
    throw new LightClientError(
      'INVALID_LIGHT_BLOCK',
      h.height,
      `commit is for height ${lb.commit.height}, the header is at height ${h.height}`,
    );
  }
  const hash = headerHash(h);
  if (!bytesEqual(lb.commit.blockId.hash, hash)) {
    throw new LightClientError(
      'INVALID_LIGHT_BLOCK',
      h.height,
      `commit signs block ${hexUpper(lb.commit.blockId.hash)}, but the header hashes to ${hexUpper(hash)}`,
    );
  }
  const set = validatorSetOf(lb);
  if (!bytesEqual(set.hash(), h.validatorsHash)) {
    throw new LightClientError(
      'VALIDATORS_HASH',
      h.height,
      `expected header validators (${hexUpper(h.validatorsHash)}) to match those that were supplied (${hexUpper(set.hash())}) at height ${h.height}`,
    );
  }
  return set;
}

/**
 * More than 2/3 of `set` signed the commit, every signature valid (VerifyCommitLight; all present
 * signatures are checked, as verifyCommit does). Power is tallied first, so too little power and a
 * forged signature are told apart.
 */
function verifyOwnCommit(chainId: string, set: ValidatorSet, commit: Commit, verify: Verifier): void {
  const height = commit.height;
  if (commit.signatures.length !== set.size) {
    throw new LightClientError(
      'INVALID_LIGHT_BLOCK',
      height,
      `commit has ${commit.signatures.length} signatures for ${set.size} validators`,
    );
  }
  let power = 0n;
  commit.signatures.forEach((s, i) => {
    if (s.blockIdFlag === 1) return;
    const v = set.getByIndex(i)!;
    if (!bytesEqual(v.address, s.validatorAddress)) {
      throw new LightClientError(
        'INVALID_LIGHT_BLOCK',
        height,
        `commit signature ${i} is from ${hexUpper(s.validatorAddress)}, but validator ${i} is ${hexUpper(v.address)}`,
      );
    }
    if (s.blockIdFlag === 2) power += v.votingPower;
  });
  if (power * 3n <= set.totalVotingPower * 2n) {
    throw new LightClientError(
      'INSUFFICIENT_POWER',
      height,
      `signatures for the block carry power ${power} of ${set.totalVotingPower}: not more than 2/3`,
    );
  }
  try {
    verifyCommit(chainId, set, commit.blockId, height, commit, verify);
  } catch (err) {
    throw new LightClientError('FORGED_SIGNATURE', height, (err as Error).message);
  }
}

/**
 * More than `level` of the trusted set's power signed the commit (VerifyCommitLightTrusting):
 * signers are looked up by address in the trusted set, each counted once, each signature checked.
 */
function verifyTrusting(
  chainId: string,
  trusted: ValidatorSet,
  commit: Commit,
  level: { numerator: bigint; denominator: bigint },
  verify: Verifier,
): void {
  const height = commit.height;
  const needed = (trusted.totalVotingPower * level.numerator) / level.denominator;
  let tallied = 0n;
  const seen = new Set<number>();
  for (let i = 0; i < commit.signatures.length; i++) {
    const s = commit.signatures[i]!;
    if (s.blockIdFlag !== 2) continue;
    const idx = trusted.indexOf(s.validatorAddress);
    if (idx < 0) continue;
    if (seen.has(idx)) {
      throw new LightClientError(
        'FORGED_SIGNATURE',
        height,
        `double vote from validator ${hexUpper(s.validatorAddress)} in the commit`,
      );
    }
    seen.add(idx);
    const v = trusted.getByIndex(idx)!;
    if (!verify(v.pubKey, voteSignBytes(chainId, commitSigVote(commit, i)), s.signature)) {
      throw new LightClientError(
        'FORGED_SIGNATURE',
        height,
        `commit for height ${height}: signature ${i} (validator ${hexUpper(v.address)}) is invalid`,
      );
    }
    tallied += v.votingPower;
    if (tallied > needed) return;
  }
  throw new LightClientError(
    'NOT_ENOUGH_TRUST',
    height,
    `trusted validators that signed carry power ${tallied} of ${trusted.totalVotingPower}: not more than ${level.numerator}/${level.denominator} (${needed})`,
  );
}

/** Checks shared by both directions of forward verification (verifyNewHeaderAndVals). */
function checkNewHeader(
  chainId: string,
  trusted: Header,
  untrusted: LightBlock,
  opts: TrustOptions,
): ValidatorSet {
  const set = checkLightBlock(chainId, untrusted);
  const u = untrusted.header;
  if (u.height <= trusted.height) {
    throw new LightClientError(
      'HEIGHT',
      u.height,
      `expected new header height ${u.height} to be greater than one of old header ${trusted.height}`,
    );
  }
  if (u.time <= trusted.time) {
    throw new LightClientError(
      'TIME',
      u.height,
      `expected new header time ${isoTime(u.time)} to be after old header time ${isoTime(trusted.time)}`,
    );
  }
  if (u.time > opts.now + opts.maxClockDriftNs) {
    throw new LightClientError(
      'FUTURE',
      u.height,
      `new header has a time from the future ${isoTime(u.time)} (now: ${isoTime(opts.now)}; max clock drift: ${durationText(opts.maxClockDriftNs)})`,
    );
  }
  return set;
}

function checkNotExpired(trusted: Header, untrustedHeight: number, opts: TrustOptions): void {
  if (headerExpired(trusted, opts.trustingPeriodNs, opts.now)) {
    throw new LightClientError(
      'EXPIRED',
      untrustedHeight,
      `old header at height ${trusted.height} has expired at ${isoTime(trusted.time + opts.trustingPeriodNs)} (now: ${isoTime(opts.now)}; trusting period ${durationText(opts.trustingPeriodNs)})`,
    );
  }
}

/** VerifyAdjacent: `untrusted` is the header right after the trusted one. */
export function verifyAdjacent(
  chainId: string,
  trusted: SignedHeader,
  untrusted: LightBlock,
  opts: TrustOptions,
  verify: Verifier,
): void {
  const t = trusted.header;
  const u = untrusted.header;
  if (u.height !== t.height + 1) {
    throw new LightClientError(
      'HEIGHT',
      u.height,
      `headers must be adjacent in height (${t.height}, ${u.height})`,
    );
  }
  checkNotExpired(t, u.height, opts);
  const set = checkNewHeader(chainId, t, untrusted, opts);
  if (!bytesEqual(u.validatorsHash, t.nextValidatorsHash)) {
    throw new LightClientError(
      'NEXT_VALIDATORS_HASH',
      u.height,
      `expected old header next validators (${hexUpper(t.nextValidatorsHash)}) to match those from new header (${hexUpper(u.validatorsHash)})`,
    );
  }
  verifyOwnCommit(chainId, set, untrusted.commit, verify);
}

/** VerifyNonAdjacent: skipping from `trusted` to a later, non-adjacent `untrusted`. */
export function verifyNonAdjacent(
  chainId: string,
  trusted: LightBlock,
  untrusted: LightBlock,
  opts: TrustOptions,
  verify: Verifier,
): void {
  const t = trusted.header;
  const u = untrusted.header;
  if (u.height === t.height + 1) {
    throw new LightClientError(
      'HEIGHT',
      u.height,
      `headers must be non adjacent in height (${t.height}, ${u.height})`,
    );
  }
  const level = trustLevelOf(opts);
  checkNotExpired(t, u.height, opts);
  const set = checkNewHeader(chainId, t, untrusted, opts);
  verifyTrusting(chainId, validatorSetOf(trusted), untrusted.commit, level, verify);
  verifyOwnCommit(chainId, set, untrusted.commit, verify);
}

/** Verify: adjacent or non-adjacent by height. */
export function verifyLightBlock(
  chainId: string,
  trusted: LightBlock,
  untrusted: LightBlock,
  opts: TrustOptions,
  verify: Verifier,
): void {
  if (untrusted.header.height === trusted.header.height + 1) {
    verifyAdjacent(chainId, trusted, untrusted, opts, verify);
  } else {
    verifyNonAdjacent(chainId, trusted, untrusted, opts, verify);
  }
}

/**
 * A light block trusted on its own terms: a trust root given by hash (trust_height + trust_hash)
 * or the first block of the chain, whose validator set the genesis names. The header must hash to
 * `expectedHash` when given, carry `expectedValidatorsHash` when given, and be signed by more than
 * 2/3 of its own validator set.
 */
export function verifyTrustRoot(
  chainId: string,
  lb: LightBlock,
  expect: { hash?: Uint8Array; validatorsHash?: Uint8Array; height?: number },
  opts: TrustOptions,
  verify: Verifier,
): void {
  const h = lb.header;
  if (expect.height !== undefined && h.height !== expect.height) {
    throw new LightClientError(
      'HEIGHT',
      h.height,
      `trust root must be at height ${expect.height}, got ${h.height}`,
    );
  }
  const set = checkLightBlock(chainId, lb);
  if (expect.hash && !bytesEqual(headerHash(h), expect.hash)) {
    throw new LightClientError(
      'HASH_MISMATCH',
      h.height,
      `header at height ${h.height} hashes to ${hexUpper(headerHash(h))}, but the trusted hash is ${hexUpper(expect.hash)}`,
    );
  }
  if (expect.validatorsHash && !bytesEqual(h.validatorsHash, expect.validatorsHash)) {
    throw new LightClientError(
      'VALIDATORS_HASH',
      h.height,
      `header at height ${h.height} names validators ${hexUpper(h.validatorsHash)}, but the trusted set hashes to ${hexUpper(expect.validatorsHash)}`,
    );
  }
  if (headerExpired(h, opts.trustingPeriodNs, opts.now)) {
    throw new LightClientError(
      'EXPIRED',
      h.height,
      `trust root at height ${h.height} (time ${isoTime(h.time)}) is older than the trusting period ${durationText(opts.trustingPeriodNs)}`,
    );
  }
  verifyOwnCommit(chainId, set, lb.commit, verify);
}

/**
 * VerifyBackwards: `untrusted` is the block right below a trusted header, linked by hash
 * (trusted.last_block_id.hash = hash(untrusted header)); its commit is checked against its own set.
 */
export function verifyBackwards(
  chainId: string,
  trusted: Header,
  untrusted: LightBlock,
  verify: Verifier,
): void {
  const u = untrusted.header;
  if (u.height !== trusted.height - 1) {
    throw new LightClientError('HEIGHT', u.height, `expected height ${trusted.height - 1}, got ${u.height}`);
  }
  const set = checkLightBlock(chainId, untrusted);
  if (!bytesEqual(headerHash(u), trusted.lastBlockId.hash)) {
    throw new LightClientError(
      'HASH_MISMATCH',
      u.height,
      `header at height ${u.height} hashes to ${hexUpper(headerHash(u))}, but the trusted header ${trusted.height} names ${hexUpper(trusted.lastBlockId.hash)} as its last block`,
    );
  }
  if (u.time >= trusted.time) {
    throw new LightClientError(
      'TIME',
      u.height,
      `expected older header time ${isoTime(u.time)} to be before new header time ${isoTime(trusted.time)}`,
    );
  }
  verifyOwnCommit(chainId, set, untrusted.commit, verify);
}

/**
 * Skipping verification with bisection (CometBFT's verifySkipping): tries to reach `target` from
 * `trusted` directly; when the trusted set's overlap with the signers is too small
 * (NOT_ENOUGH_TRUST), fetches the light block half-way and tries from there, recursively. Returns
 * the newly verified light blocks in ascending height order, ending with `target`. Any other
 * failure is thrown as is (its height names the block that failed).
 */
export async function verifySkipping(
  chainId: string,
  trusted: LightBlock,
  target: LightBlock,
  fetch: (height: number) => Promise<LightBlock>,
  opts: TrustOptions,
  verify: Verifier,
  maxFetches = 64,
): Promise<LightBlock[]> {
  const verified: LightBlock[] = [];
  let current = trusted;
  // Blocks waiting for verification, the last one to try first.
  const cache: LightBlock[] = [target];
  let depth = 0;
  let fetches = 0;
  for (;;) {
    const next = cache[depth]!;
    try {
      verifyLightBlock(chainId, current, next, opts, verify);
    } catch (err) {
      if (!(err instanceof LightClientError) || err.code !== 'NOT_ENOUGH_TRUST') throw err;
      if (depth === cache.length - 1) {
        const pivot = current.header.height + Math.floor((next.header.height - current.header.height) / 2);
        if (pivot <= current.header.height || pivot >= next.header.height) throw err;
        if (++fetches > maxFetches) {
          throw new LightClientError(
            'FETCH',
            next.header.height,
            `bisection needed more than ${maxFetches} light blocks`,
          );
        }
        let lb: LightBlock;
        try {
          lb = await fetch(pivot);
        } catch (e) {
          throw new LightClientError(
            'FETCH',
            pivot,
            `bisection needs the light block at height ${pivot}: ${(e as Error).message}`,
          );
        }
        if (lb.header.height !== pivot) {
          throw new LightClientError(
            'INVALID_LIGHT_BLOCK',
            pivot,
            `asked for height ${pivot}, got ${lb.header.height}`,
          );
        }
        cache.push(lb);
      }
      depth++;
      continue;
    }
    verified.push(next);
    current = next;
    if (depth === 0) return verified;
    cache.length = depth;
    depth = 0;
  }
}
