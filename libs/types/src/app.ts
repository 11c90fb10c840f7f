// The application boundary between consensus and execution, modelled on ABCI 2.0
// (CometBFT v0.38). Consensus calls it; libs/execution implements it. The mempool lives on the
// application side (app-side mempool), so prepareProposal pulls transactions from it.
import type { ConsensusParams, Evidence, TimeNs, Validator } from './consensus.js';

export interface AbciEventAttribute {
  key: string;
  value: string;
  index: boolean;
}

export interface AbciEvent {
  type: string;
  attributes: AbciEventAttribute[];
}

/** Result of one transaction in a block (ExecTxResult). code 0 is success. */
export interface ExecTxResult {
  code: number;
  data: Uint8Array;
  log: string;
  info: string;
  gasWanted: bigint;
  gasUsed: bigint;
  events: AbciEvent[];
  codespace: string;
}

export interface CheckTxResult {
  /** 0 accepted; non-zero rejected, with `log` holding geth's message (e.g. "nonce too low"). */
  code: number;
  log: string;
  gasWanted: bigint;
  codespace: string;
  /** Hash of the transaction (keccak256 of the raw bytes for Ethereum transactions). */
  hash: Uint8Array;
}

export interface AppInfo {
  data: string;
  version: string;
  appVersion: bigint;
  lastBlockHeight: number;
  lastBlockAppHash: Uint8Array;
}

export interface InitChainRequest {
  chainId: string;
  time: TimeNs;
  initialHeight: number;
  validators: Validator[];
  consensusParams: ConsensusParams;
  /** The genesis.json `app_state` object, as parsed JSON. */
  appState: unknown;
}

export interface InitChainResponse {
  appHash: Uint8Array;
}

export interface ValidatorUpdate {
  pubKey: Uint8Array;
  power: bigint;
}

/** One validator's precommit for the last block, with its extension (CometBFT's ExtendedVoteInfo). */
export interface ExtendedVoteInfo {
  validator: { address: Uint8Array; power: bigint };
  /** 1 absent, 2 commit (voted for the block), 3 nil. Only flag 2 carries an extension. */
  blockIdFlag: 1 | 2 | 3;
  voteExtension: Uint8Array;
  extensionSignature: Uint8Array;
}

/**
 * The last height's precommits as the proposer holds them (CometBFT's ExtendedCommitInfo), in the
 * order of that height's validator set. The extension signatures were checked by consensus; the
 * application re-checks them (voteExtensionSignBytes) when it relies on them in a proposal others
 * must accept, since other validators never see this structure.
 */
export interface ExtendedCommitInfo {
  round: number;
  votes: ExtendedVoteInfo[];
}

export interface PrepareProposalRequest {
  height: number;
  time: TimeNs;
  proposerAddress: Uint8Array;
  /** Bytes available for transactions in the block. */
  maxTxBytes: number;
  /**
   * The extended votes of height - 1 when vote extensions were enabled there
   * (consensus_params.abci.vote_extensions_enable_height <= height - 1); absent otherwise.
   */
  localLastCommit?: ExtendedCommitInfo;
}

/** ExtendVote: the local validator is about to precommit this block. */
export interface ExtendVoteRequest {
  height: number;
  round: number;
  /** Hash of the block being precommitted. */
  hash: Uint8Array;
  time: TimeNs;
  txs: Uint8Array[];
  proposerAddress: Uint8Array;
}

/** VerifyVoteExtension: another validator's precommit for `hash` carries this extension. */
export interface VerifyVoteExtensionRequest {
  height: number;
  round: number;
  hash: Uint8Array;
  validatorAddress: Uint8Array;
  voteExtension: Uint8Array;
}

export interface ProcessProposalRequest {
  height: number;
  time: TimeNs;
  proposerAddress: Uint8Array;
  hash: Uint8Array;
  txs: Uint8Array[];
}

export interface Misbehavior {
  type: 'duplicate_vote';
  validatorAddress: Uint8Array;
  height: number;
  time: TimeNs;
  totalVotingPower: bigint;
}

/** One validator of the last block's set and whether its precommit for that block is in the commit. */
export interface VoteInfo {
  validatorAddress: Uint8Array;
  power: bigint;
  /** A precommit for the decided block (CometBFT BLOCK_ID_FLAG_COMMIT); false: absent or nil. */
  signed: boolean;
}

/** The commit of the previous block as it is in this block (CometBFT's decided_last_commit). */
export interface CommitInfo {
  round: number;
  /** Every validator of the previous height's set, in set order; empty at the first height. */
  votes: VoteInfo[];
}

export interface FinalizeBlockRequest {
  height: number;
  time: TimeNs;
  proposerAddress: Uint8Array;
  /** Hash of the consensus block being finalized. */
  hash: Uint8Array;
  txs: Uint8Array[];
  misbehavior: Misbehavior[];
  /** Who signed the previous block: the application counts missed blocks from it (downtime). */
  decidedLastCommit: CommitInfo;
  /**
   * noded's own, not CometBFT's: this height's light block (CometBFT's LightBlock protobuf: the
   * header, the commit that decided it with its signatures, the height's validator set), sent when
   * the runtime's `lightBlocks` option is on (the cluster's consensus service). The cluster's
   * executor puts it on the stream of committed heights for the state-stores to verify.
   */
  lightBlock?: Uint8Array;
}

export interface FinalizeBlockResponse {
  events: AbciEvent[];
  txResults: ExecTxResult[];
  validatorUpdates: ValidatorUpdate[];
  consensusParamUpdates: ConsensusParams | null;
  appHash: Uint8Array;
}

export interface Application {
  info(): Promise<AppInfo>;
  initChain(req: InitChainRequest): Promise<InitChainResponse>;
  checkTx(tx: Uint8Array, kind: 'new' | 'recheck'): Promise<CheckTxResult>;
  /** Returns the ordered transactions for a block the local validator proposes. */
  prepareProposal(req: PrepareProposalRequest): Promise<Uint8Array[]>;
  /** Accept or reject a block proposed by another validator. */
  processProposal(req: ProcessProposalRequest): Promise<boolean>;
  finalizeBlock(req: FinalizeBlockRequest): Promise<FinalizeBlockResponse>;
  /**
   * The extension for the local validator's non-nil precommit, at heights where vote extensions are
   * enabled. An application without this method extends with empty bytes. At most
   * MAX_VOTE_EXTENSION_BYTES (libs/consensus); a longer or failed answer is logged and replaced by
   * an empty extension, so the validator still votes.
   */
  extendVote?(req: ExtendVoteRequest): Promise<Uint8Array>;
  /**
   * Accept (true) or reject another validator's extension. A rejected precommit is not counted.
   * Must be deterministic in its inputs: validators that disagree split the vote. Without this
   * method every extension whose signature verifies is accepted.
   */
  verifyVoteExtension?(req: VerifyVoteExtensionRequest): Promise<boolean>;
  /**
   * Persists the state of the last finalized block atomically. With `durable: false` the write
   * need not be on disk when this returns (one that is lost in a power failure is replayed from
   * the block store at the next start): block sync asks for that while catching up, and an
   * application may ignore it and always write durably.
   */
  commit(opts?: CommitOptions): Promise<{ retainHeight: number }>;
  /**
   * The application's queries (CometBFT's abci_query): read-only, answered from committed state.
   * An application without this method answers none (the RPC says so).
   */
  query?(req: AppQueryRequest): Promise<AppQueryResult>;
  /**
   * Writes the commits held with `hold` (CommitOptions), in order, as one batch, without fsync. An
   * application that has this method holds commits when asked; block sync batches its sync points
   * only behind such an application (docs/p2p.md, "Batched durability while behind").
   */
  flushHeld?(): Promise<void>;
}

/** abci_query's arguments (CometBFT's RequestQuery). */
export interface AppQueryRequest {
  path: string;
  data: Uint8Array;
  /** The state to read: 0 (or less) for the latest committed height. */
  height: number;
  prove: boolean;
}

/** abci_query's answer (CometBFT's ResponseQuery): code 0 found, otherwise `log` says why. */
export interface AppQueryResult {
  code: number;
  log: string;
  key: Uint8Array;
  value: Uint8Array;
  /** The height the answer was read at. */
  height: number;
}

/** How the application's commit writes (Application.commit). */
export interface CommitOptions {
  /** false: no fsync needed before returning (default true). */
  durable?: boolean;
  /**
   * true: keep this commit's writes in memory (the application reads them as committed) until
   * the next commit without `hold`, which writes them with its own, or flushHeld(). A crash of any
   * kind loses them, as if those commits never happened: block sync holds the commits of the
   * blocks it applies between two sync points, so that the application on disk is never past the
   * block store on disk. Ignored by an application without flushHeld().
   */
  hold?: boolean;
}

export type { Evidence };
