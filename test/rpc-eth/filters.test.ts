// Polling filters over HTTP: block, pending-transaction and log filters, timeout and cap.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Hex, NodeEvent } from '@noded/types';
import { Wallet } from 'ethers';

type EthNewHeadEvent = Extract<NodeEvent, { kind: 'EthNewHead' }>;

import { addr, LOGGER, TRANSFER_TOPIC, word } from './fake-chain.js';
import { call, DEV_ADDRS, DEV_KEYS, type Harness, rpc, sleep, startHarness } from './helpers.js';

const wallet = new Wallet(DEV_KEYS[2]!);
let nonce = 0;
const sendToLogger = (url: string, value = 1n) =>
  wallet
    .signTransaction({
      chainId: 31337n,
      to: LOGGER,
      type: 2,
      nonce: nonce++,
      gasLimit: 21_000n,
      maxFeePerGas: 3_000_000_000n,
      maxPriorityFeePerGas: 1n,
      value,
    })
    .then((raw) => call<Hex>(url, 'eth_sendRawTransaction', [raw]));

describe('polling filters', () => {
  let h: Harness;
  before(async () => {
    h = await startHarness({ options: { filterCap: 3 } });
  });
  after(() => h.close());

  it('a block filter returns new block hashes once', async () => {
    const id = await call<string>(h.url, 'eth_newBlockFilter');
    assert.match(id, /^0x[0-9a-f]+$/);
    const b1 = h.chain.mine();
    const b2 = h.chain.mine();
    assert.deepEqual(await call(h.url, 'eth_getFilterChanges', [id]), [b1.hash, b2.hash]);
    assert.deepEqual(await call(h.url, 'eth_getFilterChanges', [id]), []);
    assert.equal(await call(h.url, 'eth_uninstallFilter', [id]), true);
    assert.equal(await call(h.url, 'eth_uninstallFilter', [id]), false);
    assert.deepEqual((await rpc(h.url, 'eth_getFilterChanges', [id])).error, {
      code: -32000,
      message: 'filter not found',
    });
  });

  it('a pending-transaction filter returns hashes, or full objects when asked', async () => {
    const hashes = await call<string>(h.url, 'eth_newPendingTransactionFilter');
    const full = await call<string>(h.url, 'eth_newPendingTransactionFilter', [true]);
    const tx = await sendToLogger(h.url);
    assert.deepEqual(await call(h.url, 'eth_getFilterChanges', [hashes]), [tx]);
    const objects = await call<Array<Record<string, unknown>>>(h.url, 'eth_getFilterChanges', [full]);
    assert.equal(objects.length, 1);
    assert.equal(objects[0]!['hash'], tx);
    assert.equal(objects[0]!['from'], DEV_ADDRS[2]);
    h.chain.mine();
    await call(h.url, 'eth_uninstallFilter', [hashes]);
    await call(h.url, 'eth_uninstallFilter', [full]);
  });

  it('a log filter matches address and topics, and eth_getFilterLogs replays its range', async () => {
    const start = h.chain.latestHeight() + 1n;
    const matching = await call<string>(h.url, 'eth_newFilter', [
      {
        fromBlock: `0x${start.toString(16)}`,
        address: [LOGGER],
        topics: [TRANSFER_TOPIC, word(BigInt(wallet.address))],
      },
    ]);
    const other = await call<string>(h.url, 'eth_newFilter', [{ address: addr(0x999) }]);
    await sendToLogger(h.url, 7n);
    h.chain.mine();
    await sendToLogger(h.url, 8n);
    h.chain.mine();
    const logs = await call<Array<Record<string, unknown>>>(h.url, 'eth_getFilterChanges', [matching]);
    assert.deepEqual(
      logs.map((l) => l['data']),
      [word(7), word(8)],
    );
    assert.deepEqual(await call(h.url, 'eth_getFilterChanges', [matching]), []);
    assert.deepEqual(await call(h.url, 'eth_getFilterChanges', [other]), []);
    const replay = await call<unknown[]>(h.url, 'eth_getFilterLogs', [matching]);
    assert.equal(replay.length, 2);
    const blockFilter = await call<string>(h.url, 'eth_newBlockFilter');
    assert.deepEqual((await rpc(h.url, 'eth_getFilterLogs', [blockFilter])).error, {
      code: -32000,
      message: 'filter not found',
    });
    for (const id of [matching, other, blockFilter]) await call(h.url, 'eth_uninstallFilter', [id]);
  });

  it('block and log filters collect only blocks after the latest one at install, even a head published late', async () => {
    // An rpc-edge publishes a head a little after its state-store answers reads at it.
    let late: EthNewHeadEvent | undefined;
    const stop = h.bus.subscribe((ev) => {
      if (ev.kind === 'EthNewHead' && late === undefined) late = ev;
    });
    await sendToLogger(h.url);
    const read = h.chain.mine();
    stop();
    assert.equal(late?.block.hash, read.hash);
    const blocks = await call<string>(h.url, 'eth_newBlockFilter');
    const logs = await call<string>(h.url, 'eth_newFilter', [{ address: LOGGER }]);
    h.bus.publish(late!);
    await sendToLogger(h.url);
    const next = h.chain.mine();
    assert.deepEqual(await call(h.url, 'eth_getFilterChanges', [blocks]), [next.hash]);
    const changes = await call<Array<{ blockHash: Hex }>>(h.url, 'eth_getFilterChanges', [logs]);
    assert.deepEqual(
      changes.map((l) => l.blockHash),
      [next.hash],
    );
    await call(h.url, 'eth_uninstallFilter', [blocks]);
    await call(h.url, 'eth_uninstallFilter', [logs]);
  });

  it('filter_cap bounds live filters', async () => {
    const ids = [];
    for (let i = 0; i < 3; i++) ids.push(await call<string>(h.url, 'eth_newBlockFilter'));
    const refused = await rpc(h.url, 'eth_newBlockFilter');
    assert.equal(refused.error?.code, -32005);
    assert.match(refused.error!.message, /filter_cap of 3 reached/);
    await call(h.url, 'eth_uninstallFilter', [ids.pop()]);
    ids.push(await call<string>(h.url, 'eth_newBlockFilter'));
    for (const id of ids) await call(h.url, 'eth_uninstallFilter', [id]);
  });

  it('filter_timeout removes filters that are not polled, and polling keeps them alive', async () => {
    // Margins are wide (poll every 100 ms against a 1.5 s timeout) so a loaded machine cannot flake it.
    const t = await startHarness({ options: { filterTimeoutMs: 1_500 } });
    try {
      const idle = await call<string>(t.url, 'eth_newBlockFilter');
      const polled = await call<string>(t.url, 'eth_newBlockFilter');
      const until = Date.now() + 2_000;
      while (Date.now() < until) {
        await sleep(100);
        await call(t.url, 'eth_getFilterChanges', [polled]);
      }
      assert.deepEqual((await rpc(t.url, 'eth_getFilterChanges', [idle])).error, {
        code: -32000,
        message: 'filter not found',
      });
      assert.deepEqual(await call(t.url, 'eth_getFilterChanges', [polled]), []);
      assert.equal(t.server.filterCount, 1);
      await sleep(3_500);
      assert.equal(t.server.filterCount, 0, 'the sweeper removed the expired filter without a poll');
    } finally {
      await t.close();
    }
  });

  it('filter criteria are validated like eth_getLogs', async () => {
    assert.deepEqual((await rpc(h.url, 'eth_newFilter', [{ fromBlock: '0x5', toBlock: '0x2' }])).error, {
      code: -32602,
      message: 'invalid block range params',
    });
    assert.deepEqual((await rpc(h.url, 'eth_newFilter', [{ topics: ['0x1234'] }])).error, {
      code: -32602,
      message: 'invalid argument 0: invalid topic(s)',
    });
    assert.deepEqual((await rpc(h.url, 'eth_getFilterChanges', [12])).error, {
      code: -32602,
      message: 'invalid argument 0: json: cannot unmarshal number into Go value of type rpc.ID',
    });
  });
});
