// Shared helpers of the execution tests: keys, native-speed transaction signing, an executor on a
// MemoryKV or RocksKV, block production, and solc-js compilation.

import { RLP } from '@ethereumjs/rlp';
import {
  createAccessList2930Tx,
  createEOACode7702Tx,
  createFeeMarket1559Tx,
  createLegacyTx,
  type TypedTransaction,
} from '@ethereumjs/tx';
import { ethAddressFromPrivateKey, keccak256, secp256k1Sign } from '@noded/crypto';
import { defaultGasOptions, defaultMempoolOptions, Executor, type ExecutorOptions } from '@noded/execution';
import { chainCommon } from '@noded/execution/src/evm/common.js';
import { type KVStore, MemoryKV } from '@noded/storage';
import {
  type ConsensusParams,
  EventBus,
  type FinalizeBlockRequest,
  type FinalizeBlockResponse,
  type Hex,
  type NodeEvent,
  silentLogger,
  type Validator,
} from '@noded/types';
import { compileSolidity } from '../solc.js';

export const CHAIN_ID = 31337n;
export const GWEI = 1_000_000_000n;
export const ETH = 10n ** 18n;

export function key(i: number): Uint8Array {
  const k = new Uint8Array(32);
  k[31] = (i % 200) + 1;
  k[30] = Math.floor(i / 200) + 1;
  k[0] = 0x42;
  return k;
}

export function addr(k: Uint8Array): Hex {
  return `0x${Buffer.from(ethAddressFromPrivateKey(k)).toString('hex')}`;
}

export interface TxFields {
  type?: 0 | 1 | 2 | 4;
  nonce: bigint;
  to?: Hex | null;
  value?: bigint;
  data?: Hex;
  gas?: bigint;
  maxFee?: bigint;
  tip?: bigint;
  gasPrice?: bigint;
  chainId?: bigint;
  /** Legacy only: sign without EIP-155. */
  unprotected?: boolean;
  accessList?: Array<{ address: Hex; storageKeys: Hex[] }>;
  authorizationList?: unknown[];
}

/** Signs with the native secp256k1 binding (EthereumJS' own signing is pure JS and slow). */
export function signTx(k: Uint8Array, f: TxFields, chainId = CHAIN_ID): Uint8Array {
  const common = chainCommon(f.chainId ?? chainId);
  const base = {
    nonce: f.nonce,
    to: f.to === null ? undefined : f.to,
    value: f.value ?? 0n,
    data: f.data ?? '0x',
    gasLimit: f.gas ?? 21_000n,
  };
  const type = f.type ?? 2;
  let tx: TypedTransaction;
  if (type === 0) tx = createLegacyTx({ ...base, gasPrice: f.gasPrice ?? 2n * GWEI }, { common });
  else if (type === 1) {
    tx = createAccessList2930Tx(
      {
        ...base,
        chainId: f.chainId ?? chainId,
        gasPrice: f.gasPrice ?? 2n * GWEI,
        accessList: f.accessList ?? [],
      },
      { common },
    );
  } else if (type === 4) {
    tx = createEOACode7702Tx(
      {
        ...base,
        chainId: f.chainId ?? chainId,
        maxFeePerGas: f.maxFee ?? 10n * GWEI,
        maxPriorityFeePerGas: f.tip ?? GWEI,
        accessList: f.accessList ?? [],
        authorizationList: (f.authorizationList ?? []) as never,
      },
      { common },
    );
  } else {
    tx = createFeeMarket1559Tx(
      {
        ...base,
        chainId: f.chainId ?? chainId,
        maxFeePerGas: f.maxFee ?? 10n * GWEI,
        maxPriorityFeePerGas: f.tip ?? GWEI,
        accessList: f.accessList ?? [],
      },
      { common },
    );
  }
  let msgHash: Uint8Array;
  if (type === 0 && f.unprotected) {
    // Pre-EIP-155 signing hash: keccak(rlp([nonce, gasPrice, gas, to, value, data])).
    const raw = tx.raw().slice(0, 6);
    msgHash = hashRlp(raw as Uint8Array[]);
  } else msgHash = tx.getHashedMessageToSign();
  const { signature, recovery } = secp256k1Sign(msgHash, k);
  const r = BigInt(`0x${Buffer.from(signature.subarray(0, 32)).toString('hex')}`);
  const s = BigInt(`0x${Buffer.from(signature.subarray(32)).toString('hex')}`);
  if (type === 0 && f.unprotected) {
    const legacy = createLegacyTx(
      { ...base, gasPrice: f.gasPrice ?? 2n * GWEI, v: 27n + BigInt(recovery), r, s },
      { common },
    );
    return legacy.serialize();
  }
  return tx.addSignature(BigInt(recovery), r, s, true).serialize();
}

/** A type-2 transaction built by hand (EthereumJS refuses to build some invalid ones). */
export function rawEip1559(
  k: Uint8Array,
  f: { nonce: bigint; to: Hex; maxFee: bigint; tip: bigint; gas?: bigint; value?: bigint },
  chainId = CHAIN_ID,
): Uint8Array {
  const big = (n: bigint) =>
    n === 0n
      ? new Uint8Array(0)
      : Buffer.from(n.toString(16).padStart(Math.ceil(n.toString(16).length / 2) * 2, '0'), 'hex');
  const fields = [
    big(chainId),
    big(f.nonce),
    big(f.tip),
    big(f.maxFee),
    big(f.gas ?? 21_000n),
    Buffer.from(f.to.slice(2), 'hex'),
    big(f.value ?? 0n),
    new Uint8Array(0),
    [],
  ];
  const msg = keccak256(Buffer.concat([Uint8Array.of(2), RLP.encode(fields as never)]));
  const { signature, recovery } = secp256k1Sign(msg, k);
  const strip = (b: Uint8Array) => {
    let i = 0;
    while (i < b.length && b[i] === 0) i++;
    return b.subarray(i);
  };
  const signed = [
    ...fields,
    big(BigInt(recovery)),
    strip(signature.subarray(0, 32)),
    strip(signature.subarray(32)),
  ];
  return Buffer.concat([Uint8Array.of(2), RLP.encode(signed as never)]);
}

function hashRlp(items: Uint8Array[]): Uint8Array {
  return keccak256(RLP.encode(items));
}

export interface TestNode {
  ex: Executor;
  kv: KVStore;
  bus: EventBus;
  events: NodeEvent[];
  height: number;
  time: bigint;
}

export const PROPOSER = Uint8Array.from(Buffer.from('aa'.repeat(20), 'hex'));

export function executorOptions(
  kv: KVStore,
  bus: EventBus,
  over: Partial<ExecutorOptions> = {},
): ExecutorOptions {
  return {
    kv,
    chainId: 'chain-local',
    evmChainId: CHAIN_ID,
    mode: 'full',
    keepRecent: 100,
    gas: { ...defaultGasOptions },
    mempool: { ...defaultMempoolOptions },
    allowUnprotectedTxs: false,
    txFeeCap: ETH,
    bus,
    logger: silentLogger,
    ...over,
  };
}

export function genesisState(
  accounts: Array<{ address: Hex; balance: bigint; code?: Hex; storage?: Record<string, string> }>,
) {
  return {
    evm: {
      chain_id: CHAIN_ID.toString(),
      accounts: accounts.map((a) => ({
        address: a.address,
        balance: a.balance.toString(),
        ...(a.code ? { code: a.code } : {}),
        ...(a.storage ? { storage: a.storage } : {}),
      })),
    },
  };
}

export const GENESIS_TIME = 1_700_000_000_000_000_000n;

/** The seed's consensus_params (§2.2) as InitChain receives them. */
export const TEST_CONSENSUS_PARAMS: ConsensusParams = {
  block: { maxBytes: 22020096n, maxGas: -1n },
  evidence: { maxAgeNumBlocks: 100000n, maxAgeDuration: 172800000000000n, maxBytes: 1048576n },
  validator: { pubKeyTypes: ['ed25519'] },
  version: { app: 1n },
  abci: { voteExtensionsEnableHeight: 0n },
};

/** InitChain as CometBFT sends it for chain-local at GENESIS_TIME, with these validators and app_state. */
export function initLocalChain(ex: Executor, validators: Validator[], appState: unknown) {
  return ex.initChain({
    chainId: 'chain-local',
    time: GENESIS_TIME,
    initialHeight: 1,
    validators,
    consensusParams: TEST_CONSENSUS_PARAMS,
    appState,
  });
}

export async function startNode(
  accounts: Array<{ address: Hex; balance: bigint; code?: Hex; storage?: Record<string, string> }>,
  over: Partial<ExecutorOptions> = {},
  kv: KVStore = new MemoryKV(),
): Promise<TestNode> {
  const bus = new EventBus();
  const events: NodeEvent[] = [];
  bus.subscribe((e) => events.push(e));
  const ex = await Executor.open(executorOptions(kv, bus, over));
  await initLocalChain(ex, [], genesisState(accounts));
  return { ex, kv, bus, events, height: 0, time: GENESIS_TIME };
}

/** Finalizes and commits one block with `txs` (default: what the mempool proposes). */
export async function produceBlock(
  n: TestNode,
  txs?: Uint8Array[],
  proposer = PROPOSER,
  consensus: Partial<Pick<FinalizeBlockRequest, 'misbehavior' | 'decidedLastCommit'>> = {},
): Promise<FinalizeBlockResponse> {
  n.height++;
  n.time += 1_000_000_000n;
  const list =
    txs ??
    (await n.ex.prepareProposal({
      height: n.height,
      time: n.time,
      proposerAddress: proposer,
      maxTxBytes: 22020096,
    }));
  const hash = keccak256(new TextEncoder().encode(`block-${n.height}`));
  const res = await n.ex.finalizeBlock({
    height: n.height,
    time: n.time,
    proposerAddress: proposer,
    hash,
    txs: list,
    misbehavior: consensus.misbehavior ?? [],
    decidedLastCommit: consensus.decidedLastCommit ?? { round: 0, votes: [] },
  });
  await n.ex.commit();
  return res;
}

// ---------------------------------------------------------------- solc

/** Compiles Solidity sources with solc-js (offline), memoised per source text. */
export function compile(
  sources: Record<string, string>,
): Record<string, { abi: unknown[]; bytecode: Hex; deployed: Hex }> {
  return compileSolidity(sources);
}
