// Who may sign: the dev accounts (the public test mnemonic) are unlocked on chain-local only. A testnet
// or mainnet home never gets dev key material written into it, and a node started on such a home signs
// nothing with them, even when an operator copies a chain-local dev_accounts.json into it.
import assert from 'node:assert/strict';
import { copyFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { DEFAULT_DEV_MNEMONIC, deriveDevAccounts } from '@noded/config';
import {
  DEV_ADDRESSES,
  jsonRpc,
  type RunningNode,
  rewireHome,
  runCli,
  startNode,
  waitForOutput,
} from './harness.js';

const rpc = jsonRpc;

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    return statSync(p).isDirectory() ? filesUnder(p) : [p];
  });
}

/** Every place in `home` that holds the dev mnemonic or one of its private keys (hex, any case). */
function devKeyMaterial(home: string): string[] {
  const keys = deriveDevAccounts(DEFAULT_DEV_MNEMONIC, 20).map((a) => a.privateKey.slice(2).toLowerCase());
  const found: string[] = [];
  for (const file of filesUnder(home)) {
    const text = readFileSync(file).toString('latin1').toLowerCase();
    if (text.includes(DEFAULT_DEV_MNEMONIC)) found.push(`${file}: the dev mnemonic`);
    for (const k of keys) if (text.includes(k)) found.push(`${file}: dev private key ${k.slice(0, 8)}…`);
  }
  return found;
}

describe('dev accounts on testnet and mainnet homes', () => {
  const dirs: string[] = [];
  let node: RunningNode | undefined;
  after(async () => {
    await node?.stop();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  it('init writes no dev key material into a testnet or mainnet home, and does into a chain-local one', () => {
    for (const chainId of ['chain-testnet', 'chain-mainnet']) {
      const home = mkdtempSync(join(tmpdir(), 'noded-devkeys-'));
      dirs.push(home);
      const r = runCli(['init', 'full', '--chain-id', chainId, '--home', home]);
      assert.equal(r.code, 0, r.stderr);
      assert.deepEqual(devKeyMaterial(home), [], chainId);
      assert.ok(!filesUnder(home).some((f) => f.endsWith('dev_accounts.json')), chainId);
      assert.doesNotMatch(r.stdout + r.stderr, /0x[0-9a-f]{64}/i, `${chainId}: init printed a private key`);
    }
    // The check above can fail: a chain-local home holds the mnemonic it unlocks.
    const local = mkdtempSync(join(tmpdir(), 'noded-devkeys-'));
    dirs.push(local);
    assert.equal(runCli(['init', 'full', '--chain-id', 'chain-local', '--home', local]).code, 0);
    assert.notDeepEqual(devKeyMaterial(local), []);
  });

  it('a testnet node with a copied dev_accounts.json unlocks nothing, signs nothing, and says why', async () => {
    const local = mkdtempSync(join(tmpdir(), 'noded-devkeys-'));
    const home = mkdtempSync(join(tmpdir(), 'noded-devkeys-'));
    dirs.push(local, home);
    assert.equal(runCli(['init', 'full', '--chain-id', 'chain-local', '--home', local]).code, 0);
    assert.equal(runCli(['init', 'full', '--chain-id', 'chain-testnet', '--home', home]).code, 0);
    copyFileSync(join(local, 'config', 'dev_accounts.json'), join(home, 'config', 'dev_accounts.json'));

    // Nobody to dial here: the shipped testnet peers are remote hosts.
    const ports = await rewireHome(home, {
      extra: (c) => {
        if (!c.p2p) return;
        c.p2p.persistent_peers = '';
        c.p2p.seeds = '';
      },
    });
    // Not a validator of the testnet genesis: the chain does not advance, the RPC answers at block 0.
    node = await startNode(home, ports, [], 0n);
    await waitForOutput(node, /dev accounts file ignored: dev accounts are unlocked on chain-local only/);

    assert.deepEqual((await rpc(node.ethUrl, 'eth_accounts', [])).result, []);
    const from = DEV_ADDRESSES[0];
    const typed = {
      types: { EIP712Domain: [{ name: 'name', type: 'string' }] },
      primaryType: 'EIP712Domain',
      domain: { name: 'x' },
      message: {},
    };
    const calls: Array<[string, unknown[]]> = [
      ['eth_sendTransaction', [{ from, to: DEV_ADDRESSES[1], value: '0x1' }]],
      ['eth_sign', [from, '0x00']],
      ['personal_sign', ['0x00', from]],
      ['eth_signTransaction', [{ from, to: DEV_ADDRESSES[1], value: '0x1', gas: '0x5208', nonce: '0x0' }]],
      ['eth_signTypedData_v4', [from, typed]],
    ];
    for (const [method, params] of calls) {
      const r = await rpc(node.ethUrl, method, params);
      assert.ok(r.error, `${method} answered ${JSON.stringify(r.result)}`);
      if (r.error.code === -32601) continue; // a method this node does not serve also signs nothing
      assert.equal(r.error.code, -32000, method);
      assert.match(r.error.message, /^unknown account: this node holds no unlocked accounts/, method);
    }
    // Nothing was admitted either.
    const pool = (await rpc(node.ethUrl, 'txpool_status', [])).result as { pending: string };
    assert.equal(pool.pending, '0x0');
    assert.deepEqual(devKeyMaterial(join(home, 'data')), []);
  });
});
