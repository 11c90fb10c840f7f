// JSON-RPC errors as geth reports them (EIP-1474 codes, geth's messages), and the revert decoding
// geth applies to code-3 errors.
import type { Hex } from '@noded/types';

/** Codes used on the wire; names follow EIP-1474 and geth's rpc/errors.go. */
export const RpcErrorCode = {
  parse: -32700,
  invalidRequest: -32600,
  methodNotFound: -32601,
  invalidParams: -32602,
  internal: -32603,
  server: -32000,
  timeout: -32002,
  responseTooLarge: -32003,
  limitExceeded: -32005,
  executionReverted: 3,
} as const;

/** An error answered to the client: `code`, `message` and optional `data` go on the wire unchanged. */
export class RpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message);
    this.name = 'RpcError';
  }

  toJSON(): { code: number; message: string; data?: unknown } {
    return this.data === undefined
      ? { code: this.code, message: this.message }
      : { code: this.code, message: this.message, data: this.data };
  }
}

export const parseError = () => new RpcError(RpcErrorCode.parse, 'parse error');
export const invalidRequest = (message = 'invalid request') =>
  new RpcError(RpcErrorCode.invalidRequest, message);
export const methodNotFound = (method: string) =>
  new RpcError(RpcErrorCode.methodNotFound, `the method ${method} does not exist/is not available`);
export const invalidParams = (message: string) => new RpcError(RpcErrorCode.invalidParams, message);
export const serverError = (message: string, data?: unknown) =>
  new RpcError(RpcErrorCode.server, message, data);

// Solidity's Panic(uint256) codes with the texts geth's abi.UnpackRevert gives them.
const panicReasons = new Map<bigint, string>([
  [0x00n, 'generic panic'],
  [0x01n, 'assert(false)'],
  [0x11n, 'arithmetic underflow or overflow'],
  [0x12n, 'division or modulo by zero'],
  [0x21n, 'enum overflow'],
  [0x22n, 'invalid encoded storage byte array accessed'],
  [0x31n, 'out-of-bounds array access; popping on an empty array'],
  [0x32n, 'out-of-bounds access of an array or bytesSlice'],
  [0x41n, 'out of memory'],
  [0x51n, 'uninitialized function'],
]);

const ERROR_SELECTOR = '08c379a0'; // keccak256("Error(string)")[:4]
const PANIC_SELECTOR = '4e487b71'; // keccak256("Panic(uint256)")[:4]

/**
 * The reason geth extracts from revert data: the string of Error(string), a text for Panic(uint256),
 * or undefined when the data is neither (custom errors, empty data).
 */
export function decodeRevertReason(data: Hex): string | undefined {
  const body = data.slice(2).toLowerCase();
  if (body.length < 8 + 64) return undefined;
  const selector = body.slice(0, 8);
  if (selector === PANIC_SELECTOR) {
    if (body.length !== 8 + 64) return undefined;
    const code = BigInt(`0x${body.slice(8, 72)}`);
    return panicReasons.get(code) ?? `unknown panic code: 0x${code.toString(16)}`;
  }
  if (selector !== ERROR_SELECTOR) return undefined;
  const words = body.slice(8);
  const offset = Number(BigInt(`0x${words.slice(0, 64)}`));
  if (offset % 32 !== 0 || (offset + 32) * 2 > words.length) return undefined;
  const length = Number(BigInt(`0x${words.slice(offset * 2, offset * 2 + 64)}`));
  const start = (offset + 32) * 2;
  if (start + length * 2 > words.length) return undefined;
  const bytes = Buffer.from(words.slice(start, start + length * 2), 'hex');
  return new TextDecoder('utf-8', { fatal: false }).decode(bytes);
}

/** geth's revert error: code 3, "execution reverted[: reason]", data = the revert data. */
export function revertError(data: Hex): RpcError {
  const reason = decodeRevertReason(data);
  const message = reason === undefined ? 'execution reverted' : `execution reverted: ${reason}`;
  return new RpcError(RpcErrorCode.executionReverted, message, data);
}
