// Listen addresses as config.toml gives them, shared by `noded start` and the cluster's services
// (peer addresses: @noded/p2p's peerAddresses).

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
