// One burst of pre-signed transactions: K senders submit concurrently with eth_sendRawTransaction
// (each in nonce order, at most `window` not yet in a block), a block watcher that on new heads reads
// the new blocks' transaction hashes, and, once every transaction is in a block, a receipt fetcher
// that gets every receipt (eth_getTransactionReceipt, JSON-RPC batches of 100) and checks its status.
// The burst ends when every accepted transaction's receipt has been fetched, or at the deadline.
// Receipts are fetched after the last block, not during the burst, so that the cost of the node's
// receipt lookups (measured on its own: receiptLookupMs) does not slow the block production measured.
//
// A transaction's receipt is available when the node announces the block that holds it (newHeads), so
// latency and the end of the burst are taken at that announcement, not when our own requests come
// back: they queue behind the load on the node under test, and timing them would measure the watcher.
// The time to the fetched receipt is kept too (receiptFetchedMs), as a separate figure.
import type { SignedTx } from './chain.js';
import { type CpuSample, type CpuUse, cpuUse } from './cpu.js';
import { monoUs } from './profile.js';
import type { HeadFeed, JsonRpcClient, RpcCall } from './rpc.js';
import { hexQty, RpcError } from './rpc.js';
import { type LatencySummary, ratePerSecond, summarize } from './stats.js';

export interface BurstResult {
  /** Transactions prepared for the burst. */
  planned: number;
  /** Accepted by eth_sendRawTransaction. */
  accepted: number;
  /** Refused by eth_sendRawTransaction (the sender stops there: later nonces could not be mined). */
  refused: number;
  /** Never submitted: the sender stopped after a refusal, or the deadline came first. */
  unsent: number;
  /** Seen in an announced block. */
  included: number;
  /** Receipts with status 1. */
  confirmed: number;
  /** Receipts with status 0. */
  reverted: number;
  /** Accepted but without a fetched receipt at the deadline. */
  missing: number;
  timedOut: boolean;
  /** First submit to the announcement of the last block holding one of the burst's transactions, ms. */
  elapsedMs: number;
  /** Monotonic clock (µs) at the first submit: places the burst in a CPU profile of the node. */
  startedAtUs: number;
  /** First submit to last submit returned, ms. */
  submitPhaseMs: number;
  /** First submit to the last receipt fetched, ms. */
  receiptsDoneMs: number;
  /** Confirmed transactions per second over elapsedMs. */
  txPerSec: number;
  /** Submit (before eth_sendRawTransaction) to the announcement of the block holding it, ms. */
  latencyMs: LatencySummary;
  /** Submit to the receipt in our hands; receipts are fetched after the last block, so this is mostly wait, ms. */
  receiptFetchedMs: LatencySummary;
  /** Round trip of eth_sendRawTransaction alone, ms. */
  sendRttMs: LatencySummary;
  /** Round trip of one eth_getTransactionReceipt batch divided by its size, ms per receipt. */
  receiptLookupMs: LatencySummary;
  /** Blocks that held at least one of the burst's transactions, and the most one block held. */
  blocks: number;
  maxTxPerBlock: number;
  /** Up to 100 blocks: height, our transactions in it, its announcement in ms after the first submit. */
  blockTimeline: Array<{ height: number; txs: number; atMs: number }>;
  headSource: string;
  firstError?: string;
  /** CPU of the node and of the bench from the first submit to the last block seen (when sampled). */
  cpu?: CpuUse;
}

/** Every planned transaction confirmed with status 1 in time: only such a burst has figures. */
export function burstComplete(b: BurstResult): boolean {
  return !b.timedOut && b.confirmed === b.planned;
}

export interface BurstOptions {
  /** Most transactions of one sender submitted but not yet in a block; 0 = no limit. */
  window: number;
  timeoutMs: number;
  /** Least time between two passes of the block watcher (default 100 ms). */
  watchIntervalMs?: number;
  /** Samples CPU time at the first submit and whenever a later block holds our transactions. */
  cpu?: () => CpuSample;
}

interface Submitted {
  sender: number;
  submittedAt: number;
}

const BLOCKS_PER_BATCH = 50;
const RECEIPTS_PER_BATCH = 100;

export async function runBurst(
  rpc: JsonRpcClient,
  heads: HeadFeed,
  perSender: SignedTx[][],
  opts: BurstOptions,
): Promise<BurstResult> {
  const watchIntervalMs = opts.watchIntervalMs ?? 100;
  const planned = perSender.reduce((n, l) => n + l.length, 0);
  /** Submitted, not yet seen in a block. */
  const pending = new Map<string, Submitted>();
  /** Seen in a block, receipt not fetched yet. */
  const unreceipted = new Map<string, Submitted>();
  const inflight = perSender.map(() => 0);
  const latencies: number[] = [];
  const fetchedLatencies: number[] = [];
  const lookupCosts: number[] = [];
  const sendRtts: number[] = [];
  /** When each height was first announced (performance.now()). */
  const announcedAt = new Map<number, number>();
  const perBlock = new Map<number, number>();
  let accepted = 0;
  let refused = 0;
  let included = 0;
  let confirmed = 0;
  let reverted = 0;
  let firstError: string | undefined;
  let firstSubmitAt = 0;
  let firstSubmitUs = 0;
  let lastSubmitAt = 0;
  let lastIncludedAt = 0;
  let cpuFirst: CpuSample | undefined;
  let cpuLast: CpuSample | undefined;
  let lastReceiptAt = 0;

  const startedAt = performance.now();
  const deadline = startedAt + opts.timeoutMs;
  const expired = () => performance.now() > deadline;
  let closed = false;

  let wakers: Array<() => void> = [];
  const wakeAll = () => {
    const w = wakers;
    wakers = [];
    for (const f of w) f();
  };
  /** Resolves on the next progress (inclusion or receipt), or after `ms`. */
  const progress = (ms: number) =>
    new Promise<void>((resolve) => {
      const t = setTimeout(resolve, ms);
      wakers.push(() => {
        clearTimeout(t);
        resolve();
      });
    });
  const noteError = (err: unknown) => {
    firstError ??= err instanceof Error ? err.message : String(err);
  };

  // ---- receipt fetcher: one batch in flight at a time ----------------------------------------------
  let fetching: Promise<void> | undefined;
  const fetchReceipts = () => {
    fetching ??= fetchLoop().finally(() => {
      fetching = undefined;
    });
    return fetching;
  };
  const fetchLoop = async () => {
    try {
      while (unreceipted.size > 0 && !expired() && !closed) {
        const chunk = [...unreceipted.keys()].slice(0, RECEIPTS_PER_BATCH);
        const calls: RpcCall[] = chunk.map((h) => ({ method: 'eth_getTransactionReceipt', params: [h] }));
        const sent = performance.now();
        const replies = await rpc.batch(calls);
        const now = performance.now();
        lookupCosts.push((now - sent) / chunk.length);
        let got = 0;
        chunk.forEach((hash, j) => {
          const r = replies[j] as { status?: string } | null | RpcError;
          const s = unreceipted.get(hash);
          if (!s) return;
          if (r === null || r instanceof RpcError || typeof r !== 'object') {
            if (r instanceof RpcError) noteError(r);
            return;
          }
          unreceipted.delete(hash);
          got++;
          if (r.status === '0x1') confirmed++;
          else reverted++;
          fetchedLatencies.push(now - s.submittedAt);
          lastReceiptAt = now;
        });
        wakeAll();
        // Announced but no receipt yet: wait a little rather than ask again at once.
        if (got === 0) await progress(watchIntervalMs);
      }
    } catch (err) {
      noteError(err);
    }
  };

  // ---- block watcher ------------------------------------------------------------------------------
  let processed = Number(BigInt(await rpc.call<string>('eth_blockNumber')));
  let known = processed;
  let draining: Promise<void> | undefined;
  let drainTimer: NodeJS.Timeout | undefined;
  let lastDrainAt = Number.NEGATIVE_INFINITY;

  const processRange = async (from: number, to: number) => {
    const calls: RpcCall[] = [];
    for (let n = from; n <= to; n++)
      calls.push({ method: 'eth_getBlockByNumber', params: [hexQty(n), false] });
    const blocks = await rpc.batch(calls);
    const now = performance.now();
    blocks.forEach((b, i) => {
      if (b instanceof RpcError || b === null || typeof b !== 'object') {
        throw b instanceof RpcError ? b : new Error(`block ${from + i} is missing`);
      }
    });
    const includedBefore = included;
    blocks.forEach((b, i) => {
      const height = from + i;
      const at = Math.min(now, announcedAt.get(height) ?? now);
      for (const h of (b as { transactions?: string[] }).transactions ?? []) {
        const s = pending.get(h);
        if (!s) continue;
        pending.delete(h);
        unreceipted.set(h, s);
        inflight[s.sender]--;
        included++;
        latencies.push(at - s.submittedAt);
        lastIncludedAt = Math.max(lastIncludedAt, at);
        perBlock.set(height, (perBlock.get(height) ?? 0) + 1);
      }
    });
    if (included > includedBefore && opts.cpu) cpuLast = opts.cpu();
    wakeAll();
    if (submittersDone && pending.size === 0) void fetchReceipts();
  };

  // At most one pass per watchIntervalMs: under Hardhat's one-block-per-transaction automine it reads
  // many blocks per request instead of adding a request per transaction.
  const scheduleDrain = () => {
    if (drainTimer || draining || closed) return;
    const wait = Math.max(0, lastDrainAt + watchIntervalMs - performance.now());
    drainTimer = setTimeout(() => {
      drainTimer = undefined;
      void drain();
    }, wait);
  };
  const drain = () => {
    if (draining || closed) return;
    draining = drainLoop().finally(() => {
      draining = undefined;
      if (processed < known && !expired()) scheduleDrain();
    });
  };
  const drainLoop = async () => {
    lastDrainAt = performance.now();
    const target = known;
    try {
      while (processed < target && !expired() && !closed) {
        const to = Math.min(target, processed + BLOCKS_PER_BATCH);
        await processRange(processed + 1, to);
        processed = to;
      }
    } catch (err) {
      noteError(err);
    }
  };
  const noteHeight = (h: number) => {
    if (h <= known) return;
    const now = performance.now();
    for (let n = known + 1; n <= h; n++) announcedAt.set(n, now);
    known = h;
  };
  const unsubscribe = heads.onHead((h) => {
    noteHeight(h);
    scheduleDrain();
  });

  // ---- submitters ---------------------------------------------------------------------------------
  let submittersDone = false;
  const submitter = async (s: number) => {
    for (const tx of perSender[s]) {
      while (opts.window > 0 && inflight[s] >= opts.window && !expired()) await progress(250);
      if (expired()) return;
      inflight[s]++;
      const at = performance.now();
      if (firstSubmitAt === 0) {
        firstSubmitAt = at;
        firstSubmitUs = monoUs();
        cpuFirst = opts.cpu?.();
      }
      // Registered before the call: Hardhat mines inside eth_sendRawTransaction, so the head can
      // arrive before the reply does.
      pending.set(tx.hash, { sender: s, submittedAt: at });
      try {
        const hash = await rpc.call<string>('eth_sendRawTransaction', [tx.raw]);
        const back = performance.now();
        sendRtts.push(back - at);
        lastSubmitAt = back;
        accepted++;
        if (hash.toLowerCase() !== tx.hash)
          noteError(new Error(`node returned hash ${hash}, expected ${tx.hash}`));
      } catch (err) {
        if (pending.delete(tx.hash)) inflight[s]--;
        refused++;
        noteError(err);
        return;
      }
    }
  };

  try {
    await Promise.all(perSender.map((_, s) => submitter(s)));
    submittersDone = true;
    // Wait for inclusion and receipts; ask for the head now and then in case an announcement was lost.
    let lastPoll = performance.now();
    while ((pending.size > 0 || unreceipted.size > 0) && !expired()) {
      await progress(100);
      if (performance.now() - lastPoll > 1000) {
        lastPoll = performance.now();
        try {
          noteHeight(Number(BigInt(await rpc.call<string>('eth_blockNumber'))));
          scheduleDrain();
        } catch (err) {
          noteError(err);
        }
      }
      if (pending.size === 0 && unreceipted.size > 0) void fetchReceipts();
    }
  } finally {
    unsubscribe();
    closed = true;
    if (drainTimer) clearTimeout(drainTimer);
    wakeAll();
    // Nothing of this burst may still be talking to the node when the next one starts.
    await Promise.allSettled([draining, fetching]);
  }

  const unsent = planned - accepted - refused;
  const missing = pending.size + unreceipted.size;
  const begin = firstSubmitAt || startedAt;
  const elapsedMs = (lastIncludedAt || performance.now()) - begin;
  let maxTxPerBlock = 0;
  for (const n of perBlock.values()) maxTxPerBlock = Math.max(maxTxPerBlock, n);
  const blockTimeline =
    perBlock.size > 100
      ? []
      : [...perBlock.entries()]
          .sort((a, b) => a[0] - b[0])
          .map(([height, txs]) => ({
            height,
            txs,
            atMs: Math.round((announcedAt.get(height) ?? begin) - begin),
          }));
  return {
    planned,
    accepted,
    refused,
    unsent,
    included,
    confirmed,
    reverted,
    missing,
    timedOut: missing > 0 || (unsent > 0 && expired()),
    elapsedMs,
    startedAtUs: firstSubmitUs,
    submitPhaseMs: (lastSubmitAt || begin) - begin,
    receiptsDoneMs: (lastReceiptAt || performance.now()) - begin,
    txPerSec: ratePerSecond(confirmed, elapsedMs),
    latencyMs: summarize(latencies),
    receiptFetchedMs: summarize(fetchedLatencies),
    sendRttMs: summarize(sendRtts),
    receiptLookupMs: summarize(lookupCosts),
    blocks: perBlock.size,
    maxTxPerBlock,
    blockTimeline,
    headSource: heads.source,
    firstError,
    ...(cpuFirst && cpuLast ? { cpu: cpuUse(cpuFirst, cpuLast, included) } : {}),
  };
}
