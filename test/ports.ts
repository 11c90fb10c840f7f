// Listening ports for the servers tests start. listen(0) draws from the kernel's ephemeral range
// (/proc/sys/net/ipv4/ip_local_port_range, 32768-60999 by default), the same range every outgoing
// connection takes its local port from: under load a client connection can take the port between
// the probe and the node's bind ("cannot listen on 127.0.0.1:33419: address already in use", seen
// in a `start --dry-run`). So ports are drawn at random below that range and probed instead.
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';

const LOWEST = 10_000;

/** The first port of the kernel's ephemeral range (32768 when it cannot be read). */
function ephemeralStart(): number {
  try {
    const first = Number(
      readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0],
    );
    return Number.isInteger(first) && first > LOWEST + 1000 ? first : 32_768;
  } catch {
    return 32_768;
  }
}
const HIGHEST = ephemeralStart() - 1;

/** Ports this process handed out: a probe frees the port again, so it could be drawn twice. */
const handedOut = new Set<number>();

function canListen(port: number, host: string): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.once('error', () => resolve(false));
    srv.listen(port, host, () => srv.close(() => resolve(true)));
  });
}

/** A port nothing listens on at `host`, outside the ephemeral range, never one handed out before. */
export async function freePort(host = '127.0.0.1'): Promise<number> {
  for (let attempt = 0; attempt < 500; attempt++) {
    const port = LOWEST + Math.floor(Math.random() * (HIGHEST - LOWEST + 1));
    if (handedOut.has(port)) continue;
    if (await canListen(port, host)) {
      handedOut.add(port);
      return port;
    }
  }
  throw new Error(`freePort: no free port in ${LOWEST}-${HIGHEST} on ${host} after 500 draws`);
}

/** `n` distinct free ports (see freePort). */
export async function freePorts(n: number, host = '127.0.0.1'): Promise<number[]> {
  const ports: number[] = [];
  for (let i = 0; i < n; i++) ports.push(await freePort(host));
  return ports;
}
