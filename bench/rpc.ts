// A small Ethereum JSON-RPC client for the benchmark: HTTP/1.1 keep-alive through one node:http Agent
// (no library in the measured path), JSON-RPC batches, and a new-head feed over WebSocket
// (eth_subscribe newHeads) that falls back to polling eth_blockNumber when the node has no WS.
import { Agent, request } from 'node:http';
import WebSocket from 'ws';

export class RpcError extends Error {
  constructor(
    readonly code: number | string,
    message: string,
    readonly method: string,
  ) {
    super(`${method}: ${message} (code ${code})`);
  }
}

interface RpcReply {
  id?: number;
  result?: unknown;
  error?: { code: number; message: string };
}

export interface RpcCall {
  method: string;
  params: unknown[];
}

export class JsonRpcClient {
  private readonly agent: Agent;
  private readonly url: URL;
  private readonly timeoutMs: number;
  private nextId = 1;

  constructor(url: string, opts: { maxSockets?: number; timeoutMs?: number } = {}) {
    this.url = new URL(url);
    this.timeoutMs = opts.timeoutMs ?? 30_000;
    this.agent = new Agent({ keepAlive: true, maxSockets: opts.maxSockets ?? 32 });
  }

  /** POSTs one JSON body and returns the parsed reply. */
  private post(body: string, what: string): Promise<unknown> {
    return new Promise((resolve, reject) => {
      const req = request(
        {
          host: this.url.hostname,
          port: this.url.port,
          path: this.url.pathname || '/',
          method: 'POST',
          agent: this.agent,
          headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
          timeout: this.timeoutMs,
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            try {
              resolve(JSON.parse(text));
            } catch {
              reject(new RpcError(res.statusCode ?? 'http', `non-JSON reply: ${text.slice(0, 200)}`, what));
            }
          });
          res.on('error', reject);
        },
      );
      req.on('timeout', () =>
        req.destroy(new RpcError('timeout', `no reply within ${this.timeoutMs} ms`, what)),
      );
      req.on('error', reject);
      req.end(body);
    });
  }

  async call<T = unknown>(method: string, params: unknown[] = []): Promise<T> {
    const reply = (await this.post(
      JSON.stringify({ jsonrpc: '2.0', id: this.nextId++, method, params }),
      method,
    )) as RpcReply;
    if (reply.error) throw new RpcError(reply.error.code, reply.error.message, method);
    return reply.result as T;
  }

  /** One JSON-RPC batch; results in call order, an RpcError in place of each failed call. */
  async batch(calls: RpcCall[]): Promise<Array<unknown | RpcError>> {
    if (calls.length === 0) return [];
    const first = this.nextId;
    this.nextId += calls.length;
    const body = JSON.stringify(calls.map((c, i) => ({ jsonrpc: '2.0', id: first + i, ...c })));
    const replies = await this.post(body, `batch(${calls[0].method} x${calls.length})`);
    if (!Array.isArray(replies)) {
      const err = (replies as RpcReply).error;
      throw new RpcError(
        err?.code ?? 'batch',
        err?.message ?? 'batch reply is not an array',
        calls[0].method,
      );
    }
    const out: Array<unknown | RpcError> = calls.map(
      (c) => new RpcError('missing', 'no reply in batch', c.method),
    );
    for (const r of replies as RpcReply[]) {
      const i = (r.id ?? -1) - first;
      if (i < 0 || i >= calls.length) continue;
      out[i] = r.error ? new RpcError(r.error.code, r.error.message, calls[i].method) : r.result;
    }
    return out;
  }

  close(): void {
    this.agent.destroy();
  }
}

/** Delivers the latest block number as the node announces it. */
export interface HeadFeed {
  readonly source: 'ws-newHeads' | 'http-poll';
  /** Registers a listener; returns the function that removes it. */
  onHead(listener: (height: number) => void): () => void;
  close(): void;
}

/** Subscribes to newHeads over WebSocket; if that fails within 5 s, polls eth_blockNumber every 20 ms. */
export async function openHeadFeed(wsUrl: string, rpc: JsonRpcClient): Promise<HeadFeed> {
  try {
    return await wsHeads(wsUrl);
  } catch {
    return pollHeads(rpc);
  }
}

function subscribe(listeners: Array<(h: number) => void>, l: (h: number) => void): () => void {
  listeners.push(l);
  return () => {
    const i = listeners.indexOf(l);
    if (i >= 0) listeners.splice(i, 1);
  };
}

function wsHeads(wsUrl: string): Promise<HeadFeed> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(wsUrl, { handshakeTimeout: 5000 });
    const listeners: Array<(h: number) => void> = [];
    const timer = setTimeout(() => {
      ws.terminate();
      reject(new Error(`no newHeads subscription from ${wsUrl} within 5 s`));
    }, 5000);
    ws.on('open', () => {
      ws.send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_subscribe', params: ['newHeads'] }));
    });
    ws.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    ws.on('message', (data) => {
      const msg = JSON.parse(String(data)) as {
        id?: number;
        result?: unknown;
        error?: { message: string };
        params?: { result?: { number?: string } };
      };
      if (msg.id === 1) {
        clearTimeout(timer);
        if (msg.error || typeof msg.result !== 'string') {
          ws.terminate();
          reject(new Error(`eth_subscribe newHeads refused: ${msg.error?.message ?? 'no id'}`));
          return;
        }
        resolve({
          source: 'ws-newHeads',
          onHead: (l) => subscribe(listeners, l),
          close: () => ws.terminate(),
        });
        return;
      }
      const n = msg.params?.result?.number;
      if (typeof n === 'string') {
        const h = Number(BigInt(n));
        for (const l of [...listeners]) l(h);
      }
    });
  });
}

function pollHeads(rpc: JsonRpcClient): HeadFeed {
  const listeners: Array<(h: number) => void> = [];
  let last = -1;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  const tick = async () => {
    if (stopped) return;
    try {
      const h = Number(BigInt(await rpc.call<string>('eth_blockNumber')));
      if (h !== last) {
        last = h;
        for (const l of [...listeners]) l(h);
      }
    } catch {
      // The next tick retries; the workload's own deadline bounds the wait.
    }
    if (!stopped) timer = setTimeout(tick, 20);
  };
  void tick();
  return {
    source: 'http-poll',
    onHead: (l) => subscribe(listeners, l),
    close: () => {
      stopped = true;
      if (timer) clearTimeout(timer);
    },
  };
}

export const hexQty = (n: bigint | number): string => `0x${BigInt(n).toString(16)}`;
