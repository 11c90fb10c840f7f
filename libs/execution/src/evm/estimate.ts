// eth_estimateGas and eth_createAccessList with geth's algorithms (eth/gasestimator and
// internal/ethapi AccessList), so wallets get the same numbers and errors as from geth.
import { type AccessListEntry, type CallRequest, ChainError, type Hex } from '@noded/types';
import { minBig, toHex } from '../bytes.js';
import { type CallOutcome, revertReason } from './run.js';

const TX_GAS = 21_000n;
const CALL_STIPEND = 2_300n;
/** geth's default estimateGasErrorRatio: stop when the bracket is within 1.5%. */
const ERROR_RATIO = 0.015;

export interface EstimateInput {
  req: CallRequest;
  /** Highest gas allowed (request gas or the cap). */
  hi: bigint;
  balance: bigint;
  /** Whether `to` has code (undefined for contract creation). */
  toHasCode: boolean | undefined;
  run(gas: bigint): Promise<CallOutcome>;
}

/** The error geth returns for a failed call: revert (code 3 with data) or the EVM error. */
export function callError(o: CallOutcome): ChainError {
  if (o.reverted) {
    if (o.returnData.length === 0) return new ChainError(-32000, 'execution reverted');
    const reason = revertReason(o.returnData);
    return new ChainError(
      3,
      reason !== undefined ? `execution reverted: ${reason}` : 'execution reverted',
      toHex(o.returnData),
    );
  }
  return new ChainError(-32000, o.error ?? 'execution failed');
}

async function tryRun(input: EstimateInput, gas: bigint): Promise<{ failed: boolean; o?: CallOutcome }> {
  try {
    const o = await input.run(gas);
    return { failed: o.reverted || o.error !== undefined, o };
  } catch (err) {
    if (err instanceof ChainError && err.message.startsWith('intrinsic gas too low')) return { failed: true };
    throw err;
  }
}

export async function estimateGas(input: EstimateInput): Promise<bigint> {
  const { req } = input;
  let hi = req.gas !== undefined && req.gas >= TX_GAS ? minBig(req.gas, input.hi) : input.hi;
  const feeCap = req.maxFeePerGas ?? req.gasPrice ?? 0n;
  if (feeCap > 0n) {
    let available = input.balance;
    const value = req.value ?? 0n;
    if (value > 0n) {
      if (value >= available) throw new ChainError(-32000, 'insufficient funds for transfer');
      available -= value;
    }
    const allowance = available / feeCap;
    if (hi > allowance) hi = allowance;
  }
  if ((req.data === undefined || req.data === '0x') && input.toHasCode === false) {
    const r = await tryRun(input, TX_GAS);
    if (!r.failed) return TX_GAS;
  }
  const first = await tryRun(input, hi);
  if (first.failed) {
    if (first.o && first.o.error !== 'out of gas') throw callError(first.o);
    throw new ChainError(-32000, `gas required exceeds allowance (${hi})`);
  }
  const used = first.o!.gasUsed;
  let lo = used - 1n;
  const refund = first.o!.result.gasRefund ?? 0n;
  const applied = refund < used / 4n ? refund : used / 4n;
  const optimistic = ((used + applied + CALL_STIPEND) * 64n) / 63n;
  if (optimistic < hi) {
    const r = await tryRun(input, optimistic);
    if (r.failed) lo = optimistic;
    else hi = optimistic;
  }
  while (lo + 1n < hi) {
    if (Number(hi - lo) / Number(hi) < ERROR_RATIO) break;
    let mid = (hi + lo) / 2n;
    if (mid > lo * 2n) mid = lo * 2n;
    const r = await tryRun(input, mid);
    if (r.failed) lo = mid;
    else hi = mid;
  }
  return hi;
}

export interface AccessListInput {
  req: CallRequest;
  run(accessList: AccessListEntry[]): Promise<CallOutcome & { accessList?: AccessListEntry[] }>;
}

const PRECOMPILES = new Set(
  Array.from({ length: 17 }, (_, i) => toHex(Uint8Array.of(...new Array(19).fill(0), i + 1))),
);
PRECOMPILES.add('0x0000000000000000000000000000000000000100');

function normalise(list: AccessListEntry[] | undefined, exclude: Set<string>): AccessListEntry[] {
  const out: AccessListEntry[] = [];
  for (const e of list ?? []) {
    const address = e.address.toLowerCase() as Hex;
    const keys = [...new Set(e.storageKeys.map((k) => k.toLowerCase() as Hex))].sort();
    if (keys.length === 0 && exclude.has(address)) continue;
    out.push({ address, storageKeys: keys });
  }
  return out.sort((a, b) => (a.address < b.address ? -1 : a.address > b.address ? 1 : 0));
}

export async function createAccessList(
  input: AccessListInput,
): Promise<{ accessList: AccessListEntry[]; gasUsed: bigint; error?: string }> {
  const exclude = new Set<string>(PRECOMPILES);
  if (input.req.from) exclude.add(input.req.from.toLowerCase());
  else exclude.add('0x0000000000000000000000000000000000000000');
  if (input.req.to) exclude.add(input.req.to.toLowerCase());
  let prev = normalise(input.req.accessList, exclude);
  for (let i = 0; i < 10; i++) {
    const o = await input.run(prev);
    const next = normalise(o.accessList, exclude);
    if (JSON.stringify(next) === JSON.stringify(prev) || i === 9) {
      const error = o.reverted ? 'execution reverted' : o.error;
      return { accessList: next, gasUsed: o.gasUsed, ...(error ? { error } : {}) };
    }
    prev = next;
  }
  throw new ChainError(-32000, 'access list did not converge');
}
