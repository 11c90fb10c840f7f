// Decoding and stateless validation of user transactions (Ethereum typed transactions: legacy with
// or without EIP-155, EIP-2930, EIP-1559, EIP-7702). Rejections carry geth's messages so clients
// that match on them (ethers, viem, Hardhat) behave as against geth.
import type { Common } from '@ethereumjs/common';
import {
  create1559FeeMarketTxFromBytesArray,
  createAccessList2930TxFromBytesArray,
  createEOACode7702TxFromBytesArray,
  createFeeMarket1559Tx,
  createLegacyTxFromBytesArray,
  getCalldataFloorGas,
  type TypedTransaction,
} from '@ethereumjs/tx';
import { Address } from '@ethereumjs/util';
import { keccak256 } from '@noded/crypto';
import type { Hex } from '@noded/types';
import { bigIntToBytes, bigIntToFixed, bytesToBigInt, concat, EMPTY, maxBig, toHex, toKey } from './bytes.js';
import { nativeEcrecover } from './evm/common.js';
import { encodeBytes, rlpDecode, rlpHeaderSize, rlpListBounds, writeRlpHeader } from './rlp.js';

/** Result codes of CheckTx / ExecTxResult for rejected transactions (codespace "evm"). */
export const TxCode = {
  ok: 0,
  decode: 2,
  typeNotSupported: 3,
  invalidChainId: 4,
  invalidSender: 5,
  unprotected: 6,
  oversized: 7,
  gasLimit: 8,
  intrinsicGas: 9,
  tipAboveFeeCap: 10,
  underpriced: 11,
  feeCapTooLow: 12,
  gasPriceTooHigh: 13,
  nonceTooLow: 14,
  nonceTooHigh: 15,
  insufficientFunds: 16,
  replacementUnderpriced: 17,
  alreadyKnown: 18,
  poolFull: 19,
  accountLimit: 20,
  feeCapExceeded: 21,
  senderNotEoa: 22,
  initcodeTooLarge: 23,
  execution: 30,
} as const;
export type TxCodeValue = (typeof TxCode)[keyof typeof TxCode];

/** A transaction refused before execution; `message` is geth's wording. */
export class TxRejectedError extends Error {
  constructor(
    readonly code: TxCodeValue,
    message: string,
  ) {
    super(message);
    this.name = 'TxRejectedError';
  }
}

/** EIP-7825 (Osaka): maximum gas of one transaction. */
export const MAX_TX_GAS_OSAKA = 16_777_216n;

export interface DecodedTx {
  raw: Uint8Array;
  hash: Uint8Array;
  hashHex: Hex;
  /**
   * The EthereumJS transaction (what runTx executes), its sender, public key and hash pinned. For a
   * plain transfer (see `decodeSimple`) it is built at the first read: a transfer that never reaches
   * runTx never builds it.
   */
  tx: TypedTransaction;
  type: number;
  /** Bytes of calldata (or initcode). */
  dataLength: number;
  /** Entries of the EIP-2930 access list (0 for a legacy transaction). */
  accessListLength: number;
  /** Sender address, lowercase hex without 0x. */
  sender: string;
  nonce: bigint;
  gasLimit: bigint;
  feeCap: bigint;
  tipCap: bigint;
  value: bigint;
  /** undefined for a legacy transaction without EIP-155 replay protection. */
  chainId: bigint | undefined;
  to: string | null;
  /** value + gasLimit * feeCap: what the sender must hold. */
  cost: bigint;
  /** max(intrinsic gas, EIP-7623 calldata floor). */
  minGas: bigint;
  intrinsicGas: bigint;
  /** Sent by an impersonated sender (decodeImpersonatedTx): the sender may hold code. */
  impersonated?: true;
}

function checkCanonicalInts(values: Uint8Array[], intIdx: number[], what: string): void {
  for (const i of intIdx) {
    const v: unknown = values[i];
    // A list where an integer belongs (the RLP decoder returns nested lists as arrays).
    if (!(v instanceof Uint8Array)) {
      throw new TxRejectedError(
        TxCode.decode,
        `rlp: expected input string or byte for an integer, got a list (field ${i} of ${what})`,
      );
    }
    if (v.length > 0 && v[0] === 0) {
      throw new TxRejectedError(TxCode.decode, `rlp: non-canonical integer (leading zero bytes) for ${what}`);
    }
  }
}

function txTypeName(t: number): string {
  return t === 3 ? 'blob (EIP-4844)' : `type ${t}`;
}

/**
 * Decodes raw transaction bytes, checks the chain id and recovers the sender.
 * Throws TxRejectedError with geth's message on any failure. `knownSenderPublicKey` is the
 * sender's key as already recovered from these same bytes by a trusted caller (another thread of
 * this node); recovery is then skipped.
 */
export function decodeTx(
  raw: Uint8Array,
  common: Common,
  evmChainId: bigint,
  knownHash?: Uint8Array,
  knownSenderPublicKey?: Uint8Array,
  opts: DecodeOptions = {},
): DecodedTx {
  return decodeWithSender(raw, common, evmChainId, knownHash, { publicKey: knownSenderPublicKey }, opts);
}

export interface DecodeOptions {
  /** Build the EthereumJS transaction at once even for a plain transfer (tests compare both ways). */
  eager?: boolean;
}

/**
 * Decodes the transaction of an impersonated sender (a dev chain's anvil_impersonateAccount): the
 * same checks as decodeTx, but the sender is `sender` (20 bytes) and the signature is not read,
 * so it may be the placeholder the RPC puts there (docs/json-rpc.md, "Impersonated senders").
 */
export function decodeImpersonatedTx(
  raw: Uint8Array,
  sender: Uint8Array,
  common: Common,
  evmChainId: bigint,
): DecodedTx {
  return { ...decodeWithSender(raw, common, evmChainId, undefined, { address: sender }), impersonated: true };
}

function decodeWithSender(
  raw: Uint8Array,
  common: Common,
  evmChainId: bigint,
  knownHash: Uint8Array | undefined,
  known: { publicKey?: Uint8Array | undefined; address?: Uint8Array },
  opts: DecodeOptions = {},
): DecodedTx {
  if (raw.length === 0) throw new TxRejectedError(TxCode.decode, 'typed transaction too short');
  const first = raw[0];
  let type: number;
  let values: Uint8Array[];
  try {
    if (first >= 0xc0) {
      type = 0;
      values = rlpDecode(raw) as Uint8Array[];
    } else if (first <= 0x7f) {
      type = first;
      if (type === 3) {
        throw new TxRejectedError(
          TxCode.typeNotSupported,
          'transaction type not supported: blob (EIP-4844) transactions are not accepted on this chain, which has no blob data availability',
        );
      }
      if (type !== 1 && type !== 2 && type !== 4) {
        throw new TxRejectedError(
          TxCode.typeNotSupported,
          `transaction type not supported: ${txTypeName(type)}`,
        );
      }
      values = rlpDecode(raw.subarray(1)) as Uint8Array[];
    } else {
      throw new TxRejectedError(TxCode.decode, 'rlp: expected input list for types.LegacyTx');
    }
  } catch (err) {
    if (err instanceof TxRejectedError) throw err;
    throw new TxRejectedError(TxCode.decode, `rlp: ${(err as Error).message}`);
  }
  if (!Array.isArray(values)) throw new TxRejectedError(TxCode.decode, 'rlp: expected input list');
  const expectLen = type === 0 ? 9 : type === 1 ? 11 : type === 2 ? 12 : 13;
  if (values.length !== expectLen) {
    throw new TxRejectedError(
      TxCode.decode,
      `rlp: ${type === 0 ? 'legacy' : `type ${type}`} transaction has ${values.length} fields, want ${expectLen}`,
    );
  }

  let chainId: bigint | undefined;
  if (type === 0) {
    checkCanonicalInts(values, [0, 1, 2, 4, 6, 7, 8], 'legacy transaction');
    const v = bytesToBigInt(values[6]);
    if (v === 27n || v === 28n) chainId = undefined;
    else if (v >= 35n) chainId = (v - 35n) / 2n;
    else
      throw new TxRejectedError(TxCode.invalidSender, 'invalid sender: invalid transaction v, r, s values');
  } else {
    const ints =
      type === 1
        ? [0, 1, 2, 3, 5, 8, 9, 10]
        : type === 2
          ? [0, 1, 2, 3, 4, 6, 9, 10, 11]
          : [0, 1, 2, 3, 4, 6, 10, 11, 12];
    checkCanonicalInts(values, ints, `type ${type} transaction`);
    chainId = bytesToBigInt(values[0]);
  }
  if (chainId !== undefined && chainId !== evmChainId) {
    throw new TxRejectedError(
      TxCode.invalidChainId,
      `invalid chain id for signer: have ${chainId} want ${evmChainId}`,
    );
  }
  const gasIdx = type === 0 ? 2 : type === 1 ? 3 : 4;
  const gasLimit = bytesToBigInt(values[gasIdx]);
  if (gasLimit > MAX_TX_GAS_OSAKA && common.isActivatedEIP(7825)) {
    throw new TxRejectedError(
      TxCode.gasLimit,
      `transaction gas limit too high (cap: ${MAX_TX_GAS_OSAKA}, tx: ${gasLimit})`,
    );
  }

  if (type === 2 || type === 4) {
    if (bytesToBigInt(values[2]) > bytesToBigInt(values[3])) {
      throw new TxRejectedError(
        TxCode.tipAboveFeeCap,
        'max priority fee per gas higher than max fee per gas',
      );
    }
  }

  if (known.address === undefined && opts.eager !== true) {
    const lazy = decodeSimple(raw, type, values, common, evmChainId, chainId, knownHash, known.publicKey);
    if (lazy !== undefined) return lazy;
  }

  const tx = buildTx(type, values, common);
  const hash = knownHash ?? keccak256(raw);
  let senderBytes: Uint8Array;
  let publicKey: Uint8Array | undefined;
  if (known.address !== undefined) {
    senderBytes = known.address;
  } else {
    let pub: Uint8Array;
    try {
      pub = known.publicKey ?? tx.getSenderPublicKey();
    } catch (err) {
      const m = (err as Error).message;
      throw new TxRejectedError(
        TxCode.invalidSender,
        /s-values greater/.test(m)
          ? 'invalid sender: invalid transaction v, r, s values'
          : 'invalid sender: invalid signature',
      );
    }
    senderBytes = keccak256(pub).subarray(12);
    publicKey = pub;
  }
  const senderAddress = new Address(senderBytes);
  pinTx(tx, senderAddress, hash, publicKey);
  const sender = toKey(senderBytes);
  const feeCap = 'maxFeePerGas' in tx ? tx.maxFeePerGas : (tx as { gasPrice: bigint }).gasPrice;
  const tipCap =
    'maxPriorityFeePerGas' in tx ? tx.maxPriorityFeePerGas : (tx as { gasPrice: bigint }).gasPrice;
  const intrinsicGas = tx.getIntrinsicGas();
  const floor = getCalldataFloorGas(tx, senderAddress);
  return {
    raw,
    hash,
    hashHex: toHex(hash),
    tx,
    type,
    dataLength: tx.data.length,
    accessListLength: 'accessList' in tx ? tx.accessList.length : 0,
    sender,
    nonce: tx.nonce,
    gasLimit: tx.gasLimit,
    feeCap,
    tipCap,
    value: tx.value,
    chainId,
    to: tx.to ? toKey(tx.to.bytes) : null,
    cost: tx.value + tx.gasLimit * feeCap,
    minGas: maxBig(floor, intrinsicGas),
    intrinsicGas,
  };
}

/**
 * EthereumJS' transaction of the decoded fields, unfrozen (the sender and hash are pinned before it
 * is frozen: EthereumJS derives the address with pure-JS keccak on every getSenderAddress() call,
 * and runTx calls it again). Its constructor's refusals become TxRejectedError.
 */
function buildTx(type: number, values: Uint8Array[], common: Common): TypedTransaction {
  const opts = { common, freeze: false };
  try {
    // biome-ignore lint/suspicious/noExplicitAny: EthereumJS' per-type value tuples
    const vals = values as any;
    if (type === 0) return createLegacyTxFromBytesArray(vals, opts);
    if (type === 1) return createAccessList2930TxFromBytesArray(vals, opts);
    if (type === 2) return create1559FeeMarketTxFromBytesArray(vals, opts);
    return createEOACode7702TxFromBytesArray(vals, opts);
  } catch (err) {
    const msg = (err as Error).message;
    if (/initcode size/.test(msg)) {
      throw new TxRejectedError(
        TxCode.initcodeTooLarge,
        `max initcode size exceeded: ${msg.replace(/^.*?: /, '')}`,
      );
    }
    throw new TxRejectedError(TxCode.decode, `invalid transaction: ${msg.replace(/ \(tx type=.*$/, '')}`);
  }
}

/** Pins the sender (and its key, when recovered) and the hash on `tx`, then freezes it. */
function pinTx(tx: TypedTransaction, senderAddress: Address, hash: Uint8Array, publicKey?: Uint8Array): void {
  if (publicKey !== undefined) Object.defineProperty(tx, 'getSenderPublicKey', { value: () => publicKey });
  Object.defineProperty(tx, 'getSenderAddress', { value: () => senderAddress });
  Object.defineProperty(tx, 'hash', { value: () => hash });
  Object.freeze(tx);
}

/** What a plain transfer's decode needs to know of a Common, read once from a sample transaction. */
interface SimpleRules {
  /** Plain transfers may skip the EthereumJS object under these rules (no EIP-2780 gas terms). */
  ok: boolean;
  /** Intrinsic gas and EIP-7623 floor of a call without calldata or access list. */
  intrinsicGas: bigint;
  floor: bigint;
  /** EIP-7825's cap on a transaction's gas as EthereumJS' constructor applies it; undefined: none. */
  maxGas: bigint | undefined;
}
const SIMPLE_RULES = new WeakMap<Common, SimpleRules>();

function simpleRules(common: Common): SimpleRules {
  let r = SIMPLE_RULES.get(common);
  if (r === undefined) {
    const sample = createFeeMarket1559Tx({ to: new Uint8Array(20) }, { common });
    const c = sample.common;
    r = {
      ok:
        !c.isActivatedEIP(2780) &&
        c.isActivatedEIP(1559) &&
        c.isActivatedEIP(2930) &&
        c.gteHardfork('spuriousDragon'),
      intrinsicGas: sample.getIntrinsicGas(),
      floor: getCalldataFloorGas(sample, new Address(new Uint8Array(20))),
      maxGas:
        c.isActivatedEIP(7825) && !c.isActivatedEIP(8037) ? c.param('maxTransactionGasLimit') : undefined,
    };
    SIMPLE_RULES.set(common, r);
  }
  return r;
}

const MAX_UINT64_BYTES = 8;
const MAX_UINT256 = (1n << 256n) - 1n;
const MAX_SAFE_V = BigInt(Number.MAX_SAFE_INTEGER);

/** An unsigned integer field of at most `bytes` bytes (canonical form was checked by the caller). */
const fits = (v: Uint8Array, bytes: number) => v.length <= bytes;

/**
 * A plain transfer (legacy with EIP-155, EIP-2930 or EIP-1559; a 20-byte recipient, no calldata, an
 * empty access list) whose fields every check of EthereumJS' constructor accepts, decoded without
 * building the EthereumJS object: its sender from the known key or from native recovery, its gas
 * from the Common's rules. Undefined for anything else, or anything EthereumJS might refuse: the
 * caller then builds the object, and the refusal is EthereumJS' own.
 */
function decodeSimple(
  raw: Uint8Array,
  type: number,
  values: Uint8Array[],
  common: Common,
  evmChainId: bigint,
  chainId: bigint | undefined,
  knownHash: Uint8Array | undefined,
  knownPublicKey: Uint8Array | undefined,
): DecodedTx | undefined {
  if (type !== 0 && type !== 1 && type !== 2) return undefined;
  const rules = simpleRules(common);
  if (!rules.ok) return undefined;
  // Field positions: [chainId,] nonce, (gasPrice | tip, feeCap), gas, to, value, data, [accessList,] v, r, s.
  const base = type === 0 ? 0 : 1;
  const feeAt = type === 2 ? base + 2 : base + 1;
  const gasAt = feeAt + 1;
  const to = values[gasAt + 1] as unknown;
  const value = values[gasAt + 2];
  const data = values[gasAt + 3] as unknown;
  const n = values.length;
  const [v, r, sig] = [values[n - 3], values[n - 2], values[n - 1]];
  if (!(to instanceof Uint8Array) || to.length !== 20) return undefined;
  if (!(data instanceof Uint8Array) || data.length !== 0) return undefined;
  if (type !== 0) {
    const list = values[gasAt + 4] as unknown;
    if (!Array.isArray(list) || list.length !== 0) return undefined;
  }
  // The integers are canonical byte strings here (checkCanonicalInts); their bounds as EthereumJS
  // checks them: value, fees, r and s below 2^256, gas at most 2^64-1, nonce below 2^64-1.
  const nonce = values[base];
  const gas = values[gasAt];
  if (!fits(value, 32) || !fits(values[feeAt], 32) || !fits(values[base + 1], 32)) return undefined;
  if (!fits(gas, MAX_UINT64_BYTES) || !fits(nonce, MAX_UINT64_BYTES)) return undefined;
  if (nonce.length === MAX_UINT64_BYTES && nonce.every((b) => b === 0xff)) return undefined;
  if (!fits(r, 32) || !fits(sig, 32) || isZero(r) || isZero(sig)) return undefined;
  // EIP-2: no s above n / 2. The y-parity of a typed transaction is 0 or 1; a legacy v is EIP-155's
  // 2 * chain id + 35 or 36 for a chain id of at least 1 (decodeWithSender matched the chain id).
  if (compareUint256(sig, SECP256K1_HALF_N) > 0) return undefined;
  const vNum = bytesToBigInt(v);
  // (EthereumJS reads a legacy v as a JavaScript number: kept to where that is exact.)
  if (type === 0 ? vNum < 37n || vNum > MAX_SAFE_V || chainId === undefined : vNum > 1n) return undefined;
  const gasLimit = bytesToBigInt(gas);
  if (rules.maxGas !== undefined && gasLimit > rules.maxGas) return undefined;
  const feeCap = bytesToBigInt(values[feeAt]);
  if (gasLimit * feeCap > MAX_UINT256) return undefined;
  const tipCap = type === 2 ? bytesToBigInt(values[base + 1]) : feeCap;
  const pub = knownPublicKey ?? recoverSenderPublicKey(raw, evmChainId);
  if (pub === undefined) return undefined;

  const hash = knownHash ?? keccak256(raw);
  const senderBytes = keccak256(pub).subarray(12);
  const amount = bytesToBigInt(value);
  let built: TypedTransaction | undefined;
  return {
    raw,
    hash,
    hashHex: toHex(hash),
    get tx(): TypedTransaction {
      if (built === undefined) {
        const tx = buildTx(type, values, common);
        pinTx(tx, new Address(senderBytes), hash, pub);
        built = tx;
      }
      return built;
    },
    type,
    dataLength: 0,
    accessListLength: 0,
    sender: toKey(senderBytes),
    nonce: bytesToBigInt(nonce),
    gasLimit,
    feeCap,
    tipCap,
    value: amount,
    chainId,
    to: toKey(to),
    cost: amount + gasLimit * feeCap,
    minGas: maxBig(rules.floor, rules.intrinsicGas),
    intrinsicGas: rules.intrinsicGas,
  };
}

export interface StatelessLimits {
  /** Per-transaction gas maximum (app.toml block_gas_limit). */
  maxTxGas: bigint;
  minGasPrice: bigint;
  maxGasPrice: bigint;
}

/** Checks that do not need state; geth's order where geth has the check. */
export function checkStateless(d: DecodedTx, limits: StatelessLimits): void {
  if (d.gasLimit > limits.maxTxGas) throw new TxRejectedError(TxCode.gasLimit, 'exceeds block gas limit');
  if (d.tipCap > d.feeCap) {
    throw new TxRejectedError(TxCode.tipAboveFeeCap, 'max priority fee per gas higher than max fee per gas');
  }
  if (d.gasLimit < d.intrinsicGas) {
    throw new TxRejectedError(
      TxCode.intrinsicGas,
      `intrinsic gas too low: gas ${d.gasLimit}, minimum needed ${d.intrinsicGas}`,
    );
  }
  if (d.gasLimit < d.minGas) {
    throw new TxRejectedError(
      TxCode.intrinsicGas,
      `insufficient gas for floor data gas cost: gas ${d.gasLimit}, minimum needed ${d.minGas}`,
    );
  }
  if (d.feeCap > limits.maxGasPrice) {
    throw new TxRejectedError(
      TxCode.gasPriceTooHigh,
      `gas price above max_gas_price: gas fee cap ${d.feeCap}, max_gas_price ${limits.maxGasPrice}`,
    );
  }
  if (d.feeCap < limits.minGasPrice) {
    throw new TxRejectedError(
      TxCode.underpriced,
      `transaction underpriced: gas fee cap ${d.feeCap}, minimum needed ${limits.minGasPrice}`,
    );
  }
}

/** geth's eth_sendRawTransaction fee cap check (internal/ethapi checkTxFee). */
export function checkTxFeeCap(d: DecodedTx, txFeeCap: bigint): void {
  if (txFeeCap === 0n) return;
  const fee = d.feeCap * d.gasLimit;
  if (fee > txFeeCap) {
    const fmt = (n: bigint) => (Number(n) / 1e18).toFixed(2);
    throw new TxRejectedError(
      TxCode.feeCapExceeded,
      `tx fee (${fmt(fee)} ether) exceeds the configured cap (${fmt(txFeeCap)} ether)`,
    );
  }
}

const EXPECTED_FIELDS: Record<number, number> = { 0: 9, 1: 11, 2: 12, 4: 13 };
/** secp256k1's group order n, and n / 2 (EIP-2's bound on s), as 32 big-endian bytes. */
const SECP256K1_N = bigIntToFixed(0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n, 32);
const SECP256K1_HALF_N = bigIntToFixed(
  0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n / 2n,
  32,
);

/** Compares an unsigned big-endian integer of at most 32 bytes with a 32-byte one. */
function compareUint256(a: Uint8Array, b32: Uint8Array): number {
  const pad = 32 - a.length;
  for (let i = 0; i < 32; i++) {
    const x = i < pad ? 0 : a[i - pad];
    if (x !== b32[i]) return x < b32[i] ? -1 : 1;
  }
  return 0;
}

function isZero(b: Uint8Array): boolean {
  for (let i = 0; i < b.length; i++) if (b[i] !== 0) return false;
  return true;
}

/**
 * The sender's 64-byte public key of raw transaction bytes, without building a transaction
 * object or decoding the fields it does not read: the signing payload is the RLP of the unsigned
 * fields (typed: type byte + list without yParity, r, s; legacy: six fields, plus chain id, 0, 0
 * under EIP-155), cut from `raw` (rlpListBounds accepts only canonical RLP, so the cut is what a
 * re-encoding gives) under a new list header. Returns undefined for anything `decodeTx` would
 * refuse on the way to the sender (shape, chain id, v, r/s range, EIP-2 high s), so its caller can
 * leave the precise error to `decodeTx`.
 */
export function recoverSenderPublicKey(raw: Uint8Array, evmChainId: bigint): Uint8Array | undefined {
  if (raw.length === 0) return undefined;
  const first = raw[0];
  const type = first >= 0xc0 ? 0 : first;
  const want = EXPECTED_FIELDS[type];
  if (want === undefined) return undefined;
  const body = type === 0 ? raw : raw.subarray(1);
  let items: number[] | undefined;
  try {
    items = rlpListBounds(body);
  } catch {
    // A nesting deep enough to exhaust the stack: the decoder refuses it too.
    return undefined;
  }
  if (items === undefined || items.length !== 3 * want) return undefined;
  const field = (i: number): Uint8Array | undefined =>
    body[items[3 * i]] >= 0xc0 ? undefined : body.subarray(items[3 * i + 1], items[3 * i + 2]);
  const vB = field(want - 3);
  const rB = field(want - 2);
  const sB = field(want - 1);
  if (vB === undefined || rB === undefined || sB === undefined) return undefined;
  if (rB.length > 32 || sB.length > 32 || vB.length > 32) return undefined;
  if (isZero(rB) || compareUint256(rB, SECP256K1_N) >= 0) return undefined;
  if (isZero(sB) || compareUint256(sB, SECP256K1_HALF_N) > 0) return undefined;
  const v = bytesToBigInt(vB);
  // The unsigned fields, as they stand in `raw`: from the first item to the signature's v.
  const fieldsStart = items[0];
  let fieldsEnd: number;
  let tail: Uint8Array = EMPTY;
  let legacyChainId: bigint | undefined;
  if (type === 0) {
    fieldsEnd = items[3 * 6];
    if (v >= 35n) {
      legacyChainId = (v - 35n) / 2n;
      if (legacyChainId !== evmChainId) return undefined;
      tail = concat(encodeBytes(bigIntToBytes(evmChainId)), EMPTY_RLP_PAIR);
    } else if (v !== 27n && v !== 28n) {
      return undefined;
    }
  } else {
    const chain = field(0);
    if (chain === undefined || bytesToBigInt(chain) !== evmChainId) return undefined;
    if (v > 1n) return undefined;
    fieldsEnd = items[3 * (want - 3)];
  }
  const len = fieldsEnd - fieldsStart + tail.length;
  const prefix = type === 0 ? 0 : 1;
  const payload = new Uint8Array(prefix + rlpHeaderSize(len) + len);
  if (prefix === 1) payload[0] = type;
  let pos = writeRlpHeader(payload, prefix, len, 0xc0);
  payload.set(body.subarray(fieldsStart, fieldsEnd), pos);
  pos += fieldsEnd - fieldsStart;
  payload.set(tail, pos);
  try {
    // The executor's own recovery (v -> recovery id as EthereumJS maps it, native secp256k1).
    return nativeEcrecover(keccak256(payload), v, rB, sB, legacyChainId);
  } catch {
    return undefined;
  }
}

/** Two empty RLP strings: the 0, 0 after the chain id in an EIP-155 signing payload. */
const EMPTY_RLP_PAIR = Uint8Array.of(0x80, 0x80);

/**
 * A sender recovery for a thread that admits transactions on behalf of the executor (the RPC
 * thread): the sender's 64-byte public key from `raw`, or undefined when `raw` would be refused,
 * so that the executor, decoding it again, produces the precise error.
 */
export function senderRecovery(evmChainId: bigint): (raw: Uint8Array) => Uint8Array | undefined {
  return (raw) => recoverSenderPublicKey(raw, evmChainId);
}
