// Starts the Ethereum JSON-RPC on its own thread (worker.ts) and serves its chain calls from the
// executor on this one. Parsing, JSON, signing dev transactions, sender recovery and socket writes
// then use the second core and no longer wait for the block being executed, while state reads and
// admission stay with the executor that owns the state (DESIGN.md: rpc-edge next to executor).
import { type ResourceLimits, Worker } from 'node:worker_threads';
import type { DevChainInfo, EdgeChannel, EdgeHeap, EdgeInit, EthRpcOptions } from '@noded/rpc';
import { EthEdgeHost } from '@noded/rpc';
import { WORKER_LIMITS, workerFailure } from '@noded/service-shared/src/worker-limits.js';
import type { EthChain, EthDevControl, Logger, NodeEvent } from '@noded/types';

/** workerData of the JSON-RPC thread. */
export interface RpcThreadData {
  /** Also carries the EVM chain id (init.chainId), which sender recovery checks. */
  init: EdgeInit;
  options: EthRpcOptions;
  clientVersion: string;
  /** Private keys of chain-local's unlocked dev accounts (empty elsewhere). */
  devKeys: string[];
  /** Set only on the single validator of chain-local: the dev-chain methods are served. */
  devChain: DevChainInfo | undefined;
}

export interface RpcThreadDeps {
  chain: EthChain;
  /** Mining and time controls (chain-local); the thread's dev methods are refused without. */
  dev?: EthDevControl;
  bus: { subscribe(listener: (ev: NodeEvent) => void): () => void };
  logger: Logger;
  options: EthRpcOptions;
  clientVersion: string;
  devKeys: string[];
  devChain: DevChainInfo | undefined;
  onRequest?: (method: string, ms: number, ok: boolean) => void;
  /** The thread died: the node cannot serve JSON-RPC any more and must stop. */
  onFatal: (err: Error) => void;
  /** The thread's heap caps; WORKER_LIMITS unless a test sets smaller ones. */
  resourceLimits?: ResourceLimits;
}

export class EthRpcThread {
  private readonly worker: Worker;
  private readonly host: EthEdgeHost;
  private stopping = false;

  constructor(deps: RpcThreadDeps) {
    // The host is built first (the thread starts from its init()); it posts nothing before an event
    // or a command, and neither can happen before this constructor returns.
    const listeners: Array<(m: unknown) => void> = [];
    let worker: Worker | undefined;
    const channel: EdgeChannel = {
      postMessage: (m) => worker?.postMessage(m),
      on: (_event, fn) => listeners.push(fn),
    };
    const host = new EthEdgeHost({
      channel,
      chain: deps.chain,
      dev: deps.dev,
      bus: deps.bus,
      logger: deps.logger,
      onRequest: deps.onRequest,
      // The executor publishes every committed block's logs with its head (EthNewHead).
      headLogs: true,
    });
    const data: RpcThreadData = {
      init: host.init(),
      options: deps.options,
      clientVersion: deps.clientVersion,
      devKeys: deps.devKeys,
      devChain: deps.devChain,
    };
    const limits = deps.resourceLimits ?? WORKER_LIMITS;
    worker = new Worker(new URL('./worker.js', import.meta.url), {
      workerData: data,
      name: 'json-rpc',
      resourceLimits: limits,
    });
    worker.on('message', (m) => {
      for (const fn of listeners) fn(m);
    });
    // An uncaught error is followed by 'exit': the node hears about the first of the two only.
    let failed = false;
    const fail = (err: Error) => {
      host.abort(err); // also while stopping: a close() waiting on the thread must not hang
      if (this.stopping || failed) return;
      failed = true;
      deps.onFatal(err);
    };
    worker.on('error', (err) => {
      deps.logger.error({ err: err.stack ?? err.message }, 'JSON-RPC thread failed');
      fail(workerFailure('JSON-RPC', err, limits));
    });
    worker.on('exit', (code) => fail(new Error(`JSON-RPC thread exited with code ${code}`)));
    this.worker = worker;
    this.host = host;
  }

  listenHttp(host: string, port: number): Promise<number> {
    return this.host.listenHttp(host, port);
  }

  listenWs(host: string, port: number): Promise<number> {
    return this.host.listenWs(host, port);
  }

  /** The thread's V8 heap, as it reads it itself. */
  heap(): Promise<EdgeHeap> {
    return this.host.heap();
  }

  async close(): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    try {
      await this.host.close();
    } finally {
      await this.worker.terminate();
    }
  }
}
