// noded.mempool.v1.Mempool (proto/noded/mempool/v1/mempool.proto): what an rpc-edge needs of the
// executor's mempool: eth_sendRawTransaction's admission, the 'pending' nonce, the waiting
// transactions. addMempoolService() puts it on the executor's gRPC server (serveApplication's
// `mempool` option); GrpcMempool is the edge's client. Requests are checked at the boundary: an
// address that is not 20 bytes, a hash that is not 32 or empty bytes to send get INVALID_ARGUMENT
// naming the field, and undecodable bytes are refused the same way; the server keeps serving. A
// refused transaction is FAILED_PRECONDITION with its JSON-RPC code in a trailer (as StateReader).
import * as grpc from '@grpc/grpc-js';
import { MempoolService, type PoolTx } from '@noded/proto/src/gen/noded/mempool/v1/mempool.js';
import { inSpan, type TraceBook, type TraceSpan, tracingEnabled } from '@noded/telemetry';
import { ChainError, type Hex, type Logger } from '@noded/types';
import { type AdmissionServerOptions, admissionHandler } from './admissions.js';
import { DEFAULT_MAX_MESSAGE_BYTES } from './constants.js';
import { lenientDefinition, UndecodableRequest } from './lenient.js';
import { CHAIN_ERROR_CODE_TRAILER, CHAIN_ERROR_DATA_TRAILER } from './state.js';
import { traceParentOf, withTraceContext } from './trace.js';

export const MEMPOOL_SERVICE_NAME = 'noded.mempool.v1.Mempool';

/** A waiting transaction: raw bytes, sender (20 bytes), hash (32 bytes), nonce. */
export interface PoolTxRecord {
  raw: Uint8Array;
  sender: Uint8Array;
  hash: Uint8Array;
  nonce: bigint;
}

/** What the executor answers the contract from (the EVM Executor implements it). */
export interface MempoolSource {
  /** Throws a ChainError (code, message) when the transaction is refused. */
  sendRawTransaction(raw: Uint8Array): Promise<Hex>;
  getNonce(address: Hex, height: 'pending'): Promise<bigint>;
  pendingPool(): { pending: PoolTxRecord[]; queued: PoolTxRecord[] };
  pendingTx(hash: Hex): PoolTxRecord | undefined;
  /** unconfirmed_txs: up to `limit` raw transactions, pending first, and the pool's totals. */
  unconfirmedTxs(limit: number): { txs: Uint8Array[]; total: number; totalBytes: number; pending: number };
  /** Whether a transaction in the pool is executable now (not only queued behind a nonce gap). */
  hasExecutableTxs(): boolean;
  /** unsafe_flush_mempool: drops every transaction in the pool (the node's own flush). */
  flushMempool(): void;
  /** Every admission as it happens (StreamAdmitted); returns the unsubscriber. */
  onTxAdmitted(listener: (raw: Uint8Array, hash: Hex) => void): () => void;
  /** Every dev operation queued for the next proposal (StreamAdmitted's dev_queued); returns the unsubscriber. */
  onDevQueued?(listener: () => void): () => void;
}

/** The largest `limit` UnconfirmedTxs answers with (CometBFT's RPC pages by 100 at most). */
const MAX_UNCONFIRMED_LIMIT = 10_000;

const hex = (b: Uint8Array): Hex => `0x${Buffer.from(b).toString('hex')}`;

function checkLength(field: string, b: Uint8Array | undefined, n: number): string | undefined {
  const len = b?.length ?? 0;
  return len === n ? undefined : `${field}: must be ${n} bytes, got ${len}`;
}

/**
 * Adds the Mempool service, answered from `src`, to `server`. With tracing on, each call is a span
 * (SendRawTransaction's is "CheckTx") and an admitted transaction's CheckTx context is kept in
 * `txTraces` by hash, for the spans of the block that includes it to link to. Returns the closer of
 * the admission streams (each ended with UNAVAILABLE), for the server's shutdown.
 */
export function addMempoolService(
  server: grpc.Server,
  src: MempoolSource,
  logger: Logger,
  txTraces?: TraceBook,
  admissions: AdmissionServerOptions = {},
): () => void {
  const streams = admissionHandler(src, logger, admissions);
  const def = lenientDefinition(MempoolService);
  const handler =
    <Req>(
      rpc: string,
      message: string,
      run: (req: Req, span: TraceSpan) => Promise<unknown> | unknown,
      check?: (req: Req) => string | undefined,
    ) =>
    (call: grpc.ServerUnaryCall<unknown, unknown>, cb: grpc.sendUnaryData<unknown>) => {
      const at = `${MEMPOOL_SERVICE_NAME}/${rpc}`;
      const refused = requestRefusal(at, message, call.request, check);
      if (refused !== undefined) {
        cb(refused);
        return;
      }
      inSpan(
        rpc === 'SendRawTransaction' ? 'CheckTx' : rpc,
        {
          kind: 'server',
          parent: traceParentOf(call.metadata),
          attributes: { 'rpc.system': 'grpc', 'rpc.method': rpc },
        },
        async (span) => run(call.request as Req, span),
      ).then(
        (res) => cb(null, res),
        (err: unknown) =>
          cb(executorFailure(err, at, (msg) => logger.error({ rpc, err: msg }, 'mempool call failed'))),
      );
    };
  server.addService(def, {
    pendingNonce: handler<{ address: Uint8Array }>(
      'PendingNonce',
      'noded.mempool.v1.PendingNonceRequest',
      async (r) => ({ nonce: await src.getNonce(hex(r.address), 'pending') }),
      (r) => checkLength('PendingNonceRequest.address', r.address, 20),
    ),
    pendingTransactions: handler('PendingTransactions', 'noded.mempool.v1.PendingTransactionsRequest', () =>
      src.pendingPool(),
    ),
    sendRawTransaction: handler<{ raw: Uint8Array }>(
      'SendRawTransaction',
      'noded.mempool.v1.SendRawTransactionRequest',
      async (r, span) => {
        const hash = await src.sendRawTransaction(r.raw);
        if (tracingEnabled()) {
          span.setAttribute('noded.tx.hash', hash);
          txTraces?.remember(hash.slice(2).toLowerCase(), span.context());
        }
        return { hash: Buffer.from(hash.slice(2), 'hex') };
      },
      (r) => (r.raw.length === 0 ? 'SendRawTransactionRequest.raw: must not be empty' : undefined),
    ),
    pendingTransaction: handler<{ hash: Uint8Array }>(
      'PendingTransaction',
      'noded.mempool.v1.PendingTransactionRequest',
      (r) => ({ tx: src.pendingTx(hex(r.hash)) }),
      (r) => checkLength('PendingTransactionRequest.hash', r.hash, 32),
    ),
    unconfirmedTxs: handler<{ limit: number }>(
      'UnconfirmedTxs',
      'noded.mempool.v1.UnconfirmedTxsRequest',
      (r) => {
        const u = src.unconfirmedTxs(r.limit);
        return {
          txs: u.txs,
          total: BigInt(u.total),
          totalBytes: BigInt(u.totalBytes),
          pending: BigInt(u.pending),
        };
      },
      (r) =>
        r.limit > MAX_UNCONFIRMED_LIMIT
          ? `UnconfirmedTxsRequest.limit: must be at most ${MAX_UNCONFIRMED_LIMIT}, got ${r.limit}`
          : undefined,
    ),
    hasExecutable: handler('HasExecutable', 'noded.mempool.v1.HasExecutableRequest', () => ({
      executable: src.hasExecutableTxs(),
    })),
    flushMempool: handler('FlushMempool', 'noded.mempool.v1.FlushMempoolRequest', () => {
      src.flushMempool();
      logger.info({}, 'mempool flushed (unsafe_flush_mempool)');
      return {};
    }),
    streamAdmitted: streams.handle,
  });
  return streams.closeAll;
}

/**
 * INVALID_ARGUMENT naming `at` for a request that did not decode as `message`, or that `check`
 * finds a problem in; undefined for one to serve.
 */
export function requestRefusal<Req>(
  at: string,
  message: string,
  request: unknown,
  check?: (req: Req) => string | undefined,
): Partial<grpc.StatusObject> | undefined {
  if (request instanceof UndecodableRequest)
    return {
      code: grpc.status.INVALID_ARGUMENT,
      details: `${at}: the request is not a valid ${message}: ${request.reason}`,
    };
  const problem = check?.(request as Req);
  return problem === undefined
    ? undefined
    : { code: grpc.status.INVALID_ARGUMENT, details: `${at}: ${problem}` };
}

/**
 * The status a failed executor call answers: a ChainError (the executor refused) is
 * FAILED_PRECONDITION with its code (and data) in the trailers and its message; anything else is
 * INTERNAL naming `at`, after `report` was given its message (to log).
 */
export function executorFailure(
  err: unknown,
  at: string,
  report: (message: string) => void,
): Partial<grpc.StatusObject> {
  if (err instanceof ChainError) {
    const metadata = new grpc.Metadata();
    metadata.set(CHAIN_ERROR_CODE_TRAILER, String(err.code));
    if (typeof err.data === 'string') metadata.set(CHAIN_ERROR_DATA_TRAILER, err.data);
    return { code: grpc.status.FAILED_PRECONDITION, details: err.message, metadata };
  }
  const msg = err instanceof Error ? err.message : String(err);
  report(msg);
  return { code: grpc.status.INTERNAL, details: `${at}: ${msg}` };
}

/** A generated unary method definition (ts-proto's `…Service.method`). */
export interface UnaryDef<Req, Res> {
  path: string;
  requestSerialize: (r: Req) => Buffer;
  responseDeserialize: (b: Buffer) => Res;
}

/**
 * One unary call to an executor service (Mempool, DevChain): a refusal (FAILED_PRECONDITION) is the
 * executor's ChainError with the code of its trailer; any other failure a MempoolCallError that
 * names `what` (the service and its address).
 */
export function executorUnary<Req, Res>(
  client: grpc.Client,
  what: string,
  deadlineMs: number,
  def: UnaryDef<Req, Res>,
  req: Req,
): Promise<Res> {
  return new Promise((resolve, reject) =>
    client.makeUnaryRequest(
      def.path,
      def.requestSerialize,
      def.responseDeserialize,
      req,
      withTraceContext(new grpc.Metadata()),
      { deadline: Date.now() + deadlineMs },
      (err, res) => {
        if (!err) return resolve(res as Res);
        if (err.code === grpc.status.FAILED_PRECONDITION) {
          const code = Number(err.metadata.get(CHAIN_ERROR_CODE_TRAILER)[0] ?? -32000);
          const data = err.metadata.get(CHAIN_ERROR_DATA_TRAILER)[0];
          return reject(
            new ChainError(code, err.details, typeof data === 'string' ? (data as Hex) : undefined),
          );
        }
        reject(new MempoolCallError(`${what}: ${err.details || err.message}`, err.code));
      },
    ),
  );
}

/**
 * A failed call to the executor's Mempool or DevChain service that is not a refusal of the executor
 * (unreachable, timed out, UNIMPLEMENTED, ...).
 */
export class MempoolCallError extends ChainError {
  constructor(
    message: string,
    /** The gRPC status of the failed call. */
    readonly grpcStatus: grpc.status,
  ) {
    super(-32000, message);
  }
}

/** The edge's client of the executor's Mempool service. */
export class GrpcMempool {
  private readonly client: grpc.Client;

  constructor(
    readonly address: string,
    opts: { credentials?: grpc.ChannelCredentials; deadlineMs?: number; reprobeMs?: number } = {},
  ) {
    this.client = new grpc.Client(address, opts.credentials ?? grpc.credentials.createInsecure(), {
      'grpc.max_receive_message_length': DEFAULT_MAX_MESSAGE_BYTES,
    });
    this.deadlineMs = opts.deadlineMs ?? 10_000;
    this.reprobeMs = opts.reprobeMs ?? 60_000;
  }

  private readonly deadlineMs: number;
  /** How long an UNIMPLEMENTED HasExecutable is believed before the executor is asked again. */
  private readonly reprobeMs: number;

  close(): void {
    this.client.close();
  }

  private unary<Req, Res>(def: UnaryDef<Req, Res>, req: Req): Promise<Res> {
    return executorUnary(this.client, `executor mempool at ${this.address}`, this.deadlineMs, def, req);
  }

  /** eth_sendRawTransaction on the executor; a refusal is the executor's ChainError. */
  async sendRawTransaction(raw: Uint8Array): Promise<Hex> {
    const r = await this.unary(MempoolService.sendRawTransaction, { raw });
    if (r.hash.length !== 32)
      throw new ChainError(
        -32000,
        `executor mempool: invalid response: SendRawTransactionResponse.hash: must be 32 bytes, got ${r.hash.length}`,
      );
    return hex(r.hash);
  }

  async pendingNonce(address: Uint8Array): Promise<bigint> {
    return (await this.unary(MempoolService.pendingNonce, { address })).nonce;
  }

  async pendingTransactions(): Promise<{ pending: PoolTxRecord[]; queued: PoolTxRecord[] }> {
    const r = await this.unary(MempoolService.pendingTransactions, {});
    return { pending: r.pending.map(checked), queued: r.queued.map(checked) };
  }

  /** unconfirmed_txs on consensus' RPC: up to `limit` transactions and the pool's totals. */
  async unconfirmedTxs(
    limit: number,
  ): Promise<{ txs: Uint8Array[]; total: number; totalBytes: number; pending: number }> {
    const r = await this.unary(MempoolService.unconfirmedTxs, { limit });
    if (r.txs.length > limit || r.txs.some((t) => t.length === 0))
      throw new ChainError(
        -32000,
        `executor mempool: invalid response: UnconfirmedTxsResponse.txs: ${r.txs.length} transactions for a limit of ${limit}, or an empty one`,
      );
    return {
      txs: r.txs,
      total: Number(r.total),
      totalBytes: Number(r.totalBytes),
      pending: Number(r.pending),
    };
  }

  /** When the executor last answered HasExecutable UNIMPLEMENTED (a version before it), ms. */
  private noHasExecutableAt: number | undefined;

  /**
   * Whether the executor's pool holds an executable transaction (consensus, after each block). An
   * executor from before HasExecutable is asked UnconfirmedTxs(0) instead, and HasExecutable again
   * once `reprobeMs` has passed, so an executor upgraded behind the same address is used at its best.
   */
  async hasExecutable(): Promise<boolean> {
    const at = this.noHasExecutableAt;
    if (at === undefined || Date.now() - at >= this.reprobeMs) {
      try {
        const { executable } = await this.unary(MempoolService.hasExecutable, {});
        this.noHasExecutableAt = undefined;
        return executable;
      } catch (err) {
        if (!(err instanceof MempoolCallError && err.grpcStatus === grpc.status.UNIMPLEMENTED)) throw err;
        this.noHasExecutableAt = Date.now();
      }
    }
    return (await this.unconfirmedTxs(0)).pending > 0;
  }

  /** unsafe_flush_mempool on consensus' RPC: the executor drops every transaction in its pool. */
  async flushMempool(): Promise<void> {
    await this.unary(MempoolService.flushMempool, {});
  }

  async pendingTransaction(hash: Uint8Array): Promise<PoolTxRecord | undefined> {
    const r = await this.unary(MempoolService.pendingTransaction, { hash });
    return r.tx === undefined ? undefined : checked(r.tx);
  }
}

function checked(t: PoolTx): PoolTxRecord {
  const problem = checkLength('PoolTx.sender', t.sender, 20) ?? checkLength('PoolTx.hash', t.hash, 32);
  if (problem !== undefined || t.raw.length === 0)
    throw new Error(`executor mempool: invalid response: ${problem ?? 'PoolTx.raw: must not be empty'}`);
  return { raw: t.raw, sender: t.sender, hash: t.hash, nonce: t.nonce };
}
