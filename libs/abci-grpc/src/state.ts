// noded.state.v1.StateReader (proto/noded/state/v1/state.proto): the state-store's reads over gRPC.
// serveStateReader() answers them from any EthChain (the state-store's Executor opened on its copy of
// application.db); StateReaderChain is the EthChain an rpc-edge builds its JSON-RPC server on.
//
// Arguments and results travel as tagged JSON (encodeTagged/decodeTagged). The server checks each
// request against the method's signature before the read runs: bytes that are not a ReadRequest, an
// unknown method, arguments that do not parse or do not fit get INVALID_ARGUMENT naming what is wrong,
// and the server keeps serving. A ChainError of the read (a revert, a pruned height) is an answer:
// FAILED_PRECONDITION with its JSON-RPC code and data in trailers, rebuilt as the same ChainError on
// the client, so the edge answers exactly what the node would.
//
// Read-your-writes: a request's min_height that the replica has not applied is waited for (its
// StateSource.waitFor, up to readWaitMs, when at most MAX_WAIT_LEAD ahead); past that it is
// UNAVAILABLE "header not found: ..." with the replica's height in the noded-state-height trailer,
// which the client raises as StateStoreBehindError.
import * as grpc from '@grpc/grpc-js';
import {
  type ChainHead,
  type HeadRequest,
  Method,
  type ReadRequest,
  type ReadResponse,
  StateReaderService,
} from '@noded/proto/src/gen/noded/state/v1/state.js';
import { inSpan, type TraceBook, tracingEnabled } from '@noded/telemetry';
import { ChainError, type EthChain, type Logger, silentLogger } from '@noded/types';
import { DEFAULT_MAX_MESSAGE_BYTES, ERROR_CODE_TRAILER } from './constants.js';
import { HealthStatus, ServingStatus, shutdownGracefully } from './health.js';
import { lenientDefinition, UndecodableRequest } from './lenient.js';
import { traceParentOf, withTraceContext } from './trace.js';

export const STATE_READER_SERVICE_NAME = 'noded.state.v1.StateReader';
/** Trailers of a ChainError answer: its JSON-RPC code, and its data (hex) when it has some. */
export const CHAIN_ERROR_CODE_TRAILER = 'noded-chain-error-code';
export const CHAIN_ERROR_DATA_TRAILER = 'noded-chain-error-data';

// ------------------------------------------------------------------------------------ tagged JSON

const DECIMAL = /^-?(0|[1-9]\d*)$/;

/** JSON with bigints ({"$n":"12"}), absent values ({"$u":1}), bytes ({"$b":"0x.."}), maps ({"$m":[[k,v]]}). */
export function encodeTagged(v: unknown): string {
  return JSON.stringify(v, function (this: Record<string, unknown>, k, x: unknown) {
    const raw = this[k]; // before toJSON (a Buffer's would turn it into {type, data})
    if (raw instanceof Uint8Array) return { $b: `0x${Buffer.from(raw).toString('hex')}` };
    if (typeof x === 'bigint') return { $n: x.toString() };
    if (x === undefined) return { $u: 1 };
    if (x instanceof Map) return { $m: [...x.entries()] };
    return x;
  });
}

/** The inverse of encodeTagged; throws an Error naming what does not parse. */
export function decodeTagged(s: string): unknown {
  return JSON.parse(s, (_k, x: unknown) => {
    if (x === null || typeof x !== 'object' || Array.isArray(x)) return x;
    const o = x as Record<string, unknown>;
    const keys = Object.keys(o);
    if (keys.length !== 1 || !keys[0]!.startsWith('$')) return x;
    const [tag] = keys as [string];
    const val = o[tag];
    if (tag === '$n') {
      if (typeof val !== 'string' || !DECIMAL.test(val))
        throw new Error(`{"$n": ...} must hold a decimal integer string, got ${JSON.stringify(val)}`);
      return BigInt(val);
    }
    if (tag === '$u') return undefined;
    if (tag === '$b') {
      if (typeof val !== 'string' || !/^0x([0-9a-fA-F]{2})*$/.test(val))
        throw new Error(`{"$b": ...} must hold 0x-prefixed hex bytes, got ${JSON.stringify(val)}`);
      return Uint8Array.from(Buffer.from(val.slice(2), 'hex'));
    }
    if (tag === '$m') {
      if (!Array.isArray(val) || !val.every((e) => Array.isArray(e) && e.length === 2))
        throw new Error('{"$m": ...} must hold an array of [key, value] pairs');
      return new Map(val as Array<[unknown, unknown]>);
    }
    throw new Error(`unknown tag ${JSON.stringify(tag)}`);
  });
}

// ------------------------------------------------------------------------------------ signatures

type ArgKind = 'height' | 'heightOrPending' | 'hex' | 'hexes' | 'object' | 'object?' | 'count' | 'numbers?';

/** The EthChain reads the contract carries, with their arguments' kinds in order. */
export const READS = {
  getBlockByNumber: { method: Method.METHOD_GET_BLOCK_BY_NUMBER, args: ['height'] },
  getBlockByHash: { method: Method.METHOD_GET_BLOCK_BY_HASH, args: ['hex'] },
  getBlockTransactions: { method: Method.METHOD_GET_BLOCK_TRANSACTIONS, args: ['height'] },
  getBlockReceipts: { method: Method.METHOD_GET_BLOCK_RECEIPTS, args: ['height'] },
  getTransaction: { method: Method.METHOD_GET_TRANSACTION, args: ['hex'] },
  getReceipt: { method: Method.METHOD_GET_RECEIPT, args: ['hex'] },
  getLogs: { method: Method.METHOD_GET_LOGS, args: ['object'] },
  getBalance: { method: Method.METHOD_GET_BALANCE, args: ['hex', 'height'] },
  getNonce: { method: Method.METHOD_GET_NONCE, args: ['hex', 'heightOrPending'] },
  getCode: { method: Method.METHOD_GET_CODE, args: ['hex', 'height'] },
  getStorageAt: { method: Method.METHOD_GET_STORAGE_AT, args: ['hex', 'hex', 'height'] },
  getProof: { method: Method.METHOD_GET_PROOF, args: ['hex', 'hexes', 'height'] },
  call: { method: Method.METHOD_CALL, args: ['object', 'height', 'object?', 'object'] },
  estimateGas: { method: Method.METHOD_ESTIMATE_GAS, args: ['object', 'height', 'object?', 'object'] },
  createAccessList: { method: Method.METHOD_CREATE_ACCESS_LIST, args: ['object', 'height', 'object'] },
  feeHistory: { method: Method.METHOD_FEE_HISTORY, args: ['count', 'height', 'numbers?'] },
  traceTransaction: { method: Method.METHOD_TRACE_TRANSACTION, args: ['hex', 'object'] },
  traceCall: { method: Method.METHOD_TRACE_CALL, args: ['object', 'height', 'object'] },
  traceBlock: { method: Method.METHOD_TRACE_BLOCK, args: ['height', 'object'] },
} as const satisfies Record<string, { method: Method; args: readonly ArgKind[] }>;

export type StateRead = keyof typeof READS;
const BY_METHOD = new Map<number, StateRead>(
  Object.entries(READS).map(([name, r]) => [r.method, name as StateRead]),
);

const HEX = /^0x[0-9a-fA-F]*$/;
const isPlainObject = (v: unknown) => v !== null && typeof v === 'object' && !Array.isArray(v);

function kindProblem(kind: ArgKind, v: unknown): string | undefined {
  const got = () =>
    v === undefined ? 'nothing' : typeof v === 'bigint' ? `${v}` : `${typeof v} ${JSON.stringify(v)}`;
  switch (kind) {
    case 'height':
      return typeof v === 'bigint' && v >= 0n
        ? undefined
        : `must be a height ({"$n":"<decimal>"}), got ${got()}`;
    case 'heightOrPending':
      return v === 'pending' || (typeof v === 'bigint' && v >= 0n)
        ? undefined
        : `must be a height ({"$n":"<decimal>"}) or "pending", got ${got()}`;
    case 'hex':
      return typeof v === 'string' && HEX.test(v)
        ? undefined
        : `must be a 0x-prefixed hex string, got ${got()}`;
    case 'hexes':
      return Array.isArray(v) && v.every((x) => typeof x === 'string' && HEX.test(x))
        ? undefined
        : `must be an array of 0x-prefixed hex strings, got ${got()}`;
    case 'object':
      return isPlainObject(v) ? undefined : `must be an object, got ${got()}`;
    case 'object?':
      return v === undefined || isPlainObject(v) ? undefined : `must be an object or {"$u":1}, got ${got()}`;
    case 'count':
      return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0
        ? undefined
        : `must be a non-negative integer, got ${got()}`;
    case 'numbers?':
      return v === undefined || (Array.isArray(v) && v.every((x) => typeof x === 'number'))
        ? undefined
        : `must be an array of numbers or {"$u":1}, got ${got()}`;
  }
}

/** A ReadRequest as the server checks it: the read and its arguments, or the problem named. */
export function checkReadRequest(req: ReadRequest): { read: StateRead; args: unknown[] } {
  const read = BY_METHOD.get(req.method);
  if (read === undefined) throw new StateRequestError(`ReadRequest.method: unknown method ${req.method}`);
  let args: unknown;
  try {
    args = decodeTagged(req.argsJson);
  } catch (err) {
    throw new StateRequestError(`ReadRequest.args_json: not tagged JSON: ${(err as Error).message}`);
  }
  const kinds = READS[read].args as readonly ArgKind[];
  if (!Array.isArray(args)) throw new StateRequestError('ReadRequest.args_json: must be a JSON array');
  if (args.length !== kinds.length) {
    throw new StateRequestError(
      `ReadRequest.args_json: ${read} takes ${kinds.length} argument(s), got ${args.length}`,
    );
  }
  const list = Array.from({ length: kinds.length }, (_, i) => args[i] as unknown);
  kinds.forEach((k, i) => {
    const problem = kindProblem(k, list[i]);
    if (problem !== undefined)
      throw new StateRequestError(`ReadRequest.args_json[${i}] (${read}): ${problem}`);
  });
  return { read, args: list };
}

export class StateRequestError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'StateRequestError';
  }
}

// ------------------------------------------------------------------------------------ server

/** The chain a state-store serves: an EthChain and its consensus chain id. */
export interface StateSource {
  chain: EthChain;
  chainId: string;
  /** Runs a read (the replica holds its writes back while reads run); default: runs it. */
  gate?: <T>(read: () => Promise<T>) => Promise<T>;
  /**
   * Read-your-writes: resolves true once `chain.latestHeight()` is at `height` or above, false
   * after `ms` without it. None: a request for a height not applied yet is refused at once.
   */
  waitFor?: (height: bigint, ms: number) => Promise<boolean>;
}

/** How long a replica waits for a request's min_height unless told otherwise (ms). */
export const DEFAULT_READ_WAIT_MS = 1_000;
/**
 * How far ahead of the replica a min_height may be and still be waited for: further, the replica is
 * catching up (a restart, a new replica) and would not get there within the wait, so it says so at
 * once and the edge asks another state-store without stalling.
 */
export const MAX_WAIT_LEAD = 64n;
/** Trailer of a min_height refusal: the height the replica is at (decimal). */
export const STATE_HEIGHT_TRAILER = 'noded-state-height';

export interface StateReaderServer {
  readonly address: string;
  readonly port: number;
  readonly health: HealthStatus;
  close(graceMs?: number): Promise<void>;
}

function headOf(src: StateSource): ChainHead {
  const c = src.chain;
  return {
    chainId: src.chainId,
    evmChainId: c.chainId(),
    latestHeight: c.latestHeight(),
    oldestStateHeight: c.oldestStateHeight(),
    nextBaseFee: c.nextBaseFee().toString(),
    suggestedTip: c.suggestedTip().toString(),
  };
}

/** The block number an answer names (a receipt's, a mined transaction's), if it names one. */
function blockNumberOf(v: unknown): number | undefined {
  if (v === null || typeof v !== 'object') return undefined;
  const n = (v as { blockNumber?: unknown }).blockNumber;
  if (typeof n === 'bigint' || typeof n === 'number') return Number(n);
  if (typeof n === 'string' && /^(0x[0-9a-fA-F]+|\d+)$/.test(n)) return Number(n);
  return undefined;
}

/** A request's min_height the replica did not reach in time: its UNAVAILABLE answer. */
class Behind extends Error {
  constructor(readonly answer: Partial<grpc.StatusObject>) {
    super(answer.details);
  }
}

/** Serves `src` as noded.state.v1.StateReader on `address` ("host:port"; port 0 picks one). */
export async function serveStateReader(
  src: StateSource,
  address: string,
  opts: {
    credentials?: grpc.ServerCredentials;
    logger?: Logger;
    maxMessageBytes?: number;
    /**
     * With tracing on: the span context of each applied height (String(height)); a read whose
     * answer is in a block (a receipt, a transaction) links its span to that block's apply.
     */
    appliedTraces?: TraceBook;
    /** How long a request waits for its min_height (ms; default DEFAULT_READ_WAIT_MS). */
    readWaitMs?: number;
  } = {},
): Promise<StateReaderServer> {
  const logger = opts.logger ?? silentLogger;
  const max = opts.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES;
  const gate = src.gate ?? (<T>(read: () => Promise<T>) => read());
  const waitMs = opts.readWaitMs ?? DEFAULT_READ_WAIT_MS;
  /**
   * Read-your-writes: undefined once the replica holds `minHeight` (at once, or after waiting up to
   * waitMs for its follower); otherwise the UNAVAILABLE answer naming the height it is at.
   */
  const reach = async (minHeight: bigint): Promise<Behind | undefined> => {
    if (src.chain.latestHeight() >= minHeight) return undefined;
    const started = Date.now();
    const near = minHeight - src.chain.latestHeight() <= MAX_WAIT_LEAD;
    if (near && src.waitFor !== undefined && waitMs > 0 && (await src.waitFor(minHeight, waitMs)))
      return undefined;
    const at = src.chain.latestHeight();
    const metadata = new grpc.Metadata();
    metadata.set(STATE_HEIGHT_TRAILER, String(at));
    return new Behind({
      code: grpc.status.UNAVAILABLE,
      details: `header not found: height ${minHeight} is not applied on this state-store yet (it is at ${at} after waiting ${Date.now() - started} ms${near ? '' : `: more than ${MAX_WAIT_LEAD} heights behind, not waited for`})`,
      metadata,
    });
  };
  const server = new grpc.Server({
    'grpc.max_receive_message_length': max,
    'grpc.max_send_message_length': max,
  });
  const def = lenientDefinition(StateReaderService);
  const invalid = (cb: grpc.sendUnaryData<unknown>, rpc: string, message: string) =>
    cb({ code: grpc.status.INVALID_ARGUMENT, details: `${STATE_READER_SERVICE_NAME}/${rpc}: ${message}` });
  server.addService(def, {
    head: (call: grpc.ServerUnaryCall<unknown, unknown>, cb: grpc.sendUnaryData<unknown>) => {
      if (call.request instanceof UndecodableRequest)
        return invalid(
          cb,
          'Head',
          `the request is not a valid noded.state.v1.HeadRequest: ${call.request.reason}`,
        );
      reach((call.request as HeadRequest).minHeight ?? 0n).then((behind) =>
        behind ? cb(behind.answer) : cb(null, headOf(src)),
      );
    },
    read: (call: grpc.ServerUnaryCall<unknown, unknown>, cb: grpc.sendUnaryData<unknown>) => {
      if (call.request instanceof UndecodableRequest)
        return invalid(
          cb,
          'Read',
          `the request is not a valid noded.state.v1.ReadRequest: ${call.request.reason}`,
        );
      let checked: { read: StateRead; args: unknown[] };
      try {
        checked = checkReadRequest(call.request as ReadRequest);
      } catch (err) {
        return invalid(cb, 'Read', (err as Error).message);
      }
      const fn = (src.chain as unknown as Record<string, (...a: unknown[]) => Promise<unknown>>)[
        checked.read
      ]!;
      inSpan(
        `Read ${checked.read}`,
        {
          kind: 'server',
          parent: traceParentOf(call.metadata),
          attributes: { 'rpc.system': 'grpc', 'rpc.method': 'Read', 'noded.read': checked.read },
        },
        async (span) => {
          const behind = await reach((call.request as ReadRequest).minHeight ?? 0n);
          if (behind) throw behind;
          const v = await gate(() => fn.apply(src.chain, checked.args));
          const height = tracingEnabled() ? blockNumberOf(v) : undefined;
          if (height !== undefined) {
            span.setAttribute('noded.height', height);
            const applied = opts.appliedTraces?.get(String(height));
            if (applied !== undefined) span.addLinks([applied]);
          }
          return v;
        },
      ).then(
        (v) => {
          let res: ReadResponse;
          try {
            res = { head: headOf(src), resultJson: encodeTagged(v) };
          } catch (err) {
            cb({
              code: grpc.status.INTERNAL,
              details: `${checked.read}: result not encodable: ${(err as Error).message}`,
            });
            return;
          }
          cb(null, res);
        },
        (err: unknown) => {
          if (err instanceof Behind) {
            cb(err.answer);
            return;
          }
          const metadata = new grpc.Metadata();
          if (err instanceof ChainError) {
            metadata.set(CHAIN_ERROR_CODE_TRAILER, String(err.code));
            if (typeof err.data === 'string') metadata.set(CHAIN_ERROR_DATA_TRAILER, err.data);
            cb({ code: grpc.status.FAILED_PRECONDITION, details: err.message, metadata });
            return;
          }
          const message = err instanceof Error ? err.message : String(err);
          const code = (err as { code?: unknown } | null)?.code;
          if (typeof code === 'string' || typeof code === 'number')
            metadata.set(ERROR_CODE_TRAILER, String(code));
          logger.error({ read: checked.read, err: message }, 'state read failed');
          cb({ code: grpc.status.INTERNAL, details: `${checked.read}: ${message}`, metadata });
        },
      );
    },
  });
  const health = new HealthStatus();
  health.addTo(server);
  const credentials = opts.credentials ?? grpc.ServerCredentials.createInsecure();
  const port = await new Promise<number>((resolve, reject) => {
    server.bindAsync(address, credentials, (err, p) => {
      if (err) reject(new Error(`state-store gRPC server: cannot listen on ${address}: ${err.message}`));
      else resolve(p);
    });
  });
  health.set('', ServingStatus.SERVING);
  health.set(STATE_READER_SERVICE_NAME, ServingStatus.SERVING);
  const bound = `${address.slice(0, address.lastIndexOf(':'))}:${port}`;
  let closing: Promise<void> | null = null;
  return {
    address: bound,
    port,
    health,
    close(graceMs = 5_000) {
      closing ??= shutdownGracefully(server, health, [STATE_READER_SERVICE_NAME], graceMs);
      return closing;
    },
  };
}

// ------------------------------------------------------------------------------------ client

/** The state-store's position as the edge keeps it. */
export interface StateHead {
  chainId: string;
  evmChainId: bigint;
  latestHeight: bigint;
  oldestStateHeight: bigint;
  nextBaseFee: bigint;
  suggestedTip: bigint;
}

function headFrom(h: ChainHead): StateHead {
  return {
    chainId: h.chainId,
    evmChainId: h.evmChainId,
    latestHeight: h.latestHeight,
    oldestStateHeight: h.oldestStateHeight,
    nextBaseFee: BigInt(h.nextBaseFee || '0'),
    suggestedTip: BigInt(h.suggestedTip || '0'),
  };
}

/** A client of one state-store: Head and the reads, with deadlines; errors name the address. */
/**
 * The state-store did not answer (unreachable, or past the deadline). Still a ChainError -32000 for
 * the JSON-RPC; the REST API answers it 503.
 */
export class StateStoreUnavailableError extends ChainError {
  readonly unavailable = true;
  constructor(message: string) {
    super(-32000, message);
    this.name = 'StateStoreUnavailableError';
  }
}

/**
 * The state-store answered that it has not applied the height asked for (a request's min_height)
 * within its wait: still the JSON-RPC's -32000 "header not found", the REST API's 503.
 */
export class StateStoreBehindError extends StateStoreUnavailableError {
  constructor(
    message: string,
    /** The height the state-store is at. */
    readonly at: bigint,
  ) {
    super(message);
    this.name = 'StateStoreBehindError';
  }
}

/** What an edge reads the chain through: one state-store (StateReaderClient) or several (StateReaderFailover). */
export interface StateReader {
  /** The address of the state-store answering (the one in use). */
  readonly address: string;
  /** The replica's position; with minHeight, not before it has applied that height. */
  head(minHeight?: bigint): Promise<StateHead>;
  /** One read, run once the replica has applied minHeight; `onHead` sees the position that came with the answer. */
  read<T>(read: StateRead, args: unknown[], onHead?: (h: StateHead) => void, minHeight?: bigint): Promise<T>;
  waitReady(timeoutMs: number): Promise<void>;
  close(): void;
}

export class StateReaderClient implements StateReader {
  private readonly client: grpc.Client;
  private closed = false;

  constructor(
    readonly address: string,
    private readonly opts: {
      credentials?: grpc.ChannelCredentials;
      deadlineMs?: number;
      maxMessageBytes?: number;
    } = {},
  ) {
    const max = opts.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES;
    this.client = new grpc.Client(address, opts.credentials ?? grpc.credentials.createInsecure(), {
      'grpc.max_receive_message_length': max,
      'grpc.max_send_message_length': max,
      // A restarted state-store is dialled again within 2 s (grpc-js backs off up to 120 s): an
      // edge's failover returns to it that soon.
      'grpc.max_reconnect_backoff_ms': 2_000,
    });
  }

  waitReady(timeoutMs: number): Promise<void> {
    return new Promise((resolve, reject) =>
      this.client.waitForReady(Date.now() + timeoutMs, (err) =>
        err
          ? reject(
              new Error(
                `state-store at ${this.address} is unreachable: no connection within ${timeoutMs} ms`,
              ),
            )
          : resolve(),
      ),
    );
  }

  close(): void {
    this.closed = true;
    this.client.close();
  }

  private unary<Req, Res>(
    def: { path: string; requestSerialize: (r: Req) => Buffer; responseDeserialize: (b: Buffer) => Res },
    req: Req,
  ): Promise<Res> {
    if (this.closed) return Promise.reject(new Error(`state-store client for ${this.address} is closed`));
    return new Promise((resolve, reject) => {
      this.client.makeUnaryRequest(
        def.path,
        def.requestSerialize,
        def.responseDeserialize,
        req,
        withTraceContext(new grpc.Metadata()),
        { deadline: Date.now() + (this.opts.deadlineMs ?? 30_000) },
        (err, res) => {
          if (!err) return resolve(res as Res);
          if (err.code === grpc.status.FAILED_PRECONDITION) {
            const code = Number(err.metadata.get(CHAIN_ERROR_CODE_TRAILER)[0] ?? -32000);
            const data = err.metadata.get(CHAIN_ERROR_DATA_TRAILER)[0];
            return reject(
              new ChainError(
                code,
                err.details,
                typeof data === 'string' ? (data as `0x${string}`) : undefined,
              ),
            );
          }
          const at = err.metadata?.get(STATE_HEIGHT_TRAILER)[0];
          if (err.code === grpc.status.UNAVAILABLE && typeof at === 'string' && /^\d+$/.test(at)) {
            return reject(
              new StateStoreBehindError(`${err.details} (state-store ${this.address})`, BigInt(at)),
            );
          }
          if (err.code === grpc.status.UNAVAILABLE || err.code === grpc.status.DEADLINE_EXCEEDED) {
            return reject(
              new StateStoreUnavailableError(`state-store at ${this.address} is unavailable: ${err.details}`),
            );
          }
          reject(new Error(`state-store at ${this.address}: ${err.details || err.message}`));
        },
      );
    });
  }

  async head(minHeight = 0n): Promise<StateHead> {
    return headFrom(
      await this.unary(StateReaderService.head, { minHeight: minHeight < 0n ? 0n : minHeight }),
    );
  }

  /** One read; `onHead` sees the replica's position that came with the answer. */
  async read<T>(
    read: StateRead,
    args: unknown[],
    onHead?: (h: StateHead) => void,
    minHeight = 0n,
  ): Promise<T> {
    const res = await this.unary(StateReaderService.read, {
      method: READS[read].method,
      argsJson: encodeTagged(args),
      minHeight: minHeight < 0n ? 0n : minHeight,
    });
    if (res.head !== undefined) onHead?.(headFrom(res.head));
    return decodeTagged(res.resultJson) as T;
  }
}
