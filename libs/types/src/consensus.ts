// Consensus data structures shared by the engine, the block store and the RPCs.
// Shapes follow CometBFT v0.38 (types/block.go, types/vote.go) so the :26657 RPC can render them
// one-to-one. Heights and rounds are JS numbers (safe far beyond any real chain); voting power and
// priorities are bigint (CometBFT uses int64); times are bigint nanoseconds since the Unix epoch.

/** Unix time in nanoseconds. */
export type TimeNs = bigint;

export interface PartSetHeader {
  total: number;
  hash: Uint8Array;
}

/** A block id; an empty hash (length 0) means "nil" in votes. */
export interface BlockId {
  hash: Uint8Array;
  partSetHeader: PartSetHeader;
}

export interface Header {
  version: { block: number; app: number };
  chainId: string;
  height: number;
  time: TimeNs;
  lastBlockId: BlockId;
  lastCommitHash: Uint8Array;
  dataHash: Uint8Array;
  validatorsHash: Uint8Array;
  nextValidatorsHash: Uint8Array;
  consensusHash: Uint8Array;
  appHash: Uint8Array;
  lastResultsHash: Uint8Array;
  evidenceHash: Uint8Array;
  proposerAddress: Uint8Array;
}

/** BlockIDFlag of CometBFT: 1 absent, 2 commit, 3 nil. */
export type BlockIdFlag = 1 | 2 | 3;

export interface CommitSig {
  blockIdFlag: BlockIdFlag;
  validatorAddress: Uint8Array;
  timestamp: TimeNs;
  signature: Uint8Array;
  /**
   * Only in an extended commit (CometBFT's ExtendedCommitSig), never in a block's last_commit nor in
   * what is hashed: the vote extension of a commit vote and the validator's signature over it.
   */
  extension?: Uint8Array;
  extensionSignature?: Uint8Array;
}

export interface Commit {
  height: number;
  round: number;
  blockId: BlockId;
  signatures: CommitSig[];
}

/** SignedMsgType of CometBFT: 1 prevote, 2 precommit, 32 proposal. */
export type VoteType = 1 | 2;

export interface Vote {
  type: VoteType;
  height: number;
  round: number;
  blockId: BlockId;
  timestamp: TimeNs;
  validatorAddress: Uint8Array;
  validatorIndex: number;
  signature: Uint8Array;
  /**
   * ABCI 2.0 vote extension: set only on a non-nil precommit at a height where
   * consensus_params.abci.vote_extensions_enable_height is reached (absent or empty otherwise). It is
   * not covered by `signature`; `extensionSignature` signs it (voteExtensionSignBytes).
   */
  extension?: Uint8Array;
  extensionSignature?: Uint8Array;
}

export interface Proposal {
  height: number;
  round: number;
  polRound: number; // -1 when there is no proof-of-lock round
  blockId: BlockId;
  timestamp: TimeNs;
  signature: Uint8Array;
}

export interface DuplicateVoteEvidence {
  voteA: Vote;
  voteB: Vote;
  totalVotingPower: bigint;
  validatorPower: bigint;
  timestamp: TimeNs;
}

export type Evidence = DuplicateVoteEvidence;

export interface Block {
  header: Header;
  data: { txs: Uint8Array[] };
  evidence: Evidence[];
  /** Null only for the first block of the chain. */
  lastCommit: Commit | null;
}

export interface Validator {
  /** First 20 bytes of sha256(pubKey). */
  address: Uint8Array;
  /** ed25519 public key, 32 bytes. */
  pubKey: Uint8Array;
  votingPower: bigint;
  proposerPriority: bigint;
}

export interface BlockMeta {
  blockId: BlockId;
  blockSize: number;
  header: Header;
  numTxs: number;
}

/** consensus_params as CometBFT keeps them (seed §2.2 gives the block and evidence values). */
export interface ConsensusParams {
  block: { maxBytes: bigint; maxGas: bigint };
  evidence: { maxAgeNumBlocks: bigint; maxAgeDuration: bigint; maxBytes: bigint };
  validator: { pubKeyTypes: string[] };
  version: { app: bigint };
  abci: { voteExtensionsEnableHeight: bigint };
}
