// EthereumJS hands a precompile only its calldata and gas: not who called it, with what value, or
// whether the call is static. A precompile that moves coins needs all three. Every message call
// (each CALL-family opcode and each top-level call) loads its code through the EVM's _loadCode just
// before it runs a precompile, with nothing else run on that EVM in between (one EVM runs one call
// at a time), so a synchronous wrapper that notes the message being loaded tells the precompile its
// own message: no extra promise per call, only an assignment.
import { EVMError, type ExecResult, type PrecompileInput } from '@ethereumjs/evm';
import type { Address } from '@ethereumjs/util';
import { equal, toKey } from '../bytes.js';
import { errorData } from './abi.js';

/** What a precompile knows of the call it runs in. */
export interface CallFrame {
  caller: Address;
  /** The account whose context runs (differs from codeAddress under DELEGATECALL and CALLCODE). */
  to: Address;
  codeAddress: Address;
  value: bigint;
  isStatic: boolean;
  delegatecall: boolean;
  depth: number;
}

interface Message {
  caller: Address;
  to?: Address;
  codeAddress: Address;
  value: bigint;
  isStatic: boolean;
  delegatecall: boolean;
  depth: number;
}

interface EvmInternals {
  _loadCode: (message: Message) => Promise<void>;
}

const loading = new WeakMap<object, { message: Message | undefined }>();

/** Wraps the EVM's code loading once so `currentFrame` can answer for precompiles run on it. */
export function trackCallFrames(evm: object): void {
  if (loading.has(evm)) return;
  const last: { message: Message | undefined } = { message: undefined };
  loading.set(evm, last);
  const inner = evm as EvmInternals;
  const orig = inner._loadCode.bind(evm);
  inner._loadCode = (message: Message) => {
    last.message = message;
    return orig(message);
  };
}

/** The call a precompile runs in, or undefined when the EVM was not set up with trackCallFrames. */
export function currentFrame(evm: object): CallFrame | undefined {
  const m = loading.get(evm)?.message;
  if (!m?.to) return undefined;
  return {
    caller: m.caller,
    to: m.to,
    codeAddress: m.codeAddress,
    value: m.value,
    isStatic: m.isStatic,
    delegatecall: m.delegatecall,
    depth: m.depth,
  };
}

/** A method of a chain precompile, as the shared checks below need it. */
export interface PrecompileMethod {
  signature: string;
  /** Fixed gas, charged whether the method succeeds or reverts. */
  gas: bigint;
  /** Whether it writes state (refused in a static call). */
  writes: boolean;
}

/** Revert with `Error(prefix + reason)`, charging `gas`. */
export function revertResult(gas: bigint, reason: string): ExecResult {
  return {
    returnValue: errorData(reason),
    executionGasUsed: gas,
    exceptionError: new EVMError(EVMError.errorMessages.REVERT),
  };
}

/** An exceptional halt that consumes all the gas given (out of gas, a write in a static call). */
export function haltResult(gasLimit: bigint, error: string): ExecResult {
  return {
    returnValue: new Uint8Array(0),
    executionGasUsed: gasLimit,
    exceptionError: new EVMError(error as never),
  };
}

/**
 * The checks every non-payable chain precompile makes before running a method: its call frame, the
 * selector, its fixed gas, a direct call (no DELEGATECALL or CALLCODE), no value, no write in a
 * static call. Answers the method to run, or the result that ends the call.
 */
export function openCall<M extends PrecompileMethod>(
  input: PrecompileInput,
  o: {
    /** "the BTC token precompile": named when the EVM was not set up with trackCallFrames. */
    what: string;
    /** "token", "bridge": "the <name> must be called directly". */
    name: string;
    /** Reverts carry this before their reason ("BTC: "). */
    prefix: string;
    address: Uint8Array;
    methods: ReadonlyMap<string, M>;
    unknownGas: bigint;
  },
): { frame: CallFrame; method: M; gas: bigint } | { result: ExecResult } {
  const frame = currentFrame(input._EVM as object);
  if (!frame) throw new Error(`${o.what} needs trackCallFrames on its EVM`);
  const sel = input.data.length >= 4 ? toKey(input.data.subarray(0, 4)) : '';
  const method = o.methods.get(sel);
  const gas = method?.gas ?? o.unknownGas;
  if (input.gasLimit < gas) return { result: haltResult(input.gasLimit, EVMError.errorMessages.OUT_OF_GAS) };
  if (!method) {
    const reason =
      input.data.length < 4
        ? `calldata of ${input.data.length} bytes has no function selector`
        : `unknown function selector 0x${sel}`;
    return { result: revertResult(gas, o.prefix + reason) };
  }
  if (frame.delegatecall || !equal(frame.to.bytes, o.address)) {
    return {
      result: revertResult(
        gas,
        `${o.prefix}the ${o.name} must be called directly, not through DELEGATECALL or CALLCODE`,
      ),
    };
  }
  if (frame.value > 0n) {
    return {
      result: revertResult(gas, `${o.prefix}${method.signature} is not payable (${frame.value} sent)`),
    };
  }
  // A static context may not write, as SSTORE in a STATICCALL (all gas is consumed).
  if (method.writes && frame.isStatic)
    return { result: haltResult(input.gasLimit, EVMError.errorMessages.STATIC_STATE_CHANGE) };
  return { frame, method, gas };
}
