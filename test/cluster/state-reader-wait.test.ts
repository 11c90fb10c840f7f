// Read-your-writes and failover at the state-store's gRPC boundary, in one process over real gRPC
// on 127.0.0.1: a read whose min_height the replica has not applied waits for it (the state-store's
// AppliedHeights, woken as the follower wakes it) and answers once it is there; past its bound it is
// UNAVAILABLE with the precise "header not found" and the height the replica is at, which the client
// turns into StateStoreBehindError (-32000); StateReaderFailover reads from the next store when the
// first is behind or unreachable, and from the first again once it answers. The chain behind each
// server is a table of balances by height (the data a replica would hold); the code under test is
// the real server, client, wait and failover.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import {
  StateReaderClient,
  StateReaderFailover,
  StateStoreBehindError,
  StateStoreUnavailableError,
  serveStateReader,
} from '@noded/abci-grpc';
import { clusterSettingsOf } from '@noded/service-shared/src/settings.js';
import { AppliedHeights } from '@noded/service-state-store/src/applied.js';
import type { EthChain } from '@noded/types';
import { closedPort } from './helpers.js';

const ADDRESS = '0x00000000000000000000000000000000000000aa';

/** A replica at `height` whose balance of ADDRESS at height h is h * 10. */
function replica(start: bigint) {
  let height = start;
  const applied = new AppliedHeights(() => height);
  const chain = {
    chainId: () => 31337n,
    latestHeight: () => height,
    oldestStateHeight: () => 0n,
    nextBaseFee: () => 7n,
    suggestedTip: () => 1n,
    getBalance: async (_a: string, h: bigint) => {
      if (h > height) throw new Error(`read at ${h} above the replica's ${height}`);
      return h * 10n;
    },
  } as unknown as EthChain;
  return {
    chain,
    applied,
    /** The follower applied up to `h`. */
    advance(h: bigint) {
      height = h;
      applied.applied();
    },
  };
}

const cleanups: Array<() => unknown> = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

async function serve(r: ReturnType<typeof replica>, readWaitMs: number, address = '127.0.0.1:0') {
  const server = await serveStateReader(
    { chain: r.chain, chainId: 'chain-local', waitFor: (h, ms) => r.applied.waitFor(h, ms) },
    address,
    { readWaitMs },
  );
  cleanups.push(() => server.close(100));
  return server;
}

describe('state-store reads with min_height (read-your-writes)', () => {
  it('waits for a height not applied yet, answers once applied, and refuses past the bound naming the heights', async () => {
    const r = replica(5n);
    const server = await serve(r, 400);
    const client = new StateReaderClient(server.address, { deadlineMs: 10_000 });
    cleanups.push(() => client.close());

    // Applied already: at once.
    assert.equal(await client.read('getBalance', [ADDRESS, 5n], undefined, 5n), 50n);

    // Ahead by two: the read waits until the follower applies them, then reads at that height.
    const started = Date.now();
    let head: bigint | undefined;
    const pending = client.read<bigint>('getBalance', [ADDRESS, 7n], (h) => (head = h.latestHeight), 7n);
    setTimeout(() => r.advance(6n), 50);
    setTimeout(() => r.advance(7n), 150);
    assert.equal(await pending, 70n);
    assert.ok(Date.now() - started >= 140, `answered after ${Date.now() - started} ms, before height 7`);
    assert.equal(head, 7n);
    // Head with min_height: the same wait.
    const h = client.head(8n);
    setTimeout(() => r.advance(8n), 50);
    assert.equal((await h).latestHeight, 8n);

    // Never applied within the bound: UNAVAILABLE as StateStoreBehindError, the heights named.
    const t0 = Date.now();
    const err = await client.read('getBalance', [ADDRESS, 8n], undefined, 9n).then(
      () => assert.fail('a read at a height never applied answered'),
      (e: unknown) => e,
    );
    const waited = Date.now() - t0;
    assert.ok(err instanceof StateStoreBehindError, String(err));
    assert.ok(err instanceof StateStoreUnavailableError);
    assert.equal(err.code, -32000);
    assert.equal(err.at, 8n);
    assert.match(
      err.message,
      new RegExp(
        `^header not found: height 9 is not applied on this state-store yet \\(it is at 8 after waiting \\d+ ms\\) \\(state-store ${server.address}\\)$`,
      ),
    );
    assert.ok(waited >= 390 && waited < 5_000, `refused after ${waited} ms, the bound is 400 ms`);
    // Far ahead (the replica is catching up): refused at once, without the wait.
    const t1 = Date.now();
    await assert.rejects(
      client.head(8n + 65n),
      /header not found: height 73 is not applied on this state-store yet \(it is at 8 after waiting \d+ ms: more than 64 heights behind, not waited for\)/,
    );
    assert.ok(Date.now() - t1 < 300, `refused after ${Date.now() - t1} ms`);
    // Nothing changed: it still serves, and reads at its height answer.
    assert.equal(await client.read('getBalance', [ADDRESS, 8n], undefined, 8n), 80n);
  });

  it('a bound of 0 refuses at once; a read without min_height never waits', async () => {
    const r = replica(3n);
    const server = await serve(r, 0);
    const client = new StateReaderClient(server.address, { deadlineMs: 10_000 });
    cleanups.push(() => client.close());
    const t0 = Date.now();
    await assert.rejects(
      client.head(4n),
      /header not found: height 4 is not applied on this state-store yet \(it is at 3/,
    );
    assert.ok(Date.now() - t0 < 1_000);
    assert.equal(await client.read('getBalance', [ADDRESS, 3n]), 30n);
  });
});

describe('StateReaderFailover', () => {
  it('reads from the next store when the first is behind or unreachable, and from the first again once it answers', async () => {
    const a = replica(10n);
    const b = replica(12n);
    const serverA = await serve(a, 200);
    const serverB = await serve(b, 200);
    const events: string[] = [];
    const reader = new StateReaderFailover([serverA.address, serverB.address], {
      deadlineMs: 10_000,
      probeMs: 100,
      chainId: 'chain-local',
      events: {
        health: (address, up) =>
          events.push(`${address === serverA.address ? 'A' : 'B'} ${up ? 'up' : 'down'}`),
        switched: (to) => events.push(`use ${to === serverA.address ? 'A' : 'B'}`),
      },
    });
    cleanups.push(() => reader.close());
    await reader.waitReady(5_000);

    // Both hold height 10: the first of the list answers.
    assert.equal(await reader.read('getBalance', [ADDRESS, 10n], undefined, 10n), 100n);
    assert.equal(reader.address, serverA.address);

    // A is behind height 12 past its bound: B answers the same request, nothing fails.
    assert.equal(await reader.read('getBalance', [ADDRESS, 12n], undefined, 12n), 120n);
    assert.equal(reader.address, serverB.address);
    assert.deepEqual(events, ['A down', 'use B']);

    // A reaches 12: the probe marks it up and reads go back to it.
    a.advance(12n);
    const deadline = Date.now() + 5_000;
    while (!events.includes('A up') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    assert.equal(await reader.read('getBalance', [ADDRESS, 12n], undefined, 12n), 120n);
    assert.equal(reader.address, serverA.address);
    assert.deepEqual(events, ['A down', 'use B', 'A up', 'use A']);

    // Both behind: the error says so for each, still "header not found" (-32000).
    await assert.rejects(
      reader.read('getBalance', [ADDRESS, 12n], undefined, 13n),
      (e: unknown) =>
        e instanceof StateStoreBehindError &&
        e.at === 12n &&
        /^no state-store could answer: header not found: height 13 .*; header not found: height 13 /.test(
          e.message,
        ),
    );
  });

  it('skips a store that does not listen, and refuses one serving another chain', async () => {
    const b = replica(4n);
    const serverB = await serve(b, 200);
    const dead = `127.0.0.1:${await closedPort()}`;
    const reader = new StateReaderFailover([dead, serverB.address], { deadlineMs: 5_000, probeMs: 100 });
    cleanups.push(() => reader.close());
    assert.equal(await reader.read('getBalance', [ADDRESS, 4n]), 40n);
    assert.equal(reader.address, serverB.address);
    assert.deepEqual(reader.health, [
      { address: dead, up: false },
      { address: serverB.address, up: true },
    ]);

    const other = new StateReaderFailover([serverB.address], { deadlineMs: 5_000, chainId: 'chain-other' });
    cleanups.push(() => other.close());
    await assert.rejects(
      other.head(),
      new RegExp(
        `^StateStoreUnavailableError: state-store at ${serverB.address} serves chain chain-local, not chain-other: never read from$`,
      ),
    );
  });
});

describe('the settings of read-your-writes and failover', () => {
  const of = (service: 'rpc-edge' | 'state-store', env: Record<string, string>) => {
    const problems: string[] = [];
    return { s: clusterSettingsOf(env, problems, '.', service), problems };
  };

  it('an rpc-edge takes a list of state-stores, a state-store one address; each bad value is named', () => {
    const edge = of('rpc-edge', { NODED_STATE_STORE_GRPC_ADDRESS: '10.0.0.1:26671, ss-b:26671' });
    assert.deepEqual(edge.problems, []);
    assert.deepEqual(edge.s.stateStoreGrpcAddresses, ['10.0.0.1:26671', 'ss-b:26671']);
    assert.equal(edge.s.stateStoreReadWaitMs, 1_000);
    assert.equal(edge.s.edgeReadYourWrites, true);
    assert.deepEqual(of('rpc-edge', { NODED_STATE_STORE_GRPC_ADDRESS: 'a:1,a:1' }).problems, [
      '$NODED_STATE_STORE_GRPC_ADDRESS: names "a:1" twice',
    ]);
    assert.deepEqual(of('rpc-edge', { NODED_STATE_STORE_GRPC_ADDRESS: 'a:1,' }).problems, [
      '$NODED_STATE_STORE_GRPC_ADDRESS: must be host:port (e.g. 127.0.0.1:26670), got ""',
    ]);
    assert.deepEqual(of('state-store', { NODED_STATE_STORE_GRPC_ADDRESS: 'a:1,b:2' }).problems, [
      '$NODED_STATE_STORE_GRPC_ADDRESS: a state-store listens on one host:port (a comma-separated list is an rpc-edge\'s), got "a:1,b:2"',
    ]);
    const store = of('state-store', { NODED_STATE_STORE_READ_WAIT: '250ms' });
    assert.deepEqual(store.problems, []);
    assert.equal(store.s.stateStoreReadWaitMs, 250);
    assert.deepEqual(of('state-store', { NODED_STATE_STORE_READ_WAIT: '2m' }).problems, [
      '$NODED_STATE_STORE_READ_WAIT: must be a duration like 1s or 500ms, got "2m"',
    ]);
    assert.deepEqual(of('state-store', { NODED_STATE_STORE_READ_WAIT: '61s' }).problems, [
      '$NODED_STATE_STORE_READ_WAIT: must be between 0ms and 60s, got "61s"',
    ]);
    assert.equal(of('rpc-edge', { NODED_EDGE_READ_YOUR_WRITES: 'false' }).s.edgeReadYourWrites, false);
    assert.deepEqual(of('rpc-edge', { NODED_EDGE_READ_YOUR_WRITES: 'no' }).problems, [
      '$NODED_EDGE_READ_YOUR_WRITES: must be true or false, got "no"',
    ]);
  });
});
