// RestConsensus over a CometBFT v0.38 RPC (:26657): what an rpc-edge's REST routes read from the
// consensus service (docs/cluster.md "rpc-edge"). JSON-RPC 2.0 over HTTP POST: `status` (node info,
// sync info, the stored height range), `block`, `block_results`, `validators` (paged) and `tx`
// (CometBFT hash to raw bytes). Answers are decoded with the light client's decoders, so a malformed
// one is refused by name. A consensus service that does not answer (refused, reset, past the timeout,
// HTTP 502/503/504) is `unavailable` (503 with the reason); an RPC error on a height or hash (not stored, not indexed)
// is "not found" to the routes.
import type { Block, BlockId, ExecTxResult, NodeIdentity, Validator } from '@noded/types';
import { blockFromJson, blockIdFromJson, execTxResultFromJson, validatorFromJson } from '../comet/decode.js';
import { type RestConsensus, unavailable } from './routes.js';

/** The CometBFT RPC refused the request (its JSON-RPC error): a height or hash it does not have. */
class RpcAnswerError extends Error {}

type Obj = Record<string, unknown>;

function field(o: unknown, name: string, method: string): unknown {
  if (typeof o !== 'object' || o === null || !(name in o)) {
    throw new Error(`consensus RPC ${method}: the answer has no ${name}`);
  }
  return (o as Obj)[name];
}

function decimal(v: unknown, what: string): number {
  if (typeof v !== 'string' || !/^\d{1,16}$/.test(v)) {
    throw new Error(`consensus RPC ${what}: ${JSON.stringify(v)} is not a height`);
  }
  return Number(v);
}

export interface CometRpcConsensusOptions {
  /** Time allowed for one call (connect, send, answer). */
  timeoutMs?: number;
}

export class CometRpcConsensus implements RestConsensus {
  private readonly url: string;
  private readonly timeoutMs: number;
  private nextId = 1;

  /** `address` is host:port (http assumed) or an http(s):// URL of the CometBFT RPC. */
  constructor(
    readonly address: string,
    opts: CometRpcConsensusOptions = {},
  ) {
    this.url = /^https?:\/\//.test(address) ? address : `http://${address}`;
    this.timeoutMs = opts.timeoutMs ?? 5_000;
  }

  private async call(method: string, params: Obj = {}): Promise<unknown> {
    let res: Response;
    let text: string;
    try {
      res = await fetch(this.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ jsonrpc: '2.0', id: this.nextId++, method, params }),
        signal: AbortSignal.timeout(this.timeoutMs),
      });
      text = await res.text();
    } catch (err) {
      const e = err as Error & { cause?: { code?: string; message?: string } };
      const why =
        e.name === 'TimeoutError'
          ? `no answer within ${this.timeoutMs} ms`
          : (e.cause?.code ?? e.cause?.message ?? e.message);
      throw unavailable(`the consensus service's RPC at ${this.address} is unreachable: ${why}`);
    }
    // 502/503/504: a proxy or the server itself says it cannot answer now (whatever the body says).
    if (res.status === 502 || res.status === 503 || res.status === 504) {
      throw unavailable(`the consensus service's RPC at ${this.address} answered HTTP ${res.status}`);
    }
    let body: { result?: unknown; error?: { message?: string; data?: string } };
    try {
      body = JSON.parse(text);
    } catch {
      if (res.status >= 500) {
        throw unavailable(`the consensus service's RPC at ${this.address} answered HTTP ${res.status}`);
      }
      throw new Error(`consensus RPC ${method}: the answer is not JSON (HTTP ${res.status})`);
    }
    if (body.error) {
      throw new RpcAnswerError(`${body.error.message ?? 'error'}: ${body.error.data ?? ''}`);
    }
    if (body.result === undefined) throw new Error(`consensus RPC ${method}: the answer has no result`);
    return body.result;
  }

  /** Calls a method whose RPC error means "not stored / not found". */
  private async lookup(method: string, params: Obj): Promise<unknown | undefined> {
    try {
      return await this.call(method, params);
    } catch (err) {
      if (err instanceof RpcAnswerError) return undefined;
      throw err;
    }
  }

  private async status(): Promise<{ nodeInfo: Obj; syncInfo: Obj }> {
    const r = await this.call('status');
    return {
      nodeInfo: field(r, 'node_info', 'status') as Obj,
      syncInfo: field(r, 'sync_info', 'status') as Obj,
    };
  }

  async identity(): Promise<NodeIdentity> {
    const { nodeInfo: n } = await this.status();
    const other = (field(n, 'other', 'status.node_info') ?? {}) as Obj;
    const s = (name: string, o: Obj = n): string => {
      const v = o[name];
      if (typeof v !== 'string') throw new Error(`consensus RPC status: node_info ${name} is not a string`);
      return v;
    };
    return {
      nodeId: s('id'),
      listenAddr: s('listen_addr'),
      network: s('network'),
      version: s('version'),
      moniker: s('moniker'),
      channels: s('channels').toLowerCase(),
      txIndex: s('tx_index', other) === 'on' ? 'on' : 'off',
      rpcAddress: s('rpc_address', other),
    };
  }

  async catchingUp(): Promise<boolean> {
    const v = (await this.status()).syncInfo.catching_up;
    if (typeof v !== 'boolean')
      throw new Error('consensus RPC status: sync_info catching_up is not a boolean');
    return v;
  }

  async storeRange(): Promise<{ base: number; height: number }> {
    const { syncInfo } = await this.status();
    return {
      base: decimal(syncInfo.earliest_block_height, 'status earliest_block_height'),
      height: decimal(syncInfo.latest_block_height, 'status latest_block_height'),
    };
  }

  async block(height: number): Promise<{ block: Block; blockId: BlockId } | undefined> {
    const r = await this.lookup('block', { height: String(height) });
    if (r === undefined) return undefined;
    const raw = field(r, 'block', 'block');
    if (raw === null) return undefined;
    return { block: blockFromJson(raw), blockId: blockIdFromJson(field(r, 'block_id', 'block')) };
  }

  async txResults(height: number): Promise<ExecTxResult[] | undefined> {
    const r = await this.lookup('block_results', { height: String(height) });
    if (r === undefined) return undefined;
    const list = field(r, 'txs_results', 'block_results');
    if (list === null) return [];
    if (!Array.isArray(list)) throw new Error('consensus RPC block_results: txs_results is not a list');
    return list.map((t, i) => execTxResultFromJson(t, `txs_results[${i}]`));
  }

  async validators(height: number): Promise<Validator[] | undefined> {
    const out: Validator[] = [];
    const perPage = 100;
    for (let page = 1; ; page++) {
      const r = await this.lookup('validators', {
        height: String(height),
        page: String(page),
        per_page: String(perPage),
      });
      if (r === undefined) return page === 1 ? undefined : out;
      const vals = field(r, 'validators', 'validators');
      if (!Array.isArray(vals)) throw new Error('consensus RPC validators: validators is not a list');
      vals.forEach((v, i) => {
        out.push(validatorFromJson(v, `validators[${(page - 1) * perPage + i}]`));
      });
      const total = decimal(field(r, 'total', 'validators'), 'validators total');
      if (out.length >= total || vals.length === 0) return out;
    }
  }

  async txByCometHash(hash: Uint8Array): Promise<Uint8Array | undefined> {
    const r = await this.lookup('tx', { hash: Buffer.from(hash).toString('base64'), prove: false });
    if (r === undefined) return undefined;
    const tx = field(r, 'tx', 'tx');
    if (typeof tx !== 'string') throw new Error('consensus RPC tx: tx is not base64');
    return new Uint8Array(Buffer.from(tx, 'base64'));
  }
}
