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

export interface PrepareProposalRequest {
  height: number;
  time: TimeNs;
  proposerAddress: Uint8Array;
  /** Bytes available for transactions in the block. */
  maxTxBytes: number;
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

export interface FinalizeBlockRequest {
  height: number;
  time: TimeNs;
  proposerAddress: Uint8Array;
  /** Hash of the consensus block being finalized. */
  hash: Uint8Array;
  txs: Uint8Array[];
  misbehavior: Misbehavior[];
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
   * Persists the state of the last finalized block atomically. With `durable: false` the write
   * need not be on disk when this returns (one that is lost in a power failure is replayed from
   * the block store at the next start): block sync asks for that while catching up, and an
   * application may ignore it and always write durably.
   */
  commit(opts?: CommitOptions): Promise<{ retainHeight: number }>;
}

/** How the application's commit writes (Application.commit). */
export interface CommitOptions {
  /** false: no fsync needed before returning (default true). */
  durable?: boolean;
}

export type { Evidence };
