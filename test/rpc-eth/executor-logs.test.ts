// Logs through the real code path: the executor on RocksDB on disk, served by the Ethereum JSON-RPC
// over 127.0.0.1. Log indexes count across the whole block, and eth_getLogs matches addresses,
// null wildcards and OR-alternatives per topic position with the executor's own filtering (the
// fake chain the other JSON-RPC tests use does none of this).
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { defaultEthRpcOptions, EthRpcServer } from '@noded/rpc/src/eth/index.js';
import { RocksKV } from '@noded/storage';
import { type Hex, silentLogger } from '@noded/types';
import { Interface } from 'ethers';
import { addr, GWEI, key, produceBlock, signTx, type TestNode } from '../execution/helpers.js';
import { E1, E2, hex, openEmitterChain, PAIR, type RpcLog, word } from './emitter.js';
import { call, rpc, WsClient } from './helpers.js';

const [A, B, C, D, E] = [word(0xa), word(0xb), word(0xc), word(0xd), word(0xe)];

/** What a log is, as the test wrote it: (block, tx index, emitter, a, b, seq). */
interface Want {
  block: number;
  tx: number;
  address: Hex;
  a: Hex;
  b: Hex;
  seq: number;
}

describe('logs through the real executor and the JSON-RPC', { timeout: 120_000 }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'noded-exec-logs-'));
  let kv: RocksKV;
  let n: TestNode;
  let server: EthRpcServer;
  let url: string;
  const iface = new Interface(['function emitPairs(bytes32[] as_, bytes32[] bs, uint256 seq)']);
  const keys = [key(1), key(2), key(3)];
  const nonces = [0n, 0n, 0n];
  /** Every log the chain must hold, in block order; its position within its block is its logIndex. */
  const wanted: Want[] = [];
  const txHashes: Hex[][] = [];
  let filterId: string;
  let ws: WsClient;
  const subs: Record<string, string> = {};

  /** A transaction from `who` calling `to`.emitPairs, or a plain transfer when `pairs` is null. */
  function tx(who: number, to: Hex, pairs: Array<[Hex, Hex]> | null, seq = 0): Uint8Array {
    const data =
      pairs === null
        ? '0x'
        : (iface.encodeFunctionData('emitPairs', [
            pairs.map((p) => p[0]),
            pairs.map((p) => p[1]),
            seq,
          ]) as Hex);
    return signTx(keys[who]!, {
      nonce: nonces[who]!++,
      to,
      value: pairs === null ? 1n : 0n,
      data,
      gas: 300_000n,
      maxFee: 10n * GWEI,
      tip: GWEI,
    });
  }

  /** Commits one block of `txs`, each described by (emitter, pairs, seq) for the expected logs. */
  async function block(txs: Array<{ raw: Uint8Array; address: Hex; pairs: Array<[Hex, Hex]>; seq: number }>) {
    const res = await produceBlock(
      n,
      txs.map((x) => x.raw),
    );
    for (const r of res.txResults) assert.equal(r.code, 0, r.log);
    for (const [i, x] of txs.entries()) {
      for (const [k, [a, b]] of x.pairs.entries()) {
        wanted.push({ block: n.height, tx: i, address: x.address, a, b, seq: x.seq + k });
      }
    }
    const b = await n.ex.getBlockByNumber(BigInt(n.height));
    txHashes[n.height] = (b?.transactions ?? []) as Hex[];
  }

  /** The RPC form of the wanted logs (all fields but the block hash and tx hash, checked apart). */
  function expected(pick: (w: Want) => boolean): Array<Partial<RpcLog>> {
    const out: Array<Partial<RpcLog>> = [];
    const perBlock = new Map<number, number>();
    for (const w of wanted) {
      const index = perBlock.get(w.block) ?? 0;
      perBlock.set(w.block, index + 1);
      if (!pick(w)) continue;
      out.push({
        address: w.address,
        topics: [PAIR, w.a, w.b],
        data: word(w.seq),
        blockNumber: hex(w.block) as Hex,
        transactionHash: txHashes[w.block]![w.tx],
        transactionIndex: hex(w.tx) as Hex,
        logIndex: hex(index) as Hex,
        removed: false,
      });
    }
    return out;
  }

  /** Drops the block hash and timestamp, which the test does not choose. */
  const strip = (logs: RpcLog[]): Array<Partial<RpcLog>> =>
    logs.map((l) => {
      const { blockHash: _hash, blockTimestamp: _time, ...rest } = l as RpcLog & { blockTimestamp: Hex };
      return rest;
    });

  async function getLogs(filter: Record<string, unknown>): Promise<Array<Partial<RpcLog>>> {
    return strip(
      await call<RpcLog[]>(url, 'eth_getLogs', [{ fromBlock: '0x1', toBlock: 'latest', ...filter }]),
    );
  }

  before(async () => {
    const chain = await openEmitterChain(dir, keys);
    n = chain;
    kv = chain.kv;
    const { ex, bus } = n;
    server = new EthRpcServer({
      chain: ex,
      bus,
      logger: silentLogger,
      options: { ...defaultEthRpcOptions },
      clientVersion: 'noded/test',
      devAccounts: null,
      peerCount: () => 0,
      syncing: () => false,
    });
    url = `http://127.0.0.1:${await server.listenHttp('127.0.0.1', 0)}`;

    // Block 1: five logs over four transactions (one without logs between them), from three senders.
    await block([
      {
        raw: tx(
          0,
          E1,
          [
            [A, C],
            [B, C],
          ],
          10,
        ),
        address: E1,
        pairs: [
          [A, C],
          [B, C],
        ],
        seq: 10,
      },
      { raw: tx(1, addr(keys[2]!), null), address: E1, pairs: [], seq: 0 },
      {
        raw: tx(
          2,
          E2,
          [
            [A, D],
            [E, D],
          ],
          20,
        ),
        address: E2,
        pairs: [
          [A, D],
          [E, D],
        ],
        seq: 20,
      },
      { raw: tx(0, E1, [[B, D]], 30), address: E1, pairs: [[B, D]], seq: 30 },
    ]);
    // A filter installed now sees only the next block's logs, matched by the RPC's own filter code.
    filterId = await call<string>(url, 'eth_newFilter', [{ fromBlock: '0x1', topics: [null, [B, E], [D]] }]);
    // And subscriptions over WebSocket, fed by the executor's block events.
    ws = await WsClient.connect(`ws://127.0.0.1:${await server.listenWs('127.0.0.1', 0)}`);
    const subscribe = async (name: string, crit: Record<string, unknown>) => {
      subs[name] = (await ws.request('eth_subscribe', ['logs', crit])).result as string;
      assert.match(subs[name]!, /^0x[0-9a-f]+$/, name);
    };
    await subscribe('or', { topics: [null, [B, E], [D]] });
    await subscribe('addresses', { address: [`0x${'99'.repeat(20)}`, E2], topics: [] });
    await subscribe('tooLong', { topics: [null, null, null, null] });
    // Block 2: indexes start again at 0 in a new block.
    await block([
      { raw: tx(1, E2, [[C, A]], 40), address: E2, pairs: [[C, A]], seq: 40 },
      {
        raw: tx(
          2,
          E1,
          [
            [B, D],
            [E, D],
            [A, A],
          ],
          50,
        ),
        address: E1,
        pairs: [
          [B, D],
          [E, D],
          [A, A],
        ],
        seq: 50,
      },
    ]);
  });

  after(async () => {
    ws?.close();
    await server?.close();
    await n?.ex.close();
    await kv?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('logIndex counts the logs of the whole block: receipts of the block, of one transaction, and eth_getLogs', async () => {
    assert.equal(wanted.filter((w) => w.block === 1).length, 5);
    for (const height of [1, 2]) {
      const receipts = await call<Array<{ logs: RpcLog[]; transactionIndex: Hex }>>(
        url,
        'eth_getBlockReceipts',
        [hex(height)],
      );
      const fromReceipts = strip(receipts.flatMap((r) => r.logs));
      assert.deepEqual(
        fromReceipts,
        expected((w) => w.block === height),
        `block ${height} receipts`,
      );
      for (const [i, hash] of txHashes[height]!.entries()) {
        const one = await call<{ logs: RpcLog[] }>(url, 'eth_getTransactionReceipt', [hash]);
        assert.deepEqual(
          strip(one.logs),
          expected((w) => w.block === height && w.tx === i),
          `receipt of tx ${i} in block ${height}`,
        );
      }
    }
    assert.deepEqual(
      (await getLogs({})).map((l) => [l.blockNumber, l.transactionIndex, l.logIndex]),
      [
        ['0x1', '0x0', '0x0'],
        ['0x1', '0x0', '0x1'],
        ['0x1', '0x2', '0x2'],
        ['0x1', '0x2', '0x3'],
        ['0x1', '0x3', '0x4'],
        ['0x2', '0x0', '0x0'],
        ['0x2', '0x1', '0x1'],
        ['0x2', '0x1', '0x2'],
        ['0x2', '0x1', '0x3'],
      ],
    );
    assert.deepEqual(
      await getLogs({}),
      expected(() => true),
    );
    const b1 = await call<{ hash: Hex }>(url, 'eth_getBlockByNumber', ['0x1', false]);
    assert.deepEqual(
      strip(await call<RpcLog[]>(url, 'eth_getLogs', [{ blockHash: b1.hash }])),
      expected((w) => w.block === 1),
    );
  });

  it('eth_getLogs: OR-alternatives in a topic position, null wildcards, and AND across positions', async () => {
    // [[A, B]] in the first position: the first topic is the event signature, so nothing matches.
    assert.deepEqual(await getLogs({ topics: [[A, B]] }), []);
    assert.deepEqual(
      await getLogs({ topics: [PAIR] }),
      expected(() => true),
    );
    assert.deepEqual(
      await getLogs({ topics: [[A, PAIR]] }),
      expected(() => true),
    );
    assert.deepEqual(
      await getLogs({ topics: [null, [A, B]] }),
      expected((w) => w.a === A || w.a === B),
    );
    assert.deepEqual(
      await getLogs({ topics: [null, [B, A]] }),
      expected((w) => w.a === A || w.a === B),
    );
    assert.deepEqual(
      await getLogs({ topics: [null, null, [C, D]] }),
      expected((w) => w.b === C || w.b === D),
    );
    assert.deepEqual(
      await getLogs({ topics: [null, null, [A]] }),
      expected((w) => w.b === A),
    );
    assert.deepEqual(
      await getLogs({ topics: [PAIR, [A, E], [D]] }),
      expected((w) => (w.a === A || w.a === E) && w.b === D),
    );
    assert.deepEqual(await getLogs({ topics: [null, [C], [D]] }), []);
    assert.deepEqual(
      await getLogs({ topics: [null, [], [C]] }),
      expected((w) => w.b === C),
      '[] is a wildcard too',
    );
    // More positions than the logs have topics: no log has a fourth topic.
    assert.deepEqual(await getLogs({ topics: [null, null, null, [A, B]] }), []);
    // As geth (and this node's filters and subscriptions): even wildcards past the log's topics.
    assert.deepEqual(await getLogs({ topics: [null, null, null, null] }), []);
    assert.deepEqual(
      await getLogs({ topics: [null, null, null] }),
      expected(() => true),
    );
    // An alternative no log has, beside one it has, still matches the one it has.
    assert.deepEqual(
      await getLogs({ topics: [null, [word(0x77), E]] }),
      expected((w) => w.a === E),
    );
    assert.deepEqual(await getLogs({ topics: [null, word(0x77)] }), []);
  });

  it('eth_getLogs: address lists are OR-alternatives and combine with topics', async () => {
    assert.deepEqual(
      await getLogs({ address: E1 }),
      expected((w) => w.address === E1),
    );
    assert.deepEqual(
      await getLogs({ address: [E2] }),
      expected((w) => w.address === E2),
    );
    assert.deepEqual(
      await getLogs({ address: [E1, E2] }),
      expected(() => true),
    );
    assert.deepEqual(
      await getLogs({ address: [`0x${'99'.repeat(20)}`, E2] }),
      expected((w) => w.address === E2),
    );
    assert.deepEqual(
      await getLogs({ address: [E2, E1], topics: [null, [A, C]] }),
      expected((w) => w.a === A || w.a === C),
    );
    assert.deepEqual(await getLogs({ address: E2, topics: [null, [B]] }), []);
    assert.deepEqual(
      await getLogs({ address: E1.toUpperCase().replace('0X', '0x'), fromBlock: '0x2', toBlock: '0x2' }),
      expected((w) => w.address === E1 && w.block === 2),
    );
  });

  it('a log filter installed before a block reports its matching logs with block-wide indexes', async () => {
    const changes = strip(await call<RpcLog[]>(url, 'eth_getFilterChanges', [filterId]));
    assert.deepEqual(
      changes,
      expected((w) => w.block === 2 && (w.a === B || w.a === E) && w.b === D),
    );
    assert.equal(changes.length, 2);
    assert.deepEqual(
      strip(await call<RpcLog[]>(url, 'eth_getFilterLogs', [filterId])),
      expected((w) => (w.a === B || w.a === E) && w.b === D),
    );
    assert.deepEqual((await rpc(url, 'eth_getFilterChanges', [filterId])).result, []);
  });

  it('logs subscriptions get the matching logs of each new block, with block-wide indexes', async () => {
    const want = {
      or: expected((w) => w.block === 2 && (w.a === B || w.a === E) && w.b === D),
      addresses: expected((w) => w.block === 2 && w.address === E2),
    };
    assert.equal(want.or.length, 2);
    assert.equal(want.addresses.length, 1);
    await ws.waitFor(
      () =>
        ws.notificationsFor(subs.or!).length >= want.or.length &&
        ws.notificationsFor(subs.addresses!).length >= want.addresses.length,
      10_000,
      'the block 2 logs',
    );
    for (const name of ['or', 'addresses'] as const) {
      assert.deepEqual(strip(ws.notificationsFor(subs[name]!) as RpcLog[]), want[name], name);
    }
    assert.deepEqual(ws.notificationsFor(subs.tooLong!), [], 'no log has a fourth topic');
  });

  it('eth_getLogs over 48 more blocks: each position narrows blocks and receipts; entries without receipt lists still work', async () => {
    // Many transactions a block, each emitting a few pairs from a small alphabet, so that filters
    // over several positions must intersect receipts (more candidate blocks than the index stops at).
    const values = [A, B, C, D, E];
    let seed = 0x5eed;
    const next = () => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed >>> 12; // an LCG's low bits repeat with short periods
    };
    for (let b = 0; b < 48; b++) {
      const txs: Array<{ raw: Uint8Array; address: Hex; pairs: Array<[Hex, Hex]>; seq: number }> = [];
      for (let t = 0; t < 6; t++) {
        const who = t % 3;
        const to = next() % 2 === 0 ? E1 : E2;
        if (next() % 5 === 0) {
          txs.push({ raw: tx(who, addr(keys[(who + 1) % 3]!), null), address: to, pairs: [], seq: 0 });
          continue;
        }
        const pairs: Array<[Hex, Hex]> = Array.from({ length: 1 + (next() % 3) }, () => [
          values[next() % 5]!,
          values[next() % 5]!,
        ]);
        const seq = 1000 + b * 10 + t;
        txs.push({ raw: tx(who, to, pairs, seq), address: to, pairs, seq });
      }
      await block(txs);
    }
    const cases: Array<[Record<string, unknown>, (w: Want) => boolean]> = [
      [{ topics: [PAIR, A, D] }, (w) => w.a === A && w.b === D],
      [{ address: E1, topics: [PAIR, null, [C, E]] }, (w) => w.address === E1 && (w.b === C || w.b === E)],
      [{ address: [E2], topics: [null, B] }, (w) => w.address === E2 && w.a === B],
      [{ topics: [null, [A, B], [A, B]] }, (w) => (w.a === A || w.a === B) && (w.b === A || w.b === B)],
      [{ address: E1 }, (w) => w.address === E1],
      [{ topics: [PAIR, E, E] }, (w) => w.a === E && w.b === E],
    ];
    const answers: Array<Array<Partial<RpcLog>>> = [];
    for (const [filter, pick] of cases) {
      const got = await getLogs(filter);
      const want = expected(pick);
      assert.ok(want.length > 0, JSON.stringify(filter));
      assert.deepEqual(got, want, JSON.stringify(filter));
      answers.push(got);
    }
    // A log index written before its entries listed receipts (empty values) names blocks only:
    // the same answers, every receipt of those blocks walked.
    let emptied = 0;
    for (const prefix of [0x45, 0x46]) {
      const ops: Array<{ type: 'put'; key: Uint8Array; value: Uint8Array }> = [];
      for await (const [k] of kv.iterate({ gte: Uint8Array.of(prefix), lt: Uint8Array.of(prefix + 1) })) {
        ops.push({ type: 'put', key: k, value: new Uint8Array(0) });
      }
      await kv.write(ops);
      emptied += ops.length;
    }
    assert.ok(emptied > 100, `log index entries rewritten: ${emptied}`);
    for (const [j, [filter]] of cases.entries()) {
      assert.deepEqual(await getLogs(filter), answers[j], `without receipt lists: ${JSON.stringify(filter)}`);
    }
  });
});
