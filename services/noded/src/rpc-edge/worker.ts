// The JSON-RPC thread: the Ethereum JSON-RPC servers (HTTP on [evm] rpc_address, WebSocket on
// [evm] ws_address) built over an EthEdgeClient, whose chain, events, logs and metrics travel to
// the main thread (see libs/rpc/src/eth/edge.ts). Started by thread.ts; never imported elsewhere.
import { parentPort, workerData } from 'node:worker_threads';
import { senderRecovery } from '@noded/execution';
import { DevAccounts, EthEdgeClient, EthRpcServer } from '@noded/rpc';
import {
  logReclaim,
  startIdleReclaim,
  workerIdleReclaimOptions,
} from '@noded/service-shared/src/idle-reclaim.js';
import type { RpcThreadData } from './thread.js';

if (parentPort === null) throw new Error('rpc-edge/worker.js runs only as a worker thread');
const data = workerData as RpcThreadData;
const edge = new EthEdgeClient(parentPort, data.init, { recoverSender: senderRecovery(data.init.chainId) });
const server = new EthRpcServer({
  chain: edge.chain,
  bus: edge.bus,
  logger: edge.logger,
  options: data.options,
  clientVersion: data.clientVersion,
  devAccounts: data.devKeys.length > 0 ? new DevAccounts(data.devKeys) : null,
  devChain: data.devChain,
  devControl: edge.dev,
  peerCount: () => 0,
  syncing: () => false,
  onRequest: edge.onRequest,
});
edge.serve(server);
startIdleReclaim(logReclaim(edge.logger, 'json-rpc'), workerIdleReclaimOptions);
