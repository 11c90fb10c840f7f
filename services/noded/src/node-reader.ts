// NodeReader for the all-in-one process: the CometBFT RPC, REST API and metrics read consensus
// (block store, round state) and execution (mempool, state) through this one object.
import type { ConsensusRuntime } from '../../../libs/consensus/index.js';
import type { Executor } from '../../../libs/execution/index.js';
import type { PeerAddress } from '../../../libs/p2p/index.js';
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
  Hex,
  NodeIdentity,
  NodeReader,
  PeerInfo,
  RoundStateSummary,
  StoredBlockResults,
  SyncInfo,
  Validator,
} from '../../../libs/types/index.js';
import { peerAddresses } from '../../shared/src/addresses.js';

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

const encoder = new TextEncoder();

/** abci_query paths served by the application (documented in docs/rpc-cometbft.md). */
const ADDRESS_RE = /^0x[0-9a-fA-F]{40}$/;
const SLOT_RE = /^0x[0-9a-fA-F]{1,64}$/;

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
    return this.deps.executor.unconfirmedTxs(0).total;
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

  /**
   * The application's queries: /evm/balance/<0xaddr>, /evm/nonce/<0xaddr>, /evm/code/<0xaddr> and
   * /evm/storage/<0xaddr>/<0xslot>, answered from the state at `height` (0 = latest) as decimal or
   * 0x-hex text. Anything else is code 1 with the reason.
   */
  async abciQuery(
    path: string,
    _data: Uint8Array,
    height: number,
    _prove: boolean,
  ): Promise<{ code: number; log: string; key: Uint8Array; value: Uint8Array; height: number }> {
    const exec = this.deps.executor;
    const at = height > 0 ? BigInt(height) : exec.latestHeight();
    const fail = (log: string) => ({
      code: 1,
      log,
      key: new Uint8Array(),
      value: new Uint8Array(),
      height: Number(at),
    });
    const parts = path.split('/').filter((p) => p !== '');
    if (parts[0] !== 'evm' || parts.length < 3) {
      return fail(
        `unknown query path ${JSON.stringify(path)}: use /evm/{balance,nonce,code}/<0xaddress> or /evm/storage/<0xaddress>/<0xslot>`,
      );
    }
    const [, what, address, slot] = parts;
    if (!ADDRESS_RE.test(address))
      return fail(`invalid address ${JSON.stringify(address)}: must be 0x followed by 40 hex digits`);
    const addr = address.toLowerCase() as Hex;
    try {
      let value: string;
      if (what === 'balance' && parts.length === 3) value = (await exec.getBalance(addr, at)).toString();
      else if (what === 'nonce' && parts.length === 3) value = (await exec.getNonce(addr, at)).toString();
      else if (what === 'code' && parts.length === 3) value = await exec.getCode(addr, at);
      else if (what === 'storage' && parts.length === 4 && SLOT_RE.test(slot))
        value = await exec.getStorageAt(addr, slot as Hex, at);
      else return fail(`unknown query path ${JSON.stringify(path)}`);
      return {
        code: 0,
        log: '',
        key: encoder.encode(path),
        value: encoder.encode(value),
        height: Number(at),
      };
    } catch (err) {
      return fail((err as Error).message);
    }
  }
}
