// Test harness: an EthRpcServer over a FakeChain on 127.0.0.1:0, plus small HTTP and WebSocket clients.

import {
  DevAccounts,
  defaultEthRpcOptions,
  type EthRpcOptions,
  EthRpcServer,
} from '@noded/rpc/src/eth/index.js';
import { EventBus, type Hex, silentLogger } from '@noded/types';
import { WebSocket } from 'ws';
import { FakeChain } from './fake-chain.js';

/** The first three keys of the standard test mnemonic (chain-local dev accounts). */
export const DEV_KEYS: Hex[] = [
  '0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80',
  '0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d',
  '0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a',
];
export const DEV_ADDRS: Hex[] = [
  '0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266',
  '0x70997970c51812dc3a010c7d01b50e0d17dc79c8',
  '0x3c44cdddb6a900fa2b585dd299e03d12fa4293bc',
];

export interface Harness {
  chain: FakeChain;
  bus: EventBus;
  server: EthRpcServer;
  url: string;
  wsUrl: string;
  requests: Array<{ method: string; ok: boolean }>;
  close(): Promise<void>;
}

export interface HarnessOptions {
  options?: Partial<EthRpcOptions>;
  dev?: boolean;
  syncing?: () => false | { startingBlock: bigint; currentBlock: bigint; highestBlock: bigint };
}

export async function startHarness(h: HarnessOptions = {}): Promise<Harness> {
  const bus = new EventBus();
  const chain = new FakeChain(bus);
  const requests: Array<{ method: string; ok: boolean }> = [];
  const server = new EthRpcServer({
    chain,
    bus,
    logger: silentLogger,
    options: { ...defaultEthRpcOptions, ...h.options },
    clientVersion: 'noded/v0.1.0/linux-x64/node20',
    devAccounts: h.dev === false ? null : new DevAccounts(DEV_KEYS),
    peerCount: () => 3,
    syncing: h.syncing ?? (() => false),
    onRequest: (method, _ms, ok) => requests.push({ method, ok }),
  });
  const port = await server.listenHttp('127.0.0.1', 0);
  const wsPort = await server.listenWs('127.0.0.1', 0);
  return {
    chain,
    bus,
    server,
    url: `http://127.0.0.1:${port}`,
    wsUrl: `ws://127.0.0.1:${wsPort}`,
    requests,
    close: () => server.close(),
  };
}

export interface RpcReply {
  jsonrpc: string;
  id: unknown;
  result?: unknown;
  error?: { code: number; message: string; data?: unknown };
}

let nextId = 1;

/** POSTs raw text; returns status, headers and the body text. */
export async function post(
  url: string,
  body: string,
  headers: Record<string, string> = { 'content-type': 'application/json' },
  method = 'POST',
): Promise<{ status: number; headers: Headers; text: string }> {
  const res = await fetch(url, {
    method,
    headers,
    body: method === 'GET' || method === 'HEAD' ? undefined : body,
  });
  return { status: res.status, headers: res.headers, text: await res.text() };
}

/** One JSON-RPC call over HTTP; returns the whole reply object. */
export async function rpc(url: string, method: string, params: unknown[] = []): Promise<RpcReply> {
  const res = await post(url, JSON.stringify({ jsonrpc: '2.0', id: nextId++, method, params }));
  return JSON.parse(res.text) as RpcReply;
}

/** The result of a call that must succeed. */
export async function call<T = unknown>(url: string, method: string, params: unknown[] = []): Promise<T> {
  const r = await rpc(url, method, params);
  if (r.error !== undefined) throw new Error(`${method} failed: ${r.error.code} ${r.error.message}`);
  return r.result as T;
}

/** A minimal WebSocket JSON-RPC client that keeps notifications in arrival order. */
export class WsClient {
  readonly notifications: Array<{ subscription: string; result: unknown }> = [];
  private readonly waiting = new Map<unknown, (r: RpcReply) => void>();
  private readonly listeners = new Set<() => void>();
  closeCode: number | undefined;

  private constructor(readonly ws: WebSocket) {
    ws.on('message', (data) => {
      const msg = JSON.parse(data.toString());
      if (Array.isArray(msg)) {
        for (const m of msg) this.waiting.get(m.id)?.(m);
      } else if (msg.method === 'eth_subscription') {
        this.notifications.push(msg.params);
      } else {
        this.waiting.get(msg.id)?.(msg);
      }
      for (const l of this.listeners) l();
    });
    ws.on('close', (code) => {
      this.closeCode = code;
      for (const l of this.listeners) l();
    });
  }

  static async connect(
    url: string,
    opts: ConstructorParameters<typeof WebSocket>[2] = {},
  ): Promise<WsClient> {
    const ws = new WebSocket(url, opts);
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
    });
    return new WsClient(ws);
  }

  request(method: string, params: unknown[] = []): Promise<RpcReply> {
    const id = nextId++;
    return this.sendRaw(JSON.stringify({ jsonrpc: '2.0', id, method, params }), id);
  }

  sendRaw(text: string, id: unknown): Promise<RpcReply> {
    return new Promise((resolve) => {
      this.waiting.set(id, (r) => {
        this.waiting.delete(id);
        resolve(r);
      });
      this.ws.send(text);
    });
  }

  /** Resolves once `cond` holds, checking on every message; fails after `ms`. */
  waitFor(cond: () => boolean, ms = 3000, what = 'condition'): Promise<void> {
    if (cond()) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const check = () => {
        if (cond()) {
          clearTimeout(timer);
          this.listeners.delete(check);
          resolve();
        }
      };
      const timer = setTimeout(() => {
        this.listeners.delete(check);
        reject(new Error(`timed out waiting for ${what}`));
      }, ms);
      this.listeners.add(check);
    });
  }

  notificationsFor(sub: string): unknown[] {
    return this.notifications.filter((n) => n.subscription === sub).map((n) => n.result);
  }

  close(): void {
    this.ws.terminate();
  }
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
