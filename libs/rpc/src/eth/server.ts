// The Ethereum JSON-RPC server: JSON-RPC 2.0 envelopes and batches with geth's rules, HTTP
// (node:http) on [evm] rpc_address and WebSocket (ws) on [evm] ws_address, subscriptions fed from
// the event bus, and the [evm.rpc] limits.
import {
  createServer,
  type IncomingMessage,
  maxHeaderSize,
  type Server,
  type ServerResponse,
} from 'node:http';
import { performance } from 'node:perf_hooks';
import { extractTraceContext, inSpan, type TraceParent, tracingEnabled } from '@noded/telemetry';
import {
  ChainError,
  type EthBlock,
  type EthChain,
  type EthDevControl,
  type EthLog,
  type EventBus,
  type Hex,
  type Logger,
  type NodeEvent,
} from '@noded/types';
import { type RawData, type WebSocket, WebSocketServer } from 'ws';
import {
  answerClientErrors,
  closeServer,
  discardBody,
  discardCap,
  listenOn,
  traceParentOfRequest,
} from '../http.js';
import { PostFront } from '../post-front.js';
import { type CallContext, EthApi, type SyncStatus } from './api.js';
import type { DevAccounts } from './dev-accounts.js';
import type { DevChainInfo } from './dev-state.js';
import { invalidRequest, methodNotFound, parseError, RpcError, RpcErrorCode } from './errors.js';
import { FilterManager, logMatches } from './filters.js';
import { formatHeader, formatTx, JsonBytes, logText } from './format.js';
import type { EthRpcOptions } from './options.js';
import { MAX_MISSED_PONGS, WsSession } from './subscriptions.js';

export interface EthRpcServerDeps {
  chain: EthChain;
  bus: EventBus;
  logger: Logger;
  options: EthRpcOptions;
  /** web3_clientVersion, e.g. "noded/v0.1.0/linux-x64/node20". */
  clientVersion: string;
  /** Unlocked dev accounts (chain-local only); null elsewhere. */
  devAccounts: DevAccounts | null;
  /** Set only on the single validator of chain-local: serves the dev-chain methods (dev-state.ts). */
  devChain?: DevChainInfo | undefined;
  /** Mining and time controls (single-validator chain-local); absent or null elsewhere. */
  devControl?: EthDevControl | null;
  /**
   * Why this node has no dev controls, after the method name in the refusal (default: "is only
   * available on a single-validator chain-local node"); the cluster's rpc-edge says why it has none.
   */
  devRefusal?: string;
  peerCount: () => number;
  syncing: () => SyncStatus;
  /** Metrics hook, called once per call; unknown method names are reported as "unknown". */
  onRequest?: (method: string, ms: number, ok: boolean) => void;
}

type Transport = 'http' | 'ws';

const ACCEPTED_CONTENT_TYPES = new Set([
  'application/json',
  'application/json-rpc',
  'application/jsonrequest',
]);
/** geth's limit; longer names are refused rather than echoed back in an error. */
const MAX_METHOD_NAME_LENGTH = 2048;
/**
 * Namespaces always served besides [evm.rpc] apis. The dev chain's test controls (evm_, anvil_,
 * hardhat_: dev-mining.ts, dev-state.ts) answer everywhere: a node that does not allow them refuses
 * them by name (-32000 saying where they work) rather than -32601 as if they did not exist. The
 * bridge_ reads (outbound entries a relayer needs, docs/bridge.md) are chain data every node serves.
 */
const ALWAYS_ON = new Set(['rpc', 'evm', 'anvil', 'hardhat', 'bridge']);

const isObject = (v: unknown): v is Record<string, unknown> =>
  v !== null && typeof v === 'object' && !Array.isArray(v);

/** geth: an id is valid when present and not an object or array; absent means notification. */
function idOf(msg: unknown): { present: boolean; valid: boolean; id: unknown } {
  if (!isObject(msg) || !('id' in msg) || msg['id'] === undefined)
    return { present: false, valid: false, id: null };
  const id = msg['id'];
  return { present: true, valid: !(typeof id === 'object' && id !== null), id };
}

function isNotification(msg: unknown): boolean {
  return (
    isObject(msg) &&
    msg['jsonrpc'] === '2.0' &&
    typeof msg['method'] === 'string' &&
    msg['method'] !== '' &&
    !idOf(msg).present
  );
}

function errorText(id: unknown, err: RpcError): string {
  return JSON.stringify({ jsonrpc: '2.0', id, error: err.toJSON() });
}

/**
 * A reply whose result is bytes already (JsonBytes: eth_getLogs): the envelope's two ends are
 * written around its chunks, so a reply of hundreds of kB is neither joined into a string nor encoded.
 */
class BytesReply {
  constructor(
    readonly head: string,
    readonly body: JsonBytes,
    readonly tail: string,
  ) {}

  get chunks(): readonly Uint8Array[] {
    return this.body.chunks;
  }

  get byteLength(): number {
    return Buffer.byteLength(this.head) + this.body.length + Buffer.byteLength(this.tail);
  }

  get text(): string {
    return this.head + Buffer.concat(this.body.chunks, this.body.length).toString('utf8') + this.tail;
  }
}

/** One message's reply: text, or a result's bytes in their envelope (written as they are over HTTP). */
type Reply = string | BytesReply;

const textOf = (r: Reply): string => (typeof r === 'string' ? r : r.text);

function resultText(id: unknown, result: unknown): Reply {
  if (result instanceof JsonBytes)
    return new BytesReply(`{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":`, result, '}');
  return JSON.stringify({ jsonrpc: '2.0', id, result: result === undefined ? null : result });
}

/**
 * The context of one call. A class, not an object literal: V8 may learn that a literal's objects
 * live long (a call held while the chain answers, as eth_sendRawTransaction is under load) and
 * allocate all of that literal's objects in the old generation from then on; it does not do so for
 * a constructor's. Only a WebSocket subscription runs anything after its reply, so `afterReply` is
 * made only if asked for.
 */
class Call implements CallContext {
  session?: WsSession;
  traceParent?: TraceParent;
  private after: Array<() => void> | undefined;

  constructor(
    readonly transport: Transport,
    session?: WsSession,
  ) {
    if (session !== undefined) this.session = session;
  }

  get afterReply(): Array<() => void> {
    this.after ??= [];
    return this.after;
  }

  /** Runs what was asked to run after the reply (nothing, unless afterReply was asked for). */
  replied(): void {
    if (this.after !== undefined) for (const start of this.after) start();
  }
}

/**
 * How often Node (and the JSON POST front) check the request timeouts of an `http_timeout` of `t`
 * ms: a quarter of it, within 50 ms..1 s; `whenNone` when it is 0 (no request timeout).
 */
function timeoutCheckMs(t: number, whenNone: number): number {
  return t > 0 ? Math.max(50, Math.min(1000, Math.floor(t / 4))) : whenNone;
}

export class EthRpcServer {
  private readonly api: EthApi;
  private readonly filters: FilterManager;
  private readonly logger: Logger;
  private readonly options: EthRpcOptions;
  private readonly sessions = new Set<WsSession>();
  private readonly unsubscribeBus: () => void;
  private httpServer: Server | undefined;
  private httpFront: PostFront | undefined;
  private wsServer: Server | undefined;
  private wss: WebSocketServer | undefined;
  private pingTimer: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(private readonly deps: EthRpcServerDeps) {
    this.options = deps.options;
    this.logger = deps.logger;
    this.filters = new FilterManager({
      cap: deps.options.filterCap,
      timeoutMs: deps.options.filterTimeoutMs,
      maxItems: Math.max(deps.options.logsCap, 10_000),
    });
    this.api = new EthApi({
      chain: deps.chain,
      options: deps.options,
      devAccounts: deps.devAccounts,
      devChain: deps.devChain,
      devControl: deps.devControl ?? null,
      ...(deps.devRefusal !== undefined ? { devRefusal: deps.devRefusal } : {}),
      filters: this.filters,
      clientVersion: deps.clientVersion,
      peerCount: deps.peerCount,
      syncing: deps.syncing,
      logger: this.logger,
    });
    this.unsubscribeBus = deps.bus.subscribe((ev) => this.onEvent(ev));
  }

  /**
   * Transport-free dispatch: `body` is the request text (string or bytes) or already-parsed JSON.
   * Returns the response (object, or array for a batch), or undefined when only notifications came.
   */
  async handle(body: unknown, transport: Transport): Promise<unknown> {
    const ctx = new Call(transport);
    const text =
      typeof body === 'string' || body instanceof Uint8Array
        ? await this.respondText(typeof body === 'string' ? body : Buffer.from(body).toString('utf8'), ctx, 0)
        : await this.respondPayload(body, ctx, 0);
    return text === undefined ? undefined : JSON.parse(textOf(text));
  }

  /**
   * Serves JSON-RPC over HTTP; resolves with the bound port (useful with port 0). The listener is a
   * PostFront (post-front.ts): it answers the plain JSON POST itself and hands every other
   * connection (CORS, chunked bodies, refusals, health checks) to the node:http server below.
   */
  async listenHttp(host: string, port: number): Promise<number> {
    if (this.httpServer !== undefined) throw new Error('EthRpcServer: HTTP is already listening');
    this.httpServer = this.createHttpServer();
    const t = this.options.httpTimeoutMs;
    this.httpFront = new PostFront(this.httpServer, (body, header) => this.answerPost(body, header), {
      maxBodyBytes: this.options.maxBodyBytes,
      contentTypes: ACCEPTED_CONTENT_TYPES,
      headersTimeoutMs: this.httpServer.headersTimeout,
      requestTimeoutMs: this.httpServer.requestTimeout,
      keepAliveTimeoutMs: this.httpServer.keepAliveTimeout,
      // The front's keep-alive timeout (5 s) needs checking even with no request timeout.
      checkIntervalMs: timeoutCheckMs(t, 1000),
      maxHeaderBytes: maxHeaderSize,
    });
    return this.httpFront.listen(host, port);
  }

  /** One POST the front served: the same answer onHttpRequest gives it. */
  private async answerPost(
    body: string,
    header: (name: string) => string | undefined,
  ): Promise<string | BytesReply> {
    const ctx = new Call('http');
    if (tracingEnabled()) ctx.traceParent = extractTraceContext(header);
    return (await this.respondText(body, ctx, this.options.httpTimeoutMs)) ?? '';
  }

  /** Serves JSON-RPC and subscriptions over WebSocket (plain HTTP POST works there too). */
  async listenWs(host: string, port: number): Promise<number> {
    if (this.wsServer !== undefined) throw new Error('EthRpcServer: WebSocket is already listening');
    const wss = new WebSocketServer({
      noServer: true,
      maxPayload: this.options.maxBodyBytes,
      perMessageDeflate: false,
      clientTracking: false,
    });
    this.wss = wss;
    const server = this.createHttpServer();
    server.on('upgrade', (req: IncomingMessage, socket, head) => {
      socket.on('error', () => {});
      const origin = req.headers.origin;
      if (origin !== undefined && this.allowedOrigin(origin) === undefined) {
        socket.end('HTTP/1.1 403 Forbidden\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
        return;
      }
      wss.handleUpgrade(req, socket, head, (ws) => this.onWsConnection(ws, req));
    });
    this.wsServer = server;
    if (this.options.wsPingIntervalMs > 0) {
      this.pingTimer = setInterval(() => this.pingAll(), this.options.wsPingIntervalMs);
      this.pingTimer.unref();
    }
    return listenOn(server, host, port);
  }

  /** Open WebSocket connections (for metrics and health). */
  get wsConnections(): number {
    return this.sessions.size;
  }

  /** Live polling filters (eth_newFilter & co). */
  get filterCount(): number {
    return this.filters.size;
  }

  /** Stops both listeners, drops WebSocket peers and their subscriptions, removes all filters. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.unsubscribeBus();
    this.filters.close();
    if (this.pingTimer !== undefined) clearInterval(this.pingTimer);
    for (const s of this.sessions) s.terminate();
    this.sessions.clear();
    this.wss?.close();
    await Promise.all([this.httpFront?.close(), closeServer(this.wsServer)]);
  }

  // ---- JSON-RPC envelope ---------------------------------------------------------------------

  private async respondText(text: string, ctx: CallContext, timeoutMs: number): Promise<Reply | undefined> {
    let payload: unknown;
    try {
      payload = JSON.parse(text);
    } catch {
      return errorText(null, parseError());
    }
    return this.respondPayload(payload, ctx, timeoutMs);
  }

  private async respondPayload(
    payload: unknown,
    ctx: CallContext,
    timeoutMs: number,
  ): Promise<Reply | undefined> {
    if (!Array.isArray(payload)) {
      const work = this.processMessage(payload, ctx);
      if (timeoutMs <= 0) return work;
      // The timeout reply is built only when the timer fires: building it per request (an Error with
      // a stack) cost more than a cheap read itself.
      return this.withTimeout<Reply | undefined>(work, timeoutMs, () => this.timeoutReply(payload));
    }
    if (payload.length === 0) return errorText(null, invalidRequest('empty batch'));
    const limit = this.options.batchRequestLimit;
    if (limit > 0 && payload.length > limit) {
      const first = payload.find((m) => idOf(m).valid && !isNotification(m));
      return `[${errorText(first === undefined ? null : idOf(first).id, invalidRequest('batch too large'))}]`;
    }
    return this.processBatch(payload, ctx, timeoutMs);
  }

  private timeoutReply(msg: unknown): string | undefined {
    if (isNotification(msg)) return undefined;
    const { valid, id } = idOf(msg);
    return errorText(valid ? id : null, new RpcError(RpcErrorCode.timeout, 'request timed out'));
  }

  private async withTimeout<T>(work: Promise<T>, ms: number, onTimeout: () => T): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const expired = new Promise<T>((resolve) => {
      timer = setTimeout(() => resolve(onTimeout()), ms);
    });
    try {
      return await Promise.race([work, expired]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** geth's batch rules: calls in order, batch_response_max_size, and the request timeout. */
  private async processBatch(
    msgs: unknown[],
    ctx: CallContext,
    timeoutMs: number,
  ): Promise<string | undefined> {
    const replies: Array<string | undefined> = new Array(msgs.length);
    const done: boolean[] = new Array(msgs.length).fill(false);
    let stopped = false;
    const fillRemaining = (err: RpcError) => {
      stopped = true;
      msgs.forEach((m, i) => {
        if (done[i]) return;
        done[i] = true;
        if (!isNotification(m)) replies[i] = errorText(idOf(m).valid ? idOf(m).id : null, err);
      });
    };
    const maxSize = this.options.batchResponseMaxSize;
    const work = (async () => {
      let size = 0;
      for (let i = 0; i < msgs.length && !stopped; i++) {
        const out = await this.processMessage(msgs[i], ctx);
        if (stopped) return;
        const reply = out === undefined ? undefined : textOf(out);
        replies[i] = reply;
        done[i] = true;
        if (reply !== undefined && maxSize > 0) {
          size += reply.length;
          if (size > maxSize)
            fillRemaining(new RpcError(RpcErrorCode.responseTooLarge, 'response too large'));
        }
      }
    })();
    if (timeoutMs > 0) {
      await this.withTimeout(work, timeoutMs, () =>
        fillRemaining(new RpcError(RpcErrorCode.timeout, 'request timed out')),
      );
    } else await work;
    const parts = replies.filter((r): r is string => r !== undefined);
    return parts.length === 0 ? undefined : `[${parts.join(',')}]`;
  }

  /** One request object -> its reply (undefined for a notification). */
  private async processMessage(msg: unknown, ctx: CallContext): Promise<Reply | undefined> {
    const { present, valid, id } = idOf(msg);
    if (
      isObject(msg) &&
      msg['jsonrpc'] === '2.0' &&
      typeof msg['method'] === 'string' &&
      msg['method'] !== ''
    ) {
      const method = msg['method'];
      if (method.length > MAX_METHOD_NAME_LENGTH) {
        if (!present) return undefined;
        const err = invalidRequest(`method name too long: ${method.length} > ${MAX_METHOD_NAME_LENGTH}`);
        return errorText(valid ? id : null, err);
      }
      if (!present) {
        await this.call(method, msg['params'], ctx);
        return undefined;
      }
      if (valid) {
        const out = await this.call(method, msg['params'], ctx);
        return 'error' in out ? errorText(id, out.error) : resultText(id, out.result);
      }
    }
    return errorText(present && valid ? id : null, invalidRequest());
  }

  private methodEnabled(method: string): boolean {
    const ns = method.slice(0, Math.max(0, method.indexOf('_')));
    if (ALWAYS_ON.has(ns)) return true;
    const apis = this.options.apis;
    // personal_sign belongs with the dev-account signing methods of the eth namespace.
    if (ns === 'personal') return apis.includes('personal') || apis.includes('eth');
    return apis.includes(ns);
  }

  private call(
    method: string,
    params: unknown,
    ctx: CallContext,
  ): Promise<{ result: unknown } | { error: RpcError }> {
    if (!tracingEnabled()) return this.invoke(method, params, ctx);
    return inSpan(
      method,
      {
        kind: 'server',
        parent: ctx.traceParent,
        attributes: { 'rpc.system': 'jsonrpc', 'rpc.method': method, 'noded.transport': ctx.transport },
      },
      async (span) => {
        const out = await this.invoke(method, params, ctx);
        if ('error' in out) span.setAttribute('rpc.jsonrpc.error_code', out.error.code);
        return out;
      },
    );
  }

  private async invoke(
    method: string,
    params: unknown,
    ctx: CallContext,
  ): Promise<{ result: unknown } | { error: RpcError }> {
    const start = performance.now();
    const handler = this.methodEnabled(method) ? this.api.methods.get(method) : undefined;
    let ok = false;
    try {
      if (handler === undefined) throw methodNotFound(method);
      const result = await handler(params, ctx);
      ok = true;
      return { result };
    } catch (e) {
      return { error: this.toRpcError(e, method) };
    } finally {
      this.deps.onRequest?.(handler === undefined ? 'unknown' : method, performance.now() - start, ok);
    }
  }

  private toRpcError(e: unknown, method: string): RpcError {
    if (e instanceof RpcError) return e;
    // ChainError from libs/types (checked by shape: a remote EthChain may rebuild it).
    if (
      e instanceof ChainError ||
      (e instanceof Error && e.name === 'ChainError' && typeof (e as { code?: unknown }).code === 'number')
    ) {
      const ce = e as Error & { code: number; data?: Hex };
      return new RpcError(ce.code, ce.message, ce.data);
    }
    const message = e instanceof Error ? e.message : String(e);
    this.logger.error({ method, err: e instanceof Error ? e.stack : message }, 'JSON-RPC method failed');
    return new RpcError(RpcErrorCode.internal, `internal error: ${message}`);
  }

  // ---- HTTP ----------------------------------------------------------------------------------

  private createHttpServer(): Server {
    const t = this.options.httpTimeoutMs;
    const server = createServer(
      {
        requestTimeout: Math.max(t, 0),
        headersTimeout: t > 0 ? Math.min(t, 60_000) : 60_000,
        // How often Node checks those timeouts (its default, 30 s, would stretch them by as much).
        connectionsCheckingInterval: timeoutCheckMs(t, 30_000),
      },
      (req, res) => {
        this.onHttpRequest(req, res).catch((e) => {
          this.logger.error(
            { err: e instanceof Error ? e.stack : String(e) },
            'HTTP request handling failed',
          );
          if (!res.headersSent) res.writeHead(500);
          res.end();
        });
      },
    );
    answerClientErrors(server);
    return server;
  }

  /** Access-Control-Allow-Origin value for an Origin, or undefined when it is not allowed. */
  private allowedOrigin(origin: string): string | undefined {
    const allowed = this.options.corsAllowedOrigins;
    if (allowed.includes('*')) return '*';
    const o = origin.toLowerCase();
    return allowed.some((a) => a.toLowerCase() === o) ? origin : undefined;
  }

  private sendHttpError(res: ServerResponse, status: number, message: string, close = false): void {
    const body = errorText(null, new RpcError(RpcErrorCode.invalidRequest, message));
    const headers: Record<string, string | number> = {
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(body),
    };
    if (close) headers['connection'] = 'close';
    res.writeHead(status, headers);
    res.end(body);
  }

  private async onHttpRequest(req: IncomingMessage, res: ServerResponse): Promise<void> {
    req.on('error', () => {});
    const origin = req.headers.origin;
    const allowOrigin = origin === undefined ? undefined : this.allowedOrigin(origin);
    if (allowOrigin !== undefined) {
      res.setHeader('access-control-allow-origin', allowOrigin);
      if (allowOrigin !== '*') res.setHeader('vary', 'Origin');
    }
    if (req.method === 'OPTIONS') {
      if (allowOrigin !== undefined && req.headers['access-control-request-method'] !== undefined) {
        res.setHeader('access-control-allow-methods', 'POST, GET, OPTIONS');
        res.setHeader(
          'access-control-allow-headers',
          req.headers['access-control-request-headers'] ?? 'content-type',
        );
        res.setHeader('access-control-max-age', '600');
      }
      res.writeHead(204);
      res.end();
      return;
    }
    const lengthHeader = req.headers['content-length'];
    const length = lengthHeader === undefined ? undefined : Number(lengthHeader);
    const hasBody = (length !== undefined && length > 0) || req.headers['transfer-encoding'] !== undefined;
    // Empty GET (and HEAD) without a query is a health check, as geth answers it for load balancers.
    if ((req.method === 'GET' || req.method === 'HEAD') && !hasBody && !(req.url ?? '').includes('?')) {
      res.writeHead(200, { 'content-length': 0 });
      res.end();
      return;
    }
    if (req.method !== 'POST') {
      res.setHeader('allow', 'POST, GET, OPTIONS');
      this.sendHttpError(res, 405, 'method not allowed');
      return;
    }
    const max = this.options.maxBodyBytes;
    if (length !== undefined && length > max) {
      this.sendHttpError(res, 413, `content length too large (${length}>${max})`);
      discardBody(req, discardCap(max));
      return;
    }
    const mediaType = (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
    if (!ACCEPTED_CONTENT_TYPES.has(mediaType)) {
      this.sendHttpError(res, 415, 'invalid content type, only application/json is supported');
      req.resume();
      return;
    }
    const body = await this.readBody(req, max);
    if (body === undefined) {
      // A chunked body that grew past max_body_bytes.
      this.sendHttpError(res, 413, `request body too large (limit ${max} bytes)`);
      discardBody(req, discardCap(max));
      return;
    }
    if (body === null) return; // client went away
    const ctx = new Call('http');
    // A request that carries a W3C traceparent joins the caller's trace (docs/json-rpc.md "Tracing").
    ctx.traceParent = traceParentOfRequest(req);
    const reply = await this.respondText(body, ctx, this.options.httpTimeoutMs);
    if (res.destroyed) return;
    if (reply instanceof BytesReply) {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': reply.byteLength });
      // Corked, the parts leave in one writev; the body's chunks are written as they are.
      res.cork();
      res.write(reply.head);
      for (const c of reply.body.chunks) res.write(c);
      res.end(reply.tail);
      res.uncork();
      return;
    }
    const text = reply ?? '';
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
    res.end(text);
  }

  /** The body as text; undefined when it exceeds `max` bytes, null when the client aborted. */
  private readBody(req: IncomingMessage, max: number): Promise<string | undefined | null> {
    return new Promise((resolve) => {
      const chunks: Buffer[] = [];
      let size = 0;
      let settled = false;
      const finish = (v: string | undefined | null) => {
        if (settled) return;
        settled = true;
        resolve(v);
      };
      req.on('data', (chunk: Buffer) => {
        if (settled) return;
        size += chunk.length;
        if (size > max) {
          req.pause();
          finish(undefined);
          return;
        }
        chunks.push(chunk);
      });
      req.on('end', () => finish(Buffer.concat(chunks).toString('utf8')));
      req.on('close', () => finish(null));
    });
  }

  // ---- WebSocket -----------------------------------------------------------------------------

  private onWsConnection(ws: WebSocket, req: IncomingMessage): void {
    const remote = `${req.socket.remoteAddress ?? '?'}:${req.socket.remotePort ?? '?'}`;
    const session = new WsSession(ws, this.options.wsMaxBufferedBytes, this.logger, remote);
    if (this.closed) {
      session.terminate();
      return;
    }
    this.sessions.add(session);
    ws.on('pong', () => {
      session.unanswered = 0;
    });
    ws.on('message', (data: RawData) => {
      this.onWsMessage(session, data).catch((e) => {
        this.logger.error(
          { err: e instanceof Error ? e.stack : String(e) },
          'WebSocket message handling failed',
        );
      });
    });
    ws.on('close', () => {
      session.closed = true;
      session.subs.clear();
      this.sessions.delete(session);
    });
    ws.on('error', (err) => this.logger.debug({ remote, err: err.message }, 'WebSocket error'));
  }

  private async onWsMessage(session: WsSession, data: RawData): Promise<void> {
    const text = Array.isArray(data)
      ? Buffer.concat(data).toString('utf8')
      : Buffer.from(data as ArrayBuffer).toString('utf8');
    const ctx = new Call('ws', session);
    const reply = await this.respondText(text, ctx, 0);
    if (reply !== undefined && !session.send(textOf(reply))) return;
    ctx.replied();
  }

  private pingAll(): void {
    for (const s of this.sessions) {
      if (s.unanswered >= MAX_MISSED_PONGS) {
        this.logger.info(
          { remote: s.remote, unansweredPings: s.unanswered },
          'dropping WebSocket peer that answered none of its last pings',
        );
        s.terminate();
        this.sessions.delete(s);
        continue;
      }
      s.ping();
    }
  }

  // ---- events --------------------------------------------------------------------------------

  private onEvent(ev: NodeEvent): void {
    if (ev.kind === 'EthNewHead') {
      this.filters.onHead(ev.block, ev.logs);
      this.fanOutHead(ev.block, ev.logs);
    } else if (ev.kind === 'EthPendingTx') {
      this.filters.onPendingTx(ev.hash);
      this.fanOutPending(ev.hash);
    } else if (ev.kind === 'ChainRewound') {
      this.filters.onRewound(ev.height);
      // heights above the rewind are made again: subscribers get them anew
      const to = BigInt(ev.height);
      for (const s of this.sessions) {
        for (const sub of s.subs.values()) {
          if (sub.fromHeight !== undefined && sub.fromHeight > to) sub.fromHeight = to;
        }
      }
      this.api.onRewound();
    }
  }

  private fanOutHead(block: EthBlock, logs: EthLog[]): void {
    if (this.sessions.size === 0) return;
    let head: string | undefined;
    let sync: string | undefined;
    for (const s of this.sessions) {
      for (const sub of s.subs.values()) {
        if (s.closed) break;
        if (sub.fromHeight !== undefined && block.number <= sub.fromHeight) continue;
        if (sub.kind === 'newHeads') {
          head ??= JSON.stringify(formatHeader(block));
          s.notify(sub, head);
        } else if (sub.kind === 'logs') {
          for (let i = 0; i < logs.length && !s.closed; i++) {
            if (!logMatches(logs[i]!, sub.match!)) continue;
            s.notify(sub, logText(logs[i]!));
          }
        } else if (sub.kind === 'syncing') {
          sync ??= this.api.syncingNotification();
          if (sync !== sub.lastSyncing) {
            sub.lastSyncing = sync;
            s.notify(sub, sync);
          }
        }
      }
    }
  }

  private fanOutPending(hash: Hex): void {
    if (this.sessions.size === 0) return;
    const hashText = JSON.stringify(hash);
    let full: Promise<string | undefined> | undefined;
    for (const s of this.sessions) {
      for (const sub of s.subs.values()) {
        if (s.closed || sub.kind !== 'newPendingTransactions') continue;
        if (!sub.fullTx) {
          s.notify(sub, hashText);
          continue;
        }
        full ??= this.deps.chain.getTransaction(hash).then(
          (tx) => (tx === undefined ? undefined : JSON.stringify(formatTx(tx))),
          () => undefined,
        );
        void full.then((text) => {
          if (text !== undefined && s.subs.get(sub.id) === sub) s.notify(sub, text);
        });
      }
    }
  }
}
