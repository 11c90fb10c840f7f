// What two nodes tell each other right after the encrypted channel is up (CometBFT's NodeInfo):
// who they are, which network and protocol versions they speak, where they listen. JSON on the
// wire, at most MAX_NODE_INFO_BYTES, every field checked before any other message is accepted.
import { isWireNodeId } from '@noded/types';
import { P2PError } from './errors.js';

/** P2P protocol version; a peer speaking another one is refused. */
export const P2P_PROTOCOL_VERSION = 8;
export const MAX_NODE_INFO_BYTES = 10_240;

export interface NodeInfo {
  protocolVersion: { p2p: number; block: number; app: number };
  /** CometBFT node ID: hex of the first 20 bytes of sha256(ed25519 public key). */
  id: string;
  /** Address peers should dial ("host:port"). */
  listenAddr: string;
  /** Chain ID. */
  network: string;
  /** Software version. */
  version: string;
  /** Protocol IDs of the channels this node serves. */
  channels: string[];
  moniker: string;
  other: { txIndex: 'on' | 'off'; rpcAddress: string };
}

// Defined in @noded/types (the gateway relay checks node ids without libp2p).
export { isWireNodeId };

export function encodeNodeInfo(info: NodeInfo): Uint8Array {
  return new TextEncoder().encode(JSON.stringify(info));
}

const bad = (why: string): never => {
  throw new P2PError('HANDSHAKE', `node info: ${why}`);
};

function str(o: Record<string, unknown>, key: string, max: number): string {
  const v = o[key];
  if (typeof v !== 'string') bad(`${key} is not a string`);
  if ((v as string).length > max) bad(`${key} is longer than ${max} characters`);
  return v as string;
}

function uint(o: Record<string, unknown>, key: string): number {
  const v = o[key];
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) bad(`${key} is not a non-negative integer`);
  return v as number;
}

function obj(v: unknown, what: string): Record<string, unknown> {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) bad(`${what} is not an object`);
  return v as Record<string, unknown>;
}

/** Parses and checks a peer's node info; throws P2PError('HANDSHAKE') naming the bad field. */
export function decodeNodeInfo(bytes: Uint8Array): NodeInfo {
  if (bytes.length > MAX_NODE_INFO_BYTES) bad(`${bytes.length} bytes, over ${MAX_NODE_INFO_BYTES}`);
  let raw: unknown;
  try {
    raw = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes));
  } catch (err) {
    return bad(`not JSON (${(err as Error).message})`);
  }
  const o = obj(raw, 'node info');
  const pv = obj(o.protocolVersion, 'protocolVersion');
  const other = obj(o.other, 'other');
  const id = str(o, 'id', 40);
  if (!isWireNodeId(id)) bad(`id "${id}" is not 40 lowercase hex characters`);
  const channels = o.channels;
  if (
    !Array.isArray(channels) ||
    channels.length > 32 ||
    channels.some((c) => typeof c !== 'string' || c.length > 64)
  )
    bad('channels is not a list of at most 32 protocol IDs');
  const txIndex = other.txIndex;
  if (txIndex !== 'on' && txIndex !== 'off') bad('other.txIndex is not "on" or "off"');
  return {
    protocolVersion: { p2p: uint(pv, 'p2p'), block: uint(pv, 'block'), app: uint(pv, 'app') },
    id,
    listenAddr: str(o, 'listenAddr', 256),
    network: str(o, 'network', 64),
    version: str(o, 'version', 64),
    channels: channels as string[],
    moniker: str(o, 'moniker', 128),
    other: { txIndex: txIndex as 'on' | 'off', rpcAddress: str(other, 'rpcAddress', 256) },
  };
}

/**
 * Whether a peer with `theirs` may join a node with `ours`: same network, same P2P and block
 * protocol versions, and the ID its key proves. Returns the refusal, or null when compatible.
 */
export function compatibility(ours: NodeInfo, theirs: NodeInfo, provenId: string): P2PError | null {
  if (theirs.id !== provenId) {
    return new P2PError('WRONG_ID', `node info claims ID ${theirs.id} but the peer's key gives ${provenId}`);
  }
  if (theirs.network !== ours.network) {
    return new P2PError(
      'WRONG_NETWORK',
      `peer ${provenId} is on network "${theirs.network}", this node on "${ours.network}"`,
    );
  }
  if (theirs.protocolVersion.p2p !== ours.protocolVersion.p2p) {
    return new P2PError(
      'WRONG_VERSION',
      `peer ${provenId} speaks P2P protocol ${theirs.protocolVersion.p2p}, this node ${ours.protocolVersion.p2p}`,
    );
  }
  if (theirs.protocolVersion.block !== ours.protocolVersion.block) {
    return new P2PError(
      'WRONG_VERSION',
      `peer ${provenId} uses block protocol ${theirs.protocolVersion.block}, this node ${ours.protocolVersion.block}`,
    );
  }
  return null;
}
