// libs/abci-grpc: the consensus <-> executor contract (proto/noded/abci/v1/abci.proto) over gRPC.

// The generated messages, service definitions and health client (@noded/proto), for raw calls
// (tests, probes).
export { abciProto, devProto, gatewayProto, healthProto, mempoolProto, stateProto } from '@noded/proto';
// The mempool's admissions as a stream (StreamAdmitted): the executor's bounded server side and
// consensus' reconnecting consumer, for mempool gossip and blocks on demand.
export {
  type AdmissionServerOptions,
  AdmissionStream,
  type AdmissionStreamStats,
  type AdmittedBatch,
  DEFAULT_ADMISSION_STREAM_MAX_BYTES,
} from './src/admissions.js';
// The consensus side: the Application port backed by a remote executor.
export {
  AbciClientError,
  type AbciClientErrorCode,
  DEFAULT_DEADLINES_MS,
  GrpcApplication,
  type GrpcApplicationOptions,
} from './src/client.js';
export {
  ABCI_SERVICE_NAME,
  type AbciMethod,
  DEFAULT_MAX_MESSAGE_BYTES,
  ERROR_CODE_TRAILER,
} from './src/constants.js';
// Wire <-> libs/types conversions with the contract's field rules (tests, other transports).
export { AbciFieldError, type CheckTxKind, fromProto, toProto } from './src/convert.js';
// The dev-chain controls of a chain-local executor for rpc-edges (proto/noded/dev/v1/dev.proto).
export {
  addDevChainService,
  DEV_CHAIN_SERVICE_NAME,
  type DevChainSource,
  GrpcDevChain,
} from './src/dev.js';
// Reads over an ordered list of equivalent backends: the first one up answers, the next when it
// cannot, back to it once a probe (bounded backoff) sees it answer. An rpc-edge's state-store reads
// and its REST's consensus RPC reads both run on it.
export {
  Failover,
  type FailoverEvents,
  type FailoverFailure,
  type FailoverOptions,
} from './src/failover.js';
// The p2p-gateway relay (proto/noded/p2p/v1/gateway.proto): the gateway's side and consensus's host.
export {
  GATEWAY_OWN_PROTOCOLS,
  GATEWAY_SERVICE_NAME,
  GatewayHost,
  type GatewayHostOptions,
  GatewayRelay,
  type GatewayRelayOptions,
  type GatewayServer,
  MAX_RELAY_BUFFER_BYTES,
  MAX_RELAYED_FRAME_BYTES,
  type RelayedHost,
  serveGateway,
} from './src/gateway.js';
// Health status table and its values (a service flips to NOT_SERVING while draining).
export { HealthStatus, ServingStatus } from './src/health.js';
// The executor's mempool for rpc-edges (proto/noded/mempool/v1/mempool.proto).
export {
  addMempoolService,
  GrpcMempool,
  MEMPOOL_SERVICE_NAME,
  MempoolCallError,
  type MempoolSource,
  type PoolTxRecord,
} from './src/mempool.js';
// The executor side: an Application served over gRPC, with grpc.health.v1.
export { type AbciServer, type AbciServerOptions, serveApplication } from './src/server.js';
// The state-store's read contract (proto/noded/state/v1/state.proto): server, client, tagged JSON.
export {
  CHAIN_ERROR_CODE_TRAILER,
  CHAIN_ERROR_DATA_TRAILER,
  checkReadRequest,
  DEFAULT_READ_WAIT_MS,
  decodeTagged,
  encodeTagged,
  READS,
  STATE_HEIGHT_TRAILER,
  STATE_READER_SERVICE_NAME,
  type StateHead,
  type StateRead,
  type StateReader,
  StateReaderClient,
  type StateReaderServer,
  StateRequestError,
  type StateSource,
  StateStoreBehindError,
  StateStoreUnavailableError,
  serveStateReader,
} from './src/state.js';
// An edge's reads over several state-stores: the first one up answers, the next when it cannot.
export { StateReaderFailover, type StateReaderFailoverOptions } from './src/state-failover.js';
// Mutual TLS credentials for both ends of every link above (PEM bytes in, grpc-js credentials out).
export {
  type GrpcTlsMaterial,
  mutualTlsChannelCredentials,
  mutualTlsServerCredentials,
} from './src/tls.js';
