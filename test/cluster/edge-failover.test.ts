// The failover an rpc-edge reads through (docs/cluster.md "Edge failover"), in one process:
// - Failover (libs/abci-grpc): the first backend up answers, an unavailable one is skipped for the
//   next within the same read, an answer that is an error is not retried elsewhere, a backend down is
//   probed with a backoff that doubles and stops growing at its bound, and reads go back to the first
//   once a probe sees it answer;
// - CometRpcFailover (the REST's consensus RPC list) over real HTTP on 127.0.0.1: a port nothing
//   listens on, and one answering HTTP 503, are skipped, an RPC of another chain is never read from and named, a JSON-RPC error
//   ("not stored") is the answer and goes nowhere else;
// - NODED_CONSENSUS_RPC_ADDRESS as a list: each bad entry named.
// The real processes (two consensus RPCs, one killed and restarted) are in p2p-gateway.test.ts.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { after, describe, it } from 'node:test';
import { Failover } from '@noded/abci-grpc';
import { CometRpcFailover } from '@noded/service-rpc-edge/src/consensus-failover.js';
import { clusterSettingsOf } from '@noded/service-shared/src/settings.js';
import { closedPort } from './helpers.js';

const cleanups: Array<() => unknown> = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

class Down extends Error {}

/** A backend whose calls fail with Down while `up` is false, and that records each probe's time. */
function backend(name: string) {
  return { name, up: true, calls: 0, probes: [] as number[] };
}
type Backend = ReturnType<typeof backend>;

describe('Failover', () => {
  it('skips a backend that cannot answer, probes it with a bounded backoff, and goes back to it', async () => {
    const a = backend('A');
    const b = backend('B');
    const events: string[] = [];
    const pauses: string[] = [];
    const f = new Failover<Backend>([a, b], {
      addressOf: (x) => x.name,
      isUnavailable: (err) => err instanceof Down,
      probe: async (x) => {
        x.probes.push(Date.now());
        if (!x.up) throw new Down(`${x.name} down`);
      },
      probeMinMs: 40,
      probeMaxMs: 160,
      events: {
        health: (addr, up) => events.push(`${addr} ${up ? 'up' : 'down'}`),
        switched: (to) => events.push(`use ${to}`),
        probeScheduled: (addr, ms) => pauses.push(`${addr} ${ms}`),
      },
    });
    cleanups.push(() => f.close());
    const read = (tag: string) =>
      f.attempt(
        async (x) => {
          x.calls++;
          if (!x.up) throw new Down(`${x.name} is down`);
          if (tag === 'answer-error') throw new Error(`${x.name}: no such block`);
          return `${x.name}:${tag}`;
        },
        (failures) => new Error(`none answered: ${failures.map((x) => (x.err as Error).message).join('; ')}`),
      );

    assert.equal(await read('1'), 'A:1');
    // An error that is an answer is not asked of the next backend.
    await assert.rejects(read('answer-error'), /^Error: A: no such block$/);
    assert.equal(b.calls, 0);

    // A goes away: the same read is served by B, nothing fails.
    a.up = false;
    const downAt = Date.now();
    assert.equal(await read('2'), 'B:2');
    assert.equal(f.address, 'B');
    assert.deepEqual(f.health, [
      { address: 'A', up: false },
      { address: 'B', up: true },
    ]);
    // Reads go to B first now (A is tried only after the backends up).
    const aCalls = a.calls;
    assert.equal(await read('3'), 'B:3');
    assert.equal(a.calls, aCalls);

    // The probes of A: 40, 80, 160, 160 ms apart (doubling, bounded at 160). The schedule is
    // asserted as planned; the clock only from below (a loaded machine fires timers late, never early).
    while (a.probes.length < 5 && Date.now() - downAt < 20_000) await new Promise((r) => setTimeout(r, 20));
    const want = [40, 80, 160, 160, 160];
    assert.deepEqual(
      pauses.slice(0, 5),
      want.map((ms) => `A ${ms}`),
    );
    const gaps = [a.probes[0]! - downAt, ...a.probes.slice(1).map((t, i) => t - a.probes[i]!)];
    gaps.forEach((g, i) => {
      assert.ok(g >= want[i]! - 5, `probe ${i} came ${g} ms after the last (want ${want[i]})`);
    });

    // A answers again: the next probe marks it up and reads go back to it.
    a.up = true;
    const deadline = Date.now() + 20_000;
    while (!events.includes('A up') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    assert.equal(await read('4'), 'A:4');
    assert.deepEqual(events, ['A down', 'use B', 'A up', 'use A']);

    // Both away: the error names both; no probe runs once closed.
    a.up = false;
    b.up = false;
    await assert.rejects(read('5'), /^Error: none answered: A is down; B is down$/);
    f.close();
    const probes = a.probes.length + b.probes.length;
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(a.probes.length + b.probes.length, probes, 'no probe after close()');
  });
});

/** A CometBFT RPC on 127.0.0.1 answering `status` for `network`, `block` with an error (not stored). */
async function cometRpc(
  network: string,
  status = 200,
): Promise<{ address: string; server: Server; calls: string[] }> {
  const calls: string[] = [];
  const server = createServer((req, res) => {
    if (status !== 200) {
      // As a proxy in front of a consensus that is away answers, or a server shedding load.
      res.statusCode = status;
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ jsonrpc: '2.0', id: -1, error: { code: -32603, message: 'unavailable' } }));
      return;
    }
    let body = '';
    req.on('data', (d) => {
      body += d;
    });
    req.on('end', () => {
      const { id, method } = JSON.parse(body) as { id: number; method: string };
      calls.push(method);
      res.setHeader('content-type', 'application/json');
      if (method === 'status') {
        res.end(
          JSON.stringify({
            jsonrpc: '2.0',
            id,
            result: {
              node_info: {
                id: 'ab'.repeat(20),
                listen_addr: 'tcp://127.0.0.1:26656',
                network,
                version: '0.38.0',
                channels: '40',
                moniker: `rpc-of-${network}`,
                other: { tx_index: 'on', rpc_address: 'tcp://127.0.0.1:26657' },
              },
              sync_info: { earliest_block_height: '1', latest_block_height: '7', catching_up: false },
            },
          }),
        );
        return;
      }
      res.statusCode = 500;
      res.end(
        JSON.stringify({
          jsonrpc: '2.0',
          id,
          error: { code: -32603, message: 'Internal error', data: 'height 99 is not available' },
        }),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(() => new Promise((r) => server.close(r)));
  return { address: `127.0.0.1:${(server.address() as { port: number }).port}`, server, calls };
}

describe('CometRpcFailover', () => {
  it('skips an RPC that does not listen, never reads from one of another chain, and takes "not stored" as the answer', async () => {
    const dead = `127.0.0.1:${await closedPort()}`;
    const shedding = await cometRpc('chain-local', 503);
    const other = await cometRpc('chain-other');
    const good = await cometRpc('chain-local');
    const events: string[] = [];
    const c = new CometRpcFailover([dead, shedding.address, other.address, good.address], {
      chainId: 'chain-local',
      timeoutMs: 2_000,
      probeMinMs: 50,
      events: { health: (a, up) => events.push(`${a} ${up ? 'up' : 'down'}`) },
    });
    cleanups.push(() => c.close());
    assert.deepEqual(await c.storeRange(), { base: 1, height: 7 });
    assert.equal((await c.identity()).network, 'chain-local');
    assert.equal(c.address, good.address);
    assert.deepEqual(
      c.health.map((h) => h.up),
      [false, false, false, true],
    );
    // The RPC of another chain answered its status once and nothing else, then never again.
    assert.deepEqual(other.calls, ['status']);
    // Not stored is an answer: undefined, and no other RPC is asked.
    const before = [other.calls.length, good.calls.length];
    assert.equal(await c.block(99), undefined);
    assert.deepEqual([other.calls.length, good.calls.length], [before[0], before[1]! + 1]);
    assert.ok(events.includes(`${dead} down`));
    assert.ok(events.includes(`${shedding.address} down`), 'an HTTP 503 (with a JSON body) is unavailable');
    assert.ok(events.includes(`${other.address} down`));

    // Alone, the RPC of another chain is refused by name (503, UNAVAILABLE).
    const alone = new CometRpcFailover([other.address], { chainId: 'chain-local' });
    cleanups.push(() => alone.close());
    await assert.rejects(alone.storeRange(), (e: unknown) => {
      const g = e as { grpcCode: number; httpStatus: number; message: string };
      assert.equal(g.grpcCode, 14);
      assert.equal(g.httpStatus, 503);
      assert.equal(
        g.message,
        `the consensus RPC at ${other.address} serves chain chain-other, not chain-local: never read from`,
      );
      return true;
    });
    // Nothing answers: each one's reason.
    const none = new CometRpcFailover([dead, `127.0.0.1:${await closedPort()}`], { chainId: 'chain-local' });
    cleanups.push(() => none.close());
    await assert.rejects(
      none.identity(),
      /^GatewayError: no consensus RPC could answer: the consensus service's RPC at 127\.0\.0\.1:\d+ is unreachable: ECONNREFUSED; the consensus service's RPC at 127\.0\.0\.1:\d+ is unreachable: ECONNREFUSED$/,
    );
  });
});

describe('NODED_CONSENSUS_RPC_ADDRESS', () => {
  const of = (env: Record<string, string>) => {
    const problems: string[] = [];
    return { s: clusterSettingsOf(env, problems, '.', 'rpc-edge'), problems };
  };
  it('takes a list in order of preference; each bad entry is named', () => {
    assert.equal(of({}).s.consensusRpcAddresses, undefined);
    const two = of({ NODED_CONSENSUS_RPC_ADDRESS: 'consensus:26657, fullnode-1:26657' });
    assert.deepEqual(two.problems, []);
    assert.deepEqual(two.s.consensusRpcAddresses, ['consensus:26657', 'fullnode-1:26657']);
    assert.deepEqual(of({ NODED_CONSENSUS_RPC_ADDRESS: 'a:1,a:1' }).problems, [
      '$NODED_CONSENSUS_RPC_ADDRESS: names "a:1" twice',
    ]);
    assert.deepEqual(of({ NODED_CONSENSUS_RPC_ADDRESS: 'a:1,,b:2' }).problems, [
      '$NODED_CONSENSUS_RPC_ADDRESS: must be host:port (e.g. 127.0.0.1:26670), got ""',
    ]);
    assert.deepEqual(of({ NODED_CONSENSUS_RPC_ADDRESS: 'a:1,http://b:26657' }).problems, [
      '$NODED_CONSENSUS_RPC_ADDRESS: must be host:port (e.g. 127.0.0.1:26670), got "http://b:26657"',
    ]);
    assert.deepEqual(of({ NODED_CONSENSUS_RPC_ADDRESS: 'a:1,b:70000' }).problems, [
      '$NODED_CONSENSUS_RPC_ADDRESS: port must be 1..65535, got 70000 in "b:70000"',
    ]);
  });
});
