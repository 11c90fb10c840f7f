// The metrics service (issue 22): nats-server and every service as processes, each serving its own
// metrics on a free port, and `noded service metrics` gathering them onto the home's
// [instrumentation] prometheus_listen_addr. The merged exposition passes `promtool check metrics`,
// every service's series carry `service`, the CometBFT names are there with the chain's values, two
// rpc-edge replicas are two series; /readyz is 200 for a healthy cluster and 503 naming the
// state-store while it is killed, 200 again once it is back; bad variables are refused by name.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { freePort, initLocalHome, runCli } from '../e2e/harness.js';
import { startNatsServer } from './nats.js';
import { rpc, type ServiceProcess, spawnService, until, waitForService } from './processes.js';

const cleanups: Array<() => unknown> = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

/** The value of the one sample whose name and labels contain all of `parts`. */
function value(text: string, name: string, ...parts: string[]): number | undefined {
  const line = text
    .split('\n')
    .find((l) => l.startsWith(`${name}{`) && parts.every((p) => l.slice(0, l.lastIndexOf('}')).includes(p)));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
}

describe('noded service metrics', () => {
  it('gathers every service with a service label, passes promtool, and reflects the cluster in /readyz', async () => {
    const { home, ports } = await initLocalHome({ timeoutCommit: '300ms' });
    cleanups.push(() => rmSync(home, { recursive: true, force: true }));
    const nats = await startNatsServer();
    cleanups.push(() => nats.stop());
    const at = async () => `127.0.0.1:${await freePort()}`;
    const executorAt = await at();
    const storeAt = await at();
    const own = {
      executor: await at(),
      consensus: await at(),
      'state-store': await at(),
      edge1: await at(),
      edge2: await at(),
    };
    const env = {
      NODED_EXECUTOR_GRPC_ADDRESS: executorAt,
      NODED_STATE_STORE_GRPC_ADDRESS: storeAt,
      NODED_NATS_URL: nats.url,
    };
    const running: ServiceProcess[] = [];
    cleanups.push(async () => {
      for (const s of running.reverse()) await s.stop();
    });
    const start = async (name: string, more: Record<string, string>) => {
      const s = spawnService(name, home, { ...env, ...more });
      running.push(s);
      await waitForService(s, new RegExp(`noded service ${name} is running`), 90_000);
      return s;
    };
    await start('executor', { NODED_SERVICE_METRICS_ADDRESS: own.executor });
    await start('consensus', { NODED_SERVICE_METRICS_ADDRESS: own.consensus });
    let store = await start('state-store', { NODED_SERVICE_METRICS_ADDRESS: own['state-store'] });
    await start('rpc-edge', { NODED_SERVICE_METRICS_ADDRESS: own.edge1 });
    const edge2Http = await freePort();
    const edge2Api = await freePort();
    await start('rpc-edge', {
      NODED_SERVICE_METRICS_ADDRESS: own.edge2,
      NODED_EVM_RPC_ADDRESS: `127.0.0.1:${edge2Http}`,
      NODED_EVM_WS_ADDRESS: `127.0.0.1:${await freePort()}`,
      NODED_API_ADDRESS: `tcp://127.0.0.1:${edge2Api}`,
      NODED_EVM_API_ADDRESS: `127.0.0.1:${edge2Api}`,
    });
    await start('metrics', {
      NODED_METRICS_TARGETS: [
        `executor=${own.executor}`,
        `consensus=${own.consensus}`,
        `state-store=${own['state-store']}`,
        `rpc-edge=${own.edge1}`,
        `rpc-edge=${own.edge2}`,
      ].join(','),
    });
    const base = `http://127.0.0.1:${ports.metrics}`;
    const edge1 = `http://127.0.0.1:${ports.evmHttp}`;

    await until('blocks through the edge', 60_000, async () =>
      Number(await rpc(edge1, 'eth_blockNumber')) >= 3 ? true : undefined,
    );
    await rpc(`http://127.0.0.1:${edge2Http}`, 'eth_chainId');

    const health = await fetch(`${base}/healthz`);
    assert.equal(health.status, 200);
    assert.deepEqual(await health.json(), { status: 'ok' });
    await until('the cluster is ready', 30_000, async () =>
      (await fetch(`${base}/readyz`)).status === 200 ? true : undefined,
    );

    const res = await fetch(`${base}/metrics`);
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
    const text = await res.text();

    // promtool: the only finding is CometBFT's own counter name (docs/metrics.md).
    const check = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8' });
    const findings = `${check.stdout}${check.stderr}`
      .split('\n')
      .filter((l) => l.trim() !== '')
      .filter((l) => !/cometbft_mempool_failed_txs counter metrics should have "_total" suffix/.test(l));
    assert.deepEqual(findings, [], text.slice(0, 2000));
    // Each family's HELP and TYPE once, however many services report it.
    const types = text.split('\n').filter((l) => l.startsWith('# TYPE '));
    assert.equal(new Set(types).size, types.length);

    // Every service, with its own CometBFT-named series.
    for (const service of ['executor', 'consensus', 'state-store', 'rpc-edge', 'metrics']) {
      assert.ok(
        value(text, 'process_resident_memory_bytes', `service="${service}"`) !== undefined,
        `no process metrics of ${service}`,
      );
    }
    const height = value(text, 'cometbft_consensus_latest_block_height', 'service="consensus"');
    assert.ok(height !== undefined && height >= 3, `consensus height ${height}`);
    assert.equal(value(text, 'cometbft_consensus_validators', 'service="consensus"'), 1);
    const storeHeight = value(text, 'cometbft_state_store_height', 'service="state-store"');
    assert.ok(storeHeight !== undefined && storeHeight >= 2, `state-store height ${storeHeight}`);
    // The executor's committed height, read in the same scrape: at consensus' or within the block or
    // two that may commit between the two reads.
    const executorHeight = value(text, 'cometbft_executor_height', 'service="executor"');
    assert.ok(
      executorHeight !== undefined && executorHeight >= height - 2,
      `executor height ${executorHeight}, consensus ${height}`,
    );
    // FinalizeBlock's time, as each side sees it: the executor its execution, consensus the round trip.
    for (const service of ['executor', 'consensus']) {
      const count = value(text, 'cometbft_state_block_processing_time_count', `service="${service}"`);
      assert.ok(count !== undefined && count >= 1, `${service}: ${count} FinalizeBlocks observed`);
      assert.ok(value(text, 'cometbft_state_block_processing_time_sum', `service="${service}"`)! > 0);
    }
    assert.ok(value(text, 'cometbft_evm_block_gas_limit', 'service="executor"')! > 0);
    assert.equal(value(text, 'cometbft_mempool_size', 'service="executor"'), 0);
    // the edges' JSON-RPC calls, one series per replica
    assert.ok(
      value(
        text,
        'cometbft_rpc_requests_total',
        'service="rpc-edge"',
        `replica="${own.edge1}"`,
        'method="eth_blockNumber"',
      )! >= 1,
    );
    assert.equal(
      value(
        text,
        'cometbft_rpc_requests_total',
        'service="rpc-edge"',
        `replica="${own.edge2}"`,
        'method="eth_chainId"',
      ),
      1,
    );
    for (const r of [own.executor, own.consensus, own['state-store'], own.edge1, own.edge2]) {
      assert.equal(value(text, 'cometbft_cluster_target_up', `replica="${r}"`), 1, r);
    }

    // The state-store killed: /readyz names it, /metrics marks it down and still answers.
    await store.stop('SIGKILL');
    const notReady = await until('readyz fails', 30_000, async () => {
      const r = await fetch(`${base}/readyz`);
      return r.status === 503 ? ((await r.json()) as { problems: string[] }) : undefined;
    });
    assert.ok(
      notReady.problems.some((p) => p.startsWith(`state-store at ${own['state-store']}: unreachable`)),
      JSON.stringify(notReady),
    );
    assert.equal(notReady.problems.length, 1, JSON.stringify(notReady));
    const down = await (await fetch(`${base}/metrics`)).text();
    assert.equal(value(down, 'cometbft_cluster_target_up', `replica="${own['state-store']}"`), 0);
    assert.ok(value(down, 'cometbft_consensus_latest_block_height', 'service="consensus"')! >= height!);

    // Back: it resumes from its own height and the cluster is ready again.
    store = await start('state-store', { NODED_SERVICE_METRICS_ADDRESS: own['state-store'] });
    await until('ready again', 60_000, async () =>
      (await fetch(`${base}/readyz`)).status === 200 ? true : undefined,
    );

    // The executor killed: /readyz names it unreachable and consensus, which waits for it, not
    // ready; both come back once it is restarted.
    const executor = running.find((r) => r.name === 'executor')!;
    await executor.stop('SIGKILL');
    const lost = await until('readyz names the executor and consensus', 30_000, async () => {
      const r = await fetch(`${base}/readyz`);
      if (r.status !== 503) return undefined;
      const b = (await r.json()) as { problems: string[] };
      return b.problems.some((p) => p.startsWith(`consensus at ${own.consensus}: not ready`)) ? b : undefined;
    });
    assert.ok(
      lost.problems.some((p) => p.startsWith(`executor at ${own.executor}: unreachable`)),
      JSON.stringify(lost),
    );
    await start('executor', { NODED_SERVICE_METRICS_ADDRESS: own.executor });
    await until('ready after the executor is back', 90_000, async () =>
      (await fetch(`${base}/readyz`)).status === 200 ? true : undefined,
    );

    // A state-store that cannot reach NATS answers but stays behind: a metrics service that
    // gathers it (lag at most 2) is not ready and says by how much.
    const laggingAt = await at();
    const deadNats = await freePort();
    await start('state-store', {
      NODED_NATS_URL: `nats://127.0.0.1:${deadNats}`,
      NODED_STATE_STORE_DB: join(home, 'data', 'lagging.db'),
      NODED_STATE_STORE_GRPC_ADDRESS: await at(),
      NODED_SERVICE_METRICS_ADDRESS: laggingAt,
    });
    const metrics2 = await freePort();
    await start('metrics', {
      NODED_INSTRUMENTATION_PROMETHEUS_LISTEN_ADDR: `127.0.0.1:${metrics2}`,
      NODED_METRICS_MAX_LAG: '2',
      NODED_METRICS_TARGETS: [
        `executor=${own.executor}`,
        `consensus=${own.consensus}`,
        `state-store=${own['state-store']}`,
        `state-store=${laggingAt}`,
        `rpc-edge=${own.edge1}`,
      ].join(','),
    });
    const lag = await fetch(`http://127.0.0.1:${metrics2}/readyz`);
    assert.equal(lag.status, 503);
    const body = (await lag.json()) as { problems: string[] };
    assert.equal(body.problems.length, 1, JSON.stringify(body));
    assert.match(
      body.problems[0]!,
      new RegExp(
        `^state-store at ${laggingAt}: at height -1, \\d+ behind consensus \\(\\d+; NODED_METRICS_MAX_LAG 2\\)$`,
      ),
    );
  });

  it('refuses bad targets and a lag that is not a number, naming them', async () => {
    const { home } = await initLocalHome();
    cleanups.push(() => rmSync(home, { recursive: true, force: true }));
    const r = runCli(['service', 'metrics', '--home', home], {
      NODED_METRICS_TARGETS: 'executor=127.0.0.1:26680,p2p=127.0.0.1:1,consensus=nohost',
      NODED_METRICS_MAX_LAG: 'ten',
    });
    assert.notEqual(r.code, 0);
    const out = `${r.stdout}${r.stderr}`;
    assert.match(
      out,
      /\$NODED_METRICS_TARGETS: each entry must be <service>=host:port .* got "p2p=127\.0\.0\.1:1"/,
    );
    assert.match(out, /\$NODED_METRICS_TARGETS: consensus: must be host:port, got "nohost"/);
    assert.match(out, /\$NODED_METRICS_MAX_LAG: must be a number of heights \(0 or more\), got "ten"/);
    assert.doesNotMatch(out, /serving the cluster metrics/);
  });
});
