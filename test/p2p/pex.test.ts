// Peer exchange over real hosts on 127.0.0.1: nodes that know only a seed find each other through
// it and hang up on it; a peer that abuses the channel is disconnected; the message codec's rules.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import {
  AddressBook,
  decodePex,
  encodePex,
  MAX_PEX_ADDRS,
  MAX_PEX_MESSAGE_BYTES,
  PEX_PROTOCOL,
  type PeerAddress,
  PexReactor,
} from '@noded/p2p';
import { freePort } from '../e2e/harness.js';
import {
  type Logged,
  recordingLogger,
  startTestHost,
  stopTestHosts,
  type TestHost,
  until,
} from './helpers.js';

interface PexNode extends TestHost {
  pex: PexReactor;
  book: AddressBook;
  logs: Logged[];
}

const reactors: PexReactor[] = [];
after(async () => {
  for (const r of reactors.splice(0)) r.stop();
  await stopTestHosts();
});

async function startPexNode(
  o: { seeds?: PeerAddress[]; maxOutbound?: number; seedMode?: boolean; minRequestIntervalMs?: number } = {},
): Promise<PexNode> {
  const logs: Logged[] = [];
  const logger = recordingLogger(logs);
  const port = await freePort();
  let pex: PexReactor | undefined;
  let book: AddressBook | undefined;
  const t = await startTestHost(
    (host) => {
      book = new AddressBook({ strict: false, selfId: host.nodeId, logger });
      pex = new PexReactor(host, {
        book,
        seeds: o.seeds ?? [],
        seedMode: o.seedMode,
        persistentIds: [],
        ensurePeriodMs: 300,
        minRequestIntervalMs: o.minRequestIntervalMs ?? 100,
        logger,
      });
    },
    { port, logger, maxOutbound: o.maxOutbound },
  );
  pex!.start();
  reactors.push(pex!);
  return { ...t, pex: pex!, book: book!, logs };
}

/** A host that speaks the PEX channel by hand, to misbehave on it. */
async function startRawPexPeer(target: PexNode): Promise<TestHost & { got: Uint8Array[] }> {
  const got: Uint8Array[] = [];
  const t = await startTestHost((h) =>
    h.register({
      protocol: PEX_PROTOCOL,
      maxMessageBytes: MAX_PEX_MESSAGE_BYTES,
      onMessage: (_p, m) => got.push(m),
    }),
  );
  await t.host.dial({ nodeId: target.id, host: '127.0.0.1', port: target.port });
  await until('raw peer admitted', () => target.host.peerIds().includes(t.id));
  return { ...t, got };
}

const addr = (n: PexNode): PeerAddress => ({ nodeId: n.id, host: '127.0.0.1', port: n.port });

describe('peer exchange', () => {
  it('encodes requests and address lists, and refuses what breaks the rules', () => {
    const a = { nodeId: 'ab'.repeat(20), host: '10.0.0.1', port: 26656 };
    assert.deepEqual(decodePex(encodePex({ kind: 'request' })), { kind: 'request' });
    assert.deepEqual(decodePex(encodePex({ kind: 'addrs', addrs: [a] })), { kind: 'addrs', addrs: [a] });
    const bytes = (kind: number, body: string) => Uint8Array.of(kind, ...new TextEncoder().encode(body));
    assert.throws(() => decodePex(new Uint8Array(0)), /pex: empty message/);
    assert.throws(() => decodePex(Uint8Array.of(9)), /unknown message kind 9/);
    assert.throws(() => decodePex(Uint8Array.of(1, 0)), /a request carries no body, got 1 bytes/);
    assert.throws(() => decodePex(bytes(2, '{"a":1}')), /not a JSON array/);
    assert.throws(() => decodePex(bytes(2, '[1')), /not a JSON array/);
    assert.throws(
      () => decodePex(bytes(2, '["nope"]')),
      /address 0 \("nope"\) is not "<node_id>@<host>:<port>"/,
    );
    const many = Array.from({ length: MAX_PEX_ADDRS + 1 }, () => `${'ab'.repeat(20)}@h:1`);
    assert.throws(
      () => decodePex(bytes(2, JSON.stringify(many))),
      new RegExp(`${MAX_PEX_ADDRS + 1} addresses, more than ${MAX_PEX_ADDRS}`),
    );
  });

  it('two nodes that know only a seed find each other through it; the seed hangs up on them', async () => {
    const seed = await startPexNode({ seedMode: true });
    const a = await startPexNode({ seeds: [addr(seed)] });
    await until('the seed learns a', () => seed.book.has(a.id));
    const b = await startPexNode({ seeds: [addr(seed)] });
    await until(
      'a and b connected to each other',
      () => a.host.peerIds().includes(b.id) && b.host.peerIds().includes(a.id),
      15_000,
    );
    assert.equal(b.book.get(a.id)?.source, seed.id, 'b learned a from the seed');
    const hungUp = () =>
      seed.logs.filter(
        (l) => l.msg === 'closing peer connection' && /^seed mode: answered/.test(String(l.obj.reason)),
      );
    const hungUpOn = () => new Set(hungUp().map((l) => l.obj.peer));
    await until('the seed to hang up on both', () => hungUpOn().size >= 2, 15_000);
    assert.deepEqual(hungUpOn(), new Set([a.id, b.id]));
  });

  it('tops up outbound peers from the book up to max_num_outbound_peers, no further', async () => {
    // Plain hosts (no PEX), so that none of them dials n back and replaces n's outbound connection.
    const others = [];
    for (let i = 0; i < 3; i++) {
      const port = await freePort();
      const t = await startTestHost(() => {}, { port });
      others.push(t);
    }
    const n = await startPexNode({ maxOutbound: 2 });
    for (const o of others) n.book.add({ nodeId: o.id, host: '127.0.0.1', port: o.port }, 'test');
    await until('two outbound peers', () => n.host.outboundCount === 2, 10_000);
    await new Promise((r) => setTimeout(r, 900));
    assert.equal(n.host.outboundCount, 2);
  });

  it('disconnects a peer that sends addresses it was not asked for', async () => {
    const n = await startPexNode();
    const raw = await startRawPexPeer(n);
    // n may have just asked raw (it asks a peer every ensure period while its book is short); the
    // second of two answers sent back to back was asked for by nobody.
    raw.host.send(n.id, PEX_PROTOCOL, encodePex({ kind: 'addrs', addrs: [] }));
    raw.host.send(n.id, PEX_PROTOCOL, encodePex({ kind: 'addrs', addrs: [] }));
    await until('disconnected', () =>
      n.logs.some(
        (l) => l.obj.peer === raw.id && /addresses sent without a request/.test(String(l.obj.reason)),
      ),
    );
    assert.equal(n.host.peerIds().includes(raw.id), false);
  });

  it('answers a request with what it knows (not the asker), and disconnects a peer that asks too often', async () => {
    const n = await startPexNode({ minRequestIntervalMs: 10_000 });
    const known = await startPexNode();
    n.book.add(addr(known), 'test');
    const raw = await startRawPexPeer(n);
    raw.host.send(n.id, PEX_PROTOCOL, encodePex({ kind: 'request' }));
    // n may also ask raw for addresses (its book is short): the answer is the first `addrs`.
    const answerOf = () => raw.got.map(decodePex).find((m) => m.kind === 'addrs');
    await until('an answer', () => answerOf() !== undefined);
    const answer = answerOf()!;
    assert.equal(answer.kind, 'addrs');
    const ids = answer.kind === 'addrs' ? answer.addrs.map((a) => a.nodeId) : [];
    assert.ok(ids.includes(known.id));
    assert.ok(!ids.includes(raw.id));
    raw.host.send(n.id, PEX_PROTOCOL, encodePex({ kind: 'request' }));
    await until('disconnected for flooding', () =>
      n.logs.some(
        (l) =>
          l.obj.peer === raw.id &&
          /after the previous request \(at least 10000 ms apart\)/.test(String(l.obj.reason)),
      ),
    );
  });

  it('disconnects a peer that sends an undecodable PEX message', async () => {
    const n = await startPexNode();
    const raw = await startRawPexPeer(n);
    raw.host.send(n.id, PEX_PROTOCOL, Uint8Array.of(7, 7));
    await until('disconnected', () =>
      n.logs.some((l) => l.obj.peer === raw.id && /unknown message kind 7/.test(String(l.obj.reason))),
    );
  });
});
