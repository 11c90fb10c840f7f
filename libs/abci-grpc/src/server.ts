// serveApplication: an Application (libs/types) served as noded.abci.v1.Application over gRPC, with
// grpc.health.v1 beside it. Every request is decoded and checked at the boundary: bytes that are not
// the message, or a field that breaks its rule, get INVALID_ARGUMENT naming it and never reach the
// application; an error of the application gets INTERNAL with its message (and its `code`, if it
// has one, in the `noded-error-code` trailer). The server keeps serving after either.
import * as grpc from '@grpc/grpc-js';
import { keccak256 } from '@noded/crypto';
import { ApplicationService } from '@noded/proto/src/gen/noded/abci/v1/abci.js';
import { inSpan, TraceBook, type TraceContext, type TraceSpan, tracingEnabled } from '@noded/telemetry';
import { type Application, type Logger, silentLogger } from '@noded/types';
import type { AdmissionServerOptions } from './admissions.js';
import {
  ABCI_SERVICE_NAME,
  type AbciMethod,
  DEFAULT_MAX_MESSAGE_BYTES,
  ERROR_CODE_TRAILER,
} from './constants.js';
import { AbciFieldError, fromProto, toProto } from './convert.js';
import { addDevChainService, DEV_CHAIN_SERVICE_NAME, type DevChainSource } from './dev.js';
import { HealthStatus, ServingStatus, shutdownGracefully } from './health.js';
import { lenientDefinition, UndecodableRequest } from './lenient.js';
import { addMempoolService, MEMPOOL_SERVICE_NAME, type MempoolSource } from './mempool.js';
import { traceParentOf } from './trace.js';

export interface AbciServerOptions {
  /** Default: insecure (plaintext); pass grpc.ServerCredentials.createSsl(...) for (mutual) TLS. */
  credentials?: grpc.ServerCredentials;
  maxMessageBytes?: number;
  logger?: Logger;
  /** Also serve noded.mempool.v1.Mempool from this (the EVM Executor) on the same port. */
  mempool?: MempoolSource;
  /**
   * Also serve noded.dev.v1.DevChain from this (the EVM Executor) on the same port: it refuses
   * every call itself when it has no dev controls.
   */
  dev?: DevChainSource;
  /**
   * With tracing on: where each FinalizeBlock's span context is kept by height (String(height)),
   * for the publisher of that height to parent its span on.
   */
  blockTraces?: TraceBook;
  /** The mempool's admission streams (StreamAdmitted): their bound and counters. */
  admissions?: AdmissionServerOptions;
}

export interface AbciServer {
  /** The address actually bound ("127.0.0.1:43117" when asked for port 0). */
  readonly address: string;
  readonly port: number;
  /** The health status table (service "" and ABCI_SERVICE_NAME are SERVING while open). */
  readonly health: HealthStatus;
  /** Reports NOT_SERVING, ends health watches, lets calls in flight finish for up to graceMs, stops. */
  close(graceMs?: number): Promise<void>;
}

/** Waiting transactions whose CheckTx context is kept for their block's spans (oldest dropped past it). */
const TX_TRACES_KEPT = 10_000;

/** The key of a transaction in the trace book: its hash (keccak256 of the typed bytes), hex. */
function txKey(tx: Uint8Array): string {
  return Buffer.from(keccak256(tx)).toString('hex');
}

function rpcName(method: AbciMethod): string {
  return ApplicationService[method].path.slice(1);
}

function errorCodeOf(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' || typeof code === 'number' ? String(code) : undefined;
}

/**
 * One unary handler: decode (bytes -> message, by grpc-js) -> check and convert (fromProto) -> the
 * application -> convert back (toProto). Only a failed check is the caller's fault.
 */
function unary<In, Out>(
  method: AbciMethod,
  logger: Logger,
  check: (m: never) => In,
  call: (input: In, span: TraceSpan) => Promise<Out>,
  encode: (out: Out) => unknown,
): grpc.handleUnaryCall<unknown, unknown> {
  const name = rpcName(method);
  const spanName = name.split('/')[1]!;
  const messageName = `noded.abci.v1.${name.split('/')[1]}Request`;
  const fail = (callback: grpc.sendUnaryData<unknown>, err: unknown) => {
    const message = err instanceof Error ? err.message : String(err);
    const code = errorCodeOf(err);
    logger.error({ method: name, err: message, code }, 'application call failed');
    const metadata = new grpc.Metadata();
    if (code !== undefined) metadata.set(ERROR_CODE_TRAILER, code);
    callback({ code: grpc.status.INTERNAL, details: `${name}: application error: ${message}`, metadata });
  };
  return (rpc, callback) => {
    const req = rpc.request;
    if (req instanceof UndecodableRequest) {
      callback({
        code: grpc.status.INVALID_ARGUMENT,
        details: `${name}: the request is not a valid ${messageName}: ${req.reason}`,
      });
      return;
    }
    let input: In;
    try {
      input = check(req as never);
    } catch (err) {
      if (!(err instanceof AbciFieldError)) {
        fail(callback, err);
        return;
      }
      callback({ code: grpc.status.INVALID_ARGUMENT, details: `${name}: ${err.message}` });
      return;
    }
    inSpan(
      spanName,
      {
        kind: 'server',
        parent: traceParentOf(rpc.metadata),
        attributes: { 'rpc.system': 'grpc', 'rpc.method': spanName },
      },
      (span) => Promise.resolve().then(() => call(input, span)),
    ).then(
      (out) => {
        let res: unknown;
        try {
          res = encode(out);
        } catch (err) {
          fail(callback, new Error(`invalid response: ${(err as Error).message}`));
          return;
        }
        callback(null, res);
      },
      (err: unknown) => fail(callback, err),
    );
  };
}

/** Serves `app` on `address` ("host:port"; port 0 picks a free one) until close(). */
export async function serveApplication(
  app: Application,
  address: string,
  opts: AbciServerOptions = {},
): Promise<AbciServer> {
  const logger = opts.logger ?? silentLogger;
  const max = opts.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES;
  const server = new grpc.Server({
    'grpc.max_receive_message_length': max,
    'grpc.max_send_message_length': max,
  });
  // Tracing (docs/cluster.md "Tracing"): the CheckTx span context of each waiting transaction, by
  // hash, so that the spans of the block that holds it link to it (a block holds many transactions
  // from many traces: links, not parents).
  const txTraces = new TraceBook(TX_TRACES_KEPT);
  const linkTxs = (span: TraceSpan, height: number, txs: Uint8Array[]) => {
    if (!tracingEnabled()) return;
    span.setAttribute('noded.height', height);
    span.setAttribute('noded.txs', txs.length);
    if (txTraces.size === 0) return;
    const links: TraceContext[] = [];
    for (const tx of txs) {
      const ctx = txTraces.get(txKey(tx));
      if (ctx !== undefined) links.push(ctx);
    }
    span.addLinks(links);
  };
  const handlers: Record<AbciMethod, grpc.handleUnaryCall<unknown, unknown>> = {
    info: unary('info', logger, fromProto.infoRequest, () => app.info(), toProto.infoResponse),
    initChain: unary(
      'initChain',
      logger,
      fromProto.initChainRequest,
      (r) => app.initChain(r),
      toProto.initChainResponse,
    ),
    checkTx: unary(
      'checkTx',
      logger,
      fromProto.checkTxRequest,
      async (r, span) => {
        const out = await app.checkTx(r.tx, r.kind);
        if (!tracingEnabled()) return out;
        const key = txKey(r.tx);
        span.setAttribute('noded.tx.hash', `0x${key}`);
        // A transaction admitted through consensus (broadcast_tx_*, gossip) is linked like an edge's.
        if (out.code === 0 && r.kind === 'new') txTraces.remember(key, span.context());
        return out;
      },
      toProto.checkTxResponse,
    ),
    prepareProposal: unary(
      'prepareProposal',
      logger,
      fromProto.prepareProposalRequest,
      async (r, span) => {
        const txs = await app.prepareProposal(r);
        linkTxs(span, r.height, txs);
        return txs;
      },
      toProto.prepareProposalResponse,
    ),
    processProposal: unary(
      'processProposal',
      logger,
      fromProto.processProposalRequest,
      (r, span) => {
        linkTxs(span, r.height, r.txs);
        return app.processProposal(r);
      },
      toProto.processProposalResponse,
    ),
    finalizeBlock: unary(
      'finalizeBlock',
      logger,
      fromProto.finalizeBlockRequest,
      async (r, span) => {
        linkTxs(span, r.height, r.txs);
        const out = await app.finalizeBlock(r);
        if (tracingEnabled()) {
          opts.blockTraces?.remember(String(r.height), span.context());
          // Included: their contexts have served (a block's spans link each at most once more).
          for (const tx of r.txs) txTraces.take(txKey(tx));
        }
        return out;
      },
      toProto.finalizeBlockResponse,
    ),
    commit: unary('commit', logger, fromProto.commitRequest, () => app.commit(), toProto.commitResponse),
    // An application without extensions extends with empty bytes and accepts every extension, as
    // the consensus runtime treats it in-process.
    extendVote: unary(
      'extendVote',
      logger,
      fromProto.extendVoteRequest,
      (r) => (app.extendVote ? app.extendVote(r) : Promise.resolve(new Uint8Array(0))),
      toProto.extendVoteResponse,
    ),
    verifyVoteExtension: unary(
      'verifyVoteExtension',
      logger,
      fromProto.verifyVoteExtensionRequest,
      (r) => (app.verifyVoteExtension ? app.verifyVoteExtension(r) : Promise.resolve(true)),
      toProto.verifyVoteExtensionResponse,
    ),
    // An application without queries answers none, as the CometBFT RPC reports it (code 1).
    query: unary(
      'query',
      logger,
      fromProto.queryRequest,
      (r) =>
        app.query
          ? app.query(r)
          : Promise.resolve({
              code: 1,
              log: `abci_query ${JSON.stringify(r.path)}: this application serves no queries`,
              key: new Uint8Array(),
              value: new Uint8Array(),
              height: Math.max(r.height, 0),
            }),
      toProto.queryResponse,
    ),
  };
  server.addService(lenientDefinition(ApplicationService), handlers);
  const closeAdmissions = opts.mempool
    ? addMempoolService(server, opts.mempool, logger, txTraces, opts.admissions)
    : () => {};
  if (opts.dev) addDevChainService(server, opts.dev, logger);
  const health = new HealthStatus();
  health.addTo(server);

  const credentials = opts.credentials ?? grpc.ServerCredentials.createInsecure();
  const port = await new Promise<number>((resolve, reject) => {
    server.bindAsync(address, credentials, (err, p) => {
      if (err) reject(new Error(`ABCI gRPC server: cannot listen on ${address}: ${err.message}`));
      else resolve(p);
    });
  });
  health.set('', ServingStatus.SERVING);
  health.set(ABCI_SERVICE_NAME, ServingStatus.SERVING);
  if (opts.mempool) health.set(MEMPOOL_SERVICE_NAME, ServingStatus.SERVING);
  if (opts.dev) health.set(DEV_CHAIN_SERVICE_NAME, ServingStatus.SERVING);
  const served = [
    ABCI_SERVICE_NAME,
    ...(opts.mempool ? [MEMPOOL_SERVICE_NAME] : []),
    ...(opts.dev ? [DEV_CHAIN_SERVICE_NAME] : []),
  ];
  const host = address.slice(0, address.lastIndexOf(':'));
  const bound = `${host}:${port}`;
  logger.info({ address: bound }, 'ABCI gRPC server listening');

  let closing: Promise<void> | null = null;
  return {
    address: bound,
    port,
    health,
    close(graceMs = 5_000) {
      // Admission streams never end on their own: end them, or the shutdown waits the whole grace.
      if (closing === null) closeAdmissions();
      closing ??= shutdownGracefully(server, health, served, graceMs);
      return closing;
    },
  };
}
