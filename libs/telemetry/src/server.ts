// The metrics and health server (:26660): /metrics for Prometheus, /healthz (alive) and /readyz
// (serving and not catching up) for Kubernetes probes.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from '@noded/types';
import type { NodeMetrics } from './metrics.js';
import type { InstrumentationOptions } from './options.js';

export interface Readiness {
  /** The node's servers are up and answering. */
  serving: boolean;
  /** Block sync or state sync is still running. */
  catchingUp: boolean;
  /** Why it is not ready, one reason each (the cluster's metrics service names the services). */
  problems?: string[];
}

export interface MetricsServerDeps {
  /** What /metrics answers: the node's registry, or the cluster's merged exposition. */
  metrics: Pick<NodeMetrics, 'text' | 'contentType'>;
  logger: Logger;
  options: InstrumentationOptions;
  /** Asked on every /readyz. */
  readiness: () => Readiness | Promise<Readiness>;
}

function json(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'Content-Type': 'application/json',
    'Content-Length': Buffer.byteLength(text),
    'Cache-Control': 'no-store',
  });
  res.end(text);
}

export class MetricsServer {
  readonly options: InstrumentationOptions;
  private readonly logger: Logger;
  private server: Server | undefined;

  constructor(private readonly deps: MetricsServerDeps) {
    this.options = deps.options;
    this.logger = deps.logger.child({ module: 'metrics' });
  }

  async listen(host: string, port: number): Promise<number> {
    if (this.server) throw new Error('MetricsServer is already listening');
    const server = createServer({ requestTimeout: 10_000, headersTimeout: 10_000 });
    if (this.options.maxOpenConnections > 0) server.maxConnections = this.options.maxOpenConnections;
    server.on('request', (req, res) => {
      this.handle(req, res).catch((err: Error) => {
        this.logger.error({ err: err.message }, 'metrics request failed');
        if (!res.headersSent) json(res, 500, { status: 'error', error: err.message });
        else res.destroy();
      });
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => {
        server.off('error', reject);
        resolve();
      });
    });
    this.server = server;
    const bound = (server.address() as AddressInfo).port;
    this.logger.info({ host, port: bound }, 'Prometheus metrics and health checks listening');
    return bound;
  }

  async close(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (!server) return;
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = new URL(req.url ?? '/', 'http://localhost').pathname;
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { Allow: 'GET, HEAD' });
      res.end();
      return;
    }
    switch (path) {
      case '/metrics': {
        const text = await this.deps.metrics.text();
        res.writeHead(200, { 'Content-Type': this.deps.metrics.contentType });
        res.end(req.method === 'HEAD' ? undefined : text);
        return;
      }
      case '/healthz':
        json(res, 200, { status: 'ok' });
        return;
      case '/readyz': {
        let state: Readiness;
        try {
          state = await this.deps.readiness();
        } catch (err) {
          json(res, 503, { status: 'not ready', error: (err as Error).message });
          return;
        }
        if (state.serving && !state.catchingUp) json(res, 200, { status: 'ready' });
        else
          json(res, 503, {
            status: 'not ready',
            serving: state.serving,
            catching_up: state.catchingUp,
            ...(state.problems ? { problems: state.problems } : {}),
          });
        return;
      }
      default:
        res.writeHead(404, { 'Content-Type': 'text/plain; charset=utf-8' });
        res.end('404 page not found\n');
    }
  }
}
