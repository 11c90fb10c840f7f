// The mempool channel over real hosts: admitted transactions reach connected peers, a peer that
// connects later gets what the pool already holds (in order, once), and batches keep their rules.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import {
  decodeTracedTxBatch,
  decodeTxBatch,
  encodeTracedTxBatch,
  encodeTxBatch,
  type GossipPool,
  MAX_GOSSIP_TRACE_BYTES,
  MempoolChannel,
} from '@noded/p2p';
import { silentLogger } from '@noded/types';
import { startTestHost, stopTestHosts, until } from './helpers.js';

/** The pool's side as the channel sees it: what arrived through CheckTx, and what it holds. */
class RecordingPool implements GossipPool {
  readonly checked: string[] = [];
  readonly held: Uint8Array[] = [];
  private readonly listeners = new Set<(raw: Uint8Array, hash: string) => void>();
  async checkTx(tx: Uint8Array): Promise<{ code: number; log: string }> {
    this.checked.push(new TextDecoder().decode(tx));
    return { code: 0, log: '' };
  }
  onTxAdmitted(listener: (raw: Uint8Array, hash: string) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
  pendingTxs(): Uint8Array[] {
    return this.held;
  }
  admit(text: string): void {
    const raw = new TextEncoder().encode(text);
    this.held.push(raw);
    for (const l of this.listeners) l(raw, text);
  }
}

const channels: MempoolChannel[] = [];
after(async () => {
  for (const c of channels.splice(0)) c.close();
  await stopTestHosts();
});

async function startPoolNode(pool: RecordingPool, peers: Array<{ nodeId: string; port: number }> = []) {
  let ch: MempoolChannel | undefined;
  const t = await startTestHost(
    (h) => {
      ch = new MempoolChannel(h, pool, 1 << 20, silentLogger);
    },
    { peers: peers.map((p) => ({ nodeId: p.nodeId, host: '127.0.0.1', port: p.port })) },
  );
  channels.push(ch!);
  return t;
}

describe('mempool gossip', () => {
  it('a batch holds transactions whole; a truncated or empty one is refused', () => {
    const txs = [Uint8Array.of(1, 2, 3), Uint8Array.of(4)];
    assert.deepEqual(decodeTxBatch(encodeTxBatch(txs)), txs);
    assert.throws(
      () => decodeTxBatch(Uint8Array.of(0, 0, 0, 5, 1)),
      /transaction of 5 bytes runs past the end/,
    );
    assert.throws(() => decodeTxBatch(Uint8Array.of(0, 0, 0, 0)), /empty transaction at byte 0/);
    assert.throws(() => decodeTxBatch(Uint8Array.of(0, 0)), /truncated length at byte 0/);
  });

  it('a /noded/mempool/2 batch holds each transaction with its trace context; a malformed one is refused by name', () => {
    const trace = {
      traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
      tracestate: 'k=v',
    };
    const txs = [{ tx: Uint8Array.of(1, 2, 3), trace }, { tx: Uint8Array.of(4) }];
    const bytes = encodeTracedTxBatch(txs);
    assert.deepEqual(decodeTracedTxBatch(bytes), txs);
    // [u32 3][1 2 3][u16 n][JSON] then [u32 1][4][u16 0]
    assert.equal(bytes.length, 4 + 3 + 2 + JSON.stringify(trace).length + 4 + 1 + 2);
    // A context over the bound is not sent (the transaction is).
    const big = { traceparent: 'x'.repeat(MAX_GOSSIP_TRACE_BYTES) };
    assert.deepEqual(decodeTracedTxBatch(encodeTracedTxBatch([{ tx: Uint8Array.of(9), trace: big }])), [
      { tx: Uint8Array.of(9) },
    ]);
    const entry = (json: string) => {
      const j = Buffer.from(json);
      return Uint8Array.from([0, 0, 0, 1, 7, j.length >> 8, j.length & 0xff, ...j]);
    };
    assert.throws(() => decodeTracedTxBatch(entry('{"a":')), /the trace context at byte 7 is not JSON/);
    assert.throws(() => decodeTracedTxBatch(entry('["x"]')), /the trace context at byte 7 is not an object/);
    assert.throws(
      () => decodeTracedTxBatch(entry('{"traceparent":5}')),
      /the trace context at byte 7 has a number under "traceparent" \(strings only\)/,
    );
    assert.throws(
      () =>
        decodeTracedTxBatch(
          entry(JSON.stringify(Object.fromEntries([...Array(9)].map((_, i) => [`k${i}`, 'v'])))),
        ),
      /has 9 keys \(at most 8\)/,
    );
    assert.throws(
      () => decodeTracedTxBatch(Uint8Array.of(0, 0, 0, 1, 7, 0x04, 0x01)),
      /a trace context of 1025 bytes at byte 5 \(at most 1024\)/,
    );
    assert.throws(
      () => decodeTracedTxBatch(Uint8Array.of(0, 0, 0, 1, 7, 0, 9, 1)),
      /trace context of 9 bytes runs past the end/,
    );
    assert.throws(
      () => decodeTracedTxBatch(Uint8Array.of(0, 0, 0, 1, 7)),
      /transaction of 1 bytes runs past the end/,
    );
    assert.throws(() => decodeTracedTxBatch(Uint8Array.of(0, 0, 0, 0)), /empty transaction at byte 0/);
  });

  it('a peer that connects later gets the transactions the pool already holds, in order, once', async () => {
    const poolA = new RecordingPool();
    const a = await startPoolNode(poolA);
    for (const t of ['tx-1', 'tx-2', 'tx-3']) poolA.admit(t);
    const poolB = new RecordingPool();
    const b = await startPoolNode(poolB, [{ nodeId: a.id, port: a.port }]);
    await until('connected', () => a.host.peerIds().includes(b.id) && b.host.peerIds().includes(a.id));
    await until('b checked what a held', () => poolB.checked.length >= 3);
    assert.deepEqual(poolB.checked, ['tx-1', 'tx-2', 'tx-3']);
    // Admitted after the connection: gossiped as usual, and nothing is sent twice.
    poolA.admit('tx-4');
    await until('b checked tx-4', () => poolB.checked.includes('tx-4'));
    await new Promise((r) => setTimeout(r, 300));
    assert.deepEqual(poolB.checked, ['tx-1', 'tx-2', 'tx-3', 'tx-4']);
  });
});
