// The cluster serving the Ethereum JSON-RPC: nats-server, `noded service executor`, `consensus`, two
// `state-store`s (each its own RocksDB and gRPC port) and two `rpc-edge`s (each on its own state-store,
// the second on ports given by NODED_EVM_* overrides) as processes on one chain-local home. ethers
// deploys a contract and sends transfers through an edge (transactions reach the executor's CheckTx,
// reads come from a state-store), reads receipts, logs, eth_call at the latest and at an older height,
// a newHeads and a newPendingTransactions subscription over WebSocket; both edges give identical answers at the same height;
// one edge killed, the other keeps serving; a malformed request at the state-store's gRPC boundary
// gets INVALID_ARGUMENT naming what is wrong and the state-store keeps serving.
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { MEMPOOL_SERVICE_NAME, mempoolProto, STATE_READER_SERVICE_NAME, stateProto } from '@noded/abci-grpc';
import { Contract, ContractFactory, JsonRpcProvider, Wallet, WebSocketProvider } from 'ethers';
import { createPublicClient, createWalletClient, defineChain, http, webSocket } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { compile, TOKEN_SOURCE } from '../e2e/contracts.js';
import { DEV_ADDRESSES, DEV_KEYS, freePort, initLocalHome } from '../e2e/harness.js';
import { startNatsServer } from './nats.js';
import { rpc, type ServiceProcess, spawnService, until, waitForService } from './processes.js';

const cleanups: Array<() => unknown> = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

/** A raw unary call on the state-store with `bytes` as the request; the error (or null) it got. */
function rawCall(address: string, path: string, bytes: Buffer): Promise<grpc.ServiceError | null> {
  const client = new grpc.Client(address, grpc.credentials.createInsecure());
  return new Promise((resolve) => {
    client.makeUnaryRequest(
      path,
      (b: Buffer) => b,
      (b: Buffer) => b,
      bytes,
      new grpc.Metadata(),
      { deadline: Date.now() + 10_000 },
      (err) => {
        client.close();
        resolve(err);
      },
    );
  });
}

describe('noded service rpc-edge', () => {
  it('serves ethers through two edges on two state-stores with identical answers, and survives losing one', async () => {
    const { home, ports } = await initLocalHome({ timeoutCommit: '300ms' });
    cleanups.push(() => rmSync(home, { recursive: true, force: true }));
    const nats = await startNatsServer();
    cleanups.push(() => nats.stop());
    const executorAt = `127.0.0.1:${await freePort()}`;
    const store1At = `127.0.0.1:${await freePort()}`;
    const store2At = `127.0.0.1:${await freePort()}`;
    const edge2Http = await freePort();
    const edge2Ws = await freePort();
    const edge2Api = await freePort();
    const env = { NODED_EXECUTOR_GRPC_ADDRESS: executorAt, NODED_NATS_URL: nats.url };
    const running: ServiceProcess[] = [];
    cleanups.push(async () => {
      for (const s of running.reverse()) await s.stop();
    });
    const start = async (name: string, more: Record<string, string> = {}) => {
      const s = spawnService(name, home, { ...env, ...more });
      running.push(s);
      await waitForService(s, new RegExp(`noded service ${name} is running`), 90_000);
      return s;
    };
    await start('executor');
    await start('consensus');
    await start('state-store', { NODED_STATE_STORE_GRPC_ADDRESS: store1At });
    const store2 = await start('state-store', {
      NODED_STATE_STORE_GRPC_ADDRESS: store2At,
      NODED_STATE_STORE_DB: join(home, 'data', 'state-store-2.db'),
    });
    const edge1 = await start('rpc-edge', { NODED_STATE_STORE_GRPC_ADDRESS: store1At });
    await start('rpc-edge', {
      NODED_STATE_STORE_GRPC_ADDRESS: store2At,
      NODED_EVM_RPC_ADDRESS: `127.0.0.1:${edge2Http}`,
      NODED_EVM_WS_ADDRESS: `127.0.0.1:${edge2Ws}`,
      NODED_API_ADDRESS: `tcp://127.0.0.1:${edge2Api}`,
      NODED_EVM_API_ADDRESS: `127.0.0.1:${edge2Api}`,
    });
    const url1 = `http://127.0.0.1:${ports.evmHttp}`;
    const url2 = `http://127.0.0.1:${edge2Http}`;

    // cacheTimeout -1: ethers answers an identical request from its last 250 ms (the deploy's pending

    // nonce for the transfer right after its receipt), which a chain this fast outruns.

    const provider = new JsonRpcProvider(url1, 31337, {
      staticNetwork: true,
      cacheTimeout: -1,
      pollingInterval: 200,
    });
    cleanups.push(() => provider.destroy());
    assert.equal((await provider.getNetwork()).chainId, 31337n);
    await until('the edge reports blocks', 60_000, async () =>
      (await provider.getBlockNumber()) >= 2 ? true : undefined,
    );

    // newHeads over WebSocket, fed by the executor's heads on NATS through the state-store.
    const ws = new WebSocketProvider(`ws://127.0.0.1:${ports.evmWs}`, 31337, {
      staticNetwork: true,
      cacheTimeout: -1,
    });
    cleanups.push(() => ws.destroy());
    const heads: number[] = [];
    await ws.on('block', (n: number) => heads.push(n));

    const wallet = new Wallet(DEV_KEYS[0], provider);
    const TestToken = compile(TOKEN_SOURCE).TestToken!;
    const abi = TestToken.abi as never;
    const factory = new ContractFactory(abi, TestToken.bytecode, wallet);
    const deployed = await factory.deploy('Edge', 'EDG', 1_000_000n);
    const deployReceipt = await deployed.deploymentTransaction()!.wait(1, 60_000);
    assert.equal(deployReceipt?.status, 1);
    const tokenAddress = await deployed.getAddress();
    const deployHeight = deployReceipt!.blockNumber;
    const token = new Contract(tokenAddress, abi, wallet);
    assert.equal(await token.getFunction('balanceOf')(DEV_ADDRESSES[0]), 1_000_000n);

    const sent = await token.getFunction('transfer')(DEV_ADDRESSES[1], 250n);
    const transferReceipt = await sent.wait(1, 60_000);
    assert.equal(transferReceipt.status, 1);
    assert.equal(transferReceipt.logs.length, 1);
    // A plain transfer of the base coin too.
    const before1 = await provider.getBalance(DEV_ADDRESSES[2]);
    const coin = await wallet.sendTransaction({ to: DEV_ADDRESSES[2], value: 12345n });
    const coinReceipt = await coin.wait(1, 60_000);
    assert.equal(coinReceipt?.status, 1);
    assert.equal(await provider.getBalance(DEV_ADDRESSES[2]), before1 + 12345n);

    // eth_call at the latest height and at the deployment's height (before the transfer).
    const balanceOf = token.getFunction('balanceOf');
    assert.equal(await balanceOf(DEV_ADDRESSES[1]), 250n);
    assert.equal(await balanceOf(DEV_ADDRESSES[1], { blockTag: deployHeight }), 0n);
    assert.equal(await balanceOf(DEV_ADDRESSES[0], { blockTag: deployHeight }), 1_000_000n);

    // Logs: the mint and the transfer, through eth_getLogs.
    const logs = await provider.getLogs({ address: tokenAddress, fromBlock: 0, toBlock: 'latest' });
    assert.equal(logs.length, 2);
    assert.equal(logs[1]!.transactionHash, transferReceipt.hash);
    const tx = await provider.getTransaction(transferReceipt.hash);
    assert.equal(tx?.from, DEV_ADDRESSES[0]);

    // The WebSocket saw new heads past the transfer's block.
    await until('newHeads past the transfer', 30_000, async () =>
      heads.some((n) => n > transferReceipt.blockNumber) ? true : undefined,
    );

    // Both edges (each on its own state-store) answer the same at the same height.
    const h = transferReceipt.blockNumber;
    await until('the second edge reaches the transfer', 30_000, async () =>
      Number(await rpc(url2, 'eth_blockNumber')) >= h ? true : undefined,
    );
    const hx = `0x${h.toString(16)}`;
    const callData = token.interface.encodeFunctionData('balanceOf', [DEV_ADDRESSES[1]]);
    const reads: Array<[string, unknown[]]> = [
      ['eth_getBlockByNumber', [hx, true]],
      ['eth_getBlockByNumber', [`0x${deployHeight.toString(16)}`, false]],
      ['eth_getBalance', [DEV_ADDRESSES[0], hx]],
      ['eth_getTransactionCount', [DEV_ADDRESSES[0], hx]],
      ['eth_getCode', [tokenAddress, hx]],
      ['eth_getStorageAt', [tokenAddress, '0x3', hx]],
      ['eth_call', [{ to: tokenAddress, data: callData }, hx]],
      ['eth_estimateGas', [{ from: DEV_ADDRESSES[1], to: tokenAddress, data: callData }, hx]],
      ['eth_getLogs', [{ fromBlock: '0x0', toBlock: hx, address: tokenAddress }]],
      ['eth_getTransactionReceipt', [transferReceipt.hash]],
      ['eth_getBlockReceipts', [hx]],
      ['eth_getProof', [DEV_ADDRESSES[0], [], hx]],
      ['eth_feeHistory', ['0x4', hx, [50]]],
      ['debug_traceTransaction', [transferReceipt.hash, { tracer: 'callTracer' }]],
      ['debug_traceBlockByNumber', [hx, { tracer: 'callTracer' }]],
      [
        'debug_traceCall',
        [{ from: DEV_ADDRESSES[1], to: tokenAddress, data: callData }, hx, { tracer: 'callTracer' }],
      ],
      ['eth_createAccessList', [{ from: DEV_ADDRESSES[1], to: tokenAddress, data: callData }, hx]],
      ['eth_getTransactionByBlockNumberAndIndex', [hx, '0x0']],
      ['eth_getBlockByHash', [transferReceipt.blockHash, false]],
    ];
    for (const [method, params] of reads) {
      const a = await rpc(url1, method, params);
      const b = await rpc(url2, method, params);
      assert.deepEqual(b, a, `${method} ${JSON.stringify(params)}`);
      assert.ok(a !== null && a !== undefined, `${method} answered`);
    }

    // One edge killed: the other keeps serving, reads and transactions.
    edge1.proc.kill('SIGKILL');
    await edge1.exited;
    running.splice(running.indexOf(edge1), 1);
    const provider2 = new JsonRpcProvider(url2, 31337, {
      staticNetwork: true,
      cacheTimeout: -1,
      pollingInterval: 200,
    });
    cleanups.push(() => provider2.destroy());
    const more = await new Wallet(DEV_KEYS[0], provider2).sendTransaction({
      to: DEV_ADDRESSES[3],
      value: 1n,
    });
    assert.equal((await more.wait(1, 60_000))?.status, 1);
    assert.equal(
      await new Contract(tokenAddress, abi, provider2).getFunction('balanceOf')(DEV_ADDRESSES[1]),
      250n,
    );
    // Back to back without waiting: the 'pending' nonce comes from the executor's mempool (ethers
    // keeps a provider answer for 250 ms, so the second nonce is asked for here), and both are found
    // by hash at once (waiting or mined).
    const ws2 = new WebSocketProvider(`ws://127.0.0.1:${edge2Ws}`, 31337, {
      staticNetwork: true,
      cacheTimeout: -1,
    });
    cleanups.push(() => ws2.destroy());
    const pendingSeen: string[] = [];
    await ws2.on('pending', (hash: string) => pendingSeen.push(hash));
    await new Promise((r) => setTimeout(r, 500)); // the eth_subscribe round trip
    const w2 = new Wallet(DEV_KEYS[3], provider2);
    const a = await w2.sendTransaction({ to: DEV_ADDRESSES[2], value: 2n });
    const pendingNonce = Number(await rpc(url2, 'eth_getTransactionCount', [DEV_ADDRESSES[3], 'pending']));
    assert.equal(pendingNonce, a.nonce + 1);
    const b = await w2.sendTransaction({ to: DEV_ADDRESSES[2], value: 3n, nonce: pendingNonce });
    for (const t of [a, b])
      assert.ok(await rpc(url2, 'eth_getTransactionByHash', [t.hash]), `${t.hash} found`);
    // newPendingTransactions, fed by the executor's txs.pending subject on NATS.
    await until('both hashes on the pending subscription', 20_000, async () =>
      pendingSeen.includes(a.hash) && pendingSeen.includes(b.hash) ? true : undefined,
    );
    assert.equal((await b.wait(1, 60_000))?.status, 1);
    assert.equal((await a.wait(1, 60_000))?.status, 1);
    assert.equal(await provider2.getTransactionCount(DEV_ADDRESSES[3], 'pending'), b.nonce + 1);
    const status = (await rpc(url2, 'txpool_status')) as { pending: string; queued: string };
    assert.match(status.pending, /^0x[0-9a-f]+$/);

    // A refused transaction answers with the executor's reason (the nonce is used).
    await assert.rejects(
      rpc(url2, 'eth_sendRawTransaction', [
        await new Wallet(DEV_KEYS[0]).signTransaction({
          type: 2,
          chainId: 31337,
          nonce: 0,
          to: DEV_ADDRESSES[1],
          value: 1n,
          gasLimit: 21_000,
          maxFeePerGas: 50_000_000_000n,
          maxPriorityFeePerGas: 1_000_000_000n,
        }),
      ]),
      /nonce too low/,
    );

    // viem through the second edge: each transaction type, a contract read at an older height, a
    // Transfer watched over WebSocket while a simulated-then-written transfer commits.
    const viemChain = defineChain({
      id: 31337,
      name: 'chain-local',
      nativeCurrency: { name: 'Bitcoin', symbol: 'BTC', decimals: 18 },
      rpcUrls: { default: { http: [url2], webSocket: [`ws://127.0.0.1:${edge2Ws}`] } },
    });
    const publicClient = createPublicClient({
      chain: viemChain,
      transport: http(url2),
      pollingInterval: 200,
    });
    const viemAccount = privateKeyToAccount(DEV_KEYS[1]);
    const walletClient = createWalletClient({
      account: viemAccount,
      chain: viemChain,
      transport: http(url2),
    });
    const dead = '0x000000000000000000000000000000000000dEaD';
    const deadBefore = await publicClient.getBalance({ address: dead });
    for (const type of ['legacy', 'eip2930', 'eip1559'] as const) {
      const hash = await walletClient.sendTransaction({ to: dead, value: 10n, type });
      const receipt = await publicClient.waitForTransactionReceipt({ hash, timeout: 60_000 });
      assert.equal(receipt.status, 'success', type);
    }
    assert.equal(await publicClient.getBalance({ address: dead }), deadBefore + 30n);
    assert.equal(
      await publicClient.readContract({
        address: tokenAddress as `0x${string}`,
        abi,
        functionName: 'balanceOf',
        args: [DEV_ADDRESSES[1]],
        blockNumber: BigInt(deployHeight),
      }),
      0n,
    );
    const wsClient = createPublicClient({
      chain: viemChain,
      transport: webSocket(`ws://127.0.0.1:${edge2Ws}`),
    });
    const seen = new Promise<bigint>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('no Transfer event over WS within 30 s')), 30_000);
      const unwatch = wsClient.watchContractEvent({
        address: tokenAddress as `0x${string}`,
        abi,
        eventName: 'Transfer',
        onLogs: (found) => {
          clearTimeout(timer);
          unwatch();
          resolve((found[0] as unknown as { args: { value: bigint } }).args.value);
        },
      });
    });
    await new Promise((r) => setTimeout(r, 500));
    const { request } = await publicClient.simulateContract({
      account: viemAccount,
      address: tokenAddress as `0x${string}`,
      abi,
      functionName: 'approve',
      args: [dead, 1n],
    });
    await publicClient.waitForTransactionReceipt({
      hash: await walletClient.writeContract(request),
      timeout: 60_000,
    });
    const { request: moveRequest } = await publicClient.simulateContract({
      account: privateKeyToAccount(DEV_KEYS[0]),
      address: tokenAddress as `0x${string}`,
      abi,
      functionName: 'transfer',
      args: [dead, 7n],
    });
    const mover = createWalletClient({
      account: privateKeyToAccount(DEV_KEYS[0]),
      chain: viemChain,
      transport: http(url2),
    });
    await publicClient.waitForTransactionReceipt({
      hash: await mover.writeContract(moveRequest),
      timeout: 60_000,
    });
    assert.equal(await seen, 7n);
    await wsClient.transport.getRpcClient().then((c) => c.close());

    // The JSON-RPC's own admission rules hold at the edge as on `noded start`: no transaction
    // without replay protection unless app.toml allows it.
    const unprotected = await new Wallet(DEV_KEYS[2]).signTransaction({
      type: 0,
      chainId: 0n,
      nonce: 0,
      to: DEV_ADDRESSES[1],
      value: 1n,
      gasLimit: 21_000,
      gasPrice: 50_000_000_000n,
    });
    await assert.rejects(
      rpc(url2, 'eth_sendRawTransaction', [unprotected]),
      /only replay-protected \(EIP-155\) transactions allowed over RPC/,
    );

    // The state-store's gRPC boundary: malformed requests are refused with the reason; it keeps serving.
    const undecodable = await rawCall(
      store1At,
      '/noded.state.v1.StateReader/Read',
      Buffer.from([0xff, 0xff, 0xff]),
    );
    assert.equal(undecodable?.code, grpc.status.INVALID_ARGUMENT);
    assert.match(undecodable!.details, /the request is not a valid noded\.state\.v1\.ReadRequest/);
    const badArgs = await rawCall(
      store1At,
      '/noded.state.v1.StateReader/Read',
      Buffer.from(
        stateProto.ReadRequest.encode({
          method: stateProto.Method.METHOD_GET_BALANCE,
          argsJson: JSON.stringify([DEV_ADDRESSES[0], 'latest']),
          minHeight: 0n,
        }).finish(),
      ),
    );
    assert.equal(badArgs?.code, grpc.status.INVALID_ARGUMENT);
    assert.equal(
      badArgs!.details,
      `${STATE_READER_SERVICE_NAME}/Read: ReadRequest.args_json[1] (getBalance): must be a height ({"$n":"<decimal>"}), got string "latest"`,
    );
    const notJson = await rawCall(
      store1At,
      '/noded.state.v1.StateReader/Read',
      Buffer.from(
        stateProto.ReadRequest.encode({
          method: 99 as stateProto.Method,
          argsJson: '[]',
          minHeight: 0n,
        }).finish(),
      ),
    );
    assert.equal(notJson?.code, grpc.status.INVALID_ARGUMENT);
    assert.match(notJson!.details, /ReadRequest\.method: unknown method 99/);
    const tooFew = await rawCall(
      store1At,
      '/noded.state.v1.StateReader/Read',
      Buffer.from(
        stateProto.ReadRequest.encode({
          method: stateProto.Method.METHOD_CALL,
          argsJson: '[{}]',
          minHeight: 0n,
        }).finish(),
      ),
    );
    assert.match(tooFew!.details, /ReadRequest\.args_json: call takes 4 argument\(s\), got 1/);
    // ...and the executor's Mempool service the same way.
    const shortAddress = await rawCall(
      executorAt,
      '/noded.mempool.v1.Mempool/PendingNonce',
      Buffer.from(mempoolProto.PendingNonceRequest.encode({ address: new Uint8Array(19) }).finish()),
    );
    assert.equal(shortAddress?.code, grpc.status.INVALID_ARGUMENT);
    assert.equal(
      shortAddress!.details,
      `${MEMPOOL_SERVICE_NAME}/PendingNonce: PendingNonceRequest.address: must be 20 bytes, got 19`,
    );
    // Still serving: a good request answers.
    assert.equal(
      await rawCall(
        store1At,
        '/noded.state.v1.StateReader/Head',
        Buffer.from(stateProto.HeadRequest.encode({ minHeight: 0n }).finish()),
      ),
      null,
    );

    // The second edge's state-store killed: its reads fail naming it, and answer again once a new
    // one resumes from its own height.
    store2.proc.kill('SIGKILL');
    await store2.exited;
    running.splice(running.indexOf(store2), 1);
    await assert.rejects(
      rpc(url2, 'eth_getBalance', [DEV_ADDRESSES[0], 'latest']),
      new RegExp(`state-store at ${store2At.replace(/\./g, '\\.')} is unavailable`),
    );
    await start('state-store', {
      NODED_STATE_STORE_GRPC_ADDRESS: store2At,
      NODED_STATE_STORE_DB: join(home, 'data', 'state-store-2.db'),
    });
    const heightBefore = Number(await rpc(url2, 'eth_blockNumber'));
    await until('the edge reads again and follows new heights', 60_000, async () =>
      (await rpc(url2, 'eth_getBalance', [DEV_ADDRESSES[0], 'latest'])) !== undefined &&
      Number(await rpc(url2, 'eth_blockNumber')) > heightBefore
        ? true
        : undefined,
    );
  });
});
