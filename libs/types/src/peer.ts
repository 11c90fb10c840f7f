// Peers as the wire and the config name them: the facts the P2P host (libs/p2p) and the gateway's
// relay (libs/abci-grpc) share. Here, in a package with no dependencies, so that the relay's side in
// the executor, state-store and rpc-edge does not bring libp2p with it (docs/deploy.md "Per-service
// images").

/** The protocol of the handshake stream (node info both ways) every connection opens first. */
export const HANDSHAKE_PROTOCOL = '/noded/handshake/1';
/** Peer exchange (PEX): addresses asked for and given. */
export const PEX_PROTOCOL = '/noded/pex/1';

export interface PeerAddress {
  nodeId: string;
  host: string;
  port: number;
}

const NODE_ID = /^[0-9a-f]{40}$/;

/** A node ID as peers send it: 40 lowercase hex digits (config input may use either case). */
export function isWireNodeId(id: string): boolean {
  return NODE_ID.test(id);
}

/** "id@host:port" as persistent_peers and PEX carry it; undefined when malformed. */
export function parsePeerAddress(s: string): PeerAddress | undefined {
  const m = /^([0-9a-fA-F]{40})@(.+):(\d{1,5})$/.exec(s);
  if (!m) return undefined;
  const host = m[2]!.replace(/^\[|\]$/g, '');
  const port = Number(m[3]);
  if (port < 1 || port > 65535 || host === '' || /[\s/@]/.test(host)) return undefined;
  return { nodeId: m[1]!.toLowerCase(), host, port };
}
