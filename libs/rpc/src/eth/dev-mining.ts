// Mining, time and snapshot test-control methods of Hardhat and anvil (evm_mine, anvil_mine /
// hardhat_mine, evm_setAutomine, evm_setIntervalMining, evm_increaseTime, evm_setNextBlockTimestamp,
// evm_snapshot / evm_revert and their anvil_ names, anvil_reset / hardhat_reset), answered
// through the EthDevControl port. Only a single-validator chain-local node has them; every block
// they make still goes through consensus (docs/json-rpc.md, "Dev chain: mining and time").
import type { EthDevControl } from '@noded/types';
import { DEV_ONLY } from './dev-state.js';
import { invalidParams, serverError } from './errors.js';
import { quantity } from './hex.js';
import { type ArgSpec, type ArgsOf, bool, type Decoder, hexOrDecimal64, opt, raw, req } from './params.js';

/** How the API registers a method (EthApi.def). */
export type DefineMethod = <const S extends readonly ArgSpec<unknown>[]>(
  name: string,
  specs: S,
  fn: (args: ArgsOf<S>) => unknown,
) => void;

/** Blocks one anvil_mine / hardhat_mine call may ask for: each is a real consensus height. */
export const MAX_MINE_COUNT = 10_000;
/** evm_setIntervalMining bound (one day), so the timer value stays a sane number of ms. */
const MAX_INTERVAL_MS = 86_400_000n;
/** Seconds bound of the time methods: year 9999 and then some, far inside int64 nanoseconds. */
const MAX_SECONDS = 253_402_300_799n;

/** evm_mine's parameter: a timestamp (Hardhat, anvil) or anvil's {timestamp?, blocks?}. */
const mineOptions: Decoder<{ timestamp?: bigint; blocks?: bigint }> = (v) => {
  if (v !== null && typeof v === 'object' && !Array.isArray(v)) {
    const o = v as Record<string, unknown>;
    for (const k of Object.keys(o)) {
      if (k !== 'timestamp' && k !== 'blocks')
        throw invalidParams(`evm_mine: unknown option "${k}" (timestamp, blocks)`);
    }
    return {
      timestamp: o.timestamp == null ? undefined : hexOrDecimal64(o.timestamp),
      blocks: o.blocks == null ? undefined : hexOrDecimal64(o.blocks),
    };
  }
  return { timestamp: hexOrDecimal64(v) };
};

function refusedHere(method: string, refusal = DEV_ONLY): Error {
  return serverError(`${method} ${refusal}`);
}

/** Maps the port's typed failures to JSON-RPC errors naming the method. */
async function run<T>(method: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    const code = (err as { code?: unknown }).code;
    if (code === 'DEV_CONTROLS_REFUSED') throw refusedHere(method);
    if (code === 'INVALID_TIME' || code === 'ROLLBACK')
      throw serverError(`${method}: ${(err as Error).message}`);
    throw err;
  }
}

/** anvil_reset's options: nothing, {} or forking options that fork nothing (no jsonRpcUrl). */
function resetOptions(method: string, o: unknown): void {
  if (o === undefined || o === null) return;
  if (typeof o !== 'object' || Array.isArray(o))
    throw invalidParams(
      `${method}: options must be an object such as {"forking": {...}}, got ${JSON.stringify(o)}`,
    );
  for (const [k, v] of Object.entries(o as Record<string, unknown>)) {
    if (k !== 'forking') throw invalidParams(`${method}: unknown option "${k}" (forking)`);
    if (v === undefined || v === null) continue;
    const url = typeof v === 'object' ? (v as Record<string, unknown>).jsonRpcUrl : undefined;
    if (url !== undefined && url !== null && url !== '')
      throw serverError(
        `${method}: forking is not supported (noded cannot fork ${JSON.stringify(url)}); call it without options to reset chain-local to its genesis`,
      );
  }
}

function seconds(method: string, what: string, v: bigint): bigint {
  if (v > MAX_SECONDS)
    throw serverError(`${method}: ${what} ${v} is past the year 9999 (at most ${MAX_SECONDS})`);
  return v;
}

export function registerDevMining(def: DefineMethod, dev: EthDevControl | null, refusal?: string): void {
  const port = (method: string): EthDevControl => {
    if (dev === null) throw refusedHere(method, refusal);
    return dev;
  };

  // evm_mine [timestamp | {timestamp, blocks}]: blocks now (the first with this timestamp);
  // answers "0x0" as Hardhat and anvil.
  def('evm_mine', [opt(mineOptions)], async ([o]) => {
    const ts = o?.timestamp === undefined ? undefined : seconds('evm_mine', 'timestamp', o.timestamp);
    const n = o?.blocks ?? 1n;
    if (n < 1n || n > BigInt(MAX_MINE_COUNT))
      throw serverError(`evm_mine: blocks ${n} must be between 1 and ${MAX_MINE_COUNT}`);
    await run('evm_mine', () => port('evm_mine').mine(Number(n), n > 1n ? 1n : undefined, ts));
    return '0x0';
  });

  // anvil_mine / hardhat_mine [count = 1] [interval seconds = 1 between the mined blocks].
  for (const name of ['anvil_mine', 'hardhat_mine']) {
    def(name, [opt(hexOrDecimal64), opt(hexOrDecimal64)], async ([count, interval]) => {
      const n = count ?? 1n;
      if (n > BigInt(MAX_MINE_COUNT))
        throw serverError(
          `${name}: count ${n} exceeds ${MAX_MINE_COUNT} blocks per call (each is a consensus height)`,
        );
      if (n === 0n) {
        port(name);
        return null;
      }
      const step = interval === undefined ? 1n : seconds(name, 'interval', interval);
      await run(name, () => port(name).mine(Number(n), step, undefined));
      return null;
    });
  }

  def('evm_setAutomine', [req(bool)], async ([on]) => {
    await run('evm_setAutomine', () => port('evm_setAutomine').setAutomine(on));
    return true;
  });

  def('evm_setIntervalMining', [req(hexOrDecimal64)], async ([ms]) => {
    if (ms > MAX_INTERVAL_MS)
      throw serverError(`evm_setIntervalMining: interval ${ms} ms exceeds one day (${MAX_INTERVAL_MS} ms)`);
    await run('evm_setIntervalMining', () => port('evm_setIntervalMining').setIntervalMining(Number(ms)));
    return true;
  });

  // evm_increaseTime seconds: answers the total offset (seconds), as anvil does.
  def('evm_increaseTime', [req(hexOrDecimal64)], async ([secs]) => {
    const by = seconds('evm_increaseTime', 'seconds', secs);
    const total = await run('evm_increaseTime', () => port('evm_increaseTime').increaseTime(by));
    return quantity(total > 0n ? total : 0n);
  });

  // evm_snapshot / anvil_snapshot: an id (hex quantity, from 0x1, increasing) of the chain as it is.
  for (const name of ['evm_snapshot', 'anvil_snapshot']) {
    def(name, [], async () => quantity(await run(name, () => port(name).snapshot())));
  }

  // evm_revert / anvil_revert id: the chain back at that snapshot (blocks, state, receipts, logs,
  // indexes, the dev clock), which and every later snapshot are then used up. false for an unknown
  // or used id, as Hardhat and anvil answer.
  for (const name of ['evm_revert', 'anvil_revert']) {
    def(name, [req(hexOrDecimal64)], async ([id]) => run(name, () => port(name).revert(id)));
  }

  // anvil_reset / hardhat_reset [options]: the chain back at its genesis. Both tools take an
  // optional {forking: {jsonRpcUrl, blockNumber}} to fork another chain instead; noded forks
  // nothing, so forking options are refused rather than ignored (a test would run on the wrong
  // state). anvil answers null, Hardhat true.
  for (const [name, answer] of [
    ['anvil_reset', null],
    ['hardhat_reset', true],
  ] as const) {
    def(name, [opt(raw)], async ([o]) => {
      resetOptions(name, o);
      await run(name, () => port(name).reset());
      return answer;
    });
  }

  def('evm_setNextBlockTimestamp', [req(hexOrDecimal64)], async ([ts]) => {
    const t = seconds('evm_setNextBlockTimestamp', 'timestamp', ts);
    await run('evm_setNextBlockTimestamp', () => port('evm_setNextBlockTimestamp').setNextBlockTimestamp(t));
    return null;
  });
}
