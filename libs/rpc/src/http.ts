// HTTP helpers shared by the servers of this lib.
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo, Server as NetServer } from 'node:net';
import { extractTraceContext, type TraceParent, tracingEnabled } from '@noded/telemetry';
import type { Logger } from '@noded/types';

/**
 * Cuts the connection when the response is not fully out within `ms` (Go's http.Server
 * WriteTimeout, which CometBFT and the Cosmos API server rely on). 0 disables it.
 */
export function enforceWriteTimeout(
  req: IncomingMessage,
  res: ServerResponse,
  ms: number,
  logger: Logger,
  what: string,
): void {
  if (ms <= 0) return;
  const timer = setTimeout(() => {
    if (!res.writableFinished) {
      logger.debug({ url: req.url }, `${what} elapsed: closing connection`);
      res.destroy();
      req.socket.destroy();
    }
  }, ms);
  timer.unref();
  res.on('close', () => clearTimeout(timer));
}

/**
 * After a refusal of a body that is too large, reads and drops the rest of it (up to `capBytes`)
 * instead of closing at once: closing a socket that still has unread input resets it, and the reset
 * makes the client, which may still be sending, lose the refusal it was sent. Past the cap the
 * connection is cut; the server's request timeout bounds how long this can take.
 */
export function discardBody(req: IncomingMessage, capBytes: number): void {
  let dropped = 0;
  req.removeAllListeners('data');
  req.on('data', (chunk: Buffer) => {
    dropped += chunk.length;
    if (dropped > capBytes) req.socket.destroy();
  });
  req.resume();
}

/** How much of a refused body is read and dropped before the connection is cut (discardBody). */
export function discardCap(limit: number): number {
  return Math.max(8 * limit, 64 * 1024 * 1024);
}

/** Binds `server` (HTTP, HTTPS or plain TCP); resolves with the bound port (useful with port 0). */
export function listenOn(server: NetServer, host: string, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve((server.address() as AddressInfo).port);
    });
  });
}

/** Stops accepting and closes every open connection; nothing to do when it never listened. */
export function closeServer(server: Server | undefined): Promise<void> {
  if (server === undefined || !server.listening) return Promise.resolve();
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}

/**
 * Answers requests Node's parser refuses (431 for oversized headers, 400 otherwise) and closes the
 * connection, instead of Node's default of resetting it without a reply.
 */
export function answerClientErrors(server: Server): void {
  server.on('clientError', (err: NodeJS.ErrnoException, socket) => {
    if (!socket.writable) socket.destroy();
    else if (err.code === 'HPE_HEADER_OVERFLOW') {
      socket.end('HTTP/1.1 431 Request Header Fields Too Large\r\nConnection: close\r\n\r\n');
    } else if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') {
      // The request was not in within the read timeout (a client sending too slowly).
      socket.end('HTTP/1.1 408 Request Timeout\r\nConnection: close\r\n\r\n');
    } else socket.end('HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n');
  });
}

/**
 * The W3C trace context (`traceparent`, `tracestate`) a client sent in its request headers, as the
 * parent of the request's server span; undefined when tracing is off (one boolean test).
 */
export function traceParentOfRequest(req: IncomingMessage): TraceParent | undefined {
  if (!tracingEnabled()) return undefined;
  return extractTraceContext((k) => {
    const v = req.headers[k];
    return Array.isArray(v) ? v[0] : v;
  });
}
