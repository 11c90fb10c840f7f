// Runs the kv transaction indexer (data/tx_index.db) on a thread of its own (worker.ts). Indexing a
// block of a few thousand transactions is 100-200 ms of key building, JSON and a RocksDB batch;
// here the main thread only copies the block's transactions and results into a message, so
// admission and the next block do not wait behind it (docs/benchmarks.md, round 9). The thread owns
// the database; queries travel to it and back.
import { type ResourceLimits, Worker } from 'node:worker_threads';
import {
  Awaiting,
  type IndexedBlock,
  type IndexedTx,
  IndexerQueryError,
  type Query,
  type TxIndexBackend,
} from '@noded/rpc';
import { WORKER_LIMITS, workerFailure } from '@noded/service-shared/src/worker-limits.js';
import type { RocksMemory } from '@noded/storage';

/** workerData of the indexer thread. */
export interface IndexerThreadData {
  /** data/tx_index.db */
  path: string;
}

/** What the thread is asked to do. */
export type IndexerCommand =
  | { op: 'index'; block: IndexedBlock }
  | { op: 'get'; hash: Uint8Array }
  | { op: 'search' | 'searchBlocks'; query: string }
  | { op: 'indexedHeight' }
  | { op: 'rollbackTo'; height: number }
  | { op: 'memory' }
  | { op: 'heap' }
  | { op: 'flushMemtables'; minBytes: number }
  | { op: 'evictBlockCache'; minBytes: number }
  | { op: 'close' };

/** A command as sent; every one is answered with an IndexerReply carrying its id. */
export type IndexerRequest = IndexerCommand & { id: number };

export type IndexerReply =
  | { id: number; ok: true; value: unknown }
  | { id: number; ok: false; name: string; message: string };

/** The thread's first message: the database is open, or why it could not be. */
export type IndexerReady = { ready: true } | { ready: false; message: string };

export interface IndexerThreadDeps {
  path: string;
  /** The thread died: the index can no longer be written and the node must stop. */
  onFatal: (err: Error) => void;
  /** The thread's heap caps; WORKER_LIMITS unless a test sets smaller ones. */
  resourceLimits?: ResourceLimits;
}

export class IndexerThread implements TxIndexBackend {
  private readonly awaiting = new Awaiting();
  private stopping = false;
  private failure: Error | undefined;

  private constructor(
    private readonly worker: Worker,
    /** tx_index.db's path, the thread's database. */
    readonly location: string,
  ) {}

  /** Starts the thread and waits until it has opened the database. */
  static async open(deps: IndexerThreadDeps): Promise<IndexerThread> {
    const data: IndexerThreadData = { path: deps.path };
    const limits = deps.resourceLimits ?? WORKER_LIMITS;
    const worker = new Worker(new URL('./worker.js', import.meta.url), {
      workerData: data,
      name: 'tx-index',
      resourceLimits: limits,
    });
    const ready = await new Promise<IndexerReady>((resolve) => {
      const onMessage = (m: IndexerReady) => done(m);
      const onError = (err: Error) => done({ ready: false, message: err.message });
      const onExit = (code: number) => done({ ready: false, message: `exited with code ${code}` });
      // Only these three: the Worker keeps listeners of its own (removeAllListeners would take them).
      const done = (r: IndexerReady) => {
        worker.off('message', onMessage).off('error', onError).off('exit', onExit);
        resolve(r);
      };
      worker.on('message', onMessage).on('error', onError).on('exit', onExit);
    });
    if (!ready.ready) {
      await worker.terminate();
      throw new Error(`tx_index.db (${deps.path}): the indexer thread could not start: ${ready.message}`);
    }
    const thread = new IndexerThread(worker, deps.path);
    worker.on('message', (m: IndexerReply) => thread.settle(m));
    // An uncaught error is followed by 'exit': the node hears about the first of the two only.
    const fail = (err: Error) => {
      thread.failAll(err);
      if (thread.stopping) return;
      thread.stopping = true;
      deps.onFatal(err);
    };
    worker.on('error', (err) => fail(workerFailure('indexer', err, limits)));
    worker.on('exit', (code) => fail(new Error(`the indexer thread exited with code ${code}`)));
    return thread;
  }

  private settle(m: IndexerReply): void {
    if (m.ok) this.awaiting.resolve(m.id, m.value);
    else
      this.awaiting.reject(
        m.id,
        m.name === 'IndexerQueryError' ? new IndexerQueryError(m.message) : new Error(m.message),
      );
  }

  private failAll(err: Error): void {
    this.failure ??= err;
    this.awaiting.rejectAll(err);
  }

  private request<T>(req: IndexerCommand): Promise<T> {
    if (this.failure) return Promise.reject(this.failure);
    return this.awaiting.request((id) => this.worker.postMessage({ ...req, id })) as Promise<T>;
  }

  index(block: IndexedBlock): Promise<void> {
    return this.request({ op: 'index', block });
  }

  get(hash: Uint8Array): Promise<IndexedTx | undefined> {
    return this.request({ op: 'get', hash });
  }

  search(query: Query): Promise<IndexedTx[]> {
    return this.request({ op: 'search', query: query.source });
  }

  searchBlocks(query: Query): Promise<number[]> {
    return this.request({ op: 'searchBlocks', query: query.source });
  }

  indexedHeight(): Promise<number> {
    return this.request({ op: 'indexedHeight' });
  }

  rollbackTo(height: number): Promise<void> {
    return this.request({ op: 'rollbackTo', height });
  }

  /** RocksDB's memory for tx_index.db (memtables, block cache, table readers), as the thread reads it. */
  memoryUsage(): Promise<RocksMemory> {
    return this.request({ op: 'memory' });
  }

  /** The thread's V8 heap (used_heap_size and total_heap_size), as it reads it itself. */
  heap(): Promise<{ used: number; total: number }> {
    return this.request({ op: 'heap' });
  }

  /**
   * RocksKV.flushMemtables of tx_index.db, in its thread. The node's main thread asks when it goes
   * quiet after a load: the indexer's own thread is too lightly loaded (1.5-9% under the soak's
   * load, by the day) for its quiet to tell a load's end.
   */
  flushMemtables(minBytes?: number): Promise<boolean> {
    return this.request({ op: 'flushMemtables', minBytes: minBytes ?? 1 << 20 });
  }

  /** RocksKV.evictBlockCache of tx_index.db, in its thread, asked as flushMemtables is. Bytes freed. */
  evictBlockCache(minBytes?: number): Promise<number> {
    return this.request({ op: 'evictBlockCache', minBytes: minBytes ?? 1 << 20 });
  }

  /** Waits for the requests in flight, closes the database, stops the thread. */
  async close(): Promise<void> {
    if (this.stopping) {
      await this.worker.terminate();
      return;
    }
    try {
      await this.request({ op: 'close' });
    } finally {
      this.stopping = true;
      await this.worker.terminate();
    }
  }
}
