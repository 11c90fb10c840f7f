// EthChain of a light node: eth_chainId, eth_blockNumber and blocks by number or hash rendered from
// verified CometBFT headers, without transactions. Every method that needs state (balances, nonces,
// code, storage, calls, gas, fees, transactions, receipts, logs, traces, the mempool) is refused with
// ChainError -32000 saying that light nodes hold no state. What a header cannot tell (state root,
// receipts, bloom, gas) is zero; see docs/light-client.md for how these blocks differ from a full
// node's (the hash is the CometBFT header hash, not the Ethereum header hash).
import { headerHash, type LightStore } from '@noded/consensus';
import { keccak256 } from '@noded/crypto';
import {
  type AccessListEntry,
  type AccountProof,
  type CallResult,
  ChainError,
  type EthBlock,
  type EthChain,
  type EthLog,
  type EthReceipt,
  type EthTx,
  type FeeHistory,
  type Header,
  type Hex,
  type PendingTxSummary,
} from '@noded/types';
import { LIGHT_NO_STATE } from './reader.js';

const hexOf = (b: Uint8Array): Hex => `0x${Buffer.from(b).toString('hex')}`;
const ZERO32 = hexOf(new Uint8Array(32));
const EMPTY_UNCLES = hexOf(keccak256(Uint8Array.of(0xc0)));
const ZERO_BLOOM = hexOf(new Uint8Array(256));

function refuse(method: string): never {
  throw new ChainError(
    -32000,
    `${method}: ${LIGHT_NO_STATE} (no accounts, code, storage, transactions, receipts or logs; only verified headers); ask a full node`,
  );
}

/** The Ethereum view of a verified header. Fields a header does not carry are zero. */
export function ethBlockOfHeader(h: Header): EthBlock {
  const hash = headerHash(h);
  return {
    number: BigInt(h.height),
    hash: hexOf(hash),
    parentHash: h.lastBlockId.hash.length === 32 ? hexOf(h.lastBlockId.hash) : ZERO32,
    nonce: '0x0000000000000000',
    sha3Uncles: EMPTY_UNCLES,
    logsBloom: ZERO_BLOOM,
    transactionsRoot: ZERO32,
    stateRoot: ZERO32,
    receiptsRoot: ZERO32,
    // The proposer is the block's coinbase on full nodes too; mixHash is the CometBFT block hash there too.
    miner: h.proposerAddress.length === 20 ? hexOf(h.proposerAddress) : hexOf(new Uint8Array(20)),
    difficulty: 0n,
    totalDifficulty: 0n,
    extraData: '0x',
    size: 0n,
    gasLimit: 0n,
    gasUsed: 0n,
    timestamp: h.time / 1_000_000_000n,
    mixHash: hexOf(hash),
    baseFeePerGas: 0n,
    transactions: [],
  };
}

export class LightEthChain implements EthChain {
  constructor(
    private readonly store: LightStore,
    private readonly evmChainId: bigint,
  ) {}

  chainId(): bigint {
    return this.evmChainId;
  }

  latestHeight(): bigint {
    return BigInt(this.store.latest);
  }

  /** 0, so that a state query reaches its own method and is refused there, by name. */
  oldestStateHeight(): bigint {
    return 0n;
  }

  async getBlockByNumber(n: bigint): Promise<EthBlock | undefined> {
    if (n > BigInt(Number.MAX_SAFE_INTEGER)) return undefined;
    const sh = await this.store.signedHeader(Number(n));
    return sh ? ethBlockOfHeader(sh.header) : undefined;
  }

  async getBlockByHash(hash: Hex): Promise<EthBlock | undefined> {
    const h = await this.store.heightOfHash(Buffer.from(hash.slice(2), 'hex'));
    return h === undefined ? undefined : this.getBlockByNumber(BigInt(h));
  }

  /** A light node does not hold transactions: blocks are served without them. */
  async getBlockTransactions(_n: bigint): Promise<EthTx[]> {
    return [];
  }

  getBlockReceipts(_n: bigint): Promise<EthReceipt[]> {
    return Promise.reject(refuse('eth_getBlockReceipts'));
  }
  getTransaction(_hash: Hex): Promise<EthTx | undefined> {
    return Promise.reject(refuse('transactions'));
  }
  getReceipt(_hash: Hex): Promise<EthReceipt | undefined> {
    return Promise.reject(refuse('receipts'));
  }
  getLogs(): Promise<EthLog[]> {
    return Promise.reject(refuse('logs'));
  }
  getBalance(): Promise<bigint> {
    return Promise.reject(refuse('balance'));
  }
  getNonce(): Promise<bigint> {
    return Promise.reject(refuse('nonce'));
  }
  getCode(): Promise<Hex> {
    return Promise.reject(refuse('code'));
  }
  getStorageAt(): Promise<Hex> {
    return Promise.reject(refuse('storage'));
  }
  getProof(): Promise<AccountProof> {
    return Promise.reject(refuse('proof'));
  }
  call(): Promise<CallResult> {
    return Promise.reject(refuse('call'));
  }
  estimateGas(): Promise<bigint> {
    return Promise.reject(refuse('gas estimate'));
  }
  createAccessList(): Promise<{ accessList: AccessListEntry[]; gasUsed: bigint; error?: string }> {
    return Promise.reject(refuse('access list'));
  }
  nextBaseFee(): bigint {
    return refuse('base fee');
  }
  suggestedTip(): bigint {
    return refuse('priority fee');
  }
  feeHistory(): Promise<FeeHistory> {
    return Promise.reject(refuse('fee history'));
  }
  sendRawTransaction(): Promise<Hex> {
    return Promise.reject(refuse('transactions (a light node has no mempool)'));
  }
  txPool(): Promise<PendingTxSummary> {
    return Promise.reject(refuse('txpool (a light node has no mempool)'));
  }
  traceTransaction(): Promise<unknown> {
    return Promise.reject(refuse('traces'));
  }
  traceCall(): Promise<unknown> {
    return Promise.reject(refuse('traces'));
  }
  traceBlock(): Promise<Array<{ txHash: Hex; result: unknown }>> {
    return Promise.reject(refuse('traces'));
  }
}
