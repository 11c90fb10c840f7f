// HTTP helpers shared by the servers of this lib.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from '../../types/index.js';

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
