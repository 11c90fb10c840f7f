// libs/types: the data shapes and boundaries that every other lib and service speaks.
// Consensus structures (CometBFT v0.38 shapes).

// The ABCI 2.0-style application boundary between consensus and execution.
export * from './src/app.js';
export * from './src/consensus.js';
// The Ethereum view served to the JSON-RPC, and the EthChain port execution implements.
export * from './src/eth.js';
// In-process event bus and the node events subscriptions consume.
export * from './src/events.js';
// The Logger port (pino-compatible) and a silent logger.
export * from './src/logger.js';
// The NodeReader port the CometBFT RPC, REST API and metrics read through.
export * from './src/node.js';
// Peer addresses, node ids and the handshake and PEX protocol names (libs/p2p and the gateway relay).
export * from './src/peer.js';
