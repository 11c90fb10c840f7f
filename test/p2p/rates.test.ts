// send_rate, recv_rate and allow_duplicate_ip on real hosts over 127.0.0.1, and the token bucket
// that meters the rates.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { ByteRate, type P2PHost } from '@noded/p2p';
import {
  type Logged,
  recordingLogger,
  startTestHost,
  stopTestHosts,
  type TestHostOptions,
  until,
} from './helpers.js';

const CHANNEL = '/noded/test-rate/1';
after(stopTestHosts);

async function startCounting(o: TestHostOptions = {}) {
  const got = { bytes: 0, frames: 0, order: [] as number[] };
  const logs: Logged[] = [];
  const t = await startTestHost(
    (h: P2PHost) =>
      h.register({
        protocol: CHANNEL,
        maxMessageBytes: 1 << 20,
        onMessage: (_peer, m) => {
          got.bytes += m.length;
          got.frames++;
          got.order.push(m[0]!);
        },
      }),
    { ...o, logger: recordingLogger(logs) },
  );
  return { ...t, got, logs };
}

describe('ByteRate', () => {
  it('lets a second of bytes through at once, then meters them at the rate', () => {
    let now = 0;
    const r = new ByteRate(1000, () => now);
    assert.equal(r.waitMs(), 0);
    r.take(1000);
    assert.equal(r.waitMs(), 1, 'an empty balance waits');
    r.take(500);
    assert.equal(r.waitMs(), 500, 'a debt of 500 bytes at 1000 B/s is 500 ms');
    now += 500;
    assert.equal(r.waitMs(), 1);
    now += 2;
    assert.equal(r.waitMs(), 0);
    now += 60_000;
    r.take(1000);
    assert.equal(r.waitMs(), 1, 'the balance never grows past one second of bytes');
  });
});

describe('rate limits and duplicate IPs between hosts', () => {
  it('send_rate: 600 KB at 200 KB/s take at least two seconds and arrive whole and in order', async () => {
    const rx = await startCounting();
    const tx = await startCounting({
      sendRate: 200_000,
      peers: [{ nodeId: rx.id, host: '127.0.0.1', port: rx.port }],
    });
    await until('connected', () => tx.host.peerIds().includes(rx.id) && rx.host.peerIds().includes(tx.id));
    const started = performance.now();
    for (let i = 0; i < 60; i++) {
      const m = new Uint8Array(10_000);
      m[0] = i;
      assert.equal(tx.host.send(rx.id, CHANNEL, m), true);
    }
    await until('all received', () => rx.got.frames === 60, 30_000);
    const ms = performance.now() - started;
    // A second's worth (200 KB) goes at once, the other 400 KB at 200 KB/s.
    assert.ok(ms >= 1900, `600 KB arrived in ${ms.toFixed(0)} ms`);
    assert.deepEqual(
      rx.got.order,
      Array.from({ length: 60 }, (_, i) => i),
    );
    assert.equal(rx.got.bytes, 600_000);
  });

  it('recv_rate: a receiver at 200 KB/s takes at least two seconds to read 600 KB from an unlimited sender', async () => {
    const rx = await startCounting({ recvRate: 200_000 });
    const tx = await startCounting({ peers: [{ nodeId: rx.id, host: '127.0.0.1', port: rx.port }] });
    await until('connected', () => tx.host.peerIds().includes(rx.id) && rx.host.peerIds().includes(tx.id));
    const started = performance.now();
    for (let i = 0; i < 60; i++) tx.host.send(rx.id, CHANNEL, new Uint8Array(10_000).fill(i));
    await until('all read', () => rx.got.frames === 60, 30_000);
    const ms = performance.now() - started;
    assert.ok(ms >= 1900, `600 KB read in ${ms.toFixed(0)} ms`);
    assert.equal(rx.got.bytes, 600_000);
  });

  it('allow_duplicate_ip = false refuses a second peer from one IP, naming both; persistent peers are exempt', async () => {
    const a = await startCounting({ allowDuplicateIp: false });
    const b = await startCounting();
    const c = await startCounting();
    await b.host.dial({ nodeId: a.id, host: '127.0.0.1', port: a.port });
    await until('b admitted', () => a.host.peerIds().includes(b.id));
    await assert.rejects(
      c.host.dial({ nodeId: a.id, host: '127.0.0.1', port: a.port }),
      new RegExp(
        `peer ${b.id} already connects from 127.0.0.1 and allow_duplicate_ip = false; ${c.id} refused`,
      ),
    );
    assert.equal(a.host.peerIds().includes(c.id), false);

    const d = await startCounting({
      allowDuplicateIp: false,
      peers: [
        { nodeId: b.id, host: '127.0.0.1', port: b.port },
        { nodeId: c.id, host: '127.0.0.1', port: c.port },
      ],
    });
    await until('both persistent peers connected', () => d.host.peerCount === 2);
  });
});
