// A transaction's trace across validators (docs/cluster.md "Tracing"), in one process with the
// OpenTelemetry SDK keeping spans in memory, through the real code of two cluster validators:
//   validator A: an EVM executor served over gRPC (serveApplication with its mempool), consensus'
//     side of it (GrpcApplication, AdmissionStream, ExecutorGossipPool) and MempoolChannel on a real
//     P2P host;
//   validator B: the same, its MempoolChannel over a p2p-gateway (GatewayRelay on a real host
//     connected to A, GatewayHost on consensus' side, the relay stream over gRPC), and a consensus
//     runtime over its executor.
// A client span ("eth_sendRawTransaction", as an rpc-edge's) sends a transfer to A's mempool over
// gRPC. Then:
//   A's executor CheckTx (child of the client's span) -> its context on StreamAdmitted -> A's
//   gossip on /noded/mempool/2 -> B's gateway `relay in` -> B's `deliver /noded/mempool/2` (which
//   links to A's CheckTx) -> B's `abci CheckTx` (A's CheckTx's child, across the validators) -> B's
//   executor CheckTx -> B's runtime proposes the block: B's PrepareProposal and FinalizeBlock link
//   to B's CheckTx, whose trace is the client's.
// And the other way, compatibility: a peer that lists only /noded/mempool/1 (a node before
// /noded/mempool/2) still gets the transaction, as a /noded/mempool/1 batch.
// In its own file: the SDK it starts is global to the process.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import {
  AdmissionStream,
  GatewayHost,
  GatewayRelay,
  GrpcApplication,
  GrpcMempool,
  serveApplication,
  serveGateway,
} from '@noded/abci-grpc';
import { ed25519Generate, nodeIdFromPublicKey } from '@noded/crypto';
import { Executor } from '@noded/execution';
import {
  decodeTxBatch,
  MEMPOOL_PROTOCOL,
  MEMPOOL_TRACED_PROTOCOL,
  MempoolChannel,
  type P2PHost,
} from '@noded/p2p';
import { ExecutorGossipPool } from '@noded/service-consensus/src/gossip-pool.js';
import { MemoryKV } from '@noded/storage';
import { inSpan, setTracingEnabled } from '@noded/telemetry';
import { EventBus, silentLogger } from '@noded/types';
import { NodeSDK } from '@opentelemetry/sdk-node';
import { InMemorySpanExporter, type ReadableSpan, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { Chain, VALIDATOR_KEY } from '../cluster/helpers.js';
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
import { startTestHost, stopTestHosts, until } from './helpers.js';

const cleanups: Array<() => unknown> = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
  await stopTestHosts();
});

const SENDER = key(1);
const GENESIS = {
  time: GENESIS_TIME,
  initialHeight: 1,
  validators: validatorsOf([VALIDATOR_KEY]),
  consensusParams: TEST_CONSENSUS_PARAMS,
  appState: genesisState([{ address: addr(SENDER), balance: 10n * ETH }]),
};

/**
 * One cluster validator's executor and consensus' side of it, its chain at height 1; with
 * `viaGateway`, its peers come through a p2p-gateway as in the cluster.
 */
async function validator(peers: Array<{ nodeId: string; port: number }> = [], viaGateway = false) {
  const executor = await Executor.open(executorOptions(new MemoryKV(), new EventBus()));
  cleanups.push(() => executor.close());
  const server = await serveApplication(executor, '127.0.0.1:0', { mempool: executor });
  cleanups.push(() => server.close(0));
  const app = new GrpcApplication(server.address);
  cleanups.push(() => app.close());
  const chain = new Chain(app, { chainId: 'chain-local', genesis: GENESIS });
  cleanups.push(() => chain.remove());
  await chain.runTo(1);
  const mempool = new GrpcMempool(server.address);
  cleanups.push(() => mempool.close());
  const admissions = new AdmissionStream(server.address, { logger: silentLogger });
  cleanups.push(() => admissions.stop());
  const pool = new ExecutorGossipPool(app, mempool, admissions);
  cleanups.push(() => pool.close());
  const dial = peers.map((p) => ({ nodeId: p.nodeId, host: '127.0.0.1', port: p.port }));
  let channel: MempoolChannel | undefined;
  cleanups.push(() => channel?.close());
  if (viaGateway) {
    const key = ed25519Generate();
    const gatewayId = nodeIdFromPublicKey(key.publicKey);
    const relay = new GatewayRelay({
      chainId: 'chain-local',
      nodeId: gatewayId,
      listenAddr: '127.0.0.1:0',
      logger: silentLogger,
      openHost: async (channels) =>
        (
          await startTestHost(
            (h) => {
              for (const c of channels) h.register(c);
            },
            { key, peers: dial },
          )
        ).host,
    });
    const gateway = await serveGateway(relay, '127.0.0.1:0');
    cleanups.push(() => gateway.close());
    const remote = new GatewayHost({
      address: `127.0.0.1:${gateway.port}`,
      chainId: 'chain-local',
      nodeId: gatewayId,
      logger: silentLogger,
    });
    cleanups.push(() => remote.stop());
    channel = new MempoolChannel(remote, pool, 1 << 20, silentLogger);
    remote.start();
    await remote.waitAttached(10_000);
    admissions.start();
    return { executor, server, app, chain, mempool, id: gatewayId };
  }
  const t = await startTestHost(
    (h) => {
      channel = new MempoolChannel(h, pool, 1 << 20, silentLogger);
    },
    { peers: dial },
  );
  admissions.start();
  return { executor, server, app, chain, mempool, host: t.host, id: t.id, port: t.port };
}

describe('trace context between validators', () => {
  it("a transaction's trace goes from the validator that admitted it to the proposer's block spans on another", async () => {
    const exporter = new InMemorySpanExporter();
    const sdk = new NodeSDK({
      serviceName: 'gossip-tracing-test',
      spanProcessors: [new SimpleSpanProcessor(exporter)],
      metricReaders: [],
      logRecordProcessors: [],
      instrumentations: [],
      autoDetectResources: false,
    });
    sdk.start();
    setTracingEnabled(true);
    cleanups.push(async () => {
      setTracingEnabled(false);
      await sdk.shutdown();
    });

    const a = await validator();
    const aHost = a.host!;
    const b = await validator([{ nodeId: a.id, port: a.port! }], true);
    // A peer of a version before /noded/mempool/2: it lists /noded/mempool/1 only.
    const oldBatches: Uint8Array[][] = [];
    let old: P2PHost | undefined;
    const oldPeer = await startTestHost(
      (h) => {
        old = h;
        h.register({
          protocol: MEMPOOL_PROTOCOL,
          maxMessageBytes: (1 << 20) + 4,
          onMessage: (_peer, payload) => oldBatches.push(decodeTxBatch(payload)),
        });
      },
      { peers: [{ nodeId: a.id, host: '127.0.0.1', port: a.port! }] },
    );
    await until('A has both peers', () => aHost.peerIds().length === 2, 15_000);
    const peerInfo = (id: string) => aHost.peerInfos().find((p) => p.nodeId === id);
    assert.ok(peerInfo(b.id)?.channels?.includes(MEMPOOL_TRACED_PROTOCOL), 'B lists /noded/mempool/2');
    assert.ok(!peerInfo(oldPeer.id)?.channels?.includes(MEMPOOL_TRACED_PROTOCOL), 'the old peer does not');
    assert.ok(old);

    // The client's span, as an rpc-edge opens one for eth_sendRawTransaction.
    const tx = signTx(SENDER, { nonce: 0n, to: addr(key(2)), value: 1n * ETH });
    let clientSpan = { traceId: '', spanId: '' };
    const hash = await inSpan('eth_sendRawTransaction', { kind: 'server' }, async (span) => {
      clientSpan = span.context();
      return a.mempool.sendRawTransaction(tx);
    });

    // B's pool gets it by gossip; the old peer gets it as a /noded/mempool/1 batch.
    const hashBytes = Buffer.from(hash.slice(2), 'hex');
    const deadline = Date.now() + 20_000;
    while (!(await b.mempool.pendingTransaction(hashBytes)) && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 50));
    assert.ok(await b.mempool.pendingTransaction(hashBytes), "the transaction reached B's pool");
    await until('the old peer got the transaction', () => oldBatches.flat().length > 0, 15_000);
    assert.deepEqual(
      oldBatches.flat().map((t) => Buffer.from(t).toString('hex')),
      [Buffer.from(tx).toString('hex')],
    );

    // B proposes (a runtime over B's executor) until the transaction is in a block.
    const bRuntime = new GrpcApplication(b.server.address);
    cleanups.push(() => bRuntime.close());
    await b.chain.runTo(3, { app: bRuntime });
    assert.ok(
      b.chain.blocks.some((blk) => blk.txs.some((t) => Buffer.from(t).equals(Buffer.from(tx)))),
      "the transaction is in a block of B's",
    );
    assert.equal((await b.executor.getReceipt(hash))?.status, 1);

    const spans = exporter.getFinishedSpans();
    const byId = new Map(spans.map((s) => [s.spanContext().spanId, s]));
    const parentOf = (s: ReadableSpan) => s.parentSpanContext?.spanId;
    const checks = spans.filter((s) => s.name === 'CheckTx' && s.attributes['noded.tx.hash'] === hash);
    // A's executor: the CheckTx of the client's call.
    const checkA = checks.find((s) => parentOf(s) === clientSpan.spanId);
    assert.ok(checkA, "A's executor CheckTx is the client's child");
    // B's consensus: the ABCI CheckTx of the gossiped transaction, a child of A's CheckTx.
    const abciB = spans.find((s) => s.name === 'abci CheckTx' && parentOf(s) === checkA.spanContext().spanId);
    assert.ok(
      abciB,
      `B's abci CheckTx is a child of A's CheckTx (abci CheckTx spans: ${JSON.stringify(
        spans.filter((s) => s.name === 'abci CheckTx').map((s) => parentOf(s)),
      )})`,
    );
    const checkB = checks.find((s) => parentOf(s) === abciB.spanContext().spanId);
    assert.ok(checkB, "B's executor CheckTx is the child of B's abci CheckTx");
    for (const s of [checkA, abciB, checkB])
      assert.equal(s.spanContext().traceId, clientSpan.traceId, `${s.name} is in the client's trace`);
    // B's gateway relayed the frame in a trace of its own; consensus' deliver span (its child) links
    // to the context of the transaction the frame carried.
    const linksTo = (s: ReadableSpan, target: ReadableSpan) =>
      s.links.some((l) => l.context.spanId === target.spanContext().spanId);
    const deliver = spans.find((s) => s.name === `deliver ${MEMPOOL_TRACED_PROTOCOL}` && linksTo(s, checkA));
    assert.ok(deliver, `B's deliver ${MEMPOOL_TRACED_PROTOCOL} links to A's CheckTx`);
    assert.notEqual(deliver.spanContext().traceId, clientSpan.traceId);
    assert.equal(byId.get(parentOf(deliver) ?? '')?.name, `relay in ${MEMPOOL_TRACED_PROTOCOL}`);

    // B's block spans link to B's CheckTx: the proposer's block building follows from the trace.
    const prepare = spans.find((s) => s.name === 'PrepareProposal' && linksTo(s, checkB));
    assert.ok(prepare, "B's PrepareProposal links to B's CheckTx of the transaction");
    assert.equal(
      prepare.links.find((l) => l.context.spanId === checkB.spanContext().spanId)?.context.traceId,
      clientSpan.traceId,
    );
    assert.ok(
      spans.some((s) => s.name === 'FinalizeBlock' && linksTo(s, checkB)),
      "B's FinalizeBlock links to it too",
    );
    // The chain, once more, by parents: B's CheckTx -> B's abci CheckTx -> A's CheckTx -> the client.
    const up: string[] = [];
    for (let s: ReadableSpan | undefined = checkB; s; s = byId.get(parentOf(s) ?? '')) up.push(s.name);
    assert.deepEqual(up, ['CheckTx', 'abci CheckTx', 'CheckTx', 'eth_sendRawTransaction']);
  });
});
