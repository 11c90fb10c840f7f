// Listen and peer addresses as config.toml and the RPC give them, shared by `noded start` and the
// cluster's services.
import { type PeerAddress, parsePeerAddress } from '@noded/p2p';

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

/** Parses dial_peers / dial_seeds addresses, naming the first bad one. */
export function peerAddresses(list: string[]): PeerAddress[] {
  return list.map((s) => {
    const a = parsePeerAddress(s);
    if (!a) throw new Error(`address (${s}) is not "<node_id>@<host>:<port>" with a 40-hex-digit node id`);
    return a;
  });
}
