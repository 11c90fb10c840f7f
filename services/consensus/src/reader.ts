// NodeReader of the consensus service: the CometBFT RPC on :26657 reads the block store and round
// state of the (current) consensus runtime, and reaches the remote executor only through the ABCI
// contract: check_tx and broadcast_tx_* are CheckTx over gRPC, abci_info is Info, abci_query is
// Query, and unconfirmed_txs / num_unconfirmed_txs / unsafe_flush_mempool are the executor's
// mempool (noded.mempool.v1.Mempool).
import type { GatewayHost, GrpcApplication, GrpcMempool } from '@noded/abci-grpc';
import type { ConsensusRuntime } from '@noded/consensus';
import { peerAddresses } from '@noded/p2p';
import type {
  AppInfo,
  Block,
  BlockId,
  BlockMeta,
  CheckTxResult,
  Commit,
  ConsensusParams,
  Evidence,
  NodeIdentity,
  NodeReader,
  PeerInfo,
  RoundStateSummary,
  StoredBlockResults,
  SyncInfo,
  Validator,
} from '@noded/types';

export interface ClusterNodeReaderDeps {
  /** The runtime now running (a new one after the executor was lost and came back). */
  consensus: () => ConsensusRuntime;
  app: GrpcApplication;
  /** The executor's mempool service (unconfirmed_txs). */
  mempool: GrpcMempool;
  nodeId: string;
  moniker: string;
  chainId: string;
  rpcAddress: string;
  genesisText: string;
  version: string;
  txIndex: boolean;
  /** The p2p-gateway's relay: its peers are this node's peers (absent: no gateway, no peers). */
  gateway?: GatewayHost;
}

export class ClusterNodeReader implements NodeReader {
  constructor(private readonly deps: ClusterNodeReaderDeps) {}

  private get rt(): ConsensusRuntime {
    return this.deps.consensus();
  }

  identity(): NodeIdentity & { other?: Record<string, string> } {
    const d = this.deps;
    return {
      nodeId: d.nodeId,
      // Peers reach this node at the gateway's address; without one it listens for no peers.
      listenAddr: d.gateway?.listenAddr ?? '',
      network: d.chainId,
      version: d.version,
      moniker: d.moniker,
      channels: '40202122233038606100',
      txIndex: d.txIndex ? 'on' : 'off',
      rpcAddress: d.rpcAddress,
      other: { tx_index: d.txIndex ? 'on' : 'off', rpc_address: d.rpcAddress, mode: 'cluster' },
    };
  }

  syncInfo(): SyncInfo {
    return this.rt.syncInfo();
  }

  validatorInfo(): { address: Uint8Array; pubKey: Uint8Array; votingPower: bigint } {
    return this.rt.validatorInfo();
  }

  peers(): PeerInfo[] {
    return this.deps.gateway?.peerInfos() ?? [];
  }

  /** Unsafe RPC dial_peers: the gateway dials (each address checked there). */
  async dialPeers(peers: string[], o: { persistent: boolean; unconditional: boolean }): Promise<void> {
    const g = this.deps.gateway;
    if (!g)
      throw new Error('dial_peers: this consensus service has no p2p-gateway ($NODED_P2P_GATEWAY_ADDRESS)');
    // Each address is checked here so that a bad one is an RPC error naming it, not a gateway log line.
    peerAddresses(peers);
    g.dial(peers, o);
  }

  genesisJson(): string {
    return this.deps.genesisText;
  }

  blockStoreBase(): number {
    return this.rt.blockStoreBase();
  }

  blockStoreHeight(): number {
    return this.rt.blockStoreHeight();
  }

  loadBlock(height: number): Promise<Block | undefined> {
    return this.rt.loadBlock(height);
  }

  loadBlockByHash(hash: Uint8Array): Promise<{ block: Block; blockId: BlockId } | undefined> {
    return this.rt.loadBlockByHash(hash);
  }

  loadBlockMeta(height: number): Promise<BlockMeta | undefined> {
    return this.rt.loadBlockMeta(height);
  }

  loadCommit(height: number): Promise<{ commit: Commit; canonical: boolean } | undefined> {
    return this.rt.loadCommit(height);
  }

  loadBlockResults(height: number): Promise<StoredBlockResults | undefined> {
    return this.rt.loadBlockResults(height);
  }

  validators(height: number): Promise<Validator[] | undefined> {
    return this.rt.validators(height);
  }

  consensusParams(height: number): Promise<ConsensusParams | undefined> {
    return this.rt.consensusParams(height);
  }

  roundState(): RoundStateSummary {
    return this.rt.roundState();
  }

  /** CometBFT's check_tx: the executor's checks without adding to its mempool. */
  checkTx(tx: Uint8Array): Promise<CheckTxResult> {
    return this.deps.app.checkTx(tx, 'recheck');
  }

  async broadcastTx(tx: Uint8Array): Promise<CheckTxResult> {
    const res = await this.deps.app.checkTx(tx, 'new');
    if (res.code === 0) this.rt.txsAvailable();
    return res;
  }

  /** unconfirmed_txs: the executor's pool over noded.mempool.v1.Mempool/UnconfirmedTxs. */
  unconfirmedTxs(limit: number): Promise<{ txs: Uint8Array[]; total: number; totalBytes: number }> {
    return this.deps.mempool.unconfirmedTxs(limit);
  }

  /** unsafe_flush_mempool: the executor's own flush over noded.mempool.v1.Mempool/FlushMempool. */
  flushMempool(): Promise<void> {
    return this.deps.mempool.flushMempool();
  }

  submitEvidence(evidence: Evidence): Promise<Uint8Array> {
    return this.rt.submitEvidence(evidence);
  }

  abciInfo(): Promise<AppInfo> {
    return this.deps.app.info();
  }

  /** abci_query: the executor's queries over noded.abci.v1.Application/Query (the same code as `noded start`). */
  abciQuery(
    path: string,
    data: Uint8Array,
    height: number,
    prove: boolean,
  ): Promise<{ code: number; log: string; key: Uint8Array; value: Uint8Array; height: number }> {
    return this.deps.app.query({ path, data, height, prove });
  }
}
