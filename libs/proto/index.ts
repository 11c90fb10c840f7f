// libs/proto (@noded/proto): the cluster's wire contracts. The .proto files in proto/ (by package and
// version: noded/<area>/v1/*.proto) and the TypeScript ts-proto generates from them into src/gen/
// (`npm run proto`; committed, never edited by hand). Nothing else: the conversions and the gRPC
// clients and servers live in @noded/abci-grpc, the stream's codec in @noded/stream.

// grpc.health.v1: every gRPC service answers it.
export * as healthProto from './src/gen/grpc/health/v1/health.js';
// noded.abci.v1.Application: consensus <-> executor (ABCI 2.0 shaped).
export * as abciProto from './src/gen/noded/abci/v1/abci.js';
// noded.dev.v1.DevChain: rpc-edge -> executor (chain-local dev controls).
export * as devProto from './src/gen/noded/dev/v1/dev.js';
// noded.mempool.v1.Mempool: rpc-edge -> executor.
export * as mempoolProto from './src/gen/noded/mempool/v1/mempool.js';
// noded.p2p.v1.Gateway: consensus <-> p2p-gateway.
export * as gatewayProto from './src/gen/noded/p2p/v1/gateway.js';
// noded.state.v1.StateReader: rpc-edge -> state-store.
export * as stateProto from './src/gen/noded/state/v1/state.js';
// noded.stream.v1: the messages of the committed-blocks stream on NATS (no service).
export * as streamProto from './src/gen/noded/stream/v1/committed.js';
