// ethers v6 against a real chain-local node process.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  Contract,
  ContractFactory,
  Interface,
  JsonRpcProvider,
  parseEther,
  verifyMessage,
  verifyTypedData,
  Wallet,
  WebSocketProvider,
} from 'ethers';
import { compile, PROBE_SOURCE, TOKEN_SOURCE } from './contracts.js';
import { DEV_ADDRESSES, DEV_KEYS, startLocalNode } from './harness.js';

describe('ethers v6 against noded chain-local', { timeout: 420_000 }, () => {
  let env: Awaited<ReturnType<typeof startLocalNode>>;
  let provider: JsonRpcProvider;

  before(async () => {
    env = await startLocalNode({ timeoutCommit: '300ms' });
    // cacheTimeout -1: ethers reuses an identical request's answer for 250 ms by default, so with
    // 300 ms blocks a second send could reuse the first one's pending nonce after the first was
    // already mined ("nonce too low"), an ethers behaviour against any fast chain, not a node fault.
    provider = new JsonRpcProvider(env.node.ethUrl, undefined, {
      staticNetwork: true,
      pollingInterval: 200,
      cacheTimeout: -1,
    });
  });

  after(async () => {
    provider?.destroy();
    await env?.cleanup();
  });

  it('reports chain id 31337 and funded dev accounts (10000 BTC each)', async () => {
    const net = await provider.getNetwork();
    assert.equal(net.chainId, 31337n);
    assert.equal(await provider.getBalance(DEV_ADDRESSES[1]), parseEther('10000'));
    const accounts = (await provider.send('eth_accounts', [])) as string[];
    assert.equal(accounts[0].toLowerCase(), DEV_ADDRESSES[0].toLowerCase());
  });

  it('sends value with legacy, EIP-2930 and EIP-1559 transactions', async () => {
    const wallet = new Wallet(DEV_KEYS[1], provider);
    const to = Wallet.createRandom().address;
    const fee = await provider.getFeeData();
    assert.ok(fee.gasPrice && fee.gasPrice >= 1_000_000_000n, 'gas price at least min_gas_price');
    const legacy = await wallet.sendTransaction({ to, value: 1n, type: 0, gasPrice: fee.gasPrice });
    const r0 = await legacy.wait();
    assert.equal(r0?.status, 1);
    assert.equal(r0?.type, 0);
    const t1 = await wallet.sendTransaction({
      to,
      value: 2n,
      type: 1,
      gasPrice: fee.gasPrice,
      accessList: [],
    });
    const r1 = await t1.wait();
    assert.equal(r1?.type, 1);
    const t2 = await wallet.sendTransaction({ to, value: 3n, type: 2 });
    const r2 = await t2.wait();
    assert.equal(r2?.status, 1);
    assert.equal(r2?.type, 2);
    assert.equal(await provider.getBalance(to), 6n);
    const block = await provider.getBlock(r2!.blockNumber);
    assert.ok(block?.baseFeePerGas && block.baseFeePerGas >= 1_000_000_000n);
    const tx = await provider.getTransaction(t2.hash);
    assert.equal(tx?.from, wallet.address);
    assert.equal(tx?.blockNumber, r2!.blockNumber);
  });

  it('deploys a solc-compiled ERC-20, transfers, reads logs and balances', async () => {
    const { TestToken } = compile(TOKEN_SOURCE);
    const wallet = new Wallet(DEV_KEYS[2], provider);
    const factory = new ContractFactory(TestToken.abi as never, TestToken.bytecode, wallet);
    const token = await factory.deploy('Test', 'TST', parseEther('1000'));
    await token.waitForDeployment();
    const address = await token.getAddress();
    assert.ok((await provider.getCode(address)).length > 2);
    const c = new Contract(address, TestToken.abi as never, wallet);
    assert.equal(await c.symbol(), 'TST');
    const to = Wallet.createRandom().address;
    const gas = await c.transfer.estimateGas(to, 5n);
    assert.ok(gas > 21_000n && gas < 100_000n, `estimate ${gas}`);
    const receipt = await (await c.transfer(to, 5n)).wait();
    assert.equal(receipt.status, 1);
    assert.equal(await c.balanceOf(to), 5n);
    const iface = new Interface(TestToken.abi as never);
    const logs = await provider.getLogs({
      address,
      fromBlock: receipt.blockNumber,
      toBlock: receipt.blockNumber,
      topics: [iface.getEvent('Transfer')!.topicHash],
    });
    assert.equal(logs.length, 1);
    const parsed = iface.parseLog(logs[0]);
    assert.equal(parsed?.args[1], to);
    assert.equal(parsed?.args[2], 5n);
  });

  it('surfaces revert reasons on call, estimate and custom errors', async () => {
    const { Probe } = compile(PROBE_SOURCE);
    const wallet = new Wallet(DEV_KEYS[3], provider);
    const probe = await new ContractFactory(Probe.abi as never, Probe.bytecode, wallet).deploy();
    await probe.waitForDeployment();
    const c = new Contract(await probe.getAddress(), Probe.abi as never, wallet);
    assert.equal(await c.chainId(), 31337n);
    await assert.rejects(c.failWithReason.staticCall(), (err: Error & { reason?: string }) => {
      assert.equal(err.reason, 'probe says no');
      return true;
    });
    await assert.rejects(c.failWithReason.estimateGas(), /probe says no/);
    await assert.rejects(
      c.failWithCustom.staticCall(),
      (err: Error & { revert?: { name: string; args: unknown[] } }) => {
        assert.equal(err.revert?.name, 'NotAllowed');
        assert.equal(err.revert?.args[0], 42n);
        return true;
      },
    );
    await assert.rejects(c.failWithPanic.staticCall(), /division or modulo by zero|DIVISION_BY_ZERO|panic/i);
  });

  it('streams newHeads and contract logs over the WebSocket endpoint', async () => {
    const ws = new WebSocketProvider(env.node.wsUrl, undefined, { staticNetwork: true, cacheTimeout: -1 });
    try {
      const heads: number[] = [];
      const gotHeads = new Promise<void>((resolve) => {
        ws.on('block', (n: number) => {
          heads.push(n);
          if (heads.length >= 2) resolve();
        });
      });
      const { Probe } = compile(PROBE_SOURCE);
      const wallet = new Wallet(DEV_KEYS[0], provider);
      const probe = await new ContractFactory(Probe.abi as never, Probe.bytecode, wallet).deploy();
      await probe.waitForDeployment();
      const address = await probe.getAddress();
      const wsContract = new Contract(address, Probe.abi as never, ws);
      const gotLog = new Promise<string>((resolve) => {
        wsContract.on('Bumped', (_by: string, _v: bigint, note: string) => resolve(note));
      });
      await new Promise((r) => setTimeout(r, 500));
      const c = new Contract(address, Probe.abi as never, wallet);
      await (await c.bump('hello ws')).wait();
      const note = await Promise.race([
        gotLog,
        new Promise<string>((_, rej) => setTimeout(() => rej(new Error('no log event within 20 s')), 20_000)),
      ]);
      assert.equal(note, 'hello ws');
      await Promise.race([
        gotHeads,
        new Promise((_, rej) => setTimeout(() => rej(new Error('no newHeads within 20 s')), 20_000)),
      ]);
      assert.ok(heads[1] > heads[0]);
    } finally {
      await ws.destroy();
    }
  });

  it('signs with the unlocked dev accounts: eth_sendTransaction, personal_sign, eth_signTypedData_v4', async () => {
    const signer = await provider.getSigner(DEV_ADDRESSES[0]);
    const to = Wallet.createRandom().address;
    const tx = await signer.sendTransaction({ to, value: 42n });
    const receipt = await tx.wait();
    assert.equal(receipt?.status, 1);
    assert.equal(receipt?.from, DEV_ADDRESSES[0]);
    assert.equal(await provider.getBalance(to), 42n);
    const message = 'hello noded';
    const sig = await signer.signMessage(message);
    assert.equal(verifyMessage(message, sig), DEV_ADDRESSES[0]);
    const domain = { name: 'noded', version: '1', chainId: 31337, verifyingContract: to };
    const types = {
      Mail: [
        { name: 'to', type: 'address' },
        { name: 'contents', type: 'string' },
      ],
    };
    const value = { to, contents: 'typed' };
    const typedSig = await signer.signTypedData(domain, types, value);
    assert.equal(verifyTypedData(domain, types, value, typedSig), DEV_ADDRESSES[0]);
  });

  it('answers malformed requests with JSON-RPC errors and keeps serving', async () => {
    const post = async (body: string) => {
      const res = await fetch(env.node.ethUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body,
      });
      return (await res.json()) as { error?: { code: number; message: string } };
    };
    assert.equal((await post('{"jsonrpc":"2.0",')).error?.code, -32700);
    assert.equal(
      (await post('{"jsonrpc":"2.0","id":1,"method":"eth_nope","params":[]}')).error?.code,
      -32601,
    );
    assert.equal(
      (await post('{"jsonrpc":"2.0","id":1,"method":"eth_getBalance","params":["xyz","latest"]}')).error
        ?.code,
      -32602,
    );
    assert.ok((await provider.getBlockNumber()) >= 1);
  });

  it('takes 150 transactions from one account in one batch (past the 64 guaranteed slots)', async () => {
    // A deploy script that fires a batch from one account: geth accepts it while its pool has room,
    // and so must noded (max_txs_per_sender is a guaranteed share, not a cap). One JSON-RPC batch is
    // admitted in order within a few tens of ms, well inside one 300 ms block.
    const wallet = new Wallet(DEV_KEYS[1], provider);
    const to = Wallet.createRandom().address;
    const fee = await provider.getFeeData();
    const first = await provider.getTransactionCount(wallet.address, 'pending');
    const raws: string[] = [];
    for (let i = 0; i < 150; i++) {
      raws.push(
        await wallet.signTransaction({
          chainId: 31337n,
          type: 2,
          to,
          value: 1n,
          nonce: first + i,
          gasLimit: 21_000n,
          maxFeePerGas: fee.maxFeePerGas!,
          maxPriorityFeePerGas: fee.maxPriorityFeePerGas!,
        }),
      );
    }
    const res = await fetch(env.node.ethUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(
        raws.map((raw, id) => ({ jsonrpc: '2.0', id, method: 'eth_sendRawTransaction', params: [raw] })),
      ),
    });
    const replies = (await res.json()) as Array<{ result?: string; error?: { message: string } }>;
    assert.deepEqual(
      replies.filter((r) => r.error).map((r) => r.error!.message),
      [],
    );
    const last = await provider.waitForTransaction(replies[149].result!, 1, 30_000);
    assert.equal(last?.status, 1);
    assert.equal(await provider.getBalance(to), 150n);
    assert.equal(await provider.getTransactionCount(wallet.address), first + 150);
  });
});
