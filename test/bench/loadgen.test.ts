// The load generator (bench/loadgen.ts, loadgen-worker.ts) against a small JSON-RPC server of the
// test's own on 127.0.0.1: the server holds every receipt back for a while and counts, per sender,
// the transactions it took that have no receipt yet; once it closes the connection under a request
// it took, as a node's HTTP server closing an idle keep-alive connection can.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import type { SignedTx } from '../../bench/chain.js';
import { runLoad } from '../../bench/loadgen.js';

const SENDERS = 2;
const PER_SENDER = 120;
const RECEIPT_AFTER_MS = 60;
/** The transaction whose first delivery loses its connection (sender 0, its 10th). */
const DROPPED = '0x000a';

describe('load generator', { timeout: 60_000 }, () => {
  let server: Server;
  let url: string;
  const takenAt = new Map<string, number>();
  const receipted = new Set<string>();
  const deliveries = new Map<string, number>();
  /** Per sender: most transactions taken and not yet given a receipt, at any moment. */
  const mostOpen = new Array<number>(SENDERS).fill(0);
  const senderOf = (raw: string) => Number.parseInt(raw.slice(2, 4), 16);
  const hashOf = (raw: string) => `0x${raw.slice(2).padStart(64, '0')}`;

  function answer(msg: { id: number; method: string; params: string[] }, close: () => void): unknown {
    if (msg.method === 'eth_sendRawTransaction') {
      const raw = msg.params[0]!;
      const n = (deliveries.get(raw) ?? 0) + 1;
      deliveries.set(raw, n);
      if (n > 1) return { jsonrpc: '2.0', id: msg.id, error: { code: -32000, message: 'already known' } };
      takenAt.set(raw, Date.now());
      const s = senderOf(raw);
      let open = 0;
      for (const r of takenAt.keys()) if (senderOf(r) === s && !receipted.has(r)) open++;
      mostOpen[s] = Math.max(mostOpen[s]!, open);
      if (raw === DROPPED) {
        close();
        return undefined;
      }
      return { jsonrpc: '2.0', id: msg.id, result: hashOf(raw) };
    }
    if (msg.method === 'eth_getTransactionReceipt') {
      const raw = `0x${msg.params[0]!.slice(-4)}`;
      const at = takenAt.get(raw);
      if (at === undefined || Date.now() - at < RECEIPT_AFTER_MS)
        return { jsonrpc: '2.0', id: msg.id, result: null };
      receipted.add(raw);
      return { jsonrpc: '2.0', id: msg.id, result: { status: '0x1', blockNumber: '0x1' } };
    }
    return { jsonrpc: '2.0', id: msg.id, result: '0x7a69' };
  }

  before(async () => {
    server = createServer((req, res) => {
      const parts: Buffer[] = [];
      req.on('data', (d: Buffer) => parts.push(d));
      req.on('end', () => {
        const body = JSON.parse(Buffer.concat(parts).toString('utf8'));
        let closed = false;
        const close = () => {
          closed = true;
        };
        const out = Array.isArray(body) ? body.map((m) => answer(m, close)) : answer(body, close);
        if (closed) {
          req.socket.destroy();
          return;
        }
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify(out));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  after(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  it('keeps at most --max-pending of a sender without receipt, sends in flight counted, and sends again on a connection closed under a request', async () => {
    // raw = 0x<sender><index>: the server tells senders apart without decoding anything.
    const txs: SignedTx[][] = Array.from({ length: SENDERS }, (_, s) =>
      Array.from({ length: PER_SENDER }, (_, i) => {
        const raw = `0x${s.toString(16).padStart(2, '0')}${i.toString(16).padStart(2, '0')}`;
        return { raw, hash: hashOf(raw), from: `0x${s}`, nonce: i };
      }),
    );
    const maxPending = 12;
    const r = await runLoad(txs, {
      url,
      inflight: 8,
      maxPending,
      pollMs: 5,
      sendForMs: 0,
      timeoutMs: 10_000,
      threads: 1,
    });
    assert.equal(r.confirmed, SENDERS * PER_SENDER, r.firstError);
    assert.equal(r.refused, 0);
    assert.equal(r.timedOut, false);
    for (const [s, most] of mostOpen.entries()) {
      // 8 connections each passing a check of the accepted ones alone would reach 12 - 1 + 8 = 19.
      assert.ok(most <= maxPending, `sender ${s}: ${most} taken without a receipt, window ${maxPending}`);
      assert.ok(most >= maxPending - 1, `sender ${s}: the window was used (${most})`);
    }
    assert.equal(
      deliveries.get(DROPPED),
      2,
      'sent again after its connection was closed, "already known" taken as accepted',
    );
  });
});
