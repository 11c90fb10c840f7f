// eth_getLogs answered on the JSON-RPC edge from the logs of recent blocks (libs/rpc/src/eth/recent-logs.ts):
// the real executor on RocksDB on disk behind an EthEdgeHost, the server over an EthEdgeClient on the
// other end of a MessageChannel (as between the node's two threads). Every answer the edge gives from
// what it holds must be the executor's own answer; heights it never saw a head for are filled from the
// executor; a rewind drops what it held above the rewound height.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { MessageChannel } from 'node:worker_threads';
import { Executor } from '@noded/execution';
import { formatLog } from '@noded/rpc/src/eth/format.js';
import { defaultEthRpcOptions, EthEdgeClient, EthEdgeHost, EthRpcServer } from '@noded/rpc/src/eth/index.js';
import { RecentLogs } from '@noded/rpc/src/eth/recent-logs.js';
import { RocksKV } from '@noded/storage';
import { type EthLog, EventBus, type Hex, type LogFilter, silentLogger } from '@noded/types';
import { Interface } from 'ethers';
import { WebSocket } from 'ws';
import { addr, GWEI, key, produceBlock, signTx, type TestNode } from '../execution/helpers.js';
import { E1, E2, hex, openEmitterChain, PAIR, word } from './emitter.js';
import { call, rpc, sleep } from './helpers.js';

const [A, B, C, D, E] = [word(0xa), word(0xb), word(0xc), word(0xd), word(0xe)];
const LOGS_CAP = 150;

describe('eth_getLogs answered on the JSON-RPC edge from recent blocks', { timeout: 120_000 }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'noded-edge-logs-'));
  let kv: RocksKV;
  let n: TestNode;
  let host: EthEdgeHost;
  let channel: MessageChannel;
  let url: string;
  let wsUrl: string;
  let bus: EventBus;
  /** Filters the executor was asked for through the host (the edge's misses and fills). */
  const asked: LogFilter[] = [];
  /** The executor's getLogs itself, not counted in `asked`. */
  let executorGetLogs: (filter: LogFilter) => ReturnType<Executor['getLogs']>;
  const iface = new Interface(['function emitPairs(bytes32[] as_, bytes32[] bs, uint256 seq)']);
  const keys = [key(1), key(2), key(3)];
  const nonces = [0n, 0n, 0n];
  let seed = 0x10c5;
  const next = () => {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    return seed >>> 12;
  };

  /** One block of six transactions emitting Pair(a, b) from a small alphabet, some plain transfers. */
  async function randomBlock(): Promise<void> {
    const values = [A, B, C, D, E];
    const raws: Uint8Array[] = [];
    for (let t = 0; t < 6; t++) {
      const who = t % 3;
      if (next() % 5 === 0) {
        raws.push(
          signTx(keys[who]!, {
            nonce: nonces[who]!++,
            to: addr(keys[(who + 1) % 3]!),
            value: 1n,
            data: '0x',
            gas: 300_000n,
            maxFee: 10n * GWEI,
            tip: GWEI,
          }),
        );
        continue;
      }
      const pairs = Array.from({ length: 1 + (next() % 3) }, () => [
        values[next() % 5]!,
        values[next() % 5]!,
      ]);
      const data = iface.encodeFunctionData('emitPairs', [
        pairs.map((p) => p[0]),
        pairs.map((p) => p[1]),
        next(),
      ]) as Hex;
      raws.push(
        signTx(keys[who]!, {
          nonce: nonces[who]!++,
          to: next() % 2 === 0 ? E1 : E2,
          value: 0n,
          data,
          gas: 300_000n,
          maxFee: 10n * GWEI,
          tip: GWEI,
        }),
      );
    }
    const res = await produceBlock(n, raws);
    for (const r of res.txResults) assert.equal(r.code, 0, r.log);
  }

  /** Waits until the edge shows the executor's latest height. */
  async function edgeAtLatest(): Promise<void> {
    const want = n.ex.latestHeight();
    for (let i = 0; i < 200 && BigInt(await call<Hex>(url, 'eth_blockNumber')) < want; i++) await sleep(5);
    assert.equal(BigInt(await call<Hex>(url, 'eth_blockNumber')), want);
  }

  /** The executor's own answer, as the JSON-RPC renders it. */
  async function direct(filter: Record<string, unknown>, from: bigint, to: bigint): Promise<unknown[]> {
    return JSON.parse(await directText(filter, from, to));
  }

  /** The executor's own answer as text: each log rendered on its own, joined (the reply before the edge's runs). */
  async function directText(filter: Record<string, unknown>, from: bigint, to: bigint): Promise<string> {
    const topics = (filter['topics'] as Array<Hex | Hex[] | null> | undefined) ?? [];
    const address = filter['address'];
    const addresses = address === undefined ? [] : Array.isArray(address) ? address : [address];
    const logs = await executorGetLogs({ fromBlock: from, toBlock: to, addresses, topics });
    return `[${logs.map((l) => JSON.stringify(formatLog(l))).join(',')}]`;
  }

  /** The reply's bytes as sent, checked against its content-length. */
  async function rawPost(body: string): Promise<string> {
    const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    const bytes = Buffer.from(await res.arrayBuffer());
    assert.equal(Number(res.headers.get('content-length')), bytes.length, 'content-length');
    return bytes.toString('utf8');
  }

  /** eth_getLogs over HTTP with `id`, as the bytes sent. */
  function rawGetLogs(filter: Record<string, unknown>, id: unknown = 1): Promise<string> {
    return rawPost(JSON.stringify({ jsonrpc: '2.0', id, method: 'eth_getLogs', params: [filter] }));
  }

  /** One request over a fresh WebSocket; the reply's text. */
  async function wsRequest(body: string): Promise<string> {
    const ws = new WebSocket(wsUrl);
    await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
    const reply = new Promise<string>((resolve) =>
      ws.once('message', (d, binary) => {
        assert.equal(binary, false, 'a text frame');
        resolve(String(d));
      }),
    );
    ws.send(body);
    const text = await reply;
    ws.close();
    return text;
  }

  before(async () => {
    const chain = await openEmitterChain(dir, keys);
    n = chain;
    kv = chain.kv;
    bus = n.bus;
    const { ex } = n;
    // Three blocks before the edge starts: it never sees their heads.
    for (let i = 0; i < 3; i++) await randomBlock();
    const getLogs = ex.getLogs.bind(ex);
    executorGetLogs = getLogs;
    ex.getLogs = (filter: LogFilter) => {
      asked.push(filter);
      return getLogs(filter);
    };
    channel = new MessageChannel();
    host = new EthEdgeHost({ channel: channel.port1, chain: ex, bus, logger: silentLogger, headLogs: true });
    const edge = new EthEdgeClient(channel.port2, host.init());
    const server = new EthRpcServer({
      chain: edge.chain,
      bus: edge.bus,
      logger: silentLogger,
      options: { ...defaultEthRpcOptions, logsCap: LOGS_CAP },
      clientVersion: 'noded/test',
      devAccounts: null,
      peerCount: () => 0,
      syncing: () => false,
    });
    edge.serve(server);
    url = `http://127.0.0.1:${await host.listenHttp('127.0.0.1', 0)}`;
    wsUrl = `ws://127.0.0.1:${await host.listenWs('127.0.0.1', 0)}`;
    for (let i = 0; i < 20; i++) await randomBlock();
    await edgeAtLatest();
  });

  after(async () => {
    await host?.close();
    channel?.port1.close();
    channel?.port2.close();
    await n?.ex.close();
    await kv?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("fills the heights it never saw, then answers every filter itself with the executor's answer", async () => {
    const latest = n.ex.latestHeight();
    const range = { fromBlock: '0x0', toBlock: 'latest' };
    // The first query covers heights 0-3, which the edge has no heads for: asked of the executor,
    // and those heights are filled (one query with no criteria) for the next one.
    const first = await call<unknown[]>(url, 'eth_getLogs', [
      { ...range, address: E1, topics: [PAIR, A, D] },
    ]);
    assert.deepEqual(first, await direct({ address: E1, topics: [PAIR, A, D] }, 0n, latest));
    for (let i = 0; i < 100 && asked.length < 2; i++) await sleep(5);
    assert.equal(asked.length, 2, 'the query, then the fill');
    const fill = asked[1]!;
    assert.deepEqual([fill.fromBlock, fill.toBlock, fill.addresses, fill.topics], [0n, 3n, [], []]);
    await sleep(20);
    const cases: Array<Record<string, unknown>> = [
      { address: E1, topics: [PAIR, A, D] },
      { topics: [PAIR, A, D] },
      { address: E1, topics: [PAIR, null, [C, E]] },
      { address: [E2], topics: [null, B] },
      { topics: [null, [A, B], [A, B]] },
      { topics: [PAIR, E, E] },
      { address: E2, topics: [[PAIR], null, null] },
      { address: `0x${'99'.repeat(20)}` },
      { topics: [null, null, null, A] }, // more positions than the logs have: none
      { topics: [word(0x77)] },
    ];
    const before = asked.length;
    let nonEmpty = 0;
    for (const filter of cases) {
      const got = await call<unknown[]>(url, 'eth_getLogs', [{ ...range, ...filter }]);
      assert.deepEqual(got, await direct(filter, 0n, latest), JSON.stringify(filter));
      if (got.length > 0) nonEmpty++;
      // A part of the range, and one block by its hash.
      const part = { fromBlock: hex(2), toBlock: hex(9), ...filter };
      assert.deepEqual(
        await call(url, 'eth_getLogs', [part]),
        await direct(filter, 2n, 9n),
        `part ${JSON.stringify(filter)}`,
      );
    }
    assert.ok(nonEmpty >= 6, `filters with logs: ${nonEmpty}`);
    const b5 = await n.ex.getBlockByNumber(5n);
    assert.deepEqual(
      await call(url, 'eth_getLogs', [{ blockHash: b5!.hash, topics: [PAIR] }]),
      await direct({ topics: [PAIR] }, 5n, 5n),
    );
    assert.equal(asked.length, before, 'every one answered on the edge');
    // The logs cap holds as on the executor: more than LOGS_CAP logs is an error.
    const all = await direct({}, 0n, latest);
    assert.ok(all.length > LOGS_CAP, `logs in the chain: ${all.length}`);
    const over = await rpc(url, 'eth_getLogs', [range]);
    assert.equal(over.error?.code, -32005);
    assert.match(over.error?.message ?? '', new RegExp(`more than ${LOGS_CAP} results`));
    assert.equal(asked.length, before);
  });

  it("replies byte for byte as each of the executor's logs rendered and joined, over HTTP, in a batch and over WebSocket", async () => {
    const latest = n.ex.latestHeight();
    const before = asked.length;
    const cases: Array<Record<string, unknown>> = [
      {},
      { address: E1, topics: [PAIR, A, D] },
      {
        address: [E1, E2],
        topics: [
          [PAIR, word(0x77)],
          [A, A, B],
        ],
      },
      { topics: [null, null, E] },
      { topics: [null, null, null] },
      { topics: [PAIR, E, E] },
      { address: `0x${'99'.repeat(20)}` },
    ];
    const envelope = (id: string, result: string) => `{"jsonrpc":"2.0","id":${id},"result":${result}}`;
    const chainId = await call<Hex>(url, 'eth_chainId');
    for (const filter of cases) {
      const all = { fromBlock: '0x0', toBlock: 'latest', ...filter };
      const want = await directText(filter, 0n, latest);
      // Over the cap the whole range is an error (tested above); its part is not.
      if ((JSON.parse(want) as unknown[]).length <= LOGS_CAP)
        assert.equal(await rawGetLogs(all), envelope('1', want), JSON.stringify(filter));
      const part = { fromBlock: hex(4), toBlock: hex(6), ...filter };
      const wantPart = await directText(filter, 4n, 6n);
      // An id of any JSON kind is written as JSON.stringify writes it (here with non-ASCII text).
      assert.equal(
        await rawGetLogs(part, 'ü-7'),
        envelope('"ü-7"', wantPart),
        `part ${JSON.stringify(filter)}`,
      );
      const b5 = await n.ex.getBlockByNumber(5n);
      assert.equal(
        await rawGetLogs({ blockHash: b5!.hash, ...filter }, null),
        envelope('null', await directText(filter, 5n, 5n)),
      );
      // In a batch, and over WebSocket, the same text.
      const batch = JSON.stringify([
        { jsonrpc: '2.0', id: 7, method: 'eth_getLogs', params: [part] },
        { jsonrpc: '2.0', id: 8, method: 'eth_chainId', params: [] },
      ]);
      assert.equal(await rawPost(batch), `[${envelope('7', wantPart)},${envelope('8', `"${chainId}"`)}]`);
      const ws = JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'eth_getLogs', params: [part] });
      assert.equal(await wsRequest(ws), envelope('9', wantPart));
    }
    assert.equal(asked.length, before, 'every one answered on the edge');
    // A range past the latest height is no logs.
    assert.equal(
      await rawGetLogs({ fromBlock: hex(Number(latest) + 5), toBlock: hex(Number(latest) + 9) }),
      envelope('1', '[]'),
    );
  });

  it('takes new blocks from their heads, and forgets the heights above a rewind', async () => {
    await randomBlock();
    await edgeAtLatest();
    const latest = n.ex.latestHeight();
    const before = asked.length;
    const filter = { topics: [PAIR, null, [A, D]] };
    const got = await call<unknown[]>(url, 'eth_getLogs', [
      { fromBlock: hex(Number(latest) - 5), ...filter },
    ]);
    assert.deepEqual(got, await direct(filter, latest - 5n, latest));
    assert.equal(asked.length, before, 'the new block answered from its head');
    // A rewind below the newest block: its logs are no longer answered by the edge.
    bus.publish({ kind: 'ChainRewound', height: Number(latest) - 1 });
    await sleep(50);
    // Answered by the executor (each log rendered on its own), byte for byte as before.
    assert.equal(
      await rawGetLogs({ fromBlock: hex(Number(latest) - 5), ...filter }),
      `{"jsonrpc":"2.0","id":1,"result":${await directText(filter, latest - 5n, latest)}}`,
    );
    for (let i = 0; i < 100 && asked.length < before + 2; i++) await sleep(5);
    assert.equal(asked.length, before + 2, 'asked of the executor after the rewind, and the height filled');
    assert.equal(asked[before]!.topics?.length, 3);
    assert.deepEqual([asked[before + 1]!.fromBlock, asked[before + 1]!.toBlock], [latest, latest]);
  });
});

describe('RecentLogs limits', () => {
  const log = (h: number, i: number): EthLog => ({
    address: E1,
    topics: [PAIR, word(i % 3)],
    data: '0x',
    blockNumber: BigInt(h),
    blockHash: word(h),
    transactionHash: word(1000 + i),
    transactionIndex: BigInt(i),
    logIndex: BigInt(i),
    removed: false,
  });
  const block = (h: number, count: number) => Array.from({ length: count }, (_, i) => log(h, i));

  it('keeps the newest `blocks` heights and at most `logs` logs, and never fills below what it let go', () => {
    const cache = new RecentLogs({ blocks: 4, logs: 10 });
    for (let h = 1; h <= 6; h++) cache.add(BigInt(h), block(h, 2));
    assert.equal(cache.heights, 4, 'heights 3-6');
    assert.equal(cache.query({ fromBlock: 2n, toBlock: 6n }), undefined, 'height 2 was let go');
    assert.equal(cache.query({ fromBlock: 3n, toBlock: 6n })?.length, 8);
    // A block of 7 logs passes the budget of 10: heights 3-5 go, and are not filled again.
    cache.add(7n, block(7, 7));
    assert.ok(cache.size <= 10, `logs held: ${cache.size}`);
    assert.equal(cache.query({ fromBlock: 5n, toBlock: 7n }), undefined);
    assert.equal(cache.canHold(5n), false);
    cache.fill(5n, 5n, block(5, 2));
    assert.equal(cache.query({ fromBlock: 5n, toBlock: 7n }), undefined, 'not filled below the floor');
    assert.deepEqual(
      cache
        .query({ fromBlock: 6n, toBlock: 7n, topics: [null, word(1)] })
        ?.map((l) => [l.blockNumber, l.logIndex]),
      [
        [6n, 1n],
        [7n, 1n],
        [7n, 4n],
      ],
    );
    assert.equal(cache.query({ fromBlock: 6n, toBlock: 7n, topics: [null, word(1)], limit: 2 })?.length, 2);
    // A rewind below the floor lets the made-again heights be held.
    cache.dropAbove(0n);
    assert.equal(cache.heights, 0);
    cache.add(1n, block(1, 1));
    assert.equal(cache.query({ fromBlock: 1n, toBlock: 1n })?.length, 1);
  });
});
