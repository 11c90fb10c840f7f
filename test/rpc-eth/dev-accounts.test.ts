// Dev accounts (chain-local): eth_sendTransaction, eth_sign, personal_sign, eth_signTypedData_v4,
// checked against ethers' independent implementations; refusals when there are no dev accounts.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  DevAccountKeyError,
  DevAccounts,
  parseTypedData,
  typedDataDigest,
} from '@noded/rpc/src/eth/index.js';
import type { Hex } from '@noded/types';
import { hexlify, Transaction, TypedDataEncoder, toUtf8Bytes, verifyMessage, verifyTypedData } from 'ethers';
import { BASE_FEE, LOGGER, TIP, word } from './fake-chain.js';
import { call, DEV_ADDRS, DEV_KEYS, type Harness, rpc, startHarness } from './helpers.js';

const from = DEV_ADDRS[0]!;

const mail = {
  domain: {
    name: 'Ether Mail',
    version: '1',
    chainId: 31337,
    verifyingContract: '0xCcCCccccCCCCcCCCCCCcCcCccCcCCCcCcccccccC',
  },
  types: {
    Person: [
      { name: 'name', type: 'string' },
      { name: 'wallets', type: 'address[]' },
    ],
    Mail: [
      { name: 'from', type: 'Person' },
      { name: 'to', type: 'Person[]' },
      { name: 'contents', type: 'string' },
      { name: 'amount', type: 'int256' },
      { name: 'flag', type: 'bool' },
      { name: 'tag', type: 'bytes4' },
      { name: 'blob', type: 'bytes' },
      { name: 'matrix', type: 'uint8[2][]' },
    ],
  },
  message: {
    from: { name: 'Cow', wallets: ['0xCD2a3d9F938E13CD947Ec05AbC7FE734Df8DD826'] },
    to: [
      {
        name: 'Bob',
        wallets: ['0xbBbBBBBbbBBBbbbBbbBbbbbBBbBbbbbBbBbbBBbB', '0xB0B0b0b0b0b0B000000000000000000000000000'],
      },
    ],
    contents: 'Hello, Bob!',
    amount: '-12345',
    flag: true,
    tag: '0x01020304',
    blob: '0xdeadbeef00',
    matrix: [
      [1, 2],
      [3, 4],
    ],
  },
};

describe('dev accounts', () => {
  let h: Harness;
  before(async () => {
    h = await startHarness({ options: { txFeeCap: 10n ** 17n } });
  });
  after(() => h.close());

  it('derives the addresses of its keys and rejects bad keys without echoing them', () => {
    assert.deepEqual(new DevAccounts(DEV_KEYS).accounts(), DEV_ADDRS);
    assert.throws(
      () => new DevAccounts(['0x1234']),
      (e: Error) => e instanceof DevAccountKeyError && /key #0/.test(e.message),
    );
    assert.throws(() => new DevAccounts([`0x${'0'.repeat(64)}`]), /not a valid secp256k1 private key/);
  });

  it('eth_sendTransaction fills nonce, gas and EIP-1559 fees, signs type 2 by default', async () => {
    const hash = await call<Hex>(h.url, 'eth_sendTransaction', [
      { from, to: LOGGER, value: '0x10', data: '0xabcd' },
    ]);
    const pending = h.chain.pending.at(-1)!;
    assert.equal(pending.hash, hash);
    assert.equal(pending.type, 2);
    assert.equal(pending.from, from);
    assert.equal(pending.nonce, 0n);
    assert.equal(pending.gas, 21_032n, 'gas from eth_estimateGas');
    assert.equal(pending.maxPriorityFeePerGas, TIP);
    assert.equal(pending.maxFeePerGas, 2n * BASE_FEE + TIP);
    assert.equal(pending.chainId, 31337n);
    assert.equal(pending.value, 16n);
    assert.equal(pending.input, '0xabcd');
    const second = await call<Hex>(h.url, 'eth_sendTransaction', [{ from, to: LOGGER }]);
    assert.equal(h.chain.pending.find((t) => t.hash === second)!.nonce, 1n, 'pending nonce counts the pool');
  });

  it('gasPrice selects a legacy EIP-155 transaction, accessList with gasPrice type 1', async () => {
    const legacyHash = await call<Hex>(h.url, 'eth_sendTransaction', [
      { from: DEV_ADDRS[1], to: LOGGER, gas: '0x5208', gasPrice: '0x3b9aca00' },
    ]);
    const legacy = h.chain.pending.find((t) => t.hash === legacyHash)!;
    assert.equal(legacy.type, 0);
    assert.equal(legacy.chainId, 31337n);
    assert.equal(legacy.gasPrice, 1_000_000_000n);
    const alHash = await call<Hex>(h.url, 'eth_sendTransaction', [
      {
        from: DEV_ADDRS[1],
        to: LOGGER,
        gasPrice: '0x3b9aca00',
        accessList: [{ address: LOGGER, storageKeys: [word(3)] }],
      },
    ]);
    const al = h.chain.pending.find((t) => t.hash === alHash)!;
    assert.equal(al.type, 1);
    assert.equal(al.nonce, 1n);
    assert.deepEqual(al.accessList, [{ address: LOGGER, storageKeys: [word(3)] }]);
    // The raw bytes the chain received decode to the same transaction in ethers.
    const contract = await call<Hex>(h.url, 'eth_sendTransaction', [
      { from: DEV_ADDRS[1], data: '0x6000', type: '0x2' },
    ]);
    const created = h.chain.pending.find((t) => t.hash === contract)!;
    assert.equal(created.to, null);
  });

  it('eth_sendTransaction refusals: unknown account, fee cap, chain id, empty creation', async () => {
    assert.deepEqual((await rpc(h.url, 'eth_sendTransaction', [{ from: LOGGER, to: LOGGER }])).error, {
      code: -32000,
      message: 'unknown account',
    });
    assert.deepEqual(
      (
        await rpc(h.url, 'eth_sendTransaction', [
          { from, to: LOGGER, gas: '0x8f0d180', gasPrice: '0x3b9aca00' },
        ])
      ).error,
      {
        code: -32000,
        message: 'tx fee (0.15 BTC) exceeds the configured cap (0.10 BTC)',
      },
    );
    assert.deepEqual(
      (await rpc(h.url, 'eth_sendTransaction', [{ from, to: LOGGER, chainId: '0x1' }])).error,
      {
        code: -32000,
        message: "chainId does not match node's (have=1, want=31337)",
      },
    );
    assert.deepEqual((await rpc(h.url, 'eth_sendTransaction', [{ from }])).error, {
      code: -32000,
      message: 'contract creation without any data provided',
    });
  });

  it('signed transactions verify in ethers', async () => {
    const dev = new DevAccounts(DEV_KEYS);
    const signed = dev.signTransaction(from, {
      type: 2,
      chainId: 31337n,
      nonce: 7n,
      gas: 30_000n,
      to: LOGGER,
      value: 1n,
      data: '0x00ff',
      maxFeePerGas: 5n,
      maxPriorityFeePerGas: 2n,
      accessList: [{ address: LOGGER, storageKeys: [word(9)] }],
    });
    const tx = Transaction.from(hexlify(signed.raw));
    assert.equal(tx.from?.toLowerCase(), from);
    assert.equal(tx.hash, signed.hash);
    assert.equal(tx.nonce, 7);
    assert.equal(tx.data, '0x00ff');
    const legacy = Transaction.from(
      hexlify(
        dev.signTransaction(from, {
          type: 0,
          chainId: 31337n,
          nonce: 0n,
          gas: 21_000n,
          to: null,
          value: 0n,
          data: '0x60',
          gasPrice: 9n,
          accessList: [],
        }).raw,
      ),
    );
    assert.equal(legacy.from?.toLowerCase(), from);
    assert.equal(legacy.chainId, 31337n);
    assert.equal(legacy.to, null);
  });

  it('eth_sign and personal_sign produce EIP-191 signatures', async () => {
    const message = 'hello noded';
    const data = hexlify(toUtf8Bytes(message));
    const sig = await call<string>(h.url, 'eth_sign', [from, data]);
    assert.match(sig, /^0x[0-9a-f]{130}$/);
    assert.ok(['1b', '1c'].includes(sig.slice(-2)), 'v is 27 or 28');
    assert.equal(verifyMessage(message, sig).toLowerCase(), from);
    const personal = await call<string>(h.url, 'personal_sign', [data, DEV_ADDRS[2]]);
    assert.equal(verifyMessage(message, personal).toLowerCase(), DEV_ADDRS[2]);
    assert.deepEqual((await rpc(h.url, 'eth_sign', [LOGGER, data])).error, {
      code: -32000,
      message: 'unknown account',
    });
    assert.equal((await rpc(h.url, 'eth_sign', [from, 'hello'])).error?.code, -32602);
  });

  it('eth_signTypedData_v4 matches ethers for nested structs, arrays and every atomic kind', async () => {
    const payload = TypedDataEncoder.getPayload(mail.domain, mail.types, mail.message);
    assert.equal(
      hexlify(typedDataDigest(parseTypedData(payload))),
      TypedDataEncoder.hash(mail.domain, mail.types, mail.message),
    );
    const asString = await call<string>(h.url, 'eth_signTypedData_v4', [from, JSON.stringify(payload)]);
    assert.equal(verifyTypedData(mail.domain, mail.types, mail.message, asString).toLowerCase(), from);
    const asObject = await call<string>(h.url, 'eth_signTypedData_v4', [from, payload]);
    assert.equal(asObject, asString);
    // Without an explicit EIP712Domain type, the domain type is derived from the domain's fields.
    const { EIP712Domain: _omit, ...types } = payload.types;
    const derived = await call<string>(h.url, 'eth_signTypedData_v4', [from, { ...payload, types }]);
    assert.equal(derived, asString);
    const bad = await rpc(h.url, 'eth_signTypedData_v4', [from, { ...payload, primaryType: 'Missing' }]);
    assert.deepEqual(bad.error, {
      code: -32602,
      message: 'typed data: primaryType Missing is not defined in types',
    });
    const outOfRange = await rpc(h.url, 'eth_signTypedData_v4', [
      from,
      { ...payload, message: { ...payload.message, matrix: [[256, 1]] } },
    ]);
    assert.deepEqual(outOfRange.error, {
      code: -32602,
      message: 'typed data: 256 is out of range for uint8',
    });
  });
});

describe('no dev accounts (mainnet, testnet)', () => {
  let h: Harness;
  before(async () => {
    h = await startHarness({ dev: false });
  });
  after(() => h.close());

  it('eth_accounts is empty and every signing method refuses clearly', async () => {
    assert.deepEqual(await call(h.url, 'eth_accounts'), []);
    const calls: Array<[string, unknown[]]> = [
      ['eth_sendTransaction', [{ from, to: LOGGER }]],
      ['eth_sign', [from, '0x00']],
      ['personal_sign', ['0x00', from]],
      ['eth_signTypedData_v4', [from, {}]],
    ];
    for (const [method, params] of calls) {
      const r = await rpc(h.url, method, params);
      assert.equal(r.error?.code, -32000, method);
      assert.match(r.error!.message, /^unknown account: this node holds no unlocked accounts/, method);
    }
  });
});
