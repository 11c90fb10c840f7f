// libs/rpc eth: the Ethereum JSON-RPC (geth-compatible) served on [evm] rpc_address / ws_address.
// The lead re-exports this surface from libs/rpc/index.ts.

// The sync status shape the node reports through deps.syncing.
export type { SyncStatus } from './api.js';
// The unlocked accounts of chain-local; the node builds it from the dev mnemonic's keys.
export { DevAccountKeyError, DevAccounts } from './dev-accounts.js';
// What a node with dev controls (the single validator of chain-local) passes to the server.
export type { DevChainInfo } from './dev-state.js';
// The JSON-RPC edge over a message channel (the node runs the servers on a worker thread), and its
// table of requests awaiting a reply, which other channels to a thread reuse.
export {
  Awaiting,
  type ChainSnapshot,
  type EdgeChannel,
  type EdgeHeap,
  type EdgeInit,
  type EdgeServer,
  EthEdgeClient,
  type EthEdgeClientOptions,
  EthEdgeHost,
  type EthEdgeHostDeps,
} from './edge.js';
// EIP-712 hashing, for tools that prepare or verify typed-data signatures against this node.
export { parseTypedData, type TypedData, TypedDataError, typedDataDigest } from './eip712.js';
// Error type and codes on the wire, for other transports (e.g. a gRPC edge) that reuse handle().
export { RpcError, RpcErrorCode } from './errors.js';
// Its options (app.toml [evm.rpc]) and their defaults, for libs/config to fill.
export { defaultEthRpcOptions, type EthRpcOptions } from './options.js';
// The server the node constructs: new EthRpcServer(deps), listenHttp/listenWs, close.
export { EthRpcServer, type EthRpcServerDeps } from './server.js';
