// Fuzzing transaction decoding: RLP (libs/execution/src/rlp.ts against @ethereumjs/rlp), every typed
// envelope through decodeTx (legacy with and without EIP-155, EIP-2930, EIP-1559, EIP-7702), the RPC
// thread's sender recovery and raw-transaction summary (tx-codec.ts) and its signer. Signed
// transactions decode to their fields and signer; hostile bytes are refused only with TxRejectedError,
// and the fast paths never disagree with decodeTx.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { RLP } from '@ethereumjs/rlp';
import {
  ethAddressFromPrivateKey,
  ethAddressFromPublicKey,
  isValidSecp256k1PrivateKey,
  keccak256,
  secp256k1Sign,
} from '@noded/crypto';
import { bigIntToBytes, bytesToBigInt } from '@noded/execution/src/bytes.js';
import { chainCommon } from '@noded/execution/src/evm/common.js';
import { type RlpInput, rlpDecode, rlpEncode, rlpListBounds } from '@noded/execution/src/rlp.js';
import { decodeTx, recoverSenderPublicKey, TxRejectedError } from '@noded/execution/src/txs.js';
import { signTransaction, summarizeRawTransaction } from '@noded/rpc/src/eth/tx-codec.js';
import type { Hex } from '@noded/types';
import fc from 'fast-check';
import { bytesOf, check, hex, hostileBytes, mutated, onlyThrows, rec } from './fuzz.js';

const CHAIN_ID = 31337n;
const common = chainCommon(CHAIN_ID);
const u256 = fc.oneof(
  fc.bigInt({ min: 0n, max: 10n ** 20n }),
  fc.bigInt({ min: 0n, max: (1n << 256n) - 1n }),
);
const fee = fc.oneof(fc.bigInt({ min: 0n, max: 10n ** 12n }), fc.bigInt({ min: 0n, max: 1n << 128n }));

// ---- RLP ---------------------------------------------------------------------------------------

const rlpItem: fc.Arbitrary<RlpInput> = fc.letrec<{ item: RlpInput }>((tie) => ({
  item: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.oneof(fc.uint8Array({ maxLength: 3 }), fc.uint8Array({ maxLength: 70 })),
    fc.array(tie('item'), { maxLength: 5 }),
  ),
})).item;

// ---- signed transactions -----------------------------------------------------------------------

interface TxModel {
  type: 0 | 1 | 2 | 4;
  /** Legacy only: false signs without EIP-155 (v = 27/28). */
  protected: boolean;
  nonce: bigint;
  gas: bigint;
  to: Uint8Array | null;
  value: bigint;
  data: Uint8Array;
  gasPrice: bigint;
  maxFee: bigint;
  tip: bigint;
  accessList: Array<[Uint8Array, Uint8Array[]]>;
  authorizations: Uint8Array[][];
}

const privateKey = bytesOf(32).filter(isValidSecp256k1PrivateKey);
const authorization = fc
  .tuple(u256, bytesOf(20), fc.bigInt({ min: 0n, max: (1n << 64n) - 1n }), fc.nat(1), u256, u256)
  .map(([chain, address, nonce, y, r, s]) => [
    bigIntToBytes(chain),
    address,
    bigIntToBytes(nonce),
    bigIntToBytes(BigInt(y)),
    bigIntToBytes(r),
    bigIntToBytes(s),
  ]);

const txModel: fc.Arbitrary<TxModel> = fc
  .tuple(fee, fee)
  // Math.min/max do not take bigints: the fee cap and the tip sorted by hand (tip <= cap).
  .map(([a, b]) => (a > b ? [b, a] : [a, b]))
  .chain(([low, high]) =>
    rec<TxModel>({
      type: fc.constantFrom(0 as const, 1 as const, 2 as const, 4 as const),
      protected: fc.boolean(),
      nonce: fc.oneof(fc.bigInt({ min: 0n, max: 1000n }), fc.bigInt({ min: 0n, max: (1n << 64n) - 2n })),
      gas: fc.bigInt({ min: 0n, max: 16_777_216n }),
      to: fc.option(bytesOf(20), { nil: null }),
      value: u256,
      data: fc.uint8Array({ maxLength: 100 }),
      gasPrice: fc.constant(high!),
      maxFee: fc.constant(high!),
      tip: fc.constant(low!),
      accessList: fc.array(fc.tuple(bytesOf(20), fc.array(bytesOf(32), { maxLength: 2 })), { maxLength: 2 }),
      authorizations: fc.array(authorization, { minLength: 1, maxLength: 2 }),
    }),
  )
  // EIP-7702 transactions cannot create contracts.
  .map((t) => (t.type === 4 && t.to === null ? { ...t, to: new Uint8Array(20) } : t));

/** The unsigned fields of `t` in its envelope's order. */
function unsignedFields(t: TxModel): RlpInput[] {
  const n = bigIntToBytes;
  const to = t.to ?? new Uint8Array(0);
  const access = t.accessList.map(([a, keys]) => [a, keys]);
  if (t.type === 0) return [n(t.nonce), n(t.gasPrice), n(t.gas), to, n(t.value), t.data];
  if (t.type === 1) return [n(CHAIN_ID), n(t.nonce), n(t.gasPrice), n(t.gas), to, n(t.value), t.data, access];
  const fields = [n(CHAIN_ID), n(t.nonce), n(t.tip), n(t.maxFee), n(t.gas), to, n(t.value), t.data, access];
  return t.type === 2 ? fields : [...fields, t.authorizations];
}

/** Signs `t` by hand (RLP + keccak + secp256k1), as a wallet would. */
function sign(t: TxModel, key: Uint8Array): Uint8Array {
  const n = bigIntToBytes;
  const fields = unsignedFields(t);
  if (t.type === 0) {
    const payload = t.protected ? [...fields, n(CHAIN_ID), new Uint8Array(0), new Uint8Array(0)] : fields;
    const { signature, recovery } = secp256k1Sign(keccak256(rlpEncode(payload)), key);
    const v = t.protected ? BigInt(recovery) + CHAIN_ID * 2n + 35n : 27n + BigInt(recovery);
    return rlpEncode([...fields, n(v), ...rs(signature)]);
  }
  const prefix = Uint8Array.of(t.type);
  const digest = keccak256(Buffer.concat([prefix, rlpEncode(fields)]));
  const { signature, recovery } = secp256k1Sign(digest, key);
  return Uint8Array.from(
    Buffer.concat([prefix, rlpEncode([...fields, n(BigInt(recovery)), ...rs(signature)])]),
  );
}

function rs(signature: Uint8Array): Uint8Array[] {
  const big = (b: Uint8Array) => BigInt(`0x${hex(b)}`);
  return [bigIntToBytes(big(signature.subarray(0, 32))), bigIntToBytes(big(signature.subarray(32)))];
}

const signed = fc.tuple(txModel, privateKey).map(([t, k]) => ({ t, k, raw: sign(t, k) }));

/** Signed transactions with one field replaced: a list, long bytes, a leading zero, or nothing. */
const structurallyDamaged = fc
  .tuple(
    signed,
    fc.nat(),
    fc.oneof(
      fc.constant<RlpInput>([]),
      fc.constant<RlpInput>([new Uint8Array([1])]),
      rlpItem,
      fc.uint8Array({ minLength: 33, maxLength: 40 }),
      fc.uint8Array({ minLength: 1, maxLength: 8 }).map((b) => Uint8Array.from([0, ...b])),
      fc.constant<RlpInput>(new Uint8Array(0)),
      fc.constant(undefined),
    ),
  )
  .map(([{ raw }, at, value]) => {
    const typed = raw[0]! < 0xc0;
    const fields = RLP.decode(typed ? raw.subarray(1) : raw) as RlpInput[];
    const i = at % (fields.length + 1);
    if (value === undefined) fields.splice(i, 1);
    else fields[i] = value;
    const body = rlpEncode(fields);
    return typed ? Buffer.concat([raw.subarray(0, 1), body]) : body;
  });

const hostileTx = fc.oneof(
  hostileBytes(signed.map((s) => s.raw)),
  structurallyDamaged,
  mutated(structurallyDamaged),
  rlpItem.map((x) => rlpEncode(x)),
  fc
    .tuple(fc.constantFrom(1, 2, 3, 4, 5, 0x7f), rlpItem)
    .map(([t, x]) => Buffer.concat([Uint8Array.of(t), rlpEncode(x)])),
);

describe('fuzz: RLP', () => {
  it('bytesToBigInt reads big-endian bytes of any length (the short fast path and the hex path)', () => {
    check(
      fc.property(fc.uint8Array({ maxLength: 40 }), (b) => {
        let want = 0n;
        for (const x of b) want = (want << 8n) | BigInt(x);
        assert.equal(bytesToBigInt(b), want);
      }),
    );
    for (const n of [0n, 1n, 255n, 256n, 2n ** 48n - 1n, 2n ** 48n, 2n ** 53n + 1n, 2n ** 256n - 1n]) {
      assert.equal(bytesToBigInt(bigIntToBytes(n)), n);
    }
    assert.equal(bytesToBigInt(Uint8Array.of(0, 0, 0, 0, 0, 0, 0, 1)), 1n, 'leading zeros, 8 bytes');
    assert.equal(bytesToBigInt(Uint8Array.of(0xff, 0xff, 0xff, 0xff, 0xff, 0xff)), 2n ** 48n - 1n);
  });

  it('rlpEncode agrees with @ethereumjs/rlp, and rlpDecode inverts it', () => {
    check(
      fc.property(rlpItem, (x) => {
        const bytes = rlpEncode(x);
        assert.deepStrictEqual(bytes, RLP.encode(x as never));
        assert.deepStrictEqual(rlpDecode(bytes), x);
      }),
    );
  });

  it('rlpDecode accepts only canonical encodings (what it decodes re-encodes to the same bytes)', () => {
    check(
      fc.property(hostileBytes(rlpItem.map((x) => rlpEncode(x))), (bytes) => {
        // @ethereumjs/rlp documents that empty input decodes to empty bytes (decodeTx refuses empty
        // input and a type byte alone before decoding).
        if (bytes.length === 0) return;
        // @ethereumjs/rlp reports malformed input with plain Errors; decodeTx turns them into rejections.
        const r = onlyThrows(() => rlpDecode(bytes), Error);
        if (r.ok) assert.deepStrictEqual(rlpEncode(r.value), Uint8Array.from(bytes));
      }),
    );
  });

  it('rlpListBounds refuses each non-canonical form rlpDecode refuses, at the top and nested', () => {
    const cases: Array<[string, number[]]> = [
      ['a single byte below 0x80 given a prefix', [0xc2, 0x81, 0x05]],
      ['the same, nested', [0xc4, 0xc3, 0x01, 0x81, 0x05]],
      ['the same, two lists deep', [0xc5, 0xc4, 0xc3, 0x01, 0x81, 0x05]],
      ['a list running past its parent, which is not last', [0xc5, 0xc2, 0xc2, 0x01, 0x02, 0x03]],
      ['a long-form string of 55 bytes', [0xf8, 0x39, 0xb8, 0x37, ...new Array(55).fill(1)]],
      ['a long-form list of 55 bytes', [0xf8, 0x37, ...new Array(55).fill(0)]],
      ['a list length with a leading zero', [0xf9, 0x00, 0x3a, 0xb8, 0x38, ...new Array(56).fill(1)]],
      ['a string running past the list', [0xc2, 0x82, 0x01]],
      ['a nested list running past its parent', [0xc3, 0xc3, 0x01, 0x02]],
      ['a byte after the list', [0xc1, 0x01, 0x02]],
      ['a byte string, not a list', [0x82, 0x01, 0x02]],
    ];
    for (const [what, bytes] of cases) {
      const raw = Uint8Array.from(bytes);
      assert.ok(!onlyThrows(() => rlpDecode(raw), Error).ok || !Array.isArray(rlpDecode(raw)), what);
      assert.equal(rlpListBounds(raw), undefined, what);
    }
    // And the same shapes written canonically are accepted.
    assert.deepEqual(rlpListBounds(Uint8Array.of(0xc2, 0x81, 0x80)), [1, 2, 3]);
    assert.deepEqual(rlpListBounds(Uint8Array.of(0xc3, 0xc2, 0x01, 0x05)), [1, 2, 4]);
  });

  it('rlpListBounds accepts exactly the lists rlpDecode accepts, and bounds each item it decodes', () => {
    const lists = rlpItem.filter(Array.isArray).map((x) => rlpEncode(x));
    check(
      fc.property(fc.oneof(hostileBytes(lists), lists), (bytes) => {
        if (bytes.length === 0) return;
        const decoded = onlyThrows(() => rlpDecode(bytes), Error);
        const bounds = onlyThrows(() => rlpListBounds(bytes));
        assert.ok(bounds.ok);
        const isList = decoded.ok && Array.isArray(decoded.value);
        assert.equal(bounds.value !== undefined, isList, 'accepted by one and not the other');
        const at: number[] | undefined = bounds.value;
        if (at === undefined || !decoded.ok || !Array.isArray(decoded.value)) return;
        const items = decoded.value;
        assert.equal(at.length, 3 * items.length);
        for (let i = 0; i < items.length; i++) {
          const start: number = at[3 * i];
          const payload: number = at[3 * i + 1];
          const end: number = at[3 * i + 2];
          // The item's whole encoding, and (for a byte string) its payload, are the decoded item's.
          assert.deepStrictEqual(
            Uint8Array.from(bytes.subarray(start, end)),
            Uint8Array.from(rlpEncode(items[i])),
          );
          assert.equal(bytes[start] >= 0xc0, Array.isArray(items[i]));
          if (!Array.isArray(items[i]))
            assert.deepStrictEqual(
              Uint8Array.from(bytes.subarray(payload, end)),
              Uint8Array.from(items[i] as Uint8Array),
            );
        }
      }),
    );
  });
});

/** The RPC's fee summary as it read a transaction by decoding every field (@ethereumjs/rlp). */
function summaryByDecoding(raw: Uint8Array): {
  type: number;
  gas: bigint;
  feeCap: bigint;
  replayProtected: boolean;
} {
  if (raw.length === 0) throw new Error('empty transaction');
  const int = (x: unknown): bigint => {
    if (!(x instanceof Uint8Array)) throw new Error('expected a byte string field');
    return x.length === 0 ? 0n : BigInt(`0x${Buffer.from(x).toString('hex')}`);
  };
  const first = raw[0]!;
  if (first >= 0xc0) {
    const f = RLP.decode(raw) as unknown[];
    if (!Array.isArray(f) || f.length !== 9) throw new Error('legacy transaction must have 9 fields');
    const v = int(f[6]);
    return { type: 0, gas: int(f[2]), feeCap: int(f[1]), replayProtected: v !== 27n && v !== 28n };
  }
  const f = RLP.decode(raw.subarray(1)) as unknown[];
  if (!Array.isArray(f)) throw new Error('typed transaction payload must be a list');
  if (first === 1) return { type: 1, gas: int(f[3]), feeCap: int(f[2]), replayProtected: true };
  if (first === 2 || first === 4)
    return { type: first, gas: int(f[4]), feeCap: int(f[3]), replayProtected: true };
  throw new Error(`unsupported transaction type ${first}`);
}

/** Near a power of two: the bounds EthereumJS' constructor checks (2^64-1 for gas and nonce, 2^256). */
const nearBound = (bits: bigint) =>
  fc.oneof(
    fc.bigInt({ min: 0n, max: 100_000n }),
    fc.constantFrom((1n << bits) - 2n, (1n << bits) - 1n, 1n << bits),
    fc.bigInt({ min: 0n, max: 1n << (bits + 8n) }),
  );
/** Mostly `usual`, sometimes `odd`. */
const mostly = <T>(usual: fc.Arbitrary<T>, odd: fc.Arbitrary<T>) =>
  fc.oneof({ arbitrary: usual, weight: 6 }, { arbitrary: odd, weight: 1 });

/** Value transfers (the shape decodeTx may leave without an EthereumJS object), fields at their bounds. */
const transferModel: fc.Arbitrary<TxModel> = fc.tuple(nearBound(128n), nearBound(256n)).chain(([a, b]) =>
  rec<TxModel>({
    type: fc.constantFrom(0 as const, 1 as const, 2 as const),
    protected: mostly(fc.constant(true), fc.constant(false)),
    nonce: nearBound(64n),
    gas: fc.oneof(fc.constant(21_000n), fc.bigInt({ min: 0n, max: 17_000_000n }), nearBound(64n)),
    to: mostly(bytesOf(20), fc.constant(null)),
    value: fc.oneof(u256, nearBound(256n)),
    data: mostly(fc.constant(new Uint8Array(0)), fc.uint8Array({ minLength: 1, maxLength: 3 })),
    gasPrice: fc.constantFrom(a, b),
    maxFee: fc.constantFrom(a, b),
    tip: fc.constantFrom(a, b, 0n),
    accessList: mostly(
      fc.constant<TxModel['accessList']>([]),
      fc.array(fc.tuple(bytesOf(20), fc.array(bytesOf(32), { maxLength: 1 })), {
        minLength: 1,
        maxLength: 1,
      }),
    ),
    authorizations: fc.constant<TxModel['authorizations']>([]),
  }),
);

/** secp256k1's order: (r, n - s) with the other parity is the same signature, refused by EIP-2. */
const SECP256K1_ORDER = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;

/** A signed transfer, sometimes re-signed with the high-s twin of its signature. */
const signedTransfer = fc.tuple(transferModel, privateKey, fc.nat(4)).map(([t, k, twist]) => {
  const raw = sign(t, k);
  if (twist !== 0) return raw;
  const typed = raw[0]! < 0xc0;
  const fields = RLP.decode(typed ? raw.subarray(1) : raw) as Uint8Array[];
  const n = fields.length;
  fields[n - 1] = bigIntToBytes(SECP256K1_ORDER - bytesToBigInt(fields[n - 1]!));
  fields[n - 3] = bigIntToBytes(bytesToBigInt(fields[n - 3]!) ^ 1n);
  const body = rlpEncode(fields);
  return typed ? Uint8Array.from(Buffer.concat([raw.subarray(0, 1), body])) : body;
});

describe('fuzz: transaction decoding', () => {
  it('decodeTx gives back the fields and the signer of every signed envelope', () => {
    check(
      fc.property(signed, ({ t, k, raw }) => {
        const d = decodeTx(raw, common, CHAIN_ID);
        assert.equal(d.type, t.type);
        assert.equal(d.sender, hex(ethAddressFromPrivateKey(k)));
        assert.equal(d.hashHex, `0x${hex(keccak256(raw))}`);
        assert.equal(d.nonce, t.nonce);
        assert.equal(d.gasLimit, t.gas);
        assert.equal(d.value, t.value);
        assert.equal(d.to, t.to === null ? null : hex(t.to));
        assert.deepStrictEqual(Uint8Array.from(d.tx.data), t.data);
        assert.equal(d.chainId, t.type === 0 && !t.protected ? undefined : CHAIN_ID);
        assert.equal(d.feeCap, t.type < 2 ? t.gasPrice : t.maxFee);
        assert.equal(d.tipCap, t.type < 2 ? t.gasPrice : t.tip);
        assert.deepStrictEqual(Uint8Array.from(d.tx.serialize()), raw);
      }),
      4,
    );
  });

  it('signTransaction (dev accounts) encodes exactly as the envelope and decodes to its fields', () => {
    check(
      fc.property(
        txModel.filter((t) => t.type !== 4 && (t.type !== 0 || t.protected)),
        privateKey,
        (t, k) => {
          const h = (b: Uint8Array) => `0x${hex(b)}` as Hex;
          const { raw, hash } = signTransaction(
            {
              type: t.type as 0 | 1 | 2,
              chainId: CHAIN_ID,
              nonce: t.nonce,
              gas: t.gas,
              to: t.to === null ? null : h(t.to),
              value: t.value,
              data: h(t.data),
              gasPrice: t.gasPrice,
              maxFeePerGas: t.maxFee,
              maxPriorityFeePerGas: t.tip,
              accessList: t.accessList.map(([a, keys]) => ({ address: h(a), storageKeys: keys.map(h) })),
            },
            k,
          );
          assert.deepStrictEqual(Uint8Array.from(raw), sign(t, k));
          assert.equal(hash, `0x${hex(keccak256(raw))}`);
          assert.equal(decodeTx(raw, common, CHAIN_ID).sender, hex(ethAddressFromPrivateKey(k)));
        },
      ),
      4,
    );
  });

  it('which transfers skip the EthereumJS object: each kind at its bounds, and one past them', () => {
    const n = bigIntToBytes;
    const key = Uint8Array.from({ length: 32 }, (_, i) => i + 1);
    const base: TxModel = {
      type: 2,
      protected: true,
      nonce: 5n,
      gas: 21_000n,
      to: new Uint8Array(20).fill(0x11),
      value: 1n,
      data: new Uint8Array(0),
      gasPrice: 10n ** 10n,
      maxFee: 10n ** 10n,
      tip: 10n ** 9n,
      accessList: [],
      authorizations: [],
    };
    const pub = recoverSenderPublicKey(sign(base, key), CHAIN_ID)!;
    /** `t`'s fields under a signature of our choosing (the sender key is passed as known). */
    const crafted = (t: TxModel, v: bigint, r: bigint, sig: bigint) => {
      const body = rlpEncode([...unsignedFields(t), n(v), n(r), n(sig)]);
      return t.type === 0 ? body : Uint8Array.from(Buffer.concat([Uint8Array.of(t.type), body]));
    };
    const HALF_N = SECP256K1_ORDER / 2n;
    const MAX = (1n << 256n) - 1n;
    const lazy = (raw: Uint8Array, c = common, chain = CHAIN_ID, known: Uint8Array | undefined = pub) => {
      const d = decodeTx(raw, c, chain, undefined, known);
      const e = decodeTx(raw, c, chain, undefined, known, { eager: true });
      for (const f of ['sender', 'nonce', 'gasLimit', 'feeCap', 'tipCap', 'value', 'to', 'minGas'] as const)
        assert.deepStrictEqual(d[f], e[f], f);
      return Object.getOwnPropertyDescriptor(d, 'tx')?.get !== undefined;
    };
    const refused = (raw: Uint8Array) => {
      const e = onlyThrows(
        () => decodeTx(raw, common, CHAIN_ID, undefined, pub, { eager: true }),
        TxRejectedError,
      );
      const d = onlyThrows(() => decodeTx(raw, common, CHAIN_ID, undefined, pub), TxRejectedError);
      assert.ok(!e.ok && !d.ok, 'refused both ways');
      assert.equal(d.error.message, e.error.message);
    };

    // Signed transfers of each envelope, with both y-parities: the path without the object.
    for (const type of [0, 1, 2] as const) {
      const parities = new Set<number>();
      for (let nonce = 0n; nonce < 64n && parities.size < 2; nonce++) {
        const raw = sign({ ...base, type, nonce }, key);
        const fields = RLP.decode(type === 0 ? raw : raw.subarray(1)) as Uint8Array[];
        const v = bytesToBigInt(fields[fields.length - 3]!);
        const parity = Number(type === 0 ? (v - 35n) % 2n : v);
        if (parities.has(parity)) continue;
        parities.add(parity);
        assert.ok(lazy(raw, common, CHAIN_ID, undefined), `type ${type}, parity ${parity}, recovered`);
        assert.ok(lazy(raw), `type ${type}, parity ${parity}, known key`);
      }
      assert.equal(parities.size, 2);
    }
    // At each bound EthereumJS checks, still without the object.
    const t = (over: Partial<TxModel>): TxModel => ({ ...base, ...over });
    assert.ok(lazy(crafted(t({ nonce: (1n << 64n) - 2n }), 0n, 1n, 1n)), 'nonce 2^64-2');
    assert.ok(lazy(crafted(t({ value: MAX }), 1n, 1n, 1n)), 'value 2^256-1');
    assert.ok(lazy(crafted(base, 0n, SECP256K1_ORDER - 1n, HALF_N)), 's = n/2');
    assert.ok(lazy(crafted(t({ gas: 16_777_216n }), 0n, 1n, 1n)), 'gas at the EIP-7825 cap');
    assert.ok(
      lazy(crafted(t({ gas: 65_535n, maxFee: MAX / 65_535n, tip: 0n }), 0n, 1n, 1n)),
      'gas x fee cap = 2^256-1',
    );
    const chain1 = chainCommon(1n);
    for (const v of [37n, 38n])
      assert.ok(lazy(crafted(t({ type: 0 }), v, 1n, 1n), chain1, 1n), `legacy v ${v} on chain 1`);
    // One past them: refused, with EthereumJS' own words, as before.
    refused(crafted(t({ nonce: (1n << 64n) - 1n }), 0n, 1n, 1n));
    refused(crafted(t({ value: 1n << 256n }), 0n, 1n, 1n));
    refused(crafted(base, 0n, 1n, HALF_N + 1n));
    refused(crafted(t({ gas: 65_536n, maxFee: 1n << 240n, tip: 0n }), 0n, 1n, 1n));
    refused(crafted(base, 0n, 1n, 1n << 256n)); // s of 33 bytes
    refused(crafted(base, 0n, 1n << 256n, 1n)); // r of 33 bytes
    refused(crafted(base, 2n, 1n, 1n)); // y-parity 2
    {
      // EIP-155 with chain id 0 (v 35): EthereumJS wants v >= 37.
      const raw = crafted(t({ type: 0 }), 35n, 1n, 1n);
      const chain0 = chainCommon(0n);
      const e = onlyThrows(() => decodeTx(raw, chain0, 0n, undefined, pub, { eager: true }), TxRejectedError);
      const d = onlyThrows(() => decodeTx(raw, chain0, 0n, undefined, pub), TxRejectedError);
      assert.ok(!e.ok && !d.ok && d.error.message === e.error.message, 'legacy v 35 refused both ways');
    }
    // Not plain transfers, or not provably acceptable without EthereumJS: the object at once.
    assert.ok(!lazy(crafted(t({ type: 0 }), 27n, 1n, 1n)), 'legacy without EIP-155');
    assert.ok(!lazy(crafted(base, 0n, 0n, 1n)), 'r = 0');
    assert.ok(!lazy(crafted(base, 0n, 1n, 0n)), 's = 0');
    assert.ok(!lazy(crafted(t({ data: Uint8Array.of(1) }), 0n, 1n, 1n)), 'calldata');
    assert.ok(!lazy(crafted(t({ accessList: [[new Uint8Array(20), []]] }), 0n, 1n, 1n)), 'an access list');
    assert.ok(!lazy(crafted(t({ to: null }), 0n, 1n, 1n)), 'a creation');
  });

  it('a plain transfer decoded without the EthereumJS object agrees with the eager decode in every field and refusal', () => {
    const fields = [
      'hashHex',
      'type',
      'dataLength',
      'accessListLength',
      'sender',
      'nonce',
      'gasLimit',
      'feeCap',
      'tipCap',
      'value',
      'chainId',
      'to',
      'cost',
      'minGas',
      'intrinsicGas',
    ] as const;
    let lazyBuilt = 0;
    check(
      fc.property(fc.oneof(signedTransfer, mutated(signedTransfer)), fc.boolean(), (raw, withKey) => {
        const key = withKey ? recoverSenderPublicKey(raw, CHAIN_ID) : undefined;
        const lazy = onlyThrows(() => decodeTx(raw, common, CHAIN_ID, undefined, key), TxRejectedError);
        const eager = onlyThrows(
          () => decodeTx(raw, common, CHAIN_ID, undefined, key, { eager: true }),
          TxRejectedError,
        );
        assert.equal(
          lazy.ok,
          eager.ok,
          `one way refused: ${!lazy.ok ? lazy.error.message : ''}${!eager.ok ? eager.error.message : ''}`,
        );
        if (!lazy.ok && !eager.ok) {
          assert.equal((lazy.error as TxRejectedError).code, (eager.error as TxRejectedError).code);
          assert.equal(lazy.error.message, eager.error.message);
          return;
        }
        if (!lazy.ok || !eager.ok) return;
        const [l, e] = [lazy.value, eager.value];
        for (const f of fields) assert.deepStrictEqual(l[f], e[f], f);
        if (Object.getOwnPropertyDescriptor(l, 'tx')?.get !== undefined) lazyBuilt++;
        // The object built on demand is the one the eager decode built, pinned the same way.
        assert.ok(Object.isFrozen(l.tx));
        assert.deepStrictEqual(Uint8Array.from(l.tx.serialize()), Uint8Array.from(e.tx.serialize()));
        assert.deepStrictEqual(l.tx.hash(), e.tx.hash());
        assert.equal(l.tx.getSenderAddress().toString(), e.tx.getSenderAddress().toString());
        assert.deepStrictEqual(l.tx.getSenderPublicKey(), e.tx.getSenderPublicKey());
        assert.equal(l.tx.getIntrinsicGas(), e.intrinsicGas);
        assert.equal(l.tx, l.tx, 'built once');
      }),
      0.25,
    );
    assert.ok(lazyBuilt > 0, 'some transfers took the path without the EthereumJS object');
  });

  it('hostile bytes are refused only with TxRejectedError; the RPC fast paths agree with decodeTx', () => {
    check(
      fc.property(hostileTx, (raw) => {
        const decoded = onlyThrows(() => decodeTx(raw, common, CHAIN_ID), TxRejectedError);
        // The RPC thread's sender recovery: never throws, never names another sender.
        const pub = onlyThrows(() => recoverSenderPublicKey(raw, CHAIN_ID));
        assert.ok(pub.ok);
        if (pub.value !== undefined) {
          const withKey = onlyThrows(
            () => decodeTx(raw, common, CHAIN_ID, undefined, pub.value),
            TxRejectedError,
          );
          assert.equal(withKey.ok, decoded.ok, 'a known sender key changes nothing but the work');
          if (decoded.ok && withKey.ok) {
            assert.equal(decoded.value.sender, hex(ethAddressFromPublicKey(pub.value)));
            assert.equal(withKey.value.sender, decoded.value.sender);
          }
        }
        // The RPC's fee-cap summary (its caller swallows its errors): agrees on what decodeTx accepts.
        const summary = onlyThrows(() => summarizeRawTransaction(raw), Error);
        if (decoded.ok) {
          assert.ok(
            summary.ok,
            `summary failed on a valid transaction: ${!summary.ok && summary.error.message}`,
          );
          assert.equal(summary.value.type, decoded.value.type);
          assert.equal(summary.value.gas, decoded.value.gasLimit);
          assert.equal(summary.value.feeCap, decoded.value.feeCap);
          assert.equal(summary.value.replayProtected, decoded.value.chainId !== undefined);
        }
        // And on any bytes, what a full decode of the fields would read (the summary before it
        // read the fields in place): the same answer, or a refusal where that one threw.
        const viaDecode = onlyThrows(() => summaryByDecoding(raw), Error);
        assert.equal(summary.ok, viaDecode.ok, 'refused by one reading and not the other');
        if (summary.ok && viaDecode.ok) assert.deepEqual(summary.value, viaDecode.value);
      }),
      3,
    );
  });
});
