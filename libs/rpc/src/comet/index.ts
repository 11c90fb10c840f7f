// libs/rpc comet: the CometBFT v0.38-compatible RPC on :26657 and its transaction indexer.

// CometBFT JSON read back (headers, commits, validators): for clients of another node's RPC.
export {
  blockFromJson,
  blockIdFromJson,
  CometJsonError,
  commitFromJson,
  execTxResultFromJson,
  headerFromJson,
  validatorFromJson,
} from './decode.js';
// CometBFT JSON encoders, for other transports (NATS, gRPC) that must publish the same shapes.
export {
  blockIdJson,
  blockJson,
  commitJson,
  headerJson,
  type Json as CometJson,
  type JsonObject as CometJsonObject,
  txHash,
  validatorJson,
} from './encode.js';
// NodeEvent -> CometBFT event conversion (type, data, flattened attributes).
export { type CometEvent, toCometEvents } from './events.js';
// The kv indexer behind tx, tx_search and block_search (data/tx_index.db): TxIndexer follows the bus
// and answers the routes; its backend (a TxIndexStore over a KVStore, or one on another thread
// behind TxIndexBackend) holds the index.
export {
  BLOCK_HEIGHT_KEY,
  type IndexedBlock,
  type IndexedTx,
  IndexerQueryError,
  TX_HASH_KEY,
  TX_HEIGHT_KEY,
  type TxIndexBackend,
  TxIndexer,
  type TxIndexerDeps,
  TxIndexStore,
} from './indexer.js';
// [rpc] options with CometBFT's defaults; libs/config maps config.toml onto them.
export { type CometRpcOptions, defaultCometRpcOptions, writeTimeoutFor } from './options.js';
// The event query language, for anything else that filters CometBFT events (tests, tools).
export { Query, type QueryCondition, QuerySyntaxError } from './query.js';
// The server (HTTP URI + JSON-RPC + /websocket on one port); the lead constructs it and listens.
export { type CometRpcDeps, CometRpcServer, RPC_ERROR } from './server.js';
