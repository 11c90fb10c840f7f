// Client compatibility of the formatting: ethers v6 and viem drive the server (over the fake chain)
// exactly as they drive geth, over HTTP and WebSocket.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Hex } from '@noded/types';
import { JsonRpcProvider, Network, Wallet, WebSocketProvider } from 'ethers';
import { createPublicClient, createWalletClient, defineChain, http, webSocket } from 'viem';
import { LOGGER, REVERT_STRING, TRANSFER_TOPIC, word } from './fake-chain.js';
import { DEV_ADDRS, DEV_KEYS, type Harness, rpc, startHarness } from './helpers.js';

const GWEI = 1_000_000_000n;
const local = defineChain({
  id: 31337,
  name: 'chain-local',
  nativeCurrency: { name: 'Bitcoin', symbol: 'BTC', decimals: 18 },
  rpcUrls: { default: { http: ['http://127.0.0.1'] } },
});

describe('ethers v6 and viem against the server', () => {
  let h: Harness;
  let provider: JsonRpcProvider;
  const hashes: Hex[] = [];

  before(async () => {
    h = await startHarness();
    const wallet = new Wallet(DEV_KEYS[1]!);
    h.chain.balances.set(DEV_ADDRS[1]!, 123n * 10n ** 18n);
    const base = { chainId: 31337n, to: LOGGER, value: 3n };
    const raws = [
      await wallet.signTransaction({ ...base, type: 0, nonce: 0, gasLimit: 21_000n, gasPrice: 2n * GWEI }),
      await wallet.signTransaction({
        ...base,
        type: 1,
        nonce: 1,
        gasLimit: 25_000n,
        gasPrice: 2n * GWEI,
        accessList: [],
      }),
      await wallet.signTransaction({
        ...base,
        type: 2,
        nonce: 2,
        gasLimit: 21_000n,
        maxFeePerGas: 3n * GWEI,
        maxPriorityFeePerGas: 5n,
      }),
    ];
    for (const raw of raws) hashes.push((await rpc(h.url, 'eth_sendRawTransaction', [raw])).result as Hex);
    h.chain.mine();
    provider = new JsonRpcProvider(h.url, Network.from(31337), { staticNetwork: true, cacheTimeout: -1 });
  });
  after(async () => {
    provider.destroy();
    await h.close();
  });

  it('ethers: chain id, block number, balance, nonce, code, fee data', async () => {
    assert.equal((await provider.getNetwork()).chainId, 31337n);
    assert.equal(await provider.getBlockNumber(), 1);
    assert.equal(await provider.getBalance(DEV_ADDRS[1]!), 123n * 10n ** 18n);
    assert.equal(await provider.getTransactionCount(DEV_ADDRS[1]!), 3);
    assert.equal(await provider.getCode(LOGGER), '0x');
    const fee = await provider.getFeeData();
    assert.equal(fee.gasPrice, GWEI + 1_000_000n);
    assert.equal(fee.maxPriorityFeePerGas, 1_000_000n);
  });

  it('ethers: blocks, transactions of each type, receipts and logs', async () => {
    const block = await provider.getBlock(1, true);
    assert.ok(block);
    assert.equal(block.number, 1);
    assert.equal(block.baseFeePerGas, GWEI);
    assert.deepEqual([...block.transactions], hashes);
    assert.equal(block.prefetchedTransactions.length, 3);
    for (const [i, hash] of hashes.entries()) {
      const tx = await provider.getTransaction(hash);
      assert.ok(tx);
      assert.equal(tx.type, i);
      assert.equal(tx.from.toLowerCase(), DEV_ADDRS[1]);
      assert.equal(tx.blockNumber, 1);
      const receipt = await provider.getTransactionReceipt(hash);
      assert.ok(receipt);
      assert.equal(receipt.status, 1);
      assert.equal(receipt.logs.length, 1);
      assert.equal(receipt.logs[0]!.topics[0], TRANSFER_TOPIC);
    }
    const logs = await provider.getLogs({
      fromBlock: 0,
      toBlock: 'latest',
      address: LOGGER,
      topics: [TRANSFER_TOPIC],
    });
    assert.equal(logs.length, 3);
  });

  it('ethers: call, estimateGas, revert reason', async () => {
    assert.equal(await provider.call({ to: LOGGER, data: '0x' }), word(42));
    assert.equal(await provider.estimateGas({ from: DEV_ADDRS[1], to: LOGGER }), 21_000n);
    await assert.rejects(
      provider.call({ to: REVERT_STRING, data: '0x' }),
      (e: { code?: string; reason?: string }) => {
        assert.equal(e.code, 'CALL_EXCEPTION');
        assert.equal(e.reason, 'nope');
        return true;
      },
    );
  });

  it('ethers: JsonRpcSigner on a dev account sends and signs through the node', async () => {
    const signer = await provider.getSigner(DEV_ADDRS[0]);
    const sent = await signer.sendTransaction({ to: LOGGER, value: 1n });
    assert.equal(sent.from.toLowerCase(), DEV_ADDRS[0]);
    h.chain.mine();
    const receipt = await sent.wait();
    assert.equal(receipt?.status, 1);
    const sig = await signer.signMessage('hi');
    assert.match(sig, /^0x[0-9a-f]{130}$/);
  });

  it('viem: public client over HTTP reads blocks, balances, transactions, logs', async () => {
    const client = createPublicClient({ chain: local, transport: http(h.url) });
    assert.equal(await client.getChainId(), 31337);
    assert.ok((await client.getBlockNumber()) >= 1n);
    assert.equal(await client.getBalance({ address: DEV_ADDRS[1]! }), 123n * 10n ** 18n);
    const block = await client.getBlock({ blockNumber: 1n, includeTransactions: true });
    assert.equal(block.number, 1n);
    assert.equal(block.transactions.length, 3);
    assert.equal(block.transactions[2]!.type, 'eip1559');
    assert.equal(block.transactions[0]!.type, 'legacy');
    assert.equal(block.transactions[1]!.type, 'eip2930');
    const latest = await client.getBlock();
    assert.ok(latest.hash);
    const tx = await client.getTransaction({ hash: hashes[2]! });
    assert.equal(tx.maxPriorityFeePerGas, 5n);
    const receipt = await client.getTransactionReceipt({ hash: hashes[0]! });
    assert.equal(receipt.status, 'success');
    const logs = await client.getLogs({ address: LOGGER, fromBlock: 0n, toBlock: 'latest' });
    assert.equal(logs.length, 4);
    const fees = await client.estimateFeesPerGas();
    assert.ok(fees.maxFeePerGas > 0n);
    const history = await client.getFeeHistory({ blockCount: 2, rewardPercentiles: [50] });
    assert.equal(history.baseFeePerGas.length, 3);
    await assert.rejects(client.call({ to: REVERT_STRING }), /nope/);
  });

  it('viem: wallet client with a node-held account sends eth_sendTransaction', async () => {
    const wallet = createWalletClient({ chain: local, transport: http(h.url), account: DEV_ADDRS[2]! });
    const hash = await wallet.sendTransaction({ to: LOGGER, value: 2n });
    assert.equal(h.chain.pending.at(-1)!.hash, hash);
    h.chain.mine();
  });

  it('ethers WebSocketProvider and viem webSocket transport receive new blocks', async () => {
    const wsUrl = h.wsUrl;
    const wsProvider = new WebSocketProvider(wsUrl, Network.from(31337));
    const viemClient = createPublicClient({ chain: local, transport: webSocket(wsUrl) });
    try {
      const ethersBlock = new Promise<number>((resolve) => {
        void wsProvider.on('block', (n: number) => resolve(n));
      });
      const viemBlock = new Promise<bigint>((resolve) => {
        const unwatch = viemClient.watchBlockNumber({
          emitOnBegin: false,
          onBlockNumber: (n) => {
            unwatch();
            resolve(n);
          },
        });
      });
      // Let both subscriptions reach the server, then commit blocks until both have seen one.
      const seen = Promise.all([ethersBlock, viemBlock]);
      let done = false;
      void seen.then(() => {
        done = true;
      });
      for (let i = 0; i < 50 && !done; i++) {
        await new Promise((r) => setTimeout(r, 50));
        h.chain.mine();
      }
      const [eb, vb] = await seen;
      assert.ok(eb >= 2);
      assert.ok(vb >= 2n);
    } finally {
      await wsProvider.destroy();
      await viemClient.transport.getRpcClient().then((c) => c.close());
    }
  });
});
