// The executor's stream of committed heights on a real nats-server (JetStream on a temp store): the
// outbox written with each commit on RocksDB, drained in height order into `noded.<chain>.blocks`
// with Nats-Msg-Id = the height, heads on core NATS, nothing lost while nats-server is down, a
// height already in the stream never appended twice; and the message contract's field rules.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { RLP } from '@ethereumjs/rlp';
import { Executor } from '@noded/execution';
import { CommittedHeight } from '@noded/proto/src/gen/noded/stream/v1/committed.js';
import { BlockPublisher } from '@noded/service-executor/src/publisher.js';
import { RocksKV } from '@noded/storage';
import {
  blocksStreamName,
  blocksSubject,
  decodeCommitted,
  decodeHead,
  encodeCommitted,
  headsSubject,
  StreamFieldError,
} from '@noded/stream';
import { EventBus, type Logger } from '@noded/types';
import { connect, type NatsConnection } from 'nats';
import { validatorsOf } from '../consensus/helpers.js';
import {
  addr,
  ETH,
  executorOptions,
  GENESIS_TIME,
  genesisState,
  key,
  signTx,
  TEST_CONSENSUS_PARAMS,
} from '../execution/helpers.js';
import { Chain, VALIDATOR_KEY } from './helpers.js';
import { CLUSTER_MAX_PAYLOAD, startNatsServer } from './nats.js';
import { until } from './processes.js';

const cleanups: Array<() => unknown> = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');

async function streamHeights(
  nc: NatsConnection,
  chainId: string,
): Promise<Array<{ id: string; height: number; blockHash: string; parentHash: string }>> {
  const jsm = await nc.jetstreamManager();
  const info = await jsm.streams.info(blocksStreamName(chainId));
  const out = [];
  for (let seq = info.state.first_seq; seq <= info.state.last_seq; seq++) {
    const m = await jsm.streams.getMessage(blocksStreamName(chainId), { seq });
    const r = decodeCommitted(m.data);
    out.push({
      id: m.header?.get('Nats-Msg-Id') ?? '',
      height: r.height,
      blockHash: hex(r.blockHash),
      parentHash: hex(r.parentHash),
    });
  }
  return out;
}

describe('executor outbox -> NATS JetStream', () => {
  it('publishes every committed height once, in order, with heads, and loses none while NATS is down', async () => {
    const nats = await startNatsServer();
    cleanups.push(() => nats.stop());
    const dir = mkdtempSync(join(tmpdir(), 'noded-outbox-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const kv = await RocksKV.open(join(dir, 'application.db'));
    cleanups.push(() => kv.close());
    const bus = new EventBus();
    const executor = await Executor.open(executorOptions(kv, bus, { outbox: { encode: encodeCommitted } }));
    cleanups.push(() => executor.close());
    let publisher = new BlockPublisher({
      executor,
      bus,
      chainId: 'chain-local',
      servers: [nats.url],
      logger: executorOptions(kv, bus).logger,
      retryMs: 200,
    });
    cleanups.push(() => publisher.close());

    const watcher = await connect({ servers: nats.url, maxReconnectAttempts: -1, reconnectTimeWait: 200 });
    cleanups.push(() => watcher.close());
    const heads: number[] = [];
    const sub = watcher.subscribe(headsSubject('chain-local'));
    void (async () => {
      for await (const m of sub) heads.push(decodeHead(m.data).height);
    })();
    await watcher.flush();

    const sender = key(1);
    const to = addr(key(2));
    const chain = new Chain(executor, {
      chainId: 'chain-local',
      genesis: {
        time: GENESIS_TIME,
        initialHeight: 1,
        validators: validatorsOf([VALIDATOR_KEY]),
        consensusParams: TEST_CONSENSUS_PARAMS,
        appState: genesisState([{ address: addr(sender), balance: 10n * ETH }]),
      },
    });
    cleanups.push(() => chain.remove());
    await chain.runTo(1);
    const tx = signTx(sender, { nonce: 0n, to, value: 3n * ETH });
    const checked = await executor.checkTx(tx, 'new');
    assert.equal(checked.code, 0, checked.log);
    await chain.runTo(Number(executor.latestHeight()) + 3);
    const top = Number(executor.latestHeight());
    await until('the stream reaches the executor height', 20_000, async () =>
      publisher.publishedHeight >= top ? true : undefined,
    );

    let heights = await streamHeights(watcher, 'chain-local');
    assert.deepEqual(
      heights.map((h) => h.height),
      Array.from({ length: top + 1 }, (_, i) => i),
      'the genesis record, then one message per height, in order',
    );
    assert.deepEqual(
      heights.map((h) => h.id),
      heights.map((h) => String(h.height)),
      'Nats-Msg-Id is the height',
    );
    for (let i = 1; i < heights.length; i++)
      assert.equal(heights[i]!.parentHash, heights[i - 1]!.blockHash, `parent of ${i + 1}`);
    assert.deepEqual(await executor.outboxEntries(100), [], 'acknowledged heights leave the outbox');

    // The transfer's height carries the transaction, its receipt and both accounts' new state.
    const jsm = await watcher.jetstreamManager();
    const txHash = hex(checked.hash);
    let found = false;
    for (const h of heights) {
      const r = decodeCommitted(
        (await jsm.streams.getMessage(blocksStreamName('chain-local'), { seq: h.height + 1 })).data,
      );
      if (!r.txs.some((t) => hex(t.hash) === txHash)) continue;
      found = true;
      assert.equal(hex(r.txs[0]!.raw), hex(tx));
      assert.equal(`0x${hex(r.txs[0]!.sender)}`, addr(sender));
      assert.equal(r.receipts[0]!.status, 1);
      assert.equal(r.receipts[0]!.gasUsed, 21_000n);
      const account = r.stateChanges.find((c) => c.kind === 'account' && `0x${hex(c.key)}` === to);
      assert.ok(account?.value, 'the receiver account is among the state changes');
      const [, balance] = RLP.decode(account.value) as Uint8Array[];
      assert.equal(BigInt(`0x${hex(balance!) || '0'}`), 3n * ETH);
      assert.ok(r.stateChanges.some((c) => c.kind === 'account' && `0x${hex(c.key)}` === addr(sender)));
    }
    assert.ok(found, 'a height carries the transfer');
    await until('a head for every height on core NATS', 10_000, async () =>
      heads.length >= top + 1 ? true : undefined,
    );
    assert.deepEqual(
      heads.slice(0, top + 1),
      Array.from({ length: top + 1 }, (_, i) => i),
    );

    // nats-server down: blocks keep being committed, the outbox keeps them; back up: all published.
    await nats.halt();
    await chain.runTo(top + 3);
    const top2 = Number(executor.latestHeight());
    assert.ok((await executor.outboxEntries(100)).length >= 3, 'heights wait in the outbox');
    await nats.restart();
    await until('the stream catches up after nats-server restarts', 30_000, async () =>
      publisher.publishedHeight >= top2 ? true : undefined,
    );
    heights = await streamHeights(watcher, 'chain-local');
    assert.deepEqual(
      heights.map((h) => h.height),
      Array.from({ length: top2 + 1 }, (_, i) => i),
      'no height lost or repeated',
    );

    // A height already in the stream (a crash after the ack, before the outbox record was removed)
    // is not appended again by a new publisher, even past the duplicate window.
    await publisher.close();
    const stale = (await jsm.streams.getMessage(blocksStreamName('chain-local'), { seq: 3 })).data;
    await kv.write([{ type: 'put', key: Uint8Array.from([0x50, 0, 0, 0, 0, 0, 0, 0, 2]), value: stale }]);
    assert.equal((await executor.outboxEntries(10)).length, 1);
    publisher = new BlockPublisher({
      executor,
      bus,
      chainId: 'chain-local',
      servers: [nats.url],
      logger: executorOptions(kv, bus).logger,
      retryMs: 200,
    });
    await until('the stale record is dropped', 10_000, async () =>
      (await executor.outboxEntries(10)).length === 0 ? true : undefined,
    );
    assert.equal((await jsm.streams.info(blocksStreamName('chain-local'))).state.messages, top2 + 1);
    await publisher.close();
  });

  it('a height larger than nats-server allows waits in the outbox, named, until max_payload is raised', async () => {
    const nats = await startNatsServer({ maxPayload: 64 * 1024 });
    cleanups.push(() => nats.stop());
    const dir = mkdtempSync(join(tmpdir(), 'noded-outbox-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const kv = await RocksKV.open(join(dir, 'application.db'));
    cleanups.push(() => kv.close());
    const bus = new EventBus();
    const executor = await Executor.open(executorOptions(kv, bus, { outbox: { encode: encodeCommitted } }));
    cleanups.push(() => executor.close());
    const warnings: string[] = [];
    const capture = (base: Logger): Logger => ({
      ...base,
      warn: (o: object | string, msg?: string) => {
        warnings.push(typeof o === 'string' ? o : `${msg}: ${JSON.stringify(o)}`);
      },
      child: () => capture(base),
    });
    const publisher = new BlockPublisher({
      executor,
      bus,
      chainId: 'chain-local',
      servers: [nats.url],
      logger: capture(executorOptions(kv, bus).logger),
      retryMs: 200,
    });
    cleanups.push(() => publisher.close());
    const senders = Array.from({ length: 60 }, (_, i) => key(100 + i));
    const chain = new Chain(executor, {
      chainId: 'chain-local',
      genesis: {
        time: GENESIS_TIME,
        initialHeight: 1,
        validators: validatorsOf([VALIDATOR_KEY]),
        consensusParams: TEST_CONSENSUS_PARAMS,
        appState: genesisState(senders.map((s) => ({ address: addr(s), balance: ETH }))),
      },
    });
    cleanups.push(() => chain.remove());
    await chain.runTo(1);
    const before = Number(executor.latestHeight());
    await until('the small heights are published', 20_000, async () =>
      publisher.publishedHeight >= before ? true : undefined,
    );
    for (const [i, s] of senders.entries()) {
      const r = await executor.checkTx(signTx(s, { nonce: 0n, to: addr(key(500 + i)), value: 1n }), 'new');
      assert.equal(r.code, 0, r.log);
    }
    await chain.runTo(before + 2);
    const big = (await executor.outboxEntries(10)).find((e) => decodeCommitted(e.record).txs.length === 60);
    assert.ok(big && big.record.length > 64 * 1024, `the 60-transfer height is ${big?.record.length} bytes`);
    await until('the refusal is logged', 20_000, async () =>
      warnings.some((w) =>
        w.includes(
          `height ${big.height}'s CommittedHeight is ${big.record.length} bytes, above nats-server's max_payload of 65536 bytes`,
        ),
      )
        ? true
        : undefined,
    );
    assert.equal(publisher.publishedHeight, big.height - 1, 'nothing past it is published');
    // max_payload raised and nats-server restarted: the height and the ones after it go out, in order.
    await nats.halt();
    writeFileSync(join(nats.storeDir, 'nats-server.conf'), `max_payload: ${CLUSTER_MAX_PAYLOAD}\n`);
    await nats.restart();
    const top = Number(executor.latestHeight());
    await until('published after the raise', 30_000, async () =>
      publisher.publishedHeight >= top ? true : undefined,
    );
    const nc = await connect({ servers: nats.url });
    const heights = await streamHeights(nc, 'chain-local');
    await nc.close();
    assert.deepEqual(
      heights.map((h) => h.height),
      Array.from({ length: top + 1 }, (_, i) => i),
    );
  });

  it('a CommittedHeight that breaks a field rule is refused, naming the field', () => {
    const good = CommittedHeight.encode({
      chainId: 'chain-local',
      height: 5n,
      blockHash: new Uint8Array(32).fill(1),
      parentHash: new Uint8Array(32).fill(2),
      headerRlp: Uint8Array.of(0xc0),
      blockSize: 10n,
      appHash: new Uint8Array(32),
      txs: [],
      receipts: [],
      stateChanges: [],
      codes: [],
      kvOps: [],
      lightBlock: new Uint8Array(),
    }).finish();
    assert.equal(decodeCommitted(good).height, 5);
    const bad = (over: Partial<Parameters<typeof CommittedHeight.encode>[0]>) =>
      CommittedHeight.encode({ ...CommittedHeight.decode(good), ...over }).finish();
    const refused = (bytes: Uint8Array, message: string) =>
      assert.throws(
        () => decodeCommitted(bytes),
        (err: unknown) => {
          assert.ok(err instanceof StreamFieldError);
          assert.equal(err.message, message);
          return true;
        },
      );
    refused(
      bad({ height: 2n ** 53n }),
      'CommittedHeight.height: must be at most 2^53-1, got 9007199254740992',
    );
    refused(bad({ blockHash: new Uint8Array(31) }), 'CommittedHeight.block_hash: must be 32 bytes, got 31');
    refused(bad({ chainId: '' }), 'CommittedHeight.chain_id: must not be empty');
    refused(
      bad({ txs: [{ raw: Uint8Array.of(1), sender: new Uint8Array(20), hash: new Uint8Array(32) }] }),
      'CommittedHeight.receipts: must have one receipt per transaction (1), got 0',
    );
    refused(
      bad({ stateChanges: [{ kind: 2, key: new Uint8Array(20), value: Uint8Array.of(1), deleted: false }] }),
      'CommittedHeight.state_changes[0].key: must be 52 bytes, got 20',
    );
    refused(
      bad({ stateChanges: [{ kind: 0, key: new Uint8Array(20), value: Uint8Array.of(1), deleted: false }] }),
      'CommittedHeight.state_changes[0].kind: must be KIND_ACCOUNT or KIND_STORAGE, got 0',
    );
    refused(
      bad({ kvOps: [{ key: Uint8Array.of(0x10), value: Uint8Array.of(1), delete: true }] }),
      'CommittedHeight.kv_ops[0].value: must be empty when delete is set',
    );
    refused(
      bad({ kvOps: [{ key: new Uint8Array(), value: Uint8Array.of(1), delete: false }] }),
      'CommittedHeight.kv_ops[0].key: must not be empty',
    );
    assert.throws(
      () => decodeCommitted(Uint8Array.of(0xff, 0xff, 0xff)),
      /^StreamFieldError: CommittedHeight: not a CommittedHeight message/,
    );
    assert.equal(blocksSubject('chain-local'), 'noded.chain-local.blocks');
  });
});
