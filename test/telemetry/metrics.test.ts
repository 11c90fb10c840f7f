// NodeMetrics and MetricsServer: CometBFT metric names under the namespace, fed from the bus and
// hooks; checked by promtool and scraped by a real Prometheus server; health and readiness probes.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  defaultInstrumentationOptions,
  InstrumentationConfigError,
  MetricsServer,
  NodeMetrics,
  parseListenAddr,
  type Readiness,
} from '@noded/telemetry';
import type { EthBlock, Hex } from '@noded/types';
import { silentLogger } from '@noded/types';
import { freePort } from '../ports.js';
import { FakeChain } from '../rpc-comet/fake-node.js';

/** The value of one sample line `name{labels} value`. */
function sample(text: string, name: string, labels = ''): number | undefined {
  for (const line of text.split('\n')) {
    if (line.startsWith('#')) continue;
    const [key, value] = line.split(' ');
    if (key === `${name}${labels}`) return Number(value);
  }
  return undefined;
}

function ethHead(n: bigint, gasUsed: bigint, baseFee: bigint): EthBlock {
  const z = `0x${'00'.repeat(32)}` as Hex;
  return {
    number: n,
    hash: z,
    parentHash: z,
    nonce: '0x0000000000000000',
    sha3Uncles: z,
    logsBloom: '0x00',
    transactionsRoot: z,
    stateRoot: z,
    receiptsRoot: z,
    miner: `0x${'00'.repeat(20)}`,
    difficulty: 0n,
    totalDifficulty: 0n,
    extraData: '0x',
    size: 600n,
    gasLimit: 30_000_000n,
    gasUsed,
    timestamp: 0n,
    mixHash: z,
    baseFeePerGas: baseFee,
    transactions: [],
  };
}

describe('NodeMetrics', () => {
  let chain: FakeChain;
  let metrics: NodeMetrics;
  let server: MetricsServer;
  let port: number;
  const readiness: Readiness = { serving: true, catchingUp: false };

  before(async () => {
    chain = await FakeChain.create({ txsPerBlock: [] });
    metrics = new NodeMetrics({ namespace: 'cometbft', chainId: 'chain-local', bus: chain.bus, node: chain });
    server = new MetricsServer({
      metrics,
      logger: silentLogger,
      options: { ...defaultInstrumentationOptions, maxOpenConnections: 3 },
      readiness: () => readiness,
    });
    port = await server.listen('127.0.0.1', 0);
  });
  after(async () => {
    metrics.close();
    await server.close();
  });

  it('CometBFT metrics follow the events published on the bus', async () => {
    chain.commitBlock([]);
    chain.commitBlock([await chain.signTransfer(0, 1n), await chain.signTransfer(0, 2n)]);
    chain.bus.publish({
      kind: 'NewRound',
      height: 3,
      round: 2,
      proposerAddress: chain.validatorSet[0].address,
      proposerIndex: 0,
    });
    chain.bus.publish({ kind: 'EthNewHead', block: ethHead(2n, 42_000n, 875_000_000n), logs: [] });
    metrics.setMempoolSize(7);
    metrics.incFailedTxs();
    metrics.incFailedTxs(2);
    metrics.setPeers(4);
    metrics.observeBlockProcessing(12);
    metrics.observeRpc('eth_call', 3, true);
    metrics.observeRpc('eth_call', 5, false);
    metrics.observeRpc('bad method name!', 1, true);
    await new Promise((r) => setTimeout(r, 20)); // validator set and block size are read from the node
    const res = await fetch(`http://127.0.0.1:${port}/metrics`);
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
    const text = await res.text();
    const c = '{chain_id="chain-local"}';
    assert.equal(sample(text, 'cometbft_consensus_height', c), 3);
    assert.equal(sample(text, 'cometbft_consensus_latest_block_height', c), 2);
    assert.equal(sample(text, 'cometbft_consensus_rounds', c), 2);
    assert.equal(sample(text, 'cometbft_consensus_validators', c), 2);
    assert.equal(sample(text, 'cometbft_consensus_validators_power', c), 30);
    assert.equal(sample(text, 'cometbft_consensus_num_txs', c), 2);
    assert.equal(sample(text, 'cometbft_consensus_total_txs', c), 2);
    assert.equal(sample(text, 'cometbft_consensus_block_size_bytes', c), chain.blocks.get(2)!.meta.blockSize);
    assert.equal(sample(text, 'cometbft_consensus_block_interval_seconds_count', c), 1);
    assert.equal(sample(text, 'cometbft_consensus_block_interval_seconds_sum', c), 1);
    assert.equal(sample(text, 'cometbft_mempool_size', c), 7);
    assert.equal(sample(text, 'cometbft_mempool_failed_txs', c), 3);
    assert.equal(sample(text, 'cometbft_p2p_peers', c), 4);
    assert.equal(sample(text, 'cometbft_state_block_processing_time_count', c), 1);
    assert.equal(
      sample(text, 'cometbft_state_block_processing_time_bucket', '{le="21",chain_id="chain-local"}'),
      1,
    );
    assert.equal(sample(text, 'cometbft_rpc_requests_total', '{method="eth_call",outcome="ok"}'), 1);
    assert.equal(sample(text, 'cometbft_rpc_requests_total', '{method="eth_call",outcome="error"}'), 1);
    assert.equal(sample(text, 'cometbft_rpc_requests_total', '{method="other",outcome="ok"}'), 1);
    assert.equal(sample(text, 'cometbft_rpc_request_duration_seconds_count', '{method="eth_call"}'), 2);
    assert.equal(sample(text, 'cometbft_evm_block_gas_used', c), 42_000);
    assert.equal(sample(text, 'cometbft_evm_gas_used_total', c), 42_000);
    assert.equal(sample(text, 'cometbft_evm_base_fee_per_gas', c), 875_000_000);
    assert.ok((sample(text, 'process_cpu_seconds_total') ?? -1) >= 0, 'process metrics are exported');
    assert.ok(sample(text, 'nodejs_heap_size_used_bytes') !== undefined);
  });

  it("reads FinalizeBlock's duration and the refused and ran-ahead counts from the node at each block", async () => {
    const c = await FakeChain.create({ txsPerBlock: [] });
    let stats = { refusedTxs: 0, ranAheadTxs: 0, lastFinalizeHeight: 0, lastFinalizeMs: 0 };
    const node = Object.assign(c, { executionStats: () => stats });
    const m = new NodeMetrics({
      namespace: 'cometbft',
      chainId: 'chain-local',
      bus: c.bus,
      node,
      processMetrics: false,
    });
    const h = c.height();
    stats = { refusedTxs: 2, ranAheadTxs: 5, lastFinalizeHeight: h + 1, lastFinalizeMs: 15 };
    c.commitBlock([]);
    // A block the node did not finalize (a replay at start-up, say) is not timed again.
    stats = { ...stats, refusedTxs: 3, ranAheadTxs: 9 };
    c.commitBlock([]);
    stats = { refusedTxs: 3, ranAheadTxs: 9, lastFinalizeHeight: h + 3, lastFinalizeMs: 95 };
    c.commitBlock([]);
    const text = await m.text();
    const l = '{chain_id="chain-local"}';
    assert.equal(sample(text, 'cometbft_mempool_failed_txs', l), 3);
    assert.equal(sample(text, 'cometbft_evm_txs_ran_ahead_total', l), 9);
    assert.equal(sample(text, 'cometbft_state_block_processing_time_count', l), 2);
    assert.equal(sample(text, 'cometbft_state_block_processing_time_sum', l), 110);
    m.close();
  });

  it('the namespace prefixes every CometBFT name and must be a valid metric prefix', async () => {
    const m = new NodeMetrics({ namespace: 'noded', chainId: 'x', processMetrics: false });
    m.setPeers(1);
    const text = await m.text();
    assert.equal(sample(text, 'noded_p2p_peers', '{chain_id="x"}'), 1);
    assert.equal(text.includes('cometbft_'), false);
    assert.throws(
      () => new NodeMetrics({ namespace: 'bad-name', chainId: 'x' }),
      (err: Error) =>
        err instanceof InstrumentationConfigError && /instrumentation\.namespace/.test(err.message),
    );
  });

  it('promtool check metrics accepts the exposition (only CometBFT’s own counter name is linted)', async () => {
    const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    const res = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8' });
    assert.equal(res.error, undefined, 'promtool must be installed (Debian package "prometheus")');
    const problems = `${res.stdout}${res.stderr}`.trim().split('\n').filter(Boolean);
    // Exit 3 is "lint problems"; the single accepted one is CometBFT's counter name kept for dashboards.
    assert.ok(res.status === 0 || res.status === 3, `promtool exit ${res.status}: ${problems.join('; ')}`);
    assert.deepEqual(
      problems.filter(
        (p) => !/^cometbft_mempool_failed_txs counter metrics should have "_total" suffix$/.test(p),
      ),
      [],
    );
  });

  it('a Prometheus server scrapes /metrics with the target up', { timeout: 90_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'noded-prom-'));
    const promPort = await freePort();
    writeFileSync(
      join(dir, 'prometheus.yml'),
      [
        'global:',
        '  scrape_interval: 1s',
        '  scrape_timeout: 1s',
        'scrape_configs:',
        '  - job_name: noded',
        '    static_configs:',
        `      - targets: ['127.0.0.1:${port}']`,
        '',
      ].join('\n'),
    );
    let prom: ChildProcess | undefined;
    try {
      prom = spawn(
        'prometheus',
        [
          `--config.file=${join(dir, 'prometheus.yml')}`,
          `--storage.tsdb.path=${join(dir, 'data')}`,
          `--web.listen-address=127.0.0.1:${promPort}`,
          '--log.level=warn',
        ],
        { stdio: ['ignore', 'ignore', 'pipe'] },
      );
      let stderr = '';
      prom.stderr?.on('data', (d) => {
        stderr += d.toString();
      });
      const spawnError = new Promise<Error>((resolve) => prom!.once('error', resolve));
      const deadline = Date.now() + 60_000;
      let health = '';
      let height: string | undefined;
      while (Date.now() < deadline) {
        const failed = await Promise.race([
          spawnError,
          new Promise<undefined>((r) => setTimeout(() => r(undefined), 500)),
        ]);
        if (failed)
          throw new Error(`prometheus could not start (Debian package "prometheus"): ${failed.message}`);
        if (prom.exitCode !== null) throw new Error(`prometheus exited ${prom.exitCode}: ${stderr}`);
        try {
          const targets = (await (await fetch(`http://127.0.0.1:${promPort}/api/v1/targets`)).json()) as {
            data: { activeTargets: Array<{ health: string; lastError: string }> };
          };
          health = targets.data.activeTargets[0]?.health ?? '';
          if (health === 'up') {
            const q = (await (
              await fetch(`http://127.0.0.1:${promPort}/api/v1/query?query=cometbft_consensus_height`)
            ).json()) as {
              data: { result: Array<{ value: [number, string]; metric: Record<string, string> }> };
            };
            height = q.data.result[0]?.value[1];
            if (height !== undefined) {
              assert.equal(q.data.result[0].metric.chain_id, 'chain-local');
              break;
            }
          }
        } catch {
          // not listening yet
        }
      }
      assert.equal(health, 'up', `target health within 60 s (stderr: ${stderr.slice(-500)})`);
      assert.equal(height, '3');
    } finally {
      if (prom && prom.exitCode === null) {
        const exited = new Promise((r) => prom!.once('exit', r));
        prom.kill('SIGTERM');
        const timer = setTimeout(() => prom!.kill('SIGKILL'), 5000);
        await exited;
        clearTimeout(timer);
      }
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('MetricsServer health endpoints', () => {
  it('/healthz is alive; /readyz follows serving and catching up; unknown paths 404', async () => {
    let state: Readiness = { serving: false, catchingUp: true };
    const metrics = new NodeMetrics({ namespace: 'cometbft', chainId: 'x', processMetrics: false });
    const server = new MetricsServer({
      metrics,
      logger: silentLogger,
      options: defaultInstrumentationOptions,
      readiness: async () => state,
    });
    const port = await server.listen('127.0.0.1', 0);
    const get = async (p: string) => {
      const r = await fetch(`http://127.0.0.1:${port}${p}`);
      return { status: r.status, body: await r.text() };
    };
    try {
      assert.deepEqual(await get('/healthz'), { status: 200, body: '{"status":"ok"}' });
      assert.deepEqual(await get('/readyz'), {
        status: 503,
        body: '{"status":"not ready","serving":false,"catching_up":true}',
      });
      state = { serving: true, catchingUp: true };
      assert.equal((await get('/readyz')).status, 503);
      state = { serving: true, catchingUp: false };
      assert.deepEqual(await get('/readyz'), { status: 200, body: '{"status":"ready"}' });
      assert.equal((await get('/nope')).status, 404);
      const post = await fetch(`http://127.0.0.1:${port}/metrics`, { method: 'POST' });
      assert.equal(post.status, 405);
    } finally {
      await server.close();
    }
  });

  it('max_open_connections (3 by default) closes connections beyond the limit', async () => {
    const metrics = new NodeMetrics({ namespace: 'cometbft', chainId: 'x', processMetrics: false });
    const server = new MetricsServer({
      metrics,
      logger: silentLogger,
      options: defaultInstrumentationOptions,
      readiness: () => ({ serving: true, catchingUp: false }),
    });
    const port = await server.listen('127.0.0.1', 0);
    const held = [0, 1, 2].map(() => connect(port, '127.0.0.1'));
    try {
      await Promise.all(held.map((s) => new Promise((r) => s.once('connect', r))));
      await new Promise((r) => setTimeout(r, 50));
      const fourth = await fetch(`http://127.0.0.1:${port}/healthz`).then(
        () => 'served',
        () => 'refused',
      );
      assert.equal(fourth, 'refused');
    } finally {
      for (const s of held) s.destroy();
      await server.close();
    }
  });

  it('parses prometheus_listen_addr forms', () => {
    assert.deepEqual(parseListenAddr(':26660'), { host: '0.0.0.0', port: 26660 });
    assert.deepEqual(parseListenAddr('127.0.0.1:9000'), { host: '127.0.0.1', port: 9000 });
    assert.deepEqual(parseListenAddr('tcp://[::1]:26660'), { host: '::1', port: 26660 });
    assert.throws(() => parseListenAddr('26660'), InstrumentationConfigError);
  });
});
