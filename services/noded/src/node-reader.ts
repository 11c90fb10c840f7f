// NodeReader for the all-in-one process: the CometBFT RPC, REST API and metrics read consensus
// (block store, round state) and execution (mempool, state) through this one object.
import type { ConsensusRuntime } from '@noded/consensus';
import type { Executor } from '@noded/execution';
import { type PeerAddress, peerAddresses } from '@noded/p2p';
import type {
  AppInfo,
  Block,
  BlockId,
  BlockMeta,
  CheckTxResult,
  Commit,
  ConsensusParams,
  Evidence,
  ExecutionStats,
  NodeIdentity,
  NodeReader,
  PeerInfo,
  RoundStateSummary,
  StoredBlockResults,
  SyncInfo,
  Validator,
} from '@noded/types';

export interface LocalNodeReaderDeps {
  consensus: ConsensusRuntime;
  executor: Executor;
  nodeId: string;
  moniker: string;
  chainId: string;
  p2pListenAddr: string;
  rpcAddress: string;
  genesisText: string;
  mode: 'full' | 'archive';
  version: string;
  /** tx_index.indexer is "kv" (false for "null"). */
  txIndex: boolean;
  /** Connected P2P peers. */
  peers: () => PeerInfo[];
  /** Dials peers for the unsafe RPC (dial_peers, dial_seeds). */
  addPeers: (addrs: PeerAddress[], o: { persistent: boolean; unconditional: boolean }) => void;
}

export class LocalNodeReader implements NodeReader {
  constructor(private readonly deps: LocalNodeReaderDeps) {}

  identity(): NodeIdentity & { other?: Record<string, string> } {
    const d = this.deps;
    return {
      nodeId: d.nodeId,
      listenAddr: d.p2pListenAddr,
      network: d.chainId,
      version: d.version,
      moniker: d.moniker,
      // CometBFT's channel ids (blocksync, consensus, mempool, evidence, ...), as its /status shows.
      channels: '40202122233038606100',
      txIndex: d.txIndex ? 'on' : 'off',
      rpcAddress: d.rpcAddress,
      other: { tx_index: d.txIndex ? 'on' : 'off', rpc_address: d.rpcAddress, mode: d.mode },
    };
  }

  syncInfo(): SyncInfo {
    return this.deps.consensus.syncInfo();
  }

  validatorInfo(): { address: Uint8Array; pubKey: Uint8Array; votingPower: bigint } {
    return this.deps.consensus.validatorInfo();
  }

  peers(): PeerInfo[] {
    return this.deps.peers();
  }

  async dialSeeds(seeds: string[]): Promise<void> {
    this.deps.addPeers(peerAddresses(seeds), { persistent: false, unconditional: false });
  }

  async dialPeers(peers: string[], o: { persistent: boolean; unconditional: boolean }): Promise<void> {
    this.deps.addPeers(peerAddresses(peers), o);
  }

  genesisJson(): string {
    return this.deps.genesisText;
  }

  blockStoreBase(): number {
    return this.deps.consensus.blockStoreBase();
  }

  blockStoreHeight(): number {
    return this.deps.consensus.blockStoreHeight();
  }

  loadBlock(height: number): Promise<Block | undefined> {
    return this.deps.consensus.loadBlock(height);
  }

  loadBlockByHash(hash: Uint8Array): Promise<{ block: Block; blockId: BlockId } | undefined> {
    return this.deps.consensus.loadBlockByHash(hash);
  }

  loadBlockMeta(height: number): Promise<BlockMeta | undefined> {
    return this.deps.consensus.loadBlockMeta(height);
  }

  loadCommit(height: number): Promise<{ commit: Commit; canonical: boolean } | undefined> {
    return this.deps.consensus.loadCommit(height);
  }

  loadBlockResults(height: number): Promise<StoredBlockResults | undefined> {
    return this.deps.consensus.loadBlockResults(height);
  }

  validators(height: number): Promise<Validator[] | undefined> {
    return this.deps.consensus.validators(height);
  }

  consensusParams(height: number): Promise<ConsensusParams | undefined> {
    return this.deps.consensus.consensusParams(height);
  }

  roundState(): RoundStateSummary {
    return this.deps.consensus.roundState();
  }

  /** CometBFT's check_tx: runs the checks without adding to the mempool. */
  checkTx(tx: Uint8Array): Promise<CheckTxResult> {
    return this.deps.executor.checkTx(tx, 'recheck');
  }

  async broadcastTx(tx: Uint8Array): Promise<CheckTxResult> {
    const res = await this.deps.executor.checkTx(tx, 'new');
    if (res.code === 0) this.deps.consensus.txsAvailable();
    return res;
  }

  unconfirmedTxs(limit: number): { txs: Uint8Array[]; total: number; totalBytes: number } {
    return this.deps.executor.unconfirmedTxs(limit);
  }

  executionStats(): ExecutionStats {
    return this.deps.executor.executionStats();
  }

  mempoolSize(): number {
    return this.deps.executor.mempoolSize();
  }

  flushMempool(): void {
    this.deps.executor.flushMempool();
  }

  submitEvidence(evidence: Evidence): Promise<Uint8Array> {
    return this.deps.consensus.submitEvidence(evidence);
  }

  abciInfo(): Promise<AppInfo> {
    return this.deps.executor.info();
  }

  /** abci_query: the executor's queries (libs/execution query.ts, the same code the cluster's executor serves). */
  abciQuery(
    path: string,
    data: Uint8Array,
    height: number,
    prove: boolean,
  ): Promise<{ code: number; log: string; key: Uint8Array; value: Uint8Array; height: number }> {
    return this.deps.executor.query({ path, data, height, prove });
  }
}
