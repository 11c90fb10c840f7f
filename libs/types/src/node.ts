// What the CometBFT-compatible RPC (:26657), the REST API (:1317) and metrics read from the node.
// The consensus runtime implements it in the all-in-one process; a gRPC client can in a cluster.
import type { AbciEvent, AppInfo, CheckTxResult, ExecTxResult, FinalizeBlockResponse } from './app.js';
import type {
  Block,
  BlockId,
  BlockMeta,
  Commit,
  ConsensusParams,
  Evidence,
  TimeNs,
  Validator,
} from './consensus.js';

export interface PeerInfo {
  nodeId: string;
  moniker: string;
  remoteIp: string;
  listenAddr: string;
  isOutbound: boolean;
  network: string;
  version: string;
  /** Protocol IDs of the channels the peer serves (its handshake's node info). */
  channels?: string[];
}

export interface NodeIdentity {
  nodeId: string;
  listenAddr: string;
  network: string; // chain id
  version: string;
  moniker: string;
  channels: string;
  txIndex: 'on' | 'off';
  rpcAddress: string;
}

export interface SyncInfo {
  latestBlockHash: Uint8Array;
  latestAppHash: Uint8Array;
  latestBlockHeight: number;
  latestBlockTime: TimeNs;
  earliestBlockHash: Uint8Array;
  earliestAppHash: Uint8Array;
  earliestBlockHeight: number;
  earliestBlockTime: TimeNs;
  catchingUp: boolean;
}

export interface RoundStateSummary {
  height: number;
  round: number;
  step: string;
  startTime: TimeNs;
  proposerAddress: Uint8Array | null;
  /** Per round: prevote and precommit tallies rendered like CometBFT's dump. */
  votes: Array<{
    round: number;
    prevotes: string[];
    prevotesBitArray: string;
    precommits: string[];
    precommitsBitArray: string;
  }>;
  lockedRound: number;
  validRound: number;
  /** Full engine state for dump_consensus_state, already JSON-safe. */
  raw: unknown;
}

export interface StoredBlockResults {
  height: number;
  txResults: ExecTxResult[];
  finalizeBlockEvents: AbciEvent[];
  validatorUpdates: FinalizeBlockResponse['validatorUpdates'];
  consensusParamUpdates: ConsensusParams | null;
  appHash: Uint8Array;
}

/** The application's execution counters, for metrics. */
export interface ExecutionStats {
  /** Transactions refused at admission (CheckTx of new transactions, eth_sendRawTransaction) since start. */
  refusedTxs: number;
  /** Block transactions that had executed ahead of their proposal, since start. */
  ranAheadTxs: number;
  /** Downtime jails the liveness guard held back (blocks × validators), since start. */
  heldBackJails?: number;
  /** Height and duration (ms) of the last FinalizeBlock. */
  lastFinalizeHeight: number;
  lastFinalizeMs: number;
}

export interface NodeReader {
  identity(): NodeIdentity;
  syncInfo(): SyncInfo;
  /** This node's validator key and power (power 0 when it is not a validator). */
  validatorInfo(): { address: Uint8Array; pubKey: Uint8Array; votingPower: bigint };
  peers(): PeerInfo[];
  genesisJson(): string;

  blockStoreBase(): number;
  blockStoreHeight(): number;
  loadBlock(height: number): Promise<Block | undefined>;
  loadBlockByHash(hash: Uint8Array): Promise<{ block: Block; blockId: BlockId } | undefined>;
  loadBlockMeta(height: number): Promise<BlockMeta | undefined>;
  /** Commit for `height`: the next block's last_commit, or the seen commit for the tip. */
  loadCommit(height: number): Promise<{ commit: Commit; canonical: boolean } | undefined>;
  loadBlockResults(height: number): Promise<StoredBlockResults | undefined>;
  validators(height: number): Promise<Validator[] | undefined>;
  consensusParams(height: number): Promise<ConsensusParams | undefined>;
  roundState(): RoundStateSummary;

  checkTx(tx: Uint8Array): Promise<CheckTxResult>;
  /** Adds to the mempool after checkTx; returns the result (code != 0 when rejected). */
  broadcastTx(tx: Uint8Array): Promise<CheckTxResult>;
  /** The mempool's first `limit` transactions and totals (a pool in another process answers async). */
  unconfirmedTxs(
    limit: number,
  ):
    | { txs: Uint8Array[]; total: number; totalBytes: number }
    | Promise<{ txs: Uint8Array[]; total: number; totalBytes: number }>;
  /** unsafe_flush_mempool: drops every transaction in the mempool (a pool in another process answers async). */
  flushMempool(): void | Promise<void>;
  submitEvidence(evidence: Evidence): Promise<Uint8Array>;
  abciQuery(
    path: string,
    data: Uint8Array,
    height: number,
    prove: boolean,
  ): Promise<{
    code: number;
    log: string;
    key: Uint8Array;
    value: Uint8Array;
    height: number;
  }>;

  /** Execution counters for metrics. Optional: the metrics it feeds stay unset without it. */
  executionStats?(): ExecutionStats;
  /** ABCI Info of the application (abci_info). Optional: the RPC falls back to sync info. */
  abciInfo?(): Promise<AppInfo>;
  /** Unsafe RPC dial_seeds. Optional: the route answers "not supported" without it. */
  dialSeeds?(seeds: string[]): Promise<void>;
  /** Unsafe RPC dial_peers (`<id>@<host>:<port>` addresses). Optional like dialSeeds. */
  dialPeers?(
    peers: string[],
    options: { persistent: boolean; unconditional: boolean; private: boolean },
  ): Promise<void>;
}
