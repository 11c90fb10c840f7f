// CommittedRecord (libs/execution) <-> noded.stream.v1.CommittedHeight bytes. Decoding checks every
// field's rule and names the field that breaks one, so a replica never applies a malformed height.

import type { CommittedRecord } from '@noded/execution';
import {
  CommittedHeight,
  NewHead,
  PendingTransactions,
  StateChange_Kind,
} from '@noded/proto/src/gen/noded/stream/v1/committed.js';

export class StreamFieldError extends Error {
  constructor(
    readonly field: string,
    readonly rule: string,
  ) {
    super(`${field}: ${rule}`);
    this.name = 'StreamFieldError';
  }
}

const MAX_HEIGHT = BigInt(Number.MAX_SAFE_INTEGER);
const U64 = (1n << 64n) - 1n;

export function encodeCommitted(r: CommittedRecord): Uint8Array {
  return CommittedHeight.encode({
    chainId: r.chainId,
    height: BigInt(r.height),
    blockHash: r.blockHash,
    parentHash: r.parentHash,
    headerRlp: r.headerRlp,
    blockSize: r.blockSize,
    appHash: r.appHash,
    txs: r.txs.map((t) => ({ raw: t.raw, sender: t.sender, hash: t.hash })),
    receipts: r.receipts.map((x) => ({
      type: x.type,
      status: x.status,
      cumulativeGasUsed: x.cumulativeGasUsed,
      gasUsed: x.gasUsed,
      effectiveGasPrice: x.effectiveGasPrice.toString(),
      from: x.from,
      to: x.to ?? new Uint8Array(),
      contractAddress: x.contractAddress ?? new Uint8Array(),
      logs: x.logs.map((l) => ({ address: l.address, topics: l.topics, data: l.data })),
    })),
    stateChanges: r.stateChanges.map((c) => ({
      kind: c.kind === 'account' ? StateChange_Kind.KIND_ACCOUNT : StateChange_Kind.KIND_STORAGE,
      key: c.key,
      value: c.value ?? new Uint8Array(),
      deleted: c.value === undefined,
    })),
    codes: r.codes.map((c) => ({ codeHash: c.codeHash, code: c.code })),
    kvOps: r.kvOps.map((o) => ({
      key: o.key,
      value: o.value ?? new Uint8Array(),
      delete: o.value === undefined,
    })),
    lightBlock: r.lightBlock ?? new Uint8Array(),
  }).finish();
}

function bytesOf(field: string, v: Uint8Array, len: number): Uint8Array {
  if (v.length !== len) throw new StreamFieldError(field, `must be ${len} bytes, got ${v.length}`);
  return v;
}

/** Decodes and checks a CommittedHeight; a StreamFieldError names the first field that is wrong. */
export function decodeCommitted(bytes: Uint8Array): CommittedRecord {
  let m: CommittedHeight;
  try {
    m = CommittedHeight.decode(bytes);
  } catch (err) {
    throw new StreamFieldError('CommittedHeight', `not a CommittedHeight message: ${(err as Error).message}`);
  }
  const f = (name: string) => `CommittedHeight.${name}`;
  if (m.chainId === '') throw new StreamFieldError(f('chain_id'), 'must not be empty');
  // 0 (or initial_height - 1): the genesis state, the stream's first record.
  if (m.height > MAX_HEIGHT)
    throw new StreamFieldError(f('height'), `must be at most 2^53-1, got ${m.height}`);
  if (m.headerRlp.length === 0) throw new StreamFieldError(f('header_rlp'), 'must not be empty');
  if (m.receipts.length !== m.txs.length) {
    throw new StreamFieldError(
      f('receipts'),
      `must have one receipt per transaction (${m.txs.length}), got ${m.receipts.length}`,
    );
  }
  return {
    chainId: m.chainId,
    height: Number(m.height),
    blockHash: bytesOf(f('block_hash'), m.blockHash, 32),
    parentHash: bytesOf(f('parent_hash'), m.parentHash, 32),
    headerRlp: m.headerRlp,
    blockSize: m.blockSize,
    appHash: m.appHash,
    txs: m.txs.map((t, i) => ({
      raw: t.raw.length > 0 ? t.raw : fail(f(`txs[${i}].raw`), 'must not be empty'),
      sender: bytesOf(f(`txs[${i}].sender`), t.sender, 20),
      hash: bytesOf(f(`txs[${i}].hash`), t.hash, 32),
    })),
    receipts: m.receipts.map((x, i) => {
      const at = (n: string) => f(`receipts[${i}].${n}`);
      if (x.status !== 0 && x.status !== 1)
        throw new StreamFieldError(at('status'), `must be 0 or 1, got ${x.status}`);
      if (!/^(0|[1-9]\d*)$/.test(x.effectiveGasPrice) || BigInt(x.effectiveGasPrice) > U64 * U64) {
        throw new StreamFieldError(
          at('effective_gas_price'),
          `must be a decimal integer, got ${JSON.stringify(x.effectiveGasPrice)}`,
        );
      }
      return {
        type: x.type,
        status: x.status as 0 | 1,
        cumulativeGasUsed: x.cumulativeGasUsed,
        gasUsed: x.gasUsed,
        effectiveGasPrice: BigInt(x.effectiveGasPrice),
        from: bytesOf(at('from'), x.from, 20),
        to: x.to.length === 0 ? null : bytesOf(at('to'), x.to, 20),
        contractAddress:
          x.contractAddress.length === 0 ? null : bytesOf(at('contract_address'), x.contractAddress, 20),
        logs: x.logs.map((l, j) => ({
          address: bytesOf(at(`logs[${j}].address`), l.address, 20),
          topics:
            l.topics.length <= 4
              ? l.topics.map((t, k) => bytesOf(at(`logs[${j}].topics[${k}]`), t, 32))
              : fail(at(`logs[${j}].topics`), `must have at most 4 topics, got ${l.topics.length}`),
          data: l.data,
        })),
      };
    }),
    stateChanges: m.stateChanges.map((c, i) => {
      const at = (n: string) => f(`state_changes[${i}].${n}`);
      const kind =
        c.kind === StateChange_Kind.KIND_ACCOUNT
          ? 'account'
          : c.kind === StateChange_Kind.KIND_STORAGE
            ? 'storage'
            : fail(at('kind'), `must be KIND_ACCOUNT or KIND_STORAGE, got ${c.kind}`);
      bytesOf(at('key'), c.key, kind === 'account' ? 20 : 52);
      if (c.deleted && c.value.length > 0)
        throw new StreamFieldError(at('value'), 'must be empty when deleted');
      return { kind, key: c.key, value: c.deleted ? undefined : c.value };
    }),
    codes: m.codes.map((c, i) => ({
      codeHash: bytesOf(f(`codes[${i}].code_hash`), c.codeHash, 32),
      code: c.code,
    })),
    kvOps: m.kvOps.map((o, i) => {
      if (o.key.length === 0) fail(f(`kv_ops[${i}].key`), 'must not be empty');
      if (o.delete && o.value.length > 0) fail(f(`kv_ops[${i}].value`), 'must be empty when delete is set');
      return { key: o.key, value: o.delete ? undefined : o.value };
    }),
    // Decoded and verified by the replica (commit.ts), which names what is wrong with it.
    ...(m.lightBlock.length > 0 ? { lightBlock: m.lightBlock } : {}),
  };
}

function fail(field: string, rule: string): never {
  throw new StreamFieldError(field, rule);
}

export interface Head {
  chainId: string;
  height: number;
  blockHash: Uint8Array;
  parentHash: Uint8Array;
  headerRlp: Uint8Array;
}

export function encodeHead(h: Head): Uint8Array {
  return NewHead.encode({ ...h, height: BigInt(h.height) }).finish();
}

export function decodeHead(bytes: Uint8Array): Head {
  const m = NewHead.decode(bytes);
  if (m.height > MAX_HEIGHT) {
    throw new StreamFieldError('NewHead.height', `must be at most 2^53-1, got ${m.height}`);
  }
  return {
    chainId: m.chainId,
    height: Number(m.height),
    blockHash: bytesOf('NewHead.block_hash', m.blockHash, 32),
    parentHash: bytesOf('NewHead.parent_hash', m.parentHash, 32),
    headerRlp: m.headerRlp,
  };
}

export function encodePendingTxs(chainId: string, hashes: Uint8Array[]): Uint8Array {
  return PendingTransactions.encode({ chainId, hashes }).finish();
}

/** Decodes and checks a PendingTransactions; a StreamFieldError names the first field that is wrong. */
export function decodePendingTxs(bytes: Uint8Array): { chainId: string; hashes: Uint8Array[] } {
  let m: PendingTransactions;
  try {
    m = PendingTransactions.decode(bytes);
  } catch (err) {
    throw new StreamFieldError(
      'PendingTransactions',
      `not a PendingTransactions message: ${(err as Error).message}`,
    );
  }
  return {
    chainId: m.chainId,
    hashes: m.hashes.map((h, i) => bytesOf(`PendingTransactions.hashes[${i}]`, h, 32)),
  };
}
