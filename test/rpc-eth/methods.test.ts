// Method results and their geth formatting, block parameters, limits that live in methods.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { PrunedStateError } from '@noded/execution';
import type { EthTx, Hex } from '@noded/types';
import { getAddress, keccak256, Wallet } from 'ethers';
import {
  addr,
  BASE_FEE,
  HALT,
  LOGGER,
  REVERT_CUSTOM,
  REVERT_EMPTY,
  REVERT_PANIC,
  REVERT_STRING,
  TIP,
  TRANSFER_TOPIC,
  word,
} from './fake-chain.js';
import { call, DEV_ADDRS, DEV_KEYS, type Harness, rpc, startHarness } from './helpers.js';

const wallet = new Wallet(DEV_KEYS[1]!);
const sender = DEV_ADDRS[1]!;
const GWEI = 1_000_000_000n;
const keys = (o: unknown) => Object.keys(o as object).sort();

const COMMON_TX_FIELDS = [
  'blockHash',
  'blockNumber',
  'from',
  'gas',
  'gasPrice',
  'hash',
  'input',
  'nonce',
  'r',
  's',
  'to',
  'transactionIndex',
  'type',
  'v',
  'value',
];

describe('eth methods and formatting', () => {
  let h: Harness;
  const hashes: Record<string, Hex> = {};
  let block1: Record<string, unknown>;

  before(async () => {
    h = await startHarness({
      options: { logsCap: 3, blockRangeCap: 20, feeHistoryCap: 4, txFeeCap: 10n ** 18n },
    });
    const base = { chainId: 31337n, to: LOGGER, value: 5n };
    hashes['legacy'] = await call<Hex>(h.url, 'eth_sendRawTransaction', [
      await wallet.signTransaction({ ...base, type: 0, nonce: 0, gasLimit: 21_000n, gasPrice: 2n * GWEI }),
    ]);
    hashes['accessList'] = await call<Hex>(h.url, 'eth_sendRawTransaction', [
      await wallet.signTransaction({
        ...base,
        type: 1,
        nonce: 1,
        gasLimit: 30_000n,
        gasPrice: 2n * GWEI,
        accessList: [{ address: LOGGER, storageKeys: [word(1)] }],
      }),
    ]);
    hashes['dynamic'] = await call<Hex>(h.url, 'eth_sendRawTransaction', [
      await wallet.signTransaction({
        ...base,
        type: 2,
        nonce: 2,
        gasLimit: 21_000n,
        maxFeePerGas: 3n * GWEI,
        maxPriorityFeePerGas: 2n,
      }),
    ]);
    const setCode: EthTx = {
      hash: keccak256('0x04aa') as Hex,
      type: 4,
      chainId: 31337n,
      nonce: 3n,
      from: sender,
      to: sender,
      value: 0n,
      gas: 50_000n,
      gasPrice: 3n * GWEI,
      maxFeePerGas: 3n * GWEI,
      maxPriorityFeePerGas: 2n,
      input: '0x',
      accessList: [],
      authorizationList: [
        { chainId: 31337n, address: LOGGER, nonce: 4n, yParity: 1n, r: word(0xabc), s: word(0xdef) },
      ],
      v: 1n,
      r: word(0x1234),
      s: word(0x5678),
      yParity: 1n,
      blockHash: null,
      blockNumber: null,
      transactionIndex: null,
    };
    h.chain.inject(setCode);
    hashes['setCode'] = setCode.hash;
    h.chain.mine();
    block1 = await call(h.url, 'eth_getBlockByNumber', ['0x1', false]);
  });
  after(() => h.close());

  it('simple node facts', async () => {
    assert.equal(await call(h.url, 'eth_chainId'), '0x7a69');
    assert.equal(await call(h.url, 'net_version'), '31337');
    assert.equal(await call(h.url, 'net_listening'), true);
    assert.equal(await call(h.url, 'net_peerCount'), '0x3');
    assert.equal(await call(h.url, 'web3_clientVersion'), 'noded/v0.1.0/linux-x64/node20');
    assert.equal(await call(h.url, 'web3_sha3', ['0x68656c6c6f']), keccak256('0x68656c6c6f'));
    assert.equal(await call(h.url, 'eth_blockNumber'), '0x1');
    assert.equal(await call(h.url, 'eth_syncing'), false);
    assert.equal(await call(h.url, 'eth_mining'), false);
    assert.equal(await call(h.url, 'eth_hashrate'), '0x0');
    assert.equal(await call(h.url, 'eth_protocolVersion'), '0x41');
    assert.equal(await call(h.url, 'eth_coinbase'), addr(0xc0ffee));
    assert.equal(await call(h.url, 'eth_gasPrice'), `0x${(BASE_FEE + TIP).toString(16)}`);
    assert.equal(await call(h.url, 'eth_maxPriorityFeePerGas'), `0x${TIP.toString(16)}`);
    assert.deepEqual(await call(h.url, 'rpc_modules'), {
      eth: '1.0',
      net: '1.0',
      web3: '1.0',
      txpool: '1.0',
      debug: '1.0',
    });
    assert.deepEqual(await call(h.url, 'eth_accounts'), DEV_ADDRS);
  });

  it('blocks: geth fields, hex quantities, hashes or full transactions, nulls for unknown', async () => {
    assert.deepEqual(keys(block1), [
      'baseFeePerGas',
      'difficulty',
      'extraData',
      'gasLimit',
      'gasUsed',
      'hash',
      'logsBloom',
      'miner',
      'mixHash',
      'nonce',
      'number',
      'parentHash',
      'receiptsRoot',
      'sha3Uncles',
      'size',
      'stateRoot',
      'timestamp',
      'totalDifficulty',
      'transactions',
      'transactionsRoot',
      'uncles',
      'withdrawals',
      'withdrawalsRoot',
    ]);
    assert.equal(block1['number'], '0x1');
    assert.equal(block1['gasLimit'], '0x1c9c380');
    assert.equal(block1['difficulty'], '0x0');
    assert.equal(block1['baseFeePerGas'], '0x3b9aca00');
    assert.deepEqual(block1['uncles'], []);
    assert.deepEqual(block1['withdrawals'], []);
    assert.deepEqual(block1['transactions'], [
      hashes['legacy'],
      hashes['accessList'],
      hashes['dynamic'],
      hashes['setCode'],
    ]);
    const byHash = await call<Record<string, unknown>>(h.url, 'eth_getBlockByHash', [block1['hash'], true]);
    assert.equal((byHash['transactions'] as Array<{ hash: string }>)[2]!.hash, hashes['dynamic']);
    assert.equal(await call(h.url, 'eth_getBlockByNumber', ['0x99', false]), null);
    assert.equal(await call(h.url, 'eth_getBlockByHash', [word(1), false]), null);
    assert.equal(await call(h.url, 'eth_getBlockTransactionCountByNumber', ['latest']), '0x4');
    assert.equal(await call(h.url, 'eth_getBlockTransactionCountByHash', [block1['hash']]), '0x4');
    assert.equal(await call(h.url, 'eth_getBlockTransactionCountByHash', [word(9)]), null);
    assert.equal(await call(h.url, 'eth_getUncleCountByBlockNumber', ['0x1']), '0x0');
    assert.equal(await call(h.url, 'eth_getUncleCountByBlockHash', [word(9)]), null);
    assert.equal(await call(h.url, 'eth_getUncleByBlockNumberAndIndex', ['0x1', '0x0']), null);
    const header = await call<Record<string, unknown>>(h.url, 'eth_getHeaderByNumber', ['0x1']);
    assert.equal(header['transactions'], undefined);
    assert.equal(header['hash'], block1['hash']);
  });

  it('block tags: latest, pending, safe and finalized are the committed head; earliest is 0', async () => {
    for (const tag of ['latest', 'pending', 'safe', 'finalized']) {
      const b = await call<Record<string, unknown>>(h.url, 'eth_getBlockByNumber', [tag, false]);
      assert.equal(b['number'], '0x1', tag);
    }
    const earliest = await call<Record<string, unknown>>(h.url, 'eth_getBlockByNumber', ['earliest', false]);
    assert.equal(earliest['number'], '0x0');
  });

  it('transactions: the per-type fields geth returns', async () => {
    const legacy = await call<Record<string, unknown>>(h.url, 'eth_getTransactionByHash', [hashes['legacy']]);
    assert.deepEqual(keys(legacy), [...COMMON_TX_FIELDS, 'chainId'].sort());
    assert.ok(
      [62709n, 62710n].includes(BigInt(legacy['v'] as string)),
      'EIP-155 v = 31337 * 2 + 35 + yParity',
    );
    assert.equal(legacy['from'], sender);
    assert.equal(legacy['to'], LOGGER);
    assert.equal(legacy['gasPrice'], '0x77359400');
    assert.equal(legacy['blockNumber'], '0x1');
    assert.equal(legacy['transactionIndex'], '0x0');
    assert.equal(legacy['type'], '0x0');
    assert.match(legacy['r'] as string, /^0x[1-9a-f][0-9a-f]*$/, 'r is a quantity without leading zeros');
    const al = await call<Record<string, unknown>>(h.url, 'eth_getTransactionByHash', [hashes['accessList']]);
    assert.deepEqual(keys(al), [...COMMON_TX_FIELDS, 'accessList', 'chainId', 'yParity'].sort());
    assert.deepEqual(al['accessList'], [{ address: LOGGER, storageKeys: [word(1)] }]);
    const dyn = await call<Record<string, unknown>>(h.url, 'eth_getTransactionByHash', [hashes['dynamic']]);
    assert.deepEqual(
      keys(dyn),
      [
        ...COMMON_TX_FIELDS,
        'accessList',
        'chainId',
        'yParity',
        'maxFeePerGas',
        'maxPriorityFeePerGas',
      ].sort(),
    );
    assert.equal(dyn['gasPrice'], `0x${(BASE_FEE + 2n).toString(16)}`, 'mined: effective gas price');
    assert.equal(dyn['maxFeePerGas'], '0xb2d05e00');
    const sc = await call<Record<string, unknown>>(h.url, 'eth_getTransactionByHash', [hashes['setCode']]);
    assert.deepEqual(sc['authorizationList'], [
      { chainId: '0x7a69', address: LOGGER, nonce: '0x4', yParity: '0x1', r: '0xabc', s: '0xdef' },
    ]);
    assert.equal(sc['r'], '0x1234');
    assert.equal(await call(h.url, 'eth_getTransactionByHash', [word(77)]), null);
    const byIndex = await call<Record<string, unknown>>(h.url, 'eth_getTransactionByBlockNumberAndIndex', [
      '0x1',
      '0x1',
    ]);
    assert.equal(byIndex['hash'], hashes['accessList']);
    const byHashIndex = await call<Record<string, unknown>>(h.url, 'eth_getTransactionByBlockHashAndIndex', [
      block1['hash'],
      '0x3',
    ]);
    assert.equal(byHashIndex['hash'], hashes['setCode']);
    assert.equal(await call(h.url, 'eth_getTransactionByBlockNumberAndIndex', ['0x1', '0x9']), null);
  });

  it('receipts and logs', async () => {
    const r = await call<Record<string, unknown>>(h.url, 'eth_getTransactionReceipt', [hashes['dynamic']]);
    assert.deepEqual(keys(r), [
      'blockHash',
      'blockNumber',
      'contractAddress',
      'cumulativeGasUsed',
      'effectiveGasPrice',
      'from',
      'gasUsed',
      'logs',
      'logsBloom',
      'status',
      'to',
      'transactionHash',
      'transactionIndex',
      'type',
    ]);
    assert.equal(r['status'], '0x1');
    assert.equal(r['type'], '0x2');
    assert.equal(r['contractAddress'], null);
    assert.equal(r['cumulativeGasUsed'], '0xf618');
    const log = (r['logs'] as Array<Record<string, unknown>>)[0]!;
    assert.deepEqual(log, {
      address: LOGGER,
      topics: [TRANSFER_TOPIC, word(BigInt(sender))],
      data: word(5),
      blockNumber: '0x1',
      transactionHash: hashes['dynamic'],
      transactionIndex: '0x2',
      blockHash: block1['hash'],
      blockTimestamp: '0x6553f101',
      logIndex: '0x2',
      removed: false,
    });
    assert.equal(await call(h.url, 'eth_getTransactionReceipt', [word(77)]), null);
    const all = await call<unknown[]>(h.url, 'eth_getBlockReceipts', ['0x1']);
    assert.equal(all.length, 4);
    const byHash = await call<unknown[]>(h.url, 'eth_getBlockReceipts', [{ blockHash: block1['hash'] }]);
    assert.equal(byHash.length, 4);
    assert.equal(await call(h.url, 'eth_getBlockReceipts', ['0x50']), null);
  });

  it('eth_getLogs: address and topic filters, blockHash, ranges and caps', async () => {
    // The chain is handed the range and criteria as parsed here; matching them is the executor's
    // (test/rpc-eth/executor-logs.test.ts), the fake returns every log of the range.
    const logs = await call<Array<Record<string, unknown>>>(h.url, 'eth_getLogs', [
      { fromBlock: '0x0', toBlock: 'latest', address: LOGGER, topics: [TRANSFER_TOPIC] },
    ]);
    assert.equal(logs.length, 3);
    assert.deepEqual(h.chain.seen.logFilter, {
      fromBlock: 0n,
      toBlock: 1n,
      addresses: [LOGGER],
      topics: [[TRANSFER_TOPIC]],
      limit: 4,
    });
    await call<unknown[]>(h.url, 'eth_getLogs', [
      { fromBlock: '0x1', address: [getAddress(addr(1)), addr(2)] },
    ]);
    assert.deepEqual(h.chain.seen.logFilter, {
      fromBlock: 1n,
      toBlock: 1n,
      addresses: [addr(1), addr(2)],
      topics: [],
      limit: 4,
    });
    const upper = word(BigInt(sender)).toUpperCase().replace('0X', '0x') as Hex;
    await call<unknown[]>(h.url, 'eth_getLogs', [{ fromBlock: '0x0', topics: [null, [upper, word(7)], []] }]);
    assert.deepEqual(h.chain.seen.logFilter?.topics, [null, [word(BigInt(sender)), word(7)], null]);
    const byHash = await call<unknown[]>(h.url, 'eth_getLogs', [{ blockHash: block1['hash'] }]);
    assert.equal(byHash.length, 3);
    assert.deepEqual((await rpc(h.url, 'eth_getLogs', [{ fromBlock: '0x2', toBlock: '0x1' }])).error, {
      code: -32602,
      message: 'invalid block range params',
    });
    assert.deepEqual(await call(h.url, 'eth_getLogs', [{ fromBlock: '0x5', toBlock: '0x9' }]), []);
    assert.deepEqual((await rpc(h.url, 'eth_getLogs', [{ blockHash: word(3) }])).error, {
      code: -32000,
      message: 'unknown block',
    });
    assert.deepEqual(
      (await rpc(h.url, 'eth_getLogs', [{ blockHash: block1['hash'], fromBlock: '0x1' }])).error,
      {
        code: -32602,
        message:
          'invalid argument 0: cannot specify both BlockHash and FromBlock/ToBlock, choose one or the other',
      },
    );
    assert.deepEqual((await rpc(h.url, 'eth_getLogs', [{ topics: [null, null, null, null, null] }])).error, {
      code: -32000,
      message: 'exceed max topics',
    });
    assert.deepEqual((await rpc(h.url, 'eth_getLogs', [{ address: '0x12' }])).error, {
      code: -32602,
      message:
        'invalid argument 0: invalid address: hex has invalid length 1 after decoding; expected 20 for address',
    });
    // logs_cap = 3: a fourth log makes the same query fail, and the chain was asked for at most cap + 1.
    await call(h.url, 'eth_sendRawTransaction', [
      await wallet.signTransaction({
        chainId: 31337n,
        to: LOGGER,
        type: 2,
        nonce: 4,
        gasLimit: 21_000n,
        maxFeePerGas: 3n * GWEI,
        maxPriorityFeePerGas: 1n,
      }),
    ]);
    h.chain.mine();
    assert.deepEqual((await rpc(h.url, 'eth_getLogs', [{ fromBlock: '0x0', toBlock: 'latest' }])).error, {
      code: -32005,
      message: 'query returned more than 3 results',
    });
    assert.equal(h.chain.seen.logFilter?.limit, 4);
    // block_range_cap = 20: toBlock - fromBlock may be 20, not 21.
    h.chain.mineMany(25);
    assert.deepEqual((await rpc(h.url, 'eth_getLogs', [{ fromBlock: '0x2', toBlock: '0x17' }])).error, {
      code: -32602,
      message: 'exceed maximum block range 20',
    });
    assert.equal(
      (await call<unknown[]>(h.url, 'eth_getLogs', [{ fromBlock: '0x2', toBlock: '0x16' }])).length,
      1,
    );
  });

  it('state queries: balances, nonces, code, storage, proofs, EIP-1898, pruned and future heights', async () => {
    h.chain.balances.set(sender, 10n ** 21n);
    assert.equal(await call(h.url, 'eth_getBalance', [sender, 'latest']), '0x3635c9adc5dea00000');
    assert.equal(
      await call(h.url, 'eth_getBalance', [sender, { blockNumber: '0x1' }]),
      '0x3635c9adc5dea00000',
    );
    assert.equal(
      await call(h.url, 'eth_getBalance', [sender, { blockHash: block1['hash'], requireCanonical: true }]),
      '0x3635c9adc5dea00000',
    );
    assert.equal(await call(h.url, 'eth_getBalance', [sender, block1['hash']]), '0x3635c9adc5dea00000');
    assert.deepEqual((await rpc(h.url, 'eth_getBalance', [sender, { blockHash: word(5) }])).error, {
      code: -32000,
      message: 'header for hash not found',
    });
    assert.deepEqual(
      (await rpc(h.url, 'eth_getBalance', [sender, { blockHash: word(5), blockNumber: '0x1' }])).error,
      {
        code: -32602,
        message: 'invalid argument 1: cannot specify both BlockHash and BlockNumber, choose one or the other',
      },
    );
    assert.deepEqual((await rpc(h.url, 'eth_getBalance', [sender, '0xffff'])).error, {
      code: -32000,
      message: 'header not found',
    });
    assert.equal(await call(h.url, 'eth_getTransactionCount', [sender, 'latest']), '0x5');
    assert.equal(await call(h.url, 'eth_getCode', [LOGGER, 'latest']), '0x');
    assert.equal(await call(h.url, 'eth_getStorageAt', [LOGGER, '0x0', 'latest']), word(0x2a));
    assert.deepEqual(
      (await rpc(h.url, 'eth_getStorageAt', [LOGGER, `0x${'1'.repeat(66)}`, 'latest'])).error,
      {
        code: -32000,
        message: 'unable to decode storage key: storage key too long (want at most 32 bytes)',
      },
    );
    const proof = await call<Record<string, unknown>>(h.url, 'eth_getProof', [sender, ['0x0'], 'latest']);
    assert.equal(proof['balance'], '0x3635c9adc5dea00000');
    assert.equal(proof['nonce'], '0x5');
    assert.deepEqual(proof['storageProof'], [{ key: word(0), value: '0x2a', proof: [] }]);
    h.chain.oldest = 5n;
    // The executor's own error class (a ChainError subclass) answers with its code, not -32603.
    const original = h.chain.getBalance.bind(h.chain);
    h.chain.getBalance = async () => {
      throw new PrunedStateError(1, 100);
    };
    const real = await rpc(h.url, 'eth_getBalance', [sender, 'latest']);
    h.chain.getBalance = original;
    assert.deepEqual(real.error, {
      code: -32000,
      message:
        'historical state at height 1 is pruned (this full node keeps the last 100 heights); use an archive node',
    });
    const pruned = await rpc(h.url, 'eth_getBalance', [sender, '0x1']);
    assert.equal(pruned.error?.code, -32000);
    assert.match(
      pruned.error!.message,
      /historical state at block 1 is not available: pruned \(oldest kept: 5\)/,
    );
    h.chain.oldest = 0n;
  });

  it('eth_call: results, revert reasons as geth decodes them, halts, gas cap and EVM timeout', async () => {
    const ok = await call(h.url, 'eth_call', [{ to: LOGGER, input: '0x1234' }, 'latest']);
    assert.equal(ok, word(42));
    assert.deepEqual(h.chain.seen.call?.opts, { gasCap: 50_000_000n, timeoutMs: 5_000 });
    assert.equal(h.chain.seen.call?.req.data, '0x1234');
    const str = await rpc(h.url, 'eth_call', [{ to: REVERT_STRING }]);
    assert.equal(str.error?.code, 3);
    assert.equal(str.error?.message, 'execution reverted: nope');
    assert.match(str.error?.data as string, /^0x08c379a0/);
    const panic = await rpc(h.url, 'eth_call', [{ to: REVERT_PANIC }, 'latest']);
    assert.deepEqual(panic.error, {
      code: 3,
      message: 'execution reverted: arithmetic underflow or overflow',
      data: `0x4e487b71${word(0x11).slice(2)}`,
    });
    assert.deepEqual((await rpc(h.url, 'eth_call', [{ to: REVERT_CUSTOM }, 'latest'])).error, {
      code: 3,
      message: 'execution reverted',
      data: '0xdeadbeef',
    });
    assert.deepEqual((await rpc(h.url, 'eth_call', [{ to: REVERT_EMPTY }, 'latest'])).error, {
      code: 3,
      message: 'execution reverted',
      data: '0x',
    });
    assert.deepEqual((await rpc(h.url, 'eth_call', [{ to: HALT }, 'latest'])).error, {
      code: -32000,
      message: 'invalid opcode: INVALID',
    });
    assert.deepEqual(
      (await rpc(h.url, 'eth_call', [{ to: LOGGER, data: '0x01', input: '0x02' }, 'latest'])).error,
      {
        code: -32000,
        message:
          'both "data" and "input" are set and not equal. Please use "input" to pass transaction call data',
      },
    );
    assert.deepEqual(
      (await rpc(h.url, 'eth_call', [{ to: LOGGER, gasPrice: '0x1', maxFeePerGas: '0x2' }])).error,
      {
        code: -32000,
        message: 'both gasPrice and (maxFeePerGas or maxPriorityFeePerGas) specified',
      },
    );
    assert.deepEqual(
      (await rpc(h.url, 'eth_call', [{ to: LOGGER }, 'latest', null, { number: '0x5' }])).error,
      {
        code: -32602,
        message: 'invalid argument 3: block overrides are not supported by this node',
      },
    );
    await call(h.url, 'eth_call', [
      { to: LOGGER },
      'latest',
      { [LOGGER]: { balance: '0x10', stateDiff: { [word(1)]: word(2) } } },
    ]);
    assert.deepEqual(h.chain.seen.call?.overrides, {
      [LOGGER]: { balance: 16n, stateDiff: { [word(1)]: word(2) } },
    });
    assert.deepEqual(
      (await rpc(h.url, 'eth_call', [{ to: LOGGER }, 'latest', { [LOGGER]: { state: {}, stateDiff: {} } }]))
        .error,
      { code: -32000, message: `account ${LOGGER} has both 'state' and 'stateDiff'` },
    );
  });

  it('eth_estimateGas and eth_createAccessList', async () => {
    assert.equal(
      await call(h.url, 'eth_estimateGas', [{ from: sender, to: LOGGER, data: '0xabcd' }]),
      '0x5228',
    );
    assert.deepEqual(h.chain.seen.estimate?.opts, { gasCap: 50_000_000n, timeoutMs: 5_000 });
    const reverted = await rpc(h.url, 'eth_estimateGas', [{ to: REVERT_STRING }]);
    assert.equal(reverted.error?.code, 3);
    assert.equal(reverted.error?.message, 'execution reverted: nope');
    assert.match(reverted.error?.data as string, /^0x08c379a0/);
    assert.deepEqual(await call(h.url, 'eth_createAccessList', [{ to: LOGGER }, 'latest']), {
      accessList: [{ address: LOGGER, storageKeys: [word(1)] }],
      gasUsed: '0x59d8',
    });
  });

  it('eth_feeHistory: caps, percentiles and bounds', async () => {
    const fh = await call<Record<string, unknown[]>>(h.url, 'eth_feeHistory', ['0x10', 'latest', [25, 75]]);
    assert.equal(fh['baseFeePerGas']!.length, 5, 'feehistory_cap = 4 blocks, plus the next block');
    assert.equal(fh['gasUsedRatio']!.length, 4);
    assert.deepEqual(fh['reward']![0], ['0xf4240', '0xf4240']);
    const decimal = await call<Record<string, unknown[]>>(h.url, 'eth_feeHistory', [2, '0x1', null]);
    assert.equal(decimal['oldestBlock'], '0x0');
    assert.equal(decimal['reward'], undefined);
    assert.deepEqual((await rpc(h.url, 'eth_feeHistory', ['0x2', 'latest', [50, 10]])).error, {
      code: -32000,
      message: 'invalid reward percentile: #0:50.000000 >= #1:10.000000',
    });
    assert.match(
      (await rpc(h.url, 'eth_feeHistory', ['0x2', '0xfffff'])).error!.message,
      /^request beyond head block/,
    );
  });

  it('eth_sendRawTransaction: tx fee cap, EIP-155 protection, chain errors passed through', async () => {
    const expensive = await wallet.signTransaction({
      chainId: 31337n,
      to: LOGGER,
      type: 0,
      nonce: 9,
      gasLimit: 1_000_000n,
      gasPrice: 2_000n * GWEI,
    });
    assert.deepEqual((await rpc(h.url, 'eth_sendRawTransaction', [expensive])).error, {
      code: -32000,
      message: 'tx fee (2.00 BTC) exceeds the configured cap (1.00 BTC)',
    });
    const unprotected = await wallet.signTransaction({
      to: LOGGER,
      type: 0,
      nonce: 9,
      gasLimit: 21_000n,
      gasPrice: GWEI,
    });
    assert.deepEqual((await rpc(h.url, 'eth_sendRawTransaction', [unprotected])).error, {
      code: -32000,
      message: 'only replay-protected (EIP-155) transactions allowed over RPC',
    });
    const stale = await wallet.signTransaction({
      chainId: 31337n,
      to: LOGGER,
      type: 2,
      nonce: 0,
      gasLimit: 21_000n,
      maxFeePerGas: GWEI * 3n,
      maxPriorityFeePerGas: 1n,
    });
    assert.deepEqual((await rpc(h.url, 'eth_sendRawTransaction', [stale])).error, {
      code: -32000,
      message: 'nonce too low',
    });
  });

  it('txpool_* list pending transactions by checksummed sender and decimal nonce', async () => {
    const hash = await call<Hex>(h.url, 'eth_sendRawTransaction', [
      await wallet.signTransaction({
        chainId: 31337n,
        to: LOGGER,
        type: 2,
        nonce: 5,
        gasLimit: 21_000n,
        maxFeePerGas: 3n * GWEI,
        maxPriorityFeePerGas: 7n,
        value: 9n,
      }),
    ]);
    const checksummed = wallet.address;
    const content = await call<{ pending: Record<string, Record<string, Record<string, unknown>>> }>(
      h.url,
      'txpool_content',
    );
    const tx = content.pending[checksummed]!['5']!;
    assert.equal(tx['hash'], hash);
    assert.equal(tx['blockHash'], null);
    assert.equal(tx['blockNumber'], null);
    assert.equal(tx['transactionIndex'], null);
    assert.equal(tx['gasPrice'], '0xb2d05e00', 'pending dynamic-fee tx: gasPrice is the fee cap');
    const from = await call<{ pending: Record<string, unknown>; queued: unknown }>(
      h.url,
      'txpool_contentFrom',
      [sender],
    );
    assert.deepEqual(Object.keys(from.pending), ['5']);
    assert.deepEqual(from.queued, {});
    const inspect = await call<{ pending: Record<string, Record<string, string>> }>(h.url, 'txpool_inspect');
    assert.equal(
      inspect.pending[checksummed]!['5'],
      `${getAddress(LOGGER)}: 9 wei + 21000 gas × 3000000000 wei`,
    );
    assert.deepEqual(await call(h.url, 'txpool_status'), { pending: '0x1', queued: '0x0' });
    h.chain.mine();
    assert.deepEqual(await call(h.url, 'txpool_status'), { pending: '0x0', queued: '0x0' });
  });

  it('debug_trace* delegate to the chain with the tracer options', async () => {
    const structLog = await call<Record<string, unknown>>(h.url, 'debug_traceTransaction', [
      hashes['legacy'],
      { timeout: '1.5s' },
    ]);
    assert.deepEqual(structLog, {
      gas: '0x5208',
      failed: false,
      returnValue: '',
      structLogs: [],
      timeoutMs: 1500,
    });
    const callTrace = await call<Record<string, unknown>>(h.url, 'debug_traceTransaction', [
      hashes['legacy'],
      { tracer: 'callTracer', tracerConfig: { onlyTopCall: true } },
    ]);
    assert.equal(callTrace['type'], 'CALL');
    assert.match(
      (await rpc(h.url, 'debug_traceTransaction', [hashes['legacy'], { tracer: 'prestateTracer' }])).error!
        .message,
      /tracer "prestateTracer" is not supported/,
    );
    assert.deepEqual(
      (await rpc(h.url, 'debug_traceTransaction', [hashes['legacy'], { timeout: 'soon' }])).error,
      {
        code: -32000,
        message: 'time: invalid duration "soon"',
      },
    );
    const blockTrace = await call<Array<{ txHash: string; result: unknown }>>(
      h.url,
      'debug_traceBlockByNumber',
      ['0x1', { tracer: 'callTracer' }],
    );
    assert.equal(blockTrace.length, 4);
    assert.equal(blockTrace[0]!.txHash, hashes['legacy']);
    const byHash = await call<unknown[]>(h.url, 'debug_traceBlockByHash', [block1['hash']]);
    assert.equal(byHash.length, 4);
    assert.deepEqual((await rpc(h.url, 'debug_traceBlockByNumber', ['0xfffff'])).error, {
      code: -32000,
      message: 'block #1048575 not found',
    });
    const tc = await call<Record<string, unknown>>(h.url, 'debug_traceCall', [
      { to: LOGGER },
      'latest',
      { tracer: 'callTracer' },
    ]);
    assert.equal(tc['tracer'], 'callTracer');
  });

  it('eth_subscribe over HTTP: notifications not supported', async () => {
    assert.deepEqual((await rpc(h.url, 'eth_subscribe', ['newHeads'])).error, {
      code: -32601,
      message: 'notifications not supported',
    });
  });
});

describe('apis option', () => {
  it('serves only the enabled namespaces', async () => {
    const h = await startHarness({ options: { apis: ['eth', 'net'] } });
    try {
      assert.equal(await call(h.url, 'net_version'), '31337');
      assert.equal((await rpc(h.url, 'web3_clientVersion')).error?.code, -32601);
      assert.equal((await rpc(h.url, 'debug_traceBlockByNumber', ['0x0'])).error?.code, -32601);
      assert.equal((await rpc(h.url, 'txpool_status')).error?.code, -32601);
    } finally {
      await h.close();
    }
  });
});
