// debug_trace* tracers in geth's output shapes: the struct-log tracer (the default) and callTracer.
// Both listen to EthereumJS EVM events; `step` listeners make execution much slower, which is why
// they are attached only for traces.
import type { EVM, InterpreterStep, Message } from '@ethereumjs/evm';
import type { TracerConfig } from '@noded/types';
import { toHex, toKey } from '../bytes.js';
import { gethError, revertReason } from './run.js';

interface Evm {
  events: EVM['events'];
}

export interface Tracer {
  attach(evm: Evm, deadline: number): () => void;
  /** Called once the transaction ran: its total gas, failure and return data. */
  result(gasUsed: bigint, failed: boolean, returnData: Uint8Array, error?: string): unknown;
}

export class TraceTimeoutError extends Error {
  constructor(readonly timeoutMs: number) {
    super(`execution timeout (${timeoutMs / 1000}s)`);
    this.name = 'TraceTimeoutError';
  }
}

function hex32(v: bigint): string {
  return v.toString(16).padStart(64, '0');
}

interface StructLog {
  pc: number;
  op: string;
  gas: number;
  gasCost: number;
  depth: number;
  stack?: string[];
  memory?: string[];
  storage?: Record<string, string>;
  refund?: number;
}

/** geth's default tracer (eth/tracers/logger StructLogger). */
export class StructLogTracer implements Tracer {
  private logs: StructLog[] = [];
  private storage = new Map<string, Map<string, string>>();

  constructor(private readonly cfg: TracerConfig) {}

  attach(evm: Evm, deadline: number): () => void {
    const onStep = (step: InterpreterStep, resolve?: (r?: unknown) => void) => {
      const done = () => resolve?.();
      if (deadline > 0 && Date.now() > deadline) throw new TraceTimeoutError(this.cfg.timeoutMs ?? 0);
      const op = step.opcode.name;
      const log: StructLog = {
        pc: step.pc,
        op,
        gas: Number(step.gasLeft),
        gasCost: Number(step.opcode.dynamicFee ?? BigInt(step.opcode.fee)),
        depth: step.depth + 1,
      };
      if (!this.cfg.disableStack) log.stack = step.stack.map((v) => `0x${v.toString(16)}`);
      if (this.cfg.enableMemory) {
        const mem: string[] = [];
        // The memory the frame has paid for (geth's mem.Len()): the EVM's buffer may hold fewer
        // bytes, since it grows only when written, and the rest reads as zero.
        const size = Number(step.memoryWordCount) * 32;
        let memory = step.memory;
        if (memory.length < size) {
          memory = new Uint8Array(size);
          memory.set(step.memory);
        }
        for (let i = 0; i < size; i += 32) mem.push(toKey(memory.subarray(i, i + 32)));
        log.memory = mem;
      }
      if (step.gasRefund > 0n) log.refund = Number(step.gasRefund);
      this.logs.push(log);
      if (this.cfg.disableStorage || (op !== 'SLOAD' && op !== 'SSTORE') || step.stack.length === 0)
        return done();
      const addr = toKey(step.address.bytes);
      let m = this.storage.get(addr);
      if (!m) {
        m = new Map();
        this.storage.set(addr, m);
      }
      const slot = step.stack[step.stack.length - 1];
      const store = m;
      if (op === 'SSTORE') {
        if (step.stack.length >= 2) store.set(hex32(slot), hex32(step.stack[step.stack.length - 2]));
        log.storage = Object.fromEntries(store);
        return done();
      }
      const key = new Uint8Array(Buffer.from(hex32(slot), 'hex'));
      step.stateManager
        .getStorage(step.address, key)
        .then((v) => {
          store.set(hex32(slot), toKey(v).padStart(64, '0'));
          log.storage = Object.fromEntries(store);
          done();
        })
        .catch(() => done());
    };
    evm.events.on('step', onStep);
    return () => evm.events.off('step', onStep);
  }

  result(gasUsed: bigint, failed: boolean, returnData: Uint8Array, error?: string): unknown {
    const reverted = failed && error === undefined;
    return {
      gas: Number(gasUsed),
      failed,
      returnValue: failed && !reverted ? '' : toKey(returnData),
      structLogs: this.logs,
    };
  }
}

interface CallFrame {
  type: string;
  from: string;
  to?: string;
  value?: string;
  gas: string;
  gasUsed: string;
  input: string;
  output?: string;
  error?: string;
  revertReason?: string;
  calls?: CallFrame[];
  logs?: Array<{ address: string; topics: string[]; data: string; position: string }>;
}

const q = (n: bigint) => `0x${n.toString(16)}`;

/** geth's callTracer (eth/tracers/native/call.go). */
export class CallTracer implements Tracer {
  private stack: CallFrame[] = [];
  private root: CallFrame | undefined;
  private lastOp = new Map<number, string>();

  constructor(
    private readonly cfg: TracerConfig,
    private readonly topGas: bigint,
  ) {}

  attach(evm: Evm, deadline: number): () => void {
    const withLog = this.cfg.tracerConfig?.withLog === true;
    const onlyTop = this.cfg.tracerConfig?.onlyTopCall === true;
    const onStep = (step: InterpreterStep) => {
      if (deadline > 0 && Date.now() > deadline) throw new TraceTimeoutError(this.cfg.timeoutMs ?? 0);
      const op = step.opcode.name;
      this.lastOp.set(step.depth, op);
      if (withLog && op.startsWith('LOG') && this.stack.length > 0) {
        const n = Number(op.slice(3));
        const s = step.stack;
        const off = Number(s[s.length - 1]);
        const len = Number(s[s.length - 2]);
        const topics: string[] = [];
        for (let i = 0; i < n; i++) topics.push(`0x${hex32(s[s.length - 3 - i])}`);
        const data = new Uint8Array(len);
        data.set(step.memory.subarray(off, off + len));
        const frame = this.stack[this.stack.length - 1];
        if (onlyTop && this.stack.length > 1) return;
        frame.logs ??= [];
        frame.logs.push({
          address: toHex(step.address.bytes),
          topics,
          data: toHex(data),
          position: q(BigInt(frame.calls?.length ?? 0)),
        });
      }
    };
    const onBefore = (msg: Message) => {
      const depth = msg.depth;
      let type: string;
      if (depth === 0) type = msg.to ? 'CALL' : 'CREATE';
      else type = this.lastOp.get(depth - 1) ?? (msg.to ? 'CALL' : 'CREATE');
      if (!['CALL', 'CALLCODE', 'DELEGATECALL', 'STATICCALL', 'CREATE', 'CREATE2'].includes(type)) {
        type = msg.to ? 'CALL' : 'CREATE';
      }
      const frame: CallFrame = {
        type,
        from: toHex(msg.caller.bytes),
        to: msg.to ? toHex(msg.to.bytes) : undefined,
        gas: q(depth === 0 ? this.topGas : msg.gasLimit),
        gasUsed: '0x0',
        input: toHex(msg.data),
      };
      if (type !== 'STATICCALL' && type !== 'DELEGATECALL') frame.value = q(msg.value);
      if (type === 'DELEGATECALL' || type === 'CALLCODE')
        frame.to = toHex((msg.codeAddress ?? msg.to)!.bytes);
      this.stack.push(frame);
    };
    const onAfter = (res: {
      execResult: { executionGasUsed: bigint; returnValue: Uint8Array; exceptionError?: { error: string } };
      createdAddress?: { bytes: Uint8Array };
    }) => {
      const frame = this.stack.pop();
      if (!frame) return;
      frame.gasUsed = q(res.execResult.executionGasUsed);
      const err = res.execResult.exceptionError;
      if (res.createdAddress) frame.to = toHex(res.createdAddress.bytes);
      if (err) {
        frame.error = gethError(err);
        if (err.error === 'revert') {
          frame.output = toHex(res.execResult.returnValue);
          const reason = revertReason(res.execResult.returnValue);
          if (reason !== undefined) frame.revertReason = reason;
        }
      } else if (frame.type !== 'CREATE' && frame.type !== 'CREATE2') {
        frame.output = toHex(res.execResult.returnValue);
      } else {
        frame.output = toHex(res.execResult.returnValue);
      }
      const parent = this.stack[this.stack.length - 1];
      if (parent) {
        if (!onlyTop) {
          parent.calls ??= [];
          parent.calls.push(frame);
        }
      } else this.root = frame;
    };
    evm.events.on('step', onStep);
    evm.events.on('beforeMessage', onBefore);
    evm.events.on('afterMessage', onAfter);
    return () => {
      evm.events.off('step', onStep);
      evm.events.off('beforeMessage', onBefore);
      evm.events.off('afterMessage', onAfter);
    };
  }

  result(gasUsed: bigint, failed: boolean, returnData: Uint8Array, error?: string): unknown {
    const root = this.root ?? { type: 'CALL', from: '0x', gas: q(this.topGas), gasUsed: '0x0', input: '0x' };
    root.gasUsed = q(gasUsed);
    if (failed && error && !root.error) root.error = error;
    if (!failed) root.output = toHex(returnData);
    return root;
  }
}

export function makeTracer(cfg: TracerConfig, gasLimit: bigint): Tracer {
  return cfg.tracer === 'callTracer' ? new CallTracer(cfg, gasLimit) : new StructLogTracer(cfg);
}
