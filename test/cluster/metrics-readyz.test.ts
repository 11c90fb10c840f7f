// The metrics service's /readyz compares the executor's committed height with consensus' (issue 22,
// docs/cluster.md "Metrics"): `noded service metrics` runs as a process and gathers four services
// whose endpoints are plain HTTP servers on 127.0.0.1 standing in for their I/O (their /readyz 200,
// their /metrics the height series the real services expose). The heights move between requests:
// equal and ahead pass, a lag of EXECUTOR_MAX_LAG (2) passes, 3 fails naming the executor and both
// heights, and it passes again once the executor catches up; an executor without the series fails.
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, describe, it } from 'node:test';
import { freePort, initLocalHome } from '../e2e/harness.js';
import { type ServiceProcess, spawnService, waitForService } from './processes.js';

const cleanups: Array<() => unknown> = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

/** A service's metrics endpoint: /readyz 200, /metrics one gauge whose value the test sets. */
async function fakeService(series: string): Promise<{ address: string; set: (h: number | null) => void }> {
  let height: number | null = 0;
  const server: Server = createServer((req, res) => {
    if (req.url === '/readyz') {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end('{"status":"ready"}');
    } else if (req.url === '/metrics') {
      res.writeHead(200, { 'Content-Type': 'text/plain; version=0.0.4; charset=utf-8' });
      res.end(
        height === null
          ? '# HELP cometbft_mempool_size x\n# TYPE cometbft_mempool_size gauge\ncometbft_mempool_size{chain_id="chain-local"} 0\n'
          : `# HELP ${series} x\n# TYPE ${series} gauge\n${series}{chain_id="chain-local"} ${height}\n`,
      );
    } else {
      res.writeHead(404);
      res.end();
    }
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  cleanups.push(() => new Promise((r) => server.close(r)));
  return {
    address: `127.0.0.1:${(server.address() as AddressInfo).port}`,
    set: (h) => {
      height = h;
    },
  };
}

describe('noded service metrics /readyz: the executor against consensus', () => {
  it('is 503 naming both heights while the executor lags by more than 2, 200 again once it catches up', async () => {
    const { home } = await initLocalHome();
    cleanups.push(() => rmSync(home, { recursive: true, force: true }));
    const executor = await fakeService('cometbft_executor_height');
    const consensus = await fakeService('cometbft_consensus_latest_block_height');
    const store = await fakeService('cometbft_state_store_height');
    const edge = await fakeService('cometbft_mempool_size');
    const port = await freePort();
    const metrics: ServiceProcess = spawnService('metrics', home, {
      NODED_INSTRUMENTATION_PROMETHEUS_LISTEN_ADDR: `127.0.0.1:${port}`,
      NODED_METRICS_TARGETS: [
        `executor=${executor.address}`,
        `consensus=${consensus.address}`,
        `state-store=${store.address}`,
        `rpc-edge=${edge.address}`,
      ].join(','),
    });
    cleanups.push(() => metrics.stop());
    await waitForService(metrics, /noded service metrics is running/, 60_000);
    const readyz = async () => {
      const r = await fetch(`http://127.0.0.1:${port}/readyz`);
      return { status: r.status, body: (await r.json()) as { status: string; problems?: string[] } };
    };
    const heights = (e: number | null, c: number) => {
      executor.set(e);
      consensus.set(c);
      store.set(c);
    };

    heights(10, 10);
    assert.deepEqual(await readyz(), { status: 200, body: { status: 'ready' } });
    heights(11, 10); // the executor committed a block consensus has not recorded yet
    assert.equal((await readyz()).status, 200);
    heights(8, 10); // a block committed between the two reads: within the bound
    assert.equal((await readyz()).status, 200);

    heights(7, 10);
    const lagging = await readyz();
    assert.equal(lagging.status, 503);
    assert.equal(lagging.body.status, 'not ready');
    assert.deepEqual(lagging.body.problems, [
      `executor at ${executor.address}: at height 7, 3 behind consensus (10; at most 2)`,
    ]);
    heights(40, 100);
    assert.deepEqual((await readyz()).body.problems, [
      `executor at ${executor.address}: at height 40, 60 behind consensus (100; at most 2)`,
    ]);

    heights(99, 100); // caught up
    assert.deepEqual(await readyz(), { status: 200, body: { status: 'ready' } });

    heights(null, 100); // an executor that does not report its height is not taken as caught up
    const silent = await readyz();
    assert.equal(silent.status, 503);
    assert.deepEqual(silent.body.problems, [`executor at ${executor.address}: reports no height`]);
  });
});
