// The bridge-out precompile at 0x7b7c000000000000000000000000000000000012: bridgeOut burns the
// caller's native BTC and records an outbound entry (its own sequence number 1, 2, 3, …) that a
// relayer reads to release the funds on the destination chain. The parameters come from genesis
// (app_state.bridge): the least amount, the outflow allowed per time window, the destination chains
// and the admin who holds the pause switch. Everything is in the EVM storage of the precompile's
// account (layout in docs/bridge.md), so entries are in the state root, undone with a reverted frame
// and kept across restarts; the burn is recorded with the state's journaled burns, so the executor's
// supply check accounts for it.
import { EVMError, type ExecResult, type Log, type PrecompileInput } from '@ethereumjs/evm';
import { Address } from '@ethereumjs/util';
import { keccak256 } from '@noded/crypto';
import { bytesToBigInt, concat, equal, fromHex, stripZeros, toHex, toKey } from '../bytes.js';
import { ExecutionError } from '../errors.js';
import type { JournaledState } from '../state/journaled.js';
import {
  AbiError,
  Args,
  addressWord,
  boolWord,
  encodeValues,
  eventTopic,
  selectorOf,
  uintWord,
} from './abi.js';
import { BTC_TOKEN_ADDRESS } from './btc-token.js';
import { type CallFrame, haltResult, openCall, revertResult } from './call-frame.js';

export const BRIDGE_OUT_ADDRESS = fromHex('0x7b7c000000000000000000000000000000000012');
const SELF = toKey(BRIDGE_OUT_ADDRESS);
/** Marker code (PUSH1 0 PUSH1 0 REVERT, never run), as the BTC token's. */
export const BRIDGE_OUT_CODE = fromHex('0x60006000fd');
/** The longest recipient (bytes on the destination chain) an entry may carry. */
export const MAX_RECIPIENT_BYTES = 64;

const slot = (n: number) => toKey(uintWord(BigInt(n)));
const S = {
  admin: slot(0),
  paused: slot(1),
  minAmount: slot(2),
  windowSeconds: slot(3),
  maxOutflow: slot(4),
  /** Bit i set: destination chain i is accepted. */
  chains: slot(5),
  windowIndex: slot(6),
  windowOutflow: slot(7),
  /** The last sequence number given (entries are 1..count). */
  count: slot(8),
  totalOut: slot(9),
  /** Bridge in: the source-chain token minted as BTC (genesis app_state.bridge.btc_token_address; 0 = none). */
  inboundToken: slot(12),
  /** Bridge in: the last deposit sequence number processed (minted, or skipped for another token). */
  inboundSequence: slot(13),
  /** Bridge in: BTC minted in total. */
  totalIn: slot(14),
  /** Bridge in: the most BTC minted per window (genesis max_inflow_per_window; 0 = no limit). */
  maxInflow: slot(15),
  /** Bridge in: the window of the last mint, and the BTC minted in it. */
  inWindowIndex: slot(16),
  inWindowInflow: slot(17),
  /** Bridge in: the largest deposit minted (genesis max_deposit_amount; 0 = no cap). */
  maxDeposit: slot(18),
  /** Bridge in: deposits of the mapped token processed without a mint for being above the cap, and their amount. */
  overCapCount: slot(19),
  overCapAmount: slot(20),
};
const ENTRIES_SLOT = uintWord(10n);
const BY_RECIPIENT_SLOT = uintWord(11n);

function entryBase(seq: bigint): bigint {
  return bytesToBigInt(keccak256(concat(uintWord(seq), ENTRIES_SLOT)));
}

function recipientListSlot(recipient: Uint8Array): bigint {
  return bytesToBigInt(keccak256(concat(keccak256(recipient), BY_RECIPIENT_SLOT)));
}

const at = (base: bigint, i: bigint | number) => toKey(uintWord((base + BigInt(i)) % (1n << 256n)));

/** Fixed gas of each function (docs/bridge.md). */
export const BRIDGE_OUT_GAS = {
  bridgeOut: 120_000n,
  setPaused: 30_000n,
  paused: 2_200n,
  admin: 2_200n,
  outboundCount: 2_200n,
  params: 12_000n,
  /** Plus 2,200 per entry returned. */
  outboundByRecipient: 4_400n,
  outbound: 20_000n,
  inbound: 6_600n,
  unknown: 1_000n,
} as const;

const BRIDGE_OUT_TOPIC = eventTopic('BridgeOut(uint256,address,uint8,address,uint256,bytes)');
const PAUSE_TOPIC = eventTopic('PauseChanged(bool,address)');

/** Genesis app_state.bridge as the executor reads it (libs/config validates the file first). */
export interface BridgeParams {
  admin: Uint8Array;
  paused: boolean;
  minAmount: bigint;
  windowSeconds: bigint;
  maxOutflowPerWindow: bigint;
  chains: number[];
  /** The source-chain wrapped-BTC token whose deposits are minted as BTC (bridge in); absent: none. */
  btcTokenAddress?: Uint8Array;
  /** Bridge in: the most BTC minted per window (the outflow's windows); absent: no limit. */
  maxInflowPerWindow?: bigint;
  /** Bridge in: the largest single deposit minted; a larger one is processed without a mint. Absent: no cap. */
  maxDepositAmount?: bigint;
}

/** Parses app_state.bridge (undefined when absent: bridgeOut then refuses every call). */
export function parseBridgeParams(appState: unknown): BridgeParams | undefined {
  const raw = (appState as { bridge?: unknown } | null)?.bridge;
  if (raw === undefined) return undefined;
  const fail = (why: string): never => {
    throw new ExecutionError('BAD_GENESIS', `genesis.json:app_state.bridge${why}`);
  };
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) return fail(': must be an object');
  const b = raw as Record<string, unknown>;
  const int = (k: string, min: bigint): bigint => {
    const v = b[k];
    if (typeof v !== 'string' || !/^(0|[1-9][0-9]*)$/.test(v) || BigInt(v) >= 1n << 256n) {
      return fail(`.${k}: must be a decimal integer string (uint256), got ${JSON.stringify(v)}`);
    }
    if (BigInt(v) < min) return fail(`.${k}: must be >= ${min}, got ${JSON.stringify(v)}`);
    return BigInt(v);
  };
  if (typeof b.admin !== 'string' || !/^0x[0-9a-fA-F]{40}$/.test(b.admin)) {
    fail(`.admin: must be a 0x-prefixed 20-byte hex address, got ${JSON.stringify(b.admin)}`);
  }
  if (b.paused !== undefined && typeof b.paused !== 'boolean') {
    fail(`.paused: must be true or false, got ${JSON.stringify(b.paused)}`);
  }
  const chains = b.chains;
  if (
    !Array.isArray(chains) ||
    chains.length === 0 ||
    chains.some((c) => !Number.isInteger(c) || c < 0 || c > 255) ||
    new Set(chains).size !== chains.length
  ) {
    fail(`.chains: must be a non-empty list of distinct integers 0-255, got ${JSON.stringify(chains)}`);
  }
  if (
    b.btc_token_address !== undefined &&
    (typeof b.btc_token_address !== 'string' || !/^0x[0-9a-fA-F]{40}$/.test(b.btc_token_address))
  ) {
    fail(
      `.btc_token_address: must be a 0x-prefixed 20-byte hex address, got ${JSON.stringify(b.btc_token_address)}`,
    );
  }
  const maxInflow = b.max_inflow_per_window !== undefined ? int('max_inflow_per_window', 1n) : undefined;
  const cap = b.max_deposit_amount !== undefined ? int('max_deposit_amount', 1n) : undefined;
  if (cap !== undefined && maxInflow !== undefined && cap > maxInflow)
    fail(`.max_deposit_amount: must be <= max_inflow_per_window (${maxInflow}), got "${cap}"`);
  return {
    ...(typeof b.btc_token_address === 'string' ? { btcTokenAddress: fromHex(b.btc_token_address) } : {}),
    ...(maxInflow !== undefined ? { maxInflowPerWindow: maxInflow } : {}),
    ...(cap !== undefined ? { maxDepositAmount: cap } : {}),
    admin: fromHex(b.admin as string),
    paused: b.paused === true,
    minAmount: int('min_amount', 1n),
    windowSeconds: int('window_seconds', 1n),
    maxOutflowPerWindow: int('max_outflow_per_window', 1n),
    chains: chains as number[],
  };
}

/** The storage the precompile's account starts with (empty without app_state.bridge). */
export function bridgeOutGenesisStorage(p: BridgeParams | undefined): Map<string, Uint8Array> {
  const m = new Map<string, Uint8Array>();
  if (!p) return m;
  const put = (k: string, v: bigint) => {
    if (v !== 0n) m.set(k, stripZeros(uintWord(v)));
  };
  put(S.admin, bytesToBigInt(p.admin));
  put(S.paused, p.paused ? 1n : 0n);
  put(S.minAmount, p.minAmount);
  put(S.windowSeconds, p.windowSeconds);
  put(S.maxOutflow, p.maxOutflowPerWindow);
  put(
    S.chains,
    p.chains.reduce((bits, c) => bits | (1n << BigInt(c)), 0n),
  );
  if (p.btcTokenAddress) put(S.inboundToken, bytesToBigInt(p.btcTokenAddress));
  if (p.maxInflowPerWindow !== undefined) put(S.maxInflow, p.maxInflowPerWindow);
  if (p.maxDepositAmount !== undefined) put(S.maxDeposit, p.maxDepositAmount);
  return m;
}

/** Bridge-in state, as the executor reads and writes it around a mint (never from a transaction). */
export interface InboundState {
  /** The mapped source token, 0x + 40 lowercase hex; "" when genesis maps none. */
  token: string;
  lastSequence: bigint;
  totalIn: bigint;
  /** The admin's pause switch (slot 1): it stops minting as it stops bridgeOut. */
  paused: boolean;
  windowSeconds: bigint;
  /** The most BTC minted per window; 0 = no limit. */
  maxInflow: bigint;
  /** The window of the last mint and the BTC minted in it. */
  windowIndex: bigint;
  windowInflow: bigint;
  /** The largest deposit minted; 0 = no cap. */
  maxDeposit: bigint;
  /** Deposits processed without a mint for being above maxDeposit, and their amount (base units). */
  overCapCount: bigint;
  overCapAmount: bigint;
}

/** Whether `d` is a deposit of the mapped token that is minted (not above the per-deposit cap). */
export function mintsDeposit(inbound: InboundState, d: { token: string; amount: bigint }): boolean {
  return (
    inbound.token !== '' &&
    d.token === inbound.token &&
    (inbound.maxDeposit === 0n || d.amount <= inbound.maxDeposit)
  );
}

/** What a block at `timestamp` (seconds) may still mint: Infinity-like `room` undefined = no limit. */
export function inflowRoom(
  inbound: InboundState,
  timestamp: bigint,
): { window: bigint; used: bigint; room: bigint | undefined } {
  const window = inbound.windowSeconds === 0n ? 0n : timestamp / inbound.windowSeconds;
  const used = inbound.windowIndex === window ? inbound.windowInflow : 0n;
  if (inbound.maxInflow === 0n) return { window, used, room: undefined };
  return { window, used, room: inbound.maxInflow > used ? inbound.maxInflow - used : 0n };
}

interface SlotState {
  readSlot(addr: string, slot: string): Promise<Uint8Array>;
  writeSlot(addr: string, slot: string, value: Uint8Array): void;
}

export async function readInbound(state: SlotState): Promise<InboundState> {
  const r = async (k: string) => bytesToBigInt(await state.readSlot(SELF, k));
  const token = await r(S.inboundToken);
  return {
    token: token === 0n ? '' : `0x${token.toString(16).padStart(40, '0')}`,
    lastSequence: await r(S.inboundSequence),
    totalIn: await r(S.totalIn),
    paused: (await r(S.paused)) !== 0n,
    windowSeconds: await r(S.windowSeconds),
    maxInflow: await r(S.maxInflow),
    windowIndex: await r(S.inWindowIndex),
    windowInflow: await r(S.inWindowInflow),
    maxDeposit: await r(S.maxDeposit),
    overCapCount: await r(S.overCapCount),
    overCapAmount: await r(S.overCapAmount),
  };
}

/** After a mint: the last processed sequence, the totals, and the window's inflow so far. */
export function writeInbound(
  state: SlotState,
  w: {
    lastSequence: bigint;
    totalIn: bigint;
    window: bigint;
    windowInflow: bigint;
    /** Only when the block processed a deposit above the cap (the slots are untouched otherwise). */
    overCap?: { count: bigint; amount: bigint };
  },
): void {
  if (w.overCap) {
    state.writeSlot(SELF, S.overCapCount, uintWord(w.overCap.count));
    state.writeSlot(SELF, S.overCapAmount, uintWord(w.overCap.amount));
  }
  state.writeSlot(SELF, S.inboundSequence, uintWord(w.lastSequence));
  state.writeSlot(SELF, S.totalIn, uintWord(w.totalIn));
  state.writeSlot(SELF, S.inWindowIndex, uintWord(w.window));
  state.writeSlot(SELF, S.inWindowInflow, uintWord(w.windowInflow));
}

class Refusal extends Error {}

interface Call {
  args: Args;
  frame: CallFrame;
  state: JournaledState;
  evm: object;
  logs: Log[];
}

interface Method {
  signature: string;
  gas: bigint;
  words: number;
  writes: boolean;
  run(c: Call): Promise<Uint8Array>;
}

const read = async (c: Call, k: string) => bytesToBigInt(await c.state.readSlot(SELF, k));
const write = (c: Call, k: string, v: bigint) => c.state.writeSlot(SELF, k, uintWord(v));

function block(evm: object): { number: bigint; timestamp: bigint } {
  const b = (evm as { _block?: { header: { number: bigint; timestamp: bigint } } })._block;
  if (!b) throw new Error('the bridge-out precompile ran outside a block');
  return b.header;
}

async function readBytes(c: Call, base: bigint, lengthAt: number): Promise<Uint8Array> {
  const len = Number(await read(c, at(base, lengthAt)));
  const out = new Uint8Array(Math.ceil(len / 32) * 32);
  for (let i = 0; i * 32 < len; i++) out.set(uintWord(await read(c, at(base, lengthAt + 1 + i))), i * 32);
  return out.subarray(0, len);
}

/** The ABI tuple outbound() returns for an entry (all zero for an unknown sequence number). */
async function entry(c: Call, seq: bigint): Promise<Uint8Array> {
  const base = entryBase(seq);
  const f = async (i: number) => uintWord(await read(c, at(base, i)));
  return encodeValues([
    { word: await f(0) }, // sender
    { word: await f(1) }, // amount
    { word: await f(2) }, // chain
    { bytes: await readBytes(c, base, 5) }, // recipient
    { word: await f(3) }, // block number
    { word: await f(4) }, // timestamp
  ]);
}

const METHODS: Method[] = [
  {
    signature: 'bridgeOut(address,uint256,uint8,bytes)',
    gas: BRIDGE_OUT_GAS.bridgeOut,
    words: 4,
    writes: true,
    run: async (c) => {
      const token = c.args.address(0, 'token');
      const amount = c.args.uint(1);
      const chain = Number(c.args.uintN(2, 8, 'chain'));
      const recipient = c.args.bytes(3, 'recipient');
      const windowSeconds = await read(c, S.windowSeconds);
      if (windowSeconds === 0n)
        throw new Refusal('bridge-out is not configured (genesis has no app_state.bridge)');
      if ((await read(c, S.paused)) !== 0n) throw new Refusal('bridge-out is paused by the admin');
      if (!equal(token, BTC_TOKEN_ADDRESS)) {
        throw new Refusal(
          `token ${toHex(token)} cannot be bridged out (only BTC, ${toHex(BTC_TOKEN_ADDRESS)})`,
        );
      }
      if ((((await read(c, S.chains)) >> BigInt(chain)) & 1n) === 0n) {
        throw new Refusal(`destination chain ${chain} is not one of the genesis app_state.bridge.chains`);
      }
      if (recipient.length === 0 || recipient.length > MAX_RECIPIENT_BYTES) {
        throw new Refusal(`recipient is ${recipient.length} bytes, want 1 to ${MAX_RECIPIENT_BYTES}`);
      }
      const min = await read(c, S.minAmount);
      if (amount < min) throw new Refusal(`amount ${amount} is below the minimum ${min}`);
      const { number, timestamp } = block(c.evm);
      const window = timestamp / windowSeconds;
      const used = (await read(c, S.windowIndex)) === window ? await read(c, S.windowOutflow) : 0n;
      const limit = await read(c, S.maxOutflow);
      if (used + amount > limit) {
        throw new Refusal(
          `amount ${amount} would bring the outflow of this ${windowSeconds}-second window (from ${window * windowSeconds}) to ${used + amount}, above the limit ${limit}`,
        );
      }
      const sender = c.frame.caller.bytes;
      const acct = await c.state.readAccount(toKey(sender));
      const balance = acct?.balance ?? 0n;
      if (balance < amount) {
        throw new Refusal(`amount ${amount} exceeds the balance ${balance} of ${toHex(sender)}`);
      }
      // The burn: the balance goes, and the state records it for the block's supply check.
      await c.state.modifyAccountFields(new Address(sender), { balance: balance - amount });
      c.state.recordBurn(amount);
      write(c, S.windowIndex, window);
      write(c, S.windowOutflow, used + amount);
      write(c, S.totalOut, (await read(c, S.totalOut)) + amount);
      const seq = (await read(c, S.count)) + 1n;
      write(c, S.count, seq);
      const base = entryBase(seq);
      write(c, at(base, 0), bytesToBigInt(sender));
      write(c, at(base, 1), amount);
      write(c, at(base, 2), BigInt(chain));
      write(c, at(base, 3), number);
      write(c, at(base, 4), timestamp);
      write(c, at(base, 5), BigInt(recipient.length));
      for (let i = 0; i * 32 < recipient.length; i++) {
        const w = new Uint8Array(32);
        w.set(recipient.subarray(i * 32, i * 32 + 32));
        write(c, at(base, 6 + i), bytesToBigInt(w));
      }
      const list = recipientListSlot(recipient);
      const n = await read(c, at(list, 0));
      write(c, at(list, 0), n + 1n);
      write(c, at(bytesToBigInt(keccak256(uintWord(list))), n), seq);
      c.logs.push([
        BRIDGE_OUT_ADDRESS,
        [BRIDGE_OUT_TOPIC, uintWord(seq), addressWord(sender), uintWord(BigInt(chain))],
        encodeValues([{ word: addressWord(token) }, { word: uintWord(amount) }, { bytes: recipient }]),
      ]);
      return uintWord(seq);
    },
  },
  {
    signature: 'setPaused(bool)',
    gas: BRIDGE_OUT_GAS.setPaused,
    words: 1,
    writes: true,
    run: async (c) => {
      const admin = uintWord(await read(c, S.admin)).subarray(12);
      const caller = c.frame.caller.bytes;
      if (!equal(caller, admin))
        throw new Refusal(`only the admin ${toHex(admin)} may pause, not ${toHex(caller)}`);
      const v = c.args.uint(0);
      if (v > 1n) throw new AbiError(`argument paused of setPaused(bool) is ${v}, not a bool`);
      write(c, S.paused, v);
      c.logs.push([BRIDGE_OUT_ADDRESS, [PAUSE_TOPIC], concat(boolWord(v === 1n), addressWord(caller))]);
      return new Uint8Array(0);
    },
  },
  {
    signature: 'paused()',
    gas: BRIDGE_OUT_GAS.paused,
    words: 0,
    writes: false,
    run: async (c) => boolWord((await read(c, S.paused)) !== 0n),
  },
  {
    signature: 'admin()',
    gas: BRIDGE_OUT_GAS.admin,
    words: 0,
    writes: false,
    run: async (c) => uintWord(await read(c, S.admin)),
  },
  {
    signature: 'outboundCount()',
    gas: BRIDGE_OUT_GAS.outboundCount,
    words: 0,
    writes: false,
    run: async (c) => uintWord(await read(c, S.count)),
  },
  {
    signature: 'params()',
    gas: BRIDGE_OUT_GAS.params,
    words: 0,
    writes: false,
    // (minAmount, windowSeconds, maxOutflowPerWindow, chains bitmap, windowStart, windowOutflow, totalOut)
    run: async (c) => {
      const windowSeconds = await read(c, S.windowSeconds);
      const now = block(c.evm).timestamp;
      const current = windowSeconds === 0n ? 0n : now / windowSeconds;
      const used = (await read(c, S.windowIndex)) === current ? await read(c, S.windowOutflow) : 0n;
      return concat(
        uintWord(await read(c, S.minAmount)),
        uintWord(windowSeconds),
        uintWord(await read(c, S.maxOutflow)),
        uintWord(await read(c, S.chains)),
        uintWord(current * windowSeconds),
        uintWord(used),
        uintWord(await read(c, S.totalOut)),
      );
    },
  },
  {
    signature: 'inbound()',
    gas: BRIDGE_OUT_GAS.inbound,
    words: 0,
    writes: false,
    // (lastSequence, totalBridgedIn, btcTokenAddress, maxInflowPerWindow, windowStart, windowInflow,
    // maxDepositAmount, overCapDeposits, overCapAmount): the bridge-in state; the window is the one
    // of the current block.
    run: async (c) => {
      const windowSeconds = await read(c, S.windowSeconds);
      const now = block(c.evm).timestamp;
      const current = windowSeconds === 0n ? 0n : now / windowSeconds;
      const used = (await read(c, S.inWindowIndex)) === current ? await read(c, S.inWindowInflow) : 0n;
      return concat(
        uintWord(await read(c, S.inboundSequence)),
        uintWord(await read(c, S.totalIn)),
        uintWord(await read(c, S.inboundToken)),
        uintWord(await read(c, S.maxInflow)),
        uintWord(current * windowSeconds),
        uintWord(used),
        uintWord(await read(c, S.maxDeposit)),
        uintWord(await read(c, S.overCapCount)),
        uintWord(await read(c, S.overCapAmount)),
      );
    },
  },
  {
    signature: 'outbound(uint256)',
    gas: BRIDGE_OUT_GAS.outbound,
    words: 1,
    writes: false,
    run: async (c) => entry(c, c.args.uint(0)),
  },
  {
    signature: 'outboundByRecipient(bytes)',
    gas: BRIDGE_OUT_GAS.outboundByRecipient,
    words: 1,
    writes: false,
    run: async (c) => {
      const list = recipientListSlot(c.args.bytes(0, 'recipient'));
      const n = await read(c, at(list, 0));
      const first = bytesToBigInt(keccak256(uintWord(list)));
      const seqs: bigint[] = [];
      for (let i = 0n; i < n && i < 10_000n; i++) seqs.push(await read(c, at(first, i)));
      return encodeValues([{ uints: seqs }]);
    },
  },
];

const BY_SELECTOR = new Map(METHODS.map((m) => [selectorOf(m.signature), m]));

function revert(gas: bigint, reason: string): ExecResult {
  return revertResult(gas, `bridge: ${reason}`);
}

/** The precompile function registered at BRIDGE_OUT_ADDRESS (run.ts makeVm). */
export async function bridgeOutPrecompile(input: PrecompileInput): Promise<ExecResult> {
  const evm = input._EVM as object;
  const open = openCall(input, {
    what: 'the bridge-out precompile',
    name: 'bridge',
    prefix: 'bridge: ',
    address: BRIDGE_OUT_ADDRESS,
    methods: BY_SELECTOR,
    unknownGas: BRIDGE_OUT_GAS.unknown,
  });
  if ('result' in open) return open.result;
  const { frame, method } = open;
  let gas = open.gas;
  const logs: Log[] = [];
  try {
    const args = new Args(input.data, method.signature, method.words);
    const state = input._EVM.stateManager as unknown as JournaledState;
    const returnValue = await method.run({ args, frame, state, evm, logs });
    if (method.signature === 'outboundByRecipient(bytes)') {
      // 2,200 per entry read, beyond the base.
      gas += 2_200n * bytesToBigInt(returnValue.subarray(32, 64));
      if (input.gasLimit < gas) return haltResult(input.gasLimit, EVMError.errorMessages.OUT_OF_GAS);
    }
    return { returnValue, executionGasUsed: gas, logs };
  } catch (err) {
    if (err instanceof Refusal || err instanceof AbiError) return revert(gas, err.message);
    throw err;
  }
}
