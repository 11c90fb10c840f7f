// Test scaffolding: starts the CometBFT RPC over a FakeChain on 127.0.0.1:0.

import {
  type CometRpcOptions,
  CometRpcServer,
  defaultCometRpcOptions,
  TxIndexer,
} from '@noded/rpc/src/comet/index.js';
import { MemoryKV } from '@noded/storage';
import { silentLogger } from '@noded/types';
import { FakeChain, type FakeChainOptions } from './fake-node.js';

export interface CometHarness {
  chain: FakeChain;
  indexer: TxIndexer;
  server: CometRpcServer;
  url: string;
  wsUrl: string;
  port: number;
  close(): Promise<void>;
}

export async function startComet(
  options: Partial<CometRpcOptions> = {},
  chainOptions: FakeChainOptions = {},
): Promise<CometHarness> {
  const chain = await FakeChain.create(chainOptions);
  const indexer = new TxIndexer({ kv: new MemoryKV(), bus: chain.bus, logger: silentLogger });
  await indexer.catchUp(chain);
  const server = new CometRpcServer({
    node: chain,
    bus: chain.bus,
    indexer,
    logger: silentLogger,
    options: { ...defaultCometRpcOptions, ...options },
  });
  const port = await server.listen('127.0.0.1', 0);
  return {
    chain,
    indexer,
    server,
    port,
    url: `http://127.0.0.1:${port}`,
    wsUrl: `ws://127.0.0.1:${port}/websocket`,
    async close() {
      await server.close();
      await indexer.close();
    },
  };
}

export interface HttpResult {
  status: number;
  headers: Headers;
  text: string;
  // biome-ignore lint/suspicious/noExplicitAny: JSON bodies are inspected field by field in tests
  json: any;
}

export async function http(url: string, init?: RequestInit): Promise<HttpResult> {
  const res = await fetch(url, init);
  const text = await res.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, text, json };
}

export function rpcPost(url: string, body: unknown): Promise<HttpResult> {
  return http(`${url}/`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}
