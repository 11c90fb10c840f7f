// viem and web3.js v4 against a real chain-local node process.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createPublicClient, createWalletClient, defineChain, http, parseEther, webSocket } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { Web3 } from 'web3';
import { compile, PROBE_SOURCE, TOKEN_SOURCE } from './contracts.js';
import { DEV_ADDRESSES, DEV_KEYS, startLocalNode } from './harness.js';

describe('viem and web3.js against noded chain-local', { timeout: 420_000 }, () => {
  let env: Awaited<ReturnType<typeof startLocalNode>>;

  before(async () => {
    env = await startLocalNode({ timeoutCommit: '300ms' });
  });

  after(async () => {
    await env?.cleanup();
  });

  const chain = () =>
    defineChain({
      id: 31337,
      name: 'chain-local',
      nativeCurrency: { name: 'Bitcoin', symbol: 'BTC', decimals: 18 },
      rpcUrls: { default: { http: [env.node.ethUrl], webSocket: [env.node.wsUrl] } },
    });

  it('viem: reads, sends each tx type, deploys and calls a contract, watches events over WS', async () => {
    const publicClient = createPublicClient({
      chain: chain(),
      transport: http(env.node.ethUrl),
      pollingInterval: 200,
    });
    assert.equal(await publicClient.getChainId(), 31337);
    assert.equal(await publicClient.getBalance({ address: DEV_ADDRESSES[2] }), parseEther('10000'));
    const account = privateKeyToAccount(DEV_KEYS[2]);
    const wallet = createWalletClient({ account, chain: chain(), transport: http(env.node.ethUrl) });
    const to = '0x000000000000000000000000000000000000dEaD';
    const before = await publicClient.getBalance({ address: to });
    for (const type of ['legacy', 'eip2930', 'eip1559'] as const) {
      const hash = await wallet.sendTransaction({ to, value: 10n, type });
      const receipt = await publicClient.waitForTransactionReceipt({ hash, timeout: 30_000 });
      assert.equal(receipt.status, 'success');
    }
    assert.equal(await publicClient.getBalance({ address: to }), before + 30n);

    const { TestToken } = compile(TOKEN_SOURCE);
    const deployHash = await wallet.deployContract({
      abi: TestToken.abi as never,
      bytecode: TestToken.bytecode,
      args: ['Viem', 'VIE', 1000n],
    });
    const deployed = await publicClient.waitForTransactionReceipt({ hash: deployHash, timeout: 30_000 });
    assert.ok(deployed.contractAddress);
    const address = deployed.contractAddress!;
    const abi = TestToken.abi as never;
    assert.equal(await publicClient.readContract({ address, abi, functionName: 'totalSupply' }), 1000n);

    const wsClient = createPublicClient({ chain: chain(), transport: webSocket(env.node.wsUrl) });
    const seen = new Promise<bigint>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('no Transfer event over WS within 20 s')), 20_000);
      const unwatch = wsClient.watchContractEvent({
        address,
        abi,
        eventName: 'Transfer',
        onLogs: (logs) => {
          clearTimeout(timer);
          unwatch();
          resolve((logs[0] as unknown as { args: { value: bigint } }).args.value);
        },
      });
    });
    await new Promise((r) => setTimeout(r, 500));
    const { request } = await publicClient.simulateContract({
      account,
      address,
      abi,
      functionName: 'transfer',
      args: [to, 7n],
    });
    const txHash = await wallet.writeContract(request);
    await publicClient.waitForTransactionReceipt({ hash: txHash, timeout: 30_000 });
    assert.equal(await seen, 7n);
    await wsClient.transport.getRpcClient().then((c) => c.close());
  });

  it('web3.js: balances, a signed transfer, a contract deploy, call and revert reason', async () => {
    const web3 = new Web3(env.node.ethUrl);
    assert.equal(await web3.eth.getChainId(), 31337n);
    assert.equal(await web3.eth.getBalance(DEV_ADDRESSES[3]), parseEther('10000'));
    const account = web3.eth.accounts.privateKeyToAccount(DEV_KEYS[3]);
    web3.eth.accounts.wallet.add(account);
    const receipt = await web3.eth.sendTransaction({
      from: account.address,
      to: DEV_ADDRESSES[0],
      value: 1234n,
      gas: 21000n,
    });
    assert.equal(receipt.status, 1n);
    const { Probe } = compile(PROBE_SOURCE);
    const contract = new web3.eth.Contract(Probe.abi as never);
    const deployed = await contract.deploy({ data: Probe.bytecode }).send({ from: account.address });
    assert.ok(deployed.options.address);
    const c = new web3.eth.Contract(Probe.abi as never, deployed.options.address);
    await (c.methods as never as Record<string, (...a: unknown[]) => { send(o: object): Promise<unknown> }>)
      .bump('web3')
      .send({ from: account.address });
    const counter = await (c.methods as never as Record<string, () => { call(): Promise<bigint> }>)
      .counter()
      .call();
    assert.equal(counter, 1n);
    await assert.rejects(
      (c.methods as never as Record<string, () => { call(): Promise<unknown> }>).failWithReason().call(),
      (err: Error & { cause?: { message?: string; reason?: string } }) => {
        // web3.js wraps the node's error: the cause carries geth's "execution reverted: <reason>".
        assert.match(String(err.cause?.message), /execution reverted: probe says no/);
        return true;
      },
    );
    const events = await c.getPastEvents('Bumped' as never, { fromBlock: 0 });
    assert.equal(events.length, 1);
  });
});
