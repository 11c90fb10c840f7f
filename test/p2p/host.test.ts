// The P2P host over real TCP on 127.0.0.1: handshake, node ID proof, network check, channels,
// limits, oversized and undecodable messages.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { ed25519Generate, nodeIdFromPublicKey } from '@noded/crypto';
import type { P2PHost } from '@noded/p2p';
import {
  type Logged,
  recordingLogger,
  startTestHost,
  stopTestHosts,
  type TestHostOptions,
  until,
} from './helpers.js';

const CHANNEL = '/noded/test/1';

interface TestNode {
  host: P2PHost;
  id: string;
  port: number;
  received: Array<{ peer: string; text: string }>;
  logs: Logged[];
}

after(stopTestHosts);

async function startNode(
  opts: Omit<TestHostOptions, 'logger'> & { maxMessageBytes?: number } = {},
): Promise<TestNode> {
  const received: Array<{ peer: string; text: string }> = [];
  const logs: Logged[] = [];
  const t = await startTestHost(
    (host) =>
      host.register({
        protocol: CHANNEL,
        maxMessageBytes: opts.maxMessageBytes ?? 1 << 20,
        onMessage: (peer, payload) => {
          const text = new TextDecoder().decode(payload);
          if (text === 'poison') throw new Error('poison message');
          received.push({ peer, text });
        },
      }),
    { ...opts, logger: recordingLogger(logs) },
  );
  return { ...t, received, logs };
}

const text = (s: string) => new TextEncoder().encode(s);

describe('P2PHost', () => {
  it('connects to a persistent peer, proves both IDs and carries channel messages both ways', async () => {
    const a = await startNode();
    const b = await startNode({ peers: [{ nodeId: a.id, host: '127.0.0.1', port: a.port }] });
    await until('both sides see the peer', () => a.host.peerCount === 1 && b.host.peerCount === 1);
    assert.deepEqual(a.host.peerIds(), [b.id]);
    assert.deepEqual(b.host.peerIds(), [a.id]);
    const infoAtA = a.host.peerInfos()[0]!;
    assert.equal(infoAtA.isOutbound, false);
    assert.equal(infoAtA.remoteIp, '127.0.0.1');
    assert.equal(infoAtA.network, 'chain-local');
    assert.equal(b.host.peerInfos()[0]!.isOutbound, true);

    for (let i = 0; i < 50; i++) assert.equal(b.host.send(a.id, CHANNEL, text(`to-a-${i}`)), true);
    a.host.broadcast(CHANNEL, text('to-b'));
    await until('messages arrive', () => a.received.length === 50 && b.received.length === 1);
    assert.deepEqual(
      a.received.map((r) => r.text),
      Array.from({ length: 50 }, (_, i) => `to-a-${i}`),
    );
    assert.deepEqual(b.received, [{ peer: a.id, text: 'to-b' }]);
    assert.ok(a.host.traffic().some((t) => t.peer === b.id && t.received > 0));
  });

  it('refuses a persistent peer whose key does not match the node ID it is listed under', async () => {
    const a = await startNode();
    const wrongId = 'ab'.repeat(20);
    const b = await startNode({ peers: [{ nodeId: wrongId, host: '127.0.0.1', port: a.port }] });
    await until('the refusal is logged', () =>
      b.logs.some(
        (l) => l.level === 'warn' && String(l.obj.reason).includes(`persistent_peers names ${wrongId}`),
      ),
    );
    const line = b.logs.find((l) => String(l.obj.reason).includes('persistent_peers names'))!;
    assert.match(String(line.obj.reason), new RegExp(`has node ID ${a.id}`));
    assert.equal(b.host.peerCount, 0);
    assert.equal(a.host.peerCount, 0);
  });

  it('refuses a node of another network, on both sides, naming both networks', async () => {
    const a = await startNode({ network: 'chain-local' });
    const b = await startNode({
      network: 'chain-testnet',
      peers: [{ nodeId: a.id, host: '127.0.0.1', port: a.port }],
    });
    await until('both sides log the refusal', () =>
      [a, b].every((n) =>
        n.logs.some((l) => /on network "chain-\w+", this node on "chain-\w+"/.test(String(l.obj.reason))),
      ),
    );
    assert.equal(a.host.peerCount, 0);
    assert.equal(b.host.peerCount, 0);
  });

  it('refuses a peer speaking another P2P protocol version', async () => {
    const a = await startNode();
    const b = await startNode({ p2pVersion: 7, peers: [{ nodeId: a.id, host: '127.0.0.1', port: a.port }] });
    await until('the refusal is logged', () =>
      a.logs.some((l) => String(l.obj.reason).includes('speaks P2P protocol 7')),
    );
    assert.equal(a.host.peerCount, 0);
    assert.equal(b.host.peerCount, 0);
  });

  it('holds max_num_inbound_peers, except for unconditional peers', async () => {
    const cKey = ed25519Generate();
    const cId = nodeIdFromPublicKey(cKey.publicKey);
    const a = await startNode({ maxInbound: 1, unconditional: [cId] });
    const b1 = await startNode({ peers: [{ nodeId: a.id, host: '127.0.0.1', port: a.port }] });
    await until('first inbound peer admitted', () => a.host.peerCount === 1);
    const b2 = await startNode({ peers: [{ nodeId: a.id, host: '127.0.0.1', port: a.port }] });
    await until('the second is refused', () =>
      a.logs.some((l) => String(l.obj.reason).includes('max_num_inbound_peers (1) reached')),
    );
    assert.deepEqual(a.host.peerIds(), [b1.id]);
    assert.equal(b2.host.peerCount, 0);
    // An unconditional peer is admitted over the limit.
    await startNode({ key: cKey, peers: [{ nodeId: a.id, host: '127.0.0.1', port: a.port }] });
    await until('unconditional peer admitted', () => a.host.peerCount === 2);
    assert.deepEqual(a.host.peerIds().sort(), [b1.id, cId].sort());
  });

  it('keeps a peer dropped for misbehaviour away for the ban period, then takes it back', async () => {
    const a = await startNode({ maxMessageBytes: 100, banMs: 2500 });
    const b = await startNode({ peers: [{ nodeId: a.id, host: '127.0.0.1', port: a.port }] });
    await until('connected', () => a.host.peerCount === 1 && b.host.peerCount === 1);
    assert.equal(b.host.send(a.id, CHANNEL, new Uint8Array(101)), true);
    await until('b dropped', () => a.host.peerCount === 0);
    const droppedAt = Date.now();
    // b redials at once (its backoff is 300 ms here) and is refused while the ban lasts.
    await until('a redial refused', () =>
      b.logs.some((l) =>
        /was disconnected for misbehaviour; refused for \d+ s more/.test(String(l.obj.reason)),
      ),
    );
    assert.equal(a.host.peerCount, 0);
    await until('b back after the ban', () => a.host.peerCount === 1, 10_000);
    assert.ok(Date.now() - droppedAt >= 2000, `b was back after ${Date.now() - droppedAt} ms`);
  });

  it('refuses a second handshake on one connection', async () => {
    const a = await startNode();
    const b = await startNode({ peers: [{ nodeId: a.id, host: '127.0.0.1', port: a.port }] });
    await until('connected', () => a.host.peerCount === 1 && b.host.peerCount === 1);
    // b's side of the connection: run the handshake protocol again on it, as a hostile peer would.
    const conn = (
      b.host as unknown as { peers: Map<string, { conn: { newStream(p: string): Promise<unknown> } }> }
    ).peers.get(a.id)!.conn;
    await conn.newStream('/noded/handshake/1').catch(() => {});
    await until('the second handshake is refused', () =>
      a.logs.some((l) => /a second handshake on one connection|dialled/.test(String(l.obj.reason))),
    );
  });

  it('disconnects a peer that sends an oversized or a rejected message, and keeps the others', async () => {
    const a = await startNode({ maxMessageBytes: 1000 });
    const b = await startNode({ peers: [{ nodeId: a.id, host: '127.0.0.1', port: a.port }] });
    const c = await startNode({ peers: [{ nodeId: a.id, host: '127.0.0.1', port: a.port }] });
    await until(
      'both connected',
      () => a.host.peerCount === 2 && b.host.peerCount === 1 && c.host.peerCount === 1,
    );
    assert.equal(b.host.send(a.id, CHANNEL, new Uint8Array(1001)), true);
    await until('b disconnected for size', () =>
      a.logs.some((l) => String(l.obj.reason).includes("1001 bytes is over the channel's limit of 1000")),
    );
    assert.equal(c.host.send(a.id, CHANNEL, text('poison')), true);
    await until('c disconnected for a rejected message', () =>
      a.logs.some((l) => l.obj.peer === c.id && String(l.obj.reason).includes('poison message')),
    );
    assert.equal(a.received.length, 0);
  });
});
