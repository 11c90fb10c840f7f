// The commit check of a read replica (docs/cluster.md "Commit checks"): a committed height is
// applied only when the light block it carries (CommittedHeight.light_block, which consensus gave
// the executor in FinalizeBlock) proves that more than 2/3 of that height's validator set signed
// the consensus block this Ethereum block was executed from.
//
// The signatures, the validator set's hash and its chaining are checked by libs/consensus' light
// client rules (CometBFT's light/verifier.go, with its vote sign bytes and verifyCommit): the first
// height against the genesis validators (genesis.json, as consensus builds its first set), each
// later one adjacent to the last applied (its validators_hash must be the previous header's
// next_validators_hash, so a set staking changed is taken from the header that announced it). Then
// the Ethereum block is tied to that header: its mix_hash is the consensus block hash (the executor
// sets it from FinalizeBlock's hash), its number is the height, its timestamp the header's time in
// seconds, its hash is keccak256 of its header and names the record's parent; and the header's
// app_hash must be the app hash of the height applied before (the state the signed block was built
// on). The results of a height (its kv_ops, its own app hash) are vouched for by the next header,
// as in CometBFT: a replica holding results that the next signed header contradicts stops there.

import {
  ConsensusError,
  decodeLightBlock,
  genesisChainState,
  headerHash,
  type LightBlock,
  LightClientError,
  type Verifier,
  verifyAdjacent,
  verifyTrustRoot,
} from '@noded/consensus';
import { ed25519Verify, keccak256 } from '@noded/crypto';
import { type CommittedRecord, decodeEthHeader, type EthHeader } from '@noded/execution';
import type { ConsensusParams, TimeNs, Validator } from '@noded/types';

export type CommitErrorCode =
  /** The height carries no light block (an executor or consensus older than the check). */
  | 'NO_COMMIT'
  /** The light block does not decode. */
  | 'BAD_COMMIT'
  /** The light block fails a light client rule (signatures, power, validator set, chain). */
  | 'INVALID_COMMIT'
  /** The commit is valid but for another block than the one the record carries. */
  | 'NOT_THIS_BLOCK';

export class CommitCheckError extends Error {
  constructor(
    readonly code: CommitErrorCode,
    readonly height: number,
    message: string,
  ) {
    super(message);
    this.name = 'CommitCheckError';
  }
}

export interface CommitCheckOptions {
  chainId: string;
  /** genesis.json's initial_height: the first height with a block (the genesis record is the one below). */
  initialHeight: number;
  /** genesis.json's validators (the set of the first height, as consensus builds it). */
  genesisValidators: Validator[];
  /** genesis.json's consensus params (only for building the first set as consensus does). */
  consensusParams: ConsensusParams;
  genesisTime: TimeNs;
  /** Defaults to ed25519. */
  verify?: Verifier;
  /** The replica's clock, for the light client's clock drift rule. */
  now?: () => TimeNs;
  /**
   * How far ahead of the replica's clock a header's time may be (the light client's max clock
   * drift); default 10 s, CometBFT's.
   */
  maxClockDriftNs?: bigint;
}

/**
 * Headers are checked one after the other from the genesis set, never skipped: the light client's
 * trusting period (how long a trusted header may vouch for a later, non-adjacent one) does not
 * apply to adjacent steps taken in order, so it is set beyond any chain's age.
 */
const NO_EXPIRY_NS = 1n << 62n;
const DEFAULT_DRIFT_NS = 10_000_000_000n;

const hex = (b: Uint8Array) => `0x${Buffer.from(b).toString('hex')}`;
const same = (a: Uint8Array, b: Uint8Array) => Buffer.compare(a, b) === 0;

export class CommitChecker {
  private readonly verify: Verifier;
  private readonly genesisValidatorsHash: Uint8Array;

  constructor(private readonly o: CommitCheckOptions) {
    this.verify = o.verify ?? ed25519Verify;
    this.genesisValidatorsHash = genesisChainState(
      {
        chainId: o.chainId,
        time: o.genesisTime,
        initialHeight: o.initialHeight,
        validators: o.genesisValidators,
        consensusParams: o.consensusParams,
      },
      new Uint8Array(0),
    ).validators.hash();
  }

  /** The light block `r` carries, decoded (CommitCheckError NO_COMMIT or BAD_COMMIT otherwise). */
  lightBlockOf(r: CommittedRecord): LightBlock {
    if (!r.lightBlock || r.lightBlock.length === 0) {
      throw new CommitCheckError(
        'NO_COMMIT',
        r.height,
        `height ${r.height} carries no commit (CommittedHeight.light_block is empty): it was published by an executor or consensus that does not send one, or forged`,
      );
    }
    try {
      return decodeLightBlock(r.lightBlock);
    } catch (err) {
      if (!(err instanceof ConsensusError)) throw err;
      throw new CommitCheckError(
        'BAD_COMMIT',
        r.height,
        `height ${r.height}: CommittedHeight.light_block does not decode: ${err.message}`,
      );
    }
  }

  /**
   * Checks the commit of `r`, the height after `prev` (the record applied last; the genesis record
   * for the first height). Throws a CommitCheckError naming what is wrong.
   */
  check(r: CommittedRecord, prev: CommittedRecord): void {
    const lb = this.lightBlockOf(r);
    const h = r.height;
    const opts = {
      trustingPeriodNs: NO_EXPIRY_NS,
      maxClockDriftNs: this.o.maxClockDriftNs ?? DEFAULT_DRIFT_NS,
      now: this.o.now?.() ?? BigInt(Date.now()) * 1_000_000n,
    };
    try {
      if (lb.header.height !== h) {
        throw new CommitCheckError(
          'NOT_THIS_BLOCK',
          h,
          `height ${h} carries the commit of height ${lb.header.height}`,
        );
      }
      if (h === this.o.initialHeight) {
        verifyTrustRoot(
          this.o.chainId,
          lb,
          { height: h, validatorsHash: this.genesisValidatorsHash },
          opts,
          this.verify,
        );
      } else {
        if (!prev.lightBlock || prev.lightBlock.length === 0) {
          throw new CommitCheckError(
            'NO_COMMIT',
            h,
            `height ${h}: the height applied before it (${prev.height}) carries no commit to check it against (a replica applied before commit checks); delete the replica's database and it rebuilds from the stream`,
          );
        }
        const trusted = this.lightBlockOf(prev);
        verifyAdjacent(this.o.chainId, trusted, lb, opts, this.verify);
      }
    } catch (err) {
      if (err instanceof LightClientError) {
        throw new CommitCheckError(
          'INVALID_COMMIT',
          h,
          `height ${h}: its commit does not verify (${err.code}): ${err.message}`,
        );
      }
      throw err;
    }
    this.checkBinding(r, prev, lb);
  }

  /** The Ethereum block of `r` is the one executed from the signed consensus block. */
  private checkBinding(r: CommittedRecord, prev: CommittedRecord, lb: LightBlock): void {
    const h = r.height;
    const not = (why: string): never => {
      throw new CommitCheckError('NOT_THIS_BLOCK', h, `height ${h}: ${why}`);
    };
    const signed = headerHash(lb.header);
    if (!same(keccak256(r.headerRlp), r.blockHash))
      not(
        `block_hash ${hex(r.blockHash)} is not the hash of its header_rlp (${hex(keccak256(r.headerRlp))})`,
      );
    let eth: EthHeader;
    try {
      eth = decodeEthHeader(r.headerRlp);
    } catch (err) {
      throw new CommitCheckError(
        'NOT_THIS_BLOCK',
        h,
        `height ${h}: header_rlp is not an Ethereum header: ${(err as Error).message}`,
      );
    }
    if (!same(eth.mixHash, signed))
      not(
        `the block's mix_hash ${hex(eth.mixHash)} is not the consensus block ${hex(signed)} that the commit signs`,
      );
    if (eth.number !== BigInt(h)) not(`the block's header is numbered ${eth.number}`);
    if (!same(eth.parentHash, r.parentHash))
      not(`the block's header names parent ${hex(eth.parentHash)}, the record ${hex(r.parentHash)}`);
    const seconds = lb.header.time / 1_000_000_000n;
    if (eth.timestamp !== seconds)
      not(`the block's timestamp ${eth.timestamp} is not the signed header's time ${seconds}`);
    if (!same(lb.header.appHash, prev.appHash))
      not(
        `the signed header's app_hash ${hex(lb.header.appHash)} is not the app hash ${hex(prev.appHash)} of height ${prev.height} this replica applied`,
      );
  }
}
