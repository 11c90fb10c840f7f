// The executor's publisher (docs/cluster.md "NATS"): drains the executor's outbox of committed
// heights into the JetStream stream `noded.<chain_id>.blocks` in height order, one message per
// height with Nats-Msg-Id = the height, removing a record only once the stream acknowledged it;
// then announces the head on core NATS `noded.<chain_id>.heads`. NATS being down delays publishing
// (the outbox keeps the heights, written in the same atomic write as the block) and loses nothing.
// It also announces the transactions the mempool admits on core NATS `noded.<chain_id>.txs.pending`
// (hashes batched per turn of the event loop, at most once; none while NATS is away).

import type { Executor } from '@noded/execution';
import {
  blocksStreamName,
  blocksSubject,
  decodeCommitted,
  encodeHead,
  encodePendingTxs,
  headsSubject,
  pendingTxsSubject,
} from '@noded/stream';
import { injectTraceContext, inSpan, type TraceBook, tracingEnabled } from '@noded/telemetry';
import type { EventBus, Hex, Logger } from '@noded/types';
import {
  connect,
  type JetStreamClient,
  type JetStreamManager,
  type NatsConnection,
  nanos,
  headers as natsHeaders,
  RetentionPolicy,
  StorageType,
} from 'nats';

export interface PublisherOptions {
  executor: Executor;
  bus: EventBus;
  chainId: string;
  servers: string[];
  /** The service's NATS login and inbox prefix (natsConnectOptions); none: an open nats-server. */
  login?: { user?: string; pass?: string; inboxPrefix?: string };
  logger: Logger;
  /** Heights read from the outbox per round. */
  batch?: number;
  /** Wait between rounds while NATS is unreachable or refuses (ms). */
  retryMs?: number;
  /** Tracing on: each height's FinalizeBlock span, parent of its publish span (whose context the message carries). */
  blockTraces?: TraceBook;
}

/** Window in which JetStream drops a repeated Nats-Msg-Id; past it the publisher's own check holds. */
const DUPLICATE_WINDOW_MS = 10 * 60_000;

export class BlockPublisher {
  private nc: NatsConnection | undefined;
  private js: JetStreamClient | undefined;
  /** The highest height in the stream (from its last message at connect, then each ack); -1: empty. */
  private published = -1;
  private running: Promise<void> | undefined;
  private again = false;
  private closed = false;
  private timer: NodeJS.Timeout | undefined;
  private readonly unsubscribe: () => void;
  private readonly unsubscribeTxs: () => void;
  private pendingHashes: Uint8Array[] = [];
  /** Admitted hashes kept while NATS is away are dropped past this many (core NATS is at most once). */
  private static readonly MAX_PENDING_HASHES = 10_000;
  private readonly log: Logger;
  private lastError = '';

  constructor(private readonly o: PublisherOptions) {
    this.log = o.logger.child({ module: 'publisher' });
    // Each commit wakes the publisher; a timer retries while NATS is away.
    this.unsubscribe = o.bus.subscribe((ev) => {
      if (ev.kind === 'EthNewHead') this.kick();
    });
    this.unsubscribeTxs = o.executor.onTxAdmitted((_raw, hash) => this.announce(hash));
    this.timer = setInterval(() => this.kick(), o.retryMs ?? 1_000);
    this.timer.unref();
    this.kick();
  }

  /** The highest height the stream acknowledged (-1: none yet). */
  get publishedHeight(): number {
    return this.published;
  }

  kick(): void {
    if (this.closed) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = this.round().finally(() => {
      this.running = undefined;
      if (this.again && !this.closed) {
        this.again = false;
        this.kick();
      }
    });
  }

  private async round(): Promise<void> {
    try {
      await this.ensureConnected();
      await this.drain();
      if (this.lastError !== '') this.log.info({ height: this.published }, 'publishing to NATS again');
      this.lastError = '';
    } catch (err) {
      const msg = (err as Error).message;
      if (msg !== this.lastError) {
        this.log.warn(
          { err: msg, servers: this.o.servers, published: this.published },
          'cannot publish committed heights to NATS; the outbox keeps them and publishing retries',
        );
      }
      this.lastError = msg;
      await this.dropConnection();
    }
  }

  private async ensureConnected(): Promise<void> {
    if (this.nc && !this.nc.isClosed()) return;
    const nc = await connect({
      ...this.o.login,
      servers: this.o.servers,
      name: `noded-executor-${this.o.chainId}`,
      maxReconnectAttempts: -1,
      reconnectTimeWait: 500,
      timeout: 5_000,
    });
    try {
      const jsm = await nc.jetstreamManager({ timeout: 5_000 });
      await this.ensureStream(jsm);
      this.published = await this.lastPublishedHeight(jsm);
      this.nc = nc;
      this.js = nc.jetstream({ timeout: 10_000 });
      this.log.info(
        { servers: this.o.servers, stream: blocksStreamName(this.o.chainId), height: this.published },
        'connected to NATS JetStream',
      );
    } catch (err) {
      await nc.close().catch(() => {});
      throw err;
    }
  }

  private async ensureStream(jsm: JetStreamManager): Promise<void> {
    const name = blocksStreamName(this.o.chainId);
    try {
      await jsm.streams.info(name);
      return;
    } catch (err) {
      if (!/stream not found/i.test((err as Error).message)) throw err;
    }
    await jsm.streams.add({
      name,
      subjects: [blocksSubject(this.o.chainId)],
      retention: RetentionPolicy.Limits,
      storage: StorageType.File,
      duplicate_window: nanos(DUPLICATE_WINDOW_MS),
    });
    this.log.info({ stream: name, subject: blocksSubject(this.o.chainId) }, 'JetStream stream created');
  }

  /** The height of the stream's last message (-1 when empty): never published twice past the window. */
  private async lastPublishedHeight(jsm: JetStreamManager): Promise<number> {
    try {
      const m = await jsm.streams.getMessage(blocksStreamName(this.o.chainId), {
        last_by_subj: blocksSubject(this.o.chainId),
      });
      return decodeCommitted(m.data).height;
    } catch (err) {
      if (/no message found/i.test((err as Error).message)) return -1;
      throw err;
    }
  }

  private async drain(): Promise<void> {
    const js = this.js!;
    const subject = blocksSubject(this.o.chainId);
    for (;;) {
      const entries = await this.o.executor.outboxEntries(this.o.batch ?? 64);
      if (entries.length === 0) return;
      let last = 0;
      for (const e of entries) {
        if (e.height > this.published) {
          if (this.published >= 0 && e.height !== this.published + 1) {
            // A gap would make every replica stop at it: refuse to publish past it.
            throw new Error(`outbox holds height ${e.height} but the stream ends at ${this.published}`);
          }
          const max = this.nc?.info?.max_payload;
          if (max !== undefined && e.record.length > max) {
            // Retried every round (the outbox keeps it) until nats-server allows it: nothing is skipped.
            throw new Error(
              `height ${e.height}'s CommittedHeight is ${e.record.length} bytes, above nats-server's max_payload of ${max} bytes; raise max_payload (up to 64MB) in nats-server's configuration, as scripts/cluster.sh does`,
            );
          }
          const ack = tracingEnabled()
            ? await this.publishTraced(js, subject, e.height, e.record)
            : await js.publish(subject, e.record, { msgID: String(e.height) });
          this.published = e.height;
          if (ack.duplicate) this.log.debug({ height: e.height }, 'height already in the stream');
          const r = decodeCommitted(e.record);
          this.nc!.publish(
            headsSubject(this.o.chainId),
            encodeHead({
              chainId: r.chainId,
              height: r.height,
              blockHash: r.blockHash,
              parentHash: r.parentHash,
              headerRlp: r.headerRlp,
            }),
          );
        }
        last = e.height;
      }
      await this.o.executor.clearOutbox(last);
      if (this.closed) return;
    }
  }

  /**
   * Tracing on: the height's message in a producer span, child of the block's FinalizeBlock span,
   * with its W3C trace context in the message's headers (the state-store's apply is its child).
   */
  private publishTraced(js: JetStreamClient, subject: string, height: number, record: Uint8Array) {
    return inSpan(
      'publish CommittedHeight',
      {
        kind: 'producer',
        parent: this.o.blockTraces?.take(String(height)),
        attributes: {
          'messaging.system': 'nats',
          'messaging.destination.name': subject,
          'noded.height': height,
        },
      },
      async () => {
        const h = natsHeaders();
        injectTraceContext((k, v) => h.set(k, v));
        return js.publish(subject, record, { msgID: String(height), headers: h });
      },
    );
  }

  private async dropConnection(): Promise<void> {
    const nc = this.nc;
    this.nc = undefined;
    this.js = undefined;
    if (nc && !nc.isClosed()) await nc.close().catch(() => {});
  }

  /** Stops: one last round publishes what the outbox holds (if NATS answers), then disconnects. */
  /** Queues an admitted transaction's hash; the batch leaves at the end of this turn. */
  private announce(hash: Hex): void {
    if (this.closed) return;
    if (this.pendingHashes.length === 0) setImmediate(() => this.flushPending());
    if (this.pendingHashes.length < BlockPublisher.MAX_PENDING_HASHES)
      this.pendingHashes.push(Uint8Array.from(Buffer.from(hash.slice(2), 'hex')));
  }

  private flushPending(): void {
    const hashes = this.pendingHashes;
    this.pendingHashes = [];
    const nc = this.nc;
    if (hashes.length === 0 || !nc || nc.isClosed()) return;
    try {
      nc.publish(pendingTxsSubject(this.o.chainId), encodePendingTxs(this.o.chainId, hashes));
    } catch (err) {
      this.log.debug(
        { err: (err as Error).message, count: hashes.length },
        'pending transactions not announced',
      );
    }
  }

  async close(): Promise<void> {
    this.unsubscribe();
    this.unsubscribeTxs();
    if (this.timer) clearInterval(this.timer);
    await this.running;
    if (this.nc && !this.nc.isClosed()) {
      await this.round();
    }
    this.closed = true;
    await this.running;
    if (this.nc && !this.nc.isClosed()) await this.nc.drain().catch(() => {});
    this.nc = undefined;
  }
}
