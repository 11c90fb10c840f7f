// libs/rpc: the node's client-facing protocols, framework-free.

// CometBFT v0.38-compatible RPC on :26657 and its transaction indexer.
export * from './src/comet/index.js';
// Ethereum JSON-RPC on :8545 (HTTP) and :8546 (WebSocket), answering as geth does.
export * from './src/eth/index.js';
// Cosmos SDK gateway-style REST API on :1317.
export * from './src/rest/index.js';
