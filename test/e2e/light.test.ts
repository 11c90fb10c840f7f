// A light node following a real 4-validator network: node4 of `noded testnet` runs with
// app.toml mode = "light" (as `noded init light` records it), peers with the validators over the
// light channel, follows their tip, serves the same headers, commits and validators on :26657 as
// they do and eth_blockNumber / eth_getBlockByNumber on :8545, refuses state queries, and refuses a
// header whose commit signatures were forged by an in-process peer, without advancing on it; both
// light nodes follow a validator-set change made by a delegation (ethers against the pool).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { DEFAULT_DEV_MNEMONIC } from '@noded/config';
import { BLOCK_PROTOCOL, type FetchedLightBlock, headerHash, type LightBlock } from '@noded/consensus';
import { ed25519Generate, nodeIdFromPublicKey } from '@noded/crypto';
import { LightChannel, P2P_PROTOCOL_VERSION, P2PHost } from '@noded/p2p';
import type { Logger } from '@noded/types';
import { Contract, HDNodeWallet, JsonRpcProvider, parseEther } from 'ethers';
import { POOL, POOL_FRAGMENTS } from '../staking-abi.js';
import { runCli } from './harness.js';
import {
  createNetwork,
  heightOf,
  makeLight,
  NETWORK_UP_MS,
  type Network,
  rpc,
  waitFor,
  waitHeight,
} from './network.js';

const VALIDATORS = [0, 1, 2, 3];
const LIGHT = 4;
const RPC_LIGHT = 5;
const quiet: Logger = { trace() {}, debug() {}, info() {}, warn() {}, error() {}, child: () => quiet };

async function eth(
  url: string,
  method: string,
  params: unknown[] = [],
): Promise<{ result?: unknown; error?: { code: number; message: string } }> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
    signal: AbortSignal.timeout(15_000),
  });
  return (await res.json()) as { result?: unknown; error?: { code: number; message: string } };
}

/** The node's pino log lines (JSON on stdout when not a terminal). */
function logLines(output: string): Array<Record<string, unknown>> {
  const out: Array<Record<string, unknown>> = [];
  for (const line of output.split('\n')) {
    if (!line.startsWith('{')) continue;
    try {
      out.push(JSON.parse(line) as Record<string, unknown>);
    } catch {
      // a line cut by the output buffer's limit
    }
  }
  return out;
}

describe('a light node following a 4-validator network', { timeout: 420_000 }, () => {
  let net: Network;

  before(async () => {
    net = createNetwork({
      validators: 4,
      nonValidators: 2,
      // node5 has no P2P peers at all: it follows two validators' RPC servers.
      editConfig: (doc, i) => {
        if (i !== RPC_LIGHT) return;
        doc.p2p!.persistent_peers = '';
        doc.p2p!.max_num_inbound_peers = 0;
      },
    });
    makeLight(net, LIGHT);
    makeLight(net, RPC_LIGHT, { rpc_servers: `${net.nodes[0]!.cometUrl},${net.nodes[1]!.cometUrl}` });
    for (const i of VALIDATORS) net.start(i);
    await waitHeight(net, VALIDATORS, 2, NETWORK_UP_MS);
    net.start(LIGHT);
    net.start(RPC_LIGHT);
  });
  after(async () => {
    await net?.cleanup();
  });

  it("follows the validators' tip within a few seconds and reports itself as a light node", async () => {
    const light = net.nodes[LIGHT]!;
    await waitFor(
      'the light node to reach the tip',
      async () => {
        const [v, l] = await Promise.all([heightOf(net.nodes[0]!), heightOf(light)]);
        return l > 2 && l >= v - 1;
      },
      NETWORK_UP_MS,
      net,
    );
    // It keeps following: over five seconds it never falls more than two heights behind.
    for (let i = 0; i < 5; i++) {
      await new Promise((r) => setTimeout(r, 1000));
      const [v, l] = await Promise.all([heightOf(net.nodes[0]!), heightOf(light)]);
      assert.ok(l >= v - 2 && l <= v + 1, `light node at ${l}, validator at ${v}`);
    }
    const st = await rpc(light.cometUrl, '/status');
    const info = st.node_info as Record<string, Record<string, unknown>>;
    assert.equal(info.other!.mode, 'light');
    assert.equal((st.sync_info as Record<string, unknown>).catching_up, false);
    assert.equal((st.sync_info as Record<string, unknown>).earliest_block_height, '1');

    const status = runCli(['status', '--node', light.cometUrl]);
    assert.equal(status.code, 0, status.stderr);
    assert.match(status.stdout, /mode +light/);
    assert.match(status.stdout, /peers +4/);
  });

  it('serves the same header, commit, validators and block header as a validator', async () => {
    const light = net.nodes[LIGHT]!;
    const v0 = net.nodes[0]!;
    const top = await heightOf(light);
    for (const h of [1, 2, Math.floor(top / 2), top - 1]) {
      const [lh, vh] = await Promise.all([
        rpc(light.cometUrl, `/header?height=${h}`),
        rpc(v0.cometUrl, `/header?height=${h}`),
      ]);
      assert.deepEqual(lh, vh, `header ${h}`);
      const [lc, vc] = await Promise.all([
        rpc(light.cometUrl, `/commit?height=${h}`),
        rpc(v0.cometUrl, `/commit?height=${h}`),
      ]);
      const lsh = lc.signed_header as Record<string, Record<string, unknown>>;
      const vsh = vc.signed_header as Record<string, Record<string, unknown>>;
      assert.deepEqual(lsh.header, vsh.header, `commit header ${h}`);
      assert.deepEqual(lsh.commit!.block_id, vsh.commit!.block_id, `commit block id ${h}`);
      assert.equal(lsh.commit!.height, String(h));
      const [lv, vv] = await Promise.all([
        rpc(light.cometUrl, `/validators?height=${h}`),
        rpc(v0.cometUrl, `/validators?height=${h}`),
      ]);
      assert.deepEqual(lv, vv, `validators ${h}`);
      const [lb, vb] = await Promise.all([
        rpc(light.cometUrl, `/block?height=${h}`),
        rpc(v0.cometUrl, `/block?height=${h}`),
      ]);
      assert.deepEqual(lb.block_id, vb.block_id);
      assert.deepEqual(
        (lb.block as Record<string, unknown>).header,
        (vb.block as Record<string, unknown>).header,
      );
      assert.deepEqual((lb.block as Record<string, Record<string, unknown>>).data!.txs, []);
    }
  });

  it('answers eth_chainId, eth_blockNumber and eth_getBlockByNumber from headers, and refuses state', async () => {
    const light = net.nodes[LIGHT]!;
    const v0 = net.nodes[0]!;
    assert.equal((await eth(light.ethUrl, 'eth_chainId')).result, '0x7a69');
    const [ln, vn] = await Promise.all([
      eth(light.ethUrl, 'eth_blockNumber'),
      eth(v0.ethUrl, 'eth_blockNumber'),
    ]);
    const l = Number(ln.result);
    const v = Number(vn.result);
    assert.ok(l >= v - 2 && l <= v + 1, `eth_blockNumber ${l} on the light node, ${v} on a validator`);
    const h = `0x${(l - 1).toString(16)}`;
    const [lb, vb] = await Promise.all([
      eth(light.ethUrl, 'eth_getBlockByNumber', [h, true]),
      eth(v0.ethUrl, 'eth_getBlockByNumber', [h, false]),
    ]);
    const lblock = lb.result as Record<string, unknown>;
    const vblock = vb.result as Record<string, unknown>;
    assert.equal(lblock.number, h);
    assert.deepEqual(lblock.transactions, []);
    for (const field of ['timestamp', 'miner', 'mixHash']) assert.equal(lblock[field], vblock[field], field);
    const header = await rpc(light.cometUrl, `/header?height=${l - 1}`);
    const cometHash = String(
      ((await rpc(light.cometUrl, `/block?height=${l - 1}`)).block_id as Record<string, unknown>).hash,
    );
    assert.equal(lblock.hash, `0x${cometHash.toLowerCase()}`);
    assert.ok(header.header);
    assert.equal((await eth(light.ethUrl, 'eth_getBlockByNumber', ['0xffffff', false])).result, null);

    const balance = await eth(light.ethUrl, 'eth_getBalance', [
      '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266',
      'latest',
    ]);
    assert.equal(balance.error?.code, -32000);
    assert.match(balance.error!.message, /^balance: light nodes hold no state/);
    const call = await eth(light.ethUrl, 'eth_call', [
      { to: '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266', data: '0x' },
      'latest',
    ]);
    assert.match(call.error!.message, /light nodes hold no state/);
    const send = await eth(light.ethUrl, 'eth_sendRawTransaction', ['0x02']);
    assert.ok(send.error, 'a light node takes no transactions');
    const res = await fetch(`${light.cometUrl}/block_results?height=2`);
    const json = (await res.json()) as { error: { data: string } };
    assert.match(json.error.data, /light nodes hold no state/);
  });

  it('refuses a header whose commit signatures are forged, logs why and does not advance on it', async () => {
    const light = net.nodes[LIGHT]!;
    const v0 = net.nodes[0]!;
    const [lightInfo, v0Info] = await Promise.all([
      rpc(light.cometUrl, '/status'),
      rpc(v0.cometUrl, '/status'),
    ]);
    const lightId = String((lightInfo.node_info as Record<string, unknown>).id);
    const v0Id = String((v0Info.node_info as Record<string, unknown>).id);

    // An in-process peer on the same network: it takes a real light block from a validator and
    // serves it to the light node 1000 heights ahead, with another app hash, re-pointing the commit
    // at the new header; the validators' signatures are left over the real one.
    const key = ed25519Generate();
    const fakeId = nodeIdFromPublicKey(key.publicKey);
    let forged: LightBlock | undefined;
    const host = new P2PHost({
      nodeKey: { seed: key.seed, publicKey: key.publicKey },
      nodeInfo: {
        protocolVersion: { p2p: P2P_PROTOCOL_VERSION, block: BLOCK_PROTOCOL, app: 0 },
        id: fakeId,
        listenAddr: '127.0.0.1:0',
        network: 'chain-local',
        version: 'forger',
        moniker: 'forger',
        other: { txIndex: 'off', rpcAddress: '' },
      },
      listen: { host: '127.0.0.1', port: 0 },
      persistentPeers: [
        { nodeId: v0Id, host: v0.ip, port: 26656 },
        { nodeId: lightId, host: light.ip, port: 26656 },
      ],
      unconditionalPeerIds: [],
      maxInboundPeers: 10,
      maxOutboundPeers: 10,
      handshakeTimeoutMs: 3000,
      dialTimeoutMs: 2000,
      maxRedialDelayMs: 500,
      logger: quiet,
    });
    const channel = new LightChannel(host, {
      logger: quiet,
      source: {
        range: () => ({ base: 1, latest: forged?.header.height ?? 0 }),
        lightBlock: async (h): Promise<FetchedLightBlock | undefined> =>
          h === 'latest' && forged ? { block: forged } : undefined,
      },
    });
    await host.start();
    try {
      await waitFor('the forger to reach a validator', async () => host.peerIds().includes(v0Id), 20_000);
      const real = (await channel.request(v0Id, 'latest')).block;
      const f = structuredClone(real);
      f.header.height += 1000;
      f.header.time += 1_000_000_000n;
      f.header.appHash = new Uint8Array(32).fill(0xab);
      f.commit.height = f.header.height;
      f.commit.blockId = { ...f.commit.blockId, hash: headerHash(f.header) };
      forged = f;
      const forgedHeight = f.header.height;

      await waitFor(
        'the light node to refuse the forged header',
        async () =>
          logLines(light.output).some(
            (l) =>
              l.msg === 'light block refused; not advancing on it' &&
              l.peer === fakeId &&
              l.code === 'FORGED_SIGNATURE' &&
              l.height === forgedHeight,
          ),
        30_000,
        net,
      );
      const refusal = logLines(light.output).find((l) => l.code === 'FORGED_SIGNATURE' && l.peer === fakeId)!;
      assert.match(String(refusal.reason), /signature \d+ .*is invalid/);
      // The forger is disconnected as a faulty peer...
      await waitFor(
        'the forger to be disconnected',
        async () =>
          logLines(light.output).some(
            (l) => l.msg === 'disconnecting peer' && l.peer === fakeId && /refused/.test(String(l.reason)),
          ),
        10_000,
        net,
      );
      // ...and the light node goes on with the real chain, never at the forged height.
      for (let i = 0; i < 3; i++) {
        await new Promise((r) => setTimeout(r, 1000));
        const [v, l] = await Promise.all([heightOf(v0), heightOf(light)]);
        assert.ok(l < forgedHeight && l <= v + 1, `light node at ${l}, validator at ${v}`);
      }
      const res = await fetch(`${light.cometUrl}/header?height=${forgedHeight}`);
      const json = (await res.json()) as { error?: { data: string } };
      assert.match(json.error?.data ?? '', /must be less than or equal to the current blockchain height/);
    } finally {
      channel.close();
      await host.stop();
    }
  });

  it('follows RPC servers named in [light] rpc_servers, without any peer', async () => {
    const light = net.nodes[RPC_LIGHT]!;
    const v0 = net.nodes[0]!;
    await waitFor(
      'the RPC-following light node to reach the tip',
      async () => {
        const [v, l] = await Promise.all([heightOf(v0), heightOf(light)]);
        return l > 2 && l >= v - 2;
      },
      NETWORK_UP_MS,
      net,
    );
    assert.equal((await rpc(light.cometUrl, '/net_info')).n_peers, '0');
    const top = await heightOf(light);
    for (const h of [1, top - 1]) {
      const [lh, vh] = await Promise.all([
        rpc(light.cometUrl, `/header?height=${h}`),
        rpc(v0.cometUrl, `/header?height=${h}`),
      ]);
      assert.deepEqual(lh, vh, `header ${h}`);
      const [lv, vv] = await Promise.all([
        rpc(light.cometUrl, `/validators?height=${h}`),
        rpc(v0.cometUrl, `/validators?height=${h}`),
      ]);
      assert.deepEqual(lv, vv, `validators ${h}`);
    }
  });

  it('follows a validator-set change made by stake: both light nodes serve the new power from H + 2', async () => {
    const v0 = net.nodes[0]!;
    const provider = new JsonRpcProvider(v0.ethUrl, undefined, { staticNetwork: true, cacheTimeout: -1 });
    try {
      // Dev account 0 (validator 0's operator) delegates 5 BTC to validator 1: its power goes 10 -> 15.
      const wallet = HDNodeWallet.fromPhrase(DEFAULT_DEV_MNEMONIC, undefined, "m/44'/60'/0'/0/0");
      const pool = new Contract(POOL, POOL_FRAGMENTS, wallet.connect(provider));
      const target = ((await pool.validators!()) as string[])[1]!;
      const pub = Buffer.from(
        (((await pool.validator!(target)) as unknown[])[0] as string).slice(2),
        'hex',
      ).toString('base64');
      const rc = await (await pool.delegate!(target, { value: parseEther('5'), gasLimit: 300_000n })).wait(
        1,
        60_000,
      );
      assert.equal(rc.status, 1);
      const h = rc.blockNumber as number;
      const powerOf = (r: Record<string, unknown>) =>
        (r.validators as Array<{ pub_key: { value: string }; voting_power: string }>).find(
          (v) => v.pub_key.value === pub,
        )?.voting_power;
      for (const light of [net.nodes[LIGHT]!, net.nodes[RPC_LIGHT]!]) {
        await waitFor(
          `light node ${light.index} to verify height ${h + 3}`,
          async () => (await heightOf(light)) >= h + 3,
          60_000,
          net,
        );
        const at = (x: number) => rpc(light.cometUrl, `/validators?height=${x}`);
        const [l1, l2] = [await at(h + 1), await at(h + 2)];
        assert.equal(powerOf(l1), '10', `power at ${h + 1}`);
        assert.equal(powerOf(l2), '15', `power at ${h + 2}`);
        assert.deepEqual(l2, await rpc(v0.cometUrl, `/validators?height=${h + 2}`));
        const header = async (x: number) =>
          (await rpc(light.cometUrl, `/header?height=${x}`)).header as Record<string, string>;
        const [h1, h2] = [await header(h + 1), await header(h + 2)];
        assert.notEqual(h1.validators_hash, h2.validators_hash);
        assert.equal(h1.next_validators_hash, h2.validators_hash);
      }
    } finally {
      provider.destroy();
    }
  });

  it('resumes from its store after a restart', async () => {
    const light = net.nodes[LIGHT]!;
    const before = await heightOf(light);
    await net.kill(LIGHT, 'SIGTERM');
    net.start(LIGHT);
    await waitFor(
      'the light node to answer again',
      async () => (await heightOf(light)) >= before,
      30_000,
      net,
    );
    const [v, l] = await Promise.all([heightOf(net.nodes[0]!), heightOf(light)]);
    await waitFor(
      'it to follow again',
      async () => (await heightOf(light)) >= Math.max(v - 1, l + 1),
      30_000,
      net,
    );
    const st = await rpc(light.cometUrl, '/status');
    assert.equal((st.sync_info as Record<string, unknown>).earliest_block_height, '1');
  });
});
