// A small deterministic Application for tests and the simulator: a key-value store fed by
// transactions "key=value" (printable ASCII, at most 256 bytes). The app hash chains the previous
// hash, the height and every transaction. Committed state is durable, except commits held in memory
// (CommitOptions.hold) until flushHeld() or the next commit without hold; finalized but uncommitted
// state and held commits are lost by crash(), as a real application loses them.
import { sha256 } from '@noded/crypto';
import type {
  AppInfo,
  Application,
  CheckTxResult,
  CommitOptions,
  ExecTxResult,
  ExtendedCommitInfo,
  ExtendVoteRequest,
  FinalizeBlockRequest,
  FinalizeBlockResponse,
  InitChainRequest,
  InitChainResponse,
  PrepareProposalRequest,
  ProcessProposalRequest,
  ValidatorUpdate,
  VerifyVoteExtensionRequest,
} from '@noded/types';
import type { CrashSwitch } from './crash.js';

const enc = new TextEncoder();
const dec = new TextDecoder();

/** Whether `tx` is a well-formed "key=value" transaction of the test application. */
export function isValidTestTx(tx: Uint8Array): boolean {
  if (tx.length < 3 || tx.length > 256) return false;
  const s = dec.decode(tx);
  if (!/^[\x21-\x7e]+$/.test(s)) return false;
  const eq = s.indexOf('=');
  return eq > 0 && eq < s.length - 1;
}

/**
 * The test application's vote extension for a precommit: "vx:<height>:<first 8 hex of the block
 * hash>:<tag>", where the tag names the extending node. verifyVoteExtension accepts exactly that
 * shape for the height and block of the vote, so an extension made for another block, height or
 * chain is refused.
 */
export function testVoteExtension(height: number, hash: Uint8Array, tag: string): Uint8Array {
  return enc.encode(`vx:${height}:${Buffer.from(hash.subarray(0, 4)).toString('hex')}:${tag}`);
}

export function isValidTestVoteExtension(height: number, hash: Uint8Array, ext: Uint8Array): boolean {
  const prefix = `vx:${height}:${Buffer.from(hash.subarray(0, 4)).toString('hex')}:`;
  const s = dec.decode(ext);
  return s.startsWith(prefix) && /^[\x21-\x7e]{1,32}$/.test(s.slice(prefix.length));
}

interface Snapshot {
  height: number;
  appHash: Uint8Array;
  kv: Map<string, string>;
}

export interface TestAppOptions {
  /** Transactions generated per proposal besides the mempool's (default 2). */
  autoTxs?: number;
  /** Validator updates returned by finalizeBlock at a height. */
  validatorUpdates?: (height: number) => ValidatorUpdate[];
  crash?: CrashSwitch;
  /** Tag of this node's vote extensions (default "node"). */
  extensionTag?: string;
}

export class TestApp implements Application {
  private committed: Snapshot = { height: 0, appHash: new Uint8Array(0), kv: new Map() };
  private history: Snapshot[] = [];
  private pending: Snapshot | null = null;
  /** The last commit written (not held): what a crash keeps. */
  private written: Snapshot = this.committed;
  private mempool: Uint8Array[] = [];
  readonly finalized: number[] = [];
  /** What prepareProposal received as the last height's extended votes, by height proposed. */
  readonly localLastCommits: Array<{ height: number; commit: ExtendedCommitInfo }> = [];
  /** Extensions verifyVoteExtension refused. */
  rejectedExtensions = 0;

  constructor(private readonly opts: TestAppOptions = {}) {}

  /** Adds a transaction to the local mempool (taken by the next own proposal). */
  addTx(tx: Uint8Array | string): void {
    this.mempool.push(typeof tx === 'string' ? enc.encode(tx) : tx);
  }

  get height(): number {
    return this.committed.height;
  }

  get appHash(): Uint8Array {
    return this.committed.appHash;
  }

  value(key: string): string | undefined {
    return this.committed.kv.get(key);
  }

  /** The height of the last commit written, not held (what a crash keeps). */
  get writtenHeight(): number {
    return this.written.height;
  }

  /** Loses finalized-but-uncommitted state and held commits (a process crash). */
  crash(): void {
    this.pending = null;
    while (this.committed !== this.written && this.history.length > 0) this.committed = this.history.pop()!;
    this.committed = this.written;
  }

  /** Test helper: forget the last `n` commits, as an application that lost its latest writes. */
  rollback(n: number): void {
    for (let i = 0; i < n; i++) {
      const prev = this.history.pop();
      if (!prev) break;
      this.committed = prev;
    }
    this.written = this.committed;
    this.pending = null;
  }

  async info(): Promise<AppInfo> {
    return {
      data: 'consensus-test-app',
      version: '1.0.0',
      appVersion: 0n,
      lastBlockHeight: this.committed.height,
      lastBlockAppHash: this.committed.appHash,
    };
  }

  async initChain(req: InitChainRequest): Promise<InitChainResponse> {
    const appHash = sha256(enc.encode(`init:${req.chainId}:${JSON.stringify(req.appState ?? null)}`));
    if (this.committed.height === 0) {
      this.committed = { height: 0, appHash, kv: new Map() };
      this.written = this.committed;
    }
    return { appHash };
  }

  async checkTx(tx: Uint8Array, _kind: 'new' | 'recheck' = 'new'): Promise<CheckTxResult> {
    const ok = isValidTestTx(tx);
    return {
      code: ok ? 0 : 1,
      log: ok ? '' : 'malformed tx',
      gasWanted: 0n,
      codespace: '',
      hash: sha256(tx),
    };
  }

  async extendVote(req: ExtendVoteRequest): Promise<Uint8Array> {
    return testVoteExtension(req.height, req.hash, this.opts.extensionTag ?? 'node');
  }

  async verifyVoteExtension(req: VerifyVoteExtensionRequest): Promise<boolean> {
    const ok = isValidTestVoteExtension(req.height, req.hash, req.voteExtension);
    if (!ok) this.rejectedExtensions++;
    return ok;
  }

  async prepareProposal(req: PrepareProposalRequest): Promise<Uint8Array[]> {
    if (req.localLastCommit) {
      this.localLastCommits.push({ height: req.height, commit: req.localLastCommit });
      if (this.localLastCommits.length > 256) this.localLastCommits.shift();
    }
    const txs: Uint8Array[] = [];
    let bytes = 0;
    const take = (tx: Uint8Array): boolean => {
      if (bytes + tx.length + 4 > req.maxTxBytes) return false;
      bytes += tx.length + 4;
      txs.push(tx);
      return true;
    };
    while (this.mempool.length > 0 && take(this.mempool[0]!)) this.mempool.shift();
    const who = Buffer.from(req.proposerAddress.subarray(0, 4)).toString('hex');
    for (let i = 0; i < (this.opts.autoTxs ?? 2); i++) take(enc.encode(`h${req.height}.${i}=${who}`));
    return txs;
  }

  async processProposal(req: ProcessProposalRequest): Promise<boolean> {
    return req.txs.every(isValidTestTx);
  }

  async finalizeBlock(req: FinalizeBlockRequest): Promise<FinalizeBlockResponse> {
    this.opts.crash?.tick();
    if (req.height !== this.committed.height + 1 && this.committed.height !== 0) {
      throw new Error(
        `test app: finalizeBlock(${req.height}) after committed height ${this.committed.height}`,
      );
    }
    const kv = new Map(this.committed.kv);
    const parts: Uint8Array[] = [this.committed.appHash, enc.encode(`:${req.height}:`)];
    const txResults: ExecTxResult[] = req.txs.map((tx) => {
      const ok = isValidTestTx(tx);
      if (ok) {
        const s = dec.decode(tx);
        const eq = s.indexOf('=');
        kv.set(s.slice(0, eq), s.slice(eq + 1));
      }
      parts.push(sha256(tx));
      return {
        code: ok ? 0 : 1,
        data: ok ? sha256(tx).subarray(0, 4) : new Uint8Array(0),
        log: ok ? '' : 'malformed tx',
        info: '',
        gasWanted: BigInt(tx.length),
        gasUsed: ok ? BigInt(tx.length) : 0n,
        events: ok
          ? [{ type: 'set', attributes: [{ key: 'key', value: dec.decode(tx).split('=')[0]!, index: true }] }]
          : [],
        codespace: '',
      };
    });
    let n = 0;
    for (const p of parts) n += p.length;
    const all = new Uint8Array(n);
    let o = 0;
    for (const p of parts) {
      all.set(p, o);
      o += p.length;
    }
    const appHash = sha256(all);
    this.pending = { height: req.height, appHash, kv };
    this.finalized.push(req.height);
    return {
      events: [{ type: 'block', attributes: [{ key: 'height', value: String(req.height), index: true }] }],
      txResults,
      validatorUpdates: this.opts.validatorUpdates?.(req.height) ?? [],
      consensusParamUpdates: null,
      appHash,
    };
  }

  async commit(opts?: CommitOptions): Promise<{ retainHeight: number }> {
    this.opts.crash?.tick();
    if (!this.pending) throw new Error('test app: commit without a finalized block');
    this.history.push(this.committed);
    if (this.history.length > 64) this.history.shift();
    this.committed = this.pending;
    this.pending = null;
    if (!opts?.hold) this.written = this.committed;
    return { retainHeight: 0 };
  }

  /** Writes the held commits (Application.flushHeld). */
  async flushHeld(): Promise<void> {
    this.written = this.committed;
  }
}
