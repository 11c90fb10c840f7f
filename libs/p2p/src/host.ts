// The P2P host: a libp2p node (TCP, noise, yamux) keyed by the node's ed25519 key, with CometBFT's
// peer model on top: a handshake that proves the node ID and checks network and versions,
// persistent peers dialled and redialled with backoff, inbound/outbound limits, and channels
// (one stream per peer and direction each) carrying length-prefixed frames.
import './polyfill.js';
import { noise } from '@chainsafe/libp2p-noise';
import { yamux } from '@chainsafe/libp2p-yamux';
import { generateKeyPairFromSeed } from '@libp2p/crypto/keys';
import type { Connection, Stream } from '@libp2p/interface';
import { tcp } from '@libp2p/tcp';
import { multiaddr } from '@multiformats/multiaddr';
import { nodeIdFromPublicKey } from '@noded/crypto';
import { HANDSHAKE_PROTOCOL, type Logger, type PeerAddress, type PeerInfo } from '@noded/types';
import { createLibp2p, type Libp2p } from 'libp2p';
import { P2PError } from './errors.js';
import { FrameReader, frame } from './frames.js';
import {
  compatibility,
  decodeNodeInfo,
  encodeNodeInfo,
  MAX_NODE_INFO_BYTES,
  type NodeInfo,
} from './nodeinfo.js';

// Defined in @noded/types (the gateway relay names them without libp2p); part of this face too.
export { HANDSHAKE_PROTOCOL, type PeerAddress };

export interface P2PHostOptions {
  /** The node key (config/node_key.json): the libp2p identity and the node ID. */
  nodeKey: { seed: Uint8Array; publicKey: Uint8Array };
  /** What this node tells peers in the handshake (its id must match nodeKey). */
  nodeInfo: Omit<NodeInfo, 'channels'>;
  listen: { host: string; port: number };
  persistentPeers: PeerAddress[];
  /** Node IDs exempt from the peer limits. */
  unconditionalPeerIds: string[];
  maxInboundPeers: number;
  maxOutboundPeers: number;
  handshakeTimeoutMs: number;
  dialTimeoutMs: number;
  /** A peer whose unsent data passes this many bytes is disconnected as too slow (default 64 MiB). */
  maxSendBufferBytes?: number;
  /** Longest wait between redials of a persistent peer (default 30 s). */
  maxRedialDelayMs?: number;
  /** How long a peer disconnected for what it sent stays refused (default 60 s). */
  misbehaviourBanMs?: number;
  /** [p2p] send_rate: bytes per second sent to each peer, all channels together (default: no limit). */
  sendRate?: number;
  /** [p2p] recv_rate: bytes per second read from each peer, all channels together (default: no limit). */
  recvRate?: number;
  /**
   * [p2p] allow_duplicate_ip: false refuses a second peer connecting from an IP that already has
   * one (persistent and unconditional peers excepted). Default true here; config.toml's is false.
   */
  allowDuplicateIp?: boolean;
  logger: Logger;
}

/** A channel: one protocol, its message size limit and its receiver. */
export interface Channel {
  protocol: string;
  maxMessageBytes: number;
  /** Called for each whole message; throwing disconnects the peer with the error as the reason. */
  onMessage(peer: string, payload: Uint8Array): void;
}

export interface PeerEvents {
  up(peer: string): void;
  down(peer: string): void;
}

/**
 * What a channel needs of the host it runs on: P2PHost in one process, or the consensus service's
 * client of a p2p-gateway (libs/abci-grpc GatewayHost), which relays the same calls over gRPC.
 */
export interface ChannelHost {
  /** Adds a channel; all channels must be registered before the host starts. */
  register(channel: Channel): void;
  onPeer(events: PeerEvents): () => void;
  readonly peerCount: number;
  peerIds(): string[];
  /** Queues `payload` for one peer; false when it is not connected (or did not list the channel). */
  send(peerId: string, protocol: string, payload: Uint8Array): boolean;
  /** Queues `payload` for every connected peer (except `except`) that advertised the channel. */
  broadcast(protocol: string, payload: Uint8Array, except?: string): void;
  /** Drops a peer for what it sent, logging why. */
  disconnect(peerId: string, reason: string): void;
}

/** What one peer's channel has to send: its stream, what waits for it to open, this turn's frames. */
interface Slot {
  stream?: Stream;
  queue: Uint8Array[];
  queuedBytes: number;
  opening: boolean;
  /** Frames written in this turn, sent together at its end (see writeNow). */
  pending: Uint8Array[];
  pendingBytes: number;
}

/** The most bytes of frames written in one turn that go out as one stream write (writeNow). */
const COALESCE_BYTES = 64 * 1024;

interface ChannelStats {
  sent: number;
  received: number;
}

/**
 * A token bucket of bytes per second, as send_rate and recv_rate meter a peer: up to a second's
 * worth may pass at once, and a message larger than the balance still passes whole, leaving a debt
 * that the following ones wait out.
 */
export class ByteRate {
  private tokens: number;
  private at: number;

  constructor(
    readonly bytesPerSecond: number,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.tokens = bytesPerSecond;
    this.at = now();
  }

  /** Milliseconds until the balance is positive again (0: bytes may pass now). */
  waitMs(): number {
    this.refill();
    return this.tokens > 0 ? 0 : Math.max(1, Math.ceil((-this.tokens / this.bytesPerSecond) * 1000));
  }

  /** Takes `n` bytes from the balance (which may go negative). */
  take(n: number): void {
    this.refill();
    this.tokens -= n;
  }

  private refill(): void {
    const t = this.now();
    this.tokens = Math.min(this.bytesPerSecond, this.tokens + ((t - this.at) / 1000) * this.bytesPerSecond);
    this.at = t;
  }
}

class Peer {
  /** Frames held back by send_rate, in the order they were written (all channels). */
  readonly throttled: Array<{ protocol: string; bytes: Uint8Array }> = [];
  throttledBytes = 0;
  drainTimer: NodeJS.Timeout | undefined;
  readonly sendRate: ByteRate | undefined;
  readonly recvRate: ByteRate | undefined;
  readonly out = new Map<string, Slot>();
  readonly stats = new Map<string, ChannelStats>();
  constructor(
    readonly id: string,
    readonly info: NodeInfo,
    readonly conn: Connection,
    readonly outbound: boolean,
    readonly remoteIp: string,
    readonly persistent: boolean,
    readonly unconditional: boolean,
    rates: { send?: number; recv?: number },
  ) {
    this.sendRate = rates.send ? new ByteRate(rates.send) : undefined;
    this.recvRate = rates.recv ? new ByteRate(rates.recv) : undefined;
  }

  stat(protocol: string): ChannelStats {
    let s = this.stats.get(protocol);
    if (!s) {
      s = { sent: 0, received: 0 };
      this.stats.set(protocol, s);
    }
    return s;
  }
}

/**
 * A stream chunk as a plain Uint8Array view (libp2p hands Buffers or Uint8ArrayLists), so decoded
 * messages hold the same byte type as everything else in the node.
 */
function plainBytes(data: Uint8Array | { subarray(): Uint8Array }): Uint8Array {
  const b = data instanceof Uint8Array ? data : data.subarray();
  return Buffer.isBuffer(b) ? new Uint8Array(b.buffer, b.byteOffset, b.byteLength) : b;
}

/** Host and port of a TCP multiaddr ("/ip4/1.2.3.4/tcp/26656"). */
function hostPortOf(ma: { getComponents(): Array<{ name: string; value?: string }> }): {
  host: string;
  port: number;
} {
  let host = '';
  let port = 0;
  for (const c of ma.getComponents()) {
    if (c.name === 'ip4' || c.name === 'ip6' || c.name === 'dns' || c.name === 'dns4' || c.name === 'dns6')
      host = c.value ?? '';
    else if (c.name === 'tcp') port = Number(c.value ?? 0);
  }
  return { host, port };
}

function remoteIpOf(conn: Connection): string {
  return hostPortOf(conn.remoteAddr).host;
}

/** Reads `count` frames from a stream (the handshake), within `ms`. */
function readFrames(
  stream: Stream,
  count: number,
  maxBytes: number,
  ms: number,
  what: string,
): Promise<Uint8Array[]> {
  return new Promise((resolve, reject) => {
    const reader = new FrameReader(maxBytes, what);
    const got: Uint8Array[] = [];
    const done = (err: Error | null) => {
      clearTimeout(timer);
      stream.removeEventListener('message', onMessage);
      stream.removeEventListener('close', onClose);
      if (err) reject(err);
      else resolve(got.slice(0, count));
    };
    const onMessage = (ev: { data: Uint8Array | { subarray(): Uint8Array } }) => {
      try {
        got.push(...reader.push(plainBytes(ev.data)));
        if (got.length >= count) done(null);
      } catch (err) {
        done(err as Error);
      }
    };
    const onClose = () => done(new P2PError('HANDSHAKE', `${what}: the peer closed the stream`));
    const timer = setTimeout(
      () => done(new P2PError('HANDSHAKE', `${what}: no answer within ${ms} ms (handshake_timeout)`)),
      ms,
    );
    stream.addEventListener('message', onMessage as never);
    stream.addEventListener('close', onClose);
  });
}

/** The listener's verdict, sent after its node info: empty when admitted, else the reason. */
const verdict = (refusal: string) => frame(new TextEncoder().encode(refusal));

export class P2PHost implements ChannelHost {
  private node: Libp2p | null = null;
  private readonly channels = new Map<string, Channel>();
  private readonly peers = new Map<string, Peer>();
  private readonly byConn = new Map<string, Peer>();
  /** Inbound streams that arrived before their connection's handshake finished. */
  private readonly waiting = new Map<string, Array<() => void>>();
  private readonly listeners = new Set<PeerEvents>();
  /** Connections whose handshake is being answered. */
  private readonly handshaking = new Set<string>();
  /** Peers disconnected for misbehaviour, refused until the time (ms) given. */
  private readonly bannedUntil = new Map<string, number>();
  private readonly timers = new Set<NodeJS.Timeout>();
  private running = false;
  readonly nodeId: string;
  private info: NodeInfo | null = null;
  private readonly log: Logger;
  private readonly unconditional: Set<string>;
  private readonly persistentIds: Set<string>;

  constructor(private readonly opts: P2PHostOptions) {
    this.nodeId = nodeIdFromPublicKey(opts.nodeKey.publicKey);
    if (opts.nodeInfo.id !== this.nodeId) {
      throw new P2PError(
        'INVALID_OPTIONS',
        `nodeInfo.id ${opts.nodeInfo.id} is not the node key's ID ${this.nodeId}`,
      );
    }
    this.log = opts.logger;
    this.unconditional = new Set(opts.unconditionalPeerIds.map((s) => s.toLowerCase()));
    this.persistentIds = new Set(opts.persistentPeers.map((p) => p.nodeId.toLowerCase()));
  }

  /** Adds a channel; all channels must be registered before start(). */
  register(channel: Channel): void {
    if (this.running) throw new P2PError('INVALID_OPTIONS', 'channels must be registered before start()');
    this.channels.set(channel.protocol, channel);
  }

  onPeer(events: PeerEvents): () => void {
    this.listeners.add(events);
    return () => this.listeners.delete(events);
  }

  /** Listens, then dials every persistent peer (and keeps redialling them). Returns the bound port. */
  async start(): Promise<number> {
    const o = this.opts;
    this.info = { ...o.nodeInfo, channels: [...this.channels.keys()] };
    const privateKey = await generateKeyPairFromSeed('Ed25519', o.nodeKey.seed);
    const family = o.listen.host.includes(':') ? 'ip6' : 'ip4';
    const maxConns =
      o.maxInboundPeers + o.maxOutboundPeers + this.unconditional.size + this.persistentIds.size + 8;
    const node = await createLibp2p({
      privateKey,
      addresses: { listen: [`/${family}/${o.listen.host}/tcp/${o.listen.port}`] },
      // On a loopback testnet (127.a.b.c per node, as on separate hosts) connections leave from
      // the node's own address, so peers see the same remote IP a real network would show.
      transports: [
        tcp(
          /^127\./.test(o.listen.host) && o.listen.host !== '127.0.0.1'
            ? { dialOpts: { localAddress: o.listen.host } as { noDelay?: boolean } }
            : {},
        ),
      ],
      connectionEncrypters: [noise()],
      streamMuxers: [
        yamux({
          streamOptions: { inactivityTimeout: 600_000, maxReadBufferLength: 64 * 1024 * 1024 },
        }),
      ],
      connectionManager: {
        maxConnections: maxConns,
        dialTimeout: o.dialTimeoutMs,
        inboundUpgradeTimeout: o.handshakeTimeoutMs,
      },
      connectionMonitor: { enabled: false },
    });
    this.node = node;
    node.addEventListener('connection:open', (ev) => this.onConnectionOpen(ev.detail));
    node.addEventListener('connection:close', (ev) => this.onConnectionClose(ev.detail));
    await node.handle(HANDSHAKE_PROTOCOL, (stream, conn) => this.answerHandshake(stream, conn), {
      maxInboundStreams: 1,
    });
    for (const ch of this.channels.values()) {
      await node.handle(ch.protocol, (stream, conn) => this.acceptChannel(ch, stream, conn), {
        maxInboundStreams: 4,
        maxOutboundStreams: 4,
      });
    }
    this.running = true;
    const listenAddrs = node.getMultiaddrs().map((m) => m.toString());
    const bound = node.getMultiaddrs()[0];
    const port = bound ? hostPortOf(bound).port : o.listen.port;
    this.log.info({ nodeId: this.nodeId, listen: listenAddrs }, 'P2P listening');
    for (const p of o.persistentPeers) void this.dialLoop(p);
    return port;
  }

  async stop(): Promise<void> {
    if (!this.running) return;
    this.running = false;
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    const node = this.node;
    this.node = null;
    await node?.stop();
    this.peers.clear();
    this.byConn.clear();
  }

  get peerCount(): number {
    return this.peers.size;
  }

  peerIds(): string[] {
    return [...this.peers.keys()];
  }

  /** Peers as /net_info and `tendermint show-peers` show them. */
  peerInfos(): PeerInfo[] {
    return [...this.peers.values()].map((p) => ({
      nodeId: p.id,
      moniker: p.info.moniker,
      remoteIp: p.remoteIp,
      listenAddr: p.info.listenAddr,
      isOutbound: p.outbound,
      network: p.info.network,
      version: p.info.version,
      channels: [...p.info.channels],
    }));
  }

  /** Bytes sent and received per peer and channel (the p2p metrics read these). */
  traffic(): Array<{ peer: string; channel: string; sent: number; received: number }> {
    const out: Array<{ peer: string; channel: string; sent: number; received: number }> = [];
    for (const p of this.peers.values()) {
      for (const [channel, s] of p.stats)
        out.push({ peer: p.id, channel, sent: s.sent, received: s.received });
    }
    return out;
  }

  /**
   * Queues `payload` for one peer on a channel; false when the peer is not connected or did not
   * list the channel in its handshake (CometBFT sends a peer only the channels it advertised).
   */
  send(peerId: string, protocol: string, payload: Uint8Array): boolean {
    const p = this.peers.get(peerId);
    if (!p?.info.channels.includes(protocol)) return false;
    this.write(p, protocol, frame(payload));
    return true;
  }

  /** Queues `payload` for every connected peer (except `except`) that advertised the channel. */
  broadcast(protocol: string, payload: Uint8Array, except?: string): void {
    if (this.peers.size === 0) return;
    const bytes = frame(payload);
    for (const p of this.peers.values()) {
      if (p.id !== except && p.info.channels.includes(protocol)) this.write(p, protocol, bytes);
    }
  }

  /**
   * Drops a peer for what it sent (invalid data, a slow reader), logging why. It is kept away for
   * `misbehaviourBanMs`: refused inbound and not redialled even when persistent, so a broken peer
   * cannot loop through connect and disconnect.
   */
  disconnect(peerId: string, reason: string): void {
    const p = this.peers.get(peerId);
    if (!p) return;
    const banMs = this.opts.misbehaviourBanMs ?? 60_000;
    this.bannedUntil.set(peerId, Date.now() + banMs);
    this.log.warn({ peer: peerId, reason, banSeconds: Math.round(banMs / 1000) }, 'disconnecting peer');
    this.dropPeer(p);
    void p.conn.close().catch(() => p.conn.abort(new Error(reason)));
  }

  // ------------------------------------------------------------------------------------------
  // Connections and the handshake

  private onConnectionOpen(conn: Connection): void {
    if (conn.direction !== 'inbound') return;
    // An inbound connection must finish the handshake in time or it is closed.
    const t = setTimeout(() => {
      this.timers.delete(t);
      if (!this.byConn.has(conn.id) && conn.status === 'open') {
        this.log.info(
          { remote: conn.remoteAddr.toString() },
          'inbound connection without a handshake; closed',
        );
        conn.abort(new P2PError('HANDSHAKE', 'no handshake within handshake_timeout'));
      }
    }, this.opts.handshakeTimeoutMs);
    this.timers.add(t);
  }

  private onConnectionClose(conn: Connection): void {
    const p = this.byConn.get(conn.id);
    if (p) this.dropPeer(p);
  }

  private dropPeer(p: Peer): void {
    // Frames written before the drop still go out, as they would have without coalescing (a seed
    // answers with addresses, then hangs up).
    for (const [protocol, slot] of p.out) this.flushPending(p, protocol, slot);
    clearTimeout(p.drainTimer);
    p.throttled.length = 0;
    p.throttledBytes = 0;
    this.byConn.delete(p.conn.id);
    if (this.peers.get(p.id) !== p) return;
    this.peers.delete(p.id);
    this.log.info({ peer: p.id, outbound: p.outbound }, 'peer disconnected');
    for (const l of this.listeners) l.down(p.id);
  }

  private provenId(conn: Connection): string {
    const key = conn.remotePeer.publicKey;
    if (key?.type !== 'Ed25519') {
      throw new P2PError('WRONG_ID', `peer ${conn.remotePeer.toString()} has no ed25519 key`);
    }
    return nodeIdFromPublicKey(key.raw);
  }

  /** Dialler side: send our node info, read theirs, check both ways. */
  private async handshakeOut(conn: Connection, expectedId: string | null): Promise<Peer> {
    const provenId = this.provenId(conn);
    if (expectedId !== null && provenId !== expectedId) {
      throw new P2PError(
        'WRONG_ID',
        `the peer at ${conn.remoteAddr.toString()} has node ID ${provenId}, but persistent_peers names ${expectedId}`,
      );
    }
    const stream = await conn.newStream(HANDSHAKE_PROTOCOL, {
      signal: AbortSignal.timeout(this.opts.handshakeTimeoutMs),
    });
    stream.send(frame(encodeNodeInfo(this.info!)));
    const [infoBytes, verdictBytes] = await readFrames(
      stream,
      2,
      MAX_NODE_INFO_BYTES,
      this.opts.handshakeTimeoutMs,
      'handshake',
    );
    void stream.close().catch(() => {});
    const theirs = decodeNodeInfo(infoBytes!);
    const refusal = compatibility(this.info!, theirs, provenId);
    if (refusal) throw refusal;
    const refusedBy = new TextDecoder().decode(verdictBytes!);
    if (refusedBy) {
      const m = /^([A-Z_]+): (.*)$/s.exec(refusedBy);
      const code = m && m[1] === 'DUPLICATE' ? 'DUPLICATE' : 'HANDSHAKE';
      throw new P2PError(code, `peer ${provenId} refused this node: ${m ? m[2] : refusedBy}`);
    }
    return this.admit(conn, theirs, true);
  }

  /** Listener side of the handshake. */
  private async answerHandshake(stream: Stream, conn: Connection): Promise<void> {
    let provenId = '?';
    try {
      provenId = this.provenId(conn);
      // The dialler runs the handshake, once per connection.
      if (conn.direction !== 'inbound') {
        throw new P2PError('HANDSHAKE', 'a handshake on a connection this node dialled');
      }
      if (this.byConn.has(conn.id) || this.handshaking.has(conn.id)) {
        throw new P2PError('HANDSHAKE', 'a second handshake on one connection');
      }
      this.handshaking.add(conn.id);
      const [bytes] = await readFrames(
        stream,
        1,
        MAX_NODE_INFO_BYTES,
        this.opts.handshakeTimeoutMs,
        'handshake',
      );
      // Our info goes back even on a refusal, with the verdict, so the dialler can log the reason too.
      stream.send(frame(encodeNodeInfo(this.info!)));
      try {
        const theirs = decodeNodeInfo(bytes!);
        const refusal = compatibility(this.info!, theirs, provenId);
        if (refusal) throw refusal;
        this.admit(conn, theirs, false);
      } catch (err) {
        const code = err instanceof P2PError ? err.code : 'HANDSHAKE';
        stream.send(verdict(`${code}: ${(err as Error).message}`));
        throw err;
      }
      stream.send(verdict(''));
      void stream.close().catch(() => {});
    } catch (err) {
      const duplicate = err instanceof P2PError && err.code === 'DUPLICATE';
      this.log[duplicate ? 'debug' : 'warn'](
        { peer: provenId, remote: conn.remoteAddr.toString(), reason: (err as Error).message },
        'inbound peer refused',
      );
      setTimeout(() => conn.abort(err as Error), 100).unref();
    } finally {
      this.handshaking.delete(conn.id);
    }
  }

  /** Registers a handshaken connection as a peer, applying limits and the duplicate rule. */
  private admit(conn: Connection, info: NodeInfo, outbound: boolean): Peer {
    const id = info.id;
    if (id === this.nodeId) throw new P2PError('HANDSHAKE', 'refusing a connection to this node itself');
    const banned = this.bannedUntil.get(id);
    if (banned !== undefined && banned > Date.now()) {
      throw new P2PError(
        'HANDSHAKE',
        `${id} was disconnected for misbehaviour; refused for ${Math.ceil((banned - Date.now()) / 1000)} s more`,
      );
    }
    const unconditional = this.unconditional.has(id);
    const persistent = this.persistentIds.has(id);
    const existing = this.peers.get(id);
    if (existing && existing.conn !== conn) {
      // Both sides dialled: keep the connection dialled by the smaller node ID, on both sides alike.
      const dialler = (out: boolean) => (out ? this.nodeId : id);
      const keepExisting = dialler(existing.outbound) <= dialler(outbound);
      if (keepExisting) throw new P2PError('DUPLICATE', `already connected to ${id}`);
      this.dropPeer(existing);
      void existing.conn.close().catch(() => {});
    } else if (!unconditional && !persistent) {
      const count = [...this.peers.values()].filter(
        (p) => p.outbound === outbound && !p.unconditional && !p.persistent,
      ).length;
      const max = outbound ? this.opts.maxOutboundPeers : this.opts.maxInboundPeers;
      if (count >= max) {
        throw new P2PError(
          'PEER_LIMIT',
          `${outbound ? 'max_num_outbound_peers' : 'max_num_inbound_peers'} (${max}) reached; ${id} refused`,
        );
      }
    }
    const remoteIp = remoteIpOf(conn);
    if (this.opts.allowDuplicateIp === false && !unconditional && !persistent) {
      const same = [...this.peers.values()].find((p) => p.remoteIp === remoteIp && p.id !== id);
      if (same) {
        throw new P2PError(
          'PEER_LIMIT',
          `peer ${same.id} already connects from ${remoteIp} and allow_duplicate_ip = false; ${id} refused`,
        );
      }
    }
    const peer = new Peer(id, info, conn, outbound, remoteIp, persistent, unconditional, {
      send: this.opts.sendRate,
      recv: this.opts.recvRate,
    });
    this.peers.set(id, peer);
    this.byConn.set(conn.id, peer);
    this.log.info(
      { peer: id, moniker: info.moniker, outbound, remote: conn.remoteAddr.toString() },
      'peer connected',
    );
    for (const wake of this.waiting.get(conn.id) ?? []) wake();
    this.waiting.delete(conn.id);
    for (const l of this.listeners) l.up(id);
    return peer;
  }

  /** Waits (at most handshake_timeout) for a connection's handshake to register its peer. */
  private peerOf(conn: Connection): Promise<Peer | undefined> {
    const now = this.byConn.get(conn.id);
    if (now) return Promise.resolve(now);
    return new Promise((resolve) => {
      const list = this.waiting.get(conn.id) ?? [];
      const t = setTimeout(() => resolve(undefined), this.opts.handshakeTimeoutMs);
      list.push(() => {
        clearTimeout(t);
        resolve(this.byConn.get(conn.id));
      });
      this.waiting.set(conn.id, list);
    });
  }

  /**
   * Dials `addr` once and runs the handshake (the node ID must match); throws the reason when it
   * fails. Peer exchange dials through this; persistent peers through their redial loop.
   */
  async dial(addr: PeerAddress): Promise<void> {
    const id = addr.nodeId.toLowerCase();
    const node = this.node;
    if (!this.running || !node) throw new P2PError('INVALID_OPTIONS', 'the P2P host is not running');
    if (this.peers.has(id)) return;
    const family = /^\d+\.\d+\.\d+\.\d+$/.test(addr.host) ? 'ip4' : addr.host.includes(':') ? 'ip6' : 'dns';
    const conn = await node.dial(multiaddr(`/${family}/${addr.host}/tcp/${addr.port}`), {
      signal: AbortSignal.timeout(this.opts.dialTimeoutMs),
    });
    if (!this.peers.has(id) || this.peers.get(id)!.conn !== conn) {
      try {
        await this.handshakeOut(conn, id);
      } catch (err) {
        void conn.close().catch(() => {});
        throw err;
      }
    }
  }

  /**
   * The unsafe RPC's dial_peers and dial_seeds: dials each address in the background. A
   * `persistent` one is kept connected from now on (redialled like persistent_peers), an
   * `unconditional` one is exempt from the peer limits. Failures are logged, not returned, as in
   * CometBFT (the caller reads /net_info).
   */
  addPeers(addrs: PeerAddress[], o: { persistent: boolean; unconditional: boolean }): void {
    if (!this.running) throw new P2PError('INVALID_OPTIONS', 'the P2P host is not running');
    for (const a of addrs) {
      const id = a.nodeId.toLowerCase();
      if (o.unconditional) this.unconditional.add(id);
      if (o.persistent) {
        if (this.persistentIds.has(id)) continue;
        this.persistentIds.add(id);
        void this.dialLoop(a);
        continue;
      }
      void this.dial(a).catch((err: Error) => {
        this.log.info(
          { peer: id, address: `${a.host}:${a.port}`, reason: err.message },
          'dialling peer failed',
        );
      });
    }
  }

  /** Closes the connection to a peer that did nothing wrong (a seed that answered): no ban. */
  hangUp(peerId: string, reason: string): void {
    const p = this.peers.get(peerId);
    if (!p) return;
    this.log.info({ peer: peerId, reason }, 'closing peer connection');
    this.dropPeer(p);
    void p.conn.close().catch(() => p.conn.abort(new Error(reason)));
  }

  /** Whether this node dialled the connected peer `peerId` (undefined when not connected). */
  isOutbound(peerId: string): boolean | undefined {
    return this.peers.get(peerId)?.outbound;
  }

  /** Outbound peers that count against max_num_outbound_peers (not persistent or unconditional). */
  get outboundCount(): number {
    let n = 0;
    for (const p of this.peers.values()) if (p.outbound && !p.persistent && !p.unconditional) n++;
    return n;
  }

  get maxOutboundPeers(): number {
    return this.opts.maxOutboundPeers;
  }

  /** The listen address a connected peer gave in its handshake, and the IP it connects from. */
  peerAddressOf(peerId: string): { listenAddr: string; remoteIp: string } | undefined {
    const p = this.peers.get(peerId);
    return p && { listenAddr: p.info.listenAddr, remoteIp: p.remoteIp };
  }

  private async dialLoop(addr: PeerAddress): Promise<void> {
    const id = addr.nodeId.toLowerCase();
    const maxDelay = this.opts.maxRedialDelayMs ?? 30_000;
    let delay = 500;
    let failures = 0;
    while (this.running) {
      const existing = this.peers.get(id);
      if (existing) {
        await this.untilDown(id);
        delay = 500;
        continue;
      }
      const banned = (this.bannedUntil.get(id) ?? 0) - Date.now();
      if (banned > 0) {
        await this.sleep(banned);
        continue;
      }
      try {
        await this.dial(addr);
        failures = 0;
        delay = 500;
      } catch (err) {
        if (!this.running) return;
        failures++;
        const e = err as Error;
        const duplicate = e instanceof P2PError && e.code === 'DUPLICATE';
        const level = duplicate
          ? 'debug'
          : e instanceof P2PError
            ? 'warn'
            : failures === 1 || failures % 20 === 0
              ? 'info'
              : 'debug';
        this.log[level](
          { peer: id, address: `${addr.host}:${addr.port}`, reason: e.message, attempt: failures },
          e instanceof P2PError ? 'persistent peer refused' : 'dialling persistent peer failed; will retry',
        );
        await this.sleep(delay + Math.floor(Math.random() * 250));
        delay = Math.min(maxDelay, delay * 2);
      }
    }
  }

  private untilDown(id: string): Promise<void> {
    return new Promise((resolve) => {
      if (!this.peers.has(id) || !this.running) return resolve();
      const off = this.onPeer({
        up: () => {},
        down: (p) => {
          if (p === id) {
            off();
            resolve();
          }
        },
      });
      const t = setInterval(() => {
        if (!this.running || !this.peers.has(id)) {
          clearInterval(t);
          off();
          resolve();
        }
      }, 500);
      t.unref();
    });
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const t = setTimeout(() => {
        this.timers.delete(t);
        resolve();
      }, ms);
      this.timers.add(t);
    });
  }

  // ------------------------------------------------------------------------------------------
  // Channels

  private acceptChannel(ch: Channel, stream: Stream, conn: Connection): void {
    const reader = new FrameReader(ch.maxMessageBytes, ch.protocol);
    const early: Uint8Array[] = [];
    let peer: Peer | undefined;
    let failed = false;
    const consume = (p: Peer, chunk: Uint8Array) => {
      p.stat(ch.protocol).received += chunk.length;
      try {
        for (const f of reader.push(chunk)) {
          if (this.peers.get(p.id) !== p) return;
          ch.onMessage(p.id, f);
        }
      } catch (err) {
        failed = true;
        this.disconnect(p.id, (err as Error).message);
      }
    };
    // recv_rate: bytes are handed on in pieces as the peer's budget allows; while in debt the
    // stream stops reading (yamux then stops the sender once its window is used up).
    const held: Uint8Array[] = [];
    let heldTimer: NodeJS.Timeout | undefined;
    const release = (p: Peer, rate: ByteRate) => {
      const piece = Math.max(16_384, Math.floor(rate.bytesPerSecond / 20));
      while (held.length > 0 && !failed && this.peers.get(p.id) === p) {
        const wait = rate.waitMs();
        if (wait > 0) {
          if (stream.readStatus === 'readable') stream.pause();
          if (!heldTimer) {
            const t = setTimeout(() => {
              this.timers.delete(t);
              heldTimer = undefined;
              release(p, rate);
            }, wait);
            heldTimer = t;
            this.timers.add(t);
          }
          return;
        }
        let c = held[0]!;
        if (c.length > piece) {
          held[0] = c.subarray(piece);
          c = c.subarray(0, piece);
        } else held.shift();
        rate.take(c.length);
        consume(p, c);
      }
      if (held.length === 0 && stream.readStatus === 'paused') stream.resume();
    };
    const deliver = (chunk: Uint8Array) => {
      if (failed || !peer) return;
      if (!peer.recvRate) return consume(peer, chunk);
      held.push(chunk);
      if (!heldTimer) release(peer, peer.recvRate);
    };
    stream.addEventListener('message', (ev) => {
      const data = plainBytes(ev.data);
      if (peer) deliver(data);
      else early.push(data);
    });
    void this.peerOf(conn).then((p) => {
      if (!p) {
        stream.abort(new P2PError('HANDSHAKE', 'channel stream before a handshake'));
        return;
      }
      peer = p;
      for (const d of early.splice(0)) deliver(d);
    });
  }

  /** Sends a frame to a peer now, or when send_rate allows (frames keep their order). */
  private write(p: Peer, protocol: string, bytes: Uint8Array): void {
    const rate = p.sendRate;
    if (!rate) {
      this.writeNow(p, protocol, bytes);
      return;
    }
    if (p.throttled.length === 0 && rate.waitMs() === 0) {
      rate.take(bytes.length);
      this.writeNow(p, protocol, bytes);
      return;
    }
    const limit = this.opts.maxSendBufferBytes ?? 64 * 1024 * 1024;
    if (p.throttledBytes + bytes.length > limit) {
      this.disconnect(
        p.id,
        `peer too slow: over ${limit} bytes waiting under send_rate ${rate.bytesPerSecond} B/s`,
      );
      return;
    }
    p.throttled.push({ protocol, bytes });
    p.throttledBytes += bytes.length;
    this.scheduleDrain(p);
  }

  private scheduleDrain(p: Peer): void {
    if (p.drainTimer || !p.sendRate) return;
    p.drainTimer = setTimeout(() => {
      p.drainTimer = undefined;
      if (this.peers.get(p.id) !== p) return;
      const rate = p.sendRate!;
      while (p.throttled.length > 0 && rate.waitMs() === 0) {
        const next = p.throttled.shift()!;
        p.throttledBytes -= next.bytes.length;
        rate.take(next.bytes.length);
        this.writeNow(p, next.protocol, next.bytes);
      }
      if (p.throttled.length > 0) this.scheduleDrain(p);
    }, p.sendRate.waitMs());
    p.drainTimer.unref();
  }

  /**
   * Sends a frame to a peer at the end of this turn of the event loop (a microtask), with the other
   * frames written to the same channel meanwhile: frames of up to COALESCE_BYTES together go as one
   * stream write, so one yamux data frame, one noise message and one socket write instead of one
   * each, and the receiver answers with one yamux window update instead of one per frame (block sync
   * answers a range request with up to 64 blocks at once).
   */
  private writeNow(p: Peer, protocol: string, bytes: Uint8Array): void {
    let slot = p.out.get(protocol);
    if (!slot) {
      slot = { queue: [], queuedBytes: 0, opening: false, pending: [], pendingBytes: 0 };
      p.out.set(protocol, slot);
    }
    const limit = this.opts.maxSendBufferBytes ?? 64 * 1024 * 1024;
    const stream = slot.stream;
    const open = stream && stream.status === 'open' && stream.writeStatus === 'writable';
    const waiting = (open ? stream.writeBufferLength : slot.queuedBytes) + slot.pendingBytes;
    if (waiting + bytes.length > limit) {
      this.disconnect(p.id, `peer too slow: over ${limit} bytes waiting to be sent on ${protocol}`);
      return;
    }
    slot.pending.push(bytes);
    slot.pendingBytes += bytes.length;
    if (slot.pending.length > 1) return;
    const s = slot;
    queueMicrotask(() => this.flushPending(p, protocol, s));
  }

  /** Sends this turn's frames of one channel (writeNow), in groups of up to COALESCE_BYTES. */
  private flushPending(p: Peer, protocol: string, slot: Slot): void {
    const parts = slot.pending;
    if (parts.length === 0) return;
    slot.pending = [];
    slot.pendingBytes = 0;
    let group: Uint8Array[] = [];
    let groupBytes = 0;
    const flush = () => {
      if (group.length === 0) return;
      this.sendFrames(p, protocol, slot, group.length === 1 ? group[0]! : Buffer.concat(group, groupBytes));
      group = [];
      groupBytes = 0;
    };
    for (const part of parts) {
      if (groupBytes + part.length > COALESCE_BYTES) flush();
      group.push(part);
      groupBytes += part.length;
    }
    flush();
  }

  /** Writes frames on the channel's stream, or queues them while the stream opens. */
  private sendFrames(p: Peer, protocol: string, slot: Slot, bytes: Uint8Array): void {
    const stream = slot.stream;
    const open = stream && stream.status === 'open' && stream.writeStatus === 'writable';
    if (open) {
      stream.send(bytes);
      p.stat(protocol).sent += bytes.length;
      return;
    }
    // A connection that is closing takes no new stream: the peer is going away (its 'down' follows).
    if (p.conn.status !== 'open') return;
    slot.queue.push(bytes);
    slot.queuedBytes += bytes.length;
    if (slot.opening) return;
    slot.opening = true;
    slot.stream = undefined;
    const s = slot;
    void p.conn
      .newStream(protocol, { signal: AbortSignal.timeout(this.opts.handshakeTimeoutMs) })
      .then((st) => {
        s.opening = false;
        s.stream = st;
        const queued = s.queue.splice(0);
        s.queuedBytes = 0;
        for (const b of queued) {
          st.send(b);
          p.stat(protocol).sent += b.length;
        }
      })
      .catch((err: Error) => {
        s.opening = false;
        s.queue.length = 0;
        s.queuedBytes = 0;
        if (this.peers.get(p.id) === p && p.conn.status === 'open') {
          this.log.debug({ peer: p.id, protocol, err: err.message }, 'could not open a channel stream');
        }
      });
  }
}
