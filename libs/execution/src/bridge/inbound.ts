// Bridge in, the executor's side: the consensus validator sets it needs to check attestations
// (kept from InitChain and FinalizeBlock's updates, applied at H + 2 as CometBFT does), the vote
// extension of this validator (the next deposits its watcher saw), VerifyVoteExtension's rule, the
// proposer's bridge transaction, ProcessProposal's check and FinalizeBlock's mint.
import { ed25519Address } from '@noded/crypto';
import type { BatchOp, KVStore } from '@noded/storage';
import type { ExecTxResult, ExtendedCommitInfo, Logger, Validator, ValidatorUpdate } from '@noded/types';
import { attr } from '../blockrun.js';
import { toKey } from '../bytes.js';
import {
  type InboundState,
  inflowRoom,
  mintsDeposit,
  readInbound,
  writeInbound,
} from '../precompiles/bridge-out.js';
import type { JournaledState } from '../state/journaled.js';
import { metaKey } from '../store/keys.js';
import { type Deposit, decodeAttestation, encodeAttestation, MAX_ATTESTED_DEPOSITS } from './deposits.js';
import {
  type AttestingValidator,
  BridgeTxError,
  checkBridgeTx,
  decodeBridgeTx,
  encodeBridgeTx,
  isBridgeTx,
  tallyAttestations,
} from './mint.js';

/** Where the executor's vote extension takes deposits from (the DepositWatcher). */
export interface DepositSource {
  /** Consecutive deposits from the chain's last processed + 1, or from `from` when that is later. */
  next(max: number, from?: bigint): Deposit[];
  markAttested(sequence: bigint): void;
}

const enc = new TextEncoder();
const dec = new TextDecoder();
const valsetKey = (h: number) => metaKey(`bridge.valset.${h}`);
const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');

/**
 * How many of `deposits` (in order) a block at `timestamp` may process under the inflow limit:
 * the minted amounts of the leading ones must fit in what the window has left. A deposit that mints
 * nothing (another token's, or one above the per-deposit cap) always fits. The rest wait, in order,
 * for a later window.
 */
export function depositsWithinLimit(
  deposits: readonly Deposit[],
  inbound: InboundState,
  timestamp: bigint,
): number {
  const { room } = inflowRoom(inbound, timestamp);
  if (room === undefined) return deposits.length;
  let sum = 0n;
  for (const [i, d] of deposits.entries()) {
    if (!mintsDeposit(inbound, d)) continue;
    sum += d.amount;
    if (sum > room) return i;
  }
  return deposits.length;
}

interface StoredValidator {
  pubKey: string;
  power: string;
}

export class BridgeIn {
  private readonly cache = new Map<number, AttestingValidator[]>();
  /** The deposit last reported as larger than a whole window's limit (logged once). */
  private reportedTooLarge = 0n;
  /** The (window, deposit) last reported as waiting for the next window (logged once each). */
  private reportedWaiting = '';

  constructor(
    private readonly kv: KVStore,
    private readonly chainId: string,
    private readonly logger: Logger,
    private readonly deposits: DepositSource | undefined,
  ) {}

  // -------------------------------------------------------------------------------------------
  // Validator sets

  private encodeSet(vals: AttestingValidator[]): Uint8Array {
    const list: StoredValidator[] = vals.map((v) => ({
      pubKey: Buffer.from(v.pubKey).toString('base64'),
      power: v.power.toString(),
    }));
    return enc.encode(JSON.stringify(list));
  }

  /** InitChain: the genesis set signs heights initial and initial + 1. */
  genesisOps(initialHeight: number, validators: Validator[]): BatchOp[] {
    const set = validators.map((v) => ({ address: v.address, pubKey: v.pubKey, power: v.votingPower }));
    const value = this.encodeSet(set);
    this.cache.set(initialHeight, set);
    this.cache.set(initialHeight + 1, set);
    return [
      { type: 'put', key: valsetKey(initialHeight), value },
      { type: 'put', key: valsetKey(initialHeight + 1), value },
    ];
  }

  /** The set of `height` (who signs its precommits), or undefined if not recorded. */
  async validators(height: number): Promise<AttestingValidator[] | undefined> {
    const hit = this.cache.get(height);
    if (hit) return hit;
    const raw = await this.kv.get(valsetKey(height));
    if (!raw) return undefined;
    const set = (JSON.parse(dec.decode(raw)) as StoredValidator[]).map((v) => {
      const pubKey = new Uint8Array(Buffer.from(v.pubKey, 'base64'));
      return { address: ed25519Address(pubKey), pubKey, power: BigInt(v.power) };
    });
    this.remember(height, set);
    return set;
  }

  private remember(height: number, set: AttestingValidator[]): void {
    this.cache.set(height, set);
    for (const h of this.cache.keys()) if (h < height - 8) this.cache.delete(h);
  }

  /** FinalizeBlock(height) returned `updates`: they make the set of height + 2 (written at commit). */
  async nextSetOps(height: number, updates: ValidatorUpdate[]): Promise<BatchOp[]> {
    const prev = await this.validators(height + 1);
    if (!prev) return [];
    const next = new Map(prev.map((v) => [hex(v.address), v]));
    for (const u of updates) {
      const address = ed25519Address(u.pubKey);
      if (u.power === 0n) next.delete(hex(address));
      else next.set(hex(address), { address, pubKey: u.pubKey, power: u.power });
    }
    const set = [...next.values()];
    this.remember(height + 2, set);
    return [{ type: 'put', key: valsetKey(height + 2), value: this.encodeSet(set) }];
  }

  /**
   * The sets the next blocks need that are not recorded: those of `latest` (checking block
   * latest + 1), latest + 1 and latest + 2 (FinalizeBlock(latest + 1) derives latest + 3 from it),
   * from the chain's first height on. An application.db written before this executor recorded
   * sets has none of them.
   */
  async missingSets(latest: number, firstHeight: number): Promise<number[]> {
    const out: number[] = [];
    for (let h = Math.max(latest, firstHeight); h <= latest + 2; h++)
      if (!(await this.validators(h))) out.push(h);
    return out;
  }

  /** Records the set of `height` taken from elsewhere (consensus' state store). */
  async backfill(height: number, validators: Validator[]): Promise<void> {
    const set = validators.map((v) => ({ address: v.address, pubKey: v.pubKey, power: v.votingPower }));
    await this.kv.write([{ type: 'put', key: valsetKey(height), value: this.encodeSet(set) }]);
    this.remember(height, set);
  }

  /** Rolling back to `target` (dev chain): the sets that blocks above it recorded go too. */
  dropOps(target: number, top: number): BatchOp[] {
    const ops: BatchOp[] = [];
    for (let h = target + 1; h <= top; h++) {
      ops.push({ type: 'del', key: valsetKey(h + 2) });
      this.cache.delete(h + 2);
    }
    return ops;
  }

  // -------------------------------------------------------------------------------------------
  // Vote extensions

  /**
   * This validator's attestation: the next deposits its watcher holds (empty without a watcher),
   * after those the block being precommitted mints itself (`blockTxs[0]`), so that the next block
   * can mint the following ones.
   */
  extendVote(blockTxs: Uint8Array[]): Uint8Array {
    let from: bigint | undefined;
    const first = blockTxs[0];
    if (first && isBridgeTx(first)) {
      try {
        from = decodeBridgeTx(first).deposits.at(-1)!.sequence + 1n;
      } catch {
        // A malformed one mints nothing (FinalizeBlock refuses it too).
      }
    }
    const ds = this.deposits?.next(MAX_ATTESTED_DEPOSITS, from) ?? [];
    if (ds.length > 0) this.deposits?.markAttested(ds.at(-1)!.sequence);
    return encodeAttestation(ds);
  }

  /**
   * VerifyVoteExtension: empty, or a well-formed attestation whose first deposit is not before the
   * next to mint after the state the vote's block executes on (`next`; it starts later when that
   * block mints some itself). Anything else is refused, so its precommit does not count.
   */
  verifyVoteExtension(ext: Uint8Array, next: bigint): boolean {
    if (ext.length === 0) return true;
    try {
      const ds = decodeAttestation(ext);
      return ds[0]!.sequence >= next;
    } catch {
      return false;
    }
  }

  // -------------------------------------------------------------------------------------------
  // Proposals

  /**
   * PrepareProposal: the bridge transaction of this block, or null. Nothing is processed while
   * genesis maps no token (deposits then wait instead of being skipped for good).
   */
  async prepare(
    height: number,
    commit: ExtendedCommitInfo | undefined,
    inbound: InboundState,
    timestamp: bigint,
  ): Promise<Uint8Array | null> {
    if (!commit || inbound.token === '' || inbound.paused) return null;
    const next = inbound.lastSequence + 1n;
    const validators = await this.validators(height - 1);
    if (!validators) return null;
    const tx = tallyAttestations(commit, { chainId: this.chainId, height: height - 1, validators, next });
    if (!tx) return null;
    const fit = depositsWithinLimit(tx.deposits, inbound, timestamp);
    if (fit < tx.deposits.length) {
      const first = tx.deposits[fit]!;
      const { window, used } = inflowRoom(inbound, timestamp);
      if (fit === 0 && first.amount > inbound.maxInflow && first.sequence !== this.reportedTooLarge) {
        this.reportedTooLarge = first.sequence;
        this.logger.error(
          {
            sequence: String(first.sequence),
            amount: String(first.amount),
            limit: String(inbound.maxInflow),
          },
          'bridge: a deposit is larger than max_inflow_per_window: it cannot be minted under this genesis, and the deposits after it wait behind it',
        );
      } else if (this.reportedWaiting !== `${window}:${first.sequence}`) {
        this.reportedWaiting = `${window}:${first.sequence}`;
        this.logger.info(
          {
            height,
            waiting: String(first.sequence),
            windowStart: String(window * inbound.windowSeconds),
            inflow: String(used),
            limit: String(inbound.maxInflow),
          },
          'bridge: the inflow limit of this window is reached; the next deposits wait for the next window',
        );
      }
      if (fit === 0) return null;
      tx.deposits = tx.deposits.slice(0, fit);
    }
    this.logger.info(
      {
        height,
        from: String(tx.deposits[0]!.sequence),
        to: String(tx.deposits.at(-1)!.sequence),
        attesters: tx.votes.length,
      },
      'bridge: proposing the mint of attested deposits',
    );
    return encodeBridgeTx(tx);
  }

  /** ProcessProposal: why this block's bridge transaction (block time `timestamp`) must be refused, or null. */
  async check(
    raw: Uint8Array,
    height: number,
    inbound: InboundState,
    timestamp: bigint,
  ): Promise<string | null> {
    if (inbound.token === '')
      return 'genesis maps no source token to BTC (app_state.bridge.btc_token_address): nothing is bridged in';
    if (inbound.paused) return 'bridge-in is paused by the admin';
    const next = inbound.lastSequence + 1n;
    let tx: ReturnType<typeof decodeBridgeTx>;
    try {
      tx = decodeBridgeTx(raw);
    } catch (err) {
      if (err instanceof BridgeTxError) return err.message;
      throw err;
    }
    const validators = await this.validators(height - 1);
    if (!validators) return `no validator set is recorded for height ${height - 1}`;
    return (
      checkBridgeTx(tx, { chainId: this.chainId, height: height - 1, validators, next }) ??
      this.overLimit(tx.deposits, inbound, timestamp)
    );
  }

  /** Why minting `deposits` at `timestamp` would pass the window's inflow limit, or null. */
  private overLimit(deposits: readonly Deposit[], inbound: InboundState, timestamp: bigint): string | null {
    if (depositsWithinLimit(deposits, inbound, timestamp) === deposits.length) return null;
    const { window, used } = inflowRoom(inbound, timestamp);
    const sum = deposits.reduce((a, d) => (mintsDeposit(inbound, d) ? a + d.amount : a), 0n);
    return `minting ${sum} would bring the inflow of this ${inbound.windowSeconds}-second window (from ${window * inbound.windowSeconds}) to ${used + sum}, above the limit ${inbound.maxInflow}`;
  }

  /**
   * FinalizeBlock: mints each deposit of the (committed, hence checked) bridge transaction in order
   * to its recipient when its token is the genesis-mapped one and its amount is within the
   * per-deposit cap; any other token, or an amount above the cap, is skipped with a log and never
   * minted (the over-cap ones are counted in the state). Either way its sequence number is
   * processed, once, so a skipped deposit never holds up the next. Returns the BTC minted.
   */ async apply(
    state: JournaledState,
    raw: Uint8Array,
    height: number,
    timestamp: bigint,
  ): Promise<{ minted: bigint; result: ExecTxResult }> {
    const fail = (log: string): { minted: bigint; result: ExecTxResult } => {
      this.logger.error({ height, reason: log }, 'bridge: the block’s bridge transaction mints nothing');
      return {
        minted: 0n,
        result: {
          code: 1,
          data: new Uint8Array(0),
          log,
          info: '',
          gasWanted: 0n,
          gasUsed: 0n,
          events: [],
          codespace: 'bridge',
        },
      };
    };
    let tx: ReturnType<typeof decodeBridgeTx>;
    try {
      tx = decodeBridgeTx(raw);
    } catch (err) {
      return fail(`bridge: ${(err as Error).message}`);
    }
    const inbound = await readInbound(state);
    if (tx.deposits[0]!.sequence !== inbound.lastSequence + 1n)
      return fail(
        `bridge: deposit ${tx.deposits[0]!.sequence} is not the next to mint (${inbound.lastSequence + 1n})`,
      );
    // ProcessProposal refused these already; a block that still carries one processes nothing, so
    // its deposits wait (never skipped).
    if (inbound.paused) return fail('bridge: bridge-in is paused by the admin');
    const over = this.overLimit(tx.deposits, inbound, timestamp);
    if (over) return fail(`bridge: ${over}`);
    let minted = 0n;
    let overCap: { count: bigint; amount: bigint } | undefined;
    const events: ExecTxResult['events'] = [];
    for (const d of tx.deposits) {
      if (mintsDeposit(inbound, d)) {
        await state.addBalance(toKey(Buffer.from(d.recipient.slice(2), 'hex')), d.amount);
        minted += d.amount;
        events.push({
          type: 'bridge_mint',
          attributes: [
            attr('sequence', d.sequence.toString()),
            attr('recipient', d.recipient),
            attr('amount', d.amount.toString()),
          ],
        });
      } else if (d.token === inbound.token) {
        // Above the cap: processed without a mint (the source contract still holds what was locked).
        overCap = {
          count: (overCap?.count ?? inbound.overCapCount) + 1n,
          amount: (overCap?.amount ?? inbound.overCapAmount) + d.amount,
        };
        this.logger.warn(
          {
            height,
            sequence: String(d.sequence),
            recipient: d.recipient,
            amount: String(d.amount),
            cap: String(inbound.maxDeposit),
          },
          'bridge: deposit above max_deposit_amount; skipped, nothing minted',
        );
        events.push({
          type: 'bridge_skip',
          attributes: [
            attr('sequence', d.sequence.toString()),
            attr('token', d.token),
            attr('reason', 'amount above max_deposit_amount'),
            attr('recipient', d.recipient),
            attr('amount', d.amount.toString()),
          ],
        });
      } else {
        this.logger.warn(
          { height, sequence: String(d.sequence), token: d.token, mapped: inbound.token || 'none' },
          'bridge: deposit of a token that is not mapped to BTC; skipped, nothing minted',
        );
        events.push({
          type: 'bridge_skip',
          attributes: [
            attr('sequence', d.sequence.toString()),
            attr('token', d.token),
            attr('reason', 'token not mapped'),
          ],
        });
      }
    }
    const last = tx.deposits.at(-1)!.sequence;
    const { window, used } = inflowRoom(inbound, timestamp);
    writeInbound(state, {
      lastSequence: last,
      totalIn: inbound.totalIn + minted,
      window,
      windowInflow: used + minted,
      ...(overCap ? { overCap } : {}),
    });
    this.logger.info(
      { height, from: String(tx.deposits[0]!.sequence), to: String(last), minted: minted.toString() },
      'bridge: deposits processed',
    );
    return {
      minted,
      result: {
        code: 0,
        data: new Uint8Array(0),
        log: `bridge: processed deposits ${tx.deposits[0]!.sequence}..${last}, minted ${minted}`,
        info: '',
        gasWanted: 0n,
        gasUsed: 0n,
        events,
        codespace: '',
      },
    };
  }
}
