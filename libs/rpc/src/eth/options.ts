// Options of the Ethereum JSON-RPC, one field per app.toml [evm.rpc] key (camelCase; durations in
// milliseconds; BTC amounts in base units, 1 BTC = 10^18). libs/config maps the file onto this shape.

export interface EthRpcOptions {
  /** [evm.rpc] enable: serve HTTP on [evm] rpc_address. */
  enable: boolean;
  /** [evm.rpc] ws_enable: serve WebSocket on [evm] ws_address. */
  wsEnable: boolean;
  /** [evm.rpc] apis: enabled namespaces, e.g. ['eth', 'net', 'web3', 'txpool', 'debug']. */
  apis: string[];
  /** [evm.rpc] gas_cap: gas ceiling of eth_call / eth_estimateGas / debug_traceCall; 0 = none. */
  gasCap: bigint;
  /** [evm.rpc] evm_timeout: wall-clock limit of one eth_call / eth_estimateGas; 0 = none. */
  evmTimeoutMs: number;
  /** [evm.rpc] txfee_cap: largest gas * price a transaction sent through the RPC may cost; 0 = none. */
  txFeeCap: bigint;
  /** [evm.rpc] logs_cap: most logs one eth_getLogs / eth_getFilterLogs may return. */
  logsCap: number;
  /** [evm.rpc] block_range_cap: largest toBlock - fromBlock of a log query. */
  blockRangeCap: number;
  /** [evm.rpc] batch_request_limit: most calls in one batch; 0 = none. */
  batchRequestLimit: number;
  /** [evm.rpc] batch_response_max_size: bytes of results after which a batch's calls fail; 0 = none. */
  batchResponseMaxSize: number;
  /** [evm.rpc] max_body_bytes: largest HTTP body / WebSocket message. */
  maxBodyBytes: number;
  /** [evm.rpc] filter_cap: most live filters (eth_newFilter & co) on this node. */
  filterCap: number;
  /** [evm.rpc] filter_timeout: a filter not polled for this long is removed. */
  filterTimeoutMs: number;
  /** [evm.rpc] max_subscriptions_per_connection: eth_subscribe limit per WebSocket. */
  maxSubscriptionsPerConnection: number;
  /** [evm.rpc] ws_ping_interval: ping period; a peer that answered neither of its last two pings is dropped. */
  wsPingIntervalMs: number;
  /** [evm.rpc] ws_max_buffered_bytes: unsent bytes after which a slow subscriber is disconnected. */
  wsMaxBufferedBytes: number;
  /** [evm.rpc] http_timeout: a request not answered within this time gets -32002 "request timed out". */
  httpTimeoutMs: number;
  /** [evm.rpc] cors_allowed_origins: browser origins allowed over HTTP and WebSocket ('*' = any). */
  corsAllowedOrigins: string[];
  /** [evm.rpc] feehistory_cap: most blocks one eth_feeHistory covers. */
  feeHistoryCap: number;
  /** [evm.rpc] allow_unprotected_txs: accept legacy transactions without an EIP-155 chain id. */
  allowUnprotectedTxs?: boolean;
}

/** The app.toml defaults (docs/json-rpc.md lists them with their keys). */
export const defaultEthRpcOptions: Readonly<EthRpcOptions> = Object.freeze({
  enable: true,
  wsEnable: true,
  apis: ['eth', 'net', 'web3', 'txpool', 'debug'],
  gasCap: 50_000_000n,
  evmTimeoutMs: 5_000,
  txFeeCap: 10n ** 18n,
  logsCap: 10_000,
  blockRangeCap: 10_000,
  batchRequestLimit: 1_000,
  batchResponseMaxSize: 25_000_000,
  maxBodyBytes: 5_242_880,
  filterCap: 200,
  filterTimeoutMs: 5 * 60_000,
  maxSubscriptionsPerConnection: 100,
  wsPingIntervalMs: 30_000,
  wsMaxBufferedBytes: 16_777_216,
  httpTimeoutMs: 30_000,
  corsAllowedOrigins: ['*'],
  feeHistoryCap: 1_024,
  allowUnprotectedTxs: false,
});
