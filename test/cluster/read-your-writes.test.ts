// Read-your-writes across rpc-edges and edge failover across state-stores (docs/cluster.md), as
// processes on one chain-local home: nats-server, the executor, consensus, two state-stores and two
// rpc-edges, edge A on store 1 and edge B on "store 2, then store 1" (NODED_STATE_STORE_GRPC_ADDRESS
// as a list). ethers (cacheTimeout -1) sends through edge A and reads through edge B:
// - store 2 paused (SIGSTOP) while a transfer commits and its receipt comes through edge A: edge B's
//   eth_blockNumber already names the receipt's block (the executor's head on NATS), and its
//   getBalance('latest'), sent while store 2 is still paused, answers the new balance once store 2
//   resumes (it waits for its follower to apply that height), with no retry by the client;
// - back to back, receipt through A then balance through B, five times, with both stores running;
// - store 2 killed (SIGKILL): edge B keeps answering every read from store 1, its metrics and log
//   name store 1; store 2 restarted on its database: edge B reads from it again, and no read failed
//   throughout.
// On the code before read-your-writes, the first step fails (edge B's latest is store 2's last
// position), and the list in NODED_STATE_STORE_GRPC_ADDRESS is refused at edge B's start.
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { JsonRpcProvider, Wallet } from 'ethers';
import { DEV_ADDRESSES, DEV_KEYS, freePort, initLocalHome } from '../e2e/harness.js';
import { startNatsServer } from './nats.js';
import { rpc, type ServiceProcess, spawnService, until, waitForService } from './processes.js';

const cleanups: Array<() => unknown> = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

/** The address edge B's metrics say it reads from (the in_use gauge at 1). */
async function storeInUse(metricsAt: string): Promise<string> {
  const text = await (
    await fetch(`http://${metricsAt}/metrics`, { signal: AbortSignal.timeout(10_000) })
  ).text();
  const using = [...text.matchAll(/_rpc_edge_state_store_in_use\{address="([^"]+)"\} 1\b/g)].map(
    (m) => m[1]!,
  );
  assert.equal(using.length, 1, `one state-store in use, got ${JSON.stringify(using)}`);
  return using[0]!;
}

describe('read-your-writes across rpc-edges, and edge failover', () => {
  it('a receipt through one edge is followed by the new balance through another, whose state-store lags or dies', async (t) => {
    const { home, ports } = await initLocalHome({ timeoutCommit: '300ms' });
    cleanups.push(() => rmSync(home, { recursive: true, force: true }));
    const nats = await startNatsServer();
    cleanups.push(() => nats.stop());
    const executorAt = `127.0.0.1:${await freePort()}`;
    const store1At = `127.0.0.1:${await freePort()}`;
    const store2At = `127.0.0.1:${await freePort()}`;
    const edgeBHttp = await freePort();
    const edgeBWs = await freePort();
    const edgeBApi = await freePort();
    const edgeBMetrics = `127.0.0.1:${await freePort()}`;
    const env = { NODED_EXECUTOR_GRPC_ADDRESS: executorAt, NODED_NATS_URL: nats.url };
    const running: ServiceProcess[] = [];
    cleanups.push(async () => {
      for (const s of running.reverse()) {
        if (s.proc.signalCode === null && s.proc.exitCode === null) s.proc.kill('SIGCONT');
        await s.stop();
      }
    });
    const start = async (name: string, more: Record<string, string> = {}) => {
      const s = spawnService(name, home, { ...env, ...more });
      running.push(s);
      await waitForService(s, new RegExp(`noded service ${name} is running`), 90_000);
      return s;
    };
    const store2Env = {
      NODED_STATE_STORE_GRPC_ADDRESS: store2At,
      NODED_STATE_STORE_DB: join(home, 'data', 'state-store-2.db'),
      // Room for a loaded machine: store 2 must catch up within its wait after SIGCONT, or edge B
      // would (rightly) read from store 1 and the check that store 2 answered would not hold.
      NODED_STATE_STORE_READ_WAIT: '5s',
    };
    await start('executor');
    await start('consensus');
    await start('state-store', { NODED_STATE_STORE_GRPC_ADDRESS: store1At });
    let store2 = await start('state-store', store2Env);
    await start('rpc-edge', { NODED_STATE_STORE_GRPC_ADDRESS: store1At });
    const edgeB = await start('rpc-edge', {
      NODED_STATE_STORE_GRPC_ADDRESS: `${store2At},${store1At}`,
      NODED_EVM_RPC_ADDRESS: `127.0.0.1:${edgeBHttp}`,
      NODED_EVM_WS_ADDRESS: `127.0.0.1:${edgeBWs}`,
      NODED_API_ADDRESS: `tcp://127.0.0.1:${edgeBApi}`,
      NODED_EVM_API_ADDRESS: `127.0.0.1:${edgeBApi}`,
      NODED_SERVICE_METRICS_ADDRESS: edgeBMetrics,
    });
    const urlA = `http://127.0.0.1:${ports.evmHttp}`;
    const urlB = `http://127.0.0.1:${edgeBHttp}`;
    const providerA = new JsonRpcProvider(urlA, 31337, {
      staticNetwork: true,
      cacheTimeout: -1,
      pollingInterval: 100,
    });
    const providerB = new JsonRpcProvider(urlB, 31337, {
      staticNetwork: true,
      cacheTimeout: -1,
      pollingInterval: 100,
    });
    cleanups.push(() => providerA.destroy());
    cleanups.push(() => providerB.destroy());
    await until('both edges report blocks', 60_000, async () =>
      (await providerA.getBlockNumber()) >= 2 && (await providerB.getBlockNumber()) >= 2 ? true : undefined,
    );
    assert.equal(await storeInUse(edgeBMetrics), store2At);
    const wallet = new Wallet(DEV_KEYS[0], providerA);
    const fresh = () => Wallet.createRandom().address;

    // 1. Store 2 paused: the transfer commits, its receipt comes through edge A.
    const to = fresh();
    store2.proc.kill('SIGSTOP');
    const sent = await wallet.sendTransaction({ to, value: 424_242n });
    const receipt = await sent.wait(1, 60_000);
    assert.equal(receipt?.status, 1);
    // Edge B heard the executor's head: its latest is at least the receipt's block at once.
    const latestB = Number(await rpc(urlB, 'eth_blockNumber'));
    assert.ok(
      latestB >= receipt!.blockNumber,
      `edge B's eth_blockNumber ${latestB} < the receipt's block ${receipt!.blockNumber}`,
    );
    // Asked while store 2 still sleeps; it answers once resumed, after applying that height.
    const asked = Date.now();
    const balance = providerB.getBalance(to, 'latest');
    await new Promise((r) => setTimeout(r, 300));
    store2.proc.kill('SIGCONT');
    assert.equal(await balance, 424_242n);
    t.diagnostic(
      `paused store's read answered ${Date.now() - asked} ms after it was sent (resumed at 300 ms)`,
    );
    assert.equal(await storeInUse(edgeBMetrics), store2At);

    // 2. Back to back, both stores running: no read through B misses the write seen through A.
    for (let i = 0; i < 5; i++) {
      const dest = fresh();
      const tx = await wallet.sendTransaction({ to: dest, value: 1_000n + BigInt(i) });
      assert.equal((await tx.wait(1, 60_000))?.status, 1);
      assert.equal(await providerB.getBalance(dest), 1_000n + BigInt(i), `transfer ${i}`);
      assert.equal(await providerB.getTransactionCount(DEV_ADDRESSES[0], 'latest'), tx.nonce + 1);
    }

    // 3. Store 2 killed, then back: edge B answers every read meanwhile.
    const failures: string[] = [];
    let reads = 0;
    let reading = true;
    const reader = (async () => {
      while (reading) {
        try {
          await providerB.getBalance(to);
          await rpc(urlB, 'eth_getBlockByNumber', ['latest', false]);
          reads++;
        } catch (err) {
          failures.push((err as Error).message);
        }
        await new Promise((r) => setTimeout(r, 20));
      }
    })();
    await new Promise((r) => setTimeout(r, 300));
    store2.proc.kill('SIGKILL');
    await store2.exited;
    running.splice(running.indexOf(store2), 1);
    await until('edge B reads from store 1', 15_000, async () =>
      (await storeInUse(edgeBMetrics)) === store1At ? true : undefined,
    );
    // A write while store 2 is away is read through edge B (from store 1).
    const during = fresh();
    assert.equal(
      (await (await wallet.sendTransaction({ to: during, value: 7n })).wait(1, 60_000))?.status,
      1,
    );
    assert.equal(await providerB.getBalance(during), 7n);
    const readsWhileDown = reads;
    store2 = await start('state-store', store2Env);
    await until('edge B reads from store 2 again', 30_000, async () =>
      (await storeInUse(edgeBMetrics)) === store2At ? true : undefined,
    );
    assert.equal(await providerB.getBalance(during), 7n);
    reading = false;
    await reader;
    t.diagnostic(
      `reads through edge B: ${readsWhileDown} until store 2 was restarted, ${reads} in all, ${failures.length} failed`,
    );
    assert.deepEqual(failures, [], 'no read through edge B failed');
    assert.ok(readsWhileDown > 5 && reads > readsWhileDown, `reads went on: ${readsWhileDown} then ${reads}`);
    assert.match(
      edgeB.output(),
      new RegExp(
        `state-store unavailable; reading from the next one.*${store2At}|${store2At}.*state-store unavailable; reading from the next one`,
      ),
    );
    assert.match(edgeB.output(), /state-store answers again/);
  });
});
