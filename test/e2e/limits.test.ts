// The spec's limits held by a real node at their default values, under many real connections:
// max_open_connections on :1317 (1,000) and :26657 (900), a client sending a byte a second cut off
// by rpc_read_timeout while other clients are served, and the caps on batches, filters and
// subscriptions with their precise errors.
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import WebSocket from 'ws';
import { type RunningNode, startLocalNode } from './harness.js';

async function openMany(port: number, n: number): Promise<Socket[]> {
  const out: Socket[] = [];
  for (let i = 0; i < n; i += 100) {
    const batch = Array.from({ length: Math.min(100, n - i) }, () => {
      const s = connect(port, '127.0.0.1');
      s.on('error', () => {});
      out.push(s);
      return new Promise<void>((resolve) => {
        s.once('connect', () => resolve());
        s.once('close', () => resolve());
      });
    });
    await Promise.all(batch);
  }
  return out;
}

/** Whether the server closed `s` (without answering) within `ms`. */
function closedWithin(s: Socket, ms: number): Promise<boolean> {
  if (s.destroyed) return Promise.resolve(true);
  return new Promise((resolve) => {
    const t = setTimeout(() => resolve(false), ms);
    s.once('close', () => {
      clearTimeout(t);
      resolve(true);
    });
  });
}

/** A JSON-RPC answer, or (for a refused batch) an array of them. */
interface Answer {
  id?: number;
  result?: string;
  error: { code: number; message: string; data?: string };
  length: number;
  [index: number]: Answer;
}

async function post(url: string, body: unknown): Promise<{ status: number; json: Answer }> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(10_000),
  });
  return { status: res.status, json: (await res.json()) as Answer };
}

describe('limits of a running node at their defaults', () => {
  let node: RunningNode;
  let cleanup: () => Promise<void>;
  before(async () => {
    ({ node, cleanup } = await startLocalNode());
  });
  after(async () => cleanup?.());

  for (const [name, port, limit, path] of [
    [
      'REST :1317 (api.max_open_connections 1000)',
      () => node.ports.api,
      1000,
      '/cosmos/base/tendermint/v1beta1/syncing',
    ],
    ['CometBFT RPC :26657 (rpc.max_open_connections 900)', () => node.ports.rpc, 900, '/health'],
  ] as const) {
    it(`${name}: connections past the limit are closed, the held ones are served, and new ones are once others leave`, async () => {
      const held = await openMany(port(), limit);
      const extra = await openMany(port(), 20);
      try {
        const refused = await Promise.all(extra.map((s) => closedWithin(s, 5000)));
        assert.equal(refused.filter(Boolean).length, 20, 'every connection past the limit is closed');
        // A held connection is a working one.
        const s = held[held.length - 1]!;
        const answer = await new Promise<string>((resolve) => {
          let data = '';
          s.on('data', (d) => {
            data += d.toString();
            if (data.includes('\r\n\r\n')) resolve(data);
          });
          s.write(`GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`);
          setTimeout(() => resolve(data), 5000).unref();
        });
        assert.match(answer, /^HTTP\/1\.1 200/);
      } finally {
        for (const s of [...held, ...extra]) s.destroy();
      }
      // Room again once the held connections are gone.
      const until = Date.now() + 5000;
      let status = 0;
      while (Date.now() < until && status !== 200) {
        status = await fetch(`http://127.0.0.1:${port()}${path}`, { signal: AbortSignal.timeout(2000) }).then(
          (r) => r.status,
          () => 0,
        );
        if (status !== 200) await new Promise((r) => setTimeout(r, 100));
      }
      assert.equal(status, 200);
    });
  }

  it('a client sending a byte a second is cut off by rpc_read_timeout (10 s) while 16 others are served', async () => {
    const readTimeoutMs = 10_000; // rpc_read_timeout's default
    const started = Date.now();
    const slow = connect(node.ports.api, '127.0.0.1');
    slow.on('error', () => {});
    const request = 'GET /cosmos/base/tendermint/v1beta1/syncing HTTP/1.1\r\nHost: x\r\n';
    let sent = 0;
    const drip = setInterval(() => {
      if (sent < request.length && !slow.destroyed) slow.write(request[sent++]!);
    }, 1000);
    let answer = '';
    slow.on('data', (d) => {
      answer += d.toString();
    });
    let slowConnected = true;
    const cut = new Promise<number>((resolve) =>
      slow.once('close', () => {
        slowConnected = false;
        resolve(Date.now() - started);
      }),
    );
    // Meanwhile, 16 clients run requests back to back. What the node does wrong shows as an error
    // status or a dropped connection; a request this process gave up on (a loaded machine stalls the
    // test itself) is counted apart, and each client must still have been served while the slow one
    // was connected: a node stalled behind the slow client serves none of them.
    const servedBy = new Array<number>(16).fill(0);
    const serverFailures: string[] = [];
    let gaveUp = 0;
    let stop = false;
    const others = servedBy.map(async (_, i) => {
      while (!stop) {
        try {
          const r = await fetch(`${node.apiUrl}/cosmos/base/tendermint/v1beta1/syncing`, {
            signal: AbortSignal.timeout(5000),
          });
          await r.arrayBuffer();
          if (!r.ok) serverFailures.push(`HTTP ${r.status}`);
          else if (slowConnected) servedBy[i]!++;
        } catch (e) {
          if (e instanceof Error && e.name === 'TimeoutError') gaveUp++;
          else serverFailures.push(String((e as Error & { cause?: unknown }).cause ?? e));
        }
      }
    });
    try {
      // The request would be complete after request.length (~65) s: the 408 below and a cut well
      // before that show the read timeout did it; the upper bound doubles the timeout for a loaded machine.
      const ms = await Promise.race([
        cut,
        new Promise<number>((r) => setTimeout(() => r(-1), 3 * readTimeoutMs)),
      ]);
      assert.ok(
        ms >= readTimeoutMs - 1_000 && ms <= 2 * readTimeoutMs,
        `the slow client was cut after ${ms} ms (rpc_read_timeout is ${readTimeoutMs} ms)`,
      );
      assert.ok(sent < request.length, 'cut before its request was complete');
      assert.match(answer, /^HTTP\/1\.1 408 Request Timeout/);
    } finally {
      stop = true;
      clearInterval(drip);
      slow.destroy();
      await Promise.all(others);
    }
    const served = servedBy.reduce((a, b) => a + b, 0);
    console.log(`# ${served} requests served beside the slow client, ${gaveUp} given up client-side`);
    assert.deepEqual(serverFailures, [], 'no request of the other clients failed at the server');
    assert.ok(
      servedBy.every((n) => n > 0),
      `every other client was served while the slow one was connected (${servedBy.join(', ')})`,
    );
  });

  it('batches, filters and subscriptions are capped with precise errors', async () => {
    // [evm.rpc] batch_request_limit = 1000.
    const batch = Array.from({ length: 1001 }, (_, i) => ({ jsonrpc: '2.0', id: i, method: 'eth_chainId' }));
    const big = await post(node.ethUrl, batch);
    const bigErr = Array.isArray(big.json) ? big.json[0].error : big.json.error;
    assert.match(bigErr.message, /batch too large|1000/);
    const okBatch = await post(node.ethUrl, batch.slice(0, 1000));
    assert.equal(okBatch.json.length, 1000);
    // [rpc] max_request_batch_size = 10 on :26657.
    const comet = await post(
      node.cometUrl,
      Array.from({ length: 11 }, (_, i) => ({ jsonrpc: '2.0', id: i, method: 'health' })),
    );
    assert.match(comet.json.error.data ?? comet.json.error.message, /exceeds maximum \(10\)/);

    // [evm.rpc] filter_cap = 200.
    const ids: string[] = [];
    for (let i = 0; i < 200; i++)
      ids.push(
        String(
          (await post(node.ethUrl, { jsonrpc: '2.0', id: i, method: 'eth_newBlockFilter' })).json.result,
        ),
      );
    const over = await post(node.ethUrl, { jsonrpc: '2.0', id: 201, method: 'eth_newBlockFilter' });
    assert.equal(over.json.error.code, -32005, JSON.stringify(over.json.error));
    assert.match(over.json.error.message, /200/);
    await post(node.ethUrl, { jsonrpc: '2.0', id: 1, method: 'eth_uninstallFilter', params: [ids[0]] });
    const again = await post(node.ethUrl, { jsonrpc: '2.0', id: 202, method: 'eth_newBlockFilter' });
    assert.match(String(again.json.result), /^0x/, 'room again after an uninstall');

    // [evm.rpc] max_subscriptions_per_connection = 100 on :8546.
    const ws = new WebSocket(node.wsUrl);
    await new Promise((r, j) => {
      ws.once('open', r);
      ws.once('error', j);
    });
    const answers = new Map<number, Answer>();
    ws.on('message', (d) => {
      const m = JSON.parse(d.toString());
      if (m.id !== undefined) answers.set(m.id, m);
    });
    for (let i = 1; i <= 101; i++)
      ws.send(JSON.stringify({ jsonrpc: '2.0', id: i, method: 'eth_subscribe', params: ['newHeads'] }));
    const until = Date.now() + 10_000;
    while (answers.size < 101 && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
    ws.close();
    assert.equal([...answers.values()].filter((m) => typeof m.result === 'string').length, 100);
    const refusal = answers.get(101);
    assert.ok(refusal, 'the 101st subscription was answered');
    assert.equal(refusal.error.code, -32005, JSON.stringify(refusal.error));
    assert.match(refusal.error.message, /100/);
  });
});
