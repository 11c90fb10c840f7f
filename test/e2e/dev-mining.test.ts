// chain-local as a drop-in for anvil and a Hardhat node: blocks on demand (a transaction at an idle
// node is proposed, voted and committed at once, still through consensus) and the mining and time
// test-control methods (evm_mine, anvil_mine, evm_setAutomine, evm_setIntervalMining,
// evm_increaseTime, evm_setNextBlockTimestamp), refused on a testnet home.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { JsonRpcProvider, Wallet } from 'ethers';
import {
  DEV_KEYS,
  initLocalHome,
  jsonRpc,
  type NodePorts,
  type RunningNode,
  rewireHome,
  runCli,
  startNode,
  startOnFreePorts,
} from './harness.js';

const rpc = jsonRpc;

async function ok<T>(url: string, method: string, params: unknown[] = []): Promise<T> {
  const a = await rpc(url, method, params);
  assert.equal(a.error, undefined, `${method} failed: ${JSON.stringify(a.error)}`);
  return a.result as T;
}

async function blockAt(url: string, n: number | 'latest') {
  const tag = n === 'latest' ? n : `0x${n.toString(16)}`;
  const b = await ok<{ number: string; timestamp: string; hash: string; transactions: string[] }>(
    url,
    'eth_getBlockByNumber',
    [tag, false],
  );
  return { ...b, n: Number(b.number), time: Number(b.timestamp) };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('chain-local: blocks on demand and the dev mining methods', { timeout: 300_000 }, () => {
  let home: string;
  let ports: NodePorts;
  let node: RunningNode | undefined;
  let provider: JsonRpcProvider;
  let url: string;

  before(async () => {
    // The config `noded init full --chain-id chain-local` writes: nothing changed but the ports.
    ({ home, ports } = await initLocalHome());
    const config = readFileSync(join(home, 'config', 'config.toml'), 'utf8');
    assert.match(config, /^timeout_commit = "1s"$/m);
    assert.match(config, /^skip_timeout_commit = true$/m);
    assert.match(config, /^create_empty_blocks_interval = "1s"$/m);
    assert.match(readFileSync(join(home, 'config', 'app.toml'), 'utf8'), /^pruning = "nothing"$/m);
    node = await startOnFreePorts(home, ports);
    ports = node.ports;
    url = node.ethUrl;
    provider = new JsonRpcProvider(url, undefined, {
      staticNetwork: true,
      cacheTimeout: -1,
      pollingInterval: 20,
    });
  });

  after(async () => {
    provider?.destroy();
    await node?.stop();
    rmSync(home, { recursive: true, force: true });
  });

  it('answers sequential transactions far faster than timeout_commit, each in a block committed by the validator', async () => {
    const wallet = new Wallet(DEV_KEYS[1], provider);
    let nonce = await provider.getTransactionCount(wallet.address, 'latest');
    const to = Wallet.createRandom().address;
    const n = 30;
    const blocks: number[] = [];
    const latencies: number[] = [];
    const t0 = performance.now();
    for (let i = 0; i < n; i++) {
      const sentAt = performance.now();
      const raw = await wallet.signTransaction({
        to,
        value: 1n,
        nonce: nonce++,
        gasLimit: 21_000n,
        maxFeePerGas: 10_000_000_000n,
        maxPriorityFeePerGas: 1_000_000_000n,
        chainId: 31337n,
        type: 2,
      });
      const hash = await ok<string>(url, 'eth_sendRawTransaction', [raw]);
      type Receipt = { blockNumber: string; status: string };
      let receipt: Receipt | null = null;
      for (let tries = 0; tries < 2000; tries++) {
        receipt = await ok<Receipt | null>(url, 'eth_getTransactionReceipt', [hash]);
        if (receipt !== null) break;
        await sleep(2);
      }
      if (receipt === null) throw new Error(`no receipt for ${hash}`);
      assert.equal(receipt.status, '0x1');
      blocks.push(Number(receipt.blockNumber));
      latencies.push(performance.now() - sentAt);
    }
    const perTx = (performance.now() - t0) / n;
    const median = [...latencies].sort((a, b) => a - b)[Math.floor(n / 2)]!;
    console.log(
      `# sequential send -> receipt: ${perTx.toFixed(1)} ms per transaction over ${n}, median ${median.toFixed(1)} ms`,
    );
    // With timed blocks each transaction, sent just after the previous receipt (just after a block),
    // would wait for the next block a timeout_commit (1 s) later: every latency would be ~1000 ms
    // however fast the machine, and a loaded machine only adds to it. The median (a stall of this
    // process lengthens a few transactions, not half of them) must be well under that floor.
    assert.ok(
      median < 700,
      `median ${median.toFixed(1)} ms per sequential transaction (timed blocks: ~1000)`,
    );
    assert.equal(new Set(blocks).size, n, 'each sequential transaction got its own block');

    // The block went through consensus: the validator's precommit signature is in its commit, and
    // the consensus WAL holds the height.
    const h = blocks.at(-1)!;
    const status = (await (await fetch(`${node!.cometUrl}/status`)).json()) as {
      result: { validator_info: { address: string } };
    };
    const commit = (await (await fetch(`${node!.cometUrl}/commit?height=${h}`)).json()) as {
      result: {
        signed_header: {
          commit: {
            signatures: Array<{ validator_address: string; block_id_flag: number; signature: string }>;
          };
        };
      };
    };
    const sigs = commit.result.signed_header.commit.signatures;
    assert.equal(sigs.length, 1);
    assert.equal(sigs[0]!.validator_address, status.result.validator_info.address);
    assert.equal(sigs[0]!.block_id_flag, 2);
    assert.ok(sigs[0]!.signature.length > 0);
    const wal = join(home, 'data', 'cs.wal', 'wal');
    assert.ok(existsSync(wal) && statSync(wal).size > 0, 'the consensus WAL is written');
  });

  it('still makes empty blocks about once a second while idle', async () => {
    // create_empty_blocks_interval is 1 s. Over at least 3.5 s, blocks must come (two, waiting up to
    // 15 s however loaded the machine) and not faster than the interval: over the measured wall time
    // t, at most ceil(t / 1 s) + 1. A stall of this process lengthens t, never the count.
    const a = await blockAt(url, 'latest');
    const t0 = performance.now();
    let b = a;
    for (
      const until = Date.now() + 15_000;
      (b.n - a.n < 2 || performance.now() - t0 < 3500) && Date.now() < until;
    ) {
      await sleep(250);
      b = await blockAt(url, 'latest');
    }
    const seconds = (performance.now() - t0) / 1000;
    const made = b.n - a.n;
    assert.ok(made >= 2, `idle: ${made} blocks in ${seconds.toFixed(1)} s (interval 1 s)`);
    assert.ok(
      made <= Math.ceil(seconds) + 1,
      `idle: ${made} blocks in ${seconds.toFixed(1)} s, faster than the 1 s interval`,
    );
  });

  it('with automine off and no interval a transaction waits; evm_mine includes it in exactly one block', async () => {
    assert.equal(await ok(url, 'evm_setAutomine', [false]), true);
    assert.equal(await ok(url, 'evm_setIntervalMining', [0]), true);
    // A timed block already scheduled may still land (on a loaded machine, later than a fixed wait):
    // the chain counts as idle once no block came for 1.5 s, within 15 s.
    let before = await blockAt(url, 'latest');
    for (const until = Date.now() + 15_000; ; ) {
      await sleep(1500);
      const now = await blockAt(url, 'latest');
      if (now.n === before.n) break;
      assert.ok(Date.now() < until, `blocks kept coming with automine off and interval 0 (at ${now.n})`);
      before = now;
    }
    const wallet = new Wallet(DEV_KEYS[2], provider);
    const tx = await wallet.sendTransaction({ to: Wallet.createRandom().address, value: 5n });
    await sleep(2000);
    assert.equal(await provider.getTransactionReceipt(tx.hash), null, 'no block while automine is off');
    assert.equal((await blockAt(url, 'latest')).n, before.n, 'no timed block with interval 0');

    assert.equal(await ok(url, 'evm_mine'), '0x0');
    const mined = await blockAt(url, 'latest');
    assert.equal(mined.n, before.n + 1);
    assert.deepEqual(mined.transactions, [tx.hash]);

    // Interval mining on again: a timed block follows without any transaction.
    assert.equal(await ok(url, 'evm_setIntervalMining', [300]), true);
    await sleep(1500);
    assert.ok((await blockAt(url, 'latest')).n >= mined.n + 2, 'timed blocks every 300 ms');
    await ok(url, 'evm_setIntervalMining', [0]);
  });

  it('evm_increaseTime and evm_setNextBlockTimestamp set the next block time; anvil_mine spaces blocks', async () => {
    await sleep(500);
    const start = await blockAt(url, 'latest');
    const total = await ok<string>(url, 'evm_increaseTime', [3600]);
    assert.ok(BigInt(total) >= 3600n, `total offset ${total}`);
    await ok(url, 'evm_mine');
    const later = await blockAt(url, 'latest');
    assert.equal(later.n, start.n + 1);
    assert.ok(later.time >= start.time + 3600, `${later.time} is not 3600 s after ${start.time}`);

    const target = later.time + 10_000;
    assert.equal(await ok(url, 'evm_setNextBlockTimestamp', [`0x${target.toString(16)}`]), null);
    await ok(url, 'evm_mine');
    const exact = await blockAt(url, 'latest');
    assert.equal(exact.time, target);

    const explicit = target + 77;
    await ok(url, 'evm_mine', [explicit]);
    assert.equal((await blockAt(url, 'latest')).time, explicit);

    assert.equal(await ok(url, 'anvil_mine', ['0x3', '0x3c']), null);
    const top = await blockAt(url, 'latest');
    const prev1 = await blockAt(url, top.n - 1);
    const prev2 = await blockAt(url, top.n - 2);
    assert.equal(top.n, exact.n + 4);
    assert.equal(prev1.time - prev2.time, 60);
    assert.equal(top.time - prev1.time, 60);
    await ok(url, 'hardhat_mine', [2]);
    assert.equal((await blockAt(url, 'latest')).n, top.n + 2);
    // anvil's evm_mine options object: two blocks, the first at the timestamp given.
    const at = (await blockAt(url, 'latest')).time + 500;
    assert.equal(await ok(url, 'evm_mine', [{ timestamp: at, blocks: 2 }]), '0x0');
    assert.equal((await blockAt(url, 'latest')).n, top.n + 4);
    assert.equal((await blockAt(url, top.n + 3)).time, at);
    const unknown = await rpc(url, 'evm_mine', [{ count: 2 }]);
    assert.equal(unknown.error?.code, -32602);

    // A time at or before the last block's is refused and changes nothing.
    const bad = await rpc(url, 'evm_setNextBlockTimestamp', [explicit]);
    assert.equal(bad.error?.code, -32000);
    assert.match(
      bad.error!.message,
      /^evm_setNextBlockTimestamp: timestamp .* is not after the last block's time/,
    );
    const tooMany = await rpc(url, 'anvil_mine', [100_000]);
    assert.equal(tooMany.error?.code, -32000);
    assert.match(tooMany.error!.message, /count 100000 exceeds 10000/);
  });

  it('comes back after a restart with the same block hashes, and mines on demand again', async () => {
    await ok(url, 'evm_setAutomine', [true]);
    await ok(url, 'evm_setIntervalMining', [1000]);
    const top = await blockAt(url, 'latest');
    const hashes: string[] = [];
    for (let i = 1; i <= top.n; i++) hashes.push((await blockAt(url, i)).hash);
    provider.destroy();
    assert.equal(await node!.stop(), 0);
    node = await startNode(home, ports, [], BigInt(top.n));
    url = node.ethUrl;
    provider = new JsonRpcProvider(url, undefined, {
      staticNetwork: true,
      cacheTimeout: -1,
      pollingInterval: 20,
    });
    for (let i = 1; i <= top.n; i++) {
      assert.equal((await blockAt(url, i)).hash, hashes[i - 1], `block ${i} hash after restart`);
    }
    const wallet = new Wallet(DEV_KEYS[3], provider);
    const t0 = Date.now();
    const tx = await wallet.sendTransaction({ to: Wallet.createRandom().address, value: 1n });
    const receipt = await tx.wait(1, 20_000);
    assert.equal(receipt?.status, 1);
    assert.ok(Date.now() - t0 < 2000);
  });
});

describe('dev mining methods outside a single-validator chain-local node', { timeout: 420_000 }, () => {
  let home: string;
  let node: RunningNode | undefined;

  before(async () => {
    home = mkdtempSync(join(tmpdir(), 'noded-e2e-testnet-'));
    const init = runCli(['init', 'full', '--chain-id', 'chain-testnet', '--home', home]);
    assert.equal(init.code, 0, init.stderr);
    // Nobody to dial here: the shipped testnet peers are remote hosts.
    const ports = await rewireHome(home, {
      extra: (c) => {
        if (!c.p2p) return;
        c.p2p.persistent_peers = '';
        c.p2p.seeds = '';
      },
    });
    node = await startNode(home, ports, [], 0n);
  });

  after(async () => {
    await node?.stop();
    rmSync(home, { recursive: true, force: true });
  });

  it('refuses each with -32000 naming the method', async () => {
    const calls: Array<[string, unknown[]]> = [
      ['evm_mine', []],
      ['anvil_mine', [1]],
      ['hardhat_mine', [1]],
      ['evm_setAutomine', [true]],
      ['evm_setIntervalMining', [1000]],
      ['evm_increaseTime', [60]],
      ['evm_setNextBlockTimestamp', [4_000_000_000]],
      ['anvil_reset', []],
      ['hardhat_reset', []],
    ];
    for (const [method, params] of calls) {
      const a = await rpc(node!.ethUrl, method, params);
      assert.deepEqual(
        a.error,
        { code: -32000, message: `${method} is only available on a single-validator chain-local node` },
        method,
      );
    }
  });
});
