// eth_getLogs on the JSON-RPC edge: RecentLogs answers from its per-position index alone (no log is
// compared), and the reply is taken from each block's rendered logs in runs (format.ts logsJson).
// Both are checked against the plain way on random blocks and filters: every log compared with
// logMatches, and every log rendered on its own and joined.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { logMatches } from '@noded/rpc/src/eth/filters.js';
import { formatLog, logsJson } from '@noded/rpc/src/eth/format.js';
import { RecentLogs } from '@noded/rpc/src/eth/recent-logs.js';
import type { EthLog, Hex, LogFilter } from '@noded/types';

const word = (n: number): Hex => `0x${n.toString(16).padStart(64, '0')}`;
const ADDRESSES: Hex[] = [`0x${'a1'.repeat(20)}`, `0x${'B2'.repeat(20)}`, `0x${'c3'.repeat(20)}`];
const VALUES: Hex[] = [word(1), word(2), word(3), word(0xabc)];

/** What the JSON-RPC sent before the runs: each log rendered on its own, joined. */
const plain = (logs: readonly EthLog[]) => `[${logs.map((l) => JSON.stringify(formatLog(l))).join(',')}]`;
const bytesOf = (logs: readonly EthLog[]) => {
  const json = logsJson(logs);
  const all = Buffer.concat(json.chunks);
  assert.equal(all.length, json.length, 'length is the chunks’ bytes');
  return all.toString('utf8');
};

function random(seed: number): () => number {
  let s = seed;
  return () => {
    s = (s * 1103515245 + 12345) & 0x7fffffff;
    return s >>> 8;
  };
}

function block(next: () => number, h: number, count: number): EthLog[] {
  return Array.from({ length: count }, (_, i) => ({
    address: ADDRESSES[next() % ADDRESSES.length]!,
    topics: Array.from({ length: next() % 5 }, () => VALUES[next() % VALUES.length]!),
    // Mostly short; some long enough that a run of them passes the size sent without a copy.
    data: `0x${'ab'.repeat(next() % 4 === 0 ? 1500 + (next() % 700) : next() % 40)}` as Hex,
    blockNumber: BigInt(h),
    blockHash: word(0x1000 + h),
    transactionHash: word(0x2000 + i),
    transactionIndex: BigInt(i >> 1),
    logIndex: BigInt(i),
    removed: false,
  }));
}

/** A random criterion value: one of VALUES (sometimes in upper case), or one no log has. */
function value(next: () => number): Hex {
  const v = next() % 6 === 0 ? word(0x99) : VALUES[next() % VALUES.length]!;
  return (next() % 5 === 0 ? `0x${v.slice(2).toUpperCase()}` : v) as Hex;
}

function filter(next: () => number, from: number, to: number): LogFilter {
  const addresses = Array.from({ length: next() % 3 }, () => {
    const a = next() % 7 === 0 ? `0x${'99'.repeat(20)}` : ADDRESSES[next() % ADDRESSES.length]!;
    return (next() % 4 === 0 ? a.toUpperCase().replace('0X', '0x') : a.toLowerCase()) as Hex;
  });
  const topics = Array.from({ length: next() % 6 }, (): Hex | Hex[] | null => {
    const k = next() % 4;
    if (k === 0) return null;
    if (k === 1) return value(next);
    return Array.from({ length: next() % 4 }, () => value(next)); // [] is a wildcard, duplicates allowed
  });
  const f: LogFilter = { fromBlock: BigInt(from), toBlock: BigInt(to), addresses, topics };
  if (next() % 4 === 0) f.limit = 1 + (next() % 30);
  return f;
}

/** The plain answer: every log of the range compared. */
function brute(chain: Map<number, EthLog[]>, f: LogFilter): EthLog[] {
  const lower = (x: Hex) => x.toLowerCase() as Hex;
  const m = {
    addresses: (f.addresses ?? []).map(lower),
    topics: (f.topics ?? []).map((t) =>
      t === null || t === undefined ? null : (Array.isArray(t) ? t : [t]).map(lower),
    ),
  };
  const out: EthLog[] = [];
  for (let h = Number(f.fromBlock); h <= Number(f.toBlock); h++)
    for (const l of chain.get(h) ?? [])
      if (out.length < (f.limit ?? Infinity) && logMatches(l, m)) out.push(l);
  return out;
}

describe('RecentLogs and logsJson against the plain way', () => {
  it('match every random filter as logMatches does, and render byte for byte as the logs one by one', () => {
    const next = random(0x5eed);
    const cache = new RecentLogs({ blocks: 64, logs: 100_000 });
    const chain = new Map<number, EthLog[]>();
    for (let h = 0; h < 40; h++) {
      const logs = block(next, h, h % 9 === 0 ? 0 : next() % 25);
      chain.set(h, logs);
      cache.add(BigInt(h), logs);
    }
    let nonEmpty = 0;
    let views = 0;
    for (let q = 0; q < 600; q++) {
      const from = next() % 40;
      const to = Math.min(39, from + (next() % 20));
      const f = filter(next, from, to);
      const got = cache.query(f);
      assert.ok(got !== undefined);
      const want = brute(chain, f);
      assert.deepEqual(
        got.map((l) => `${l.blockNumber}:${l.logIndex}`),
        want.map((l) => `${l.blockNumber}:${l.logIndex}`),
        JSON.stringify(f, (_, v) => (typeof v === 'bigint' ? Number(v) : v)),
      );
      // The same objects, and the reply taken from the blocks' rendered logs is the plain one.
      assert.ok(got.every((l, i) => l === want[i]));
      assert.equal(bytesOf(got), plain(want));
      if (got.length > 0) nonEmpty++;
      // Some replies sent a long run as a view of its block's rendered logs, not a copy.
      if (logsJson(got).chunks.some((c) => c.length >= 4096)) views++;
    }
    assert.ok(nonEmpty > 150, `filters with logs: ${nonEmpty}`);
    assert.ok(views > 20, `replies with a long run: ${views}`);
  });

  it('renders logs it did not gather, and a list changed after it was gathered, one by one', () => {
    const next = random(7);
    const logs = block(next, 3, 30);
    assert.equal(bytesOf([]), '[]');
    assert.equal(bytesOf(logs), plain(logs));
    assert.equal(bytesOf(logs.slice(3, 4)), plain(logs.slice(3, 4)));
    const cache = new RecentLogs();
    cache.add(3n, logs);
    const got = cache.query({ fromBlock: 3n, toBlock: 3n })!;
    assert.equal(bytesOf(got), plain(logs));
    // Out of order, and a log added: not the runs it was gathered with.
    assert.equal(bytesOf(got.slice().reverse()), plain(logs.slice().reverse()));
    got.push(block(next, 4, 1)[0]!);
    assert.equal(bytesOf(got), plain(got));
  });
});
