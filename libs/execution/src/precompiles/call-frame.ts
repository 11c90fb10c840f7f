// EthereumJS hands a precompile only its calldata and gas: not who called it, with what value, or
// whether the call is static. A precompile that moves coins needs all three. Every message call
// (each CALL-family opcode and each top-level call) loads its code through the EVM's _loadCode just
// before it runs a precompile, with nothing else run on that EVM in between (one EVM runs one call
// at a time), so a synchronous wrapper that notes the message being loaded tells the precompile its
// own message: no extra promise per call, only an assignment.
import type { Address } from '@ethereumjs/util';

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
