// libs/rpc rest: the Cosmos SDK gateway-style REST API on :1317.

// Bech32 for deployments that configure an address prefix.
export { bech32Decode, bech32Encode } from './bech32.js';
// RestConsensus over a CometBFT RPC (an rpc-edge reading the consensus service's :26657).
export { CometRpcConsensus, type CometRpcConsensusOptions } from './comet-consensus.js';
// The OpenAPI document of the routes (served at /swagger/ when enabled).
export { openApiDocument } from './openapi.js';
// [api] options (seed §2.4) with the seed's defaults, and the check for key combinations.
export { ApiConfigError, type ApiOptions, defaultApiOptions, validateApiOptions } from './options.js';
// The route table and fee-market settings (for docs, the OpenAPI document and the lead's wiring).
// RestConsensus is what the CometBFT-shaped routes read (an rpc-edge implements it over the consensus
// service's RPC); GatewayError and unavailable() are how such an implementation answers 503.
export {
  BASE_DENOM,
  type FeeMarketParams,
  GatewayError,
  nodeConsensus,
  REST_ROUTES,
  type RestConsensus,
  unavailable,
} from './routes.js';
// The server; the lead constructs it and calls listen only when options.enable.
export { RestServer, type RestServerDeps } from './server.js';
