// noded.p2p.v1.Gateway (proto/noded/p2p/v1/gateway.proto): the p2p-gateway relays channel frames
// between its libp2p peers and the consensus service over one bidirectional gRPC stream.
//
// GatewayRelay is the gateway's side: at the first Attach it registers a relaying channel for each
// protocol consensus names and opens the host (which then advertises them in every handshake); it
// forwards peers' frames and peer up/down events to the attached stream, and carries out the
// stream's send / broadcast / disconnect / dial requests, refusing a bad one with a Refused event
// that names the field and the rule (the stream goes on).
//
// GatewayHost is the consensus side: a ChannelHost (libs/p2p) over that stream, so ConsensusChannel,
// MempoolChannel and LightChannel run unchanged in the consensus process. It re-attaches with
// backoff whenever the stream ends (a gateway restart); peers then go down and come up again.
import * as grpc from '@grpc/grpc-js';
// Types only from @noded/p2p (erased at build): the relay itself runs without libp2p.
import type { Channel, ChannelHost, PeerEvents } from '@noded/p2p';
import {
  type ChannelSpec,
  type Frame as FrameMessage,
  GatewayService,
  type Peer as PeerMessage,
  type RelayEvent,
  type RelayRequest,
} from '@noded/proto/src/gen/noded/p2p/v1/gateway.js';
import { extractTraceContext, injectTraceContext, inSpanSync } from '@noded/telemetry';
import {
  HANDSHAKE_PROTOCOL,
  isWireNodeId,
  type Logger,
  PEX_PROTOCOL,
  type PeerAddress,
  type PeerInfo,
  parsePeerAddress,
} from '@noded/types';
import { HealthStatus, ServingStatus } from './health.js';
import { lenientDefinition, UndecodableRequest } from './lenient.js';

export const GATEWAY_SERVICE_NAME = 'noded.p2p.v1.Gateway';
/** The largest frame a channel may declare (and so the largest payload relayed). */
export const MAX_RELAYED_FRAME_BYTES = 64 * 1024 * 1024;
/** Bytes waiting to be written on a relay stream before the stream is given up as too slow. */
export const MAX_RELAY_BUFFER_BYTES = 256 * 1024 * 1024;
/** Longest reason of a DisconnectPeer. */
const MAX_REASON_BYTES = 1024;

// A libp2p protocol ID as the channels name theirs: "/" then printable ASCII without spaces.
const PROTOCOL_RE = /^\/[\x21-\x7e]{1,127}$/;

/** The protocols the gateway's host speaks itself; consensus cannot claim them. */
export const GATEWAY_OWN_PROTOCOLS: readonly string[] = [HANDSHAKE_PROTOCOL, PEX_PROTOCOL];

/** What the gateway's relay needs of its P2P host (P2PHost has all of it). */
export interface RelayedHost extends ChannelHost {
  peerInfos(): PeerInfo[];
  addPeers(addrs: PeerAddress[], o: { persistent: boolean; unconditional: boolean }): void;
}

export interface GatewayRelayOptions {
  chainId: string;
  nodeId: string;
  /** Where peers reach this node (the handshake's listen address), as /net_info shows it. */
  listenAddr: string;
  /**
   * Registers the relaying channels (and anything the gateway adds, such as PEX) on the host and
   * starts it; called once, at the first Attach. Returns the started host.
   */
  openHost(channels: Channel[]): Promise<RelayedHost>;
  logger: Logger;
  /** Peer traffic counters of the gateway (the metrics read them). */
  onRelay?(direction: 'in' | 'out', protocol: string, bytes: number): void;
  /** Bytes a relay stream may be behind before it is ended (NODED_P2P_RELAY_MAX_BYTES; default 256 MiB). */
  maxBufferedBytes?: number;
}

type RelayCall = grpc.ServerDuplexStream<unknown, RelayEvent>;

/** An Attach the gateway refuses: the stream ends with `code` and the message. */
class AttachRefused extends Error {
  constructor(
    readonly code: grpc.status,
    message: string,
  ) {
    super(message);
  }
}

/** Bytes counted for a message beyond its payload (ids, protocol, framing). */
const MESSAGE_OVERHEAD = 128;

const sizeOfEvent = (e: RelayEvent): number => (e.frame?.payload.length ?? 0) + MESSAGE_OVERHEAD;

/** Ends a relay stream with a status (grpc-js sends the status an 'error' carries, then ends). */
function endWith(call: RelayCall, code: grpc.status, details: string): void {
  call.emit('error', { code, details });
}

const toPeerMessage = (p: PeerInfo): PeerMessage => ({
  nodeId: p.nodeId,
  moniker: p.moniker,
  remoteIp: p.remoteIp,
  listenAddr: p.listenAddr,
  outbound: p.isOutbound,
  network: p.network,
  version: p.version,
  channels: p.channels ?? [],
});

/** The gateway's side of the relay. */
export class GatewayRelay {
  private host: RelayedHost | undefined;
  private opening: Promise<RelayedHost> | undefined;
  private channels: Map<string, number> | undefined;
  private current: RelayCall | undefined;
  /** Bytes written to each stream and not yet handed to the transport. */
  private readonly unsent = new WeakMap<RelayCall, number>();
  private readonly log: Logger;
  /** Relay streams attached since start (a re-attach after a consensus restart counts again). */
  attaches = 0;
  /** Relay streams ended for being more than the bound behind. */
  cutoffs = 0;
  private readonly max: number;

  constructor(private readonly o: GatewayRelayOptions) {
    this.log = o.logger;
    this.max = o.maxBufferedBytes ?? MAX_RELAY_BUFFER_BYTES;
  }

  /** The host, once the first Attach opened it. */
  get peerHost(): RelayedHost | undefined {
    return this.host;
  }

  /** A consensus service is attached now. */
  get attached(): boolean {
    return this.current !== undefined;
  }

  /** Adds the Gateway service to `server`. */
  addTo(server: grpc.Server): void {
    const def = lenientDefinition(GatewayService);
    server.addService(def, { relay: (call: RelayCall) => this.relay(call) });
  }

  /** Ends the attached stream (the gateway is stopping). */
  close(): void {
    const c = this.current;
    this.current = undefined;
    if (c) endWith(c, grpc.status.UNAVAILABLE, 'the p2p-gateway is stopping');
  }

  private send(call: RelayCall, event: RelayEvent): void {
    if (call !== this.current) return;
    const buffered = this.unsent.get(call) ?? 0;
    if (buffered > this.max) {
      this.cutoffs++;
      this.log.warn(
        { buffered },
        'the consensus service reads too slowly; ending its relay stream (it re-attaches)',
      );
      this.current = undefined;
      endWith(
        call,
        grpc.status.RESOURCE_EXHAUSTED,
        `relay stream over ${this.max} bytes behind; attach again`,
      );
      return;
    }
    // The stream is in object mode (writableLength counts messages): count the bytes waiting here.
    const size = sizeOfEvent(event);
    this.unsent.set(call, buffered + size);
    call.write(event, () => this.unsent.set(call, (this.unsent.get(call) ?? size) - size));
  }

  private refuse(call: RelayCall, reason: string): void {
    this.log.warn({ reason }, 'relay request refused');
    this.send(call, { refused: { reason } });
  }

  private relay(call: RelayCall): void {
    let attached = false;
    const fail = (code: grpc.status, details: string) => {
      this.log.warn({ reason: details }, 'relay stream refused');
      endWith(call, code, details);
    };
    call.on('data', (req: unknown) => {
      if (req instanceof UndecodableRequest) {
        if (!attached) fail(grpc.status.INVALID_ARGUMENT, `RelayRequest: undecodable: ${req.reason}`);
        else this.refuse(call, `RelayRequest: undecodable: ${req.reason}`);
        return;
      }
      const r = req as RelayRequest;
      if (!attached) {
        if (!r.attach) {
          fail(
            grpc.status.FAILED_PRECONDITION,
            'RelayRequest: the first request of a stream must be an attach',
          );
          return;
        }
        attached = true;
        void this.attach(call, r.attach.chainId, r.attach.nodeId, r.attach.channels).catch((err: Error) => {
          fail(err instanceof AttachRefused ? err.code : grpc.status.UNAVAILABLE, err.message);
        });
        return;
      }
      if (call !== this.current) return;
      const problem = this.handle(r);
      if (problem !== undefined) this.refuse(call, problem);
    });
    const gone = () => {
      if (this.current === call) {
        this.current = undefined;
        this.log.warn('the consensus service detached; peers stay connected until it attaches again');
      }
    };
    call.on('end', () => {
      gone();
      call.end();
    });
    call.on('error', gone);
    call.on('close', gone);
    // A client that cancels (GatewayHost.stop()) frees the slot at once.
    call.on('cancelled', gone);
  }

  private async attach(
    call: RelayCall,
    chainId: string,
    nodeId: string,
    specs: ChannelSpec[],
  ): Promise<void> {
    const refuse = (message: string) => new AttachRefused(grpc.status.FAILED_PRECONDITION, message);
    if (this.current && this.current !== call)
      throw new AttachRefused(
        grpc.status.ALREADY_EXISTS,
        `Attach: a consensus service is attached already (${this.current.getPeer()}); one stream at a time`,
      );
    if (chainId !== this.o.chainId)
      throw refuse(`Attach.chain_id: the gateway runs ${this.o.chainId}, got ${JSON.stringify(chainId)}`);
    if (nodeId !== this.o.nodeId)
      throw refuse(
        `Attach.node_id: the gateway's node key is ${this.o.nodeId}, got ${JSON.stringify(nodeId)} (consensus and gateway must share the home's node_key.json)`,
      );
    const wanted = new Map<string, number>();
    if (specs.length === 0) throw refuse('Attach.channels: must name at least one channel');
    for (const [i, c] of specs.entries()) {
      const at = `Attach.channels[${i}]`;
      if (!PROTOCOL_RE.test(c.protocol))
        throw refuse(
          `${at}.protocol: must be "/" and 1 to 127 printable characters, got ${JSON.stringify(c.protocol)}`,
        );
      if (GATEWAY_OWN_PROTOCOLS.includes(c.protocol))
        throw refuse(`${at}.protocol: ${c.protocol} is the gateway's own protocol`);
      if (wanted.has(c.protocol)) throw refuse(`${at}.protocol: ${c.protocol} named twice`);
      if (c.maxMessageBytes < 1 || c.maxMessageBytes > MAX_RELAYED_FRAME_BYTES)
        throw refuse(
          `${at}.max_message_bytes: must be 1..${MAX_RELAYED_FRAME_BYTES}, got ${c.maxMessageBytes}`,
        );
      wanted.set(c.protocol, c.maxMessageBytes);
    }
    if (this.channels) {
      const same =
        wanted.size === this.channels.size && [...wanted].every(([p, n]) => this.channels!.get(p) === n);
      if (!same)
        throw refuse(
          `Attach.channels: the gateway's host advertises ${[...this.channels.keys()].join(', ')} since its first attach; restart the gateway to change them (got ${[...wanted.keys()].join(', ')})`,
        );
    } else {
      this.channels = wanted;
    }
    const host = await this.open(wanted);
    if (this.current && this.current !== call)
      throw new AttachRefused(
        grpc.status.ALREADY_EXISTS,
        'Attach: another consensus service attached meanwhile',
      );
    this.current = call;
    this.attaches++;
    this.send(call, {
      attached: {
        nodeId: this.o.nodeId,
        listenAddr: this.o.listenAddr,
        peers: host.peerInfos().map(toPeerMessage),
      },
    });
    this.log.info({ peers: host.peerCount, channels: [...wanted.keys()] }, 'consensus service attached');
  }

  private open(specs: Map<string, number>): Promise<RelayedHost> {
    if (!this.opening) {
      const channels: Channel[] = [...specs].map(([protocol, maxMessageBytes]) => ({
        protocol,
        maxMessageBytes,
        onMessage: (peer, payload) => {
          this.o.onRelay?.('in', protocol, payload.length);
          const c = this.current;
          if (!c) return;
          // A span per frame handed to consensus; its context travels in the Frame, so consensus'
          // handling of it (and the executor's CheckTx of a gossiped transaction) is its child.
          inSpanSync(
            `relay in ${protocol}`,
            { kind: 'producer', attributes: relayAttributes(protocol, peer, payload.length) },
            () => {
              const traceContext: Record<string, string> = {};
              injectTraceContext((k, v) => {
                traceContext[k] = v;
              });
              this.send(c, { frame: { peer, protocol, payload, traceContext } });
            },
          );
        },
      }));
      this.opening = this.o.openHost(channels).then((host) => {
        this.host = host;
        host.onPeer({
          up: (peer) => {
            const info = host.peerInfos().find((p) => p.nodeId === peer);
            const c = this.current;
            if (info && c) this.send(c, { peerUp: { peer: toPeerMessage(info) } });
          },
          down: (peer) => {
            const c = this.current;
            if (c) this.send(c, { peerDown: { nodeId: peer } });
          },
        });
        return host;
      });
      this.opening.catch(() => {
        this.opening = undefined;
        this.channels = undefined;
      });
    }
    return this.opening;
  }

  /** Carries out one request; returns why it was refused, if it was. */
  private handle(r: RelayRequest): string | undefined {
    const host = this.host;
    if (!host) return 'RelayRequest: the host is not open';
    const channelLimit = (field: string, protocol: string, payload: Uint8Array): string | undefined => {
      const max = this.channels?.get(protocol);
      if (max === undefined)
        return `${field}.protocol: ${JSON.stringify(protocol)} is not a channel of this stream's attach`;
      if (payload.length === 0) return `${field}.payload: must not be empty`;
      if (payload.length > max)
        return `${field}.payload: ${payload.length} bytes is over ${protocol}'s limit of ${max}`;
      return undefined;
    };
    if (r.attach) return 'RelayRequest.attach: this stream is already attached';
    if (r.send) {
      const s = r.send;
      if (!isWireNodeId(s.peer))
        return `SendFrame.peer: must be 40 lowercase hex characters, got ${JSON.stringify(s.peer)}`;
      const bad = channelLimit('SendFrame', s.protocol, s.payload);
      if (bad) return bad;
      inSpanSync(
        `relay send ${s.protocol}`,
        { kind: 'consumer', attributes: relayAttributes(s.protocol, s.peer, s.payload.length) },
        () => {
          // A peer that went away meanwhile is not an error (its PeerDown is on its way).
          if (host.send(s.peer, s.protocol, s.payload)) this.o.onRelay?.('out', s.protocol, s.payload.length);
        },
      );
      return undefined;
    }
    if (r.broadcast) {
      const b = r.broadcast;
      if (b.except !== '' && !isWireNodeId(b.except))
        return `BroadcastFrame.except: must be empty or 40 lowercase hex characters, got ${JSON.stringify(b.except)}`;
      const bad = channelLimit('BroadcastFrame', b.protocol, b.payload);
      if (bad) return bad;
      const peers = Math.max(0, host.peerCount - (b.except ? 1 : 0));
      inSpanSync(
        `relay broadcast ${b.protocol}`,
        {
          kind: 'consumer',
          attributes: {
            ...relayAttributes(b.protocol, undefined, b.payload.length),
            'noded.p2p.peers': peers,
          },
        },
        () => host.broadcast(b.protocol, b.payload, b.except === '' ? undefined : b.except),
      );
      this.o.onRelay?.('out', b.protocol, b.payload.length * peers);
      return undefined;
    }
    if (r.disconnect) {
      const d = r.disconnect;
      if (!isWireNodeId(d.peer))
        return `DisconnectPeer.peer: must be 40 lowercase hex characters, got ${JSON.stringify(d.peer)}`;
      if (Buffer.byteLength(d.reason) > MAX_REASON_BYTES)
        return `DisconnectPeer.reason: over ${MAX_REASON_BYTES} bytes`;
      host.disconnect(d.peer, d.reason === '' ? 'disconnected by the consensus service' : d.reason);
      return undefined;
    }
    if (r.dial) {
      const addrs: PeerAddress[] = [];
      for (const [i, a] of r.dial.addresses.entries()) {
        const p = parsePeerAddress(a);
        if (!p) return `DialPeers.addresses[${i}]: must be <node_id>@host:port, got ${JSON.stringify(a)}`;
        addrs.push(p);
      }
      if (addrs.length === 0) return 'DialPeers.addresses: must name at least one address';
      host.addPeers(addrs, { persistent: r.dial.persistent, unconditional: r.dial.unconditional });
      return undefined;
    }
    return 'RelayRequest: names no request (attach, send, broadcast, disconnect or dial)';
  }
}

/** The attributes of a relay span: the channel, the peer (when one), the payload's size. */
function relayAttributes(
  protocol: string,
  peer: string | undefined,
  bytes: number,
): Record<string, string | number> {
  const a: Record<string, string | number> = { 'noded.p2p.protocol': protocol, 'noded.p2p.bytes': bytes };
  if (peer !== undefined) a['noded.p2p.peer'] = peer;
  return a;
}

/** The gateway's gRPC server: the relay and grpc.health.v1. */
export interface GatewayServer {
  port: number;
  health: HealthStatus;
  close(): Promise<void>;
}

export async function serveGateway(
  relay: GatewayRelay,
  /** host:port; port 0 picks a free one. */
  address: string,
  opts: { credentials?: grpc.ServerCredentials } = {},
): Promise<GatewayServer> {
  const server = new grpc.Server({
    'grpc.max_receive_message_length': MAX_RELAYED_FRAME_BYTES + 1024,
    'grpc.max_send_message_length': MAX_RELAYED_FRAME_BYTES + 1024,
    'grpc.keepalive_time_ms': 10_000,
    'grpc.keepalive_timeout_ms': 5_000,
    'grpc.keepalive_permit_without_calls': 1,
    'grpc.http2.min_ping_interval_without_data_ms': 5_000,
  });
  relay.addTo(server);
  const health = new HealthStatus();
  health.addTo(server);
  health.set('', ServingStatus.SERVING);
  health.set(GATEWAY_SERVICE_NAME, ServingStatus.SERVING);
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync(address, opts.credentials ?? grpc.ServerCredentials.createInsecure(), (err, p) =>
      err ? reject(err) : resolve(p),
    ),
  );
  return {
    port,
    health,
    close: async () => {
      health.set('', ServingStatus.NOT_SERVING);
      health.set(GATEWAY_SERVICE_NAME, ServingStatus.NOT_SERVING);
      health.endWatches();
      relay.close();
      await new Promise<void>((resolve) => {
        const t = setTimeout(() => {
          server.forceShutdown();
          resolve();
        }, 2_000);
        server.tryShutdown(() => {
          clearTimeout(t);
          resolve();
        });
      });
    },
  };
}

/** Bytes from the wire as a plain Uint8Array view (grpc hands Buffers), like the host's frames. */
const plain = (b: Uint8Array): Uint8Array =>
  Buffer.isBuffer(b) ? new Uint8Array(b.buffer, b.byteOffset, b.byteLength) : b;

export interface GatewayHostOptions {
  /** host:port of the gateway's gRPC server. */
  address: string;
  chainId: string;
  nodeId: string;
  logger: Logger;
  credentials?: grpc.ChannelCredentials;
  /** Longest wait between attach attempts (default 5 s). */
  maxRetryMs?: number;
  /** Bytes written to the stream and not yet sent before it is given up (default 256 MiB). */
  maxBufferedBytes?: number;
}

/**
 * The consensus service's ChannelHost: every call goes to the gateway over the relay stream. While
 * the stream is down there are no peers (sends are dropped, as to a peer that went away).
 */
export class GatewayHost implements ChannelHost {
  private readonly client: grpc.Client;
  private readonly channels = new Map<string, Channel>();
  private readonly listeners = new Set<PeerEvents>();
  private readonly peers = new Map<string, PeerInfo>();
  private call: grpc.ClientDuplexStream<RelayRequest, RelayEvent> | undefined;
  private running = false;
  private retryTimer: NodeJS.Timeout | undefined;
  private readonly log: Logger;
  /** The gateway's listen address for peers, from its last Attached. */
  listenAddr = '';
  /** Times the stream attached (the first, then one per re-attach). */
  attaches = 0;
  /** Requests the gateway refused, with the last reason (tests and diagnostics). */
  refused = 0;
  lastRefusal = '';
  private attachedWaiters: Array<() => void> = [];
  /** Bytes written to the current stream and not yet handed to the transport. */
  private unsent = 0;
  /** Streams given up because the gateway fell more than the bound behind. */
  cutoffs = 0;

  constructor(private readonly o: GatewayHostOptions) {
    this.log = o.logger;
    this.client = new grpc.Client(o.address, o.credentials ?? grpc.credentials.createInsecure(), {
      'grpc.max_receive_message_length': MAX_RELAYED_FRAME_BYTES + 1024,
      'grpc.max_send_message_length': MAX_RELAYED_FRAME_BYTES + 1024,
      'grpc.keepalive_time_ms': 10_000,
      'grpc.keepalive_timeout_ms': 5_000,
      'grpc.keepalive_permit_without_calls': 1,
      'grpc.initial_reconnect_backoff_ms': 200,
      'grpc.max_reconnect_backoff_ms': 2_000,
    });
  }

  get address(): string {
    return this.o.address;
  }

  /** The relay stream is attached now. */
  get attached(): boolean {
    return this.call !== undefined && this.listenAddr !== '';
  }

  register(channel: Channel): void {
    if (this.running) throw new Error('channels must be registered before start()');
    this.channels.set(channel.protocol, channel);
  }

  onPeer(events: PeerEvents): () => void {
    this.listeners.add(events);
    return () => this.listeners.delete(events);
  }

  get peerCount(): number {
    return this.peers.size;
  }

  peerIds(): string[] {
    return [...this.peers.keys()];
  }

  peerInfos(): PeerInfo[] {
    return [...this.peers.values()];
  }

  send(peerId: string, protocol: string, payload: Uint8Array): boolean {
    // As the in-process host: false for a peer that is gone or did not list the channel.
    if (!this.peers.get(peerId)?.channels?.includes(protocol) || !this.call) return false;
    this.write({ send: { peer: peerId, protocol, payload } });
    return true;
  }

  broadcast(protocol: string, payload: Uint8Array, except?: string): void {
    if (this.peers.size === 0 || !this.call) return;
    this.write({ broadcast: { protocol, payload, except: except ?? '' } });
  }

  disconnect(peerId: string, reason: string): void {
    if (!this.call) return;
    const r = Buffer.from(reason).subarray(0, MAX_REASON_BYTES).toString();
    this.write({ disconnect: { peer: peerId, reason: r } });
  }

  /** The unsafe RPC's dial_peers, carried out by the gateway. */
  dial(addresses: string[], o: { persistent: boolean; unconditional: boolean }): void {
    if (!this.call) throw new Error(`the p2p-gateway at ${this.o.address} is not attached`);
    this.write({ dial: { addresses, persistent: o.persistent, unconditional: o.unconditional } });
  }

  /** Starts attaching (in the background, retried until stop()). */
  start(): void {
    if (this.running) return;
    this.running = true;
    this.connect(200);
  }

  /** Resolves once attached, or rejects after `ms`. */
  waitAttached(ms: number): Promise<void> {
    if (this.attached) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const t = setTimeout(() => {
        this.attachedWaiters = this.attachedWaiters.filter((w) => w !== done);
        reject(new Error(`the p2p-gateway at ${this.o.address} did not attach within ${ms} ms`));
      }, ms);
      const done = () => {
        clearTimeout(t);
        resolve();
      };
      this.attachedWaiters.push(done);
    });
  }

  stop(): void {
    this.running = false;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    const c = this.call;
    this.call = undefined;
    c?.cancel();
    this.dropAll();
    this.client.close();
  }

  private write(req: RelayRequest): void {
    const c = this.call;
    if (!c) return;
    if (this.unsent > (this.o.maxBufferedBytes ?? MAX_RELAY_BUFFER_BYTES)) {
      this.log.warn({ buffered: this.unsent }, 'the p2p-gateway reads too slowly; re-attaching');
      this.cutoffs++;
      c.cancel();
      return;
    }
    // Object mode (writableLength counts messages): count the bytes waiting here.
    const size = (req.send?.payload.length ?? req.broadcast?.payload.length ?? 0) + MESSAGE_OVERHEAD;
    this.unsent += size;
    c.write(req, () => {
      if (this.call === c) this.unsent -= size;
    });
  }

  private dropAll(): void {
    const ids = [...this.peers.keys()];
    this.peers.clear();
    for (const id of ids) for (const l of this.listeners) l.down(id);
  }

  private connect(delay: number): void {
    if (!this.running) return;
    const def = GatewayService.relay;
    const call = this.client.makeBidiStreamRequest<RelayRequest, RelayEvent>(
      def.path,
      def.requestSerialize,
      def.responseDeserialize,
    );
    this.call = call;
    this.unsent = 0;
    let ended = false;
    const retry = (why: string) => {
      if (ended) return;
      ended = true;
      if (this.call === call) {
        this.call = undefined;
        this.listenAddr = '';
        this.dropAll();
      }
      if (!this.running) return;
      this.log.warn(
        { gateway: this.o.address, reason: why, retryMs: delay },
        'relay stream to the p2p-gateway ended; attaching again',
      );
      this.retryTimer = setTimeout(
        () => this.connect(Math.min(this.o.maxRetryMs ?? 5_000, delay * 2)),
        delay,
      );
      this.retryTimer.unref();
    };
    call.on('data', (ev: RelayEvent) => {
      if (this.call !== call) return;
      if (ev.attached) {
        delay = 200;
        this.listenAddr = ev.attached.listenAddr || '(unknown)';
        this.attaches++;
        const now = new Map(ev.attached.peers.map((p) => [p.nodeId, p]));
        for (const id of [...this.peers.keys()]) if (!now.has(id)) this.peerDown(id);
        for (const p of now.values()) this.peerUp(p);
        this.log.info(
          { gateway: this.o.address, peers: this.peers.size, listen: this.listenAddr },
          'attached to the p2p-gateway',
        );
        for (const w of this.attachedWaiters.splice(0)) w();
      } else if (ev.peerUp?.peer) this.peerUp(ev.peerUp.peer);
      else if (ev.peerDown) this.peerDown(ev.peerDown.nodeId);
      else if (ev.frame) this.deliver(ev.frame);
      else if (ev.refused) {
        this.refused++;
        this.lastRefusal = ev.refused.reason;
        this.log.warn({ reason: ev.refused.reason }, 'the p2p-gateway refused a request');
      }
    });
    call.on('error', (err: grpc.ServiceError) => retry(err.details || err.message));
    call.on('end', () => retry('the gateway ended the stream'));
    call.on('close', () => retry('the stream closed'));
    call.write({
      attach: {
        chainId: this.o.chainId,
        nodeId: this.o.nodeId,
        channels: [...this.channels.values()].map((c) => ({
          protocol: c.protocol,
          maxMessageBytes: c.maxMessageBytes,
        })),
      },
    });
  }

  private peerUp(p: PeerMessage): void {
    const known = this.peers.has(p.nodeId);
    this.peers.set(p.nodeId, {
      nodeId: p.nodeId,
      moniker: p.moniker,
      remoteIp: p.remoteIp,
      listenAddr: p.listenAddr,
      isOutbound: p.outbound,
      network: p.network,
      version: p.version,
      channels: p.channels,
    });
    if (!known) for (const l of this.listeners) l.up(p.nodeId);
  }

  private peerDown(id: string): void {
    if (!this.peers.delete(id)) return;
    for (const l of this.listeners) l.down(id);
  }

  private deliver(frame: FrameMessage): void {
    const { peer, protocol } = frame;
    const ch = this.channels.get(protocol);
    if (!ch || !this.peers.has(peer)) return;
    const payload = plain(frame.payload);
    // The channel handles the frame as the child of the gateway's span for it (its context came in
    // the Frame): what the handler starts, such as the CheckTx of a gossiped transaction, joins it.
    inSpanSync(
      `deliver ${protocol}`,
      {
        kind: 'consumer',
        parent: extractTraceContext((k) => frame.traceContext[k]),
        attributes: relayAttributes(protocol, peer, payload.length),
      },
      () => {
        try {
          ch.onMessage(peer, payload);
        } catch (err) {
          // As on the host: what a peer sent that does not decode disconnects it, with the reason.
          this.disconnect(peer, (err as Error).message);
        }
      },
    );
  }
}
