// NodeReader of a light node: the CometBFT RPC (:26657) reads verified headers, commits and
// validator sets from the light store; everything that needs state, blocks' data, a mempool or a
// consensus engine is refused with an error that says a light node holds no state.
import { commitHash, headerHash, type LightStore } from '@noded/consensus';
import type {
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

/** The one sentence every refusal starts with, so clients and operators recognise it. */
export const LIGHT_NO_STATE = 'light nodes hold no state';

/** `what` cannot be answered here: the error names it, the rule and where to go instead. */
export function lightRefusal(what: string): Error {
  return new Error(
    `${what}: ${LIGHT_NO_STATE} (only verified headers, commits and validator sets); ask a full node`,
  );
}

export interface LightNodeReaderDeps {
  store: LightStore;
  nodeId: string;
  moniker: string;
  chainId: string;
  p2pListenAddr: string;
  rpcAddress: string;
  genesisText: string;
  version: string;
  /** The home's validator key (reported with power 0, as a full node that does not validate). */
  validatorKey?: { address: Uint8Array; pubKey: Uint8Array };
  peers: () => PeerInfo[];
  /** The highest height a peer reported (catching_up when it is more than one above the store). */
  highestSeen: () => number;
}

function metaOf(header: Block['header'], commit: Commit): BlockMeta {
  // Size and transaction count belong to the block's data, which a light node does not hold.
  return { blockId: commit.blockId, blockSize: 0, header, numTxs: 0 };
}

export class LightNodeReader implements NodeReader {
  constructor(private readonly deps: LightNodeReaderDeps) {}

  identity(): NodeIdentity & { other?: Record<string, string> } {
    const d = this.deps;
    return {
      nodeId: d.nodeId,
      listenAddr: d.p2pListenAddr,
      network: d.chainId,
      version: d.version,
      moniker: d.moniker,
      channels: '',
      txIndex: 'off',
      rpcAddress: d.rpcAddress,
      other: { tx_index: 'off', rpc_address: d.rpcAddress, mode: 'light' },
    };
  }

  syncInfo(): SyncInfo {
    const store = this.deps.store;
    const latest = store.latestBlock();
    const earliest = store.earliestBlock();
    const empty = new Uint8Array(0);
    return {
      latestBlockHash: latest ? headerHash(latest.header) : empty,
      latestAppHash: latest ? latest.header.appHash : empty,
      latestBlockHeight: latest?.header.height ?? 0,
      latestBlockTime: latest?.header.time ?? 0n,
      earliestBlockHash: earliest ? headerHash(earliest.header) : empty,
      earliestAppHash: earliest ? earliest.header.appHash : empty,
      earliestBlockHeight: earliest?.header.height ?? 0,
      earliestBlockTime: earliest?.header.time ?? 0n,
      catchingUp: !latest || this.deps.highestSeen() > latest.header.height + 1,
    };
  }

  validatorInfo(): { address: Uint8Array; pubKey: Uint8Array; votingPower: bigint } {
    const k = this.deps.validatorKey;
    return {
      address: k?.address ?? new Uint8Array(0),
      pubKey: k?.pubKey ?? new Uint8Array(0),
      votingPower: 0n,
    };
  }

  peers(): PeerInfo[] {
    return this.deps.peers();
  }

  genesisJson(): string {
    return this.deps.genesisText;
  }

  blockStoreBase(): number {
    return this.deps.store.base;
  }

  blockStoreHeight(): number {
    return this.deps.store.latest;
  }

  /** The header part of a block: no transactions or evidence; last_commit when it is the one hashed. */
  async loadBlock(height: number): Promise<Block | undefined> {
    const sh = await this.deps.store.signedHeader(height);
    if (!sh) return undefined;
    const prev = height > 1 ? await this.deps.store.signedHeader(height - 1) : undefined;
    const lastCommit =
      prev &&
      sh.header.lastCommitHash.length > 0 &&
      Buffer.compare(commitHash(prev.commit), sh.header.lastCommitHash) === 0
        ? prev.commit
        : null;
    return { header: sh.header, data: { txs: [] }, evidence: [], lastCommit };
  }

  async loadBlockByHash(hash: Uint8Array): Promise<{ block: Block; blockId: BlockId } | undefined> {
    const h = await this.deps.store.heightOfHash(hash);
    if (h === undefined) return undefined;
    const [block, sh] = await Promise.all([this.loadBlock(h), this.deps.store.signedHeader(h)]);
    return block && sh ? { block, blockId: sh.commit.blockId } : undefined;
  }

  async loadBlockMeta(height: number): Promise<BlockMeta | undefined> {
    const sh = await this.deps.store.signedHeader(height);
    return sh ? metaOf(sh.header, sh.commit) : undefined;
  }

  /** The commit this node verified the header with (the tip's is a seen commit, not canonical). */
  async loadCommit(height: number): Promise<{ commit: Commit; canonical: boolean } | undefined> {
    const sh = await this.deps.store.signedHeader(height);
    if (!sh) return undefined;
    const next = await this.deps.store.signedHeader(height + 1);
    const canonical =
      next !== undefined && Buffer.compare(commitHash(sh.commit), next.header.lastCommitHash) === 0;
    return { commit: sh.commit, canonical };
  }

  loadBlockResults(height: number): Promise<StoredBlockResults | undefined> {
    return Promise.reject(lightRefusal(`block results of height ${height}`));
  }

  validators(height: number): Promise<Validator[] | undefined> {
    return this.deps.store.validators(height);
  }

  consensusParams(height: number): Promise<ConsensusParams | undefined> {
    return Promise.reject(lightRefusal(`consensus params of height ${height}`));
  }

  roundState(): RoundStateSummary {
    throw new Error('light nodes take no part in consensus: there is no round state');
  }

  checkTx(_tx: Uint8Array): Promise<CheckTxResult> {
    return Promise.reject(lightRefusal('check_tx'));
  }

  broadcastTx(_tx: Uint8Array): Promise<CheckTxResult> {
    return Promise.reject(lightRefusal('broadcast_tx (a light node has no mempool)'));
  }

  unconfirmedTxs(_limit: number): { txs: Uint8Array[]; total: number; totalBytes: number } {
    throw lightRefusal('unconfirmed transactions (a light node has no mempool)');
  }

  flushMempool(): void {
    throw lightRefusal('unsafe_flush_mempool (a light node has no mempool)');
  }

  mempoolSize(): number {
    return 0;
  }

  submitEvidence(_evidence: Evidence): Promise<Uint8Array> {
    return Promise.reject(lightRefusal('broadcast_evidence'));
  }

  async abciQuery(
    path: string,
    _data: Uint8Array,
    height: number,
    _prove: boolean,
  ): Promise<{ code: number; log: string; key: Uint8Array; value: Uint8Array; height: number }> {
    return {
      code: 1,
      log: lightRefusal(`abci_query ${JSON.stringify(path)}`).message,
      key: new Uint8Array(0),
      value: new Uint8Array(0),
      height: height > 0 ? height : this.deps.store.latest,
    };
  }
}
