// Bridge in on the cluster: nats-server, the executor service with [bridge] enable = true against a
// Hardhat source chain, and the consensus service, as processes. A lock on the source chain is
// attested by the executor's vote extensions and minted; the executor service's own metrics page
// (which `noded service metrics` scrapes, docs/cluster.md) carries the bridge_* series: the
// observed and minted sequence numbers, the pending count, errors, the pause and the inflow window.
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { after, describe, it } from 'node:test';
import { freePort, initLocalHome } from '../e2e/harness.js';
import { BTC, bridgeAppSection, startSourceChain, writeBridgeGenesis } from '../e2e/source-chain.js';
import { startNatsServer } from './nats.js';
import { type ServiceProcess, spawnService, until, waitForService } from './processes.js';

const cleanups: Array<() => unknown> = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

/** The value of the sample `name{...}` (one series per name on a service's own page). */
function value(text: string, name: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${name}{`) || l.startsWith(`${name} `));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
}

describe('cluster executor service: bridge in and its metrics', { timeout: 420_000 }, () => {
  it('mints an attested deposit and exports the bridge_* series on its own metrics page', async () => {
    const src = await startSourceChain();
    cleanups.push(() => src.stop().catch(() => {}));
    const { home } = await initLocalHome({
      timeoutCommit: '300ms',
      extra: (_config, app) => {
        if (!('evm' in app)) return;
        app.bridge = bridgeAppSection(src, 1);
      },
    });
    cleanups.push(() => rmSync(home, { recursive: true, force: true }));
    writeBridgeGenesis(home, src.tokenAddress, { max_inflow_per_window: (50n * BTC).toString() });

    const nats = await startNatsServer();
    cleanups.push(() => nats.stop());
    const own = `127.0.0.1:${await freePort()}`;
    const env = {
      NODED_EXECUTOR_GRPC_ADDRESS: `127.0.0.1:${await freePort()}`,
      NODED_STATE_STORE_GRPC_ADDRESS: `127.0.0.1:${await freePort()}`,
      NODED_NATS_URL: nats.url,
    };
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
    const executor = await start('executor', { NODED_SERVICE_METRICS_ADDRESS: own });
    await start('consensus');
    const scrape = async () => (await fetch(`http://${own}/metrics`)).text();

    const recipient = '0x00000000000000000000000000000000000b71c0';
    await src.lock(2n * BTC, recipient);
    await src.mine(1);
    const text = await until('the deposit minted, seen on the executor metrics', 90_000, async () => {
      const t = await scrape();
      return value(t, 'cometbft_bridge_last_minted_sequence') === 1 ? t : undefined;
    }).catch((err: Error) => {
      throw new Error(`${err.message}\n--- executor ---\n${executor.output().slice(-3000)}`);
    });
    assert.equal(value(text, 'cometbft_bridge_last_observed_sequence'), 1);
    assert.equal(value(text, 'cometbft_bridge_last_attested_sequence'), 1);
    assert.equal(value(text, 'cometbft_bridge_errors_total'), 0);
    assert.equal(value(text, 'cometbft_bridge_paused'), 0);
    assert.equal(value(text, 'cometbft_bridge_inflow_limit_btc'), 50);
    assert.equal(value(text, 'cometbft_bridge_over_cap_deposits'), 0);
    await until('the inflow gauge', 10_000, async () =>
      value(await scrape(), 'cometbft_bridge_window_inflow_btc') === 2 ? true : undefined,
    );
    await until('nothing pending', 10_000, async () =>
      value(await scrape(), 'cometbft_bridge_pending_deposits') === 0 ? true : undefined,
    );
    assert.match(text, /# HELP cometbft_bridge_last_minted_sequence /);
  });
});
