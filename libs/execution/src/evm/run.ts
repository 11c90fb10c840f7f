// Running transactions and calls through EthereumJS: the block context, the VM over a journaled
// state, unsigned call transactions (eth_call "from" impersonation) and geth's error wording.
import { type Block, createBlock } from '@ethereumjs/block';
import type { Common } from '@ethereumjs/common';
import {
  EVMError,
  type EVMMockBlockchainInterface,
  type ExecResult,
  type PrecompileInput,
} from '@ethereumjs/evm';
import {
  createAccessList2930Tx,
  createFeeMarket1559Tx,
  createLegacyTx,
  paramsTx,
  type TypedTransaction,
} from '@ethereumjs/tx';
import { Account, Address } from '@ethereumjs/util';
import { createVM, paramsVM, type RunTxResult, runTx, type VM } from '@ethereumjs/vm';
import { type AccessListEntry, ChainError, type Hex } from '@noded/types';
import { bytesToBigInt, equal, fromHex, toHex, toKey } from '../bytes.js';
import { BRIDGE_OUT_ADDRESS, bridgeOutPrecompile } from '../precompiles/bridge-out.js';
import { BTC_TOKEN_ADDRESS, btcTokenPrecompile } from '../precompiles/btc-token.js';
import { trackCallFrames } from '../precompiles/call-frame.js';
import { REWARD_PRECOMPILE } from '../precompiles/reward.js';
import { STAKING_PRECOMPILE } from '../precompiles/staking.js';
import { hasCode } from '../state/account.js';
import type { JournaledState } from '../state/journaled.js';
import type { DecodedTx } from '../txs.js';
// Side effect: caches EthereumJS' per-frame bytecode analysis (see the file).
import './jumpdests.js';

export interface BlockContext {
  number: bigint;
  timestamp: bigint;
  coinbase: Uint8Array;
  baseFee: bigint;
  gasLimit: bigint;
  /** PREVRANDAO (the consensus block hash; not a randomness source). */
  mixHash: Uint8Array;
}

function headerOf(ctx: BlockContext) {
  return {
    number: ctx.number,
    timestamp: ctx.timestamp,
    coinbase: ctx.coinbase,
    gasLimit: ctx.gasLimit,
    baseFeePerGas: ctx.baseFee,
    mixHash: ctx.mixHash,
    difficulty: 0n,
  };
}

export function makeBlock(common: Common, ctx: BlockContext): Block {
  return createBlock({ header: headerOf(ctx) }, { common, skipConsensusFormatValidation: true });
}

/**
 * A block whose timestamp and PREVRANDAO are not known yet (a run ahead of the proposal): the
 * EVM reads both only for the TIMESTAMP and PREVRANDAO opcodes, so every read calls `onRead`, and
 * the caller discards what a transaction that read them did. The other fields must be the real ones.
 */
export function makeProbedBlock(common: Common, ctx: BlockContext, onRead: () => void): Block {
  const block = createBlock(
    { header: headerOf(ctx) },
    { common, skipConsensusFormatValidation: true, freeze: false },
  );
  const { header } = block;
  const timestamp = header.timestamp;
  const prevRandao = ctx.mixHash;
  Object.defineProperty(header, 'timestamp', {
    get() {
      onRead();
      return timestamp;
    },
  });
  Object.defineProperty(header, 'prevRandao', {
    get() {
      onRead();
      return prevRandao;
    },
  });
  return block;
}

/** The KZG point evaluation precompile (0x0a): this chain carries no blobs, so it always fails. */
function noKzg(input: PrecompileInput): ExecResult {
  return {
    returnValue: new Uint8Array(0),
    executionGasUsed: input.gasLimit,
    exceptionError: new EVMError(EVMError.errorMessages.INVALID_PROOF),
  };
}

interface OpEntry {
  opHandler: (runState: RunState, common: Common) => Promise<void> | void;
}
interface RunState {
  stack: { peek(n: number): bigint[] };
  interpreter: { getAddress(): Address };
  stateManager: JournaledState;
}

const ADDRESS_MASK = (1n << 160n) - 1n;

/**
 * Wraps SELFDESTRUCT so the value it destroys (EIP-6780: a contract created in the same
 * transaction naming itself as beneficiary) is recorded as a burn: the end-of-block supply check
 * then accounts for it instead of halting the chain. The burn is measured, not inferred: the
 * balances of the contract and the beneficiary before and after the opcode.
 */
function trackSelfdestructBurns(evm: unknown): void {
  const map = (evm as { _opcodeMap: OpEntry[] })._opcodeMap;
  const entry = map[0xff];
  if (!entry) return;
  const orig = entry.opHandler;
  map[0xff] = {
    ...entry,
    opHandler: async (runState: RunState, common: Common) => {
      const state = runState.stateManager;
      const self = toKey(runState.interpreter.getAddress().bytes);
      const target = (runState.stack.peek(1)[0] & ADDRESS_MASK).toString(16).padStart(40, '0');
      const sum = async () =>
        ((await state.readAccount(self))?.balance ?? 0n) +
        (target === self ? 0n : ((await state.readAccount(target))?.balance ?? 0n));
      const before = await sum();
      try {
        await orig(runState, common);
      } finally {
        // SELFDESTRUCT ends the frame by throwing STOP; measure on the way out.
        const after = await sum();
        if (before > after) state.recordBurn(before - after);
      }
    },
  };
}

export async function makeVm(
  common: Common,
  state: JournaledState,
  blockchain: EVMMockBlockchainInterface,
): Promise<VM> {
  const vm = await createVM({
    common,
    stateManager: state,
    blockchain,
    evmOpts: {
      customPrecompiles: [
        { address: new Address(fromHex('0x000000000000000000000000000000000000000a')), function: noKzg },
        { address: new Address(BTC_TOKEN_ADDRESS), function: btcTokenPrecompile },
        { address: new Address(BRIDGE_OUT_ADDRESS), function: bridgeOutPrecompile },
        STAKING_PRECOMPILE,
        REWARD_PRECOMPILE,
      ],
    },
  });
  trackSelfdestructBurns(vm.evm);
  trackCallFrames(vm.evm);
  return vm;
}

export type { RunTxResult };
export { runTx };

const DELEGATION_PREFIX = Uint8Array.of(0xef, 0x01, 0x00);

/**
 * geth's state-transition pre-checks (core/state_transition.go preCheck and buyGas), so an invalid
 * transaction in a block gets geth's message. Returns undefined when the transaction may run.
 */
export async function preCheck(
  d: DecodedTx,
  state: JournaledState,
  baseFee: bigint,
): Promise<string | undefined> {
  const acct = await state.readAccount(d.sender);
  const nonce = acct?.nonce ?? 0n;
  const from = `0x${d.sender}`;
  if (nonce > d.nonce) return `nonce too low: address ${from}, tx: ${d.nonce} state: ${nonce}`;
  if (nonce < d.nonce) return `nonce too high: address ${from}, tx: ${d.nonce} state: ${nonce}`;
  // An impersonated sender may be a contract (as on Hardhat and anvil); see BlockRun.execute.
  if (acct && hasCode(acct) && !d.impersonated) {
    const code = await state.codeByHash(acct.codeHash);
    if (!equal(code.subarray(0, 3), DELEGATION_PREFIX)) {
      return `sender not an eoa: address ${from}, codehash: ${toHex(acct.codeHash)}`;
    }
  }
  if (d.feeCap < baseFee) {
    return `max fee per gas less than block base fee: address ${from}, maxFeePerGas: ${d.feeCap}, baseFee: ${baseFee}`;
  }
  const balance = acct?.balance ?? 0n;
  if (balance < d.cost)
    return `insufficient funds for gas * price + value: address ${from} have ${balance} want ${d.cost}`;
  return undefined;
}

const EVM_ERRORS: Record<string, string> = {
  'out of gas': 'out of gas',
  'code store out of gas': 'contract creation code storage out of gas',
  'code size to deposit exceeds maximum code size': 'max code size exceeded',
  'stack underflow': 'stack underflow',
  'stack overflow': 'stack limit reached 1024 (1023)',
  'invalid JUMP': 'invalid jump destination',
  'invalid opcode': 'invalid opcode',
  revert: 'execution reverted',
  'static state change': 'write protection',
  'create collision': 'contract address collision',
  'insufficient balance': 'insufficient balance for transfer',
  'invalid bytecode deployed': 'invalid code: must not begin with 0xef',
  'initcode exceeds max initcode size': 'max initcode size exceeded',
  'value out of range': 'return data out of bounds',
  'refund exhausted': 'gas uint64 overflow',
};

/** geth's wording of an EVM halt reason. */
export function gethError(e: { error: string } | undefined): string | undefined {
  if (!e) return undefined;
  return EVM_ERRORS[e.error] ?? e.error;
}

const PANIC_REASONS: Record<number, string> = {
  0: 'generic panic',
  1: 'assert(false)',
  17: 'arithmetic underflow or overflow',
  18: 'division or modulo by zero',
  33: 'enum overflow',
  34: 'invalid encoded storage byte array accessed',
  49: 'out-of-bounds array access; popping on an empty array',
  50: 'out-of-bounds access of an array or bytesN',
  65: 'out of memory',
  81: 'uninitialized function',
};

/** Decodes Error(string) and Panic(uint256) revert data as geth's abi.UnpackRevert does. */
export function revertReason(data: Uint8Array): string | undefined {
  if (data.length < 4) return undefined;
  const sel = toHex(data.subarray(0, 4));
  try {
    if (sel === '0x08c379a0' && data.length >= 68) {
      const off = Number(bytesToBigInt(data.subarray(4, 36)));
      const len = Number(bytesToBigInt(data.subarray(4 + off, 36 + off)));
      const bytes = data.subarray(36 + off, 36 + off + len);
      if (bytes.length !== len) return undefined;
      return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
    }
    if (sel === '0x4e487b71' && data.length >= 36) {
      const code = bytesToBigInt(data.subarray(4, 36));
      const known = PANIC_REASONS[Number(code)];
      return known ?? `unknown panic code: 0x${code.toString(16)}`;
    }
  } catch {
    return undefined;
  }
  return undefined;
}

export interface CallTxRequest {
  from: Uint8Array;
  to: Uint8Array | null;
  gas: bigint;
  gasPrice?: bigint;
  maxFeePerGas?: bigint;
  maxPriorityFeePerGas?: bigint;
  value: bigint;
  data: Uint8Array;
  nonce: bigint;
  accessList?: AccessListEntry[];
}

/** An unsigned transaction whose sender is `from` (eth_call, estimateGas, traceCall). */
export function makeCallTx(common: Common, chainId: bigint, r: CallTxRequest): TypedTransaction {
  const base = {
    nonce: r.nonce,
    gasLimit: r.gas,
    to: r.to ?? undefined,
    value: r.value,
    data: r.data,
  };
  const al = r.accessList?.map((e) => ({ address: e.address, storageKeys: e.storageKeys })) ?? [];
  let tx: TypedTransaction;
  const opts = { common, freeze: false };
  if (r.gasPrice !== undefined && r.maxFeePerGas === undefined) {
    tx = al.length
      ? createAccessList2930Tx({ ...base, chainId, gasPrice: r.gasPrice, accessList: al }, opts)
      : createLegacyTx({ ...base, gasPrice: r.gasPrice }, opts);
  } else {
    const maxFee = r.maxFeePerGas ?? 0n;
    const tip = r.maxPriorityFeePerGas ?? (maxFee === 0n ? 0n : maxFee);
    tx = createFeeMarket1559Tx(
      {
        ...base,
        chainId,
        maxFeePerGas: maxFee,
        maxPriorityFeePerGas: tip < maxFee ? tip : maxFee,
        accessList: al,
      },
      opts,
    );
  }
  const sender = new Address(r.from);
  Object.defineProperty(tx, 'getSenderAddress', { value: () => sender });
  Object.defineProperty(tx, 'isSigned', { value: () => true });
  Object.defineProperty(tx, 'hash', { value: () => new Uint8Array(32) });
  return tx;
}

/** What a call's caller reads of its run: runTx's result, or the same fields from runPlainCall. */
export type CallRun = Pick<RunTxResult, 'execResult' | 'totalGasSpent' | 'gasRefund'>;

export interface CallOutcome {
  result: CallRun;
  gasUsed: bigint;
  returnData: Uint8Array;
  reverted: boolean;
  error?: string;
}

export function outcome(result: CallRun): CallOutcome {
  const err = result.execResult.exceptionError;
  return {
    result,
    gasUsed: result.totalGasSpent,
    returnData: result.execResult.returnValue,
    reverted: err?.error === 'revert',
    error: err && err.error !== 'revert' ? gethError(err) : undefined,
  };
}

export function hexData(h: Hex | undefined): Uint8Array {
  return h ? fromHex(h) : new Uint8Array(0);
}

/** A message call with no transaction around it: what eth_call sends most of the time. */
export interface PlainCall {
  caller: Address;
  to: Address;
  data: Uint8Array;
  value: bigint;
  gasLimit: bigint;
  block: Block;
}

interface GasParams {
  tx: bigint;
  zeroByte: bigint;
  nonZeroByte: bigint;
  floorPerToken: bigint;
  refundQuotient: bigint;
}
const gasParams = new WeakMap<Common, GasParams>();

function paramsOf(common: Common): GasParams {
  let p = gasParams.get(common);
  if (!p) {
    // A Common holds a library's parameters once that library merged them (the first transaction
    // or VM built on it); a call may come before any transaction was decoded.
    common.updateParams(paramsTx);
    common.updateParams(paramsVM);
    p = {
      tx: common.param('txGas'),
      zeroByte: common.param('txDataZeroGas'),
      nonZeroByte: common.param('txDataNonZeroGas'),
      floorPerToken: common.isActivatedEIP(7623) ? common.param('totalCostFloorPerToken') : 0n,
      refundQuotient: common.param('maxRefundQuotient'),
    };
    gasParams.set(common, p);
  }
  return p;
}

/**
 * Intrinsic gas of a call (not a creation) without an access list, and its EIP-7623 calldata
 * floor (0 before Prague).
 */
function callIntrinsicGas(common: Common, data: Uint8Array): { intrinsic: bigint; floor: bigint } {
  const p = paramsOf(common);
  let zeros = 0;
  for (let i = 0; i < data.length; i++) if (data[i] === 0) zeros++;
  const nonZeros = BigInt(data.length - zeros);
  const intrinsic = p.tx + BigInt(zeros) * p.zeroByte + nonZeros * p.nonZeroByte;
  const floor = p.floorPerToken === 0n ? 0n : p.tx + p.floorPerToken * (BigInt(zeros) + 4n * nonZeros);
  return { intrinsic, floor };
}

/** geth's refusal of a gas limit below the intrinsic gas or the calldata floor, or undefined. */
export function intrinsicShortfall(gas: bigint, intrinsic: bigint, floor: bigint): string | undefined {
  if (gas < intrinsic) return `intrinsic gas too low: have ${gas}, want ${intrinsic}`;
  if (gas < floor) return `insufficient gas for floor data gas cost: have ${gas}, want ${floor}`;
  return undefined;
}

/**
 * Runs an unpriced message call on `vm` the way runTx would run the same call as a transaction
 * with gas price 0, without building one: the same warm addresses (precompiles, caller, target,
 * coinbase), intrinsic gas and calldata floor, the caller's nonce bump, refund cap and floor. It
 * skips what a zero-priced call makes moot (fee purchase and refund, the coinbase payment, the
 * receipt) and the EOA check (geth skips it for calls too). The state must be thrown away after.
 */
export async function runPlainCall(vm: VM, c: PlainCall): Promise<CallRun> {
  const common = vm.common;
  const { intrinsic, floor } = callIntrinsicGas(common, c.data);
  const short = intrinsicShortfall(c.gasLimit, intrinsic, floor);
  if (short !== undefined) throw new ChainError(-32000, short);
  const evm = vm.evm;
  const journal = evm.journal;
  journal.cleanJournal();
  // A createAccessList run on this VM before leaves its recorder on; runTx drops it the same way.
  (journal as { accessList?: unknown }).accessList = undefined;
  (vm.stateManager as unknown as JournaledState).originalStorageCache.clear();
  if (common.isActivatedEIP(2929)) {
    for (const address of evm.precompiles.keys()) journal.addAlwaysWarmAddress(address);
    journal.addAlwaysWarmAddress(toKey(c.caller.bytes));
    journal.addAlwaysWarmAddress(toKey(c.to.bytes));
    if (common.isActivatedEIP(3651)) journal.addAlwaysWarmAddress(toKey(c.block.header.coinbase.bytes));
  }
  const sender = (await vm.stateManager.getAccount(c.caller)) ?? new Account();
  sender.nonce += 1n;
  await journal.putAccount(c.caller, sender);
  const r = await evm.runCall({
    block: c.block,
    gasPrice: 0n,
    caller: c.caller,
    origin: c.caller,
    gasLimit: c.gasLimit - intrinsic,
    to: c.to,
    value: c.value,
    data: c.data,
    skipNonceIncrement: true,
  });
  // As runTx: the refund is capped at a fifth of the gas spent, the floor applies after it, and
  // the reported gasRefund is the uncapped one (0 once the floor applies).
  let spent = intrinsic + r.execResult.executionGasUsed;
  let refund = r.execResult.gasRefund ?? 0n;
  if (refund > 0n) {
    const cap = spent / paramsOf(common).refundQuotient;
    spent -= refund < cap ? refund : cap;
  }
  if (spent < floor) {
    spent = floor;
    refund = 0n;
  }
  // The pooled VM would otherwise hold this call's journal until its next use.
  journal.cleanJournal();
  return { execResult: r.execResult, totalGasSpent: spent, gasRefund: refund };
}
