// The p2p-gateway's relay traced (docs/cluster.md "Tracing"). The OpenTelemetry SDK is started as a
// service starts it (services/shared startTracing, OTLP/HTTP JSON to a receiver in this test on
// 127.0.0.1); a real peer gossips a transaction batch on /noded/mempool/1 to a real gateway host:
//   gateway "relay in /noded/mempool/1" (producer, a new trace: peers send no trace context)
//     -> its context in the Frame over the relay stream
//     -> consensus' GatewayHost "deliver /noded/mempool/1" (consumer, its child)
//     -> MempoolChannel's CheckTx of the transaction runs with that span active, so the ABCI call
//        consensus makes there (`abci CheckTx`, then the executor's CheckTx) joins the trace.
// What consensus gossips back leaves a "relay send" span per frame in the gateway.
// In its own file: the SDK it starts is global to the process.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { GatewayHost, GatewayRelay, serveGateway } from '@noded/abci-grpc';
import { ed25519Generate, nodeIdFromPublicKey } from '@noded/crypto';
import { decodeTxBatch, encodeTxBatch, MEMPOOL_PROTOCOL, MempoolChannel } from '@noded/p2p';
import { startTracing, tracingSettingsOf } from '@noded/service-shared/src/tracing.js';
import { silentLogger } from '@noded/types';
import { type SpanContext, trace } from '@opentelemetry/api';
import { OtlpReceiver, one } from '../cluster/otlp.js';
import { startTestHost, stopTestHosts, until } from './helpers.js';

const cleanups: Array<() => unknown> = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
  await stopTestHosts();
});

const PRODUCER = 4;
const CONSUMER = 5;

describe('p2p-gateway relay tracing', () => {
  it('a gossiped transaction is one trace from the gateway through the relay stream to the CheckTx consensus makes', async () => {
    const receiver = await OtlpReceiver.start();
    cleanups.push(() => receiver.close());
    const problems: string[] = [];
    const settings = tracingSettingsOf(
      { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url },
      problems,
      'p2p-gateway',
    );
    assert.deepEqual(problems, []);
    // The exporter reads its endpoint and the batch delay from the environment, as in a service.
    process.env.OTEL_EXPORTER_OTLP_ENDPOINT = receiver.url;
    process.env.OTEL_BSP_SCHEDULE_DELAY = '100';
    const tracing = await startTracing(settings, silentLogger);
    assert.ok(tracing, 'tracing started');
    let stopped = false;
    cleanups.push(() => (stopped ? undefined : tracing.shutdown()));

    const key = ed25519Generate();
    const gatewayId = nodeIdFromPublicKey(key.publicKey);
    let hostPort = 0;
    const relay = new GatewayRelay({
      chainId: 'chain-local',
      nodeId: gatewayId,
      listenAddr: '127.0.0.1:0',
      logger: silentLogger,
      openHost: async (channels) => {
        const t = await startTestHost(
          (h) => {
            for (const c of channels) h.register(c);
          },
          { key },
        );
        hostPort = t.port;
        return t.host;
      },
    });
    const server = await serveGateway(relay, '127.0.0.1:0');
    cleanups.push(() => server.close());

    // Consensus' side: GatewayHost and an unchanged MempoolChannel; its pool records the span active
    // when CheckTx is called (the parent the ABCI client's `abci CheckTx` span takes).
    const checked: Array<{ tx: string; active: SpanContext | undefined }> = [];
    let admit: (raw: Uint8Array, hash: string) => void = () => {};
    const remote = new GatewayHost({
      address: `127.0.0.1:${server.port}`,
      chainId: 'chain-local',
      nodeId: gatewayId,
      logger: silentLogger,
    });
    cleanups.push(() => remote.stop());
    const channel = new MempoolChannel(
      remote,
      {
        checkTx: async (tx) => {
          checked.push({ tx: new TextDecoder().decode(tx), active: trace.getActiveSpan()?.spanContext() });
          return { code: 0, log: '' };
        },
        onTxAdmitted: (l) => {
          admit = l;
          return () => {};
        },
      },
      1024,
      silentLogger,
    );
    cleanups.push(() => channel.close());
    remote.start();
    await remote.waitAttached(10_000);

    const got: string[] = [];
    const peer = await startTestHost(
      (h) =>
        h.register({
          protocol: MEMPOOL_PROTOCOL,
          maxMessageBytes: 1 << 20,
          onMessage: (_p, payload) => {
            for (const t of decodeTxBatch(payload)) got.push(new TextDecoder().decode(t));
          },
        }),
      { peers: [{ nodeId: gatewayId, host: '127.0.0.1', port: hostPort }] },
    );
    await until('the peer seen through the relay', () => remote.peerIds().includes(peer.id));
    const batch = encodeTxBatch([new TextEncoder().encode('tx-from-peer')]);
    peer.host.send(gatewayId, MEMPOOL_PROTOCOL, batch);
    await until('CheckTx of the gossiped transaction', () => checked.some((c) => c.tx === 'tx-from-peer'));
    // Consensus gossips an admitted transaction: a frame to the peer through the gateway.
    admit(new TextEncoder().encode('tx-to-peer'), '0xaa');
    await until('the peer got it', () => got.includes('tx-to-peer'));

    channel.close();
    remote.stop();
    await server.close();
    stopped = true;
    await tracing.shutdown(); // flushes the batch
    assert.deepEqual(receiver.problems, [], 'every export was a well-formed OTLP JSON request');
    const spans = receiver.spans;

    const relayIn = one(spans, 'gateway relay in', (s) => s.name === `relay in ${MEMPOOL_PROTOCOL}`);
    assert.equal(relayIn.kind, PRODUCER);
    assert.equal(relayIn.parentSpanId, undefined, 'a peer sends no trace context: a new trace');
    assert.equal(relayIn.attrs['noded.p2p.peer'], peer.id);
    assert.equal(relayIn.attrs['noded.p2p.protocol'], MEMPOOL_PROTOCOL);
    assert.equal(relayIn.attrs['noded.p2p.bytes'], batch.length);
    const deliver = one(spans, 'consensus deliver', (s) => s.name === `deliver ${MEMPOOL_PROTOCOL}`);
    assert.equal(deliver.kind, CONSUMER);
    assert.equal(deliver.traceId, relayIn.traceId, 'the Frame carried the gateway span across the relay');
    assert.equal(deliver.parentSpanId, relayIn.spanId);
    const check = checked.find((c) => c.tx === 'tx-from-peer')!;
    assert.ok(check.active, 'CheckTx runs inside a span');
    assert.equal(check.active.traceId, deliver.traceId);
    assert.equal(check.active.spanId, deliver.spanId, "CheckTx runs as the deliver span's child");

    const out = one(spans, 'gateway relay send', (s) => s.name === `relay send ${MEMPOOL_PROTOCOL}`);
    assert.equal(out.kind, CONSUMER);
    assert.equal(out.attrs['noded.p2p.peer'], peer.id);
    assert.ok(Number(out.attrs['noded.p2p.bytes']) > 0);
  });
});
