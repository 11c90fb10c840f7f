// OpenTelemetry across the cluster (docs/cluster.md "Tracing"): nats-server, `noded service executor`,
// `consensus`, `state-store` and `rpc-edge` as processes exporting OTLP/HTTP (JSON) to a receiver in
// this test on 127.0.0.1. A raw transaction sent through the edge with a W3C traceparent, and its
// receipt read with the same trace id, leave spans in every service that chain as designed:
//   tx trace:    client -> rpc-edge eth_sendRawTransaction -> executor CheckTx
//   block trace: consensus "abci PrepareProposal" / "abci FinalizeBlock" -> executor PrepareProposal /
//                FinalizeBlock (each LINKS to the transaction's CheckTx) -> executor "publish
//                CommittedHeight" -> state-store "apply CommittedHeight" (over NATS headers)
//   tx trace:    client -> rpc-edge eth_getTransactionReceipt -> state-store "Read getReceipt"
//                (LINKS to the apply of the receipt's height)
// With the exporter off (OTEL_TRACES_EXPORTER=none, OTEL_SDK_DISABLED=true) a traced request makes no
// export attempt at all; with the collector gone, the service logs why and keeps serving. The OTEL_*
// variables are checked at start with precise messages.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { after, describe, it } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { GrpcMempool, mempoolProto } from '@noded/abci-grpc';
import { tracingSettingsOf } from '@noded/service-shared/src/tracing.js';
import { Wallet } from 'ethers';
import WebSocket from 'ws';
import { DEV_ADDRESSES, DEV_KEYS, freePort, initLocalHome } from '../e2e/harness.js';
import { closedPort } from './helpers.js';
import { startNatsServer } from './nats.js';
import { linksTo, OtlpReceiver, one } from './otlp.js';
import { comet, type ServiceProcess, spawnService, until, waitForService } from './processes.js';

const cleanups: Array<() => unknown> = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

// ------------------------------------------------------------------------------------- helpers

const hexId = (bytes: number) => randomBytes(bytes).toString('hex');
const traceparent = (traceId: string, spanId: string) => `00-${traceId}-${spanId}-01`;

async function rpc(url: string, method: string, params: unknown[], headers: Record<string, string> = {}) {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
    signal: AbortSignal.timeout(30_000),
  });
  const json = (await res.json()) as { result?: unknown; error?: { message: string } };
  if (json.error) throw new Error(`${method}: ${json.error.message}`);
  return json.result;
}

/** One JSON-RPC request over a fresh WebSocket (no headers per message: each starts a trace). */
async function wsCall(url: string, method: string, params: unknown): Promise<unknown> {
  const ws = new WebSocket(url);
  try {
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
    });
    const reply = new Promise<{ result?: unknown; error?: { message: string } }>((resolve, reject) => {
      const t = setTimeout(() => reject(new Error(`${method} over WebSocket: no answer in 30 s`)), 30_000);
      ws.on('message', (data) => {
        const m = JSON.parse(String(data)) as { id?: number; result?: unknown; error?: { message: string } };
        if (m.id !== 7) return;
        clearTimeout(t);
        resolve(m);
      });
    });
    ws.send(JSON.stringify({ jsonrpc: '2.0', id: 7, method, params }));
    const m = await reply;
    if (m.error) throw new Error(`${method} over WebSocket: ${JSON.stringify(m.error)}`);
    return m.result;
  } finally {
    ws.close();
  }
}

/** A signed EIP-1559 transfer from dev account 0 at `nonce`. */
async function signedTransfer(nonce: number, maxFee: bigint): Promise<string> {
  return new Wallet(DEV_KEYS[0]!).signTransaction({
    type: 2,
    chainId: 31337,
    nonce,
    to: DEV_ADDRESSES[1],
    value: 1_000n,
    gasLimit: 21_000n,
    maxFeePerGas: maxFee,
    maxPriorityFeePerGas: 1n,
  });
}

describe('tracing across the cluster', () => {
  it('one trace follows a transaction from the edge through CheckTx, linked block spans, the apply and the receipt read', async () => {
    const receiver = await OtlpReceiver.start();
    cleanups.push(() => receiver.close());
    const { home, ports } = await initLocalHome({ timeoutCommit: '300ms' });
    cleanups.push(() => rmSync(home, { recursive: true, force: true }));
    const nats = await startNatsServer();
    cleanups.push(() => nats.stop());
    const env = {
      NODED_EXECUTOR_GRPC_ADDRESS: `127.0.0.1:${await freePort()}`,
      NODED_STATE_STORE_GRPC_ADDRESS: `127.0.0.1:${await freePort()}`,
      NODED_NATS_URL: nats.url,
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_BSP_SCHEDULE_DELAY: '200',
    };
    const running: ServiceProcess[] = [];
    const stopAll = async () => {
      while (running.length > 0) await running.pop()!.stop();
    };
    cleanups.push(stopAll);
    for (const name of ['executor', 'consensus', 'state-store', 'rpc-edge']) {
      const s = spawnService(name, home, env);
      running.push(s);
      await waitForService(s, new RegExp(`noded service ${name} is running`), 90_000);
      assert.match(s.output(), /tracing on/, `${name} says tracing is on`);
    }
    const url = `http://127.0.0.1:${ports.evmHttp}`;
    await until('the edge reports blocks', 60_000, async () =>
      BigInt((await rpc(url, 'eth_blockNumber', [])) as string) >= 2n ? true : undefined,
    );

    const traceId = hexId(16);
    const sendParent = hexId(8);
    const readParent = hexId(8);
    const nonce = Number(await rpc(url, 'eth_getTransactionCount', [DEV_ADDRESSES[0], 'pending']));
    const gasPrice = BigInt((await rpc(url, 'eth_gasPrice', [])) as string);
    const raw = await signedTransfer(nonce, gasPrice * 2n);
    const hash = (await rpc(url, 'eth_sendRawTransaction', [raw], {
      traceparent: traceparent(traceId, sendParent),
    })) as string;
    const receipt = await until('the receipt', 60_000, async () => {
      const r = (await rpc(url, 'eth_getTransactionReceipt', [hash], {
        traceparent: traceparent(traceId, readParent),
      })) as { blockNumber: string; status: string } | null;
      return r ?? undefined;
    });
    assert.equal(receipt.status, '0x1');
    const height = Number(receipt.blockNumber);
    // A second transaction through consensus' CometBFT RPC: its CheckTx is the ABCI one.
    const viaComet = await signedTransfer(nonce + 1, gasPrice * 2n);
    const committed = await comet<{ check_tx: { code: number; log: string }; height: string }>(
      `http://127.0.0.1:${ports.rpc}`,
      `broadcast_tx_commit?tx=${viaComet}`,
    );
    assert.equal(committed.check_tx.code, 0, committed.check_tx.log);
    const cometHeight = Number(committed.height);
    // The same over consensus' RPC with the client's traceparent, and over its /websocket.
    const cometTrace = hexId(16);
    const cometParent = hexId(8);
    const viaCometTraced = await signedTransfer(nonce + 2, gasPrice * 2n);
    const syncRes = await fetch(`http://127.0.0.1:${ports.rpc}/broadcast_tx_sync?tx=${viaCometTraced}`, {
      headers: { traceparent: traceparent(cometTrace, cometParent) },
      signal: AbortSignal.timeout(30_000),
    });
    const sync = (await syncRes.json()) as { result: { code: number; log: string; hash: string } };
    assert.equal(sync.result.code, 0, sync.result.log);
    const viaCometWs = await signedTransfer(nonce + 3, gasPrice * 2n);
    const wsSync = (await wsCall(`ws://127.0.0.1:${ports.rpc}/websocket`, 'broadcast_tx_sync', {
      tx: Buffer.from(viaCometWs.slice(2), 'hex').toString('base64'),
    })) as { code: number; log: string };
    assert.equal(wsSync.code, 0, wsSync.log);
    // eth_sendRawTransaction over the edge's WebSocket (:8546).
    const viaWs = await signedTransfer(nonce + 4, gasPrice * 2n);
    const wsHash = (await wsCall(`ws://127.0.0.1:${ports.evmWs}`, 'eth_sendRawTransaction', [
      viaWs,
    ])) as string;
    // A REST route on the edge (:1317) with the client's traceparent.
    const restTrace = hexId(16);
    const restParent = hexId(8);
    const balance = await fetch(
      `http://127.0.0.1:${ports.api}/cosmos/bank/v1beta1/balances/${DEV_ADDRESSES[1]}`,
      { headers: { traceparent: traceparent(restTrace, restParent) }, signal: AbortSignal.timeout(30_000) },
    );
    assert.equal(balance.status, 200, await balance.clone().text());
    await until('the WebSocket transactions leave the pool', 60_000, async () =>
      Number(await rpc(url, 'eth_getTransactionCount', [DEV_ADDRESSES[0], 'latest'])) >= nonce + 5
        ? true
        : undefined,
    );

    // SIGTERM: each service's SDK flushes what it buffered before the process exits.
    await stopAll();
    assert.deepEqual(receiver.problems, [], 'every export was a well-formed OTLP JSON request');
    const spans = receiver.spans;
    const services = new Set(spans.map((s) => s.service));
    for (const s of ['noded-executor', 'noded-consensus', 'noded-state-store', 'noded-rpc-edge'])
      assert.ok(services.has(s), `spans from ${s} (got ${[...services].join(', ')})`);

    // The transaction's trace: the client's span -> the edge -> CheckTx on the executor.
    const send = one(
      spans,
      'edge eth_sendRawTransaction over HTTP',
      (s) => s.name === 'eth_sendRawTransaction' && s.attrs['noded.transport'] === 'http',
    );
    assert.equal(send.service, 'noded-rpc-edge');
    assert.equal(send.traceId, traceId);
    assert.equal(send.parentSpanId, sendParent);
    assert.equal(send.kind, 2, 'a server span');
    const checkTx = one(
      spans,
      'CheckTx of the transaction',
      (s) => s.name === 'CheckTx' && s.attrs['noded.tx.hash'] === hash,
    );
    assert.equal(checkTx.service, 'noded-executor');
    assert.equal(checkTx.traceId, traceId);
    assert.equal(checkTx.parentSpanId, send.spanId);

    // The block's trace, started by consensus: its FinalizeBlock links to the transaction's CheckTx.
    const finalize = one(
      spans,
      'executor FinalizeBlock of the height',
      (s) =>
        s.name === 'FinalizeBlock' && s.service === 'noded-executor' && s.attrs['noded.height'] === height,
    );
    assert.notEqual(finalize.traceId, traceId, 'a block is its own trace');
    assert.ok(linksTo(finalize, checkTx), 'FinalizeBlock links to the CheckTx of each of its transactions');
    const finalizeClient = one(
      spans,
      'consensus abci FinalizeBlock',
      (s) => s.spanId === finalize.parentSpanId,
    );
    assert.equal(finalizeClient.service, 'noded-consensus');
    assert.equal(finalizeClient.name, 'abci FinalizeBlock');
    assert.equal(finalizeClient.traceId, finalize.traceId);
    // The proposal of the height (one per round it took: a busy machine may need a second round).
    const prepares = spans.filter(
      (s) => s.name === 'PrepareProposal' && s.attrs['noded.height'] === height && linksTo(s, checkTx),
    );
    assert.ok(prepares.length >= 1, 'the proposal that reaped the transaction links to its CheckTx');
    for (const prepare of prepares) {
      assert.equal(prepare.service, 'noded-executor');
      const client = one(spans, 'consensus abci PrepareProposal', (s) => s.spanId === prepare.parentSpanId);
      assert.equal(client.service, 'noded-consensus');
      assert.equal(client.name, 'abci PrepareProposal');
    }
    // Blocks without the transaction do not link to it.
    const others = spans.filter((s) => s.name === 'FinalizeBlock' && s.attrs['noded.height'] !== height);
    assert.ok(others.length > 0, 'other heights were finalized too');
    assert.ok(
      others.every((s) => !linksTo(s, checkTx)),
      'only the block holding the transaction links to it',
    );

    // broadcast_tx_*: consensus' ABCI CheckTx, the executor's CheckTx its child, and the block links to it.
    const abciCheck = spans.filter(
      (s) =>
        s.name === 'CheckTx' &&
        s.service === 'noded-executor' &&
        spans.some(
          (c) => c.spanId === s.parentSpanId && c.name === 'abci CheckTx' && c.service === 'noded-consensus',
        ),
    );
    assert.ok(abciCheck.length >= 1, 'an ABCI CheckTx span on the executor, child of consensus');
    const cometFinalize = one(
      spans,
      'executor FinalizeBlock of the broadcast height',
      (s) =>
        s.name === 'FinalizeBlock' &&
        s.service === 'noded-executor' &&
        s.attrs['noded.height'] === cometHeight,
    );
    assert.ok(
      abciCheck.some((c) => linksTo(cometFinalize, c)),
      'the block of a broadcast transaction links to its ABCI CheckTx',
    );

    // consensus' RPC over HTTP: the client's traceparent -> broadcast_tx_sync -> abci CheckTx ->
    // the executor's CheckTx, one trace.
    const syncSpan = one(
      spans,
      'consensus broadcast_tx_sync over HTTP',
      (s) => s.name === 'broadcast_tx_sync' && s.traceId === cometTrace,
    );
    assert.equal(syncSpan.service, 'noded-consensus');
    assert.equal(syncSpan.kind, 2, 'a server span');
    assert.equal(syncSpan.parentSpanId, cometParent);
    assert.equal(syncSpan.attrs['noded.transport'], 'http');
    const syncAbci = one(
      spans,
      'abci CheckTx of broadcast_tx_sync',
      (s) => s.parentSpanId === syncSpan.spanId,
    );
    assert.equal(syncAbci.name, 'abci CheckTx');
    assert.equal(syncAbci.traceId, cometTrace);
    const syncCheck = one(
      spans,
      'executor CheckTx of broadcast_tx_sync',
      (s) => s.parentSpanId === syncAbci.spanId,
    );
    assert.equal(syncCheck.name, 'CheckTx');
    assert.equal(syncCheck.service, 'noded-executor');
    assert.equal(syncCheck.traceId, cometTrace);
    // broadcast_tx_commit without a traceparent: a span of its own trace, parent of its abci CheckTx.
    const commitSpan = one(spans, 'consensus broadcast_tx_commit', (s) => s.name === 'broadcast_tx_commit');
    assert.equal(commitSpan.parentSpanId, undefined, 'no traceparent: a new trace');
    assert.ok(
      spans.some((s) => s.name === 'abci CheckTx' && s.parentSpanId === commitSpan.spanId),
      'broadcast_tx_commit is the parent of its abci CheckTx',
    );
    // consensus' /websocket: a span per message (a new trace: no headers), the same chain below it.
    const wsSyncSpan = one(
      spans,
      'consensus broadcast_tx_sync over /websocket',
      (s) => s.name === 'broadcast_tx_sync' && s.attrs['noded.transport'] === 'ws',
    );
    assert.equal(wsSyncSpan.service, 'noded-consensus');
    assert.equal(wsSyncSpan.parentSpanId, undefined);
    const wsAbci = one(
      spans,
      'abci CheckTx of the /websocket message',
      (s) => s.parentSpanId === wsSyncSpan.spanId,
    );
    assert.equal(wsAbci.name, 'abci CheckTx');
    assert.ok(
      spans.some(
        (s) => s.name === 'CheckTx' && s.service === 'noded-executor' && s.parentSpanId === wsAbci.spanId,
      ),
      'the executor CheckTx of the /websocket broadcast is the child of its abci CheckTx',
    );
    // The edge's WebSocket (:8546): eth_sendRawTransaction is a server span (a new trace), and the
    // executor's CheckTx of that transaction its child.
    const wsSend = one(
      spans,
      'edge eth_sendRawTransaction over WebSocket',
      (s) => s.name === 'eth_sendRawTransaction' && s.attrs['noded.transport'] === 'ws',
    );
    assert.equal(wsSend.service, 'noded-rpc-edge');
    assert.equal(wsSend.kind, 2);
    assert.equal(wsSend.parentSpanId, undefined);
    const wsCheck = one(
      spans,
      'CheckTx of the WebSocket transaction',
      (s) => s.name === 'CheckTx' && s.attrs['noded.tx.hash'] === wsHash,
    );
    assert.equal(wsCheck.parentSpanId, wsSend.spanId);
    assert.equal(wsCheck.traceId, wsSend.traceId);
    // REST (:1317) on the edge: a server span per route, the client's traceparent its parent, and the
    // state-store read it made its child.
    const restSpan = one(
      spans,
      'edge REST balances',
      (s) => s.traceId === restTrace && s.service === 'noded-rpc-edge',
    );
    assert.equal(restSpan.name, 'GET /cosmos/bank/v1beta1/balances/{address}');
    assert.equal(restSpan.kind, 2);
    assert.equal(restSpan.parentSpanId, restParent);
    assert.equal(restSpan.attrs['http.route'], '/cosmos/bank/v1beta1/balances/{address}');
    assert.equal(restSpan.attrs['http.response.status_code'], 200);
    const restReads = spans.filter(
      (s) => s.service === 'noded-state-store' && s.parentSpanId === restSpan.spanId,
    );
    assert.ok(restReads.length >= 1, "the route read the state-store as the span's child");
    for (const r of restReads) {
      assert.equal(r.traceId, restTrace);
      assert.match(r.name, /^Read /);
    }

    // FinalizeBlock -> the publish of its height -> the state-store's apply, over NATS headers.
    const publish = one(
      spans,
      'publish of the height',
      (s) => s.name === 'publish CommittedHeight' && s.attrs['noded.height'] === height,
    );
    assert.equal(publish.service, 'noded-executor');
    assert.equal(publish.parentSpanId, finalize.spanId);
    assert.equal(publish.traceId, finalize.traceId);
    const apply = one(
      spans,
      'apply of the height',
      (s) => s.name === 'apply CommittedHeight' && s.attrs['noded.height'] === height,
    );
    assert.equal(apply.service, 'noded-state-store');
    assert.equal(apply.parentSpanId, publish.spanId);
    assert.equal(apply.traceId, finalize.traceId);

    // The receipt read joins the client's trace, and its state-store read links to the apply.
    const reads = spans.filter((s) => s.name === 'eth_getTransactionReceipt');
    assert.ok(reads.length >= 1);
    for (const r of reads) {
      assert.equal(r.service, 'noded-rpc-edge');
      assert.equal(r.traceId, traceId);
      assert.equal(r.parentSpanId, readParent);
    }
    const storeRead = spans.find(
      (s) => s.name === 'Read getReceipt' && s.traceId === traceId && linksTo(s, apply),
    );
    assert.ok(storeRead, 'the state-store read that found the receipt links to the apply of its height');
    assert.equal(storeRead.service, 'noded-state-store');
    assert.ok(
      reads.some((r) => r.spanId === storeRead.parentSpanId),
      'the state-store read is the child of an edge receipt read',
    );
  });

  it('makes no export attempt with the exporter off, and refuses bad OTEL_* values by name', async () => {
    const receiver = await OtlpReceiver.start();
    cleanups.push(() => receiver.close());
    const { home, ports } = await initLocalHome({ timeoutCommit: '300ms' });
    cleanups.push(() => rmSync(home, { recursive: true, force: true }));
    const nats = await startNatsServer();
    cleanups.push(() => nats.stop());
    const executorAt = `127.0.0.1:${await freePort()}`;
    const base = { NODED_EXECUTOR_GRPC_ADDRESS: executorAt, NODED_NATS_URL: nats.url };
    const running: ServiceProcess[] = [];
    const stopAll = async () => {
      while (running.length > 0) await running.pop()!.stop();
    };
    cleanups.push(stopAll);
    // Both ways of turning it off, each with an endpoint that would receive spans if it were on.
    const off: Record<string, Record<string, string>> = {
      executor: { OTEL_TRACES_EXPORTER: 'none', OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url },
      consensus: {
        OTEL_SDK_DISABLED: 'true',
        OTEL_TRACES_EXPORTER: 'otlp',
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      },
    };
    for (const name of ['executor', 'consensus']) {
      const s = spawnService(name, home, { ...base, ...off[name], OTEL_BSP_SCHEDULE_DELAY: '100' });
      running.push(s);
      await waitForService(s, new RegExp(`noded service ${name} is running`), 90_000);
      assert.doesNotMatch(s.output(), /tracing on/);
    }
    const rpcUrl = `http://127.0.0.1:${ports.rpc}`;
    const mempool = new GrpcMempool(executorAt);
    cleanups.push(() => mempool.close());
    const nonce = Number(await mempool.pendingNonce(Buffer.from(DEV_ADDRESSES[0]!.slice(2), 'hex')));
    const raw = Buffer.from((await signedTransfer(nonce, 10n ** 12n)).slice(2), 'hex');
    // A traced CheckTx: the caller's traceparent in the metadata, as an edge sends it.
    const client = new grpc.Client(executorAt, grpc.credentials.createInsecure());
    cleanups.push(() => client.close());
    const md = new grpc.Metadata();
    md.set('traceparent', traceparent(hexId(16), hexId(8)));
    const def = mempoolProto.MempoolService.sendRawTransaction;
    const sent = await new Promise<Buffer>((resolve, reject) =>
      client.makeUnaryRequest(
        def.path,
        def.requestSerialize,
        def.responseDeserialize,
        { raw },
        md,
        { deadline: Date.now() + 10_000 },
        (err, res) => (err ? reject(err) : resolve(Buffer.from(res!.hash))),
      ),
    );
    assert.equal(sent.length, 32);
    await until('the transaction leaves the mempool in a block', 60_000, async () =>
      (await mempool.pendingTransaction(sent)) === undefined ? true : undefined,
    );
    const h0 = Number(
      (await comet<{ sync_info: { latest_block_height: string } }>(rpcUrl, 'status')).sync_info
        .latest_block_height,
    );
    await until('three more heights', 60_000, async () =>
      Number(
        (await comet<{ sync_info: { latest_block_height: string } }>(rpcUrl, 'status')).sync_info
          .latest_block_height,
      ) >=
      h0 + 3
        ? true
        : undefined,
    );
    await stopAll();
    assert.equal(receiver.requests, 0, 'no export attempt reached the endpoint');

    // Bad values are refused at start, each naming the variable, the rule and the value.
    const problems: string[] = [];
    tracingSettingsOf(
      {
        OTEL_TRACES_EXPORTER: 'otlp,jaeger',
        OTEL_SDK_DISABLED: 'yes',
        OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318',
        OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc',
        OTEL_PROPAGATORS: 'tracecontext,xray',
      },
      problems,
      'executor',
    );
    assert.deepEqual(problems, [
      '$OTEL_SDK_DISABLED: must be true or false, got "yes"',
      '$OTEL_EXPORTER_OTLP_ENDPOINT: must be an http:// or https:// URL, got "collector:4318"',
      '$OTEL_EXPORTER_OTLP_PROTOCOL: noded exports OTLP over HTTP with JSON bodies; must be http/json, got "grpc"',
      '$OTEL_TRACES_EXPORTER: must be a comma list of otlp, console, none, got "otlp,jaeger" ("jaeger" unknown)',
      '$OTEL_PROPAGATORS: must be a comma list of tracecontext, baggage, b3, b3multi, jaeger, none, got "tracecontext,xray" ("xray" unknown)',
    ]);
    // And the CLI stops before anything opens.
    const bad = spawnService('executor', home, { ...base, OTEL_TRACES_EXPORTER: 'zipkin' });
    running.push(bad);
    const code = await bad.exited;
    assert.notEqual(code, 0);
    assert.match(
      bad.output(),
      /\$OTEL_TRACES_EXPORTER: must be a comma list of otlp, console, none, got "zipkin"/,
    );
    // A collector that is not there: the service logs why each export failed and keeps serving.
    const gone = await closedPort();
    const lonely = spawnService('executor', home, {
      ...base,
      OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${gone}`,
      OTEL_BSP_SCHEDULE_DELAY: '100',
    });
    running.push(lonely);
    await waitForService(lonely, /noded service executor is running/, 90_000);
    await mempool.pendingTransactions(); // a span to export
    await waitForService(
      lonely,
      new RegExp(`"component":"otel","msg":"connect ECONNREFUSED 127\\.0\\.0\\.1:${gone}"`),
      30_000,
    );
    assert.deepEqual(await mempool.pendingTransactions(), { pending: [], queued: [] });
    await stopAll();
    // Defaults: off, with the service's own name ready for when it is turned on.
    assert.deepEqual(tracingSettingsOf({}, [], 'rpc-edge'), {
      exporters: [],
      serviceName: 'noded-rpc-edge',
      otlpEndpoint: undefined,
      propagators: ['tracecontext', 'baggage'],
    });
    assert.deepEqual(
      tracingSettingsOf(
        { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318', OTEL_SERVICE_NAME: 'edge-a' },
        [],
        'rpc-edge',
      ),
      {
        exporters: ['otlp'],
        serviceName: 'edge-a',
        otlpEndpoint: 'http://127.0.0.1:4318',
        propagators: ['tracecontext', 'baggage'],
      },
    );
  });
});
