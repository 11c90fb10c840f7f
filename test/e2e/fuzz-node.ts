// Drives a running node's four public ports (:8545, :8546, :26657, :1317) with malformed, oversized,
// deeply nested and slow requests, and judges every answer: a request must get a proper answer (a
// JSON-RPC result or error object, a 4xx with a body, a WebSocket reply per message) and never an
// internal error, a 5xx, or silence. Meanwhile the chain must keep advancing. Every request is drawn
// from (seed, index) alone, so a failure names the index that reproduces it.
import http from 'node:http';
import net from 'node:net';
import WebSocket from 'ws';

export interface FuzzTargets {
  eth: string;
  ws: string;
  comet: string;
  rest: string;
}

export interface FuzzOptions {
  targets: FuzzTargets;
  requests: number;
  seed: number;
  /** Run only these request indexes (to reproduce a failure). */
  only?: number[];
  /** Requests in flight at once. */
  concurrency?: number;
  /** One request in this many is a slow one (a byte every 250 ms). 0 = none. */
  slowEvery?: number;
  /** A slow request must be cut off (or answered) within this many ms. */
  slowCutoffMs?: number;
  /** Body limits of the ports, to build bodies just over them. */
  limits?: { ethBody: number; cometBody: number; restBody: number };
  /** How long the chain may take to show a new block after the run. */
  advanceWaitMs?: number;
  log?: (line: string) => void;
}

export interface FuzzFailure {
  index: number;
  what: string;
  why: string;
}

export interface FuzzReport {
  requests: number;
  seconds: number;
  /** Answers by port and kind of answer, e.g. `eth http 200 error -32602`. */
  answers: Record<string, number>;
  failures: FuzzFailure[];
  heights: { first: number; last: number };
  liveness: string[];
}

// ---- seeded randomness -------------------------------------------------------------------------

/** mulberry32 over a 32-bit state mixed from (seed, index). */
function rngFor(seed: number, index: number): () => number {
  let a = (Math.imul(seed ^ 0x9e3779b9, 0x85ebca6b) ^ Math.imul(index + 1, 0xc2b2ae35)) >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

class Gen {
  constructor(readonly r: () => number) {}
  int(n: number): number {
    return Math.floor(this.r() * n);
  }
  pick<T>(xs: readonly T[]): T {
    return xs[this.int(xs.length)]!;
  }
  chance(p: number): boolean {
    return this.r() < p;
  }
  hex(bytes: number): string {
    let s = '0x';
    for (let i = 0; i < bytes; i++) s += this.int(256).toString(16).padStart(2, '0');
    return s;
  }
  text(n: number): string {
    const alphabet = [...'abcXYZ019 _-./:%\\"\'{}[]<>=&?#\u00e9\u4e2d\u{1f600}\u0000\n\t'];
    let s = '';
    for (let i = 0; i < n; i++) s += alphabet[this.int(alphabet.length)];
    return s;
  }
  /** A JSON value of the shapes RPC parameters take, often almost right. */
  value(depth = 0): unknown {
    const k = this.int(depth > 3 ? 9 : 12);
    switch (k) {
      case 0:
        return null;
      case 1:
        return this.chance(0.5);
      case 2:
        return this.pick([0, -1, 1, 2 ** 53, -(2 ** 63), 1e308, 0.5, Number.MAX_SAFE_INTEGER]);
      case 3:
        return this.hex(this.pick([0, 1, 8, 20, 32, 33, 64, 1000]));
      case 4:
        return this.pick(['0x', '0x0', '0x00', '0x1', '0xg', '0X1', '1', '-0x1', `0x${'f'.repeat(80)}`]);
      case 5:
        return this.pick(['latest', 'pending', 'earliest', 'safe', 'finalized', 'Latest', '']);
      case 6:
        return this.text(this.int(40));
      case 7:
        return this.hex(20);
      case 8:
        return `0x${this.int(1 << 16).toString(16)}`;
      case 9:
        return Array.from({ length: this.int(4) }, () => this.value(depth + 1));
      case 10:
      case 11: {
        const keys = ['from', 'to', 'data', 'input', 'value', 'gas', 'gasPrice', 'maxFeePerGas', 'nonce'];
        const more = ['fromBlock', 'toBlock', 'address', 'topics', 'blockHash', 'accessList', 'type'];
        const o: Record<string, unknown> = {};
        for (let i = this.int(5); i > 0; i--)
          o[this.pick([...keys, ...more, this.text(5)])] = this.value(depth + 1);
        return o;
      }
    }
    return null;
  }
}

// ---- what is sent ------------------------------------------------------------------------------

const ETH_METHODS = [
  'eth_chainId',
  'eth_blockNumber',
  'eth_getBalance',
  'eth_getCode',
  'eth_getStorageAt',
  'eth_getTransactionCount',
  'eth_call',
  'eth_estimateGas',
  'eth_gasPrice',
  'eth_maxPriorityFeePerGas',
  'eth_feeHistory',
  'eth_getBlockByNumber',
  'eth_getBlockByHash',
  'eth_getBlockReceipts',
  'eth_getBlockTransactionCountByNumber',
  'eth_getTransactionByHash',
  'eth_getTransactionReceipt',
  'eth_getTransactionByBlockNumberAndIndex',
  'eth_getLogs',
  'eth_getProof',
  'eth_sendRawTransaction',
  'eth_sendTransaction',
  'eth_sign',
  'eth_accounts',
  'eth_syncing',
  'eth_newFilter',
  'eth_newBlockFilter',
  'eth_getFilterChanges',
  'eth_getFilterLogs',
  'eth_uninstallFilter',
  'eth_subscribe',
  'net_version',
  'net_peerCount',
  'web3_clientVersion',
  'web3_sha3',
  'txpool_status',
  'txpool_content',
  'debug_traceCall',
  'debug_traceTransaction',
  'debug_traceBlockByNumber',
  'rpc_modules',
  'eth_unknownMethod',
  '',
  'admin_peers',
] as const;

const COMET_ROUTES = [
  'health',
  'status',
  'net_info',
  'blockchain',
  'genesis',
  'genesis_chunked',
  'block',
  'block_by_hash',
  'block_results',
  'commit',
  'header',
  'header_by_hash',
  'check_tx',
  'tx',
  'tx_search',
  'block_search',
  'validators',
  'dump_consensus_state',
  'consensus_state',
  'consensus_params',
  'unconfirmed_txs',
  'num_unconfirmed_txs',
  'broadcast_tx_sync',
  'broadcast_tx_async',
  'abci_query',
  'abci_info',
  'broadcast_evidence',
  'dial_seeds',
  'unsafe_flush_mempool',
  'nope',
  '',
] as const;
const COMET_PARAMS = [
  'height',
  'hash',
  'minHeight',
  'maxHeight',
  'page',
  'per_page',
  'prove',
  'tx',
  'query',
  'order_by',
  'chunk',
  'path',
  'data',
  'limit',
  'evidence',
  'seeds',
] as const;

const REST_PATHS = [
  '/cosmos/base/tendermint/v1beta1/node_info',
  '/cosmos/base/tendermint/v1beta1/syncing',
  '/cosmos/base/tendermint/v1beta1/blocks/latest',
  '/cosmos/base/tendermint/v1beta1/blocks/{n}',
  '/cosmos/base/tendermint/v1beta1/validatorsets/latest',
  '/cosmos/base/tendermint/v1beta1/validatorsets/{n}',
  '/cosmos/bank/v1beta1/balances/{a}',
  '/cosmos/bank/v1beta1/balances/{a}/by_denom',
  '/cosmos/auth/v1beta1/accounts/{a}',
  '/cosmos/tx/v1beta1/txs/{h}',
  '/cosmos/tx/v1beta1/txs',
  '/cosmos/evm/vm/v1/params',
  '/cosmos/evm/feemarket/v1/params',
  '/cosmos/evm/feemarket/v1/base_fee',
  '/swagger.json',
  '/{x}',
  '/cosmos/{x}/{x}',
] as const;

function cometParamValue(g: Gen): string {
  return String(
    g.pick([
      g.int(100),
      -1,
      '99999999999999999999',
      g.hex(32),
      g.hex(3),
      '"abc"',
      "tm.event='Tx' AND tx.height>1",
      "tx.height = 'x'",
      `"${g.text(10)}"`,
      'true',
      '',
      g.text(8),
    ]),
  );
}

function restPath(g: Gen): string {
  const path = g
    .pick(REST_PATHS)
    .replace('{n}', () => g.pick(['1', '0', '-5', 'latest', '999999999', 'x', '1e3', '18446744073709551616']))
    .replace('{a}', () =>
      g.pick([g.hex(20).slice(2), g.hex(20), 'cosmos1qqqq', encodeURIComponent(g.text(6)), '']),
    )
    .replace('{h}', () => g.pick([g.hex(32).slice(2), g.hex(32), 'zz', '']))
    .replace(/\{x\}/g, () => encodeURIComponent(g.text(4)));
  const q: string[] = [];
  for (let i = g.int(4); i > 0; i--) {
    const k = g.pick([
      'pagination.limit',
      'pagination.offset',
      'pagination.key',
      'pagination.count_total',
      'pagination.reverse',
      'denom',
      'events',
      'order_by',
      'page',
      g.text(3),
    ]);
    q.push(`${encodeURIComponent(k)}=${encodeURIComponent(String(g.value(3)))}`);
  }
  return q.length ? `${path}?${q.join('&')}` : path;
}

function jsonRpcBody(g: Gen, methods: readonly string[]): string {
  const one = () => {
    const req: Record<string, unknown> = {
      jsonrpc: g.chance(0.9) ? '2.0' : g.pick(['1.0', 2, null]),
      id: g.pick([1, 'a', null, g.int(1e6), 1.5, {}]),
    };
    if (g.chance(0.97)) req.method = g.chance(0.9) ? g.pick(methods) : g.value(2);
    if (g.chance(0.9))
      req.params = g.chance(0.85) ? Array.from({ length: g.int(5) }, () => g.value()) : g.value();
    return req;
  };
  switch (g.int(12)) {
    case 0:
      return JSON.stringify(Array.from({ length: g.int(6) }, one)); // batch (maybe empty)
    case 1:
      return JSON.stringify(one()).slice(0, g.int(30)); // truncated
    case 2:
      return g.text(g.int(200)); // not JSON
    case 3: {
      const d = g.pick([100, 1000, 100_000]);
      return `{"jsonrpc":"2.0","id":1,"method":"eth_call","params":${'['.repeat(d)}${']'.repeat(d)}}`;
    }
    case 4:
      return JSON.stringify(Array.from({ length: g.pick([11, 1001, 5000]) }, one)); // over batch caps
    default:
      return JSON.stringify(one());
  }
}

// ---- how answers are judged --------------------------------------------------------------------

interface Outcome {
  key: string;
  ok: boolean;
  why?: string;
}

/** Error texts that are a runtime's internals leaking out, never a precise message for a client. */
const LEAKED =
  /Cannot read prop|undefined|is not a function|is not iterable|TypeError|RangeError|ReferenceError|Maximum call stack|\bNaN\b|\[object Object\]|: EOF$/;

/**
 * A runtime's text in an answer, unless the client sent that very text (an error that echoes the
 * bad value it names is precise, not a leak).
 */
function leaks(answer: string, request: string): boolean {
  const m = LEAKED.exec(answer);
  if (m === null) return false;
  let sent = request;
  try {
    sent = decodeURIComponent(request.replace(/\+/g, ' '));
  } catch {
    // not URL-encoded
  }
  return !sent.includes(m[0]) && !request.includes(m[0]);
}

/** Whether a JSON-RPC request text is a notification (no id, or id null): no answer is owed. */
function isNotification(body: string): boolean {
  const note = (x: unknown) =>
    typeof x === 'object' && x !== null && !Array.isArray(x) && ((x as { id?: unknown }).id ?? null) === null;
  try {
    const j = JSON.parse(body) as unknown;
    // A batch of notifications only is owed no answer either (JSON-RPC 2.0, section 6).
    return Array.isArray(j) ? j.length > 0 && j.every(note) : note(j);
  } catch {
    return false;
  }
}

/**
 * :8545 follows geth: HTTP 200 with a JSON-RPC body, 4xx for HTTP-level refusals, and never -32603.
 * :26657 follows CometBFT: errors come with HTTP 500 and a JSON-RPC error body, and a handler's own
 * errors are -32603 with the reason in `data`. Either way the message must say what is wrong.
 */
function judgeJsonRpc(status: number, body: string, port: 'eth' | 'comet', request = ''): Outcome {
  const comet = port === 'comet';
  if (status >= 500 && !(comet && status === 500))
    return { key: `${port} http ${status}`, ok: false, why: `HTTP ${status}: ${body.slice(0, 200)}` };
  if (status !== 200 && status !== 500) return { key: `${port} http ${status}`, ok: true };
  if (body === '' && isNotification(request)) return { key: `${port} http ${status} notification`, ok: true };
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch {
    return {
      key: `${port} http ${status} not-json`,
      ok: false,
      why: `a body that is not JSON: ${JSON.stringify(body.slice(0, 120))}`,
    };
  }
  const items = Array.isArray(json) ? json : [json];
  for (const it of items) {
    const o = it as {
      jsonrpc?: unknown;
      result?: unknown;
      error?: { code?: unknown; message?: unknown; data?: unknown };
    };
    if (o?.jsonrpc !== '2.0')
      return {
        key: `${port} http ${status} malformed`,
        ok: false,
        why: `not a JSON-RPC 2.0 answer: ${JSON.stringify(o).slice(0, 120)}`,
      };
    if (o.error !== undefined) {
      const e = o.error;
      if (!Number.isInteger(e.code) || typeof e.message !== 'string' || e.message === '')
        return {
          key: `${port} http ${status} bad-error`,
          ok: false,
          why: `error without integer code and message: ${JSON.stringify(e)}`,
        };
      const text = `${e.message} ${typeof e.data === 'string' ? e.data : ''}`;
      if (e.code === -32603 && !comet)
        return { key: `${port} error -32603`, ok: false, why: `internal error: ${text}` };
      if (leaks(text, request))
        return {
          key: `${port} error leaked`,
          ok: false,
          why: `an internal error text: ${text.slice(0, 200)}`,
        };
    } else if (!('result' in o)) {
      return { key: `${port} http ${status} malformed`, ok: false, why: 'neither result nor error' };
    } else if (status !== 200) {
      return { key: `${port} http ${status} result`, ok: false, why: `a result with HTTP ${status}` };
    }
  }
  const first = items[0] as { error?: { code: number } } | undefined;
  const kind = Array.isArray(json) ? 'batch' : first?.error ? `error ${first.error.code}` : 'result';
  return { key: `${port} http ${status} ${kind}`, ok: true };
}

function judgeRest(status: number, body: string, request = ''): Outcome {
  if (status >= 500 && status !== 501)
    return { key: `rest http ${status}`, ok: false, why: `HTTP ${status}: ${body.slice(0, 200)}` };
  try {
    const j = JSON.parse(body) as { code?: unknown; message?: unknown };
    if (status >= 400 && (typeof j.message !== 'string' || j.code === undefined))
      return {
        key: `rest http ${status} bad-error`,
        ok: false,
        why: `error body without code and message: ${body.slice(0, 120)}`,
      };
    if (status >= 400 && leaks(String(j.message), request))
      return {
        key: 'rest error leaked',
        ok: false,
        why: `an internal error text: ${String(j.message).slice(0, 200)}`,
      };
  } catch {
    if (status === 200)
      return {
        key: 'rest http 200 not-json',
        ok: false,
        why: `200 with a body that is not JSON: ${body.slice(0, 120)}`,
      };
  }
  return { key: `rest http ${status}`, ok: true };
}

// ---- transports --------------------------------------------------------------------------------

function hostPort(url: string): { host: string; port: number } {
  const u = new URL(url);
  return { host: u.hostname, port: Number(u.port) };
}

function httpRequest(
  agent: http.Agent | false,
  url: string,
  method: string,
  path: string,
  body: string | undefined,
  headers: Record<string, string> = {},
  retry = true,
): Promise<{ status: number; body: string }> {
  const { host, port } = hostPort(url);
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        agent,
        host,
        port,
        method,
        path,
        headers: body !== undefined ? { 'content-type': 'application/json', ...headers } : headers,
        timeout: 15_000,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }),
        );
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error('no answer within 15 s')));
    req.on('error', (err: NodeJS.ErrnoException) => {
      // A kept-alive connection the server closed as idle just as this request went out on it: the
      // request never reached the server, so it is sent again (Node's documented reusedSocket case),
      // on a connection of its own: the pool's next idle one may be just as stale (a run at load 45
      // met two in a row), and a failure on a fresh connection is the server's.
      if (req.reusedSocket && err.code === 'ECONNRESET' && retry) {
        httpRequest(false, url, method, path, body, headers, false).then(resolve, reject);
      } else {
        reject(
          new Error(
            `${err.message} (${err.code ?? 'no code'}${req.reusedSocket ? ', on a kept-alive connection' : ''})`,
          ),
        );
      }
    });
    req.end(body);
  });
}

/** Writes raw bytes on a fresh connection; resolves with what came back before the close. */
function rawExchange(
  url: string,
  chunks: Array<Buffer | string>,
  gapMs: number,
  limitMs: number,
): Promise<{ data: string; ms: number }> {
  const { host, port } = hostPort(url);
  const t0 = Date.now();
  return new Promise((resolve) => {
    let data = '';
    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      clearTimeout(killer);
      s.destroy();
      resolve({ data, ms: Date.now() - t0 });
    };
    const killer = setTimeout(finish, limitMs);
    const s = net.connect(port, host, async () => {
      for (const c of chunks) {
        if (done || s.destroyed) return;
        s.write(c);
        if (gapMs > 0) await new Promise((r) => setTimeout(r, gapMs));
      }
    });
    s.on('data', (d) => {
      data += d.toString('latin1');
    });
    s.on('close', finish);
    s.on('error', finish);
  });
}

function statusOf(raw: string): number {
  const m = /^HTTP\/1\.[01] (\d{3})/.exec(raw);
  return m ? Number(m[1]) : 0;
}

async function wsSession(
  url: string,
  messages: Array<string | Buffer>,
  expectAnswers: number,
  comet: boolean,
): Promise<Outcome> {
  const sent = messages.map((m) => m.toString()).join(' ');
  return new Promise((resolve) => {
    const ws = new WebSocket(url, { handshakeTimeout: 5000 });
    let answers = 0;
    let settled = false;
    const done = (o: Outcome) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      ws.terminate();
      resolve(o);
    };
    const timer = setTimeout(
      () => done({ key: 'ws timeout', ok: false, why: `${answers} of ${expectAnswers} answers within 5 s` }),
      5000,
    );
    ws.on('open', () => {
      for (const m of messages) ws.send(m);
      if (expectAnswers === 0) setTimeout(() => done({ key: 'ws sent', ok: true }), 50);
    });
    ws.on('message', (d) => {
      const text = d.toString();
      let j: unknown;
      try {
        j = JSON.parse(text);
      } catch {
        return done({
          key: 'ws not-json',
          ok: false,
          why: `a reply that is not JSON: ${text.slice(0, 120)}`,
        });
      }
      const items = Array.isArray(j) ? j : [j];
      for (const it of items) {
        const e = (it as { error?: { code?: unknown; message?: unknown; data?: unknown } }).error;
        if (!e) continue;
        if (e.code === -32603 && !comet)
          return done({ key: 'ws error -32603', ok: false, why: `internal error: ${text.slice(0, 600)}` });
        if (leaks(`${String(e.message)} ${String(e.data ?? '')}`, sent))
          return done({
            key: 'ws error leaked',
            ok: false,
            why: `an internal error text: ${text.slice(0, 200)}`,
          });
      }
      if ((j as { method?: string }).method === 'eth_subscription') return; // a notification, not an answer
      answers++;
      if (answers >= expectAnswers) done({ key: `ws answered`, ok: true });
    });
    ws.on('close', (code) => {
      // 1009 (message too big) and 1008 (policy) are proper refusals.
      if (code === 1009 || code === 1008) return done({ key: `ws close ${code}`, ok: true });
      done(
        answers >= expectAnswers
          ? { key: 'ws answered', ok: true }
          : {
              key: `ws close ${code}`,
              ok: false,
              why: `closed (${code}) after ${answers} of ${expectAnswers} answers`,
            },
      );
    });
    ws.on('error', (err) => done({ key: 'ws error', ok: false, why: err.message }));
  });
}

// ---- one request -------------------------------------------------------------------------------

interface Ctx {
  t: FuzzTargets;
  agents: Record<'eth' | 'comet' | 'rest', http.Agent>;
  limits: { ethBody: number; cometBody: number; restBody: number };
  slowCutoffMs: number;
}

async function oneRequest(ctx: Ctx, g: Gen, slow: boolean): Promise<{ what: string; out: Outcome }> {
  const { t, agents, limits } = ctx;
  if (slow) {
    const target = g.pick([
      [
        'eth',
        t.eth,
        'POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 200\r\n\r\n',
      ],
      ['comet', t.comet, 'POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 200\r\n\r\n'],
      ['rest', t.rest, 'GET /cosmos/base/tendermint/v1beta1/syncing HTTP/1.1\r\nHost: x\r\n'],
    ] as const);
    const [port, url, head] = target;
    const bytes = [...head, ...'{"jsonrpc":"2.0"'.repeat(12)];
    const r = await rawExchange(url, bytes, 250, ctx.slowCutoffMs + 5000);
    const what = `${port} slow request (a byte every 250 ms)`;
    if (r.ms > ctx.slowCutoffMs)
      return { what, out: { key: `${port} slow not-cut`, ok: false, why: `still open after ${r.ms} ms` } };
    return {
      what,
      out: { key: `${port} slow cut${statusOf(r.data) ? ` ${statusOf(r.data)}` : ''}`, ok: true },
    };
  }
  const kind = g.int(100);
  try {
    if (kind < 34) {
      const body = jsonRpcBody(g, ETH_METHODS);
      const r = await httpRequest(agents.eth, t.eth, 'POST', '/', body);
      return { what: `eth POST ${body.slice(0, 100)}`, out: judgeJsonRpc(r.status, r.body, 'eth', body) };
    }
    if (kind < 42) {
      const body = jsonRpcBody(g, COMET_ROUTES);
      const r = await httpRequest(agents.comet, t.comet, 'POST', '/', body);
      if (body === '') {
        // CometBFT answers an empty POST with its endpoint list, as it does GET /.
        const ok = r.status === 200 && r.body.includes('Available endpoints');
        return {
          what: 'comet POST (empty)',
          out: { key: `comet http ${r.status} endpoints`, ok, why: r.body.slice(0, 120) },
        };
      }
      return { what: `comet POST ${body.slice(0, 100)}`, out: judgeJsonRpc(r.status, r.body, 'comet', body) };
    }
    if (kind < 60) {
      const q: string[] = [];
      for (let i = g.int(4); i > 0; i--)
        q.push(`${g.pick(COMET_PARAMS)}=${encodeURIComponent(cometParamValue(g))}`);
      const route = g.pick(COMET_ROUTES);
      const path = `/${route}${q.length ? `?${q.join('&')}` : ''}`;
      const r = await httpRequest(agents.comet, t.comet, 'GET', path, undefined);
      if (route === '') {
        // CometBFT lists its endpoints as an HTML page at the root.
        const ok = r.status === 200 && r.body.includes('Available endpoints');
        return {
          what: `comet GET ${path}`,
          out: { key: `comet http ${r.status} endpoints`, ok, why: r.body.slice(0, 120) },
        };
      }
      return { what: `comet GET ${path}`, out: judgeJsonRpc(r.status, r.body, 'comet', path) };
    }
    if (kind < 80) {
      const path = restPath(g);
      const post = path.startsWith('/cosmos/tx/v1beta1/txs') && g.chance(0.5);
      const body = post
        ? g.pick([
            JSON.stringify({ tx_bytes: g.hex(40), mode: g.pick(['BROADCAST_MODE_SYNC', 'X', 2]) }),
            g.text(30),
            '{}',
          ])
        : undefined;
      const r = await httpRequest(agents.rest, t.rest, post ? 'POST' : 'GET', path, body);
      return {
        what: `rest ${post ? 'POST' : 'GET'} ${path}`,
        out: judgeRest(r.status, r.body, `${path} ${body ?? ''}`),
      };
    }
    if (kind < 88) {
      // WebSocket sessions on :8546 and :26657/websocket.
      const cometWs = g.chance(0.3);
      const url = cometWs ? `${t.comet.replace(/^http/, 'ws')}/websocket` : t.ws;
      const msgs: Array<string | Buffer> = [];
      let expect = 0;
      for (let i = 1 + g.int(4); i > 0; i--) {
        const k = g.int(10);
        if (k < 6) {
          const body = jsonRpcBody(
            g,
            cometWs
              ? ['subscribe', 'unsubscribe', 'status', 'health', 'nope']
              : [...ETH_METHODS, 'eth_subscribe', 'eth_unsubscribe'],
          );
          msgs.push(body);
          expect++;
        } else if (k < 8) {
          msgs.push(g.text(20));
          expect++;
        } else {
          msgs.push(Buffer.from(g.hex(16).slice(2), 'hex'));
        }
      }
      const out = await wsSession(url, msgs, cometWs ? 0 : expect, cometWs);
      return { what: `${cometWs ? 'comet-ws' : 'eth-ws'} ${msgs.length} messages`, out };
    }
    if (kind < 91) {
      // Bodies just over each port's limit, with a Content-Length or chunked.
      const which = g.pick(['eth', 'comet', 'rest'] as const);
      const url = which === 'eth' ? t.eth : which === 'comet' ? t.comet : t.rest;
      const limit = which === 'eth' ? limits.ethBody : which === 'comet' ? limits.cometBody : limits.restBody;
      const size = limit + 1 + (g.chance(0.2) ? g.int(limit) : g.int(65536));
      const body = Buffer.alloc(size, 0x20);
      const path = which === 'rest' ? '/cosmos/tx/v1beta1/txs' : '/';
      const chunked = g.chance(0.5);
      const head = chunked
        ? `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n`
        : `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${size}\r\n\r\n`;
      const parts: Array<Buffer | string> = [head];
      if (chunked) {
        for (let off = 0; off < size; off += 65536) {
          const c = body.subarray(off, off + 65536);
          parts.push(`${c.length.toString(16)}\r\n`, c, '\r\n');
        }
        parts.push('0\r\n\r\n');
      } else parts.push(body);
      const r = await rawExchange(url, parts, 0, 15_000);
      const st = statusOf(r.data);
      const what = `${which} oversized body ${size} bytes (${chunked ? 'chunked' : 'content-length'})`;
      if (st === 413 || (st >= 400 && st < 500 && which !== 'rest') || /"code":\s*-32/.test(r.data)) {
        return { what, out: { key: `${which} oversized ${st}`, ok: true } };
      }
      return {
        what,
        out: {
          key: `${which} oversized ${st || 'no answer'}`,
          ok: false,
          why: `expected 413, got ${r.data.slice(0, 160) || 'nothing'}`,
        },
      };
    }
    // Raw garbage and broken HTTP framing.
    const which = g.pick(['eth', 'comet', 'rest'] as const);
    const url = which === 'eth' ? t.eth : which === 'comet' ? t.comet : t.rest;
    const garbage = g.pick([
      `${g.text(60)}\r\n\r\n`,
      'GET / HTTP/9.9\r\n\r\n',
      `GET /${'a'.repeat(20000)} HTTP/1.1\r\nHost: x\r\n\r\n`,
      `POST / HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n`,
      `POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n`,
      `GET / HTTP/1.1\r\nHost: x\r\n${'X-A: b\r\n'.repeat(5000)}\r\n`,
      'GET / HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n',
    ]);
    const r = await rawExchange(url, [garbage], 0, 10_000);
    const st = statusOf(r.data);
    const what = `${which} raw ${JSON.stringify(garbage.slice(0, 60))}`;
    if (st >= 500 && st !== 505)
      return { what, out: { key: `${which} raw ${st}`, ok: false, why: r.data.slice(0, 160) } };
    if (st === 0)
      return {
        what,
        out: { key: `${which} raw no-answer`, ok: false, why: 'connection closed without an HTTP answer' },
      };
    return { what, out: { key: `${which} raw ${st}`, ok: true } };
  } catch (err) {
    return {
      what: `request kind ${kind}`,
      out: { key: 'transport error', ok: false, why: (err as Error).message },
    };
  }
}

async function latestHeight(comet: string): Promise<number> {
  const res = await fetch(`${comet}/status`, { signal: AbortSignal.timeout(5000) });
  const j = (await res.json()) as { result: { sync_info: { latest_block_height: string } } };
  return Number(j.result.sync_info.latest_block_height);
}

export async function runNodeFuzz(opts: FuzzOptions): Promise<FuzzReport> {
  const concurrency = opts.concurrency ?? 16;
  const slowEvery = opts.slowEvery ?? 500;
  const log = opts.log ?? (() => {});
  const agents = {
    eth: new http.Agent({ keepAlive: true, maxSockets: concurrency }),
    comet: new http.Agent({ keepAlive: true, maxSockets: concurrency }),
    rest: new http.Agent({ keepAlive: true, maxSockets: concurrency }),
  };
  const ctx: Ctx = {
    t: opts.targets,
    agents,
    limits: opts.limits ?? { ethBody: 5_242_880, cometBody: 1_000_000, restBody: 1_000_000 },
    slowCutoffMs: opts.slowCutoffMs ?? 45_000,
  };
  const answers: Record<string, number> = {};
  const failures: FuzzFailure[] = [];
  const liveness: string[] = [];
  const first = await latestHeight(opts.targets.comet);
  let last = first;
  let misses = 0;
  let stopMonitor = false;
  const monitor = (async () => {
    while (!stopMonitor) {
      await new Promise((r) => setTimeout(r, 2000));
      try {
        last = await latestHeight(opts.targets.comet);
        misses = 0;
      } catch (err) {
        misses++;
        liveness.push(`status unanswered (${(err as Error).message})`);
      }
    }
  })();
  const t0 = Date.now();
  let next = 0;
  let done = 0;
  const worker = async () => {
    for (;;) {
      const n = next++;
      const i = opts.only ? opts.only[n] : n;
      if (i === undefined || n >= (opts.only?.length ?? opts.requests) || misses >= 3) return;
      const g = new Gen(rngFor(opts.seed, i));
      const slow = slowEvery > 0 && i % slowEvery === slowEvery - 1;
      const { what, out } = await oneRequest(ctx, g, slow);
      answers[out.key] = (answers[out.key] ?? 0) + 1;
      if (!out.ok && failures.length < 1000) failures.push({ index: i, what, why: out.why ?? out.key });
      if (++done % 10_000 === 0) log(`${done} requests, ${failures.length} failures, height ${last}`);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  const seconds = (Date.now() - t0) / 1000;
  stopMonitor = true;
  await monitor;
  if (misses >= 3) liveness.push('the node stopped answering /status');
  // The chain must still advance after the storm of requests.
  const until = Date.now() + (opts.advanceWaitMs ?? 15_000);
  let after = last;
  while (Date.now() < until) {
    try {
      after = await latestHeight(opts.targets.comet);
      if (after > last && after > first) break;
    } catch (err) {
      liveness.push(`status unanswered after the run (${(err as Error).message})`);
    }
    await new Promise((r) => setTimeout(r, 500));
  }
  if (!(after > first)) liveness.push(`the chain did not advance: height ${first} before, ${after} after`);
  for (const a of Object.values(agents)) a.destroy();
  return { requests: done, seconds, answers, failures, heights: { first, last: after }, liveness };
}
