// Bridge-in deposits: the AssetsLocked event of the source-chain contract (contracts/BTCBridgeSource.sol)
// read from eth_getLogs answers, strictly (a source chain answering garbage yields a precise error,
// never a deposit), and the attestation a validator puts in its vote extension.
import { keccak256 } from '@noded/crypto';

/** One AssetsLocked event: `sequence` numbers deposits 1, 2, 3, … on the source contract. */
export interface Deposit {
  sequence: bigint;
  /** 0x + 40 lowercase hex: who receives BTC on noded. */
  recipient: string;
  /** 0x + 40 lowercase hex: the source-chain token that was locked. */
  token: string;
  /** Base units of the token (for the mapped wrapped-BTC token, 1e-18 BTC each). */
  amount: bigint;
  /** Where it was seen (diagnostics only; not attested). */
  sourceBlock: bigint;
  sourceTx: string;
}

/** topic0 of AssetsLocked(uint256 indexed sequenceNumber, address indexed recipient, address indexed token, uint256 amount). */
export const ASSETS_LOCKED_TOPIC = `0x${Buffer.from(
  keccak256(new TextEncoder().encode('AssetsLocked(uint256,address,address,uint256)')),
).toString('hex')}`;

/** A source-chain answer that is not what the JSON-RPC spec and the event's ABI promise. */
export class SourceChainError extends Error {
  readonly code = 'BRIDGE_SOURCE';
  constructor(message: string) {
    super(message);
    this.name = 'SourceChainError';
  }
}

const WORD = /^0x[0-9a-fA-F]{64}$/;
const QUANTITY = /^0x(0|[1-9a-fA-F][0-9a-fA-F]*)$/;
const HASH = /^0x[0-9a-fA-F]{64}$/;

/** A JSON-RPC quantity ("0x1a"): hex without leading zeros. */
export function parseQuantity(v: unknown, what: string): bigint {
  if (typeof v !== 'string' || !QUANTITY.test(v))
    throw new SourceChainError(`${what} is not a hex quantity: ${show(v)}`);
  return BigInt(v);
}

function show(v: unknown): string {
  const s = JSON.stringify(v) ?? String(v);
  return s.length > 80 ? `${s.slice(0, 80)}...` : s;
}

/** An address from an indexed topic: 12 zero bytes, then the 20 address bytes. */
function topicAddress(topic: string, what: string): string {
  if (!/^0x0{24}[0-9a-fA-F]{40}$/.test(topic))
    throw new SourceChainError(`${what} topic is not an ABI-encoded address: ${show(topic)}`);
  return `0x${topic.slice(26).toLowerCase()}`;
}

/**
 * The deposit in one log of eth_getLogs(address = bridge, topics = [ASSETS_LOCKED_TOPIC]). Refuses a
 * log of another address or event, missing or malformed fields, a removed (reorged) log, or a zero
 * sequence number.
 */
export function parseAssetsLockedLog(log: unknown, bridgeAddress: string): Deposit {
  if (typeof log !== 'object' || log === null || Array.isArray(log))
    throw new SourceChainError(`log is not an object: ${show(log)}`);
  const l = log as Record<string, unknown>;
  if (typeof l.address !== 'string' || l.address.toLowerCase() !== bridgeAddress.toLowerCase())
    throw new SourceChainError(`log address ${show(l.address)} is not the bridge ${bridgeAddress}`);
  if (l.removed === true) throw new SourceChainError('log was removed by a reorg');
  const topics = l.topics;
  if (
    !Array.isArray(topics) ||
    topics.length !== 4 ||
    !topics.every((t) => typeof t === 'string' && WORD.test(t))
  )
    throw new SourceChainError(`AssetsLocked log needs 4 32-byte topics, got ${show(topics)}`);
  if (topics[0]!.toLowerCase() !== ASSETS_LOCKED_TOPIC)
    throw new SourceChainError(`log topic0 ${topics[0]} is not AssetsLocked`);
  if (typeof l.data !== 'string' || !WORD.test(l.data))
    throw new SourceChainError(
      `AssetsLocked data must be one 32-byte word (the amount), got ${show(l.data)}`,
    );
  const sequence = BigInt(topics[1]!);
  if (sequence === 0n) throw new SourceChainError('AssetsLocked sequence number 0 (they start at 1)');
  if (typeof l.transactionHash !== 'string' || !HASH.test(l.transactionHash))
    throw new SourceChainError(`log transactionHash is not a 32-byte hash: ${show(l.transactionHash)}`);
  return {
    sequence,
    recipient: topicAddress(topics[2]!, 'recipient'),
    token: topicAddress(topics[3]!, 'token'),
    amount: BigInt(l.data),
    sourceBlock: parseQuantity(l.blockNumber, 'log blockNumber'),
    sourceTx: l.transactionHash.toLowerCase(),
  };
}

/** Deposits one vote extension attests at most (104 bytes each: 6.6 KB, under the 16 KiB cap). */
export const MAX_ATTESTED_DEPOSITS = 64;
const ATTESTATION_VERSION = 1;
const ENTRY_BYTES = 32 + 20 + 20 + 32;

/** Whether two deposits attest the same thing (the fields that are minted from). */
export function sameDeposit(a: Deposit, b: Deposit): boolean {
  return (
    a.sequence === b.sequence && a.recipient === b.recipient && a.token === b.token && a.amount === b.amount
  );
}

function word(v: bigint): Uint8Array {
  return Buffer.from(v.toString(16).padStart(64, '0'), 'hex');
}

/**
 * The vote extension of a validator: version 1 | count (2 bytes BE) | count × (sequence 32 bytes BE,
 * recipient 20, token 20, amount 32 BE). Empty deposits encode as the empty extension.
 */
export function encodeAttestation(deposits: readonly Deposit[]): Uint8Array {
  if (deposits.length === 0) return new Uint8Array(0);
  if (deposits.length > MAX_ATTESTED_DEPOSITS)
    throw new RangeError(`${deposits.length} deposits, at most ${MAX_ATTESTED_DEPOSITS} per attestation`);
  const out = new Uint8Array(3 + deposits.length * ENTRY_BYTES);
  out[0] = ATTESTATION_VERSION;
  out[1] = deposits.length >> 8;
  out[2] = deposits.length & 0xff;
  deposits.forEach((d, i) => {
    const o = 3 + i * ENTRY_BYTES;
    out.set(word(d.sequence), o);
    out.set(Buffer.from(d.recipient.slice(2), 'hex'), o + 32);
    out.set(Buffer.from(d.token.slice(2), 'hex'), o + 52);
    out.set(word(d.amount), o + 72);
  });
  return out;
}

/** The attested deposits of an extension (sourceBlock/sourceTx unknown: 0 and ""); throws on a malformed one. */
export function decodeAttestation(ext: Uint8Array): Deposit[] {
  if (ext.length === 0) return [];
  if (ext[0] !== ATTESTATION_VERSION)
    throw new SourceChainError(`attestation version ${ext[0]} is not ${ATTESTATION_VERSION}`);
  const count = ((ext[1] ?? 0) << 8) | (ext[2] ?? 0);
  if (count === 0 || count > MAX_ATTESTED_DEPOSITS)
    throw new SourceChainError(`attestation of ${count} deposits, want 1 to ${MAX_ATTESTED_DEPOSITS}`);
  if (ext.length !== 3 + count * ENTRY_BYTES)
    throw new SourceChainError(
      `attestation of ${count} deposits is ${ext.length} bytes, want ${3 + count * ENTRY_BYTES}`,
    );
  const hex = (a: number, b: number) => Buffer.from(ext.subarray(a, b)).toString('hex');
  const out: Deposit[] = [];
  for (let i = 0; i < count; i++) {
    const o = 3 + i * ENTRY_BYTES;
    const d: Deposit = {
      sequence: BigInt(`0x${hex(o, o + 32)}`),
      recipient: `0x${hex(o + 32, o + 52)}`,
      token: `0x${hex(o + 52, o + 72)}`,
      amount: BigInt(`0x${hex(o + 72, o + 104)}`),
      sourceBlock: 0n,
      sourceTx: '',
    };
    const prev = out.at(-1);
    if (prev ? d.sequence !== prev.sequence + 1n : d.sequence === 0n)
      throw new SourceChainError(
        `attestation sequence numbers must be consecutive from 1 up, got ${d.sequence}`,
      );
    out.push(d);
  }
  return out;
}
