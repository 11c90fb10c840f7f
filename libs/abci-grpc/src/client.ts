// GrpcApplication: the Application port (libs/types) served by a remote executor over
// noded.abci.v1.Application. The consensus runtime drives it exactly as the in-process executor.
// Every call has a deadline; every failure is an AbciClientError naming the executor's address, the
// call and what went wrong, and every response is checked (fromProto) before the runtime sees it.
//
// Calls fail fast when the executor is unreachable (gRPC's default, no waitForReady): the runtime
// stops on a failed finalizeBlock or commit, as CometBFT does when its ABCI connection fails, and
// its handshake replays the missing blocks after a restart. Use waitReady() at start to wait for an
// executor that is still coming up.
import * as grpc from '@grpc/grpc-js';
import { ApplicationService } from '@noded/proto/src/gen/noded/abci/v1/abci.js';
import { inSpan } from '@noded/telemetry';
import type {
  AppInfo,
  Application,
  AppQueryRequest,
  AppQueryResult,
  CheckTxResult,
  ExtendVoteRequest,
  FinalizeBlockRequest,
  FinalizeBlockResponse,
  InitChainRequest,
  InitChainResponse,
  PrepareProposalRequest,
  ProcessProposalRequest,
  VerifyVoteExtensionRequest,
} from '@noded/types';
import { type AbciMethod, DEFAULT_MAX_MESSAGE_BYTES, ERROR_CODE_TRAILER } from './constants.js';
import { AbciFieldError, type CheckTxKind, fromProto, toProto } from './convert.js';
import { withTraceContext } from './trace.js';

/**
 * Per-call deadlines (ms). Block execution and genesis can take long on a large block or state;
 * the rest answer from memory.
 */
export const DEFAULT_DEADLINES_MS: Readonly<Record<AbciMethod, number>> = {
  info: 10_000,
  initChain: 120_000,
  checkTx: 10_000,
  prepareProposal: 10_000,
  processProposal: 30_000,
  finalizeBlock: 120_000,
  commit: 120_000,
  extendVote: 10_000,
  verifyVoteExtension: 10_000,
  query: 10_000,
};

export type AbciClientErrorCode =
  /** No connection to the executor (gRPC UNAVAILABLE). */
  | 'UNREACHABLE'
  /** The executor did not answer within the call's deadline. */
  | 'TIMEOUT'
  /** The executor refused the request as malformed (INVALID_ARGUMENT). */
  | 'REFUSED'
  /** The application behind the executor failed the call (INTERNAL). */
  | 'APPLICATION'
  /** The executor's answer breaks a rule of the contract. */
  | 'INVALID_RESPONSE'
  /** Any other gRPC failure (UNIMPLEMENTED from an older executor, RESOURCE_EXHAUSTED, ...). */
  | 'RPC'
  /** The client was closed. */
  | 'CLOSED';

export class AbciClientError extends Error {
  constructor(
    readonly code: AbciClientErrorCode,
    /** The executor's gRPC address. */
    readonly address: string,
    /** The call, e.g. "finalizeBlock". */
    readonly method: AbciMethod | 'waitReady',
    message: string,
    /** The gRPC status of the failed call, when there was one. */
    readonly grpcStatus?: grpc.status,
    /** The application error's own code, from the executor's noded-error-code trailer. */
    readonly remoteCode?: string,
  ) {
    super(message);
    this.name = 'AbciClientError';
  }
}

export interface GrpcApplicationOptions {
  /** Default: insecure (plaintext); grpc.credentials.createSsl(...) for (mutual) TLS. */
  credentials?: grpc.ChannelCredentials;
  /** Overrides of DEFAULT_DEADLINES_MS. */
  deadlinesMs?: Partial<Record<AbciMethod, number>>;
  maxMessageBytes?: number;
}

export class GrpcApplication implements Application {
  private readonly client: grpc.Client;
  private readonly deadlines: Record<AbciMethod, number>;
  private closed = false;
  private readonly finalizeListeners = new Set<(height: number, ms: number) => void>();

  /** `address` is "host:port" of the executor's ABCI gRPC server. Connects lazily. */
  constructor(
    readonly address: string,
    opts: GrpcApplicationOptions = {},
  ) {
    const max = opts.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES;
    this.client = new grpc.Client(address, opts.credentials ?? grpc.credentials.createInsecure(), {
      'grpc.max_receive_message_length': max,
      'grpc.max_send_message_length': max,
    });
    this.deadlines = { ...DEFAULT_DEADLINES_MS, ...opts.deadlinesMs };
  }

  /** Resolves once connected; rejects (UNREACHABLE) when no connection is made within timeoutMs. */
  waitReady(timeoutMs: number): Promise<void> {
    if (this.closed) return Promise.reject(this.closedError('waitReady'));
    return new Promise((resolve, reject) => {
      this.client.waitForReady(Date.now() + timeoutMs, (err) => {
        if (!err) resolve();
        else
          reject(
            new AbciClientError(
              'UNREACHABLE',
              this.address,
              'waitReady',
              `executor at ${this.address} is unreachable: no connection within ${timeoutMs} ms (${err.message})`,
            ),
          );
      });
    });
  }

  /** Closes the channel; calls after this fail with CLOSED. */
  close(): void {
    this.closed = true;
    this.client.close();
  }

  info(): Promise<AppInfo> {
    return this.call('info', toProto.infoRequest(), fromProto.infoResponse);
  }

  initChain(req: InitChainRequest): Promise<InitChainResponse> {
    return this.call('initChain', toProto.initChainRequest(req), fromProto.initChainResponse);
  }

  checkTx(tx: Uint8Array, kind: CheckTxKind = 'new'): Promise<CheckTxResult> {
    return this.call('checkTx', toProto.checkTxRequest(tx, kind), fromProto.checkTxResponse);
  }

  prepareProposal(req: PrepareProposalRequest): Promise<Uint8Array[]> {
    return this.call(
      'prepareProposal',
      toProto.prepareProposalRequest(req),
      fromProto.prepareProposalResponse,
    );
  }

  processProposal(req: ProcessProposalRequest): Promise<boolean> {
    return this.call(
      'processProposal',
      toProto.processProposalRequest(req),
      fromProto.processProposalResponse,
    );
  }

  async finalizeBlock(req: FinalizeBlockRequest): Promise<FinalizeBlockResponse> {
    const t0 = performance.now();
    const res = await this.call(
      'finalizeBlock',
      toProto.finalizeBlockRequest(req),
      fromProto.finalizeBlockResponse,
    );
    const ms = performance.now() - t0;
    for (const listener of this.finalizeListeners) listener(req.height, ms);
    return res;
  }

  /**
   * Calls `listener` after each FinalizeBlock the executor answered (a failed call is not reported)
   * with the block's height and the call's duration in ms as consensus sees it: the round trip,
   * execution included (the consensus service's state_block_processing_time). Returns the unsubscribe.
   */
  onFinalizeBlock(listener: (height: number, ms: number) => void): () => void {
    this.finalizeListeners.add(listener);
    return () => {
      this.finalizeListeners.delete(listener);
    };
  }

  commit(): Promise<{ retainHeight: number }> {
    return this.call('commit', toProto.commitRequest(), fromProto.commitResponse);
  }

  extendVote(req: ExtendVoteRequest): Promise<Uint8Array> {
    return this.call('extendVote', toProto.extendVoteRequest(req), fromProto.extendVoteResponse);
  }

  verifyVoteExtension(req: VerifyVoteExtensionRequest): Promise<boolean> {
    return this.call(
      'verifyVoteExtension',
      toProto.verifyVoteExtensionRequest(req),
      fromProto.verifyVoteExtensionResponse,
    );
  }

  /** abci_query: the executor's queries of its committed state (QueryRequest). */
  query(req: AppQueryRequest): Promise<AppQueryResult> {
    return this.call('query', toProto.queryRequest(req), fromProto.queryResponse);
  }

  private call<M extends AbciMethod, Out>(
    method: M,
    request: Parameters<(typeof ApplicationService)[M]['requestSerialize']>[0],
    read: (res: ReturnType<(typeof ApplicationService)[M]['responseDeserialize']>) => Out,
  ): Promise<Out> {
    if (this.closed) return Promise.reject(this.closedError(method));
    const def = ApplicationService[method] as unknown as grpc.MethodDefinition<typeof request, never>;
    const deadlineMs = this.deadlines[method];
    const rpc = def.path.slice(def.path.lastIndexOf('/') + 1);
    // A client span per call (the executor's handler is its child); the consensus runtime calls
    // with no active span, so each proposal / FinalizeBlock starts a trace of its own.
    return inSpan(
      `abci ${rpc}`,
      {
        kind: 'client',
        attributes: { 'rpc.system': 'grpc', 'rpc.method': rpc, 'peer.address': this.address },
      },
      () => this.send(method, def, request, read, deadlineMs),
    );
  }

  private send<M extends AbciMethod, In, Out>(
    method: M,
    def: grpc.MethodDefinition<In, never>,
    request: In,
    read: (res: never) => Out,
    deadlineMs: number,
  ): Promise<Out> {
    return new Promise((resolve, reject) => {
      this.client.makeUnaryRequest(
        def.path,
        def.requestSerialize,
        def.responseDeserialize,
        request,
        withTraceContext(new grpc.Metadata()),
        { deadline: Date.now() + deadlineMs },
        (err, res) => {
          if (err) {
            reject(this.callError(method, err, deadlineMs));
            return;
          }
          try {
            resolve(read(res as never));
          } catch (e) {
            const why = e instanceof AbciFieldError ? e.message : String(e);
            reject(
              new AbciClientError(
                'INVALID_RESPONSE',
                this.address,
                method,
                `executor at ${this.address} sent an invalid ${method} response: ${why}`,
              ),
            );
          }
        },
      );
    });
  }

  private callError(method: AbciMethod, err: grpc.ServiceError, deadlineMs: number): AbciClientError {
    const at = `executor at ${this.address}`;
    const status = grpc.status[err.code] ?? String(err.code);
    const remote = err.metadata?.get(ERROR_CODE_TRAILER)[0];
    const remoteCode = remote === undefined ? undefined : String(remote);
    const make = (code: AbciClientErrorCode, message: string) =>
      new AbciClientError(code, this.address, method, message, err.code, remoteCode);
    switch (err.code) {
      case grpc.status.UNAVAILABLE:
        return make('UNREACHABLE', `${at} is unreachable: ${method} failed (UNAVAILABLE: ${err.details})`);
      case grpc.status.DEADLINE_EXCEEDED:
        return make('TIMEOUT', `${at} did not answer ${method} within ${deadlineMs} ms (${err.details})`);
      case grpc.status.INVALID_ARGUMENT:
        return make('REFUSED', `${at} refused ${method} as malformed: ${err.details}`);
      case grpc.status.INTERNAL:
        return make('APPLICATION', `${at} failed ${method}: ${err.details}`);
      case grpc.status.CANCELLED:
        if (this.closed) return this.closedError(method);
        return make('RPC', `${at}: ${method} failed (${status}: ${err.details})`);
      default:
        return make('RPC', `${at}: ${method} failed (${status}: ${err.details})`);
    }
  }

  private closedError(method: AbciMethod | 'waitReady'): AbciClientError {
    return new AbciClientError(
      'CLOSED',
      this.address,
      method,
      `the client of the executor at ${this.address} is closed (${method})`,
    );
  }
}
