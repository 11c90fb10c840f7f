// The REST API server (:1317): Cosmos SDK gateway-style JSON over HTTP or HTTPS, with the [api]
// limits of app.toml: connections, read/write timeouts and body size.
import { readFileSync } from 'node:fs';
import {
  createServer as createHttpServer,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { inSpan, tracingEnabled } from '@noded/telemetry';
import type { EthChain, Logger, NodeReader } from '@noded/types';
import type { TxIndexer } from '../comet/indexer.js';
import {
  answerClientErrors,
  closeServer,
  discardBody,
  discardCap,
  enforceWriteTimeout,
  listenOn,
  traceParentOfRequest,
} from '../http.js';
import { openApiDocument } from './openapi.js';
import { ApiConfigError, type ApiOptions, validateApiOptions } from './options.js';
import {
  type FeeMarketParams,
  GatewayError,
  matchRoute,
  nodeConsensus,
  REST_ROUTES,
  type RestConsensus,
  type RestContext,
} from './routes.js';

export interface RestServerDeps {
  /** The all-in-one node's stores for the CometBFT-shaped routes; or give `consensus`. */
  node?: NodeReader;
  /** What the CometBFT-shaped routes read when there is no NodeReader here (an rpc-edge). */
  consensus?: RestConsensus;
  chain: EthChain;
  logger: Logger;
  options: ApiOptions;
  /** EVM chain id (31612 mainnet, 31611 testnet, 31337 local). */
  evmChainId: bigint;
  /** [evm.gas] settings for the fee-market routes. */
  gas: FeeMarketParams;
  /** Bech32 prefix to accept and print account addresses with (hex only when unset). */
  bech32Prefix?: string;
  /** With `node`: lets /cosmos/tx/v1beta1/txs/{hash} resolve CometBFT (sha256) hashes too. */
  indexer?: TxIndexer;
  /** Reported by node_info's application_version. */
  appVersion?: { name: string; version: string; gitCommit?: string };
}

function gatewayError(res: ServerResponse, status: number, code: number, message: string): void {
  const body = JSON.stringify({ code, message, details: [] });
  res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) });
  res.end(body);
}

/** Cosmos SDK gateway-style REST server; construct it, then listen (only when options.enable). */
export class RestServer {
  readonly options: ApiOptions;
  private readonly ctx: RestContext;
  private readonly logger: Logger;
  private readonly swaggerJson: string | undefined;
  private server: Server | undefined;

  constructor(deps: RestServerDeps) {
    validateApiOptions(deps.options);
    this.options = deps.options;
    this.logger = deps.logger.child({ module: 'rest' });
    let consensus = deps.consensus;
    if (!consensus) {
      if (!deps.node) throw new Error('RestServer needs either node or consensus');
      consensus = nodeConsensus(deps.node, deps.indexer);
    }
    this.ctx = {
      consensus,
      chain: deps.chain,
      logger: this.logger,
      evmChainId: deps.evmChainId,
      gas: deps.gas,
      bech32Prefix: deps.bech32Prefix,
      appVersion: {
        name: deps.appVersion?.name ?? 'noded',
        version: deps.appVersion?.version ?? deps.node?.identity().version ?? '',
        gitCommit: deps.appVersion?.gitCommit ?? '',
      },
    };
    this.swaggerJson = deps.options.swagger
      ? JSON.stringify(openApiDocument(REST_ROUTES, this.ctx.appVersion.version), null, 2)
      : undefined;
  }

  /** Whether TLS ([api] tls_cert_file + tls_key_file) is on. */
  get tls(): boolean {
    return Boolean(this.options.tlsCertFile && this.options.tlsKeyFile);
  }

  /** Starts serving; resolves with the bound port. Refuses when [api] enable = false. */
  async listen(host: string, port: number): Promise<number> {
    if (!this.options.enable) {
      throw new ApiConfigError('API_DISABLED', 'app.toml:api.enable is false: the REST API must stay closed');
    }
    if (this.server) throw new Error('RestServer is already listening');
    const o = this.options;
    const readTimeout = o.rpcReadTimeoutMs;
    const common = {
      requestTimeout: readTimeout,
      headersTimeout: readTimeout,
      keepAliveTimeout: readTimeout > 0 ? readTimeout : 5000,
      // How often Node checks the request timeouts above (its default, 30 s, would defeat small values).
      connectionsCheckingInterval:
        readTimeout > 0 ? Math.max(50, Math.min(1000, Math.floor(readTimeout / 4))) : 30_000,
    };
    let server: Server;
    if (this.tls) {
      let cert: Buffer;
      let key: Buffer;
      try {
        cert = readFileSync(o.tlsCertFile!);
        key = readFileSync(o.tlsKeyFile!);
      } catch (err) {
        throw new ApiConfigError(
          'API_BAD_VALUE',
          `app.toml:api.tls_cert_file/tls_key_file: ${(err as Error).message}`,
        );
      }
      server = createHttpsServer({ ...common, cert, key }) as unknown as Server;
    } else {
      server = createHttpServer(common);
    }
    if (o.maxOpenConnections > 0) server.maxConnections = o.maxOpenConnections;
    server.on('request', (req: IncomingMessage, res: ServerResponse) => this.handle(req, res));
    answerClientErrors(server);
    const bound = await listenOn(server, host, port);
    this.server = server;
    this.logger.info({ host, port: bound, tls: this.tls }, 'REST API listening');
    return bound;
  }

  async close(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    await closeServer(server);
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    // rpc_write_timeout: the whole response must be out within this time, or the connection is cut.
    enforceWriteTimeout(req, res, this.options.rpcWriteTimeoutMs, this.logger, 'rpc_write_timeout');
    this.route(req, res).catch((err: Error) => {
      this.logger.error({ err: err.message, url: req.url }, 'REST handler failed');
      if (!res.headersSent) gatewayError(res, 500, 13, err.message);
      else res.destroy();
    });
  }

  private async readBody(req: IncomingMessage, res: ServerResponse): Promise<boolean> {
    const limit = this.options.rpcMaxBodyBytes;
    const tooLarge = () =>
      gatewayError(res, 413, 8, `request body too large: rpc_max_body_bytes is ${limit} bytes`);
    if (limit > 0 && Number(req.headers['content-length'] ?? '0') > limit) {
      tooLarge();
      discardBody(req, discardCap(limit));
      return false;
    }
    return new Promise((resolve) => {
      let size = 0;
      let done = false;
      req.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (!done && limit > 0 && size > limit) {
          done = true;
          tooLarge();
          discardBody(req, discardCap(limit));
          resolve(false);
        }
      });
      req.on('end', () => {
        if (!done) resolve(true);
      });
      req.on('error', () => resolve(false));
    });
  }

  private async route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (!(await this.readBody(req, res))) return;
    let url: URL;
    try {
      url = new URL(req.url ?? '/', 'http://localhost');
    } catch {
      // An absolute-form request target that is no URL ("http://[") is the client's error.
      gatewayError(res, 400, 3, `invalid request URL ${JSON.stringify(req.url)}`);
      return;
    }
    const path = url.pathname.length > 1 ? url.pathname.replace(/\/+$/, '') : url.pathname;

    if (path === '/swagger' || path === '/swagger.json') {
      if (!this.swaggerJson) {
        gatewayError(res, 404, 5, 'Not Found');
        return;
      }
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end(this.swaggerJson);
      return;
    }

    let match: ReturnType<typeof matchRoute>;
    try {
      match = matchRoute(REST_ROUTES, path);
    } catch (err) {
      if (!(err instanceof GatewayError)) throw err;
      gatewayError(res, err.httpStatus, err.grpcCode, err.message);
      return;
    }
    if (!match) {
      gatewayError(res, 404, 5, 'Not Found');
      return;
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.setHeader('Allow', 'GET, HEAD');
      gatewayError(res, 405, 12, 'Method Not Allowed');
      return;
    }
    const answer = async (): Promise<number> => {
      try {
        const body = await route.handler(this.ctx, {
          params: match.params,
          query: url.searchParams,
          headers: req.headers,
        });
        const text = JSON.stringify(body);
        res.writeHead(200, {
          'Content-Type': 'application/json',
          'Content-Length': Buffer.byteLength(text),
        });
        res.end(req.method === 'HEAD' ? undefined : text);
        return 200;
      } catch (err) {
        if (err instanceof GatewayError) {
          gatewayError(res, err.httpStatus, err.grpcCode, err.message);
          return err.httpStatus;
        }
        this.logger.warn({ err: (err as Error).message, path }, 'REST query failed');
        gatewayError(res, 500, 13, (err as Error).message);
        return 500;
      }
    };
    const route = match.route;
    if (!tracingEnabled()) {
      await answer();
      return;
    }
    // A server span per route, named as OpenTelemetry's HTTP conventions name one ("GET
    // /cosmos/bank/v1beta1/balances/{address}"); a W3C traceparent header makes it the child of the
    // caller's span, and the reads it makes over gRPC (an rpc-edge's state-store) its children.
    await inSpan(
      `${req.method} ${route.path}`,
      {
        kind: 'server',
        parent: traceParentOfRequest(req),
        attributes: { 'http.request.method': req.method, 'http.route': route.path, 'url.path': path },
      },
      async (span) => {
        const status = await answer();
        span.setAttribute('http.response.status_code', status);
        if (status >= 500) span.fail(`HTTP ${status}`);
      },
    );
  }
}
