// Block sync's commit signatures, checked ahead on a worker thread (commit-verify-worker.ts).
//
// A node that catches up receives blocks well before it applies them (up to MAX_AHEAD heights). As
// each block comes in, its commit goes to the thread with the public key of the validator at each
// index of the set this node holds now; the thread answers, for every signature present, the sign
// bytes and whether the signature is valid over them. The engine still runs the whole of
// verifyCommit on the main thread when the block is applied (height, block ID, signature count,
// addresses, +2/3 of the power), and asks its verifier for every signature as before: the verifier
// answers from here only for the exact (public key, message, signature) that the thread checked,
// and checks anything else itself (a validator set that changed, a commit that differs from what was
// sent ahead, a thread that failed). ed25519 verification is a pure function of those three, so the
// acceptance rules and the refusals (`signature 2 is invalid`) are exactly the inline ones; only
// where the work runs changes.
import { MessageChannel, type MessagePort, receiveMessageOnPort, Worker } from 'node:worker_threads';
import type { Commit, Logger } from '@noded/types';
import type { ValidatorSet } from '../validators.js';

/** A commit sent to the thread: the public key expected at each signature's index (null: none). */
export interface VerifyRequest {
  id: number;
  chainId: string;
  commit: Commit;
  pubKeys: Array<Uint8Array | null>;
}

/** The thread's answer: for each signature present, its sign bytes and whether it verified. */
export interface VerifyReply {
  id: number;
  items: Array<{ index: number; msg: Uint8Array; ok: boolean }>;
}

/** A checked signature: the key and message it was checked against, and the outcome. */
interface Verdict {
  pk: Uint8Array;
  msg: Uint8Array;
  ok: boolean;
}

/** Where a height's commit stands: sent to the thread, or answered (`done`, also when the thread failed). */
export type CommitCheck = 'pending' | 'done';

/** Counts since the last take(): signatures answered from the thread's verdicts, and checked inline. */
export interface VerifierCounts {
  ahead: number;
  inline: number;
}

const key = (pk: Uint8Array, sig: Uint8Array): string =>
  Buffer.from(sig.buffer, sig.byteOffset, sig.length).toString('latin1') +
  Buffer.from(pk.buffer, pk.byteOffset, pk.length).toString('latin1');

function same(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && Buffer.from(a.buffer, a.byteOffset, a.length).equals(b);
}

export class CommitVerifier {
  private worker: Worker | null = null;
  /** The current thread's answers (null without a thread). */
  private replies: MessagePort | null = null;
  /** The thread failed or was closed: nothing more is sent; the engine checks inline. */
  private broken = false;
  private nextId = 1;
  /** Requests sent and not answered: id -> height. */
  private readonly inflight = new Map<number, number>();
  /** Per height: the id of its latest request, its state and the verdict keys it added. */
  private readonly heights = new Map<number, { id: number; state: CommitCheck; keys: string[] }>();
  /** Keys and signatures of each request in flight, by index (what a verdict is stored under). */
  private readonly pending = new Map<number, Array<{ pk: Uint8Array; sig: Uint8Array } | undefined>>();
  private readonly verdicts = new Map<string, Verdict>();
  private counts: VerifierCounts = { ahead: 0, inline: 0 };

  constructor(
    private readonly chainId: string,
    /** A height's commit was answered (or will not be: the thread failed). */
    private readonly onDone: (height: number) => void,
    private readonly logger: Logger,
  ) {}

  /**
   * Sends the commit of block `height` to the thread, with the keys of `validators` by index.
   * A commit whose signature count is not the set's size is not sent (the engine refuses it).
   */
  submit(height: number, commit: Commit, validators: ValidatorSet): void {
    if (this.broken || commit.signatures.length !== validators.size) return;
    const worker = this.start();
    if (!worker) return;
    this.forgetHeight(height);
    const pubKeys = commit.signatures.map((s, i) =>
      s.blockIdFlag === 1 ? null : (validators.getByIndex(i)?.pubKey ?? null),
    );
    const id = this.nextId++;
    this.inflight.set(id, height);
    this.pending.set(
      id,
      commit.signatures.map((s, i) => {
        const pk = pubKeys[i];
        return pk ? { pk, sig: s.signature } : undefined;
      }),
    );
    this.heights.set(height, { id, state: 'pending', keys: [] });
    const req: VerifyRequest = { id, chainId: this.chainId, commit, pubKeys };
    worker.postMessage(req);
  }

  /** Where the commit of `height` stands (undefined: not sent; the engine checks it inline). */
  status(height: number): CommitCheck | undefined {
    const h = this.heights.get(height);
    if (h?.state !== 'pending') return h?.state;
    // The thread may have answered already, its reply queued behind the main thread's other work
    // (frames, requests): the replies waiting are taken now rather than on a later turn.
    for (
      let m = this.replies && receiveMessageOnPort(this.replies);
      m;
      m = this.replies && receiveMessageOnPort(this.replies)
    )
      this.onReply(m.message as VerifyReply);
    return h.state;
  }

  /**
   * The thread's verdict on exactly this signature of `pk` over `msg`, undefined when it has none
   * (then the caller verifies).
   */
  lookup(pk: Uint8Array, msg: Uint8Array, sig: Uint8Array): boolean | undefined {
    const v = this.verdicts.get(key(pk, sig));
    if (!v || !same(v.pk, pk) || !same(v.msg, msg)) {
      this.counts.inline++;
      return undefined;
    }
    this.counts.ahead++;
    return v.ok;
  }

  /** Drops the verdicts of heights below `height` (applied, or decided by consensus). */
  forgetBelow(height: number): void {
    for (const h of this.heights.keys()) if (h < height) this.forgetHeight(h);
  }

  /** The counts since the last call. */
  take(): VerifierCounts {
    const c = this.counts;
    this.counts = { ahead: 0, inline: 0 };
    return c;
  }

  /** Whether the thread is running (started by the first submit(), stopped by park() or close()). */
  get running(): boolean {
    return this.worker !== null;
  }

  /**
   * Stops the thread while the node is at the tip (block sync handed over to consensus): it would
   * otherwise sit idle until the node stops. Heights still waiting are answered with no verdicts
   * (the engine checks them inline); the next submit() starts a new thread.
   */
  async park(): Promise<void> {
    const w = this.worker;
    if (!w || this.broken) return;
    this.worker = null;
    this.closeReplies();
    this.release();
    await w.terminate();
  }

  async close(): Promise<void> {
    this.broken = true;
    const w = this.worker;
    this.worker = null;
    this.closeReplies();
    this.release();
    if (w) await w.terminate();
  }

  private closeReplies(): void {
    this.replies?.close();
    this.replies = null;
  }

  private forgetHeight(height: number): void {
    const h = this.heights.get(height);
    if (!h) return;
    for (const k of h.keys) this.verdicts.delete(k);
    this.heights.delete(height);
  }

  private start(): Worker | null {
    if (this.worker) return this.worker;
    try {
      // Answers come on a port of their own, so that status() can take those waiting synchronously.
      const { port1, port2 } = new MessageChannel();
      const w = new Worker(new URL('./commit-verify-worker.js', import.meta.url), {
        name: 'commit-verify',
        workerData: { replies: port2 },
        transferList: [port2],
      });
      // The node's lifetime is not the thread's business: it never holds the process open.
      w.unref();
      // Nor does its port: unref() after on('message'), which refs the port again.
      port1.on('message', (r: VerifyReply) => {
        if (this.worker === w) this.onReply(r);
      });
      port1.unref();
      this.replies = port1;
      w.on('error', (err) => {
        if (this.worker === w) this.fail(err.message);
      });
      w.on('exit', (code) => {
        // A thread parked (or replaced since) exits as asked; only the current one failing counts.
        if (!this.broken && this.worker === w) this.fail(`exited with code ${code}`);
      });
      this.worker = w;
      return w;
    } catch (err) {
      this.fail((err as Error).message);
      return null;
    }
  }

  private onReply(r: VerifyReply): void {
    const height = this.inflight.get(r.id);
    this.inflight.delete(r.id);
    if (height === undefined) return;
    const h = this.heights.get(height);
    // Superseded by a later request for the same height (another peer's block), or forgotten.
    const sent = this.pending.get(r.id);
    this.pending.delete(r.id);
    if (!h || h.id !== r.id || !sent) return;
    for (const it of r.items) {
      const entry = sent[it.index];
      if (!entry) continue;
      const k = key(entry.pk, entry.sig);
      this.verdicts.set(k, { pk: entry.pk, msg: it.msg, ok: it.ok });
      h.keys.push(k);
    }
    h.state = 'done';
    this.onDone(height);
  }

  private fail(why: string): void {
    if (this.broken) return;
    this.broken = true;
    this.worker = null;
    this.closeReplies();
    this.logger.warn({ err: why }, 'block sync: the commit verification thread failed; verifying inline');
    this.release();
  }

  /** Every height waiting for the thread is answered with no verdicts: the engine checks them inline. */
  private release(): void {
    const waiting: number[] = [];
    for (const [height, h] of this.heights)
      if (h.state === 'pending') {
        h.state = 'done';
        waiting.push(height);
      }
    this.inflight.clear();
    this.pending.clear();
    for (const height of waiting) this.onDone(height);
  }
}
