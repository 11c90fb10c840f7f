// What the full node (node.ts) and the light node (light-node.ts) share as processes: listen
// addresses, the components to close in reverse order of opening, and the RunningNode handle that
// `noded start` waits on and stops.
import type { ConfigToml } from '../../../libs/config/index.js';
import { BLOCK_PROTOCOL } from '../../../libs/consensus/index.js';
import { AddressBook, P2P_PROTOCOL_VERSION, P2PHost, PexReactor } from '../../../libs/p2p/index.js';
import type { Logger } from '../../../libs/types/index.js';
import type { RunningNode } from './cli/commands/start.js';
import { NODED_VERSION } from './version.js';

/** Where a server listens: "tcp://host:port" or "host:port" (the CLI's dry run checked it binds). */
export function hostPort(raw: string): { host: string; port: number } {
  const s = raw.replace(/^[a-z]+:\/\//, '');
  const i = s.lastIndexOf(':');
  const host = s.slice(0, i).replace(/^\[|\]$/g, '') || '0.0.0.0';
  return { host, port: Number(s.slice(i + 1)) };
}

/** The address a local client dials for a listener: a wildcard bind is shown as loopback. */
export function dialHost(host: string): string {
  return host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host;
}

/**
 * The P2P host on config.toml [p2p], as both node kinds run it: what it advertises in the handshake,
 * its peers and limits, and with `pex` on, peer exchange over the address book in `addrBookFile`.
 * The caller registers its channels, then starts the host, then the returned `pex` (if any).
 */
export function p2pHostFor(o: {
  config: ConfigToml;
  chainId: string;
  nodeKey: { seed: Uint8Array; publicKey: Uint8Array; nodeId: string };
  rpcAddress: string;
  txIndex: boolean;
  /** config/addrbook.json, as CometBFT keeps it. */
  addrBookFile: string;
  logger: Logger;
}): { p2p: P2PHost; pex: PexReactor | undefined; listen: { host: string; port: number } } {
  const { config } = o;
  const listen = hostPort(config.p2p.laddr.raw);
  const p2p = new P2PHost({
    nodeKey: o.nodeKey,
    nodeInfo: {
      protocolVersion: { p2p: P2P_PROTOCOL_VERSION, block: BLOCK_PROTOCOL, app: 0 },
      id: o.nodeKey.nodeId,
      listenAddr: config.p2p.externalAddress || `${listen.host}:${listen.port}`,
      network: o.chainId,
      version: NODED_VERSION,
      moniker: config.moniker,
      other: { txIndex: o.txIndex ? 'on' : 'off', rpcAddress: o.rpcAddress },
    },
    listen,
    persistentPeers: config.p2p.persistentPeers,
    unconditionalPeerIds: config.p2p.unconditionalPeerIds,
    maxInboundPeers: config.p2p.maxNumInboundPeers,
    maxOutboundPeers: config.p2p.maxNumOutboundPeers,
    handshakeTimeoutMs: config.p2p.handshakeTimeoutMs,
    dialTimeoutMs: config.p2p.dialTimeoutMs,
    sendRate: config.p2p.sendRate,
    recvRate: config.p2p.recvRate,
    allowDuplicateIp: config.p2p.allowDuplicateIp,
    logger: o.logger,
  });
  const pex = config.p2p.pex
    ? new PexReactor(p2p, {
        book: new AddressBook({
          file: o.addrBookFile,
          strict: config.p2p.addrBookStrict,
          selfId: o.nodeKey.nodeId,
          logger: o.logger,
        }),
        seeds: config.p2p.seeds,
        seedMode: config.p2p.seedMode,
        persistentIds: config.p2p.persistentPeers.map((p) => p.nodeId),
        logger: o.logger.child({ module: 'pex' }),
      })
    : undefined;
  return { p2p, pex, listen };
}

interface Closer {
  name: string;
  close(): Promise<void> | void;
}

/**
 * The components of a running node, closed in reverse order of `add` (last opened, first closed),
 * and the promise `noded start` waits on: resolved by stop(), rejected by fail().
 */
export class NodeLifecycle {
  private readonly closers: Closer[] = [];
  private resolveDone: () => void = () => {};
  private rejectDone: (err: Error) => void = () => {};
  private stopping: Promise<void> | undefined;
  /** Whether the node serves (false while starting and stopping): /readyz reads it. */
  serving = false;
  readonly done = new Promise<void>((resolve, reject) => {
    this.resolveDone = resolve;
    this.rejectDone = reject;
  });

  constructor(
    private readonly log: Logger,
    private readonly flush?: () => void,
  ) {}

  add(name: string, close: () => Promise<void> | void): void {
    this.closers.push({ name, close });
  }

  /** Adds a component that closes right after the one named `other` (which it outlives). */
  addClosingAfter(name: string, close: () => Promise<void> | void, other: string): void {
    const i = this.closers.findIndex((c) => c.name === other);
    this.closers.splice(i < 0 ? this.closers.length : i, 0, { name, close });
  }

  async closeAll(): Promise<void> {
    for (const c of this.closers.reverse()) {
      try {
        await c.close();
      } catch (err) {
        this.log.error({ component: c.name, err: (err as Error).message }, 'error while stopping');
      }
    }
    this.closers.length = 0;
  }

  /** A component failed for good: close everything and reject `done` with the error. */
  fail(err: Error): void {
    void this.closeAll().finally(() => this.rejectDone(err));
  }

  stop(): Promise<void> {
    this.stopping ??= (async () => {
      this.serving = false;
      this.log.info('stopping');
      await this.closeAll();
      this.flush?.();
      this.resolveDone();
    })();
    return this.stopping;
  }

  handle(): RunningNode {
    return { done: this.done, stop: () => this.stop() };
  }
}
