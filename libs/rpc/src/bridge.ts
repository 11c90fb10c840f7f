// Reading the bridge-out precompile's outbound entries for the JSON-RPC (bridge_ methods) and REST
// (/noded/bridge/v1/…): a view call through the EthChain port (as eth_call), decoded here into the
// JSON a relayer reads. The precompile owns the data and its layout (docs/bridge.md); this file
// only knows its view functions' ABI.
import { keccak256 } from '@noded/crypto';
import type { CallOptions, EthChain, Hex } from '@noded/types';

export const BRIDGE_OUT_ADDRESS: Hex = '0x7b7c000000000000000000000000000000000012';
export const BTC_TOKEN_ADDRESS: Hex = '0x7b7c000000000000000000000000000000000000';

/** An outbound entry as the JSON-RPC and REST render it (amounts and numbers as decimal strings). */
export interface OutboundEntryJson {
  sequence: string;
  sender: Hex;
  token: Hex;
  amount: string;
  chain: number;
  recipient: Hex;
  blockNumber: string;
  timestamp: string;
}

export interface BridgeParamsJson {
  admin: Hex;
  paused: boolean;
  min_amount: string;
  window_seconds: string;
  max_outflow_per_window: string;
  chains: number[];
  window_start: string;
  window_outflow: string;
  total_bridged_out: string;
  outbound_count: string;
  /** Bridge in: the last source-chain deposit sequence number processed (minted, or skipped for another token). */
  inbound_last_sequence: string;
  /** Bridge in: BTC minted in total, base units. */
  total_bridged_in: string;
  /** Bridge in: the source-chain token minted as BTC (genesis app_state.bridge.btc_token_address); null when none. */
  inbound_token: Hex | null;
  /** Bridge in: the most BTC minted per window (genesis max_inflow_per_window); null when no limit. */
  max_inflow_per_window: string | null;
  /** Bridge in: the start (block time, seconds) of the window of the queried block, and the BTC minted in it. */
  inbound_window_start: string;
  inbound_window_inflow: string;
  /** Bridge in: the largest deposit minted (genesis max_deposit_amount); null when no cap. */
  max_deposit_amount: string | null;
  /** Bridge in: deposits processed without a mint for being above max_deposit_amount, and their amount. */
  over_cap_deposits: string;
  over_cap_amount: string;
}

const sel = (signature: string) =>
  Buffer.from(keccak256(Buffer.from(signature)))
    .subarray(0, 4)
    .toString('hex');
const SEL = {
  outbound: sel('outbound(uint256)'),
  byRecipient: sel('outboundByRecipient(bytes)'),
  count: sel('outboundCount()'),
  params: sel('params()'),
  paused: sel('paused()'),
  admin: sel('admin()'),
  inbound: sel('inbound()'),
};

/** Entries one by-recipient answer renders at most (the newest are last; see docs/bridge.md). */
export const MAX_ENTRIES_PER_ANSWER = 1000;

const word = (n: bigint) => n.toString(16).padStart(64, '0');

/** A view call's answer that is not what the precompile returns (a node whose state lacks it). */
export class BridgeReadError extends Error {
  override name = 'BridgeReadError';
}

/** The 32-byte word at byte `at` of an answer, refusing an answer too short to hold it. */
function uintAt(b: Buffer, at: number): bigint {
  if (at < 0 || b.length < at + 32) {
    throw new BridgeReadError(
      `the bridge-out precompile answered ${b.length} bytes; a word at byte ${at} was expected`,
    );
  }
  return BigInt(`0x${b.subarray(at, at + 32).toString('hex')}`);
}

export class BridgeReader {
  constructor(
    private readonly chain: EthChain,
    private readonly opts: CallOptions,
  ) {}

  private async view(data: string, height: bigint): Promise<Buffer> {
    const r = await this.chain.call(
      { to: BRIDGE_OUT_ADDRESS, data: `0x${data}` as Hex },
      height,
      undefined,
      this.opts,
    );
    if (r.reverted || r.error) {
      throw new BridgeReadError(`the bridge-out precompile refused a view call: ${r.error ?? r.returnData}`);
    }
    return Buffer.from(r.returnData.slice(2), 'hex');
  }

  async count(height: bigint): Promise<bigint> {
    return uintAt(await this.view(SEL.count, height), 0);
  }

  /** The entry with sequence number `seq`, or undefined when there is none (yet). */
  async outbound(seq: bigint, height: bigint): Promise<OutboundEntryJson | undefined> {
    if (seq < 1n || seq > (await this.count(height))) return undefined;
    const b = await this.view(SEL.outbound + word(seq), height);
    const at = (i: number) => uintAt(b, 32 * i);
    const off = Number(at(3));
    const len = Number(uintAt(b, off));
    if (b.length < off + 32 + len) uintAt(b, off + 32 + len);
    return {
      sequence: seq.toString(),
      sender: `0x${b.subarray(12, 32).toString('hex')}`,
      token: BTC_TOKEN_ADDRESS,
      amount: at(1).toString(),
      chain: Number(at(2)),
      recipient: `0x${b.subarray(off + 32, off + 32 + len).toString('hex')}`,
      blockNumber: at(4).toString(),
      timestamp: at(5).toString(),
    };
  }

  /** The sequence numbers of the entries paid to `recipient` (its bytes on the destination chain). */
  async sequencesOf(recipient: Uint8Array, height: bigint): Promise<bigint[]> {
    const padded = Buffer.alloc(Math.ceil(recipient.length / 32) * 32);
    padded.set(recipient);
    const data = SEL.byRecipient + word(32n) + word(BigInt(recipient.length)) + padded.toString('hex');
    const b = await this.view(data, height);
    const n = Number(uintAt(b, 32));
    const out: bigint[] = [];
    for (let i = 0; i < n; i++) out.push(uintAt(b, 64 + 32 * i));
    return out;
  }

  /** The entries paid to `recipient`, oldest first, at most MAX_ENTRIES_PER_ANSWER (the newest). */
  async outboundByRecipient(recipient: Uint8Array, height: bigint): Promise<OutboundEntryJson[]> {
    const seqs = (await this.sequencesOf(recipient, height)).slice(-MAX_ENTRIES_PER_ANSWER);
    const out: OutboundEntryJson[] = [];
    for (const s of seqs) {
      const e = await this.outbound(s, height);
      if (e) out.push(e);
    }
    return out;
  }

  /** The bridge-in state: last processed deposit, BTC minted, the mapped source token, the inflow window, the per-deposit cap. */
  async inbound(
    height: bigint,
  ): Promise<
    Pick<
      BridgeParamsJson,
      | 'inbound_last_sequence'
      | 'total_bridged_in'
      | 'inbound_token'
      | 'max_inflow_per_window'
      | 'inbound_window_start'
      | 'inbound_window_inflow'
      | 'max_deposit_amount'
      | 'over_cap_deposits'
      | 'over_cap_amount'
    >
  > {
    const b = await this.view(SEL.inbound, height);
    const token = uintAt(b, 64);
    const max = uintAt(b, 96);
    const cap = uintAt(b, 192);
    return {
      inbound_last_sequence: uintAt(b, 0).toString(),
      total_bridged_in: uintAt(b, 32).toString(),
      inbound_token: token === 0n ? null : (`0x${token.toString(16).padStart(40, '0')}` as Hex),
      max_inflow_per_window: max === 0n ? null : max.toString(),
      inbound_window_start: uintAt(b, 128).toString(),
      inbound_window_inflow: uintAt(b, 160).toString(),
      max_deposit_amount: cap === 0n ? null : cap.toString(),
      over_cap_deposits: uintAt(b, 224).toString(),
      over_cap_amount: uintAt(b, 256).toString(),
    };
  }

  async params(height: bigint): Promise<BridgeParamsJson> {
    const b = await this.view(SEL.params, height);
    const at = (i: number) => uintAt(b, 32 * i);
    const bits = at(3);
    const chains: number[] = [];
    for (let c = 0; c < 256; c++) if ((bits >> BigInt(c)) & 1n) chains.push(c);
    const paused = uintAt(await this.view(SEL.paused, height), 0);
    const admin = uintAt(await this.view(SEL.admin, height), 0);
    return {
      admin: `0x${admin.toString(16).padStart(40, '0')}`,
      paused: paused === 1n,
      min_amount: at(0).toString(),
      window_seconds: at(1).toString(),
      max_outflow_per_window: at(2).toString(),
      chains,
      window_start: at(4).toString(),
      window_outflow: at(5).toString(),
      total_bridged_out: at(6).toString(),
      outbound_count: (await this.count(height)).toString(),
      ...(await this.inbound(height)),
    };
  }
}
