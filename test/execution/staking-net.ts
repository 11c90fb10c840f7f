// The shared set-up of the executor-level staking and reward tests (and their benches): the
// validator pool (0x7b7c…0011) and the reward stake (0x7b7c…0016) as ethers reads them, the
// deterministic consensus keys, an executor whose InitChain bonds genesis validators through
// app_state.staking, nonce-tracking transactions, reads and refusals at the latest height, and the
// decided last commits and misbehavior consensus hands to FinalizeBlock.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ed25519 } from '@noble/curves/ed25519.js';
import { DEFAULT_STAKING_PARAMS, type StakingParamsJson } from '@noded/config';
import { sha256 } from '@noded/crypto';
import { Executor, type ExecutorOptions } from '@noded/execution';
import { type KVStore, MemoryKV, RocksKV } from '@noded/storage';
import {
  type CommitInfo,
  EventBus,
  type FinalizeBlockRequest,
  type FinalizeBlockResponse,
  type Hex,
  type Misbehavior,
  type NodeEvent,
  type Validator,
} from '@noded/types';
import { Interface, type Result } from 'ethers';
import { POOL_FRAGMENTS, STAKE_FUNCTIONS } from '../staking-abi.js';
import {
  addr,
  executorOptions,
  GENESIS_TIME,
  genesisState,
  initLocalChain,
  produceBlock,
  signTx,
  type TestNode,
} from './helpers.js';

export { POOL, REWARD } from '../staking-abi.js';

/** The validator pool as ethers encodes and decodes its calls. */
export const poolAbi = new Interface(POOL_FRAGMENTS);
/** The reward stake's functions as ethers encodes and decodes them. */
export const stakeAbi = new Interface(STAKE_FUNCTIONS);

/** eth_call limits of the reads. */
export const CALL_OPTS = { gasCap: 50_000_000n, timeoutMs: 5000 };

/** A deterministic ed25519 consensus key (seed: 32 bytes of i + 1; i < 255). */
export const consensusKey = (i: number): Uint8Array => ed25519.getPublicKey(new Uint8Array(32).fill(i + 1));
/** A deterministic ed25519 consensus key for sets beyond 255 (seed: i + 1 as a big-endian u32). */
export function wideConsensusKey(i: number): Uint8Array {
  const seed = new Uint8Array(32);
  new DataView(seed.buffer).setUint32(0, i + 1);
  return ed25519.getPublicKey(seed);
}
/** The consensus address of consensusKey(i), as CometBFT derives it: sha256(pubkey)[:20]. */
export const consAddr = (i: number): Uint8Array => sha256(consensusKey(i)).slice(0, 20);
export const keyHex = (i: number): string => Buffer.from(consensusKey(i)).toString('hex');

export interface StakingNet extends TestNode {
  nonces: Map<Uint8Array, bigint>;
  /** The RocksDB directory startStakingNet made (with `rocksDirPrefix`); stopStakingNet removes it. */
  dir?: string;
}

export interface StakingNetOptions {
  /** The operator keys of the genesis validators. */
  operators: Uint8Array[];
  /** Validator i's consensus key (default consensusKey(i)). */
  pubKeys?: Uint8Array[];
  /** Validator i's voting power (default 10); its bond is power × power_reduction. */
  powers?: bigint[];
  /** Validator i's commission_bps in the genesis entry (default: none given). */
  commissionBps?: bigint[];
  /** Validator i's moniker in the genesis entry (default: none given). */
  monikers?: string[];
  /** Accounts funded with `balance` each. */
  accounts: Uint8Array[];
  balance: bigint;
  /** Over DEFAULT_STAKING_PARAMS. */
  params?: Partial<StakingParamsJson>;
  /** More app_state sections (rewards, ...). */
  appState?: Record<string, unknown>;
  /** The store (default a MemoryKV); the caller closes it. */
  kv?: KVStore;
  /** Opens RocksDB in a fresh temp directory named with this prefix; stopStakingNet removes it. */
  rocksDirPrefix?: string;
  executor?: Partial<ExecutorOptions>;
}

/** An executor after InitChain with the genesis validators bonded in the pool (app_state.staking). */
export async function startStakingNet(o: StakingNetOptions): Promise<StakingNet> {
  const dir = o.rocksDirPrefix ? mkdtempSync(join(tmpdir(), o.rocksDirPrefix)) : undefined;
  const kv = dir ? await RocksKV.open(dir) : (o.kv ?? new MemoryKV());
  const bus = new EventBus();
  const events: NodeEvent[] = [];
  bus.subscribe((e) => events.push(e));
  let ex: Executor | undefined;
  try {
    ex = await Executor.open(executorOptions(kv, bus, o.executor));
    const params = { ...DEFAULT_STAKING_PARAMS, ...o.params };
    const pubKeys = o.pubKeys ?? o.operators.map((_, i) => consensusKey(i));
    const power = (i: number) => o.powers?.[i] ?? 10n;
    const validators: Validator[] = o.operators.map((_, i) => ({
      address: sha256(pubKeys[i]!).slice(0, 20),
      pubKey: pubKeys[i]!,
      votingPower: power(i),
      proposerPriority: 0n,
    }));
    await initLocalChain(ex, validators, {
      ...genesisState(o.accounts.map((k) => ({ address: addr(k), balance: o.balance }))),
      staking: {
        params,
        validators: o.operators.map((k, i) => ({
          operator: addr(k),
          pub_key: Buffer.from(pubKeys[i]!).toString('base64'),
          self_bond: (power(i) * BigInt(params.power_reduction)).toString(),
          ...(o.commissionBps ? { commission_bps: o.commissionBps[i]!.toString() } : {}),
          ...(o.monikers ? { moniker: o.monikers[i]! } : {}),
        })),
      },
      ...o.appState,
    });
  } catch (err) {
    await ex?.close();
    if (dir) {
      await kv.close();
      rmSync(dir, { recursive: true, force: true });
    }
    throw err;
  }
  return { ex, kv, bus, events, height: 0, time: GENESIS_TIME, nonces: new Map(), ...(dir ? { dir } : {}) };
}

/** Closes the executor; with a directory of its own, also the store, and removes the directory. */
export async function stopStakingNet(n: StakingNet): Promise<void> {
  await n.ex.close();
  if (n.dir) {
    await n.kv.close();
    rmSync(n.dir, { recursive: true, force: true });
  }
}

/** A view call at `height` (default the latest); asserts it did not revert. */
export async function view(
  n: TestNode,
  to: Hex,
  iface: Interface,
  fn: string,
  args: unknown[] = [],
  height = n.height,
): Promise<Result> {
  const r = await n.ex.call(
    { to, data: iface.encodeFunctionData(fn, args) as Hex },
    BigInt(height),
    undefined,
    CALL_OPTS,
  );
  assert.equal(r.reverted, undefined, `${fn} reverted: ${r.returnData}`);
  return iface.decodeFunctionResult(fn, r.returnData);
}

/** The first value a view returns, as a bigint. */
export async function viewOne(...call: Parameters<typeof view>): Promise<bigint> {
  return (await view(...call))[0] as bigint;
}

/** The revert reason of a call made at the latest block, as a wallet shows it. */
export async function revertReason(
  n: TestNode,
  from: Uint8Array,
  to: Hex,
  iface: Interface,
  fn: string,
  args: unknown[] = [],
  value = 0n,
): Promise<string> {
  const r = await n.ex.call(
    { from: addr(from), to, data: iface.encodeFunctionData(fn, args) as Hex, value },
    BigInt(n.height),
    undefined,
    CALL_OPTS,
  );
  assert.ok(r.reverted, `${fn} was expected to revert`);
  return new Interface(['function Error(string)']).decodeFunctionData('Error', r.returnData)[0] as string;
}

/** A signed transaction from `k` with its next nonce (300,000 gas unless told; legacy with gasPrice). */
export function nextTx(
  n: StakingNet,
  k: Uint8Array,
  to: Hex,
  data: Hex,
  o: { value?: bigint; gas?: bigint; gasPrice?: bigint } = {},
): Uint8Array {
  const nonce = n.nonces.get(k) ?? 0n;
  n.nonces.set(k, nonce + 1n);
  return signTx(k, {
    nonce,
    to,
    value: o.value ?? 0n,
    data,
    gas: o.gas ?? 300_000n,
    ...(o.gasPrice ? { type: 0, gasPrice: o.gasPrice } : {}),
  });
}

/** Reads, refusals and transactions of one contract, by function name. */
export function contract(to: Hex, iface: Interface) {
  return {
    read: (n: TestNode, fn: string, args: unknown[] = [], height = n.height) =>
      view(n, to, iface, fn, args, height),
    one: (n: TestNode, fn: string, args: unknown[] = [], height = n.height) =>
      viewOne(n, to, iface, fn, args, height),
    refusal: (n: TestNode, from: Uint8Array, fn: string, args: unknown[] = [], value = 0n) =>
      revertReason(n, from, to, iface, fn, args, value),
    tx: (n: StakingNet, k: Uint8Array, fn: string, args: unknown[] = [], value = 0n, gas = 300_000n) =>
      nextTx(n, k, to, iface.encodeFunctionData(fn, args) as Hex, { value, gas }),
  };
}

/** A decided last commit of validators `set` (indexes into consensusKey) where `absent` did not sign. */
export function lastCommit(absent: number[], set: number[], power = 10n): CommitInfo {
  return {
    round: 0,
    votes: set.map((i) => ({ validatorAddress: consAddr(i), power, signed: !absent.includes(i) })),
  };
}

/** Evidence that validator i signed two votes at `height`. */
export function doubleSign(i: number, height: number, totalVotingPower = 30n): Misbehavior {
  return {
    type: 'duplicate_vote',
    validatorAddress: consAddr(i),
    height,
    time: GENESIS_TIME,
    totalVotingPower,
  };
}

/**
 * A block of `txs` (with the misbehavior and last commit consensus hands over) in which every
 * transaction must succeed: a revert is code 0 in the block results, so the receipts' status is
 * checked too.
 */
export async function okBlock(
  n: TestNode,
  txs: Uint8Array[] = [],
  consensus: Partial<Pick<FinalizeBlockRequest, 'misbehavior' | 'decidedLastCommit'>> = {},
): Promise<FinalizeBlockResponse> {
  const res = await produceBlock(n, txs, undefined, consensus);
  for (const r of res.txResults) assert.equal(r.code, 0, r.log);
  for (const [i, rc] of (await n.ex.getBlockReceipts(BigInt(n.height))).entries())
    assert.equal(rc!.status, 1, `transaction ${i} of block ${n.height} failed: ${res.txResults[i]!.log}`);
  return res;
}

/** The attributes of a block's events of `type`, one record each. */
export const eventsOf = (res: FinalizeBlockResponse, type: string) =>
  res.events
    .filter((e) => e.type === type)
    .map((e) => Object.fromEntries(e.attributes.map((a) => [a.key, a.value])));

/** The validator updates a block hands to consensus, keys in hex. */
export const updatesOf = (res: FinalizeBlockResponse) =>
  res.validatorUpdates.map((u) => ({ key: Buffer.from(u.pubKey).toString('hex'), power: u.power }));

export const balanceOf = (n: TestNode, a: Hex) => n.ex.getBalance(a, BigInt(n.height));

/** The latest block's time in seconds. */
export const blockSeconds = (n: TestNode) => n.time / 1_000_000_000n;

/** 21000 plus 4 gas a zero byte and 16 a non-zero byte of calldata. */
export function intrinsicGas(data: string): bigint {
  let g = 21_000n;
  for (const x of Buffer.from(data.slice(2), 'hex')) g += x === 0 ? 4n : 16n;
  return g;
}
