// Real P2P hosts on 127.0.0.1 (random ports) for the P2P tests, stopped by stopTestHosts().
import assert from 'node:assert/strict';
import { ed25519Generate, nodeIdFromPublicKey } from '@noded/crypto';
import { P2P_PROTOCOL_VERSION, P2PHost, type PeerAddress } from '@noded/p2p';
import { type Logger, silentLogger } from '@noded/types';

export interface TestHostOptions {
  key?: ReturnType<typeof ed25519Generate>;
  network?: string;
  p2pVersion?: number;
  peers?: PeerAddress[];
  unconditional?: string[];
  maxInbound?: number;
  banMs?: number;
  /** Listen on this port and advertise it (default: a random port, advertised as 0). */
  port?: number;
  maxOutbound?: number;
  sendRate?: number;
  recvRate?: number;
  allowDuplicateIp?: boolean;
  logger?: Logger;
}

export interface TestHost {
  host: P2PHost;
  id: string;
  port: number;
}

const started: P2PHost[] = [];

/** Builds a host, lets `setup` register its channels, starts it. */
export async function startTestHost(setup: (h: P2PHost) => void, o: TestHostOptions = {}): Promise<TestHost> {
  const key = o.key ?? ed25519Generate();
  const id = nodeIdFromPublicKey(key.publicKey);
  const host = new P2PHost({
    nodeKey: { seed: key.seed, publicKey: key.publicKey },
    nodeInfo: {
      protocolVersion: { p2p: o.p2pVersion ?? P2P_PROTOCOL_VERSION, block: 11, app: 0 },
      id,
      listenAddr: `127.0.0.1:${o.port ?? 0}`,
      network: o.network ?? 'chain-local',
      version: 'test',
      moniker: `m-${id.slice(0, 4)}`,
      other: { txIndex: 'off', rpcAddress: '' },
    },
    listen: { host: '127.0.0.1', port: o.port ?? 0 },
    persistentPeers: o.peers ?? [],
    unconditionalPeerIds: o.unconditional ?? [],
    maxInboundPeers: o.maxInbound ?? 40,
    maxOutboundPeers: o.maxOutbound ?? 10,
    handshakeTimeoutMs: 3000,
    dialTimeoutMs: 2000,
    maxRedialDelayMs: 300,
    misbehaviourBanMs: o.banMs,
    sendRate: o.sendRate,
    recvRate: o.recvRate,
    allowDuplicateIp: o.allowDuplicateIp,
    logger: o.logger ?? silentLogger,
  });
  setup(host);
  const port = await host.start();
  started.push(host);
  return { host, id, port };
}

export async function stopTestHosts(): Promise<void> {
  for (const h of started.splice(0)) await h.stop();
}

/** Polls `cond` every 20 ms; fails the test naming `what` after `ms`. */
export async function until(what: string, cond: () => boolean, ms = 8000): Promise<void> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (cond()) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  assert.fail(`timed out waiting for ${what}`);
}

/** A log line as the recording logger keeps it. */
export interface Logged {
  level: string;
  obj: Record<string, unknown>;
  msg: string;
}

export function recordingLogger(sink: Logged[]): Logger {
  const make = (level: string) => (obj: unknown, msg?: string) => {
    sink.push({
      level,
      obj: (typeof obj === 'object' && obj ? obj : {}) as Record<string, unknown>,
      msg: msg ?? '',
    });
  };
  const l: Logger = {
    trace: make('trace'),
    debug: make('debug'),
    info: make('info'),
    warn: make('warn'),
    error: make('error'),
    child: () => l,
  };
  return l;
}
