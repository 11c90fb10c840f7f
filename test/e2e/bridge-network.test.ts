// Bridge in on a 4-validator network (equal power, each its own process on a loopback IP): three
// validators watch the real source chain, the fourth a forged one (a second Hardhat where the same
// contracts, at the same addresses, report other deposits), and joins late, by block sync. The chain
// mints only what more than 2/3 of the voting power attested identically: the real deposit, never
// the forged ones.
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Wallet } from 'ethers';
import { parse, stringify } from 'smol-toml';
import { createNetwork, NETWORK_UP_MS, type Network, waitFor, waitHeight } from './network.js';
import {
  BTC,
  bridgeAppSection,
  type SourceChain,
  startSourceChain,
  writeBridgeGenesis,
} from './source-chain.js';

async function eth(url: string, method: string, params: unknown[] = []): Promise<unknown> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
    signal: AbortSignal.timeout(15_000),
  });
  const body = (await res.json()) as { result?: unknown; error?: { message: string } };
  if (body.error) throw new Error(`${method}: ${body.error.message}`);
  return body.result;
}

describe('bridge in: a validator that sees a forged deposit', { timeout: 420_000 }, () => {
  let real: SourceChain;
  let forged: SourceChain;
  let net: Network;

  before(async () => {
    real = await startSourceChain();
    forged = await startSourceChain();
    assert.equal(forged.bridgeAddress, real.bridgeAddress, 'same deployer and nonces, same addresses');
    net = createNetwork({ validators: 4 });
    for (const n of net.nodes) {
      writeBridgeGenesis(n.home, real.tokenAddress);
      const a = join(n.home, 'config', 'app.toml');
      const app = parse(readFileSync(a, 'utf8')) as Record<string, unknown>;
      // Node 3 reads the forged chain, deployed at the same addresses as the real one.
      app.bridge = bridgeAppSection(n.index === 3 ? forged : real, 1);
      writeFileSync(a, stringify(app));
    }
    // The fourth starts once the deposit is minted: it catches up by block sync, every block with
    // its extended commit (extensions are on from height 1), and then votes with its forged view.
    for (let i = 0; i < 3; i++) net.start(i);
    await waitHeight(net, [0, 1, 2], 2, NETWORK_UP_MS);
  });

  after(async () => {
    await net?.cleanup();
    await real?.stop();
    await forged?.stop();
  });

  it('mints the deposit three of four validators attest, and neither forged one', async () => {
    const alice = Wallet.createRandom().address.toLowerCase();
    const thief = Wallet.createRandom().address.toLowerCase();
    // Sequence 1 differs between the chains; sequence 2 exists only on the forged one.
    await real.lock(2n * BTC, alice);
    await forged.lock(50n * BTC, thief);
    await forged.lock(70n * BTC, thief);
    await real.mine(2);
    await forged.mine(2);
    const node0 = net.nodes[0]!.ethUrl;
    await waitFor(
      "alice's BTC",
      async () =>
        BigInt((await eth(node0, 'eth_getBalance', [alice, 'latest']).catch(() => '0x0')) as string) > 0n,
      90_000,
      net,
    );
    // Several more blocks, the fourth validator synced and voting: the forged deposits never get > 2/3.
    net.start(3);
    const h = Number(BigInt((await eth(node0, 'eth_blockNumber')) as string));
    await waitHeight(net, [0, 1, 2, 3], h + 4, 90_000);
    const log = readFileSync(join(net.nodes[3]!.home, 'logs', 'noded.log'), 'utf8');
    assert.match(log, /"block sync progress"/, 'the fourth validator caught up by block sync');
    assert.doesNotMatch(log, /invalid consensus message/, 'no synced block was refused');
    for (const n of net.nodes) {
      // :26657 answering does not mean :8545 does yet: its thread can bind later on a loaded machine
      // (a CI run saw "fetch failed" here from the late-started validator).
      await waitFor(
        `node${n.index}'s :8545`,
        () =>
          eth(n.ethUrl, 'eth_blockNumber').then(
            () => true,
            () => false,
          ),
        30_000,
        net,
      );
      assert.equal(BigInt((await eth(n.ethUrl, 'eth_getBalance', [alice, 'latest'])) as string), 2n * BTC);
      assert.equal(BigInt((await eth(n.ethUrl, 'eth_getBalance', [thief, 'latest'])) as string), 0n);
      const p = (await eth(n.ethUrl, 'bridge_params')) as Record<string, string>;
      assert.equal(p.inbound_last_sequence, '1');
      assert.equal(p.total_bridged_in, (2n * BTC).toString());
    }
  });
});
