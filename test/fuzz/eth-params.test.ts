// Fuzzing the Ethereum JSON-RPC parameter decoding (libs/rpc/src/eth/params.ts) and every method of
// the API behind it: arbitrary JSON params fail only with DecodeError inside a decoder, a -32602
// RpcError from decodeArgs, and an RpcError or ChainError from a method (never a TypeError, which
// the server would answer as -32603 "internal error"). Well-formed values decode to what they encode.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { EthApi } from '@noded/rpc/src/eth/api.js';
import { FilterManager } from '@noded/rpc/src/eth/filters.js';
import { DevAccounts, defaultEthRpcOptions, RpcError, RpcErrorCode } from '@noded/rpc/src/eth/index.js';
import {
  accessList,
  address,
  big,
  blockNumber,
  blockRef,
  bool,
  bytes,
  DecodeError,
  type Decoder,
  decodeArgs,
  filterCriteria,
  float,
  hash,
  hexOrDecimal64,
  opt,
  req,
  rpcId,
  stateOverride,
  string,
  traceConfig,
  transactionArgs,
  uint,
  uint64,
} from '@noded/rpc/src/eth/params.js';
import { ChainError, EventBus, type Hex, silentLogger } from '@noded/types';
import fc from 'fast-check';
import { FakeChain } from '../rpc-eth/fake-chain.js';
import { DEV_ADDRS, DEV_KEYS } from '../rpc-eth/helpers.js';
import { bytesOf, check, checkAsync, hex, onlyRejects, onlyThrows, rec } from './fuzz.js';

const DECODERS: Record<string, Decoder<unknown>> = {
  address,
  hash,
  bytes,
  big,
  uint64,
  uint,
  bool,
  string,
  rpcId,
  float,
  hexOrDecimal64,
  blockNumber,
  blockRef,
  accessList,
  transactionArgs,
  stateOverride,
  filterCriteria,
  traceConfig,
};

// ---- hostile JSON values -----------------------------------------------------------------------

/** Mixed-case 0x hex of `b`. */
const mixedHex = (b: Uint8Array, upper: boolean[]) =>
  `0x${[...hex(b)].map((c, i) => (upper[i % Math.max(1, upper.length)] ? c.toUpperCase() : c)).join('')}`;
const hexOf = (n: number) =>
  fc.tuple(bytesOf(n), fc.array(fc.boolean(), { maxLength: 8 })).map(([b, u]) => mixedHex(b, u));
const quantity = fc.oneof(
  fc.bigInt({ min: 0n, max: 1n << 70n }).map((n) => `0x${n.toString(16)}`),
  fc.bigInt({ min: 0n, max: 1n << 260n }).map((n) => `0x${n.toString(16)}`),
);
const TAGS = ['latest', 'pending', 'safe', 'finalized', 'earliest'];
/** Strings that reach every branch of the hex and number rules. */
const tricky = fc.oneof(
  fc.constantFrom(
    '',
    '0x',
    '0X',
    '0x0',
    '0x00',
    '0x01',
    '0xg',
    '0x 1',
    '1',
    '-1',
    '1.5',
    '1e3',
    'null',
    ...TAGS,
  ),
  quantity,
  hexOf(20),
  hexOf(32),
  hexOf(1),
  fc.uint8Array({ maxLength: 40 }).map((b) => `0x${hex(b)}`),
  fc.uint8Array({ maxLength: 40 }).map((b) => hex(b)),
  fc.string({ maxLength: 70 }),
  fc.integer().map(String),
);
const KEYS = [
  'from',
  'to',
  'gas',
  'gasPrice',
  'maxFeePerGas',
  'maxPriorityFeePerGas',
  'value',
  'nonce',
  'data',
  'input',
  'accessList',
  'chainId',
  'type',
  'address',
  'storageKeys',
  'blockHash',
  'blockNumber',
  'requireCanonical',
  'fromBlock',
  'toBlock',
  'topics',
  'tracer',
  'tracerConfig',
  'timeout',
  'disableStorage',
  'stateOverrides',
  'blockOverrides',
  'balance',
  'code',
  'state',
  'stateDiff',
  'types',
  'primaryType',
  'domain',
  'message',
  '__proto__',
  'constructor',
];
const ethValue: fc.Arbitrary<unknown> = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    tricky,
    fc.jsonValue({ maxDepth: 1 }),
    fc.constantFrom(null, true, false, 0, -1, 1.5, 2 ** 64, Number.MAX_SAFE_INTEGER),
    fc.array(tie('value'), { maxLength: 4 }),
    fc.dictionary(fc.oneof(fc.constantFrom(...KEYS), tricky), tie('value'), { maxKeys: 4 }),
  ),
})).value;
/** Values that pass the decoders, so that methods get past decodeArgs into their own checks. */
const small = fc.bigInt({ min: 0n, max: 100_000n }).map((n) => `0x${n.toString(16)}`);
const wellFormed: fc.Arbitrary<unknown> = fc.oneof(
  hexOf(20).map((h) => h.toLowerCase()),
  hexOf(32).map((h) => h.toLowerCase()),
  small,
  quantity,
  fc.constantFrom(...TAGS, true, false, null, 0, 1, 50, 99.5, '0x1', '0x0', '1s', 'callTracer'),
  fc.array(fc.oneof(fc.integer({ min: -5, max: 105 }), fc.double()), { maxLength: 4 }),
  fc.array(hexOf(32), { maxLength: 3 }),
  fc.record(
    {
      from: hexOf(20),
      to: hexOf(20),
      gas: small,
      gasPrice: small,
      maxFeePerGas: quantity,
      maxPriorityFeePerGas: quantity,
      value: quantity,
      nonce: small,
      data: fc.uint8Array({ maxLength: 8 }).map((b) => `0x${hex(b)}`),
      input: fc.uint8Array({ maxLength: 8 }).map((b) => `0x${hex(b)}`),
      type: fc.constantFrom('0x0', '0x1', '0x2', '0x3', '0x4', '0x7f'),
    },
    { requiredKeys: [] },
  ),
  fc.record(
    {
      fromBlock: fc.oneof(small, fc.constantFrom(...TAGS)),
      toBlock: fc.oneof(small, quantity, fc.constantFrom(...TAGS)),
      blockHash: hexOf(32),
      address: fc.oneof(hexOf(20), fc.array(hexOf(20), { maxLength: 2 })),
      topics: fc.array(fc.oneof(fc.constant(null), hexOf(32), fc.array(hexOf(32), { maxLength: 2 })), {
        maxLength: 5,
      }),
    },
    { requiredKeys: [] },
  ),
  fc.record(
    {
      tracer: fc.constantFrom('', 'callTracer', 'prestateTracer', 'js'),
      tracerConfig: fc.dictionary(
        fc.constantFrom('onlyTopCall', 'withLog', 'diffMode'),
        fc.jsonValue({ maxDepth: 1 }),
      ),
      timeout: fc.constantFrom('1s', '0', '10ms', '1h', 'x', '-1s', '.5s', '1.s'),
      disableStorage: fc.boolean(),
    },
    { requiredKeys: [] },
  ),
);
/** Positional params as a client might send them (usually a list, sometimes not). */
const paramsArb = fc.oneof(
  { weight: 8, arbitrary: fc.array(ethValue, { maxLength: 4 }) },
  { weight: 8, arbitrary: fc.array(wellFormed, { maxLength: 4 }) },
  { weight: 1, arbitrary: ethValue },
);

// ---- the API over a fake chain -----------------------------------------------------------------

const chain = new FakeChain(new EventBus());
for (let n = 0; n < 3; n++) chain.mine();
const KNOWN_HASHES = chain.blocks.map((b) => b.hash);

function makeApi(): EthApi {
  const options = { ...defaultEthRpcOptions, evmTimeoutMs: 1000 };
  return new EthApi({
    chain,
    options,
    devAccounts: new DevAccounts(DEV_KEYS),
    filters: new FilterManager({ cap: 100, timeoutMs: 0, maxItems: 1000 }),
    clientVersion: 'noded/fuzz',
    peerCount: () => 0,
    syncing: () => false,
    logger: silentLogger,
  });
}

/** Values of one parameter kind: mostly well-formed (to get past decodeArgs), sometimes anything. */
const someHash = fc.oneof(hexOf(32), fc.constantFrom(...KNOWN_HASHES));
const someAddress = fc.oneof(hexOf(20), fc.constantFrom(...DEV_ADDRS));
const someBlock = fc.oneof(
  fc.constantFrom(...TAGS),
  small,
  fc.constantFrom('0x0', '0x1', '0x3', '0x4'),
  quantity,
);
const txObject = fc.record(
  {
    from: someAddress,
    to: someAddress,
    gas: small,
    gasPrice: small,
    maxFeePerGas: quantity,
    maxPriorityFeePerGas: small,
    value: fc.oneof(small, quantity),
    nonce: small,
    data: fc.uint8Array({ maxLength: 8 }).map((b) => `0x${hex(b)}`),
    input: fc.uint8Array({ maxLength: 8 }).map((b) => `0x${hex(b)}`),
    accessList: fc.array(
      fc.record({ address: someAddress, storageKeys: fc.array(hexOf(32), { maxLength: 2 }) }),
    ),
    chainId: fc.constantFrom('0x7a69', '0x1', '0x0'),
    type: fc.constantFrom('0x0', '0x1', '0x2', '0x3', '0x4', '0x7f'),
  },
  { requiredKeys: [] },
);
const traceObject = fc.record(
  {
    tracer: fc.constantFrom('', 'callTracer', 'prestateTracer', 'js'),
    tracerConfig: fc.dictionary(
      fc.constantFrom('onlyTopCall', 'withLog', 'diffMode'),
      fc.jsonValue({ maxDepth: 1 }),
    ),
    timeout: fc.constantFrom('1s', '0', '10ms', '1h', 'x', '-1s', '.5s', '1.s', '1h1m', ''),
    disableStorage: fc.boolean(),
    stateOverrides: fc.constant({}),
  },
  { requiredKeys: [] },
);
const KIND: Record<string, fc.Arbitrary<unknown>> = {
  address: someAddress,
  hash: someHash,
  block: fc.oneof(
    someBlock,
    someHash,
    fc.record({ blockNumber: someBlock }),
    fc.record({ blockHash: someHash, requireCanonical: fc.boolean() }, { requiredKeys: ['blockHash'] }),
  ),
  blockNumber: someBlock,
  bool: fc.boolean(),
  index: fc.oneof(fc.constantFrom('0x0', '0x1', '0x2'), small),
  count: fc.oneof(
    fc.integer({ min: -1, max: 2000 }),
    fc.constantFrom('0x1', '0x400', '10', '0x10000000000000000'),
  ),
  percentiles: fc.array(fc.oneof(fc.integer({ min: -5, max: 105 }), fc.double()), { maxLength: 5 }),
  tx: txObject,
  override: fc.dictionary(
    someAddress,
    fc.record(
      {
        balance: quantity,
        nonce: small,
        code: fc.uint8Array({ maxLength: 4 }).map((b) => `0x${hex(b)}`),
        state: fc.dictionary(hexOf(32), hexOf(32), { maxKeys: 2 }),
        stateDiff: fc.dictionary(hexOf(32), hexOf(32), { maxKeys: 2 }),
      },
      { requiredKeys: [] },
    ),
    { maxKeys: 2 },
  ),
  filter: fc.record(
    {
      fromBlock: someBlock,
      toBlock: someBlock,
      blockHash: someHash,
      address: fc.oneof(someAddress, fc.array(someAddress, { maxLength: 2 })),
      topics: fc.array(
        fc.oneof(fc.constant(null), hexOf(32), fc.array(fc.option(hexOf(32)), { maxLength: 2 })),
        {
          maxLength: 5,
        },
      ),
    },
    { requiredKeys: [] },
  ),
  trace: traceObject,
  bytes: fc.uint8Array({ maxLength: 120 }).map((b) => `0x${hex(b)}`),
  slot: fc.oneof(hexOf(32), fc.string({ maxLength: 70 }), fc.uint8Array({ maxLength: 40 }).map(hex)),
  slots: fc.array(fc.oneof(hexOf(32), fc.string({ maxLength: 70 })), { maxLength: 3 }),
  id: fc.oneof(fc.string({ maxLength: 40 }), hexOf(16)),
  text: fc.string({ maxLength: 20 }),
  typedData: fc.record(
    {
      types: fc.dictionary(
        fc.constantFrom('EIP712Domain', 'Mail', 'Person', 'X'),
        fc.array(
          fc.record({
            name: fc.constantFrom('name', 'from', 'to', 'wallet', 'contents', 'chainId'),
            type: fc.constantFrom(
              'string',
              'address',
              'uint256',
              'bytes32',
              'Person',
              'Person[]',
              'bool',
              'int8',
              'bytes',
            ),
          }),
          { maxLength: 3 },
        ),
      ),
      primaryType: fc.constantFrom('Mail', 'Person', 'X', 'EIP712Domain'),
      domain: fc.dictionary(fc.constantFrom('name', 'chainId', 'verifyingContract'), ethValue, {
        maxKeys: 3,
      }),
      message: fc.dictionary(fc.constantFrom('name', 'from', 'to', 'wallet', 'contents'), ethValue, {
        maxKeys: 3,
      }),
    },
    { requiredKeys: [] },
  ),
};
/** Parameter kinds of each method with params, in order (from its decodeArgs specs in api.ts). */
const SIGNATURES: Record<string, string[]> = {
  eth_feeHistory: ['count', 'blockNumber', 'percentiles'],
  eth_getBalance: ['address', 'block'],
  eth_getTransactionCount: ['address', 'block'],
  eth_getCode: ['address', 'block'],
  eth_getStorageAt: ['address', 'slot', 'block'],
  eth_getProof: ['address', 'slots', 'block'],
  eth_call: ['tx', 'block', 'override'],
  eth_estimateGas: ['tx', 'block', 'override'],
  eth_createAccessList: ['tx', 'block'],
  eth_sendRawTransaction: ['bytes'],
  eth_getBlockByNumber: ['blockNumber', 'bool'],
  eth_getBlockByHash: ['hash', 'bool'],
  eth_getHeaderByNumber: ['blockNumber'],
  eth_getHeaderByHash: ['hash'],
  eth_getBlockReceipts: ['block'],
  eth_getBlockTransactionCountByNumber: ['blockNumber'],
  eth_getBlockTransactionCountByHash: ['hash'],
  eth_getTransactionByHash: ['hash'],
  eth_getTransactionByBlockHashAndIndex: ['hash', 'index'],
  eth_getTransactionByBlockNumberAndIndex: ['blockNumber', 'index'],
  eth_getTransactionReceipt: ['hash'],
  eth_getUncleByBlockHashAndIndex: ['hash', 'index'],
  eth_getUncleByBlockNumberAndIndex: ['blockNumber', 'index'],
  eth_getUncleCountByBlockHash: ['hash'],
  eth_getUncleCountByBlockNumber: ['blockNumber'],
  eth_getLogs: ['filter'],
  eth_sendTransaction: ['tx'],
  eth_sign: ['address', 'bytes'],
  personal_sign: ['bytes', 'address', 'text'],
  eth_signTypedData_v4: ['address', 'typedData'],
  eth_newFilter: ['filter'],
  eth_newPendingTransactionFilter: ['bool'],
  eth_uninstallFilter: ['id'],
  eth_getFilterChanges: ['id'],
  eth_getFilterLogs: ['id'],
  eth_unsubscribe: ['id'],
  eth_subscribe: ['text', 'filter'],
  web3_sha3: ['bytes'],
  txpool_contentFrom: ['address'],
  debug_traceTransaction: ['hash', 'trace'],
  debug_traceCall: ['tx', 'block', 'trace'],
  debug_traceBlockByNumber: ['blockNumber', 'trace'],
  debug_traceBlockByHash: ['hash', 'trace'],
};

/** Params for `method`: its own kinds (sometimes one replaced by anything, or cut short), or anything. */
function paramsFor(method: string): fc.Arbitrary<unknown> {
  const kinds = SIGNATURES[method] ?? [];
  const typed = fc
    .tuple(
      fc.tuple(
        ...kinds.map((k) => fc.oneof({ weight: 6, arbitrary: KIND[k]! }, { weight: 1, arbitrary: ethValue })),
      ),
      fc.integer({ min: 0, max: kinds.length }),
    )
    .map(([values, n]) => (values as unknown[]).slice(0, Math.max(n, 1)));
  return fc.oneof(
    { weight: 4, arbitrary: kinds.length > 0 ? typed : fc.constant([]) },
    { weight: 1, arbitrary: paramsArb },
  );
}

/** ChainError is checked by shape, as the server does (a remote chain may rebuild it). */
function isDocumented(e: Error): boolean {
  if (e instanceof RpcError) return e.code !== RpcErrorCode.internal;
  return (
    e instanceof ChainError || (e.name === 'ChainError' && typeof (e as { code?: unknown }).code === 'number')
  );
}

describe('fuzz: Ethereum JSON-RPC params', () => {
  for (const [name, dec] of Object.entries(DECODERS)) {
    it(`${name}: any JSON value decodes or fails with DecodeError`, () => {
      check(
        fc.property(ethValue, (v) => {
          onlyThrows(() => dec(v), DecodeError);
        }),
      );
    });
  }

  it("decodeArgs: any params fail only with RpcError -32602 (geth's positional rules)", () => {
    const specs = [req(blockRef), opt(transactionArgs), req(uint64), opt(filterCriteria)] as const;
    check(
      fc.property(paramsArb, fc.nat(4), (params, n) => {
        const r = onlyThrows(() => decodeArgs(params, specs.slice(0, n)), RpcError);
        if (!r.ok) assert.equal((r.error as RpcError).code, RpcErrorCode.invalidParams);
      }),
    );
  });

  it('fixed-size hex, bytes and quantities decode to their lowercase canonical form', () => {
    check(
      fc.property(
        bytesOf(20),
        bytesOf(32),
        fc.uint8Array({ maxLength: 50 }),
        fc.array(fc.boolean(), { maxLength: 8 }),
        fc.bigInt({ min: 0n, max: (1n << 256n) - 1n }),
        fc.bigInt({ min: 0n, max: (1n << 64n) - 1n }),
        (a, h, data, upper, n, u) => {
          assert.equal(address(mixedHex(a, upper)), `0x${hex(a)}`);
          assert.equal(hash(mixedHex(h, upper)), `0x${hex(h)}`);
          assert.equal(bytes(mixedHex(data, upper)), `0x${hex(data)}`);
          assert.equal(big(`0x${n.toString(16)}`), n);
          assert.equal(uint64(`0x${u.toString(16)}`), u);
          assert.equal(hexOrDecimal64(u.toString()), u);
          assert.equal(hexOrDecimal64(`0x${u.toString(16)}`), u);
        },
      ),
    );
  });

  it('block parameters: tags, numbers, hashes and EIP-1898 objects decode to what they name', () => {
    const num = fc.bigInt({ min: 0n, max: (1n << 63n) - 1n });
    check(
      fc.property(fc.constantFrom(...TAGS), num, bytesOf(32), fc.boolean(), (tag, n, h, canonical) => {
        const q = `0x${n.toString(16)}`;
        assert.deepStrictEqual(blockNumber(tag), { tag });
        assert.deepStrictEqual(blockNumber(q), { number: n });
        assert.deepStrictEqual(blockRef(tag), { tag });
        assert.deepStrictEqual(blockRef(q), { number: n });
        assert.deepStrictEqual(blockRef(`0x${hex(h)}`), { hash: `0x${hex(h)}`, requireCanonical: false });
        assert.deepStrictEqual(blockRef({ blockNumber: q }), { number: n });
        assert.deepStrictEqual(blockRef({ blockHash: `0x${hex(h)}`, requireCanonical: canonical }), {
          hash: `0x${hex(h)}`,
          requireCanonical: canonical,
        });
      }),
    );
  });

  it('transaction args, access lists and filters decode to the values they were built from', () => {
    const h = (b: Uint8Array) => `0x${hex(b)}` as Hex;
    const q = (n: bigint) => `0x${n.toString(16)}`;
    const u64 = fc.bigInt({ min: 0n, max: (1n << 64n) - 1n });
    const u256 = fc.bigInt({ min: 0n, max: (1n << 256n) - 1n });
    const list = fc.array(
      rec({ address: bytesOf(20).map(h), storageKeys: fc.array(bytesOf(32).map(h), { maxLength: 3 }) }),
      { maxLength: 3 },
    );
    check(
      fc.property(
        rec({
          from: bytesOf(20).map(h),
          to: bytesOf(20).map(h),
          gas: u64,
          maxFeePerGas: u256,
          value: u256,
          nonce: u64,
          input: fc.uint8Array({ maxLength: 40 }).map(h),
          accessList: list,
          chainId: u256,
          type: u64,
        }),
        fc.array(bytesOf(20).map(h), { maxLength: 3 }),
        fc.array(fc.option(fc.array(bytesOf(32).map(h), { minLength: 1, maxLength: 2 }), { nil: null }), {
          maxLength: 4,
        }),
        (args, addresses, topics) => {
          const json = {
            ...args,
            gas: q(args.gas),
            maxFeePerGas: q(args.maxFeePerGas),
            value: q(args.value),
            nonce: q(args.nonce),
            chainId: q(args.chainId),
            type: q(args.type),
          };
          assert.deepStrictEqual(transactionArgs(JSON.parse(JSON.stringify(json))), args);
          assert.deepStrictEqual(accessList(args.accessList), args.accessList);
          assert.deepStrictEqual(
            filterCriteria({ fromBlock: 'latest', toBlock: q(args.gas >> 1n), address: addresses, topics }),
            { fromBlock: { tag: 'latest' }, toBlock: { number: args.gas >> 1n }, addresses, topics },
          );
        },
      ),
    );
  });
});

describe('fuzz: Ethereum JSON-RPC methods', () => {
  const api = makeApi();
  const methods = [...api.methods.keys()].sort();

  it('the signature table names every method that takes params', () => {
    for (const m of Object.keys(SIGNATURES)) assert.ok(api.methods.has(m), `${m} is not a method`);
  });

  it(`every method (${methods.length}) answers any params or fails with an RpcError or ChainError`, async () => {
    const call = fc.constantFrom(...methods).chain((m) => fc.tuple(fc.constant(m), paramsFor(m)));
    await checkAsync(
      fc.asyncProperty(call, async ([method, params]) => {
        const handler = api.methods.get(method)!;
        const r = await onlyRejects(
          () => handler(params, { transport: 'http', afterReply: [] }),
          RpcError,
          ChainError,
        );
        if (!r.ok && !isDocumented(r.error))
          assert.fail(`${method} answered ${JSON.stringify(params)}: ${r.error.message}`);
      }),
      0.1,
    );
  });
});
