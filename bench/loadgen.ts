// The transaction load generator: a worker thread per sender (bench/loadgen-worker.ts) on raw keep-alive
// HTTP with pre-signed transactions, measured as a user sees it: a transaction is done when its receipt
// is in the client's hands; the block inclusion time (the node's newHeads announcement of the block the
// receipt names) is kept beside it. The CPU time of this process (every generator thread) and of the
// node are sampled over the run, so each figure says how much of the machine the generator itself took.
import { Worker } from 'node:worker_threads';
import type { SignedTx } from './chain.js';
import { type CpuSample, cpuPer1k, cpuUse } from './cpu.js';
import type { SenderJob, SenderReport } from './loadgen-worker.js';
import { monoUs } from './profile.js';
import type { HeadFeed } from './rpc.js';
import { type LatencySummary, ratePerSecond, summarize } from './stats.js';

export interface LoadOptions {
  url: string;
  /** eth_sendRawTransaction requests in flight per sender (its connections). */
  inflight: number;
  /** Transactions per sender sent (on the wire or accepted) without a receipt in hand, at most. */
  maxPending: number;
  /** Pause between two receipt polls that brought nothing, ms. */
  pollMs: number;
  /** Sustained: stop sending after this many ms (and count what was sent); 0 = a burst of everything. */
  sendForMs: number;
  /** A sender gives up after this many ms without a receipt (counted from the end of its sending time). */
  timeoutMs: number;
  /** Generator threads; the senders are dealt round-robin over them. */
  threads: number;
  heads?: HeadFeed;
  cpu?: () => CpuSample;
}

export interface LoadResult {
  planned: number;
  /** Submitted (eth_sendRawTransaction called). */
  sent: number;
  refused: number;
  /** Senders that stopped on a refusal (their later nonces could not be mined), and when the first did (ms after the first submit). */
  sendersStopped?: number;
  firstRefusalMs?: number;
  /** eth_getTransactionReceipt calls per receipt in hand, and the share of them that found none yet. */
  receiptCallsPerTx?: number;
  receiptMissShare?: number;
  confirmed: number;
  reverted: number;
  /** Accepted without a receipt in hand at the end. */
  missing: number;
  timedOut: boolean;
  firstError?: string;
  /** First submit to the last receipt in hand, ms. */
  elapsedMs: number;
  /** Receipts (status 1) in hand per second over elapsedMs. */
  txPerSec: number;
  /** Sustained only: receipts in hand during the sending window, per second of it. */
  windowTxPerSec?: number;
  /** First submit to the announcement of the last block holding one, ms (when heads were watched). */
  includedMs?: number;
  includedTxPerSec?: number;
  /** Submit to receipt in hand, ms. */
  receiptMs: LatencySummary;
  /** Submit to the newHeads announcement of the block holding it, ms. */
  inclusionMs?: LatencySummary;
  blocks: number;
  maxTxPerBlock: number;
  /** Monotonic clock (µs) around the run: places it in a CPU profile of the node. */
  fromUs?: number;
  toUs?: number;
  cpu?: {
    nodeMsPerTx: number;
    clientMsPerTx: number;
    /** Cores kept busy by the node and by the generator over the run. */
    nodeCores: number;
    clientCores: number;
    /** CPU ms per 1,000 receipts in hand, by node process, `all` (their sum) and `generator`. */
    per1k?: Record<string, number>;
  };
}

/** Pure accounting of the senders' reports (and the head announcements: height -> absolute ms). */
export function summarizeLoad(
  reports: SenderReport[],
  announced: Map<number, number>,
  sendForMs = 0,
): Omit<LoadResult, 'cpu'> & { firstSubmit: number; lastReceipt: number } {
  let planned = 0;
  let sent = 0;
  let refused = 0;
  let sendersStopped = 0;
  let firstRefusal = Number.POSITIVE_INFINITY;
  let confirmed = 0;
  let reverted = 0;
  let missing = 0;
  let firstSubmit = Number.POSITIVE_INFINITY;
  let lastReceipt = Number.NEGATIVE_INFINITY;
  let lastIncluded = Number.NEGATIVE_INFINITY;
  const receiptLat: number[] = [];
  const inclusionLat: number[] = [];
  const perBlock = new Map<number, number>();
  const heights = [...announced.keys()].sort((a, b) => a - b);
  /** A block's announcement, or the first later one (a feed may skip heights). */
  const announceOf = (h: number): number | undefined => {
    const exact = announced.get(h);
    if (exact !== undefined) return exact;
    const later = heights.find((x) => x >= h);
    return later === undefined ? undefined : announced.get(later);
  };
  for (const r of reports) {
    planned += r.submitAt.length;
    let stopped = false;
    for (let i = 0; i < r.submitAt.length; i++) {
      const s = r.submitAt[i];
      if (Number.isNaN(s)) continue;
      sent++;
      firstSubmit = Math.min(firstSubmit, s);
      const o = r.outcome[i];
      if (o === 3) {
        refused++;
        stopped = true;
        firstRefusal = Math.min(firstRefusal, s);
        continue;
      }
      if (o === 0) {
        missing++;
        continue;
      }
      if (o === 1) confirmed++;
      else reverted++;
      lastReceipt = Math.max(lastReceipt, r.receiptAt[i]);
      receiptLat.push(r.receiptAt[i] - s);
      const b = r.block[i];
      perBlock.set(b, (perBlock.get(b) ?? 0) + 1);
      const at = announceOf(b);
      if (at !== undefined) {
        inclusionLat.push(Math.max(0, at - s));
        lastIncluded = Math.max(lastIncluded, at);
      }
    }
    if (stopped) sendersStopped++;
  }
  const timedOut = reports.some((r) => r.timedOut);
  const receiptCalls = reports.reduce((a, r) => a + (r.receiptCalls ?? 0), 0);
  const receiptMisses = reports.reduce((a, r) => a + (r.receiptMisses ?? 0), 0);
  const elapsedMs =
    Number.isFinite(firstSubmit) && Number.isFinite(lastReceipt) ? lastReceipt - firstSubmit : 0;
  let windowTxPerSec: number | undefined;
  if (sendForMs > 0 && Number.isFinite(firstSubmit)) {
    let inWindow = 0;
    for (const r of reports) {
      for (let i = 0; i < r.receiptAt.length; i++) {
        if (r.outcome[i] === 1 && r.receiptAt[i] <= firstSubmit + sendForMs) inWindow++;
      }
    }
    windowTxPerSec = ratePerSecond(inWindow, sendForMs);
  }
  const includedMs =
    inclusionLat.length > 0 && Number.isFinite(lastIncluded) ? lastIncluded - firstSubmit : undefined;
  return {
    planned,
    sent,
    refused,
    sendersStopped,
    firstRefusalMs: Number.isFinite(firstRefusal) ? firstRefusal - firstSubmit : undefined,
    receiptCallsPerTx: confirmed + reverted > 0 ? receiptCalls / (confirmed + reverted) : undefined,
    receiptMissShare: receiptCalls > 0 ? receiptMisses / receiptCalls : undefined,
    confirmed,
    reverted,
    missing,
    timedOut,
    firstError: reports.find((r) => r.firstError)?.firstError,
    elapsedMs,
    txPerSec: ratePerSecond(confirmed, elapsedMs),
    windowTxPerSec,
    includedMs,
    includedTxPerSec: includedMs === undefined ? undefined : ratePerSecond(confirmed, includedMs),
    receiptMs: summarize(receiptLat),
    inclusionMs: inclusionLat.length > 0 ? summarize(inclusionLat) : undefined,
    blocks: perBlock.size,
    maxTxPerBlock: Math.max(0, ...perBlock.values()),
    firstSubmit,
    lastReceipt,
  };
}

/**
 * A load is complete when nothing was refused, nothing is missing and nothing timed out; a sustained
 * load may leave transactions unsent (it stops sending when its time is up), a burst may not.
 */
export function loadComplete(r: LoadResult, sustained: boolean): boolean {
  return (
    !r.timedOut &&
    r.refused === 0 &&
    r.missing === 0 &&
    r.reverted === 0 &&
    r.confirmed > 0 &&
    (sustained || r.confirmed === r.planned)
  );
}

const now = () => performance.timeOrigin + performance.now();

export class LoadError extends Error {
  readonly code = 'BENCH_LOAD';
}

export async function runLoad(perSender: SignedTx[][], opts: LoadOptions): Promise<LoadResult> {
  const url = new URL(opts.url);
  const announced = new Map<number, number>();
  const off = opts.heads?.onHead((h) => {
    if (!announced.has(h)) announced.set(h, now());
  });
  const threads = Math.max(1, Math.min(opts.threads, perSender.length));
  const jobs = perSender.map(
    (txs): SenderJob => ({
      host: url.hostname,
      port: Number(url.port),
      path: url.pathname || '/',
      raws: txs.map((t) => t.raw),
      hashes: txs.map((t) => t.hash),
      inflight: opts.inflight,
      maxPending: opts.maxPending,
      pollMs: opts.pollMs,
      sendForMs: opts.sendForMs,
      timeoutMs: opts.timeoutMs,
    }),
  );
  const dealt = Array.from({ length: threads }, (_, t) => jobs.filter((_, k) => k % threads === t));
  const workers = dealt.map((group) => {
    return new Worker(new URL('./loadgen-worker.js', import.meta.url), { workerData: group });
  });
  try {
    const messages = workers.map((w) => {
      const ready = new Promise<void>((resolve, reject) => {
        w.once('message', () => resolve());
        w.once('error', reject);
      });
      const done = new Promise<SenderReport[]>((resolve, reject) => {
        w.on('message', (m: { type: string; reps?: SenderReport[]; message?: string }) => {
          if (m.type === 'done' && m.reps) resolve(m.reps);
          if (m.type === 'failed') reject(new LoadError(`sender thread failed: ${m.message}`));
        });
        w.once('error', reject);
        w.once('exit', (code) => reject(new LoadError(`sender thread exited with ${code} before reporting`)));
      });
      return { ready, done };
    });
    await Promise.all(messages.map((m) => m.ready));
    // Every thread opens its connections, then they all start together.
    const startAt = now() + 200 + 10 * workers.length;
    for (const w of workers) w.postMessage({ startAt });
    const wait = startAt - now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    const cpuFrom = opts.cpu?.();
    const fromUs = monoUs();
    const reports = (await Promise.all(messages.map((m) => m.done))).flat();
    const toUs = monoUs();
    const cpuTo = opts.cpu?.();
    const s = summarizeLoad(reports, announced, opts.sendForMs);
    const { firstSubmit: _f, lastReceipt: _l, ...result } = s;
    let cpu: LoadResult['cpu'];
    if (cpuFrom && cpuTo && s.confirmed > 0) {
      const use = cpuUse(cpuFrom, cpuTo, s.confirmed);
      const wall = cpuTo.at - cpuFrom.at;
      if (use && wall > 0) {
        cpu = {
          nodeMsPerTx: use.nodeMsPerTx,
          clientMsPerTx: use.clientMsPerTx,
          nodeCores: (cpuTo.nodeMs - cpuFrom.nodeMs) / wall,
          clientCores: (cpuTo.clientMs - cpuFrom.clientMs) / wall,
          per1k: cpuPer1k(cpuFrom, cpuTo, s.confirmed),
        };
      }
    }
    return { ...result, fromUs, toUs, cpu };
  } finally {
    off?.();
    await Promise.allSettled(workers.map((w) => w.terminate()));
  }
}
