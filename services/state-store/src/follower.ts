// The state-store's follower (docs/cluster.md "state-store"): reads the executor's JetStream stream
// `noded.<chain_id>.blocks` with an ordered consumer from the message after its own height, and
// applies each height to its ReplicaStore (its own RocksDB) in order. A height already applied is
// skipped; one that does not chain (wrong chain, gap, parent hash) or does not decode stops the
// follower with the reason (onFatal), and nothing of it is written. One whose commit does not
// verify (no light block, signatures, validator set, another block: CommitCheckError) is refused
// without stopping: logged, counted (onRefused), and read again every commitRetryMs, the replica
// staying at the height before it and serving reads there.

import { blocksStreamName, CommitCheckError, decodeCommitted, type ReplicaStore } from '@noded/stream';
import { extractTraceContext, inSpan, type TraceBook, tracingEnabled } from '@noded/telemetry';
import type { Logger } from '@noded/types';
import { connect, DeliverPolicy, type JsMsg, type NatsConnection } from 'nats';

export interface FollowerOptions {
  replica: ReplicaStore;
  servers: string[];
  /** The service's NATS login and inbox prefix (natsConnectOptions); none: an open nats-server. */
  login?: { user?: string; pass?: string; inboxPrefix?: string };
  logger: Logger;
  onFatal: (err: Error) => void;
  /**
   * Runs each apply (the service holds reads back meanwhile and refreshes its Executor view after);
   * default: runs it.
   */
  applyGate?: (apply: () => Promise<boolean>) => Promise<boolean>;
  /** Wait between attempts while NATS or the stream is not there (ms). */
  retryMs?: number;
  /** A height refused for its commit (each time it is read and refused again). */
  onRefused?: (err: CommitCheckError) => void;
  /** Wait before reading a height refused for its commit again (ms); default 5,000. */
  commitRetryMs?: number;
  /** Tracing on: each applied height's span context, for the reads that link to it. */
  appliedTraces?: TraceBook;
}

export class StreamFollower {
  private nc: NatsConnection | undefined;
  private stopped = false;
  private loop: Promise<void> | undefined;
  private readonly log: Logger;
  private stopIter: (() => void) | undefined;
  private wake: (() => void) | undefined;
  private waiters: Array<{ height: number; resolve: () => void }> = [];

  constructor(private readonly o: FollowerOptions) {
    this.log = o.logger.child({ module: 'follower' });
  }

  start(): void {
    this.loop = this.run();
  }

  /** Resolves once the replica is at `height` or above. */
  waitForHeight(height: number): Promise<void> {
    if (this.o.replica.height >= height) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ height, resolve }));
  }

  private async run(): Promise<void> {
    const stream = blocksStreamName(this.o.replica.chainId);
    let lastError = '';
    while (!this.stopped) {
      try {
        this.nc ??= await connect({
          ...this.o.login,
          servers: this.o.servers,
          name: `noded-state-store-${this.o.replica.chainId}`,
          maxReconnectAttempts: -1,
          reconnectTimeWait: 500,
        });
        const js = this.nc.jetstream();
        const jsm = await this.nc.jetstreamManager();
        const info = await jsm.streams.info(stream);
        const startSeq = await this.startSequence(info.state.first_seq, info.state.last_seq, stream, jsm);
        if (startSeq === undefined) {
          await this.pause();
          continue;
        }
        const consumer = await js.consumers.get(stream, {
          deliver_policy: DeliverPolicy.StartSequence,
          opt_start_seq: startSeq,
        });
        const iter = await consumer.consume();
        this.stopIter = () => iter.stop();
        if (lastError !== '') this.log.info({ height: this.o.replica.height }, 'following the stream again');
        lastError = '';
        this.log.info({ stream, fromSeq: startSeq, height: this.o.replica.height }, 'following the stream');
        for await (const m of iter) {
          if (this.stopped) break;
          await this.applyMessage(m);
        }
      } catch (err) {
        if (this.stopped) return;
        if (err instanceof FatalApply) {
          this.stopped = true;
          this.o.onFatal(err.cause);
          return;
        }
        if (err instanceof RefusedCommit) {
          this.stopIter?.();
          this.o.onRefused?.(err.cause);
          const msg = err.message;
          if (msg !== lastError)
            this.log.error(
              { err: msg, code: err.cause.code, height: this.o.replica.height, refused: err.cause.height },
              'height refused: its commit does not verify; the replica stays at its height and reads it again',
            );
          lastError = msg;
          await this.pause(this.o.commitRetryMs ?? 5_000);
          continue;
        }
        const msg = (err as Error).message;
        if (msg !== lastError)
          this.log.warn({ err: msg, height: this.o.replica.height }, 'cannot follow the stream; retrying');
        lastError = msg;
        await this.pause();
      }
    }
  }

  /**
   * The sequence of the height after the replica's: heights are contiguous in the stream from its
   * first message (the publisher refuses gaps), so it is first_seq + (height + 1 - first height).
   */
  private async startSequence(
    firstSeq: number,
    lastSeq: number,
    stream: string,
    jsm: Awaited<ReturnType<NatsConnection['jetstreamManager']>>,
  ): Promise<number | undefined> {
    if (lastSeq < firstSeq || lastSeq === 0) return undefined; // empty yet
    if (this.o.replica.height < 0) return firstSeq;
    const first = decodeCommitted((await jsm.streams.getMessage(stream, { seq: firstSeq })).data);
    const seq = firstSeq + (this.o.replica.height + 1 - first.height);
    if (seq < firstSeq) {
      throw new FatalApply(
        new Error(
          `the stream starts at height ${first.height}, after this replica's height ${this.o.replica.height}: heights ${this.o.replica.height + 1}..${first.height - 1} are no longer retained`,
        ),
      );
    }
    return seq;
  }

  private async applyMessage(m: JsMsg): Promise<void> {
    let applied: boolean;
    try {
      const r = decodeCommitted(m.data);
      const replica = this.o.replica;
      const apply = () => (this.o.applyGate ? this.o.applyGate(() => replica.apply(r)) : replica.apply(r));
      if (!tracingEnabled()) applied = await apply();
      else {
        // The apply is the child of the executor's publish span, whose context the message carries.
        applied = await inSpan(
          'apply CommittedHeight',
          {
            kind: 'consumer',
            parent: extractTraceContext((k) => m.headers?.get(k) || undefined),
            attributes: { 'messaging.system': 'nats', 'noded.height': r.height },
          },
          async (span) => {
            const done = await apply();
            span.setAttribute('noded.applied', done);
            if (done) this.o.appliedTraces?.remember(String(r.height), span.context());
            return done;
          },
        );
      }
    } catch (err) {
      if (err instanceof CommitCheckError) throw new RefusedCommit(err, m.seq);
      throw new FatalApply(new Error(`stream message ${m.seq}: ${(err as Error).message}`));
    }
    if (applied) {
      this.log.debug({ height: this.o.replica.height }, 'height applied');
      const ready = this.waiters.filter((w) => w.height <= this.o.replica.height);
      this.waiters = this.waiters.filter((w) => w.height > this.o.replica.height);
      for (const w of ready) w.resolve();
    }
  }

  /** Waits `ms` (default retryMs), or less when close() is called meanwhile. */
  private pause(ms = this.o.retryMs ?? 1_000): Promise<void> {
    return new Promise((resolve) => {
      const t = setTimeout(() => {
        this.wake = undefined;
        resolve();
      }, ms);
      this.wake = () => {
        clearTimeout(t);
        this.wake = undefined;
        resolve();
      };
    });
  }

  async close(): Promise<void> {
    this.stopped = true;
    this.wake?.();
    this.stopIter?.();
    await this.nc?.close().catch(() => {});
    await this.loop;
  }
}

/** An error that stops the follower for good (the replica would not chain). */
class FatalApply extends Error {
  constructor(override readonly cause: Error) {
    super(cause.message);
  }
}

/** A height whose commit does not verify: refused, read again later (the follower does not stop). */
class RefusedCommit extends Error {
  constructor(
    override readonly cause: CommitCheckError,
    seq: number,
  ) {
    super(`stream message ${seq}: ${cause.message}`);
  }
}
