// Test scaffolding: a small in-memory chain that implements NodeReader and EthChain from a few
// synthetic blocks of signed Ethereum transactions, and publishes NodeEvents like the node does.

import { ed25519Address, ed25519Generate, ed25519Sign, keccak256, sha256 } from '@noded/crypto';
import {
  type AbciEvent,
  type AppInfo,
  type Block,
  type BlockId,
  type BlockMeta,
  type CallResult,
  type CheckTxResult,
  type Commit,
  type ConsensusParams,
  type EthBlock,
  type EthChain,
  type EthReceipt,
  type EthTx,
  EventBus,
  type Evidence,
  type ExecTxResult,
  type FinalizeBlockResponse,
  type Hex,
  type NodeReader,
  type PeerInfo,
  type RoundStateSummary,
  type StoredBlockResults,
  type TimeNs,
  type Validator,
} from '@noded/types';
import { Transaction, Wallet } from 'ethers';

export const CHAIN_ID = 'chain-local';
export const EVM_CHAIN_ID = 31337n;
/** Two fixed secp256k1 test keys (never used outside tests). */
export const DEV_KEYS = [
  '0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcaf784d7bf4f2ff80',
  '0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d',
];
export const GENESIS_TIME_NS = 1_700_000_000_123_456_789n;
const BLOCK_SPACING_NS = 1_000_000_000n;

const toHex = (b: Uint8Array): Hex => `0x${Buffer.from(b).toString('hex')}` as Hex;

/** RFC 6962 Merkle root as CometBFT computes data_hash (written here independently of libs/rpc). */
function merkleRoot(items: Uint8Array[]): Uint8Array {
  if (items.length === 0) return sha256(new Uint8Array(0));
  if (items.length === 1) return sha256(Buffer.concat([Buffer.from([0]), items[0]]));
  let k = 1;
  while (k * 2 < items.length) k *= 2;
  return sha256(Buffer.concat([Buffer.from([1]), merkleRoot(items.slice(0, k)), merkleRoot(items.slice(k))]));
}

export interface StoredBlock {
  block: Block;
  blockId: BlockId;
  meta: BlockMeta;
  result: FinalizeBlockResponse;
  seenCommit: Commit;
}

export interface FakeChainOptions {
  /** Blocks made at construction; the list gives the number of signed transactions per block. */
  txsPerBlock?: number[];
  base?: number;
}

export class FakeChain implements NodeReader, EthChain {
  readonly bus = new EventBus();
  readonly blocks = new Map<number, StoredBlock>();
  readonly validatorKeys = [
    ed25519Generate(new Uint8Array(32).fill(7)),
    ed25519Generate(new Uint8Array(32).fill(9)),
  ];
  readonly validatorSet: Validator[];
  readonly wallets = DEV_KEYS.map((k) => new Wallet(k));
  readonly mempool: Uint8Array[] = [];
  readonly balances = new Map<string, bigint>();
  readonly nonces = new Map<string, bigint>();
  readonly submittedEvidence: Evidence[] = [];
  readonly dialed: string[][] = [];
  catchingUp = false;
  base = 1;
  /** Milliseconds loadBlock waits (slow-node tests). */
  loadDelayMs = 0;
  params: ConsensusParams = {
    block: { maxBytes: 22020096n, maxGas: -1n },
    evidence: { maxAgeNumBlocks: 100000n, maxAgeDuration: 172800000000000n, maxBytes: 1048576n },
    validator: { pubKeyTypes: ['ed25519'] },
    version: { app: 0n },
    abci: { voteExtensionsEnableHeight: 0n },
  };

  constructor() {
    this.validatorSet = this.validatorKeys.map((k, i) => ({
      address: ed25519Address(k.publicKey),
      pubKey: k.publicKey,
      votingPower: BigInt(10 * (i + 1)),
      proposerPriority: BigInt(i === 0 ? -5 : 5),
    }));
    for (const w of this.wallets) this.balances.set(w.address.toLowerCase(), 10_000n * 10n ** 18n);
  }

  static async create(opts: FakeChainOptions = {}): Promise<FakeChain> {
    const chain = new FakeChain();
    for (const n of opts.txsPerBlock ?? [0, 2, 1, 0, 3]) {
      const txs: Uint8Array[] = [];
      for (let i = 0; i < n; i++) txs.push(await chain.signTransfer(0, 1000n + BigInt(i)));
      chain.commitBlock(txs, { publish: false });
    }
    chain.base = opts.base ?? 1;
    return chain;
  }

  /** A signed EIP-1559 transfer from dev account `from`, with the next nonce. */
  async signTransfer(from: number, value: bigint): Promise<Uint8Array> {
    const w = this.wallets[from];
    const key = w.address.toLowerCase();
    const nonce = this.nonces.get(key) ?? 0n;
    this.nonces.set(key, nonce + 1n);
    const tx = Transaction.from({
      type: 2,
      chainId: EVM_CHAIN_ID,
      nonce: Number(nonce),
      to: this.wallets[1].address,
      value,
      gasLimit: 21000n,
      maxFeePerGas: 2_000_000_000n,
      maxPriorityFeePerGas: 1_000_000_000n,
    });
    const signed = await w.signTransaction(tx);
    return new Uint8Array(Buffer.from(signed.slice(2), 'hex'));
  }

  height(): number {
    let h = 0;
    for (const k of this.blocks.keys()) h = Math.max(h, k);
    return h;
  }

  /** Result of one transaction: code 0 with indexed events (ethereum_tx, transfer). */
  static txResult(tx: Uint8Array, index: number): ExecTxResult {
    const decoded = Transaction.from(toHex(tx));
    const events: AbciEvent[] = [
      {
        type: 'ethereum_tx',
        attributes: [
          { key: 'ethereumTxHash', value: toHex(keccak256(tx)), index: true },
          { key: 'txIndex', value: String(index), index: true },
          { key: 'txGasUsed', value: '21000', index: true },
          // As blockrun: the CometBFT hash, upper-case hex.
          { key: 'txHash', value: Buffer.from(sha256(tx)).toString('hex').toUpperCase(), index: true },
        ],
      },
      {
        type: 'transfer',
        attributes: [
          { key: 'sender', value: decoded.from!.toLowerCase(), index: true },
          { key: 'recipient', value: decoded.to!.toLowerCase(), index: true },
          { key: 'amount', value: `${decoded.value}abtc`, index: true },
          { key: 'memo', value: 'not indexed', index: false },
        ],
      },
    ];
    return {
      code: 0,
      data: new Uint8Array(0),
      log: '',
      info: '',
      gasWanted: 21000n,
      gasUsed: 21000n,
      events,
      codespace: '',
    };
  }

  /** Makes the next block from `txs`; publishes NewBlock, Tx and EthNewHead like the node. */
  commitBlock(txs: Uint8Array[], opts: { publish?: boolean } = {}): StoredBlock {
    const height = this.height() + 1;
    const prev = this.blocks.get(height - 1);
    const time: TimeNs = GENESIS_TIME_NS + BigInt(height) * BLOCK_SPACING_NS;
    const proposer = this.validatorSet[height % 2];
    const lastCommit = prev ? prev.seenCommit : null;
    const appHash = sha256(new TextEncoder().encode(`app-${height}`));
    const header = {
      version: { block: 11, app: 0 },
      chainId: CHAIN_ID,
      height,
      time,
      lastBlockId: prev
        ? prev.blockId
        : { hash: new Uint8Array(0), partSetHeader: { total: 0, hash: new Uint8Array(0) } },
      lastCommitHash: lastCommit
        ? sha256(new TextEncoder().encode(`commit-${height - 1}`))
        : new Uint8Array(0),
      dataHash: merkleRoot(txs.map((t) => sha256(t))),
      validatorsHash: sha256(new TextEncoder().encode('vals')),
      nextValidatorsHash: sha256(new TextEncoder().encode('vals')),
      consensusHash: sha256(new TextEncoder().encode('params')),
      appHash: prev ? prev.result.appHash : new Uint8Array(0),
      lastResultsHash: prev ? sha256(new TextEncoder().encode(`results-${height - 1}`)) : new Uint8Array(0),
      evidenceHash: new Uint8Array(0),
      proposerAddress: proposer.address,
    };
    const block: Block = { header, data: { txs }, evidence: [], lastCommit };
    const hash = sha256(new TextEncoder().encode(`block-${height}`));
    const blockId: BlockId = { hash, partSetHeader: { total: 1, hash: sha256(hash) } };
    const size = 600 + txs.reduce((n, t) => n + t.length, 0);
    const result: FinalizeBlockResponse = {
      events: [
        {
          type: 'block_reward',
          attributes: [
            {
              key: 'proposer',
              value: Buffer.from(proposer.address).toString('hex').toUpperCase(),
              index: true,
            },
            { key: 'amount', value: `${height * 10}abtc`, index: true },
          ],
        },
      ],
      txResults: txs.map((t, i) => FakeChain.txResult(t, i)),
      validatorUpdates: [],
      consensusParamUpdates: null,
      appHash,
    };
    const seenCommit: Commit = {
      height,
      round: 0,
      blockId,
      signatures: this.validatorKeys.map((k, i) =>
        i === 1 && height % 3 === 0
          ? {
              blockIdFlag: 1 as const,
              validatorAddress: new Uint8Array(0),
              timestamp: 0n,
              signature: new Uint8Array(0),
            }
          : {
              blockIdFlag: 2 as const,
              validatorAddress: ed25519Address(k.publicKey),
              timestamp: time + 500_000_000n,
              signature: ed25519Sign(k.seed, hash),
            },
      ),
    };
    const stored: StoredBlock = {
      block,
      blockId,
      meta: { blockId, blockSize: size, header, numTxs: txs.length },
      result,
      seenCommit,
    };
    this.blocks.set(height, stored);
    for (const t of txs) {
      const i = this.mempool.findIndex((m) => Buffer.compare(Buffer.from(m), Buffer.from(t)) === 0);
      if (i >= 0) this.mempool.splice(i, 1);
    }
    if (opts.publish !== false) {
      this.bus.publish({ kind: 'NewBlock', block, blockId, result });
      txs.forEach((tx, index) => {
        this.bus.publish({ kind: 'Tx', height, index, tx, result: result.txResults[index] });
      });
    }
    return stored;
  }

  // ---- NodeReader ----------------------------------------------------------------------------

  identity() {
    return {
      nodeId: Buffer.from(ed25519Address(this.validatorKeys[0].publicKey)).toString('hex'),
      listenAddr: 'tcp://0.0.0.0:26656',
      network: CHAIN_ID,
      version: '0.38.17',
      moniker: 'fake-node',
      channels: '40202122233038606100',
      txIndex: 'on' as const,
      rpcAddress: 'tcp://127.0.0.1:26657',
    };
  }

  syncInfo() {
    const top = this.blocks.get(this.height());
    const first = this.blocks.get(this.base);
    const empty = new Uint8Array(0);
    return {
      latestBlockHash: top?.blockId.hash ?? empty,
      latestAppHash: top?.block.header.appHash ?? empty,
      latestBlockHeight: this.height(),
      latestBlockTime: top?.block.header.time ?? 0n,
      earliestBlockHash: first?.blockId.hash ?? empty,
      earliestAppHash: first?.block.header.appHash ?? empty,
      earliestBlockHeight: first ? this.base : 0,
      earliestBlockTime: first?.block.header.time ?? 0n,
      catchingUp: this.catchingUp,
    };
  }

  validatorInfo() {
    const v = this.validatorSet[0];
    return { address: v.address, pubKey: v.pubKey, votingPower: v.votingPower };
  }

  peers(): PeerInfo[] {
    return [
      {
        nodeId: 'aa'.repeat(20),
        moniker: 'peer-1',
        remoteIp: '10.0.0.2',
        listenAddr: 'tcp://10.0.0.2:26656',
        isOutbound: true,
        network: CHAIN_ID,
        version: '0.38.17',
      },
    ];
  }

  genesisJson(): string {
    return JSON.stringify(
      {
        genesis_time: '2023-11-14T22:13:20.123456789Z',
        chain_id: CHAIN_ID,
        initial_height: '1',
        consensus_params: {
          block: { max_bytes: '22020096', max_gas: '-1' },
          evidence: {
            max_age_num_blocks: '100000',
            max_age_duration: '172800000000000',
            max_bytes: '1048576',
          },
          validator: { pub_key_types: ['ed25519'] },
          version: { app: '0' },
          abci: { vote_extensions_enable_height: '0' },
        },
        validators: this.validatorSet.map((v, i) => ({
          address: Buffer.from(v.address).toString('hex').toUpperCase(),
          pub_key: { type: 'tendermint/PubKeyEd25519', value: Buffer.from(v.pubKey).toString('base64') },
          power: v.votingPower.toString(),
          name: `validator-${i}`,
        })),
        app_hash: '',
        app_state: { evm: { chain_id: '31337', accounts: [] } },
      },
      null,
      2,
    );
  }

  blockStoreBase(): number {
    return this.blocks.size === 0 ? 0 : this.base;
  }

  blockStoreHeight(): number {
    return this.height();
  }

  private stored(height: number): StoredBlock | undefined {
    return height >= this.base ? this.blocks.get(height) : undefined;
  }

  async loadBlock(height: number): Promise<Block | undefined> {
    if (this.loadDelayMs > 0) await new Promise((r) => setTimeout(r, this.loadDelayMs));
    return this.stored(height)?.block;
  }

  async loadBlockByHash(hash: Uint8Array) {
    for (const s of this.blocks.values()) {
      if (Buffer.compare(Buffer.from(s.blockId.hash), Buffer.from(hash)) === 0)
        return { block: s.block, blockId: s.blockId };
    }
    return undefined;
  }

  async loadBlockMeta(height: number): Promise<BlockMeta | undefined> {
    return this.stored(height)?.meta;
  }

  async loadCommit(height: number) {
    if (height === this.height()) {
      const s = this.stored(height);
      return s ? { commit: s.seenCommit, canonical: false } : undefined;
    }
    const next = this.stored(height + 1);
    return next?.block.lastCommit ? { commit: next.block.lastCommit, canonical: true } : undefined;
  }

  async loadBlockResults(height: number): Promise<StoredBlockResults | undefined> {
    const s = this.stored(height);
    if (!s) return undefined;
    return {
      height,
      txResults: s.result.txResults,
      finalizeBlockEvents: s.result.events,
      validatorUpdates: s.result.validatorUpdates,
      consensusParamUpdates: s.result.consensusParamUpdates,
      appHash: s.result.appHash,
    };
  }

  async validators(height: number): Promise<Validator[] | undefined> {
    return height >= 1 && height <= this.height() + 1 ? this.validatorSet : undefined;
  }

  async consensusParams(height: number): Promise<ConsensusParams | undefined> {
    return height >= 1 && height <= this.height() + 1 ? this.params : undefined;
  }

  roundState(): RoundStateSummary {
    return {
      height: this.height() + 1,
      round: 0,
      step: 'RoundStepPropose',
      startTime: GENESIS_TIME_NS + BigInt(this.height() + 1) * BLOCK_SPACING_NS,
      proposerAddress: this.validatorSet[1].address,
      votes: [
        {
          round: 0,
          prevotes: ['nil-Vote', 'nil-Vote'],
          prevotesBitArray: 'BA{2:__} 0/30 = 0.00',
          precommits: ['nil-Vote', 'nil-Vote'],
          precommitsBitArray: 'BA{2:__} 0/30 = 0.00',
        },
      ],
      lockedRound: -1,
      validRound: -1,
      raw: { height: String(this.height() + 1), round: 0, step: 3, proposal_block_hash: '' },
    };
  }

  async checkTx(tx: Uint8Array): Promise<CheckTxResult> {
    try {
      Transaction.from(toHex(tx));
    } catch {
      return {
        code: 1,
        log: 'rlp: value size exceeds available input length',
        gasWanted: 0n,
        codespace: 'evm',
        hash: keccak256(tx),
      };
    }
    return { code: 0, log: '', gasWanted: 21000n, codespace: '', hash: keccak256(tx) };
  }

  async broadcastTx(tx: Uint8Array): Promise<CheckTxResult> {
    const r = await this.checkTx(tx);
    if (r.code === 0) this.mempool.push(tx);
    return r;
  }

  unconfirmedTxs(limit: number) {
    return {
      txs: this.mempool.slice(0, limit),
      total: this.mempool.length,
      totalBytes: this.mempool.reduce((n, t) => n + t.length, 0),
    };
  }

  flushMempool(): void {
    this.mempool.length = 0;
  }

  async submitEvidence(evidence: Evidence): Promise<Uint8Array> {
    this.submittedEvidence.push(evidence);
    return sha256(new TextEncoder().encode(`evidence-${this.submittedEvidence.length}`));
  }

  async abciQuery(path: string, data: Uint8Array, height: number) {
    return {
      code: path === '/store/missing' ? 1 : 0,
      log: path === '/store/missing' ? 'unknown query path' : '',
      key: data,
      value: new TextEncoder().encode(`value-of-${Buffer.from(data).toString('hex')}`),
      height: height || this.height(),
    };
  }

  async abciInfo(): Promise<AppInfo> {
    const top = this.blocks.get(this.height());
    return {
      data: 'noded-fake',
      version: '0.1.0',
      appVersion: 1n,
      lastBlockHeight: this.height(),
      lastBlockAppHash: top?.result.appHash ?? new Uint8Array(0),
    };
  }

  async dialSeeds(seeds: string[]): Promise<void> {
    this.dialed.push(seeds);
  }

  async dialPeers(peers: string[]): Promise<void> {
    this.dialed.push(peers);
  }

  // ---- EthChain (what the REST API reads) ---------------------------------------------------

  chainId(): bigint {
    return EVM_CHAIN_ID;
  }

  latestHeight(): bigint {
    return BigInt(this.height());
  }

  oldestStateHeight(): bigint {
    return 0n;
  }

  private findTx(hash: Hex): { height: number; index: number; raw: Uint8Array } | undefined {
    for (const [height, s] of this.blocks) {
      const index = s.block.data.txs.findIndex((t) => toHex(keccak256(t)) === hash.toLowerCase());
      if (index >= 0) return { height, index, raw: s.block.data.txs[index] };
    }
    return undefined;
  }

  async getTransaction(hash: Hex): Promise<EthTx | undefined> {
    const found = this.findTx(hash);
    if (!found) return undefined;
    const t = Transaction.from(toHex(found.raw));
    const s = this.blocks.get(found.height)!;
    return {
      hash: toHex(keccak256(found.raw)),
      type: t.type ?? 2,
      chainId: t.chainId,
      nonce: BigInt(t.nonce),
      from: t.from!.toLowerCase() as Hex,
      to: (t.to?.toLowerCase() ?? null) as Hex | null,
      value: t.value,
      gas: t.gasLimit,
      gasPrice: 1_500_000_000n,
      maxFeePerGas: t.maxFeePerGas ?? undefined,
      maxPriorityFeePerGas: t.maxPriorityFeePerGas ?? undefined,
      input: t.data as Hex,
      v: BigInt(t.signature!.v),
      r: t.signature!.r as Hex,
      s: t.signature!.s as Hex,
      blockHash: toHex(s.blockId.hash),
      blockNumber: BigInt(found.height),
      transactionIndex: BigInt(found.index),
    };
  }

  async getReceipt(hash: Hex): Promise<EthReceipt | undefined> {
    const tx = await this.getTransaction(hash);
    if (!tx) return undefined;
    return {
      transactionHash: tx.hash,
      transactionIndex: tx.transactionIndex!,
      blockHash: tx.blockHash!,
      blockNumber: tx.blockNumber!,
      from: tx.from,
      to: tx.to,
      cumulativeGasUsed: 21000n,
      gasUsed: 21000n,
      effectiveGasPrice: 1_500_000_000n,
      contractAddress: null,
      logs: [],
      logsBloom: `0x${'00'.repeat(256)}` as Hex,
      status: 1,
      type: tx.type,
    };
  }

  async getBalance(address: Hex): Promise<bigint> {
    return this.balances.get(address.toLowerCase()) ?? 0n;
  }

  async getNonce(address: Hex): Promise<bigint> {
    return this.nonces.get(address.toLowerCase()) ?? 0n;
  }

  async getCode(address: Hex): Promise<Hex> {
    return address.toLowerCase() === '0x5fbdb2315678afecb367f032d93f642f64180aa3' ? '0x6001' : '0x';
  }

  nextBaseFee(): bigint {
    return 875_000_000n;
  }

  suggestedTip(): bigint {
    return 1_000_000_000n;
  }

  // The JSON-RPC-only parts of EthChain are not needed by these tests.
  private unused(): never {
    throw new Error('not used by the fake chain');
  }
  getBlockByNumber = async (): Promise<EthBlock | undefined> => this.unused();
  getBlockByHash = async (): Promise<EthBlock | undefined> => this.unused();
  getBlockTransactions = async (): Promise<EthTx[]> => this.unused();
  getBlockReceipts = async (): Promise<EthReceipt[]> => this.unused();
  getLogs = async () => this.unused();
  getStorageAt = async (): Promise<Hex> => this.unused();
  getProof = async () => this.unused();
  /** A chain with no contracts: every call succeeds with nothing returned, as a call to an empty account. */
  call = async (): Promise<CallResult> => ({ returnData: '0x', gasUsed: 21_000n, logs: [] });
  estimateGas = async (): Promise<bigint> => this.unused();
  createAccessList = async () => this.unused();
  feeHistory = async () => this.unused();
  sendRawTransaction = async (): Promise<Hex> => this.unused();
  txPool = () => this.unused();
  traceTransaction = async () => this.unused();
  traceCall = async () => this.unused();
  traceBlock = async () => this.unused();
}
