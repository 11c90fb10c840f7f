// noded.mempool.v1.Mempool/StreamAdmitted: the executor's admissions as a server stream, for the
// consensus service's mempool gossip and blocks on demand (docs/cluster.md "Mempool gossip").
//
// Server side (admissionHandler): each stream subscribes to the mempool's admissions, then (with
// include_pool) sends what the pool holds, then what is admitted, batched per turn of the event loop
// (up to BATCH_BYTES a message, each numbered by `seq`), never more than the bound unacknowledged
// in flight. Memory is bounded per stream by the consumer's acknowledgements, not by the transport: grpc-js and node:http2 accept every write at
// once and buffer it without limit (measured: 270 MB queued for a paused client within 3 s, every
// write's callback already called), so the server counts the bytes of the responses not yet
// acknowledged, and a consumer more than `maxBufferedBytes` behind is cut off with
// RESOURCE_EXHAUSTED (it reconnects with include_pool, so it loses nothing it needs). The consumer
// side (AdmissionStream) acknowledges each response once its listeners ran, and reconnects with
// backoff when the stream ends (the executor restarted).
import * as grpc from '@grpc/grpc-js';
import {
  type AdmittedTx,
  MempoolService,
  type StreamAdmittedRequest,
  type StreamAdmittedResponse,
} from '@noded/proto/src/gen/noded/mempool/v1/mempool.js';
import { activeTraceCarrier, type TraceCarrier } from '@noded/telemetry';
import type { Logger } from '@noded/types';
import { DEFAULT_MAX_MESSAGE_BYTES } from './constants.js';
import { UndecodableRequest } from './lenient.js';

/** A stream's default bound on bytes waiting to be written (NODED_MEMPOOL_STREAM_MAX_BYTES). */
export const DEFAULT_ADMISSION_STREAM_MAX_BYTES = 64 * 1024 * 1024;
/** Transactions per message are batched up to this many bytes (a larger transaction goes alone). */
const BATCH_BYTES = 1024 * 1024;
/** Bytes counted per transaction beyond its raw bytes (hash, framing). */
const TX_OVERHEAD = 40;
/** A trace context's bytes on the wire at most (traceparent is 55; tracestate is bounded by W3C at 512). */
const MAX_TRACE_CONTEXT_BYTES = 1024;

/** A trace context's size as counted against the bounds (its keys and values, plus framing). */
function traceContextBytes(c: TraceCarrier): number {
  let n = 0;
  for (const [k, v] of Object.entries(c)) n += k.length + v.length + 4;
  return n;
}

/** What the server needs of the mempool (the EVM Executor has both). */
export interface AdmissionSource {
  /** Calls `listener` for every admitted transaction; returns the unsubscriber. */
  onTxAdmitted(listener: (raw: Uint8Array, hash: string) => void): () => void;
  /** The pool now, pending first (hashes in PoolTxRecord). */
  pendingPool(): {
    pending: Array<{ raw: Uint8Array; hash: Uint8Array }>;
    queued: Array<{ raw: Uint8Array; hash: Uint8Array }>;
  };
  /**
   * Calls `listener` whenever a dev operation is queued for the next proposal (chain-local's dev
   * controls); returns the unsubscriber. Sent as a message with dev_queued and no transactions.
   */
  onDevQueued?(listener: () => void): () => void;
}

/** Counts of the server's admission streams (the executor's metrics read them). */
export interface AdmissionStreamStats {
  /** Streams open now. */
  open: number;
  /** Streams cut off because their consumer fell more than the bound behind. */
  cutoffs: number;
}

export interface AdmissionServerOptions {
  maxBufferedBytes?: number;
  stats?: AdmissionStreamStats;
}

type AdmitCall = grpc.ServerDuplexStream<unknown, StreamAdmittedResponse>;

const hashBytes = (hex: string): Uint8Array => Buffer.from(hex.startsWith('0x') ? hex.slice(2) : hex, 'hex');

/**
 * The StreamAdmitted handler. Returns it with `closeAll`, which ends every open stream (with
 * UNAVAILABLE: the executor is stopping) so that a graceful server shutdown does not wait on them.
 */
export function admissionHandler(
  src: AdmissionSource,
  logger: Logger,
  opts: AdmissionServerOptions = {},
): { handle: (call: AdmitCall) => void; closeAll: () => void } {
  const max = opts.maxBufferedBytes ?? DEFAULT_ADMISSION_STREAM_MAX_BYTES;
  const stats = opts.stats ?? { open: 0, cutoffs: 0 };
  const open = new Set<() => void>();

  const handle = (call: AdmitCall): void => {
    const at = 'noded.mempool.v1.Mempool/StreamAdmitted';
    let opened = false;
    let ended = false;
    let off = () => {};
    let offDev = () => {};
    /** The pool's transactions still to send (include_pool), then the admissions waiting. */
    let snapshot: AdmittedTx[] = [];
    let queue: AdmittedTx[] = [];
    let queuedBytes = 0;
    let scheduled = false;
    let seq = 0n;
    /** Responses sent and not yet acknowledged: their seq and bytes, oldest first. */
    const unacked: Array<{ seq: bigint; bytes: number }> = [];
    let unackedBytes = 0;

    /** Ends the stream: with `status`, or OK; `gone`: the call is over already (cancelled, failed). */
    const end = (status?: { code: grpc.status; details: string }, gone = false) => {
      if (ended) return;
      ended = true;
      off();
      offDev();
      open.delete(stop);
      if (opened) stats.open--;
      queue = [];
      snapshot = [];
      if (gone) return;
      if (status) call.emit('error', status);
      else call.end();
    };
    const stop = () => end({ code: grpc.status.UNAVAILABLE, details: `${at}: the executor is stopping` });
    const refuse = (details: string) =>
      end({ code: grpc.status.INVALID_ARGUMENT, details: `${at}: ${details}` });

    const write = (txs: AdmittedTx[], pool: boolean, bytes: number, devQueued = false) => {
      seq++;
      unacked.push({ seq, bytes });
      unackedBytes += bytes;
      call.write({ txs, pool, seq, devQueued });
    };
    /** Takes the next message's worth (up to BATCH_BYTES) off the front of `from`. */
    const take = (from: AdmittedTx[]): { txs: AdmittedTx[]; bytes: number } => {
      let n = 0;
      let bytes = 0;
      while (n < from.length) {
        const size = from[n]!.raw.length + TX_OVERHEAD + traceContextBytes(from[n]!.traceContext);
        if (n > 0 && bytes + size > BATCH_BYTES) break;
        bytes += size;
        n++;
      }
      return { txs: from.splice(0, n), bytes };
    };
    /**
     * Sends what waits (the pool first, then admissions) while less than the bound is unacknowledged:
     * what is in flight stays under `max` (plus one message), whatever the pool's size.
     */
    const pump = () => {
      scheduled = false;
      while (!ended && unackedBytes < max && (snapshot.length > 0 || queue.length > 0)) {
        if (snapshot.length > 0) {
          const b = take(snapshot);
          write(b.txs, true, b.bytes);
        } else {
          const b = take(queue);
          queuedBytes -= b.bytes;
          write(b.txs, false, b.bytes);
        }
      }
    };
    const admitted = (raw: Uint8Array, hash: string) => {
      if (ended) return;
      // The mempool calls this inside the span that admitted the transaction (the executor's
      // CheckTx), so its context is the active one: it goes with the transaction to consensus.
      let traceContext = activeTraceCarrier() ?? {};
      let extra = traceContextBytes(traceContext);
      if (extra > MAX_TRACE_CONTEXT_BYTES) {
        traceContext = {};
        extra = 0;
      }
      const size = raw.length + TX_OVERHEAD + extra;
      // Behind: admissions sent and not acknowledged, and those waiting to be sent (the pool's own
      // transactions still to send are the pool's buffers, not copies, and are not counted).
      if (unackedBytes + queuedBytes + size > max) {
        stats.cutoffs++;
        logger.warn(
          { behind: unackedBytes + queuedBytes, max },
          'an admission stream consumer reads too slowly; cutting it off (it reconnects with the pool)',
        );
        end({
          code: grpc.status.RESOURCE_EXHAUSTED,
          details: `${at}: the consumer is over ${max} bytes behind ($NODED_MEMPOOL_STREAM_MAX_BYTES); reconnect with include_pool`,
        });
        return;
      }
      queue.push({ raw, hash: hashBytes(hash), traceContext });
      queuedBytes += size;
      if (!scheduled) {
        scheduled = true;
        setImmediate(pump);
      }
    };

    const start = (includePool: boolean) => {
      opened = true;
      stats.open++;
      open.add(stop);
      // Subscribed before the pool is read: a transaction admitted in between comes twice, never not at all.
      off = src.onTxAdmitted(admitted);
      // A queued dev operation wants a block as an admission does; it carries no transaction.
      offDev =
        src.onDevQueued?.(() => {
          if (!ended) write([], false, TX_OVERHEAD, true);
        }) ?? (() => {});
      // Headers go out now, so the consumer knows it is subscribed before any transaction is admitted.
      call.sendMetadata(new grpc.Metadata());
      if (!includePool) return;
      const { pending, queued } = src.pendingPool();
      snapshot = [...pending, ...queued].map((t) => ({ raw: t.raw, hash: t.hash, traceContext: {} }));
      // An empty pool still gets one message: the consumer learns that the snapshot is complete.
      if (snapshot.length === 0) write([], true, TX_OVERHEAD);
      else pump();
    };
    const acknowledge = (ack: bigint) => {
      if (ack > seq) {
        refuse(`StreamAdmittedRequest.ack: ${ack} is above the last seq sent (${seq})`);
        return;
      }
      while (unacked.length > 0 && unacked[0]!.seq <= ack) unackedBytes -= unacked.shift()!.bytes;
      pump();
    };

    call.on('data', (req: unknown) => {
      if (ended) return;
      if (req instanceof UndecodableRequest) {
        refuse(`the request is not a valid noded.mempool.v1.StreamAdmittedRequest: ${req.reason}`);
        return;
      }
      const r = req as { includePool?: boolean; ack?: bigint };
      if (!opened) {
        if ((r.ack ?? 0n) !== 0n) {
          refuse(`StreamAdmittedRequest.ack: must be 0 in the first message, got ${r.ack}`);
          return;
        }
        start(r.includePool === true);
        return;
      }
      acknowledge(r.ack ?? 0n);
    });
    call.on('end', () => end());
    call.on('cancelled', () => end(undefined, true));
    call.on('error', () => end(undefined, true));
  };

  return {
    handle,
    closeAll: () => {
      for (const stop of [...open]) stop();
    },
  };
}

/** A batch as the consumer gets it: hashes as 0x hex. */
export interface AdmittedBatch {
  /** `trace`: the context of the span that admitted it, when the executor traces and sent one. */
  txs: Array<{ raw: Uint8Array; hash: string; trace?: TraceCarrier }>;
  /** These were in the pool when the stream (re)started. */
  pool: boolean;
  /** The executor queued a dev operation for its next proposal (no transactions in this batch). */
  devQueued: boolean;
}

export interface AdmissionStreamOptions {
  credentials?: grpc.ChannelCredentials;
  logger: Logger;
  /** First and largest pause between attempts (default 200 ms doubling to 5 s). */
  minBackoffMs?: number;
  maxBackoffMs?: number;
}

/**
 * The consumer of StreamAdmitted: calls `onBatch` for each message, and reconnects (with
 * include_pool) with backoff whenever the stream ends, until `stop()`.
 */
export class AdmissionStream {
  private readonly client: grpc.Client;
  private call: grpc.ClientDuplexStream<StreamAdmittedRequest, StreamAdmittedResponse> | undefined;
  private running = false;
  private timer: NodeJS.Timeout | undefined;
  private backoffMs: number;
  private failures = 0;
  private readonly listeners = new Set<(b: AdmittedBatch) => void>();
  /** Times the stream was opened (the first and each reconnection that got a message). */
  connects = 0;

  constructor(
    readonly address: string,
    private readonly opts: AdmissionStreamOptions,
  ) {
    this.client = new grpc.Client(address, opts.credentials ?? grpc.credentials.createInsecure(), {
      'grpc.max_receive_message_length': DEFAULT_MAX_MESSAGE_BYTES,
    });
    this.backoffMs = opts.minBackoffMs ?? 200;
  }

  onBatch(listener: (b: AdmittedBatch) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.open();
  }

  stop(): void {
    this.running = false;
    if (this.timer) clearTimeout(this.timer);
    this.call?.cancel();
    this.call = undefined;
    this.client.close();
  }

  private open(): void {
    if (!this.running) return;
    const def = MempoolService.streamAdmitted;
    const call = this.client.makeBidiStreamRequest(
      def.path,
      def.requestSerialize,
      def.responseDeserialize,
      new grpc.Metadata(),
      {},
    );
    this.call = call;
    call.write({ includePool: true, ack: 0n });
    let got = false;
    let done = false;
    call.on('data', (m: StreamAdmittedResponse) => {
      if (!got) {
        got = true;
        this.connects++;
        this.backoffMs = this.opts.minBackoffMs ?? 200;
        if (this.failures > 0)
          this.opts.logger.info(
            { executor: this.address, attempts: this.failures },
            'executor admission stream open again; gossip resumed',
          );
        this.failures = 0;
      }
      const batch: AdmittedBatch = {
        pool: m.pool,
        devQueued: m.devQueued,
        txs: m.txs.map((t) => {
          const hash = `0x${Buffer.from(t.hash).toString('hex')}`;
          const trace = t.traceContext ?? {};
          // Kept only when small enough to be a trace context (what a peer gets is bounded too).
          return Object.keys(trace).length > 0 && traceContextBytes(trace) <= MAX_TRACE_CONTEXT_BYTES
            ? { raw: t.raw, hash, trace }
            : { raw: t.raw, hash };
        }),
      };
      for (const l of this.listeners) l(batch);
      // Handled: the server may forget it (its bound counts what is not acknowledged).
      if (!done && this.call === call) call.write({ includePool: false, ack: m.seq });
    });
    const ended = (reason: string) => {
      if (done) return;
      done = true;
      if (this.call === call) this.call = undefined;
      if (!this.running) return;
      this.failures++;
      if (this.failures === 1 || this.failures % 50 === 0)
        this.opts.logger.warn(
          { executor: this.address, reason, attempt: this.failures, retryMs: this.backoffMs },
          'executor admission stream ended; reconnecting',
        );
      this.timer = setTimeout(() => this.open(), this.backoffMs);
      this.timer.unref();
      this.backoffMs = Math.min(this.backoffMs * 2, this.opts.maxBackoffMs ?? 5_000);
    };
    call.on('error', (err: grpc.ServiceError) =>
      ended(
        err.code === grpc.status.UNIMPLEMENTED
          ? `the executor does not serve StreamAdmitted (a version before it): no mempool gossip or blocks on demand until it is upgraded (${err.details})`
          : err.details || err.message,
      ),
    );
    call.on('end', () => ended('the executor ended the stream'));
  }
}
