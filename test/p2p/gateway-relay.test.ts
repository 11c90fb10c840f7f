// The p2p-gateway's relay (noded.p2p.v1.Gateway) over real gRPC and real P2P hosts on 127.0.0.1:
// a raw client attaches as the consensus service would, a peer's frames reach it and its frames reach
// the peer; every bad request is refused with a Refused event naming the field and the rule while the
// stream goes on; a bad Attach ends the stream with the reason; one consensus stream at a time; and
// GatewayHost (the consensus side) runs an unchanged MempoolChannel over the relay.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import {
  GATEWAY_SERVICE_NAME,
  GatewayHost,
  GatewayRelay,
  type GatewayServer,
  gatewayProto,
  healthProto,
  serveGateway,
} from '@noded/abci-grpc';
import { ed25519Generate, nodeIdFromPublicKey } from '@noded/crypto';
import {
  decodeTxBatch,
  encodeTxBatch,
  MAX_GOSSIP_TRACE_BYTES,
  MEMPOOL_PROTOCOL,
  MEMPOOL_TRACED_PROTOCOL,
  MempoolChannel,
  type P2PHost,
} from '@noded/p2p';
import { silentLogger } from '@noded/types';
import { startTestHost, stopTestHosts, until } from './helpers.js';

const ECHO = '/noded/echo/1';
const servers: GatewayServer[] = [];
const clients: grpc.Client[] = [];
after(async () => {
  for (const c of clients) c.close();
  for (const s of servers) await s.close();
  await stopTestHosts();
});

type RelayEvent = gatewayProto.RelayEvent;
type RelayRequest = gatewayProto.RelayRequest;

/** A gateway: a real host opened at the first attach, and its relay on a free port. */
async function startGateway(channelsSetup?: (protocol: string) => void, maxBufferedBytes?: number) {
  const key = ed25519Generate();
  const nodeId = nodeIdFromPublicKey(key.publicKey);
  let hostPort = 0;
  let host: P2PHost | undefined;
  const relay = new GatewayRelay({
    chainId: 'chain-local',
    nodeId,
    listenAddr: '127.0.0.1:0',
    logger: silentLogger,
    ...(maxBufferedBytes === undefined ? {} : { maxBufferedBytes }),
    openHost: async (channels) => {
      const t = await startTestHost(
        (h) => {
          for (const c of channels) {
            h.register(c);
            channelsSetup?.(c.protocol);
          }
        },
        { key },
      );
      hostPort = t.port;
      host = t.host;
      return t.host;
    },
  });
  const server = await serveGateway(relay, '127.0.0.1:0');
  servers.push(server);
  return {
    relay,
    nodeId,
    address: `127.0.0.1:${server.port}`,
    hostPort: () => hostPort,
    host: () => host,
  };
}

/** A raw relay stream, its events kept, and its final status. */
function openStream(address: string) {
  const client = new grpc.Client(address, grpc.credentials.createInsecure());
  clients.push(client);
  const def = gatewayProto.GatewayService.relay;
  const call = client.makeBidiStreamRequest<RelayRequest, RelayEvent>(
    def.path,
    def.requestSerialize,
    def.responseDeserialize,
  );
  const events: RelayEvent[] = [];
  let status: grpc.StatusObject | undefined;
  call.on('data', (e: RelayEvent) => events.push(e));
  call.on('error', () => {});
  call.on('status', (s: grpc.StatusObject) => {
    status = s;
  });
  return { call, events, status: () => status };
}

const attachOf = (nodeId: string, over: Partial<gatewayProto.Attach> = {}): RelayRequest => ({
  attach: {
    chainId: 'chain-local',
    nodeId,
    channels: [{ protocol: ECHO, maxMessageBytes: 1024 }],
    ...over,
  },
});

describe('p2p-gateway relay', () => {
  it('relays frames both ways, refuses bad requests by name and keeps the stream', async () => {
    const gw = await startGateway();
    const s = openStream(gw.address);
    s.call.write(attachOf(gw.nodeId));
    await until('attached', () => s.events.some((e) => e.attached));
    const attached = s.events.find((e) => e.attached)!.attached!;
    // grpc.health.v1 on the relay port: the server and the Gateway service both serve.
    const health = new healthProto.HealthClient(gw.address, grpc.credentials.createInsecure());
    for (const service of ['', GATEWAY_SERVICE_NAME]) {
      const status = await new Promise<number>((resolve, reject) =>
        health.check({ service }, (err, res) => (err ? reject(err) : resolve(res.status))),
      );
      assert.equal(status, healthProto.HealthCheckResponse_ServingStatus.SERVING, service);
    }
    health.close();
    assert.equal(attached.nodeId, gw.nodeId);
    assert.deepEqual(attached.peers, []);

    // A peer connects to the gateway's host: PeerUp, then its frames arrive as Frame events.
    const fromGateway: string[] = [];
    const peer = await startTestHost(
      (h) =>
        h.register({
          protocol: ECHO,
          maxMessageBytes: 1024,
          onMessage: (_p, payload) => fromGateway.push(new TextDecoder().decode(payload)),
        }),
      { peers: [{ nodeId: gw.nodeId, host: '127.0.0.1', port: gw.hostPort() }] },
    );
    await until('peer up', () => s.events.some((e) => e.peerUp?.peer?.nodeId === peer.id));
    assert.equal(s.events.find((e) => e.peerUp)!.peerUp!.peer!.network, 'chain-local');
    peer.host.send(gw.nodeId, ECHO, new TextEncoder().encode('from peer'));
    await until('frame', () => s.events.some((e) => e.frame));
    const f = s.events.find((e) => e.frame)!.frame!;
    assert.deepEqual(
      { peer: f.peer, protocol: f.protocol, text: new TextDecoder().decode(f.payload) },
      { peer: peer.id, protocol: ECHO, text: 'from peer' },
    );
    assert.deepEqual(f.traceContext, {}, 'no trace context while tracing is off');

    // Bad requests: each refused with the field and the rule.
    const bad: Array<[RelayRequest, RegExp]> = [
      [
        { send: { peer: 'XYZ', protocol: ECHO, payload: Uint8Array.of(1) } },
        /^SendFrame\.peer: must be 40 lowercase hex characters, got "XYZ"$/,
      ],
      [
        { send: { peer: peer.id, protocol: '/noded/other/1', payload: Uint8Array.of(1) } },
        /^SendFrame\.protocol: "\/noded\/other\/1" is not a channel of this stream's attach$/,
      ],
      [
        { send: { peer: peer.id, protocol: ECHO, payload: new Uint8Array(1025) } },
        /^SendFrame\.payload: 1025 bytes is over \/noded\/echo\/1's limit of 1024$/,
      ],
      [
        { broadcast: { protocol: ECHO, payload: new Uint8Array(0), except: '' } },
        /^BroadcastFrame\.payload: must not be empty$/,
      ],
      [
        { broadcast: { protocol: ECHO, payload: Uint8Array.of(1), except: 'nope' } },
        /^BroadcastFrame\.except: must be empty or 40 lowercase hex characters/,
      ],
      [
        { disconnect: { peer: peer.id, reason: 'x'.repeat(1025) } },
        /^DisconnectPeer\.reason: over 1024 bytes$/,
      ],
      [
        { dial: { addresses: ['nobody@127.0.0.1:1'], persistent: false, unconditional: false } },
        /^DialPeers\.addresses\[0\]: must be <node_id>@host:port, got "nobody@127\.0\.0\.1:1"$/,
      ],
      [{}, /^RelayRequest: names no request/],
      [attachOf(gw.nodeId), /^RelayRequest\.attach: this stream is already attached$/],
    ];
    for (const [req, re] of bad) {
      const before = s.events.filter((e) => e.refused).length;
      s.call.write(req);
      await until(`refusal ${re}`, () => s.events.filter((e) => e.refused).length > before);
      const reason = s.events.filter((e) => e.refused).at(-1)!.refused!.reason;
      assert.match(reason, re);
    }
    assert.equal(fromGateway.length, 0, 'nothing refused reached the peer');
    assert.equal(peer.host.peerCount, 1, 'the peer is still connected');

    // The stream survived: a good send and a broadcast reach the peer, in order.
    s.call.write({ send: { peer: peer.id, protocol: ECHO, payload: new TextEncoder().encode('one') } });
    s.call.write({ broadcast: { protocol: ECHO, payload: new TextEncoder().encode('two'), except: '' } });
    await until('frames at the peer', () => fromGateway.length === 2);
    assert.deepEqual(fromGateway, ['one', 'two']);

    // A second consensus stream is refused while this one is attached.
    const second = openStream(gw.address);
    second.call.write(attachOf(gw.nodeId));
    await until('second refused', () => second.status() !== undefined);
    assert.equal(second.status()!.code, grpc.status.ALREADY_EXISTS);
    assert.match(second.status()!.details, /a consensus service is attached already/);

    // Disconnect: the peer is dropped, with PeerDown on the stream.
    s.call.write({ disconnect: { peer: peer.id, reason: 'test: forged vote' } });
    await until('peer down', () => s.events.some((e) => e.peerDown?.nodeId === peer.id));
    s.call.end();
    // Detached: the host keeps running and a new stream attaches, with the same channel set only.
    await until('detached', () => !gw.relay.attached);
    const third = openStream(gw.address);
    third.call.write(attachOf(gw.nodeId, { channels: [{ protocol: ECHO, maxMessageBytes: 2048 }] }));
    await until('changed channels refused', () => third.status() !== undefined);
    assert.equal(third.status()!.code, grpc.status.FAILED_PRECONDITION);
    assert.match(
      third.status()!.details,
      /^Attach\.channels: the gateway's host advertises \/noded\/echo\/1 since its first attach/,
    );
    const fourth = openStream(gw.address);
    fourth.call.write(attachOf(gw.nodeId));
    await until('re-attached', () => fourth.events.some((e) => e.attached));
    assert.equal(gw.relay.attaches, 2);
    fourth.call.end();
  });

  it('ends a stream whose first request is not a valid attach, naming why', async () => {
    const gw = await startGateway();
    const cases: Array<[RelayRequest, grpc.status, RegExp]> = [
      [
        { send: { peer: gw.nodeId, protocol: ECHO, payload: Uint8Array.of(1) } },
        grpc.status.FAILED_PRECONDITION,
        /^RelayRequest: the first request of a stream must be an attach$/,
      ],
      [
        attachOf(gw.nodeId, { chainId: 'chain-mainnet' }),
        grpc.status.FAILED_PRECONDITION,
        /^Attach\.chain_id: the gateway runs chain-local, got "chain-mainnet"$/,
      ],
      [
        attachOf('00'.repeat(20)),
        grpc.status.FAILED_PRECONDITION,
        /^Attach\.node_id: the gateway's node key is [0-9a-f]{40}, got "0{40}"/,
      ],
      [
        attachOf(gw.nodeId, { channels: [{ protocol: '/noded/pex/1', maxMessageBytes: 10 }] }),
        grpc.status.FAILED_PRECONDITION,
        /^Attach\.channels\[0\]\.protocol: \/noded\/pex\/1 is the gateway's own protocol$/,
      ],
      [
        attachOf(gw.nodeId, { channels: [{ protocol: 'consensus', maxMessageBytes: 10 }] }),
        grpc.status.FAILED_PRECONDITION,
        /^Attach\.channels\[0\]\.protocol: must be "\/" and 1 to 127 printable characters, got "consensus"$/,
      ],
      [
        attachOf(gw.nodeId, { channels: [{ protocol: ECHO, maxMessageBytes: 0 }] }),
        grpc.status.FAILED_PRECONDITION,
        /^Attach\.channels\[0\]\.max_message_bytes: must be 1\.\.67108864, got 0$/,
      ],
      [
        attachOf(gw.nodeId, { channels: [] }),
        grpc.status.FAILED_PRECONDITION,
        /^Attach\.channels: must name/,
      ],
    ];
    for (const [req, code, re] of cases) {
      const s = openStream(gw.address);
      s.call.write(req);
      await until(`status for ${re}`, () => s.status() !== undefined);
      assert.equal(s.status()!.code, code, s.status()!.details);
      assert.match(s.status()!.details, re);
    }
    // Bytes that are no RelayRequest at all, as the first message.
    const client = new grpc.Client(gw.address, grpc.credentials.createInsecure());
    clients.push(client);
    const raw = client.makeBidiStreamRequest<Buffer, Buffer>(
      gatewayProto.GatewayService.relay.path,
      (b) => b,
      (b) => b,
    );
    let status: grpc.StatusObject | undefined;
    raw.on('error', () => {});
    raw.on('status', (st: grpc.StatusObject) => {
      status = st;
    });
    raw.write(Buffer.from([0x0a, 0xff, 0xff, 0xff]));
    await until('undecodable refused', () => status !== undefined);
    assert.equal(status!.code, grpc.status.INVALID_ARGUMENT);
    assert.match(status!.details, /^RelayRequest: undecodable: /);
    // None of those opened the host: no attach succeeded.
    assert.equal(gw.relay.peerHost, undefined);
  });

  it('runs the mempool channel unchanged over GatewayHost, and re-attaches after the stream ends', async () => {
    const gw = await startGateway();
    const checked: string[] = [];
    let admit: (raw: Uint8Array, hash: string) => void = () => {};
    const remote = new GatewayHost({
      address: gw.address,
      chainId: 'chain-local',
      nodeId: gw.nodeId,
      logger: silentLogger,
      maxRetryMs: 300,
    });
    const channel = new MempoolChannel(
      remote,
      {
        checkTx: async (tx) => {
          checked.push(new TextDecoder().decode(tx));
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
    remote.start();
    await remote.waitAttached(10_000);
    // A plain peer speaks the mempool protocol to the gateway's host.
    const got: string[][] = [];
    const peer = await startTestHost(
      (h) =>
        h.register({
          protocol: MEMPOOL_PROTOCOL,
          maxMessageBytes: 1 << 20,
          onMessage: (_p, payload) =>
            got.push(decodeTxBatch(payload).map((t) => new TextDecoder().decode(t))),
        }),
      { peers: [{ nodeId: gw.nodeId, host: '127.0.0.1', port: gw.hostPort() }] },
    );
    await until('peer seen through the relay', () => remote.peerIds().includes(peer.id));
    // The peer's channels come through the relay: a frame on one it does not serve is refused at once.
    assert.ok(
      remote
        .peerInfos()
        .find((p) => p.nodeId === peer.id)
        ?.channels?.includes(MEMPOOL_PROTOCOL),
    );
    assert.equal(remote.send(peer.id, ECHO, Uint8Array.of(1)), false);
    // peer -> gateway -> consensus' pool
    peer.host.send(gw.nodeId, MEMPOOL_PROTOCOL, encodeTxBatch([new TextEncoder().encode('tx-a')]));
    await until('checked', () => checked.includes('tx-a'));
    // consensus' pool admitted a transaction -> gateway -> peer
    admit(new TextEncoder().encode('tx-b'), '0xb');
    await until('gossiped', () => got.some((b) => b.includes('tx-b')));
    // An undecodable batch from the peer: the consensus side disconnects it through the gateway.
    peer.host.send(gw.nodeId, MEMPOOL_PROTOCOL, Uint8Array.of(0, 0, 0, 9, 1));
    await until('peer dropped', () => !remote.peerIds().includes(peer.id) && peer.host.peerCount === 0);
    // The relay stream ends (a gateway restart looks the same to this side): peers go down, it attaches again.
    gw.relay.close();
    await until('re-attached', () => remote.attaches >= 2, 10_000);
    channel.close();
    remote.stop();
    // Its cancel frees the gateway's single slot: another consensus attaches at once.
    await until('detached after stop', () => !gw.relay.attached);
    const next = openStream(gw.address);
    // (The same channels as MempoolChannel's: the gateway's host has advertised them.)
    next.call.write(
      attachOf(gw.nodeId, {
        channels: [
          { protocol: MEMPOOL_PROTOCOL, maxMessageBytes: 1024 * 1024 + 4 },
          { protocol: MEMPOOL_TRACED_PROTOCOL, maxMessageBytes: 1024 * 1024 + 6 + MAX_GOSSIP_TRACE_BYTES },
        ],
      }),
    );
    await until('attached after a stopped GatewayHost', () => next.events.some((e) => e.attached));
    next.call.end();
  });
  it('ends a relay stream whose consumer stopped reading once the bound waits; one that keeps up is never cut off', async () => {
    // The bound counts bytes whose write has not completed: grpc-js completes a server write once
    // node:http2 sent it, which HTTP/2 flow control holds back while the consumer reads nothing.
    const BOUND = 1024 * 1024;
    const FRAME = 60 * 1024;
    const gw = await startGateway(undefined, BOUND);
    const channels = [{ protocol: ECHO, maxMessageBytes: 64 * 1024 }];
    const paused = openStream(gw.address);
    paused.call.write(attachOf(gw.nodeId, { channels }));
    await until('attached', () => paused.events.some((e) => e.attached));
    const peer = await startTestHost(
      (h) => h.register({ protocol: ECHO, maxMessageBytes: 64 * 1024, onMessage: () => {} }),
      { peers: [{ nodeId: gw.nodeId, host: '127.0.0.1', port: gw.hostPort() }] },
    );
    await until('peer up', () => paused.events.some((e) => e.peerUp?.peer?.nodeId === peer.id));
    // The consumer stops reading (a consensus stuck in a long computation, or a dead one whose
    // connection is still up), and the peer goes on sending: 4 times the bound.
    paused.call.pause();
    const frame = new Uint8Array(FRAME).fill(7);
    for (let i = 0; i < Math.ceil((4 * BOUND) / FRAME); i++) peer.host.send(gw.nodeId, ECHO, frame);
    await until('the paused stream cut off', () => gw.relay.cutoffs === 1, 15_000);
    assert.equal(gw.relay.attached, false, 'the slot is free for the consensus to attach again');
    paused.call.resume();
    await until('its status', () => paused.status() !== undefined, 15_000);
    assert.equal(paused.status()!.code, grpc.status.RESOURCE_EXHAUSTED);
    assert.match(paused.status()!.details, /^relay stream over 1048576 bytes behind; attach again$/);
    // What reached it once it read again: the bound, the frame that crossed it, and what flow control
    // let through before the consumer stopped granting window (64 KiB).
    const frames = paused.events.filter((e) => e.frame).length;
    assert.ok(
      frames * FRAME <= BOUND + 2 * FRAME + 64 * 1024,
      `the gateway held no more than the bound for the paused consumer (${frames} frames of ${FRAME} bytes)`,
    );

    // Under load the gateway may still be taking the paused phase's frames off the wire: let them all
    // arrive (and go nowhere, nothing being attached) so that none reaches the next consumer.
    const echo = (t: ReturnType<P2PHost['traffic']>) => t.find((x) => x.channel === ECHO);
    await until(
      "the paused phase's frames all at the gateway",
      () => echo(gw.host()!.traffic())?.received === echo(peer.host.traffic())?.sent,
      15_000,
    );

    // A consumer that keeps reading: ten times the bound passes, paced as a peer that waits for
    // answers, and the stream stays attached. Its frames are told apart from the paused phase's.
    let got = 0;
    const remote = new GatewayHost({
      address: gw.address,
      chainId: 'chain-local',
      nodeId: gw.nodeId,
      logger: silentLogger,
      maxRetryMs: 300,
    });
    remote.register({
      protocol: ECHO,
      maxMessageBytes: 64 * 1024,
      onMessage: (_from, payload) => {
        if (payload[0] === 8) got++;
      },
    });
    remote.start();
    await remote.waitAttached(10_000);
    await until('peer seen', () => remote.peerIds().includes(peer.id));
    const kept = new Uint8Array(FRAME).fill(8);
    const batch = Math.floor(BOUND / 2 / FRAME);
    const batches = Math.ceil((10 * BOUND) / (batch * FRAME));
    for (let b = 0; b < batches; b++) {
      for (let i = 0; i < batch; i++) peer.host.send(gw.nodeId, ECHO, kept);
      await until(`batch ${b} delivered`, () => got === (b + 1) * batch, 15_000);
    }
    assert.equal(gw.relay.cutoffs, 1, 'the consumer that keeps up was never cut off');
    assert.equal(remote.attaches, 1);
    remote.stop();
  });

  it('GatewayHost gives up a relay stream the gateway stopped reading once the bound waits, and attaches again', async () => {
    // A gateway that attaches, names one peer, then reads nothing more (stuck, or its host saturated).
    const BOUND = 1024 * 1024;
    const FRAME = 60 * 1024;
    const nodeId = 'ab'.repeat(20);
    const peerId = 'cd'.repeat(20);
    let attaches = 0;
    let stuck: grpc.ServerDuplexStream<RelayRequest, RelayEvent> | undefined;
    const server = new grpc.Server();
    const def = gatewayProto.GatewayService;
    server.addService(def, {
      relay: (call: grpc.ServerDuplexStream<RelayRequest, RelayEvent>) => {
        call.once('data', () => {
          attaches++;
          call.write({
            attached: {
              nodeId,
              listenAddr: '127.0.0.1:1',
              peers: [
                {
                  nodeId: peerId,
                  moniker: 'p',
                  remoteIp: '127.0.0.1',
                  listenAddr: '127.0.0.1:2',
                  outbound: false,
                  network: 'chain-local',
                  version: '1',
                  channels: [ECHO],
                },
              ],
            },
          });
          call.pause();
          stuck = call;
        });
        call.on('error', () => {});
      },
    });
    const port = await new Promise<number>((resolve, reject) =>
      server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) =>
        err ? reject(err) : resolve(p),
      ),
    );
    const remote = new GatewayHost({
      address: `127.0.0.1:${port}`,
      chainId: 'chain-local',
      nodeId,
      logger: silentLogger,
      maxRetryMs: 300,
      maxBufferedBytes: BOUND,
    });
    remote.register({ protocol: ECHO, maxMessageBytes: 64 * 1024, onMessage: () => {} });
    try {
      remote.start();
      await remote.waitAttached(10_000);
      const first = stuck;
      const frame = new Uint8Array(FRAME).fill(9);
      // Consensus sends 4 times the bound to the peer through the stuck gateway, a frame per turn.
      for (let i = 0; i < Math.ceil((4 * BOUND) / FRAME) && remote.cutoffs === 0; i++) {
        remote.send(peerId, ECHO, frame);
        await new Promise((r) => setImmediate(r));
      }
      await until('the stuck stream given up', () => remote.cutoffs === 1, 15_000);
      await until('attached again', () => attaches === 2 && remote.attached, 15_000);
      assert.notEqual(stuck, first);
    } finally {
      remote.stop();
      server.forceShutdown();
    }
  });
});
