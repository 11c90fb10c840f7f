// Decoding and stateless validation of raw transactions (libs/execution/src/txs.ts): what the node
// answers eth_sendRawTransaction and CheckTx with for each malformed or out-of-bounds transaction
// (geth's messages and the CheckTx code), at the boundaries, and the fields of a decoded one.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { eoaCode7702SignAuthorization } from '@ethereumjs/util';
import { keccak256, secp256k1PublicKey } from '@noded/crypto';
import { bigIntToBytes } from '@noded/execution/src/bytes.js';
import { chainCommon } from '@noded/execution/src/evm/common.js';
import { rlpDecode, rlpEncode } from '@noded/execution/src/rlp.js';
import {
  checkStateless,
  checkTxFeeCap,
  type DecodedTx,
  decodeImpersonatedTx,
  decodeTx,
  MAX_TX_GAS_OSAKA,
  TxCode,
  TxRejectedError,
} from '@noded/execution/src/txs.js';
import { addr, CHAIN_ID, ETH, GWEI, key, signTx, type TxFields } from './helpers.js';

const common = chainCommon(CHAIN_ID);
const k = key(21);
const sender = addr(k).slice(2);
const to = `0x${'42'.repeat(20)}` as const;
const none = new Uint8Array(0);
const b = (...bytes: number[]) => Uint8Array.from(bytes);

const decode = (raw: Uint8Array) => decodeTx(raw, common, CHAIN_ID);
const signed = (f: Partial<TxFields>) => decode(signTx(k, { nonce: 0n, to, ...f }));

/** The signed fields of `raw`, with field `i` replaced by `v` (the signature no longer matches). */
function alter(raw: Uint8Array, i: number, v: Uint8Array | Uint8Array[]): Uint8Array {
  const typed = raw[0] < 0xc0;
  const fields = rlpDecode(typed ? raw.subarray(1) : raw) as Array<Uint8Array | Uint8Array[]>;
  fields[i] = v;
  const body = rlpEncode(fields);
  return typed ? Uint8Array.from([raw[0], ...body]) : body;
}
const typed = (type: number, fields: Array<Uint8Array | Uint8Array[]>) =>
  Uint8Array.from([type, ...rlpEncode(fields)]);

function refused(raw: Uint8Array, code: number, message: string | RegExp) {
  assert.throws(
    () => decode(raw),
    (e: unknown) => {
      assert.ok(e instanceof TxRejectedError, `not a TxRejectedError: ${e}`);
      if (typeof message === 'string') assert.equal(e.message, message);
      else assert.match(e.message, message);
      assert.equal(e.code, code, e.message);
      return true;
    },
  );
}

describe('transaction decoding: the envelope', () => {
  it('empty bytes, a byte string and an unknown type byte are refused by name', () => {
    refused(none, TxCode.decode, 'typed transaction too short');
    // 0x80..0xbf start an RLP string: neither a legacy list nor a type byte.
    refused(b(0x80), TxCode.decode, 'rlp: expected input list for types.LegacyTx');
    refused(b(0xbf, 0), TxCode.decode, 'rlp: expected input list for types.LegacyTx');
    refused(b(0x7f, 0xc0), TxCode.typeNotSupported, 'transaction type not supported: type 127');
    refused(b(0, 0xc0), TxCode.typeNotSupported, 'transaction type not supported: type 0');
    refused(b(5, 0xc0), TxCode.typeNotSupported, 'transaction type not supported: type 5');
    refused(
      b(3, 0xc0),
      TxCode.typeNotSupported,
      'transaction type not supported: blob (EIP-4844) transactions are not accepted on this chain, which has no blob data availability',
    );
  });

  it('0xc0 starts a legacy list; types 1, 2 and 4 are typed lists with their field counts', () => {
    refused(b(0xc0), TxCode.decode, 'rlp: legacy transaction has 0 fields, want 9');
    refused(b(1, 0xc0), TxCode.decode, 'rlp: type 1 transaction has 0 fields, want 11');
    refused(b(2, 0xc0), TxCode.decode, 'rlp: type 2 transaction has 0 fields, want 12');
    refused(b(4, 0xc0), TxCode.decode, 'rlp: type 4 transaction has 0 fields, want 13');
    const legacy = signTx(k, { type: 0, nonce: 0n, to });
    const fields = rlpDecode(legacy) as Uint8Array[];
    refused(rlpEncode(fields.slice(0, 8)), TxCode.decode, 'rlp: legacy transaction has 8 fields, want 9');
    refused(rlpEncode([...fields, none]), TxCode.decode, 'rlp: legacy transaction has 10 fields, want 9');
    const t2 = signTx(k, { type: 2, nonce: 0n, to });
    const f2 = rlpDecode(t2.subarray(1)) as Uint8Array[];
    refused(typed(2, f2.slice(0, 11)), TxCode.decode, 'rlp: type 2 transaction has 11 fields, want 12');
  });

  it('bytes that are no RLP, or a typed payload that is no list, are a decode error', () => {
    refused(b(2, 0xc5, 1), TxCode.decode, /^rlp: ./);
    refused(b(0xc5, 1), TxCode.decode, /^rlp: ./);
    refused(b(2, 0x80), TxCode.decode, 'rlp: expected input list');
  });

  it('integers must be canonical: a leading zero byte in any integer field of any type', () => {
    const cases: Array<[Uint8Array, number, string]> = [
      [signTx(k, { type: 0, nonce: 0n, to }), 1, 'legacy transaction'],
      [signTx(k, { type: 1, nonce: 0n, to }), 2, 'type 1 transaction'],
      [signTx(k, { type: 2, nonce: 0n, to }), 3, 'type 2 transaction'],
    ];
    for (const [raw, field, what] of cases) {
      refused(
        alter(raw, field, b(0, 1)),
        TxCode.decode,
        `rlp: non-canonical integer (leading zero bytes) for ${what}`,
      );
      // A zero is the empty string; a single 0x00 byte is not canonical either.
      refused(
        alter(raw, field, b(0)),
        TxCode.decode,
        `rlp: non-canonical integer (leading zero bytes) for ${what}`,
      );
    }
    const t4 = typed(4, [
      b(0x7a, 0x69),
      none,
      none,
      b(0, 1),
      b(0x52, 0x08),
      b(...new Array(20).fill(0x42)),
      none,
      none,
      [],
      [],
      none,
      b(1),
      b(1),
    ]);
    refused(t4, TxCode.decode, 'rlp: non-canonical integer (leading zero bytes) for type 4 transaction');
    // A list in an integer's place names the field.
    refused(
      alter(signTx(k, { type: 1, nonce: 0n, to }), 5, [b(1)]),
      TxCode.decode,
      'rlp: expected input string or byte for an integer, got a list (field 5 of type 1 transaction)',
    );
  });
});

describe('transaction decoding: chain id, gas cap, fees, signature', () => {
  it('legacy v: 27/28 is unprotected, 35 + 2 * chain id is EIP-155, anything else is refused', () => {
    const unprotected = decode(signTx(k, { type: 0, nonce: 0n, to, unprotected: true }));
    assert.equal(unprotected.chainId, undefined);
    assert.equal(unprotected.sender, sender);
    const protectedTx = decode(signTx(k, { type: 0, nonce: 0n, to }));
    assert.equal(protectedTx.chainId, CHAIN_ID);
    assert.equal(protectedTx.sender, sender);
    const legacy = signTx(k, { type: 0, nonce: 0n, to });
    refused(
      alter(legacy, 6, b(35)),
      TxCode.invalidChainId,
      `invalid chain id for signer: have 0 want ${CHAIN_ID}`,
    );
    refused(
      alter(legacy, 6, b(38)),
      TxCode.invalidChainId,
      `invalid chain id for signer: have 1 want ${CHAIN_ID}`,
    );
    for (const v of [0, 1, 26, 29, 34]) {
      refused(
        alter(legacy, 6, v === 0 ? none : b(v)),
        TxCode.invalidSender,
        'invalid sender: invalid transaction v, r, s values',
      );
    }
  });

  it('a typed transaction for another chain id is refused with both ids', () => {
    refused(
      signTx(k, { type: 2, nonce: 0n, to, chainId: 1n }),
      TxCode.invalidChainId,
      `invalid chain id for signer: have 1 want ${CHAIN_ID}`,
    );
    refused(
      signTx(k, { type: 1, nonce: 0n, to, chainId: CHAIN_ID + 1n }),
      TxCode.invalidChainId,
      `invalid chain id for signer: have ${CHAIN_ID + 1n} want ${CHAIN_ID}`,
    );
    refused(
      signTx(k, { type: 0, nonce: 0n, to }, 5n),
      TxCode.invalidChainId,
      `invalid chain id for signer: have 5 want ${CHAIN_ID}`,
    );
  });

  it('EIP-7825: a gas limit of exactly 2^24 is accepted, one more is refused, in every type', () => {
    assert.equal(MAX_TX_GAS_OSAKA, 16_777_216n);
    assert.equal(signed({ gas: MAX_TX_GAS_OSAKA }).gasLimit, MAX_TX_GAS_OSAKA);
    const over = bigIntToBytes(MAX_TX_GAS_OSAKA + 1n);
    const message = 'transaction gas limit too high (cap: 16777216, tx: 16777217)';
    refused(alter(signTx(k, { type: 0, nonce: 0n, to }), 2, over), TxCode.gasLimit, message);
    refused(alter(signTx(k, { type: 1, nonce: 0n, to }), 3, over), TxCode.gasLimit, message);
    refused(alter(signTx(k, { type: 2, nonce: 0n, to }), 4, over), TxCode.gasLimit, message);
    const t4 = typed(4, [
      b(0x7a, 0x69),
      none,
      none,
      b(1),
      over,
      b(...new Array(20).fill(0x42)),
      none,
      none,
      [],
      [],
      none,
      b(1),
      b(1),
    ]);
    refused(t4, TxCode.gasLimit, message);
  });

  it('a priority fee above the fee cap is refused (types 2 and 4); equal is accepted', () => {
    const message = 'max priority fee per gas higher than max fee per gas';
    const t2 = signTx(k, { type: 2, nonce: 0n, to, maxFee: 5n * GWEI, tip: 5n * GWEI });
    assert.equal(decode(t2).tipCap, 5n * GWEI);
    refused(alter(t2, 2, bigIntToBytes(5n * GWEI + 1n)), TxCode.tipAboveFeeCap, message);
    const t4 = typed(4, [
      b(0x7a, 0x69),
      none,
      b(2),
      b(1),
      b(0x52, 0x08),
      b(...new Array(20).fill(0x42)),
      none,
      none,
      [],
      [],
      none,
      b(1),
      b(1),
    ]);
    refused(t4, TxCode.tipAboveFeeCap, message);
  });

  it('what EthereumJS refuses is an invalid transaction, an oversized initcode its own code', () => {
    const create = signTx(k, { nonce: 0n, to: null, data: '0x00', gas: 16_000_000n });
    refused(
      alter(create, 7, new Uint8Array(49_153)),
      TxCode.initcodeTooLarge,
      'max initcode size exceeded: it is 49153 while the max is 49152',
    );
    refused(
      alter(signTx(k, { nonce: 0n, to }), 9, b(2)),
      TxCode.decode,
      'invalid transaction: The y-parity of the transaction should either be 0 or 1',
    );
    refused(
      alter(signTx(k, { nonce: 0n, to }), 5, new Uint8Array(19)),
      TxCode.decode,
      /^invalid transaction: .*[^)]$/,
    );
  });

  it('a signature that recovers no key is an invalid sender', () => {
    refused(
      alter(signTx(k, { nonce: 0n, to }), 10, b(5)),
      TxCode.invalidSender,
      'invalid sender: invalid signature',
    );
  });
});

describe('transaction decoding: the decoded fields', () => {
  it('an EIP-1559 transfer', () => {
    const raw = signTx(k, {
      type: 2,
      nonce: 7n,
      to,
      value: 1234n,
      maxFee: 30n * GWEI,
      tip: 2n * GWEI,
      gas: 50_000n,
    });
    const d = decode(raw);
    assert.equal(d.type, 2);
    assert.equal(d.sender, sender);
    assert.equal(d.nonce, 7n);
    assert.equal(d.gasLimit, 50_000n);
    assert.equal(d.feeCap, 30n * GWEI);
    assert.equal(d.tipCap, 2n * GWEI);
    assert.equal(d.value, 1234n);
    assert.equal(d.chainId, CHAIN_ID);
    assert.equal(d.to, to.slice(2));
    assert.equal(d.cost, 1234n + 50_000n * 30n * GWEI);
    assert.equal(d.intrinsicGas, 21_000n);
    assert.equal(d.minGas, 21_000n);
    assert.deepEqual(d.hash, keccak256(raw));
    assert.equal(d.hashHex, `0x${Buffer.from(keccak256(raw)).toString('hex')}`);
    assert.equal(d.raw, raw);
    assert.equal(d.impersonated, undefined);
    // The EthereumJS object answers with the pinned sender and hash, and is frozen.
    assert.equal(d.tx.getSenderAddress().toString(), addr(k));
    assert.deepEqual(d.tx.getSenderPublicKey(), secp256k1PublicKey(k));
    assert.deepEqual(d.tx.hash(), d.hash);
    assert.ok(Object.isFrozen(d.tx));
  });

  it('legacy and EIP-2930 transactions pay their gas price as both fee cap and tip', () => {
    for (const type of [0, 1] as const) {
      const d = signed({ type, gasPrice: 3n * GWEI, value: 5n });
      assert.equal(d.type, type);
      assert.equal(d.feeCap, 3n * GWEI);
      assert.equal(d.tipCap, 3n * GWEI);
      assert.equal(d.cost, 5n + 21_000n * 3n * GWEI);
    }
  });

  it('a creation has no recipient; calldata raises the minimum gas to the EIP-7623 floor', () => {
    const create = signed({ to: null, data: '0x6000', gas: 100_000n });
    assert.equal(create.to, null);
    assert.equal(create.minGas, create.intrinsicGas);
    assert.ok(create.intrinsicGas > 53_000n);
    // 1000 non-zero bytes: intrinsic 21000 + 16 * 1000, floor 21000 + 10 * 4 * 1000.
    const data = signed({ data: `0x${'01'.repeat(1000)}`, gas: 100_000n });
    assert.equal(data.intrinsicGas, 37_000n);
    assert.equal(data.minGas, 61_000n);
  });

  it('an EIP-7702 transaction decodes with its signer', () => {
    const auth = eoaCode7702SignAuthorization({ chainId: '0x7a69', address: to, nonce: '0x0' }, key(22));
    const d = decode(signTx(k, { type: 4, nonce: 0n, to, gas: 100_000n, authorizationList: [auth] }));
    assert.equal(d.type, 4);
    assert.equal(d.sender, sender);
  });

  it('a trusted caller may pass the hash and the sender key it recovered; recovery is skipped', () => {
    const raw = signTx(k, { nonce: 0n, to });
    const hash = new Uint8Array(32).fill(7);
    const other = secp256k1PublicKey(key(23));
    const d = decodeTx(raw, common, CHAIN_ID, hash, other);
    assert.equal(d.hash, hash);
    assert.equal(d.sender, addr(key(23)).slice(2));
    assert.deepEqual(d.tx.getSenderPublicKey(), other);
    assert.equal(d.tx.getSenderAddress().toString(), addr(key(23)));
    assert.equal(d.tx.hash(), hash);
  });

  it('an impersonated sender is taken as given and the signature is not read', () => {
    const raw = alter(signTx(k, { nonce: 0n, to }), 10, b(5)); // no key recovers from it
    const who = new Uint8Array(20).fill(0xab);
    const d = decodeImpersonatedTx(raw, who, common, CHAIN_ID);
    assert.equal(d.sender, 'ab'.repeat(20));
    assert.equal(d.impersonated, true);
    assert.equal(d.tx.getSenderAddress().toString(), `0x${'ab'.repeat(20)}`);
    assert.throws(() => decodeImpersonatedTx(b(3, 0xc0), who, common, CHAIN_ID), TxRejectedError);
  });
});

describe('stateless checks before the pool (app.toml limits) and the RPC fee cap', () => {
  const limits = { maxTxGas: 100_000n, minGasPrice: GWEI, maxGasPrice: 1000n * GWEI };
  const rejects = (d: DecodedTx, l: typeof limits, code: number, message: string) =>
    assert.throws(
      () => checkStateless(d, l),
      (e: unknown) => e instanceof TxRejectedError && e.code === code && e.message === message,
    );

  it('the gas limit may equal block_gas_limit, not exceed it', () => {
    const d = signed({ gas: 100_000n });
    checkStateless(d, limits);
    rejects(d, { ...limits, maxTxGas: 99_999n }, TxCode.gasLimit, 'exceeds block gas limit');
  });

  it('the gas limit must cover the intrinsic gas, then the calldata floor', () => {
    checkStateless(signed({ gas: 21_000n }), limits);
    rejects(
      signed({ gas: 20_999n }),
      limits,
      TxCode.intrinsicGas,
      'intrinsic gas too low: gas 20999, minimum needed 21000',
    );
    const data = `0x${'01'.repeat(1000)}` as const;
    rejects(
      signed({ data, gas: 36_999n }),
      limits,
      TxCode.intrinsicGas,
      'intrinsic gas too low: gas 36999, minimum needed 37000',
    );
    rejects(
      signed({ data, gas: 60_999n }),
      limits,
      TxCode.intrinsicGas,
      'insufficient gas for floor data gas cost: gas 60999, minimum needed 61000',
    );
    checkStateless(signed({ data, gas: 61_000n }), limits);
  });

  it('the fee cap may equal min_gas_price and max_gas_price, not go past them', () => {
    checkStateless(signed({ maxFee: GWEI, tip: 0n }), limits);
    checkStateless(signed({ maxFee: 1000n * GWEI }), limits);
    rejects(
      signed({ maxFee: GWEI - 1n, tip: 0n }),
      limits,
      TxCode.underpriced,
      `transaction underpriced: gas fee cap ${GWEI - 1n}, minimum needed ${GWEI}`,
    );
    rejects(
      signed({ maxFee: 1000n * GWEI + 1n }),
      limits,
      TxCode.gasPriceTooHigh,
      `gas price above max_gas_price: gas fee cap ${1000n * GWEI + 1n}, max_gas_price ${1000n * GWEI}`,
    );
  });

  it("the RPC fee cap: gas * fee cap up to the cap, geth's message past it, 0 for no cap", () => {
    const d = signed({ gas: 1_000_000n, maxFee: 1500n * GWEI });
    checkTxFeeCap(d, (3n * ETH) / 2n);
    checkTxFeeCap(d, 0n);
    assert.throws(
      () => checkTxFeeCap(d, (5n * ETH) / 4n),
      (e: unknown) =>
        e instanceof TxRejectedError &&
        e.code === TxCode.feeCapExceeded &&
        e.message === 'tx fee (1.50 ether) exceeds the configured cap (1.25 ether)',
    );
    assert.throws(() => checkTxFeeCap(d, (3n * ETH) / 2n - 1n), TxRejectedError);
  });
});
