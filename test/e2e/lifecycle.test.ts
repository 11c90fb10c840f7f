// The operator's view of a running node: status, restart continuity, reset refusal, metrics, REST.
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { initLocalHome, type RunningNode, runCli, startNode, waitForOutput } from './harness.js';

async function blockNumber(url: string): Promise<number> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: '{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]}',
  });
  return Number(BigInt(((await res.json()) as { result: string }).result));
}

describe('node lifecycle', { timeout: 420_000 }, () => {
  let home: string;
  let ports: Awaited<ReturnType<typeof initLocalHome>>['ports'];
  let node: RunningNode | undefined;

  before(async () => {
    ({ home, ports } = await initLocalHome({ timeoutCommit: '300ms' }));
  });

  after(async () => {
    await node?.stop();
    rmSync(home, { recursive: true, force: true });
  });

  it('prints endpoints and test-only dev accounts on start, and `noded status` reads the node', async () => {
    node = await startNode(home, ports);
    // The summary is printed once every server listens, and logged as "node started" right after.
    await waitForOutput(node, /"msg":"node started"/);
    const out = node.output();
    assert.match(out, new RegExp(`127\\.0\\.0\\.1:${ports.evmHttp}`));
    assert.match(out, /0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266/i);
    assert.match(out, /test/i);
    const status = runCli(['status', '--home', home, '--output', 'json']);
    assert.equal(status.code, 0, status.stderr);
    const json = JSON.parse(status.stdout) as Record<string, unknown>;
    assert.ok(
      JSON.stringify(json).includes('"catching_up":false') || JSON.stringify(json).includes('catching'),
    );
  });

  it('refuses unsafe-reset-all while the node holds the home', () => {
    const res = runCli(['unsafe-reset-all', '--yes', '--home', home]);
    assert.notEqual(res.code, 0);
    assert.match(res.stderr + res.stdout, /lock|running|in use/i);
  });

  it('serves Prometheus metrics and health probes', async () => {
    const metrics = await (await fetch(`${node!.metricsUrl}/metrics`)).text();
    assert.match(metrics, /^cometbft_consensus_height\{chain_id="chain-local"\} [1-9]\d*$/m);
    assert.equal((await fetch(`${node!.metricsUrl}/healthz`)).status, 200);
    assert.equal((await fetch(`${node!.cometUrl}/health`)).status, 200);
  });

  it('counts refused transactions and times FinalizeBlock in its metrics', async () => {
    const refused = await fetch(node!.ethUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"jsonrpc":"2.0","id":1,"method":"eth_sendRawTransaction","params":["0x02c0"]}',
    });
    assert.ok(((await refused.json()) as { error?: unknown }).error, 'the malformed transaction was refused');
    // The counters are read at each new block (about one a second).
    const sample = (text: string, name: string) =>
      Number(new RegExp(`^${name}\\{chain_id="chain-local"\\} (\\S+)$`, 'm').exec(text)?.[1] ?? Number.NaN);
    let text = '';
    for (let i = 0; i < 50; i++) {
      text = await (await fetch(`${node!.metricsUrl}/metrics`)).text();
      if (sample(text, 'cometbft_mempool_failed_txs') >= 1) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    assert.ok(sample(text, 'cometbft_mempool_failed_txs') >= 1, 'mempool_failed_txs counted the refusal');
    assert.ok(sample(text, 'cometbft_state_block_processing_time_count') >= 1, 'FinalizeBlock was timed');
    assert.match(text, /^# TYPE cometbft_evm_txs_ran_ahead_total counter$/m);
    // RocksDB's native memory, per database: the node's blocks and state are in memtables by now;
    // tx_index is asked of the indexer's thread at each scrape.
    const memtables = new Map<string, number>();
    for (const db of ['application', 'blockstore', 'state', 'tx_index']) {
      const kinds = new Map(
        [
          ...text.matchAll(
            new RegExp(`^cometbft_storage_memory_bytes\\{db="${db}",kind="(\\w+)"\\} (\\S+)$`, 'gm'),
          ),
        ].map((m) => [m[1], Number(m[2])]),
      );
      assert.deepEqual([...kinds.keys()].sort(), ['block_cache', 'memtables', 'table_readers'], db);
      assert.ok(
        kinds.get('memtables')! > 0 && kinds.get('memtables')! < 64 << 20,
        `${db} memtables: ${kinds.get('memtables')}`,
      );
      memtables.set(db, kinds.get('memtables')!);
    }
    // Each database has the budget of its write volume (services/shared/src/databases.ts): a memtable
    // grows in arena blocks of an eighth of its write buffer, so the 32 MiB application.db holds a 1 MiB
    // block as soon as it has a few KB, and the 4 MiB blockstore and state 128 KiB blocks; a few blocks'
    // writes (2-5 KB a height each) stay within 1 MiB there, as they did not when all four had 32 MiB.
    assert.ok(
      memtables.get('application')! > 1 << 20,
      `application memtables ${memtables.get('application')}`,
    );
    for (const db of ['blockstore', 'state'])
      assert.ok(memtables.get(db)! < 1 << 20, `${db} memtables ${memtables.get(db)}: not its 4 MiB budget`);
    assert.equal(sample(text, 'cometbft_p2p_peers'), 0, 'a single node has no peers');
    // Each worker thread's V8 heap, as that thread reads it: both are running, neither is the main
    // thread's (whose figures are nodejs_heap_size_*), and used never exceeds total.
    const mainUsed = Number(/^nodejs_heap_size_used_bytes (\S+)$/m.exec(text)?.[1]);
    for (const thread of ['json-rpc', 'tx-indexer']) {
      const heap = new Map(
        [
          ...text.matchAll(
            new RegExp(`^cometbft_thread_heap_bytes\\{thread="${thread}",kind="(\\w+)"\\} (\\S+)$`, 'gm'),
          ),
        ].map((m) => [m[1], Number(m[2])]),
      );
      assert.deepEqual([...heap.keys()].sort(), ['total', 'used'], thread);
      const used = heap.get('used')!;
      assert.ok(used > 1 << 20 && used <= heap.get('total')!, `${thread} heap: ${JSON.stringify([...heap])}`);
      assert.notEqual(used, mainUsed, `${thread} reports its own heap, not the main thread's`);
    }
  });

  it('serves the REST API balance of a dev account', async () => {
    const res = await fetch(
      `${node!.apiUrl}/cosmos/bank/v1beta1/balances/0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266`,
    );
    assert.equal(res.status, 200);
    const body = (await res.json()) as { balances: Array<{ denom: string; amount: string }> };
    assert.ok(body.balances.some((b) => BigInt(b.amount) > 0n));
  });

  it('pages the REST validator set by pagination.offset and pagination.limit', async () => {
    const page = async (query: string) => {
      const res = await fetch(`${node!.apiUrl}/cosmos/base/tendermint/v1beta1/validatorsets/latest?${query}`);
      assert.equal(res.status, 200);
      return (await res.json()) as {
        validators: Array<{ address: string; voting_power: string }>;
        pagination: { next_key: string | null; total: string };
      };
    };
    const comet = (await (await fetch(`${node!.cometUrl}/validators`)).json()) as {
      result: { validators: Array<{ address: string; voting_power: string }> };
    };
    const only = comet.result.validators.map((v) => ({ address: v.address, voting_power: v.voting_power }));
    assert.equal(only.length, 1);
    const pick = (p: Awaited<ReturnType<typeof page>>) =>
      p.validators.map((v) => ({ address: v.address, voting_power: v.voting_power }));
    for (const query of [
      '',
      'pagination.offset=0',
      'pagination.limit=1',
      'pagination.offset=0&pagination.limit=5',
    ]) {
      const p = await page(query);
      assert.deepEqual(pick(p), only, query);
      assert.deepEqual(p.pagination, { next_key: null, total: '1' }, query);
    }
    for (const query of ['pagination.offset=1', 'pagination.offset=1&pagination.limit=1']) {
      const p = await page(query);
      assert.deepEqual(p.validators, [], query);
      assert.deepEqual(p.pagination, { next_key: null, total: '1' }, query);
    }
  });

  it('stops cleanly on SIGTERM and continues from the last height after a restart', async () => {
    const before = await blockNumber(node!.ethUrl);
    const code = await node!.stop('SIGTERM');
    assert.equal(code, 0, node!.output().slice(-3000));
    node = await startNode(home, ports);
    const again = await blockNumber(node.ethUrl);
    assert.ok(again >= before, `height ${again} after restart, was ${before}`);
  });

  it('survives SIGKILL and restarts with committed data intact', async () => {
    const before = await blockNumber(node!.ethUrl);
    await node!.stop('SIGKILL');
    node = await startNode(home, ports);
    assert.ok((await blockNumber(node.ethUrl)) >= before);
  });
});
