// The CometBFT-compatible RPC server (:26657): every route as URI GET (/block?height=5), as
// JSON-RPC POST to / (batches too) and over /websocket on the same port, answering like
// CometBFT v0.38's rpc/jsonrpc/server.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { inSpan, tracingEnabled } from '@noded/telemetry';
import type { EventBus, Logger, NodeReader } from '@noded/types';
import { type RawData, WebSocket, WebSocketServer } from 'ws';
import {
  answerClientErrors,
  closeServer,
  discardBody,
  discardCap,
  enforceWriteTimeout,
  listenOn,
  traceParentOfRequest,
} from '../http.js';
import type { Json } from './encode.js';
import { type CometEvent, EventHub, type SubscriptionSink } from './events.js';
import type { TxIndexer } from './indexer.js';
import { type CometRpcOptions, writeTimeoutFor } from './options.js';
import { type ArgValue, fromJson, fromUri, ParamError } from './params.js';
import type { Query } from './query.js';
import {
  type CallContext,
  type JsonRpcId,
  ROUTES,
  type RouteDef,
  RpcEnvironment,
  type WsSubscriber,
} from './routes.js';

export interface CometRpcDeps {
  node: NodeReader;
  bus: EventBus;
  indexer: TxIndexer;
  logger: Logger;
  options: CometRpcOptions;
  /** Called after each routed call (metrics: NodeMetrics.observeRpc). */
  observe?: (method: string, ms: number, ok: boolean) => void;
}

/** JSON-RPC error codes CometBFT uses. */
export const RPC_ERROR = {
  parse: -32700,
  invalidRequest: -32600,
  methodNotFound: -32601,
  invalidParams: -32602,
  internal: -32603,
  server: -32000,
} as const;

const MESSAGES: Record<number, string> = {
  [-32700]: 'Parse error. Invalid JSON',
  [-32600]: 'Invalid Request',
  [-32601]: 'Method not found',
  [-32602]: 'Invalid params',
  [-32603]: 'Internal error',
  [-32000]: 'Server error',
};

/** A JSON-RPC response as CometBFT writes it: a nil id and empty error data are omitted. */
function response(id: JsonRpcId | null, result: Json): string {
  return id === null
    ? `{"jsonrpc":"2.0","result":${JSON.stringify(result)}}`
    : `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":${JSON.stringify(result)}}`;
}

function errorResponse(id: JsonRpcId | null, code: number, data = ''): string {
  const error: Record<string, unknown> = { code, message: MESSAGES[code] };
  if (data !== '') error.data = data;
  return id === null
    ? JSON.stringify({ jsonrpc: '2.0', error })
    : JSON.stringify({ jsonrpc: '2.0', id, error });
}

/** Request body larger than max_body_bytes. */
class BodyTooLargeError extends Error {
  constructor() {
    super('http: request body too large');
  }
}

function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const declared = Number(req.headers['content-length'] ?? '0');
    if (limit > 0 && declared > limit) {
      discardBody(req, discardCap(limit));
      reject(new BodyTooLargeError());
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (limit > 0 && size > limit) {
        discardBody(req, discardCap(limit));
        reject(new BodyTooLargeError());
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

interface ParsedRequest {
  id: JsonRpcId | null;
  method: string;
  params: unknown;
}

/** RPCRequest.UnmarshalJSON: an id must be a string or a number (truncated); a missing id is a notification. */
function parseRequest(raw: unknown): ParsedRequest {
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) {
    throw new Error(
      `json: cannot unmarshal ${Array.isArray(raw) ? 'array' : typeof raw} into Go value of type types.RPCRequest`,
    );
  }
  const o = raw as Record<string, unknown>;
  let id: JsonRpcId | null = null;
  if (o.id !== undefined && o.id !== null) {
    if (typeof o.id === 'string') id = o.id;
    else if (typeof o.id === 'number') id = Math.trunc(o.id);
    else throw new Error(`json-rpc ID (${JSON.stringify(o.id)}) is of unknown type`);
  }
  return { id, method: typeof o.method === 'string' ? o.method : '', params: o.params };
}

function remoteOf(socket: Socket): string {
  const ip = socket.remoteAddress ?? '';
  return `${ip.includes(':') ? `[${ip}]` : ip}:${socket.remotePort ?? 0}`;
}

/** The routes this server serves (unsafe ones only when enabled). */
function routeTable(unsafe: boolean): Map<string, RouteDef> {
  return new Map(Object.entries(ROUTES).filter(([, r]) => unsafe || !r.unsafe));
}

/** One WebSocket client: its subscriptions deliver through a bounded write queue. */
class WsConnection implements WsSubscriber {
  readonly remoteAddr: string;
  private queue: Promise<void> = Promise.resolve();
  private alive = true;
  private closed = false;
  readonly abort = new AbortController();

  constructor(
    private readonly ws: WebSocket,
    socket: Socket,
    private readonly server: CometRpcServer,
  ) {
    this.remoteAddr = remoteOf(socket);
  }

  /** Sends a text frame; `onFlushed` runs once it left the process. */
  send(text: string, onFlushed?: () => void): void {
    if (this.closed || this.ws.readyState !== WebSocket.OPEN) return;
    this.ws.send(text, () => onFlushed?.());
  }

  sinkFor(id: JsonRpcId, query: Query): SubscriptionSink {
    const limit = Math.max(1, this.server.options.experimentalSubscriptionBufferSize);
    // Events waiting in this process because the socket would not take them: CometBFT's
    // per-subscription buffer. Writes the kernel accepts at once do not count, so a reading
    // client survives any burst (a block with many Tx events) and only a stalled one fills it.
    let buffered = 0;
    let cancelled = false;
    const prefix = `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":{"query":${JSON.stringify(query.source)},"data":`;
    return {
      deliver: (ev: CometEvent) => {
        if (cancelled || this.closed) return;
        const text = `${prefix}${JSON.stringify(ev.data())},"events":${JSON.stringify(ev.events)}}}`;
        if (this.ws.bufferedAmount === 0) {
          this.send(text);
          return;
        }
        if (buffered >= limit) {
          cancelled = true;
          this.server.slowClient(this, id, query);
          return;
        }
        buffered++;
        this.send(text, () => {
          buffered--;
        });
      },
    };
  }

  /** Messages are handled one at a time, in order, like CometBFT's read routine. */
  onMessage(data: RawData): void {
    this.alive = true;
    this.queue = this.queue.then(() => this.server.handleWsMessage(this, data.toString()));
  }

  heartbeat(): void {
    if (!this.alive) {
      this.terminate();
      return;
    }
    this.alive = false;
    try {
      this.ws.ping();
    } catch {
      this.terminate();
    }
  }

  pong(): void {
    this.alive = true;
  }

  close(code: number, reason: string): void {
    if (this.closed) return;
    this.closed = true;
    this.ws.close(code, reason);
    // A client that stopped reading never completes the closing handshake.
    setTimeout(() => this.ws.terminate(), 1000).unref();
  }

  terminate(): void {
    this.closed = true;
    this.ws.terminate();
  }

  markClosed(): void {
    this.closed = true;
    this.abort.abort();
  }
}

/** CometBFT v0.38-compatible RPC over HTTP and WebSocket on one port. */
export class CometRpcServer {
  readonly options: CometRpcOptions;
  private readonly env: RpcEnvironment;
  private readonly hub: EventHub;
  private readonly logger: Logger;
  private readonly routes: Map<string, RouteDef>;
  private readonly observe?: (method: string, ms: number, ok: boolean) => void;
  private server: Server | undefined;
  private wss: WebSocketServer | undefined;
  private readonly connections = new Set<WsConnection>();
  private heartbeatTimer: NodeJS.Timeout | undefined;

  constructor(deps: CometRpcDeps) {
    this.options = deps.options;
    this.logger = deps.logger.child({ module: 'rpc-server' });
    this.hub = new EventHub(deps.bus, this.logger);
    this.env = new RpcEnvironment(deps.node, deps.indexer, this.hub, deps.options, this.logger);
    this.routes = routeTable(deps.options.unsafe);
    this.observe = deps.observe;
  }

  /** Starts listening; resolves with the bound port (useful with port 0). */
  async listen(host: string, port: number): Promise<number> {
    if (this.server) throw new Error('CometRpcServer is already listening');
    const server = createServer({
      maxHeaderSize: this.options.maxHeaderBytes,
      requestTimeout: 10_000, // CometBFT's ReadTimeout
      headersTimeout: 10_000,
      // Check those timeouts every second (Node's default, 30 s, lets a slow client hold on for 40 s).
      connectionsCheckingInterval: 1000,
    });
    if (this.options.maxOpenConnections > 0) server.maxConnections = this.options.maxOpenConnections;
    const wss = new WebSocketServer({ noServer: true, maxPayload: this.options.maxBodyBytes });
    const writeTimeout = writeTimeoutFor(this.options);
    server.on('request', (req, res) => {
      // The response must be out within the write timeout, or the connection is cut (as Go's
      // http.Server WriteTimeout does for CometBFT); WebSocket upgrades do not pass through here.
      enforceWriteTimeout(req, res, writeTimeout, this.logger, 'RPC write timeout');
      this.handleHttp(req, res).catch((err: Error) => {
        this.logger.error({ err: err.message }, 'panic in RPC HTTP handler');
        if (!res.headersSent) {
          res.writeHead(500, { 'Content-Type': 'application/json' });
          res.end(errorResponse(-1, RPC_ERROR.internal, err.message));
        } else res.destroy();
      });
    });
    server.on('upgrade', (req: IncomingMessage, socket: Socket, head: Buffer) => {
      const path = new URL(req.url ?? '/', 'http://x').pathname;
      if (path !== '/websocket') {
        socket.end(
          'HTTP/1.1 404 Not Found\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n404 page not found\n',
        );
        return;
      }
      wss.handleUpgrade(req, socket, head, (ws) => this.acceptWs(ws, socket));
    });
    answerClientErrors(server);
    this.hub.start();
    const bound = await listenOn(server, host, port);
    this.server = server;
    this.wss = wss;
    this.heartbeatTimer = setInterval(() => {
      for (const c of this.connections) c.heartbeat();
    }, 27_000); // CometBFT pings every 27s and drops a client silent for 30s
    this.heartbeatTimer.unref();
    this.logger.info({ host, port: bound }, 'Starting RPC HTTP server');
    return bound;
  }

  /** Stops accepting, closes every connection and drops every subscription. */
  async close(): Promise<void> {
    clearInterval(this.heartbeatTimer);
    this.hub.stop();
    for (const c of this.connections) c.terminate();
    this.connections.clear();
    const server = this.server;
    this.server = undefined;
    this.wss?.close();
    this.wss = undefined;
    await closeServer(server);
  }

  // ---- HTTP ---------------------------------------------------------------------------------

  private cors(req: IncomingMessage, res: ServerResponse): boolean {
    const allowed = this.options.corsAllowedOrigins;
    if (allowed.length === 0) return false;
    const origin = req.headers.origin;
    if (origin && (allowed.includes('*') || allowed.includes(origin))) {
      res.setHeader('Access-Control-Allow-Origin', allowed.includes('*') ? '*' : origin);
      res.setHeader('Vary', 'Origin');
    }
    if (req.method === 'OPTIONS' && req.headers['access-control-request-method']) {
      res.setHeader('Access-Control-Allow-Methods', 'HEAD, GET, POST');
      res.setHeader(
        'Access-Control-Allow-Headers',
        'Origin, Accept, Content-Type, X-Requested-With, X-Server-Time',
      );
      res.writeHead(204);
      res.end();
      return true;
    }
    return false;
  }

  private async handleHttp(req: IncomingMessage, res: ServerResponse): Promise<void> {
    res.setHeader('X-Server-Time', String(Math.floor(Date.now() / 1000)));
    if (this.cors(req, res)) return;
    const url = new URL(req.url ?? '/', 'http://localhost');

    let body: Buffer;
    try {
      body = await readBody(req, this.options.maxBodyBytes);
    } catch (err) {
      this.writeJson(
        res,
        400,
        errorResponse(
          null,
          RPC_ERROR.invalidRequest,
          `error reading request body: ${(err as Error).message}`,
        ),
      );
      return;
    }
    if (this.options.maxRequestBatchSize > 0 && body.length > 0 && body[0] === 0x5b /* [ */) {
      try {
        const parsed = JSON.parse(body.toString('utf8')) as unknown;
        if (Array.isArray(parsed) && parsed.length > this.options.maxRequestBatchSize) {
          this.writeJson(
            res,
            200,
            errorResponse(
              null,
              RPC_ERROR.invalidRequest,
              `batch request exceeds maximum (${this.options.maxRequestBatchSize}) allowed number of requests`,
            ),
          );
          return;
        }
      } catch {
        // not JSON: the handler answers with a parse error
      }
    }

    if (url.pathname === '/websocket') {
      res.writeHead(400, { 'Content-Type': 'text/plain; charset=utf-8' });
      res.end(
        "Bad Request\nwebsocket: the client is not using the websocket protocol: 'upgrade' token not found in 'Connection' header\n",
      );
      return;
    }
    if (url.pathname === '/') {
      await this.handleJsonRpc(req, res, body);
      return;
    }
    const name = url.pathname.slice(1);
    const route = this.routes.get(name);
    if (!route) {
      res.writeHead(404, {
        'Content-Type': 'text/plain; charset=utf-8',
        'X-Content-Type-Options': 'nosniff',
      });
      res.end('404 page not found\n');
      return;
    }
    await this.handleUri(req, res, url, body, name, route);
  }

  private writeJson(res: ServerResponse, status: number, text: string, cacheable = false): void {
    const headers: Record<string, string> = { 'Content-Type': 'application/json' };
    if (cacheable) headers['Cache-Control'] = 'public, max-age=86400';
    res.writeHead(status, headers);
    res.end(text);
  }

  private async handleUri(
    req: IncomingMessage,
    res: ServerResponse,
    url: URL,
    body: Buffer,
    name: string,
    route: RouteDef,
  ): Promise<void> {
    if (route.ws) {
      this.writeJson(res, 404, errorResponse(-1, RPC_ERROR.methodNotFound));
      return;
    }
    const form = /application\/x-www-form-urlencoded/.test(req.headers['content-type'] ?? '')
      ? new URLSearchParams(body.toString('utf8'))
      : undefined;
    let args: ArgValue[];
    const present: boolean[] = [];
    try {
      args = route.params.map((p) => {
        const text = url.searchParams.get(p.name) || form?.get(p.name) || '';
        present.push(text !== '');
        return fromUri(p.kind, text);
      });
    } catch (err) {
      this.writeJson(
        res,
        500,
        errorResponse(
          -1,
          RPC_ERROR.invalidParams,
          `error converting http params to arguments: ${(err as Error).message}`,
        ),
      );
      return;
    }
    const outcome = await this.call(name, route, args, {
      remoteAddr: remoteOf(req.socket),
      id: -1,
      signal: abortOnClose(req, res),
      traceParent: traceParentOfRequest(req),
    });
    if (outcome.ok) {
      this.writeJson(res, 200, response(-1, outcome.result), this.cacheable(route, args, present));
    } else {
      this.writeJson(res, 500, errorResponse(-1, RPC_ERROR.internal, outcome.error));
    }
  }

  /** Cacheable routes with every "no cache by default" argument set to a non-zero value. */
  private cacheable(route: RouteDef, args: ArgValue[], present: boolean[]): boolean {
    if (!route.cacheable) return false;
    return route.cacheable.every((name) => {
      const i = route.params.findIndex((p) => p.name === name);
      const v = args[i];
      return present[i] !== false && v !== undefined && v !== 0 && v !== '' && v !== false;
    });
  }

  private async handleJsonRpc(req: IncomingMessage, res: ServerResponse, body: Buffer): Promise<void> {
    if (body.length === 0) {
      this.writeEndpoints(req, res);
      return;
    }
    let raw: unknown;
    let requests: ParsedRequest[];
    try {
      raw = JSON.parse(body.toString('utf8'));
      requests = Array.isArray(raw) ? raw.map(parseRequest) : [parseRequest(raw)];
    } catch (err) {
      this.writeJson(
        res,
        500,
        errorResponse(null, RPC_ERROR.parse, `error unmarshaling request: ${(err as Error).message}`),
      );
      return;
    }
    if (requests.length === 0) {
      // CometBFT answers an empty batch with nothing at all; JSON-RPC 2.0 (and geth) with an error.
      this.writeJson(
        res,
        200,
        errorResponse(null, RPC_ERROR.invalidRequest, 'empty batch: send at least one request'),
      );
      return;
    }
    const out: string[] = [];
    let cache = true;
    const signal = abortOnClose(req, res);
    const traceParent = traceParentOfRequest(req);
    for (const r of requests) {
      if (r.id === null) continue; // notification: no answer
      const route = this.routes.get(r.method);
      if (!route || route.ws) {
        out.push(errorResponse(r.id, RPC_ERROR.methodNotFound));
        cache = false;
        continue;
      }
      let args: ArgValue[];
      let present: boolean[];
      try {
        ({ args, present } = jsonArgs(route, r.params));
      } catch (err) {
        out.push(
          errorResponse(
            r.id,
            RPC_ERROR.invalidParams,
            `error converting json params to arguments: ${(err as Error).message}`,
          ),
        );
        cache = false;
        continue;
      }
      if (cache && !this.cacheable(route, args, present)) cache = false;
      const outcome = await this.call(r.method, route, args, {
        remoteAddr: remoteOf(req.socket),
        id: r.id,
        signal,
        traceParent,
      });
      out.push(
        outcome.ok ? response(r.id, outcome.result) : errorResponse(r.id, RPC_ERROR.internal, outcome.error),
      );
    }
    if (out.length === 0) {
      res.writeHead(200);
      res.end();
      return;
    }
    this.writeJson(res, 200, out.length === 1 ? out[0] : `[${out.join(',')}]`, cache);
  }

  private writeEndpoints(req: IncomingMessage, res: ServerResponse): void {
    const host = req.headers.host ?? '';
    const names = [...this.routes.keys()].sort();
    const noArgs = names.filter((n) => this.routes.get(n)!.params.length === 0);
    const withArgs = names.filter((n) => this.routes.get(n)!.params.length > 0);
    let html = '<html><body><br>Available endpoints:<br>';
    for (const n of noArgs) html += `<a href="//${host}/${n}">//${host}/${n}</a></br>`;
    html += '<br>Endpoints that require arguments:<br>';
    for (const n of withArgs) {
      const link = `//${host}/${n}?${this.routes
        .get(n)!
        .params.map((p) => `${p.name}=_`)
        .join('&')}`;
      html += `<a href="${link}">${link}</a></br>`;
    }
    html += '</body></html>';
    res.writeHead(200, { 'Content-Type': 'text/html' });
    res.end(html);
  }

  private call(
    method: string,
    route: RouteDef,
    args: ArgValue[],
    ctx: CallContext,
  ): Promise<{ ok: true; result: Json } | { ok: false; error: string }> {
    if (!tracingEnabled()) return this.invoke(method, route, args, ctx);
    // A server span per request, named by its method: `broadcast_tx_sync` is then the parent of
    // consensus' `abci CheckTx` client span (and so of the executor's CheckTx). Over HTTP the
    // request's traceparent is its parent; a /websocket message has no headers and starts a trace.
    return inSpan(
      method,
      {
        kind: 'server',
        parent: ctx.traceParent,
        attributes: {
          'rpc.system': 'jsonrpc',
          'rpc.method': method,
          'noded.transport': ctx.ws ? 'ws' : 'http',
        },
      },
      async (span) => {
        const out = await this.invoke(method, route, args, ctx);
        if (!out.ok) span.fail(out.error);
        return out;
      },
    );
  }

  private async invoke(
    method: string,
    route: RouteDef,
    args: ArgValue[],
    ctx: CallContext,
  ): Promise<{ ok: true; result: Json } | { ok: false; error: string }> {
    const started = performance.now();
    try {
      const result = await route.handler(this.env, ctx, args);
      this.observe?.(method, performance.now() - started, true);
      return { ok: true, result };
    } catch (err) {
      this.observe?.(method, performance.now() - started, false);
      return { ok: false, error: (err as Error).message };
    }
  }

  // ---- WebSocket ----------------------------------------------------------------------------

  private acceptWs(ws: WebSocket, socket: Socket): void {
    const conn = new WsConnection(ws, socket, this);
    this.connections.add(conn);
    this.logger.info({ remote: conn.remoteAddr }, 'New websocket connection');
    ws.on('message', (data) => conn.onMessage(data));
    ws.on('pong', () => conn.pong());
    ws.on('error', (err) =>
      this.logger.debug({ err: err.message, remote: conn.remoteAddr }, 'websocket error'),
    );
    ws.on('close', () => {
      conn.markClosed();
      this.connections.delete(conn);
      try {
        this.hub.unsubscribeAll(conn.remoteAddr);
      } catch {
        // held no subscription
      }
    });
  }

  /** @internal Handles one WebSocket text message (a single JSON-RPC request). */
  async handleWsMessage(conn: WsConnection, text: string): Promise<void> {
    let r: ParsedRequest;
    try {
      r = parseRequest(JSON.parse(text));
    } catch (err) {
      conn.send(
        errorResponse(null, RPC_ERROR.parse, `error unmarshaling request: ${(err as Error).message}`),
      );
      return;
    }
    if (r.id === null) return;
    const route = this.routes.get(r.method);
    if (!route) {
      conn.send(errorResponse(r.id, RPC_ERROR.methodNotFound));
      return;
    }
    let args: ArgValue[];
    try {
      ({ args } = jsonArgs(route, r.params));
    } catch (err) {
      // CometBFT answers bad params over WebSocket with -32603.
      conn.send(
        errorResponse(
          r.id,
          RPC_ERROR.internal,
          `error converting json params to arguments: ${(err as Error).message}`,
        ),
      );
      return;
    }
    const outcome = await this.call(r.method, route, args, {
      remoteAddr: conn.remoteAddr,
      id: r.id,
      ws: conn,
      signal: conn.abort.signal,
    });
    conn.send(
      outcome.ok ? response(r.id, outcome.result) : errorResponse(r.id, RPC_ERROR.internal, outcome.error),
    );
  }

  /**
   * A subscriber fell `experimental_subscription_buffer_size` events behind. As CometBFT: the
   * subscription is cancelled with an error message, or with experimental_close_on_slow_client
   * the whole connection is closed.
   */
  slowClient(conn: WsConnection, id: JsonRpcId, query: Query): void {
    try {
      this.hub.unsubscribe(conn.remoteAddr, query);
    } catch {
      // already gone
    }
    if (this.options.experimentalCloseOnSlowClient) {
      this.logger.info({ remote: conn.remoteAddr, query: query.source }, 'closing slow websocket client');
      conn.send(errorResponse(id, RPC_ERROR.server, 'subscription was canceled (reason: slow client)'));
      conn.close(1008, 'slow client');
      return;
    }
    this.logger.info({ remote: conn.remoteAddr, query: query.source }, 'subscription cancelled: buffer full');
    conn.send(
      errorResponse(
        id,
        RPC_ERROR.server,
        'subscription was canceled (reason: internal subscription event buffer is out of capacity)',
      ),
    );
  }
}

function abortOnClose(req: IncomingMessage, res: ServerResponse): AbortSignal {
  const controller = new AbortController();
  res.on('close', () => {
    if (!res.writableFinished) controller.abort();
  });
  req.on('aborted', () => controller.abort());
  return controller.signal;
}

/** mapParamsToArgs / arrayParamsToArgs: named params by name, positional ones must all be given. */
function jsonArgs(route: RouteDef, params: unknown): { args: ArgValue[]; present: boolean[] } {
  if (params === undefined || params === null) {
    return {
      args: route.params.map((p) => fromJson(p.kind, undefined)),
      present: route.params.map(() => false),
    };
  }
  if (Array.isArray(params)) {
    if (params.length !== route.params.length) {
      throw new ParamError(
        `expected ${route.params.length} parameters ([${route.params.map((p) => p.name).join(' ')}]), got ${params.length} (${JSON.stringify(params)})`,
      );
    }
    return {
      args: route.params.map((p, i) => fromJson(p.kind, params[i])),
      present: route.params.map((_, i) => params[i] !== null && params[i] !== undefined),
    };
  }
  if (typeof params === 'object') {
    const o = params as Record<string, unknown>;
    return {
      args: route.params.map((p) => fromJson(p.kind, o[p.name])),
      present: route.params.map((p) => o[p.name] !== null && o[p.name] !== undefined),
    };
  }
  throw new ParamError('unknown type for JSON params: expected map or array');
}
