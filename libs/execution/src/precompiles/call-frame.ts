// EthereumJS hands a precompile only its calldata and gas: not who called it, with what value, or
// whether the call is static. A precompile that moves coins needs all three, so the EVM's message
// entry (_executeCall, which every CALL-family opcode and top-level call goes through) is wrapped to
// keep the messages being run on a stack; a precompile reads the innermost one, which is its own
// (a precompile makes no calls, so nothing is pushed above it while it runs).
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
  _executeCall: (message: Message) => Promise<unknown>;
}

const frames = new WeakMap<object, Message[]>();

/** Wraps the EVM's message entry once so `currentFrame` can answer for precompiles run on it. */
export function trackCallFrames(evm: object): void {
  if (frames.has(evm)) return;
  const stack: Message[] = [];
  frames.set(evm, stack);
  const inner = evm as EvmInternals;
  const orig = inner._executeCall.bind(evm);
  inner._executeCall = async (message: Message) => {
    stack.push(message);
    try {
      return await orig(message);
    } finally {
      stack.pop();
    }
  };
}

/** The call a precompile runs in, or undefined when the EVM was not set up with trackCallFrames. */
export function currentFrame(evm: object): CallFrame | undefined {
  const stack = frames.get(evm);
  const m = stack?.[stack.length - 1];
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
