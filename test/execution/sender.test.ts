import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { RLP } from '@ethereumjs/rlp';
import { eoaCode7702SignAuthorization } from '@ethereumjs/util';
import { secp256k1PublicKey } from '@noded/crypto';
import { recoverSenderPublicKey, senderRecovery } from '@noded/execution/src/txs.js';
import { CHAIN_ID, GWEI, key, signTx, type TxFields } from './helpers.js';

const k = key(7);
const pub = Buffer.from(secp256k1PublicKey(k)).toString('hex');
const recovered = (raw: Uint8Array, chainId = CHAIN_ID) => {
  const p = recoverSenderPublicKey(raw, chainId);
  return p && Buffer.from(p).toString('hex');
};
const to = `0x${'42'.repeat(20)}` as const;
const accessList = [{ address: to, storageKeys: [`0x${'01'.repeat(32)}` as const] }];

// Every transaction type, with and without the optional parts that change the signing payload.
const shapes: Array<[string, TxFields]> = [
  ['legacy without EIP-155', { type: 0, nonce: 0n, to, unprotected: true }],
  ['legacy with EIP-155', { type: 0, nonce: 5n, to, value: 12345n }],
  ['legacy contract creation', { type: 0, nonce: 1n, to: null, data: '0x6000', gas: 100_000n }],
  ['EIP-2930 with an access list', { type: 1, nonce: 2n, to, accessList, gas: 30_000n }],
  ['EIP-1559 transfer', { type: 2, nonce: 0n, to, value: 10n ** 18n }],
  [
    'EIP-1559 with data and an access list',
    { type: 2, nonce: 300n, to, data: '0xa9059cbb', accessList, gas: 60_000n },
  ],
  ['EIP-1559 creation', { type: 2, nonce: 3n, to: null, data: `0x${'60'.repeat(100)}`, gas: 200_000n }],
];

describe('sender recovery without building a transaction object (the JSON-RPC thread)', () => {
  for (const [name, f] of shapes) {
    it(`recovers the signer of a ${name} transaction`, () => {
      assert.equal(recovered(signTx(k, f)), pub);
    });
  }

  it('recovers the signer of an EIP-7702 transaction with an authorization list', () => {
    const auth = eoaCode7702SignAuthorization({ chainId: '0x7a69', address: to, nonce: '0x0' }, key(8));
    const raw = signTx(k, { type: 4, nonce: 0n, to, gas: 100_000n, authorizationList: [auth] });
    assert.equal(recovered(raw), pub);
  });

  it('leaves to the full decoder what it would refuse (undefined, not a wrong key)', () => {
    const good = signTx(k, { type: 2, nonce: 0n, to, tip: GWEI });
    assert.equal(recovered(good, CHAIN_ID + 1n), undefined, 'typed: other chain id');
    assert.equal(recovered(signTx(k, { type: 0, nonce: 0n, to }), 1n), undefined, 'EIP-155: other chain id');
    assert.equal(recovered(new Uint8Array(0)), undefined, 'empty');
    assert.equal(recovered(Uint8Array.of(3, 0xc0)), undefined, 'blob type');
    assert.equal(recovered(good.subarray(0, good.length - 5)), undefined, 'truncated');

    const fields = RLP.decode(good.subarray(1)) as Uint8Array[];
    const reencode = (f: unknown[]) => Buffer.concat([Uint8Array.of(2), RLP.encode(f as never)]);
    assert.equal(recovered(reencode(fields)), pub, 'the re-encoding itself is faithful');
    assert.equal(
      recovered(reencode([...fields.slice(0, 9), Uint8Array.of(2), fields[10], fields[11]])),
      undefined,
      'yParity 2',
    );
    assert.equal(
      recovered(reencode([...fields.slice(0, 10), new Uint8Array(0), fields[11]])),
      undefined,
      'r = 0',
    );
    // EIP-2: s above n/2 is refused even though (r, n - s) with the other parity is the same key.
    const n = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;
    const highS = Buffer.from(
      (n - BigInt(`0x${Buffer.from(fields[11]).toString('hex')}`)).toString(16).padStart(64, '0'),
      'hex',
    );
    const flipped = Uint8Array.of(fields[9].length === 0 ? 1 : 0);
    assert.equal(
      recovered(reencode([...fields.slice(0, 9), flipped, fields[10], highS])),
      undefined,
      'high s',
    );
    assert.equal(recovered(reencode(fields.slice(0, 11))), undefined, 'a field missing');
  });

  it('never returns a key for altered bytes that differs from what a re-signing would give', () => {
    // Any change to a signed field changes the payload, so the key recovered is some other key
    // (or none); it must never be the signer's.
    const raw = signTx(k, { type: 2, nonce: 9n, to, value: 77n, data: '0x1234' });
    for (let i = 1; i < raw.length - 66; i++) {
      const bad = Uint8Array.from(raw);
      bad[i] ^= 0x01;
      const got = recovered(bad);
      assert.notEqual(got, pub, `byte ${i} flipped`);
    }
  });

  it('gives no key for shapes decodeTx refuses: an extra field, a list for v/r/s, padded r/s, legacy v', () => {
    const good = signTx(k, { type: 2, nonce: 0n, to, tip: GWEI });
    const fields = RLP.decode(good.subarray(1)) as Uint8Array[];
    const reencode = (f: unknown[]) => Buffer.concat([Uint8Array.of(2), RLP.encode(f as never)]);
    assert.equal(recovered(reencode([...fields, new Uint8Array(0)])), undefined, 'a 13th field');
    for (const i of [9, 10, 11]) {
      const f = [...fields] as unknown[];
      f[i] = [fields[i]];
      assert.equal(recovered(reencode(f)), undefined, `a list as field ${i}`);
    }
    for (const i of [10, 11]) {
      const f = [...fields] as unknown[];
      f[i] = Buffer.concat([new Uint8Array(33 - fields[i].length), fields[i]]);
      assert.equal(recovered(reencode(f)), undefined, `field ${i} padded to 33 bytes`);
    }
    // Unprotected signatures with v = 27 and with v = 28 (the parity depends on the nonce signed).
    const seen = new Set<number>();
    for (let nonce = 0n; seen.size < 2 && nonce < 32n; nonce++) {
      const raw = signTx(k, { type: 0, nonce, to, unprotected: true });
      seen.add((RLP.decode(raw) as Uint8Array[])[6][0]);
      assert.equal(recovered(raw), pub, `unprotected, nonce ${nonce}`);
    }
    assert.deepEqual([...seen].sort(), [27, 28]);
    const legacy = RLP.decode(signTx(k, { type: 0, nonce: 0n, to, unprotected: true })) as Uint8Array[];
    const v = legacy[6][0];
    for (const bad of [v + 2, v + 4, v + 6, 0, 1]) {
      const f = [...legacy];
      f[6] = bad === 0 ? new Uint8Array(0) : Uint8Array.of(bad);
      assert.equal(recovered(RLP.encode(f as never)), undefined, `legacy v ${bad}`);
    }
  });

  it('senderRecovery is recoverSenderPublicKey bound to the chain id', () => {
    const raw = signTx(k, { type: 2, nonce: 1n, to });
    assert.equal(Buffer.from(senderRecovery(CHAIN_ID)(raw) ?? []).toString('hex'), pub);
    assert.equal(senderRecovery(CHAIN_ID + 1n)(raw), undefined);
  });
});
