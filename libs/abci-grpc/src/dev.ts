// noded.dev.v1.DevChain (proto/noded/dev/v1/dev.proto): the dev-chain controls of a chain-local
// executor for rpc-edges: the state setters, the impersonated senders and their transactions.
// addDevChainService() puts it on the executor's gRPC server (serveApplication's `dev` option);
// GrpcDevChain is the edge's client, whose methods are the EthChain dev calls (devSetState, ...),
// so that libs/rpc's DevState serves the anvil_/hardhat_ methods over it exactly as in `noded start`.
// Requests are checked at the boundary (INVALID_ARGUMENT naming the field); the executor's own
// refusals (no dev controls, a sender not impersonated, a nonce gap, ...) are FAILED_PRECONDITION
// with their JSON-RPC code in a trailer, as the Mempool service answers them.
import * as grpc from '@grpc/grpc-js';
import {
  DevChainService,
  type ImpersonateRequest,
  type SendImpersonatedRequest,
  type SetStateRequest,
} from '@noded/proto/src/gen/noded/dev/v1/dev.js';
import type { DevStateChange, Hex, Logger } from '@noded/types';
import { ChainError } from '@noded/types';
import { DEFAULT_MAX_MESSAGE_BYTES } from './constants.js';
import { lenientDefinition } from './lenient.js';
import { executorFailure, executorUnary, requestRefusal, type UnaryDef } from './mempool.js';

export const DEV_CHAIN_SERVICE_NAME = 'noded.dev.v1.DevChain';

/** What the executor answers the contract from (the EVM Executor implements it). */
export interface DevChainSource {
  /** Resolves with the committed height whose block applied the change. */
  devSetState(change: DevStateChange): Promise<bigint>;
  /** Resolves with whether `address` was impersonated before. */
  devImpersonate(address: Hex, on: boolean): Promise<boolean>;
  devImpersonatedAccounts(): Promise<Hex[]>;
  /** Resolves with the transaction's hash once queued. */
  devSendImpersonated(sender: Hex, raw: Uint8Array): Promise<Hex>;
}

const hex = (b: Uint8Array): Hex => `0x${Buffer.from(b).toString('hex')}`;
const bytes = (h: string): Uint8Array => Uint8Array.from(Buffer.from(h.slice(2), 'hex'));

function checkLength(field: string, b: Uint8Array | undefined, n: number): string | undefined {
  const len = b?.length ?? 0;
  return len === n ? undefined : `${field}: must be ${n} bytes, got ${len}`;
}

/** The change a SetStateRequest carries, or the problem with it. */
function changeOf(r: SetStateRequest): DevStateChange | string {
  const bad = checkLength('SetStateRequest.address', r.address, 20);
  if (bad !== undefined) return bad;
  const address = hex(r.address);
  const set = [r.balance, r.nonce, r.code, r.storage].filter((v) => v !== undefined).length;
  if (set !== 1) return `SetStateRequest.change: exactly one of balance, nonce, code, storage, got ${set}`;
  if (r.balance !== undefined) {
    if (r.balance.length > 32) return `SetStateRequest.balance: at most 32 bytes, got ${r.balance.length}`;
    return { kind: 'balance', address, value: r.balance.length === 0 ? 0n : BigInt(hex(r.balance)) };
  }
  if (r.nonce !== undefined) return { kind: 'nonce', address, value: r.nonce };
  if (r.code !== undefined) return { kind: 'code', address, code: hex(r.code) };
  const w = r.storage!;
  const problem =
    checkLength('SetStateRequest.storage.slot', w.slot, 32) ??
    checkLength('SetStateRequest.storage.value', w.value, 32);
  if (problem !== undefined) return problem;
  return { kind: 'storage', address, slot: hex(w.slot), value: hex(w.value) };
}

/** Adds the DevChain service, answered from `src`, to `server`. */
export function addDevChainService(server: grpc.Server, src: DevChainSource, logger: Logger): void {
  const handler =
    <Req>(
      rpc: string,
      message: string,
      run: (req: Req) => Promise<unknown>,
      check?: (req: Req) => string | undefined,
    ) =>
    (call: grpc.ServerUnaryCall<unknown, unknown>, cb: grpc.sendUnaryData<unknown>) => {
      const at = `${DEV_CHAIN_SERVICE_NAME}/${rpc}`;
      const refused = requestRefusal(at, message, call.request, check);
      if (refused !== undefined) {
        cb(refused);
        return;
      }
      run(call.request as Req).then(
        (res) => cb(null, res),
        (err: unknown) =>
          cb(executorFailure(err, at, (msg) => logger.error({ rpc, err: msg }, 'dev-chain call failed'))),
      );
    };
  server.addService(lenientDefinition(DevChainService), {
    setState: handler<SetStateRequest>(
      'SetState',
      'noded.dev.v1.SetStateRequest',
      async (r) => ({ height: await src.devSetState(changeOf(r) as DevStateChange) }),
      (r) => {
        const c = changeOf(r);
        return typeof c === 'string' ? c : undefined;
      },
    ),
    impersonate: handler<ImpersonateRequest>(
      'Impersonate',
      'noded.dev.v1.ImpersonateRequest',
      async (r) => ({ wasImpersonated: await src.devImpersonate(hex(r.address), r.impersonate) }),
      (r) => checkLength('ImpersonateRequest.address', r.address, 20),
    ),
    impersonatedAccounts: handler(
      'ImpersonatedAccounts',
      'noded.dev.v1.ImpersonatedAccountsRequest',
      async () => ({
        addresses: (await src.devImpersonatedAccounts()).map(bytes),
      }),
    ),
    sendImpersonated: handler<SendImpersonatedRequest>(
      'SendImpersonated',
      'noded.dev.v1.SendImpersonatedRequest',
      async (r) => ({ hash: bytes(await src.devSendImpersonated(hex(r.sender), r.raw)) }),
      (r) =>
        checkLength('SendImpersonatedRequest.sender', r.sender, 20) ??
        (r.raw.length === 0 ? 'SendImpersonatedRequest.raw: must not be empty' : undefined),
    ),
  });
}

/** How long SetState may take by default: it answers once a block is committed. */
const SET_STATE_DEADLINE_MS = 60_000;

/**
 * The edge's client of the executor's DevChain service. Its methods are the EthChain dev calls, so
 * an EthChain that spreads them in serves DevState's methods through the executor.
 */
export class GrpcDevChain {
  private readonly client: grpc.Client;
  private readonly deadlineMs: number;
  private readonly setStateDeadlineMs: number;

  constructor(
    readonly address: string,
    opts: { credentials?: grpc.ChannelCredentials; deadlineMs?: number; setStateDeadlineMs?: number } = {},
  ) {
    this.client = new grpc.Client(address, opts.credentials ?? grpc.credentials.createInsecure(), {
      'grpc.max_receive_message_length': DEFAULT_MAX_MESSAGE_BYTES,
    });
    this.deadlineMs = opts.deadlineMs ?? 10_000;
    this.setStateDeadlineMs = opts.setStateDeadlineMs ?? SET_STATE_DEADLINE_MS;
  }

  close(): void {
    this.client.close();
  }

  private unary<Req, Res>(def: UnaryDef<Req, Res>, req: Req, deadlineMs = this.deadlineMs): Promise<Res> {
    return executorUnary(this.client, `executor dev chain at ${this.address}`, deadlineMs, def, req);
  }

  /** The committed height whose block applied the change. */
  async devSetState(change: DevStateChange): Promise<bigint> {
    if (!/^0x[0-9a-fA-F]{40}$/.test(change.address))
      throw new ChainError(-32602, `invalid address ${change.address}: want 0x and 40 hex digits`);
    const req: SetStateRequest = { address: bytes(change.address) };
    switch (change.kind) {
      case 'balance': {
        const h = change.value.toString(16);
        req.balance = change.value === 0n ? new Uint8Array() : bytes(`0x${h.length % 2 ? '0' : ''}${h}`);
        break;
      }
      case 'nonce':
        req.nonce = change.value;
        break;
      case 'code':
        req.code = bytes(change.code);
        break;
      case 'storage':
        req.storage = { slot: bytes(change.slot), value: bytes(change.value) };
        break;
    }
    return (await this.unary(DevChainService.setState, req, this.setStateDeadlineMs)).height;
  }

  async devImpersonate(address: Hex, on: boolean): Promise<boolean> {
    return (await this.unary(DevChainService.impersonate, { address: bytes(address), impersonate: on }))
      .wasImpersonated;
  }

  async devImpersonatedAccounts(): Promise<Hex[]> {
    const r = await this.unary(DevChainService.impersonatedAccounts, {});
    for (const a of r.addresses) {
      const problem = checkLength('ImpersonatedAccountsResponse.addresses', a, 20);
      if (problem !== undefined)
        throw new ChainError(-32000, `executor dev chain: invalid response: ${problem}`);
    }
    return r.addresses.map(hex);
  }

  async devSendImpersonated(sender: Hex, raw: Uint8Array): Promise<Hex> {
    const r = await this.unary(DevChainService.sendImpersonated, { sender: bytes(sender), raw });
    const problem = checkLength('SendImpersonatedResponse.hash', r.hash, 32);
    if (problem !== undefined)
      throw new ChainError(-32000, `executor dev chain: invalid response: ${problem}`);
    return hex(r.hash);
  }
}
