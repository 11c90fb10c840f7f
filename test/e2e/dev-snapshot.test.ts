// evm_snapshot / evm_revert against a real chain-local node process through ethers: a revert brings
// back the block number and hash, balances, nonces, code, storage; receipts, transactions, logs and
// blocks of the removed heights are gone on :8545, :26657 and :1317; the dev clock is restored; the
// ids follow Hardhat (increasing, a revert uses up its id and every later one); new blocks are made
// at the reverted-to heights; a restart after a revert (also a kill -9) comes back at the same place.
import assert from 'node:assert/strict';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Contract, ContractFactory, type InterfaceAbi, JsonRpcProvider, Wallet } from 'ethers';
import { compile, TOKEN_SOURCE } from './contracts.js';
import { DEV_ADDRESSES, DEV_KEYS, initLocalHome, type RunningNode, startNode } from './harness.js';

interface RpcReply {
  result?: unknown;
  error?: { code: number; message: string };
}

/**
 * A pooled keep-alive connection that the server closes as the next request goes out fails with
 * "fetch failed" (undici's UND_ERR_SOCKET) before the request reached the node: sent once more then.
 * A request that did reach it is never repeated (that would show: a used snapshot id answers false).
 */
async function post(url: string, body: string): Promise<Response> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body,
        signal: AbortSignal.timeout(30_000),
      });
    } catch (err) {
      const code = (err as { cause?: { code?: string } }).cause?.code;
      if (attempt > 0 || code !== 'UND_ERR_SOCKET') throw err;
    }
  }
}

async function rpc(url: string, method: string, params: unknown[] = []): Promise<RpcReply> {
  try {
    const res = await post(url, JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }));
    return (await res.json()) as RpcReply;
  } catch (err) {
    throw new Error(
      `${method}: ${(err as Error).message} ${String((err as { cause?: unknown }).cause ?? '')}`,
    );
  }
}

async function ok(url: string, method: string, params: unknown[] = []): Promise<unknown> {
  const r = await rpc(url, method, params);
  if (r.error) throw new Error(`${method}: ${r.error.code} ${r.error.message}`);
  return r.result;
}

async function getJson(url: string): Promise<Record<string, unknown>> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(20_000) });
    return (await res.json()) as Record<string, unknown>;
  } catch (err) {
    throw new Error(`GET ${url}: ${(err as Error).message}`);
  }
}

interface View {
  number: number;
  hash: string;
  balances: bigint[];
  nonce: number;
  code: string;
  slot0: string;
  tokenBalance: bigint;
}

describe('evm_snapshot / evm_revert on a chain-local node', { timeout: 300_000 }, () => {
  let home: string;
  let ports: Awaited<ReturnType<typeof initLocalHome>>['ports'];
  let node: RunningNode;
  let provider: JsonRpcProvider;
  let url: string;
  let wallet: Wallet;
  let token: Contract;
  let tokenAddress: string;

  const connect = () => {
    url = node.ethUrl;
    provider = new JsonRpcProvider(url, undefined, {
      staticNetwork: true,
      pollingInterval: 50,
      cacheTimeout: -1,
    });
    wallet = new Wallet(DEV_KEYS[0]!, provider);
    token = new Contract(tokenAddress, compile(TOKEN_SOURCE).TestToken!.abi as InterfaceAbi, wallet);
  };

  const view = async (): Promise<View> => {
    const b = await provider.getBlock('latest');
    assert.ok(b?.hash);
    return {
      number: b.number,
      hash: b.hash,
      balances: await Promise.all(DEV_ADDRESSES.slice(0, 3).map((a) => provider.getBalance(a))),
      nonce: await provider.getTransactionCount(DEV_ADDRESSES[0]!, 'latest'),
      code: await provider.getCode(tokenAddress),
      slot0: await provider.getStorage(tokenAddress, 3n),
      tokenBalance: (await token.getFunction('balanceOf')(DEV_ADDRESSES[1]!)) as bigint,
    };
  };

  before(async () => {
    // Blocks on demand, and an empty block only once an hour, so that nothing moves between reads.
    ({ home, ports } = await initLocalHome({
      extra: (config) => {
        if (config.consensus) config.consensus.create_empty_blocks_interval = '3600s';
      },
    }));
    node = await startNode(home, ports, [], 0n);
    url = node.ethUrl;
    provider = new JsonRpcProvider(url, undefined, {
      staticNetwork: true,
      pollingInterval: 50,
      cacheTimeout: -1,
    });
    wallet = new Wallet(DEV_KEYS[0]!, provider);
    const { abi, bytecode } = compile(TOKEN_SOURCE).TestToken!;
    const deployed = await new ContractFactory(abi as InterfaceAbi, bytecode, wallet).deploy(
      'Snap',
      'SNP',
      1_000_000n,
    );
    await deployed.waitForDeployment();
    tokenAddress = await deployed.getAddress();
    connect();
  });

  after(async () => {
    await node?.stop();
    if (home) rmSync(home, { recursive: true, force: true });
  });

  it('reverts blocks, state, receipts, logs and the dev clock; ids follow Hardhat', async () => {
    const before = await view();
    const first = (await ok(url, 'evm_snapshot')) as string;
    const second = (await ok(url, 'anvil_snapshot')) as string;
    assert.match(first, /^0x[0-9a-f]+$/);
    assert.ok(BigInt(second) > BigInt(first), `ids increase: ${first} then ${second}`);

    // An hour forward on the dev clock, then transactions and blocks.
    await ok(url, 'evm_increaseTime', [3600]);
    const sent = [];
    sent.push(await (await wallet.sendTransaction({ to: DEV_ADDRESSES[2], value: 12345n })).wait());
    sent.push(await (await token.getFunction('transfer')(DEV_ADDRESSES[1], 777n)).wait());
    sent.push(await (await token.getFunction('transfer')(DEV_ADDRESSES[2], 5n)).wait());
    await ok(url, 'evm_mine');
    const later = await view();
    assert.ok(later.number >= before.number + 4, `blocks made: ${before.number} -> ${later.number}`);
    assert.equal(later.tokenBalance, before.tokenBalance + 777n);
    const hashes = sent.map((r) => r!.hash);
    const warped = await provider.getBlock('latest');
    assert.ok(warped!.timestamp >= Math.floor(Date.now() / 1000) + 3000, 'the clock moved an hour');
    const logsBefore = await provider.getLogs({ address: tokenAddress, fromBlock: before.number + 1 });
    assert.equal(logsBefore.length, 2);
    const cometTx = await getJson(`${node.cometUrl}/tx?hash=0x${hashes[1]!.slice(2)}`);
    assert.ok(cometTx.result, 'the Comet index has the transaction before the revert');

    assert.equal(await ok(url, 'evm_revert', [first]), true);

    const after = await view();
    assert.deepEqual(after, before, 'block number and hash, balances, nonce, code, storage back');
    for (const h of hashes) {
      assert.equal(await provider.getTransactionReceipt(h), null, `receipt of ${h} gone`);
      assert.equal(await provider.getTransaction(h), null, `transaction ${h} gone`);
    }
    assert.equal(await provider.getBlock(before.number + 1), null, 'later block gone');
    assert.equal(await provider.getBlock(later.hash), null, 'later block gone by hash');
    assert.deepEqual(
      await provider.getLogs({ address: tokenAddress, fromBlock: before.number + 1, toBlock: later.number }),
      [],
    );
    // The CometBFT RPC and the REST API agree.
    const status = (await getJson(`${node.cometUrl}/status`)).result as {
      sync_info: { latest_block_height: string };
    };
    assert.equal(status.sync_info.latest_block_height, String(before.number));
    const gone = await getJson(`${node.cometUrl}/block?height=${before.number + 1}`);
    assert.ok(gone.error, `:26657 /block of a removed height is an error: ${JSON.stringify(gone)}`);
    const txGone = await getJson(`${node.cometUrl}/tx?hash=0x${hashes[1]!.slice(2)}`);
    assert.ok(txGone.error, 'the Comet index lost the transaction');
    const rest = (await getJson(`${node.apiUrl}/cosmos/base/tendermint/v1beta1/blocks/latest`)) as {
      block: { header: { height: string } };
    };
    assert.equal(rest.block.header.height, String(before.number));

    // Used ids: the reverted one and every later one answer false.
    assert.equal(await ok(url, 'evm_revert', [first]), false);
    assert.equal(await ok(url, 'anvil_revert', [second]), false);
    assert.equal(await ok(url, 'evm_revert', ['0x999']), false);

    // New blocks at the reverted-to heights, at the restored clock, with the old nonces.
    const again = await (await wallet.sendTransaction({ to: DEV_ADDRESSES[2], value: 1n })).wait();
    assert.ok(again);
    assert.equal(again.blockNumber, before.number + 1);
    assert.notEqual(again.blockHash, later.hash);
    const next = await provider.getBlock(again.blockNumber);
    assert.ok(next!.timestamp < Math.floor(Date.now() / 1000) + 600, 'the hour offset is undone');
    assert.equal(await provider.getTransactionCount(DEV_ADDRESSES[0]!, 'latest'), before.nonce + 1);
    // :26657 follows (an empty proof block may come after a transaction's block, as in CometBFT).
    const low = await provider.getBlockNumber();
    const status2 = (await getJson(`${node.cometUrl}/status`)).result as {
      sync_info: { latest_block_height: string };
    };
    const high = await provider.getBlockNumber();
    const cometHeight = Number(status2.sync_info.latest_block_height);
    assert.ok(
      cometHeight >= low && cometHeight <= high && low >= before.number + 1,
      `${low} ${cometHeight} ${high}`,
    );
  });

  it('a snapshot is reusable by a nested one, and reverts chain as in Hardhat', async () => {
    const base = await view();
    const outer = (await ok(url, 'evm_snapshot')) as string;
    await (await token.getFunction('transfer')(DEV_ADDRESSES[1], 1n)).wait();
    const mid = await view();
    const inner = (await ok(url, 'evm_snapshot')) as string;
    await (await token.getFunction('transfer')(DEV_ADDRESSES[1], 2n)).wait();
    assert.equal(await ok(url, 'evm_revert', [inner]), true);
    assert.deepEqual(await view(), mid);
    assert.equal(await ok(url, 'evm_revert', [outer]), true);
    assert.deepEqual(await view(), base);
  });

  it('a restart after a revert, also after kill -9, comes back at the reverted height with the same hashes', async () => {
    const snap = (await ok(url, 'evm_snapshot')) as string;
    const base = await view();
    const removed = [];
    for (let i = 0; i < 3; i++)
      removed.push((await (await token.getFunction('transfer')(DEV_ADDRESSES[2], 3n)).wait())!.hash);
    assert.equal(await ok(url, 'evm_revert', [snap]), true);
    await node.stop('SIGKILL');
    node = await startNode(home, ports, [], 0n);
    connect();
    // A node makes a block as it starts; the reverted-to chain is what it builds on.
    const at = await provider.getBlock(base.number);
    assert.equal(at!.hash, base.hash);
    for (const h of removed) assert.equal(await provider.getTransactionReceipt(h), null);
    assert.equal(
      (await token.getFunction('balanceOf')(DEV_ADDRESSES[1]!, { blockTag: base.number })) as bigint,
      base.tokenBalance,
    );
    assert.equal(await provider.getBalance(DEV_ADDRESSES[0]!), base.balances[0]);
    const top = await provider.getBlockNumber();
    const r = await (await token.getFunction('transfer')(DEV_ADDRESSES[2], 4n)).wait();
    assert.ok(r!.blockNumber > top);
    assert.equal(await provider.getTransactionCount(DEV_ADDRESSES[0]!, 'latest'), base.nonce + 1);
    await node.stop();
    node = await startNode(home, ports, [], 0n);
    connect();
    assert.equal((await provider.getBlock(r!.blockNumber))!.hash, r!.blockHash);
    assert.equal((await provider.getBlock(base.number))!.hash, base.hash);
  });

  it('kill -9 during a revert: the node restarts before it or after it, never between', async () => {
    const outcomes: string[] = [];
    for (const delayMs of [0, 30, 90]) {
      const snap = (await ok(url, 'evm_snapshot')) as string;
      const base = await view();
      const held = (await token.getFunction('balanceOf')(DEV_ADDRESSES[2]!)) as bigint;
      const removed = [];
      for (let i = 0; i < 2; i++)
        removed.push((await (await token.getFunction('transfer')(DEV_ADDRESSES[2], 9n)).wait())!);
      const top = (await provider.getBlock('latest'))!;
      const reverting = rpc(url, 'evm_revert', [snap]).catch(() => undefined);
      await new Promise((r) => setTimeout(r, delayMs));
      await node.stop('SIGKILL');
      await reverting;
      node = await startNode(home, ports, [], 0n);
      connect();
      assert.equal((await provider.getBlock(base.number))!.hash, base.hash, 'the snapshot height is intact');
      const before = (await provider.getBlock(top.number))?.hash === top.hash;
      for (const r of removed) {
        const receipt = await provider.getTransactionReceipt(r.hash);
        const indexed = await getJson(`${node.cometUrl}/tx?hash=0x${r.hash.slice(2)}`);
        if (before) {
          assert.equal(
            receipt?.blockHash,
            r.blockHash,
            `${delayMs} ms: before the revert, ${r.hash} is kept`,
          );
          assert.ok(indexed.result, `${delayMs} ms: before the revert, :26657 has ${r.hash}`);
        } else {
          assert.equal(receipt, null, `${delayMs} ms: after the revert, ${r.hash} is gone`);
          assert.ok(indexed.error, `${delayMs} ms: after the revert, :26657 lost ${r.hash}`);
        }
      }
      assert.equal(
        (await token.getFunction('balanceOf')(DEV_ADDRESSES[2]!)) as bigint,
        before ? held + 18n : held,
      );
      // Blocks are made again (WAL and double-sign guard consistent), on :8545 and :26657 alike.
      const next = (await (await token.getFunction('transfer')(DEV_ADDRESSES[2], 1n)).wait())!;
      const status = (await getJson(`${node.cometUrl}/status`)).result as {
        sync_info: { latest_block_height: string };
      };
      assert.ok(Number(status.sync_info.latest_block_height) >= next.blockNumber);
      outcomes.push(`${delayMs} ms: ${before ? 'before' : 'after'}`);
    }
    // Which side each kill landed on depends on the machine; both are correct.
    const finished =
      readFileSync(join(home, 'logs', 'noded.log'), 'utf8').split('finishing an interrupted evm_revert')
        .length - 1;
    process.stdout.write(
      `# kill -9 during evm_revert: ${outcomes.join(', ')}; interrupted reverts finished at start: ${finished}\n`,
    );
  });
});
