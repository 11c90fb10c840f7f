// A memory soak of a running node: measures its resident memory idle, drives a mixed load for a while
// (value transfers from several dev accounts, reads, polled filters, WebSocket subscriptions opened and
// dropped, CometBFT and REST calls), then measures again a settle period after the load stopped.
// RSS is read from /proc/<pid>/status (VmRSS: the whole process, worker threads and native memory
// included); the V8 heap of the main thread from the node's Prometheus endpoint when it has one.
// The verdict: the RSS a settle period after the load must be within `maxAfterRatio` of the idle RSS,
// and the least-squares slope of RSS over the second half of the load must stay under `maxSlopeMBPerHour`.
import { readFileSync } from 'node:fs';
import WebSocket from 'ws';
import { type DevAccount, devAccounts, fastSignTx, receivers } from '../../bench/chain.js';
import { hexQty, JsonRpcClient } from '../../bench/rpc.js';

export interface SoakTargets {
  pid: number;
  eth: string;
  ws: string;
  comet: string;
  rest: string;
  /** http://host:port of the Prometheus endpoint, or undefined. */
  metrics?: string;
}

export interface SoakOptions {
  targets: SoakTargets;
  /** Length of the load phase, ms. */
  loadMs: number;
  /** Idle measurement before the load (after a warm-up of the same length), ms. */
  idleMs?: number;
  /** Wait after the load before the "after" figure, ms (the issue's bound: a minute). */
  settleMs?: number;
  sampleEveryMs?: number;
  /** Transfers per second, spread over the senders. */
  txPerSec?: number;
  senders?: number;
  maxAfterRatio?: number;
  maxSlopeMBPerHour?: number;
  log?: (line: string) => void;
}

export interface MemSample {
  /** Seconds since the soak started. */
  t: number;
  phase: 'idle' | 'load' | 'settle';
  rssMB: number;
  /** From the metrics endpoint (main thread's V8 heap), MB; NaN when not exposed. */
  heapUsedMB: number;
  heapTotalMB: number;
  externalMB: number;
  /** RocksDB's memtables, block caches and table readers over the node's databases, MB; NaN when not exposed. */
  rocksMB: number;
  /** Of which memtables, MB. */
  memtablesMB: number;
  /** The memtables by database (the metrics' `db` label), MB. */
  memtablesByDbMB: Record<string, number>;
  /** Each worker thread's V8 heap, used and total (the metrics' `thread_heap_bytes`), MB. */
  threadHeapsMB: Record<string, { used: number; total: number }>;
  /** RSS by kind of mapping (readSmapsMB). */
  mallocMB: number;
  anonMB: number;
}

export interface SoakReport {
  samples: MemSample[];
  idleRssMB: number;
  idleHeapUsedMB: number;
  peakRssMB: number;
  afterRssMB: number;
  afterHeapUsedMB: number;
  /** RSS slope over the second half of the load, MB/hour. */
  slopeMBPerHour: number;
  heapSlopeMBPerHour: number;
  counts: Record<string, number>;
  errors: Record<string, number>;
  failures: string[];
}

const MB = 1e6;

export function readRssMB(pid: number): number {
  const text = readFileSync(`/proc/${pid}/status`, 'utf8');
  const m = /^VmRSS:\s+(\d+) kB/m.exec(text);
  if (!m) throw new Error(`no VmRSS in /proc/${pid}/status`);
  return (Number(m[1]) * 1024) / MB;
}

/**
 * Resident memory by kind of mapping, MB, from /proc/<pid>/smaps. `malloc`: glibc's heaps, the main
 * arena (`[heap]`) and the other arenas (anonymous mappings starting on a 64 MiB boundary, glibc's
 * HEAP_MAX_SIZE: a heuristic), where RocksDB and every other native allocation live; `anon`: the
 * other anonymous mappings, mostly the V8 heaps of the three isolates and large mmapped blocks;
 * `file`: the node binary, shared libraries and mapped files.
 */
export function readSmapsMB(pid: number): { malloc: number; anon: number; file: number } {
  const out = { malloc: 0, anon: 0, file: 0 };
  let kind: keyof typeof out | undefined;
  for (const line of readFileSync(`/proc/${pid}/smaps`, 'utf8').split('\n')) {
    const m = /^([0-9a-f]+)-([0-9a-f]+) \S+ \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (m) {
      const start = BigInt(`0x${m[1]}`);
      const size = BigInt(`0x${m[2]}`) - start;
      const path = m[3]!;
      if (path === '[heap]') kind = 'malloc';
      else if (path === '') kind = start % (64n << 20n) === 0n && size <= 64n << 20n ? 'malloc' : 'anon';
      else if (path.startsWith('[')) kind = 'anon';
      else kind = 'file';
      continue;
    }
    const rss = /^Rss:\s+(\d+) kB/.exec(line);
    if (rss && kind) out[kind] += (Number(rss[1]) * 1024) / MB;
  }
  return out;
}

/**
 * Values of unlabelled Prometheus samples by metric name, plus the node's RocksDB memory summed over
 * its databases as `storage_memory_bytes` (all kinds) and `storage_memory_bytes:<kind>`, and each
 * worker thread's heap as `thread_heap_bytes:<thread>:<kind>`.
 */
export async function readMetrics(url: string): Promise<Map<string, number>> {
  const res = await fetch(`${url}/metrics`, { signal: AbortSignal.timeout(5000) });
  const text = await res.text();
  const out = new Map<string, number>();
  const add = (k: string, v: number) => out.set(k, (out.get(k) ?? 0) + v);
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*) ([0-9.eE+-]+)/.exec(line);
    if (m) out.set(m[1]!, Number(m[2]));
    const st =
      /^[a-zA-Z_:][a-zA-Z0-9_:]*_storage_memory_bytes\{[^}]*kind="([a-z_]+)"[^}]*\} ([0-9.eE+-]+)/.exec(line);
    if (st) {
      add('storage_memory_bytes', Number(st[2]));
      add(`storage_memory_bytes:${st[1]}`, Number(st[2]));
      const db = /db="([a-z_]+)"/.exec(line)?.[1];
      if (db !== undefined && st[1] === 'memtables')
        add(`storage_memory_bytes:memtables:${db}`, Number(st[2]));
    }
    const th =
      /^[a-zA-Z_:][a-zA-Z0-9_:]*_thread_heap_bytes\{thread="([a-z_-]+)",kind="([a-z]+)"\} ([0-9.eE+-]+)/.exec(
        line,
      );
    if (th) out.set(`thread_heap_bytes:${th[1]}:${th[2]}`, Number(th[3]));
  }
  return out;
}

/** Least-squares slope of y over x. */
export function slope(xs: number[], ys: number[]): number {
  const n = xs.length;
  if (n < 2) return 0;
  const mx = xs.reduce((a, b) => a + b, 0) / n;
  const my = ys.reduce((a, b) => a + b, 0) / n;
  let num = 0;
  let den = 0;
  for (let i = 0; i < n; i++) {
    num += (xs[i]! - mx) * (ys[i]! - my);
    den += (xs[i]! - mx) ** 2;
  }
  return den === 0 ? 0 : num / den;
}

const median = (v: number[]) => {
  const s = [...v].sort((a, b) => a - b);
  return s.length === 0 ? Number.NaN : s[Math.floor(s.length / 2)]!;
};
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function runSoak(opts: SoakOptions): Promise<SoakReport> {
  const t = opts.targets;
  const log = opts.log ?? (() => {});
  const idleMs = opts.idleMs ?? 60_000;
  const settleMs = opts.settleMs ?? 60_000;
  const every = opts.sampleEveryMs ?? 10_000;
  const started = Date.now();
  const samples: MemSample[] = [];
  const counts: Record<string, number> = {};
  const errors: Record<string, number> = {};
  const count = (k: string) => {
    counts[k] = (counts[k] ?? 0) + 1;
  };
  const fail = (k: string, err: unknown) => {
    const key = `${k}: ${String((err as Error)?.message ?? err).slice(0, 80)}`;
    errors[key] = (errors[key] ?? 0) + 1;
  };

  let phase: MemSample['phase'] = 'idle';
  const sample = async () => {
    let heapUsed = Number.NaN;
    let heapTotal = Number.NaN;
    let external = Number.NaN;
    let rocks = Number.NaN;
    let memtables = Number.NaN;
    const memtablesByDb: Record<string, number> = {};
    const threadHeaps: Record<string, { used: number; total: number }> = {};
    if (t.metrics) {
      try {
        const m = await readMetrics(t.metrics);
        heapUsed = (m.get('nodejs_heap_size_used_bytes') ?? Number.NaN) / MB;
        heapTotal = (m.get('nodejs_heap_size_total_bytes') ?? Number.NaN) / MB;
        external = (m.get('nodejs_external_memory_bytes') ?? Number.NaN) / MB;
        rocks = (m.get('storage_memory_bytes') ?? Number.NaN) / MB;
        memtables = (m.get('storage_memory_bytes:memtables') ?? Number.NaN) / MB;
        for (const [k, v] of m) {
          if (k.startsWith('storage_memory_bytes:memtables:'))
            memtablesByDb[k.slice('storage_memory_bytes:memtables:'.length)] = v / MB;
          const th = /^thread_heap_bytes:(.+):(used|total)$/.exec(k);
          if (th) {
            threadHeaps[th[1]!] ??= { used: Number.NaN, total: Number.NaN };
            threadHeaps[th[1]!]![th[2] as 'used' | 'total'] = v / MB;
          }
        }
      } catch (err) {
        fail('metrics', err);
      }
    }
    const maps = readSmapsMB(t.pid);
    const s: MemSample = {
      t: Math.round((Date.now() - started) / 1000),
      phase,
      rssMB: readRssMB(t.pid),
      mallocMB: maps.malloc,
      anonMB: maps.anon,
      heapUsedMB: heapUsed,
      heapTotalMB: heapTotal,
      externalMB: external,
      rocksMB: rocks,
      memtablesMB: memtables,
      memtablesByDbMB: memtablesByDb,
      threadHeapsMB: threadHeaps,
    };
    samples.push(s);
    log(
      `[soak] ${String(s.t).padStart(5)} s  ${s.phase.padEnd(6)}  rss ${s.rssMB.toFixed(1).padStart(6)} MB  heap ${s.heapUsedMB.toFixed(1)}/${s.heapTotalMB.toFixed(1)} MB  ext ${s.externalMB.toFixed(1)} MB  rocksdb ${s.rocksMB.toFixed(1)} MB (memtables ${s.memtablesMB.toFixed(1)}: ${Object.entries(
        s.memtablesByDbMB,
      )
        .map(([db, mb]) => `${db} ${mb.toFixed(1)}`)
        .join(', ')})  threads ${Object.entries(s.threadHeapsMB)
        .map(([name, h]) => `${name} ${h.used.toFixed(1)}/${h.total.toFixed(1)}`)
        .join(', ')} MB  malloc ${s.mallocMB.toFixed(1)} MB  other anon ${s.anonMB.toFixed(1)} MB`,
    );
  };
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      await sample();
      const next = every - ((Date.now() - started) % every);
      await sleep(next);
    }
  })();

  // Warm-up, then the idle window.
  await sleep(idleMs);
  const idleFrom = samples.length;
  await sleep(idleMs);
  const idle = samples.slice(idleFrom);

  phase = 'load';
  const loadStart = Date.now();
  const until = loadStart + opts.loadMs;
  const rpc = new JsonRpcClient(t.eth, { maxSockets: 16, timeoutMs: 30_000 });
  const senders = devAccounts(opts.senders ?? 8);
  const to = receivers(64);
  const recentTx: string[] = [];
  const live = () => Date.now() < until;
  const workers: Array<Promise<void>> = [];

  // Transfers: each sender keeps its own nonce; a refused transaction resynchronises it.
  const txPerSec = opts.txPerSec ?? 20;
  const fees = { maxFeePerGas: 100_000_000_000n, maxPriorityFeePerGas: 1_000_000_000n };
  for (const acct of senders) {
    workers.push(
      (async (a: DevAccount) => {
        let nonce = Number(BigInt(await rpc.call<string>('eth_getTransactionCount', [a.address, 'pending'])));
        const key = Buffer.from(a.key.privateKey.slice(2), 'hex');
        const gap = (1000 * senders.length) / txPerSec;
        let i = 0;
        while (live()) {
          const tx = fastSignTx(key, a.address, fees, {
            to: to[(a.index * 7 + i++) % to.length]!,
            value: 1n,
            gasLimit: 21_000n,
            nonce,
          });
          try {
            await rpc.call('eth_sendRawTransaction', [tx.raw]);
            nonce++;
            count('transfer');
            recentTx.push(tx.hash);
            if (recentTx.length > 256) recentTx.shift();
          } catch (err) {
            fail('transfer', err);
            await sleep(1000);
            nonce = Number(BigInt(await rpc.call<string>('eth_getTransactionCount', [a.address, 'pending'])));
          }
          await sleep(gap);
        }
      })(acct).catch((err) => fail('transfer-loop', err)),
    );
  }

  // Reads over JSON-RPC.
  workers.push(
    (async () => {
      let k = 0;
      while (live()) {
        try {
          const head = Number(BigInt(await rpc.call<string>('eth_blockNumber')));
          const from = Math.max(0, head - 4);
          await rpc.batch([
            { method: 'eth_getBalance', params: [senders[k % senders.length]!.address, 'latest'] },
            {
              method: 'eth_call',
              params: [{ to: '0x0000000000000000000000000000000000000002', data: hexQty(k) }, 'latest'],
            },
            { method: 'eth_getLogs', params: [{ fromBlock: hexQty(from), toBlock: hexQty(head) }] },
            { method: 'eth_getBlockByNumber', params: [hexQty(head), k % 2 === 0] },
          ]);
          const h = recentTx[k % Math.max(1, recentTx.length)];
          if (h) await rpc.call('eth_getTransactionReceipt', [h]);
          await rpc.call('eth_estimateGas', [{ from: senders[0]!.address, to: to[0], value: '0x1' }]);
          count('read');
        } catch (err) {
          fail('read', err);
        }
        k++;
        await sleep(50);
      }
    })(),
  );

  // Polled filters: created, polled, and uninstalled, or (one in four) abandoned to expire.
  workers.push(
    (async () => {
      let k = 0;
      while (live()) {
        try {
          const id =
            k % 2 === 0
              ? await rpc.call<string>('eth_newFilter', [{ fromBlock: 'latest' }])
              : await rpc.call<string>('eth_newBlockFilter');
          for (let p = 0; p < 3 && live(); p++) {
            await sleep(700);
            await rpc.call('eth_getFilterChanges', [id]);
          }
          if (k % 4 !== 3) await rpc.call('eth_uninstallFilter', [id]);
          count('filter');
        } catch (err) {
          fail('filter', err);
        }
        k++;
      }
    })(),
  );

  // WebSocket subscriptions: opened, fed for a few seconds, then dropped in one of three ways.
  for (let w = 0; w < 2; w++) {
    workers.push(
      (async () => {
        let k = w;
        while (live()) {
          try {
            await new Promise<void>((resolve, reject) => {
              const ws = new WebSocket(t.ws);
              const timer = setTimeout(() => reject(new Error('ws: no subscription within 10 s')), 10_000);
              let subs: string[] = [];
              ws.on('error', (e) => {
                clearTimeout(timer);
                reject(e);
              });
              ws.on('open', () => {
                ws.send(
                  JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_subscribe', params: ['newHeads'] }),
                );
                ws.send(
                  JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'eth_subscribe', params: ['logs', {}] }),
                );
              });
              ws.on('message', (data) => {
                const msg = JSON.parse(String(data)) as { id?: number; result?: string };
                if ((msg.id === 1 || msg.id === 2) && typeof msg.result === 'string') subs.push(msg.result);
                if (subs.length === 2) {
                  const held = subs;
                  subs = [];
                  clearTimeout(timer);
                  setTimeout(
                    () => {
                      const how = k % 3;
                      if (how === 0) {
                        for (const [i, s] of held.entries())
                          ws.send(
                            JSON.stringify({
                              jsonrpc: '2.0',
                              id: 10 + i,
                              method: 'eth_unsubscribe',
                              params: [s],
                            }),
                          );
                        setTimeout(() => ws.close(), 200);
                      } else if (how === 1) ws.close();
                      else ws.terminate();
                      count(`ws-${['unsubscribe', 'close', 'terminate'][how]}`);
                      resolve();
                    },
                    1000 + (k % 5) * 1000,
                  );
                }
              });
            });
          } catch (err) {
            fail('ws', err);
            await sleep(1000);
          }
          k += 2;
        }
      })(),
    );
  }

  // CometBFT RPC and REST.
  workers.push(
    (async () => {
      let k = 0;
      const get = async (url: string) => {
        const res = await fetch(url, { signal: AbortSignal.timeout(30_000) });
        await res.arrayBuffer();
        if (!res.ok) throw new Error(`${res.status} ${url.replace(/^http:\/\/[^/]+/, '')}`);
      };
      while (live()) {
        try {
          const st = (await (await fetch(`${t.comet}/status`)).json()) as {
            result: { sync_info: { latest_block_height: string } };
          };
          const h = Math.max(1, Number(st.result.sync_info.latest_block_height) - (k % 5));
          await get(`${t.comet}/block?height=${h}`);
          await get(`${t.comet}/tx_search?query=${encodeURIComponent(`"tx.height=${h}"`)}&per_page=5`);
          await get(`${t.rest}/cosmos/base/tendermint/v1beta1/blocks/latest`);
          await get(`${t.rest}/cosmos/bank/v1beta1/balances/${senders[k % senders.length]!.address}`);
          count('comet-rest');
        } catch (err) {
          fail('comet-rest', err);
        }
        k++;
        await sleep(100);
      }
    })(),
  );

  await Promise.all(workers);
  rpc.close();
  const loadEnd = Date.now();
  phase = 'settle';
  log(`[soak] load done: ${JSON.stringify(counts)}`);
  await sleep(settleMs);
  await sample();
  sampling = false;
  await sampler;

  const loadSamples = samples.filter((s) => s.phase === 'load');
  const secondHalf = loadSamples.filter((s) => s.t * 1000 >= (loadStart + loadEnd) / 2 - started);
  const xs = secondHalf.map((s) => s.t / 3600);
  const idleRssMB = median(idle.map((s) => s.rssMB));
  const idleHeapUsedMB = median(idle.map((s) => s.heapUsedMB));
  const after = samples[samples.length - 1]!;
  const report: SoakReport = {
    samples,
    idleRssMB,
    idleHeapUsedMB,
    peakRssMB: Math.max(...samples.map((s) => s.rssMB)),
    afterRssMB: after.rssMB,
    afterHeapUsedMB: after.heapUsedMB,
    slopeMBPerHour: slope(
      xs,
      secondHalf.map((s) => s.rssMB),
    ),
    heapSlopeMBPerHour: slope(
      xs,
      secondHalf.map((s) => s.heapUsedMB),
    ),
    counts,
    errors,
    failures: [],
  };
  const maxRatio = opts.maxAfterRatio ?? 1.2;
  const maxSlope = opts.maxSlopeMBPerHour ?? 20;
  if (report.afterRssMB > idleRssMB * maxRatio)
    report.failures.push(
      `RSS ${settleMs / 1000} s after the load is ${report.afterRssMB.toFixed(1)} MB, more than ${Math.round((maxRatio - 1) * 100)}% over the idle ${idleRssMB.toFixed(1)} MB`,
    );
  if (report.slopeMBPerHour > maxSlope)
    report.failures.push(
      `RSS grew ${report.slopeMBPerHour.toFixed(1)} MB/hour over the second half of the load (bound ${maxSlope} MB/hour)`,
    );
  if ((counts.transfer ?? 0) === 0) report.failures.push('no transfer was accepted: the load did not run');
  return report;
}

/** Each part of the memory after the settle against its idle median, as "malloc +12.3, …". */
function parts(r: SoakReport): string {
  const idle = r.samples.filter((s) => s.phase === 'idle');
  const after = r.samples[r.samples.length - 1];
  if (!after || idle.length === 0) return 'no samples';
  const fields: Array<[string, (s: MemSample) => number]> = [
    ['RSS', (s) => s.rssMB],
    ['malloc', (s) => s.mallocMB],
    ['other anon', (s) => s.anonMB],
    ['main heap total', (s) => s.heapTotalMB],
    ['json-rpc heap total', (s) => s.threadHeapsMB['json-rpc']?.total ?? Number.NaN],
    ['tx-indexer heap total', (s) => s.threadHeapsMB['tx-indexer']?.total ?? Number.NaN],
    ['RocksDB', (s) => s.rocksMB],
  ];
  return fields
    .map(([name, get]) => {
      const d = get(after) - median(idle.map(get));
      return `${name} ${d >= 0 ? '+' : ''}${d.toFixed(1)}`;
    })
    .join(', ');
}

/** The report as a Markdown table and summary lines. */
export function formatSoak(r: SoakReport): string {
  const lines = [
    '| t (s) | phase | RSS (MB) | heap used (MB) | heap total (MB) | external (MB) | RocksDB (MB) | memtables (MB) | malloc (MB) | other anon (MB) |',
    '|------:|-------|---------:|---------------:|----------------:|--------------:|-------------:|---------------:|------------:|----------------:|',
  ];
  for (const s of r.samples)
    lines.push(
      `| ${s.t} | ${s.phase} | ${s.rssMB.toFixed(1)} | ${s.heapUsedMB.toFixed(1)} | ${s.heapTotalMB.toFixed(1)} | ${s.externalMB.toFixed(1)} | ${s.rocksMB.toFixed(1)} | ${s.memtablesMB.toFixed(1)} | ${s.mallocMB.toFixed(1)} | ${s.anonMB.toFixed(1)} |`,
    );
  lines.push(
    '',
    `idle RSS ${r.idleRssMB.toFixed(1)} MB (heap used ${r.idleHeapUsedMB.toFixed(1)} MB); peak ${r.peakRssMB.toFixed(1)} MB; after the settle ${r.afterRssMB.toFixed(1)} MB (${((r.afterRssMB / r.idleRssMB - 1) * 100).toFixed(1)}% over idle; heap used ${r.afterHeapUsedMB.toFixed(1)} MB)`,
    `where the difference is (after the settle - idle, MB): ${parts(r)}`,
    `slope over the second half of the load: RSS ${r.slopeMBPerHour.toFixed(1)} MB/hour, heap used ${r.heapSlopeMBPerHour.toFixed(1)} MB/hour`,
    `operations: ${JSON.stringify(r.counts)}`,
    `errors: ${JSON.stringify(r.errors)}`,
  );
  return lines.join('\n');
}
