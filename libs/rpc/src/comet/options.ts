// [rpc] of config.toml, with CometBFT's key names turned camelCase and durations in milliseconds.

export interface CometRpcOptions {
  /** Listen address, e.g. "tcp://127.0.0.1:26657" (the lead parses it and calls listen). */
  laddr: string;
  /** Origins allowed by CORS; empty disables CORS, "*" allows any origin. */
  corsAllowedOrigins: string[];
  /** Simultaneous connections including WebSocket; 0 = unlimited. */
  maxOpenConnections: number;
  /** Distinct remote addresses that may hold subscriptions (and broadcast_tx_commit waits). */
  maxSubscriptionClients: number;
  /** Distinct queries one remote address may subscribe to. */
  maxSubscriptionsPerClient: number;
  /** Events buffered per subscription before it is cancelled for being too slow. */
  experimentalSubscriptionBufferSize: number;
  /** Close the whole WebSocket connection of a slow client instead of cancelling the subscription. */
  experimentalCloseOnSlowClient: boolean;
  /** How long broadcast_tx_commit waits for the transaction to be committed. */
  timeoutBroadcastTxCommitMs: number;
  /** Maximum requests in one JSON-RPC batch; 0 = unlimited. */
  maxRequestBatchSize: number;
  /** Maximum request body (and WebSocket message) size in bytes. */
  maxBodyBytes: number;
  /** Maximum size of the request headers in bytes. */
  maxHeaderBytes: number;
  /** Serve dial_seeds, dial_peers and unsafe_flush_mempool. */
  unsafe: boolean;
  /**
   * How long an HTTP response may take before the connection is cut. CometBFT has no key for it:
   * 10 s, raised to timeout_broadcast_tx_commit + 1 s when that is longer (writeTimeoutFor). Tests
   * set it small.
   */
  writeTimeoutMs?: number;
}

/** CometBFT's rpc WriteTimeout: 10 s, or timeout_broadcast_tx_commit + 1 s when that is longer. */
export function writeTimeoutFor(options: CometRpcOptions): number {
  return options.writeTimeoutMs ?? Math.max(10_000, options.timeoutBroadcastTxCommitMs + 1_000);
}

/** CometBFT v0.38 defaults (config/config.go DefaultRPCConfig), as noded's config.toml writes them. */
export const defaultCometRpcOptions: CometRpcOptions = {
  laddr: 'tcp://127.0.0.1:26657',
  corsAllowedOrigins: [],
  maxOpenConnections: 900,
  maxSubscriptionClients: 100,
  maxSubscriptionsPerClient: 5,
  experimentalSubscriptionBufferSize: 200,
  experimentalCloseOnSlowClient: false,
  timeoutBroadcastTxCommitMs: 10_000,
  maxRequestBatchSize: 10,
  maxBodyBytes: 1_000_000,
  maxHeaderBytes: 1_048_576,
  unsafe: false,
};
