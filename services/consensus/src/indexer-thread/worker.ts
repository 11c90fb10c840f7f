// The indexer thread: owns data/tx_index.db and answers thread.ts's requests with a TxIndexStore.
// Started by thread.ts; never imported elsewhere.
import { getHeapStatistics } from 'node:v8';
import { parentPort, workerData } from 'node:worker_threads';
import { Query, TxIndexStore } from '@noded/rpc';
import { DATABASE_MEMORY } from '@noded/service-shared/src/databases.js';
import { startIdleReclaim, workerIdleReclaimOptions } from '@noded/service-shared/src/idle-reclaim.js';
import { INDEXER_NICE, lowerThisThread, RocksKV } from '@noded/storage';
import type { IndexerReady, IndexerReply, IndexerRequest, IndexerThreadData } from './thread.js';

if (parentPort === null) throw new Error('indexer-thread/worker.js runs only as a worker thread');
const port = parentPort;
const data = workerData as IndexerThreadData;

async function serve(): Promise<void> {
  let kv: RocksKV;
  try {
    kv = await RocksKV.open(data.path, DATABASE_MEMORY.txIndex);
  } catch (err) {
    port.postMessage({ ready: false, message: (err as Error).message } satisfies IndexerReady);
    return;
  }
  // Indexing follows the chain: admission and the next block come first when both want a core.
  // Lowered after the open, so that no thread it starts (RocksDB's pools grow at an open, and a new
  // thread takes its creator's priority) is lowered with it.
  lowerThisThread(INDEXER_NICE);
  const store = new TxIndexStore(kv);
  const inFlight = new Set<Promise<unknown>>();
  let closing = false;

  const answer = async (req: IndexerRequest): Promise<unknown> => {
    switch (req.op) {
      case 'index':
        return store.index(req.block);
      case 'get':
        return store.get(req.hash);
      case 'search':
        return store.search(Query.parse(req.query));
      case 'searchBlocks':
        return store.searchBlocks(Query.parse(req.query));
      case 'indexedHeight':
        return store.indexedHeight();
      case 'rollbackTo':
        return store.rollbackTo(req.height);
      case 'memory':
        return kv.memoryUsage();
      case 'heap': {
        const h = getHeapStatistics();
        return { used: h.used_heap_size, total: h.total_heap_size };
      }
      case 'flushMemtables':
        return kv.flushMemtables(req.minBytes);
      case 'evictBlockCache':
        return kv.evictBlockCache(req.minBytes);
      case 'close':
        closing = true;
        await Promise.allSettled([...inFlight]);
        await kv.close();
        return undefined;
    }
  };

  port.on('message', (req: IndexerRequest) => {
    if (closing) {
      const m: IndexerReply = { id: req.id, ok: false, name: 'Error', message: 'the indexer is closing' };
      port.postMessage(m);
      return;
    }
    const work = answer(req).then(
      (value) => port.postMessage({ id: req.id, ok: true, value } satisfies IndexerReply),
      (err: Error) =>
        port.postMessage({
          id: req.id,
          ok: false,
          name: err.name,
          message: err.message,
        } satisfies IndexerReply),
    );
    if (req.op !== 'close') {
      inFlight.add(work);
      void work.finally(() => inFlight.delete(work));
    }
  });
  port.postMessage({ ready: true } satisfies IndexerReady);
  startIdleReclaim(undefined, workerIdleReclaimOptions);
}

void serve();
