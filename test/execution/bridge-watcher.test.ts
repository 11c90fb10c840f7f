// The bridge-in deposit watcher against a real source chain (a Hardhat node on 127.0.0.1 with
// contracts/BTCBridgeSource.sol and a wrapped-BTC TestToken): confirmations, several deposits in
// one source block, the chain's last processed sequence number, a source chain that stops and
// comes back, and one that answers garbage. Plus the attestation encoding and the log parser.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  ASSETS_LOCKED_TOPIC,
  type Deposit,
  DepositWatcher,
  decodeAttestation,
  encodeAttestation,
  kvWatcherProgress,
  MAX_ATTESTED_DEPOSITS,
  parseAssetsLockedLog,
} from '@noded/execution';
import { RocksKV } from '@noded/storage';
import type { Logger } from '@noded/types';
import { freePort } from '../e2e/harness.js';
import { countingProxy, type SourceChain, startSourceChain } from '../e2e/source-chain.js';

const alice = '0x00000000000000000000000000000000000a11ce';
const bob = '0x0000000000000000000000000000000000000b0b';
const BTC = 10n ** 18n;

function recorder(): { logger: Logger; lines: string[] } {
  const lines: string[] = [];
  const rec = (level: string) => (o: unknown, m?: string) => {
    lines.push(`${level} ${m ?? ''} ${JSON.stringify(o)}`);
  };
  const logger: Logger = {
    trace: () => {},
    debug: rec('debug') as Logger['debug'],
    info: rec('info') as Logger['info'],
    warn: rec('warn') as Logger['warn'],
    error: rec('error') as Logger['error'],
    child: () => logger,
  };
  return { logger, lines };
}

const dep = (sequence: bigint, amount = BTC): Deposit => ({
  sequence,
  recipient: alice,
  token: '0x1111111111111111111111111111111111111111',
  amount,
  sourceBlock: 0n,
  sourceTx: '',
});

describe('bridge attestation and AssetsLocked parsing', () => {
  it('round-trips an attestation of consecutive deposits and refuses malformed ones', () => {
    const ds = [dep(5n), dep(6n, 2n ** 256n - 1n), dep(7n, 1n)];
    const ext = encodeAttestation(ds);
    assert.equal(ext.length, 3 + 3 * 104);
    assert.deepEqual(decodeAttestation(ext), ds);
    assert.deepEqual(encodeAttestation([]), new Uint8Array(0));
    assert.deepEqual(decodeAttestation(new Uint8Array(0)), []);
    assert.throws(() => decodeAttestation(ext.subarray(0, ext.length - 1)), /is 314 bytes, want 315/);
    assert.throws(() => decodeAttestation(encodeAttestation([dep(5n), dep(7n)])), /consecutive/);
    assert.throws(() => decodeAttestation(Uint8Array.of(2, 0, 1)), /version 2 is not 1/);
    assert.throws(() =>
      encodeAttestation(Array.from({ length: MAX_ATTESTED_DEPOSITS + 1 }, (_, i) => dep(BigInt(i + 1)))),
    );
  });

  it('parses an AssetsLocked log strictly', () => {
    const bridge = '0x5fbdb2315678afecb367f032d93f642f64180aa3';
    const word = (v: bigint) => `0x${v.toString(16).padStart(64, '0')}`;
    const log = {
      address: bridge,
      topics: [
        ASSETS_LOCKED_TOPIC,
        word(3n),
        `0x${'0'.repeat(24)}${alice.slice(2)}`,
        `0x${'0'.repeat(24)}${'ab'.repeat(20)}`,
      ],
      data: word(7n * BTC),
      blockNumber: '0x1f',
      transactionHash: `0x${'cd'.repeat(32)}`,
      removed: false,
    };
    assert.deepEqual(parseAssetsLockedLog(log, bridge), {
      sequence: 3n,
      recipient: alice,
      token: `0x${'ab'.repeat(20)}`,
      amount: 7n * BTC,
      sourceBlock: 31n,
      sourceTx: `0x${'cd'.repeat(32)}`,
    });
    assert.throws(() => parseAssetsLockedLog({ ...log, address: alice }, bridge), /is not the bridge/);
    assert.throws(() => parseAssetsLockedLog({ ...log, removed: true }, bridge), /removed by a reorg/);
    assert.throws(() => parseAssetsLockedLog({ ...log, data: '0x12' }, bridge), /one 32-byte word/);
    assert.throws(
      () => parseAssetsLockedLog({ ...log, topics: log.topics.slice(0, 3) }, bridge),
      /4 32-byte topics/,
    );
    assert.throws(
      () => parseAssetsLockedLog({ ...log, topics: [word(1n), ...log.topics.slice(1)] }, bridge),
      /not AssetsLocked/,
    );
    assert.throws(
      () =>
        parseAssetsLockedLog(
          { ...log, topics: [log.topics[0], word(0n), log.topics[2], log.topics[3]] },
          bridge,
        ),
      /sequence number 0/,
    );
    assert.throws(
      () =>
        parseAssetsLockedLog(
          { ...log, topics: [log.topics[0], log.topics[1], word(2n ** 200n), log.topics[3]] },
          bridge,
        ),
      /not an ABI-encoded address/,
    );
    assert.throws(() => parseAssetsLockedLog({ ...log, blockNumber: 31 }, bridge), /not a hex quantity/);
  });
});

describe('DepositWatcher against a Hardhat source chain', () => {
  let src: SourceChain;
  before(async () => {
    src = await startSourceChain();
  });
  after(async () => {
    await src?.stop();
  });

  it('keeps deposits once `confirmations` deep, in sequence order, several from one source block, and drops processed ones', async () => {
    let processed = 0n;
    const w = new DepositWatcher({
      rpcUrl: src.url,
      bridgeAddress: src.bridgeAddress,
      confirmations: 3,
      pollIntervalMs: 100,
      lastProcessed: () => processed,
    });
    await src.lock(1n * BTC, alice);
    await w.poll();
    assert.equal(w.stats().pending, 0, 'not 3 blocks deep yet');
    assert.deepEqual(w.next(10), []);
    await src.mine(2);
    await w.poll();
    assert.equal(w.stats().pending, 0, 'two blocks on top: still not deep enough');
    await src.mine(1);
    await w.poll();
    const [first] = w.next(10);
    assert.ok(first);
    assert.equal(first.sequence, 1n);
    assert.equal(first.recipient, alice);
    assert.equal(first.token, src.tokenAddress);
    assert.equal(first.amount, 1n * BTC);

    const block = await src.lockInOneBlock([
      { amount: 2n * BTC, recipient: bob },
      { amount: 3n, recipient: alice },
      { amount: 4n * BTC, recipient: bob },
    ]);
    await src.mine(3);
    await w.poll();
    const all = w.next(10);
    assert.deepEqual(
      all.map((d) => [d.sequence, d.recipient, d.amount]),
      [
        [1n, alice, 1n * BTC],
        [2n, bob, 2n * BTC],
        [3n, alice, 3n],
        [4n, bob, 4n * BTC],
      ],
    );
    assert.deepEqual(
      all.slice(1).map((d) => d.sourceBlock),
      [block, block, block],
      'three deposits from one source block',
    );
    assert.deepEqual(
      w.next(2).map((d) => d.sequence),
      [1n, 2n],
      'bounded count',
    );
    processed = 2n;
    assert.deepEqual(
      w.next(10).map((d) => d.sequence),
      [3n, 4n],
    );
    const s = w.stats();
    assert.equal(s.lastObserved, 4n);
    assert.equal(s.lastMinted, 2n);
    assert.equal(s.pending, 2);
    assert.equal(s.errors, 0);
  });

  it('a new watcher (a restarted node) reads the same deposits again from the source chain', async () => {
    const w = new DepositWatcher({
      rpcUrl: src.url,
      bridgeAddress: src.bridgeAddress,
      confirmations: 3,
      pollIntervalMs: 100,
      lastProcessed: () => 3n,
      logRange: 2,
    });
    await w.poll();
    assert.deepEqual(
      w.next(10).map((d) => d.sequence),
      [4n],
      'deposits up to the processed one are dropped; small getLogs ranges cover the chain',
    );
  });

  it('a source chain that stops is logged and retried, attests nothing new, and is read again once back', async () => {
    const { logger, lines } = recorder();
    const w = new DepositWatcher({
      rpcUrl: src.url,
      bridgeAddress: src.bridgeAddress,
      confirmations: 0,
      pollIntervalMs: 50,
      lastProcessed: () => 0n,
      logger,
    });
    await w.poll();
    const before = w.next(10).map((d) => d.sequence);
    assert.deepEqual(before, [1n, 2n, 3n, 4n]);
    const port = src.port;
    await src.stop();
    w.start();
    await new Promise((r) => setTimeout(r, 400));
    const s = w.stats();
    assert.ok(s.errors >= 2, `errors ${s.errors}`);
    assert.deepEqual(
      w.next(10).map((d) => d.sequence),
      before,
      'what was read stays; nothing is added',
    );
    const warns = lines.filter((l) => l.startsWith('warn bridge: reading the source chain failed'));
    assert.equal(warns.length, 1, 'one warning per outage, the repeats at debug');
    assert.match(warns[0]!, /unreachable \(ECONNREFUSED\)/);
    // Back on the same port: a fresh Hardhat chain (the deployment lands at the same addresses).
    src = await startSourceChain(port);
    await src.lock(9n * BTC, bob);
    await w.stop();
    await w.poll();
    assert.ok(lines.some((l) => l.startsWith('info bridge: the source chain answers again')));
    const now = w.next(10);
    assert.equal(now[0]!.amount, 9n * BTC, 'sequence 1 of the new chain replaces the old one');
    assert.equal(now[0]!.recipient, bob);
    assert.ok(
      lines.some((l) => l.includes('now reports a different deposit under this sequence number')),
      'the changed deposit is logged',
    );
  });
});

describe('DepositWatcher and a source-chain reorg of blocks not yet `confirmations` deep', () => {
  let src: SourceChain;
  before(async () => {
    src = await startSourceChain();
  });
  after(async () => {
    await src?.stop();
  });

  it('never keeps a deposit the reorg removed; the deposit that replaces its sequence number is kept once deep', async () => {
    const w = new DepositWatcher({
      rpcUrl: src.url,
      bridgeAddress: src.bridgeAddress,
      confirmations: 3,
      pollIntervalMs: 100,
      lastProcessed: () => 0n,
    });
    const snapshot = (await src.provider.send('evm_snapshot', [])) as string;
    const base = await src.head();
    await src.lock(5n * BTC, alice);
    await src.mine(2);
    await w.poll();
    assert.deepEqual(w.next(10), [], 'two blocks on top: not deep enough to keep');
    // The reorg: the source chain drops the lock's block and the two on top of it.
    assert.equal(await src.provider.send('evm_revert', [snapshot]), true);
    assert.equal(await src.head(), base);
    await w.poll();
    assert.deepEqual(w.next(10), []);
    // The new branch: another deposit under sequence number 1, then enough blocks to bury it.
    await src.lock(7n * BTC, bob);
    await src.mine(3);
    await w.poll();
    const kept = w.next(10);
    assert.deepEqual(
      kept.map((d) => [d.sequence, d.recipient, d.amount]),
      [[1n, bob, 7n * BTC]],
      "only the new branch's deposit; alice's never",
    );
    assert.equal(w.stats().lastObserved, 1n);
    assert.equal(w.stats().errors, 0);
  });
});

describe('DepositWatcher against a source chain answering garbage', () => {
  let server: Server;
  let answer: (body: { id: number; method: string }) => string;
  let url = '';
  before(async () => {
    const port = await freePort();
    server = createServer((req, res) => {
      let body = '';
      req.on('data', (d) => {
        body += d;
      });
      req.on('end', () => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(answer(JSON.parse(body)));
      });
    });
    await new Promise<void>((r) => server.listen(port, '127.0.0.1', r));
    url = `http://127.0.0.1:${port}`;
  });
  after(() => {
    server?.close();
  });

  it('counts every malformed answer as an error and keeps nothing from it', async () => {
    const bridge = '0x5fbdb2315678afecb367f032d93f642f64180aa3';
    const { logger, lines } = recorder();
    const w = new DepositWatcher({
      rpcUrl: url,
      bridgeAddress: bridge,
      confirmations: 0,
      pollIntervalMs: 50,
      lastProcessed: () => 0n,
      logger,
    });
    const good = (id: number, result: unknown) => JSON.stringify({ jsonrpc: '2.0', id, result });
    const word = (v: bigint) => `0x${v.toString(16).padStart(64, '0')}`;
    const goodLog = {
      address: bridge,
      topics: [ASSETS_LOCKED_TOPIC, word(1n), word(1n), word(2n)],
      data: word(5n),
      blockNumber: '0x1',
      transactionHash: word(9n),
    };
    const cases: Array<[string, (b: { id: number; method: string }) => string, RegExp]> = [
      ['not JSON', () => '<html>', /not JSON/],
      ['wrong id', (b) => good(b.id + 1, '0x1'), /not a JSON-RPC answer to request/],
      [
        'error',
        (b) => JSON.stringify({ jsonrpc: '2.0', id: b.id, error: { code: -32000, message: 'boom' } }),
        /error .*boom/,
      ],
      ['bad head', (b) => good(b.id, 12), /eth_blockNumber is not a hex quantity/],
      ['logs not a list', (b) => good(b.id, b.method === 'eth_blockNumber' ? '0x2' : { x: 1 }), /not a list/],
      [
        'one bad log among good ones',
        (b) => good(b.id, b.method === 'eth_blockNumber' ? '0x2' : [goodLog, { ...goodLog, data: '0x' }]),
        /one 32-byte word/,
      ],
      [
        'a log outside the range asked',
        (b) => good(b.id, b.method === 'eth_blockNumber' ? '0x2' : [{ ...goodLog, blockNumber: '0x99' }]),
        /outside 0\.\.2/,
      ],
    ];
    let errors = 0;
    for (const [name, fn, why] of cases) {
      answer = fn;
      await w.poll();
      errors++;
      assert.equal(w.stats().errors, errors, name);
      assert.equal(w.stats().pending, 0, `${name}: nothing kept`);
      assert.match(lines.at(-1)!, why, name);
    }
    answer = (b) => good(b.id, b.method === 'eth_blockNumber' ? '0x2' : [goodLog]);
    await w.poll();
    assert.equal(w.stats().errors, errors);
    assert.deepEqual(
      w.next(5).map((d) => [d.sequence, d.amount]),
      [[1n, 5n]],
    );
  });
});

describe("DepositWatcher's start block and saved progress (Hardhat source, RocksDB on disk)", () => {
  let src: SourceChain;
  let proxy: Awaited<ReturnType<typeof countingProxy>>;
  const dir = mkdtempSync(join(tmpdir(), 'bridge-progress-'));
  before(async () => {
    src = await startSourceChain();
    proxy = await countingProxy(src.url);
  });
  after(async () => {
    proxy?.close();
    await src?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('reads from start_block, not 0; a restart resumes after the last fully processed block and reads an unprocessed deposit again', async () => {
    // The contracts are deployed in the first blocks; the source chain then has a history to skip.
    const deployed = await src.head();
    await src.mine(40);
    const startBlock = deployed + 1n;
    await src.lock(1n * BTC, alice);
    const b1 = await src.head();
    await src.mine(2);
    let processed = 0n;
    let kv = await RocksKV.open(dir);
    const watcher = (logRange = 5) =>
      new DepositWatcher({
        rpcUrl: proxy.url,
        bridgeAddress: src.bridgeAddress,
        confirmations: 2,
        pollIntervalMs: 100,
        lastProcessed: () => processed,
        logRange,
        startBlock,
        progress: kvWatcherProgress(kv, src.bridgeAddress),
      });

    const a = watcher();
    await a.poll();
    assert.equal(proxy.ranges[0]![0], startBlock, 'the first range starts at start_block');
    assert.ok(
      proxy.ranges.every(([f]) => f >= startBlock),
      'no block below start_block is read',
    );
    assert.deepEqual(
      a.next(10).map((d) => d.sequence),
      [1n],
    );
    assert.equal(
      a.stats().resumeFrom,
      b1 - 1n,
      'deposit 1 is not processed: the resume point stays before it',
    );

    processed = 1n;
    await src.lock(2n * BTC, bob);
    const b2 = await src.head();
    await src.mine(2);
    await a.poll();
    assert.deepEqual(
      a.next(10).map((d) => d.sequence),
      [2n],
    );
    assert.equal(a.stats().resumeFrom, b2 - 1n, 'deposit 1 processed, deposit 2 not');
    await a.stop();
    await kv.close();

    // The node restarts (deposit 2 still waiting to be minted): the scan resumes at deposit 2's block.
    kv = await RocksKV.open(dir);
    proxy.ranges.length = 0;
    const b = watcher(1000);
    await b.poll();
    const safe = (await src.head()) - 2n;
    assert.deepEqual(proxy.ranges, [[b2, safe]], 'one range, from deposit 2 block to head - confirmations');
    assert.deepEqual(
      b.next(10).map((d) => [d.sequence, d.recipient, d.amount]),
      [[2n, bob, 2n * BTC]],
      'the deposit seen before the restart and not processed is read again',
    );
    processed = 2n;
    await b.poll();
    assert.equal(b.stats().resumeFrom, safe, 'every deposit processed: the resume point is the scanned head');
    await b.stop();
    await kv.close();

    // Restarted again with nothing new on the source chain: nothing is read at all.
    kv = await RocksKV.open(dir);
    proxy.ranges.length = 0;
    const c = watcher();
    await c.poll();
    assert.deepEqual(proxy.ranges, [], 'a restart does not rescan');
    assert.equal(c.stats().errors, 0);
    // A progress saved for another bridge contract is not used (that one is read from start_block).
    assert.equal(await kvWatcherProgress(kv, alice).load(), undefined);
    const saved = await kvWatcherProgress(kv, src.bridgeAddress.toUpperCase().replace('0X', '0x')).load();
    assert.equal(saved?.block, safe);
    const block = (await src.provider.send('eth_getBlockByNumber', [`0x${safe.toString(16)}`, false])) as {
      hash: string;
    };
    assert.equal(saved?.hash, block.hash.toLowerCase(), 'the saved point carries its block hash');
    await c.stop();
    await kv.close();
  });

  it('a saved point the source chain no longer has (past its head, or another block hash) is dropped: read again from start_block', async () => {
    const kv = await RocksKV.open(dir);
    try {
      // A saved point under the source head whose block has another hash (a new chain at the same
      // addresses, or a reorg below it): its deposits must be read again, not skipped.
      const { logger, lines } = recorder();
      await kvWatcherProgress(kv, src.bridgeAddress).save({ block: 5n, hash: `0x${'ab'.repeat(32)}` });
      proxy.ranges.length = 0;
      const changed = new DepositWatcher({
        rpcUrl: proxy.url,
        bridgeAddress: src.bridgeAddress,
        confirmations: 2,
        pollIntervalMs: 100,
        lastProcessed: () => 0n,
        startBlock: 3n,
        logRange: 100_000,
        progress: kvWatcherProgress(kv, src.bridgeAddress),
        logger,
      });
      await changed.poll();
      assert.equal(proxy.ranges[0]![0], 3n);
      assert.ok(lines.some((l) => l.startsWith('warn bridge: the source chain no longer has the block')));
      assert.deepEqual(
        changed.next(10).map((d) => d.sequence),
        [1n, 2n],
      );
      // A saved point past the source head (a new, shorter chain, or a deep reorg).
      await kvWatcherProgress(kv, src.bridgeAddress).save({ block: 10_000n, hash: `0x${'cd'.repeat(32)}` });
      proxy.ranges.length = 0;
      const w = new DepositWatcher({
        rpcUrl: proxy.url,
        bridgeAddress: src.bridgeAddress,
        confirmations: 2,
        pollIntervalMs: 100,
        lastProcessed: () => 0n,
        startBlock: 3n,
        logRange: 100_000,
        progress: kvWatcherProgress(kv, src.bridgeAddress),
      });
      await w.poll();
      assert.equal(proxy.ranges[0]![0], 3n);
      assert.deepEqual(
        w.next(10).map((d) => d.sequence),
        [1n, 2n],
      );
      assert.equal(
        w.stats().resumeFrom,
        w.next(1)[0]!.sourceBlock - 1n,
        'the saved point followed the source chain back, to before the first unprocessed deposit',
      );
      assert.equal((await kvWatcherProgress(kv, src.bridgeAddress).load())?.block, w.stats().resumeFrom);
    } finally {
      await kv.close();
    }
  });
});
