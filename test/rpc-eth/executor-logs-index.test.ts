// eth_getLogs over many blocks through the real executor on RocksDB: the log index narrows blocks by
// every named topic position and by the addresses, the stored receipts are matched byte by byte (a
// value the index holds at another position does not match), logs_cap stops the scan at cap + 1,
// and a reopened executor (cold caches) answers the same from what is on disk.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Executor } from '@noded/execution';
import { defaultEthRpcOptions, EthRpcServer } from '@noded/rpc/src/eth/index.js';
import { RocksKV } from '@noded/storage';
import { type Hex, silentLogger } from '@noded/types';
import { Interface } from 'ethers';
import { executorOptions, GWEI, key, produceBlock, signTx, type TestNode } from '../execution/helpers.js';
import { E1, E2, hex, openEmitterChain, PAIR, type RpcLog, word } from './emitter.js';
import { call, rpc } from './helpers.js';

const [A, B, C, X, Y] = [word(0xa), word(0xb), word(0xc), word(0x5e1ec7), word(0x7)];
/** More than the 64 blocks the executor reads at once, so a scan spans two chunks. */
const BLOCKS = 70;
/** X as the second indexed argument (topic 2) from E1, and from E2 in block 20. */
const X_SECOND = [5, 17, 33];
/** X as the first indexed argument (topic 1): the index holds X for these blocks too. */
const X_FIRST = [6, 34];

interface Want {
  block: number;
  tx: number;
  logIndex: number;
  address: Hex;
  a: Hex;
  b: Hex;
  seq: number;
}

describe('eth_getLogs over 70 blocks: the log index and the byte comparison', { timeout: 180_000 }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'noded-exec-logs-index-'));
  let kv: RocksKV;
  let n: TestNode;
  const servers: EthRpcServer[] = [];
  let url: string;
  let cappedUrl: string;
  const iface = new Interface(['function emitPairs(bytes32[] as_, bytes32[] bs, uint256 seq)']);
  const sender = key(1);
  let nonce = 0n;
  const wanted: Want[] = [];
  const txHashes: Hex[][] = [];
  const blockHashes: Hex[] = [];

  function tx(to: Hex, pairs: Array<[Hex, Hex]>, seq: number): Uint8Array {
    const data = iface.encodeFunctionData('emitPairs', [
      pairs.map((p) => p[0]),
      pairs.map((p) => p[1]),
      seq,
    ]) as Hex;
    return signTx(sender, {
      nonce: nonce++,
      to,
      value: 0n,
      data,
      gas: 300_000n,
      maxFee: 10n * GWEI,
      tip: GWEI,
    });
  }

  async function startServer(options: Partial<typeof defaultEthRpcOptions>): Promise<string> {
    const server = new EthRpcServer({
      chain: n.ex,
      bus: n.bus,
      logger: silentLogger,
      options: { ...defaultEthRpcOptions, ...options },
      clientVersion: 'noded/test',
      devAccounts: null,
      peerCount: () => 0,
      syncing: () => false,
    });
    servers.push(server);
    return `http://127.0.0.1:${await server.listenHttp('127.0.0.1', 0)}`;
  }

  /** The RPC form of the wanted logs that `pick` keeps, in chain order. */
  function expected(pick: (w: Want) => boolean): RpcLog[] {
    return wanted.filter(pick).map((w) => ({
      address: w.address,
      topics: [PAIR, w.a, w.b],
      data: word(w.seq),
      blockNumber: hex(w.block) as Hex,
      blockHash: blockHashes[w.block]!,
      blockTimestamp: hex(1_700_000_000 + w.block),
      transactionHash: txHashes[w.block]![w.tx]!,
      transactionIndex: hex(w.tx) as Hex,
      logIndex: hex(w.logIndex) as Hex,
      removed: false,
    }));
  }

  const getLogs = (filter: Record<string, unknown>) =>
    call<RpcLog[]>(url, 'eth_getLogs', [{ fromBlock: '0x1', toBlock: 'latest', ...filter }]);

  before(async () => {
    const chain = await openEmitterChain(dir, [sender]);
    n = chain;
    kv = chain.kv;
    for (let h = 1; h <= BLOCKS; h++) {
      // E1 emits (A, Y) in every block, then (B, X) or (X, B) in some; E2 emits (C, X) in block 20
      // and (C, Y) in block 25.
      const txs: Array<{ to: Hex; pairs: Array<[Hex, Hex]> }> = [];
      const e1: Array<[Hex, Hex]> = [[A, Y]];
      if (X_SECOND.includes(h)) e1.push([B, X]);
      if (X_FIRST.includes(h)) e1.push([X, B]);
      txs.push({ to: E1, pairs: e1 });
      if (h === 20) txs.push({ to: E2, pairs: [[C, X]] });
      if (h === 25) txs.push({ to: E2, pairs: [[C, Y]] });
      const res = await produceBlock(
        n,
        txs.map((x) => tx(x.to, x.pairs, h * 100)),
      );
      for (const r of res.txResults) assert.equal(r.code, 0, r.log);
      let logIndex = 0;
      for (const [i, x] of txs.entries()) {
        for (const [k, [a, b]] of x.pairs.entries()) {
          wanted.push({ block: h, tx: i, logIndex: logIndex++, address: x.to, a, b, seq: h * 100 + k });
        }
      }
      const blk = await n.ex.getBlockByNumber(BigInt(h));
      txHashes[h] = (blk?.transactions ?? []) as Hex[];
      blockHashes[h] = blk!.hash;
    }
    url = await startServer({});
    cappedUrl = await startServer({ logsCap: 5, blockRangeCap: 30 });
  });

  after(async () => {
    for (const s of servers) await s.close();
    await n?.ex.close();
    await kv?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('a selective value in topic position 2 finds its few blocks; the same value at position 1 does not match', async () => {
    assert.deepEqual(
      await getLogs({ topics: [PAIR, null, X] }),
      expected((w) => w.b === X),
    );
    assert.deepEqual(
      (await getLogs({ topics: [PAIR, null, X] })).map((l) => Number(l.blockNumber)),
      [...X_SECOND.slice(0, 2), 20, X_SECOND[2]!],
    );
    assert.deepEqual(
      await getLogs({ address: E1, topics: [null, null, X] }),
      expected((w) => w.address === E1 && w.b === X),
    );
    assert.deepEqual(
      await getLogs({ topics: [null, X] }),
      expected((w) => w.a === X),
    );
    assert.deepEqual(
      (await getLogs({ topics: [null, X] })).map((l) => Number(l.blockNumber)),
      X_FIRST,
    );
    // X only ever has 3 topics beside it: a fourth position never matches, even as a wildcard.
    assert.deepEqual(await getLogs({ topics: [null, null, X, null] }), []);
  });

  it('criteria that each name many blocks are intersected: addresses with OR-alternatives in position 2', async () => {
    // X or Y in position 2 names all 70 blocks; E2 narrows them to blocks 20 and 25.
    assert.deepEqual(
      await getLogs({ address: E2, topics: [null, null, [X, Y]] }),
      expected((w) => w.address === E2),
    );
    assert.deepEqual(
      await getLogs({ address: [E1, E2], topics: [[PAIR], null, [Y, X]] }),
      expected((w) => w.b === X || w.b === Y),
    );
    assert.deepEqual(
      await getLogs({ topics: [null, [C], [Y]] }),
      expected((w) => w.a === C && w.b === Y),
    );
    assert.deepEqual(
      await getLogs({ topics: [null, A] }),
      expected((w) => w.a === A),
    );
    assert.equal((await getLogs({ topics: [null, A] })).length, BLOCKS);
    assert.deepEqual(
      await getLogs({ address: E1, topics: [PAIR, B], fromBlock: '0x6', toBlock: '0x21' }),
      expected((w) => w.address === E1 && w.a === B && w.block >= 6 && w.block <= 33),
    );
    assert.deepEqual(await getLogs({ address: `0x${'99'.repeat(20)}`, topics: [null, A] }), []);
  });

  it('the executor stops at the asked limit, in chain order', async () => {
    const all = await n.ex.getLogs({ fromBlock: 1n, toBlock: BigInt(BLOCKS), topics: [null, [A, B]] });
    assert.equal(all.length, BLOCKS + X_SECOND.length);
    const first = await n.ex.getLogs({
      fromBlock: 1n,
      toBlock: BigInt(BLOCKS),
      topics: [null, [A, B]],
      limit: 6,
    });
    assert.deepEqual(first, all.slice(0, 6));
    // Past the first 64 blocks read at once.
    assert.deepEqual(
      await n.ex.getLogs({ fromBlock: 1n, toBlock: BigInt(BLOCKS), topics: [null, [A, B]], limit: 69 }),
      all.slice(0, 69),
    );
    // The sixth log is block 5's second one: the limit cuts inside a block.
    assert.deepEqual(
      first.map((l) => [l.blockNumber, l.logIndex]),
      [
        [1n, 0n],
        [2n, 0n],
        [3n, 0n],
        [4n, 0n],
        [5n, 0n],
        [5n, 1n],
      ],
    );
  });

  it('logs_cap and block_range_cap give their errors; exactly the cap is served', async () => {
    const over = await rpc(cappedUrl, 'eth_getLogs', [
      { fromBlock: '0x1', toBlock: '0x1e', topics: [null, A] },
    ]);
    assert.deepEqual(over.error, { code: -32005, message: 'query returned more than 5 results' });
    const five = await call<RpcLog[]>(cappedUrl, 'eth_getLogs', [
      { fromBlock: '0x1', toBlock: '0x5', topics: [null, A] },
    ]);
    assert.deepEqual(
      five,
      expected((w) => w.a === A && w.block <= 5),
    );
    assert.equal(five.length, 5);
    const wide = await rpc(cappedUrl, 'eth_getLogs', [{ fromBlock: '0x1', toBlock: '0x20', address: E2 }]);
    assert.deepEqual(wide.error, { code: -32602, message: 'exceed maximum block range 30' });
    assert.deepEqual(
      await call<RpcLog[]>(cappedUrl, 'eth_getLogs', [{ fromBlock: '0x1', toBlock: '0x1f', address: E2 }]),
      expected((w) => w.address === E2),
    );
  });

  it('a reopened executor answers the same from disk', async () => {
    const before = await getLogs({ topics: [null, [X, C]] });
    for (const s of servers.splice(0)) await s.close();
    await n.ex.close();
    n.ex = await Executor.open(executorOptions(kv, n.bus));
    url = await startServer({});
    assert.deepEqual(await getLogs({ topics: [null, [X, C]] }), before);
    assert.deepEqual(
      before,
      expected((w) => w.a === X || w.a === C),
    );
    assert.deepEqual(
      await getLogs({ address: E1, topics: [PAIR, null, X] }),
      expected((w) => w.address === E1 && w.b === X),
    );
  });
});
