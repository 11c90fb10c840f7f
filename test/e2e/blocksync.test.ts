// Block sync with real processes: a 1-validator chain-local network mines 1,500 empty blocks and a
// few blocks of transfers; a fresh full node catches up, is killed with SIGKILL twice while it
// syncs (in the middle of a batch: its blocks, results, application commits and states since the
// last sync point held in memory), restarts at a consistent height (the handshake brings the state
// to the block store, which holds every block published before the kill), and must end with
// the validator's block at every height, its balances, and catching_up false.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { JsonRpcProvider, parseEther, Wallet } from 'ethers';
import { DEV_KEYS } from './harness.js';
import { createNetwork, heightOf, NETWORK_UP_MS, type Network, rpc, waitFor } from './network.js';

const EMPTY_BLOCKS = 1500;

async function eth(url: string, method: string, params: unknown[] = []): Promise<unknown> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
    signal: AbortSignal.timeout(120_000),
  });
  const j = (await res.json()) as { result?: unknown; error?: { message: string } };
  if (j.error) throw new Error(`${method}: ${j.error.message}`);
  return j.result;
}

/** Block IDs of heights from..to through /blockchain (20 a call). */
async function blockIds(url: string, from: number, to: number): Promise<Map<number, string>> {
  const out = new Map<number, string>();
  for (let hi = to; hi >= from; hi -= 20) {
    const lo = Math.max(from, hi - 19);
    const r = await rpc(url, `/blockchain?minHeight=${lo}&maxHeight=${hi}`, 10_000);
    for (const m of r.block_metas as Array<{ block_id: { hash: string }; header: { height: string } }>)
      out.set(Number(m.header.height), m.block_id.hash);
  }
  return out;
}

async function catchingUp(url: string): Promise<boolean> {
  const st = await rpc(url, '/status');
  return (st.sync_info as Record<string, unknown>).catching_up === true;
}

describe('block sync of a fresh full node, killed twice while it syncs', { timeout: 520_000 }, () => {
  let net: Network;
  after(async () => {
    await net?.cleanup();
  });

  it('ends with every block and balance of the validator', async () => {
    net = createNetwork({ validators: 1, nonValidators: 1 });
    const [v, f] = net.nodes as [Network['nodes'][0], Network['nodes'][0]];
    net.start(0);
    await waitFor(
      'the validator JSON-RPC',
      () =>
        eth(v.ethUrl, 'eth_blockNumber').then(
          () => true,
          () => false,
        ),
      NETWORK_UP_MS,
      net,
    );
    // Blocks of transfers at the start and at the end, empty blocks between.
    const provider = new JsonRpcProvider(v.ethUrl, undefined, {
      staticNetwork: true,
      cacheTimeout: -1,
      batchMaxCount: 1,
    });
    const senders = DEV_KEYS.slice(0, 4).map((k) => new Wallet(k, provider));
    const receivers = Array.from({ length: 8 }, () => Wallet.createRandom().address);
    await eth(v.ethUrl, 'evm_setAutomine', [false]);
    const nonces = await Promise.all(senders.map((s) => s.getNonce()));
    const transferBlock = async (round: number) => {
      for (const [i, s] of senders.entries()) {
        for (let k = 0; k < 5; k++) {
          await s.sendTransaction({
            to: receivers[(i + k + round) % receivers.length]!,
            value: parseEther('0.001') * BigInt(k + 1),
            nonce: nonces[i]!++,
            gasLimit: 21_000n,
          });
        }
      }
      await eth(v.ethUrl, 'evm_mine');
    };
    for (let r = 0; r < 3; r++) await transferBlock(r);
    // 100 a call: under load (a shared machine) 500 can take longer than the server's 30 s http_timeout.
    for (let left = EMPTY_BLOCKS; left > 0; left -= 100)
      await eth(v.ethUrl, 'hardhat_mine', [Math.min(100, left)]);
    for (let r = 3; r < 6; r++) await transferBlock(r);
    const tip = await heightOf(v);
    assert.ok(tip >= EMPTY_BLOCKS + 6, `validator at ${tip}`);

    // The full node syncs; SIGKILL at two points on the way, each followed by a restart.
    net.start(1);
    let sawCatchingUp = false;
    const killedAt: number[] = [];
    for (const killAt of [400, 1000]) {
      await waitFor(
        `the full node past ${killAt}`,
        async () => {
          if (!sawCatchingUp) sawCatchingUp = await catchingUp(f.cometUrl).catch(() => false);
          return (await heightOf(f)) >= killAt;
        },
        120_000,
        net,
      );
      const at = await heightOf(f);
      assert.ok(at < tip, `still syncing when killed (at ${at} of ${tip})`);
      await net.kill(1, 'SIGKILL');
      killedAt.push(at);
      net.start(1);
    }
    assert.ok(sawCatchingUp, '/status said catching_up while the node was behind');
    await waitFor('the full node at the tip', async () => (await heightOf(f)) >= tip, 180_000, net);
    await waitFor('catching_up false at the tip', async () => !(await catchingUp(f.cometUrl)), 30_000, net);

    const [mine, theirs] = await Promise.all([blockIds(v.cometUrl, 1, tip), blockIds(f.cometUrl, 1, tip)]);
    for (let h = 1; h <= tip; h++) assert.equal(theirs.get(h), mine.get(h), `block ${h}`);
    for (const r of receivers) {
      const [a, b] = await Promise.all([
        eth(v.ethUrl, 'eth_getBalance', [r, 'latest']),
        eth(f.ethUrl, 'eth_getBalance', [r, 'latest']),
      ]);
      assert.ok(BigInt(a as string) > 0n);
      assert.equal(b, a, `balance of ${r}`);
    }
    // The restarts went through the handshake, and block sync logged where its time went.
    const log = readFileSync(join(f.home, 'logs', 'noded.log'), 'utf8');
    const handshakes = log
      .split('\n')
      .filter((l) => l.includes('"handshake complete"'))
      .map((l) => JSON.parse(l) as { storeHeight: number; stateHeight: number; height: number });
    assert.equal(handshakes.length, 3, 'three starts');
    for (const [i, at] of killedAt.entries()) {
      const hs = handshakes[i + 1]!;
      // A block is published (/status) only after a sync point made it durable, so the kill lost
      // none of them; the blocks applied after the last sync point were held in memory with their
      // state and commits, and block sync fetched them again.
      assert.ok(
        hs.storeHeight >= at,
        `restart ${i + 1}: block store at ${hs.storeHeight}, at or past ${at}, the height published before the kill`,
      );
      assert.ok(
        hs.stateHeight <= hs.storeHeight,
        `restart ${i + 1}: state ${hs.stateHeight} not past the blocks`,
      );
      assert.equal(
        hs.height,
        hs.storeHeight + 1,
        `restart ${i + 1}: the handshake brought the state to the blocks`,
      );
    }
    assert.match(log, /"block sync progress"/);
  });
});
