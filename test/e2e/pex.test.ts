// Peer exchange between real nodes: a 3-validator network of `noded testnet` homes without any
// persistent_peers, where node1 and node2 know only node0 as a seed. All three need each other to
// make blocks (two of three is not more than 2/3), so blocks prove the mesh; net_info shows node1
// and node2 connected to each other, which only PEX could tell them, and their address books keep
// what they learned when they stop. A fourth node with pex off is pointed at node0 through the
// unsafe RPC's dial_peers.
import assert from 'node:assert/strict';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { parse, stringify } from 'smol-toml';
import { createNetwork, NETWORK_UP_MS, type Network, rpc, waitFor, waitHeight } from './network.js';

function nodeIdOf(net: Network, i: number): string {
  // node1's testnet persistent_peers names every other node: pick node i's entry by its IP.
  const other = i === 0 ? 1 : 0;
  const doc = parse(readFileSync(join(net.nodes[other]!.home, 'config', 'config.toml'), 'utf8')) as {
    p2p: { persistent_peers: string };
  };
  const entry = doc.p2p.persistent_peers.split(',').find((p) => p.includes(`@${net.nodes[i]!.ip}:`));
  assert.ok(entry, `node${i} in node${other}'s persistent_peers`);
  return entry.split('@')[0]!;
}

async function peerIds(net: Network, i: number): Promise<string[]> {
  const info = await rpc(net.nodes[i]!.cometUrl, '/net_info');
  return (info.peers as Array<{ node_info: { id: string } }>).map((p) => p.node_info.id);
}

describe('peer exchange between real nodes', { timeout: 480_000 }, () => {
  let net: Network;
  const ids: string[] = [];

  before(async () => {
    net = createNetwork({ validators: 3, nonValidators: 1 });
    for (let i = 0; i < 4; i++) ids.push(nodeIdOf(net, i));
    for (let i = 0; i < 4; i++) {
      const file = join(net.nodes[i]!.home, 'config', 'config.toml');
      const doc = parse(readFileSync(file, 'utf8')) as Record<string, Record<string, unknown>>;
      doc.p2p!.persistent_peers = '';
      doc.p2p!.seeds = i === 0 || i === 3 ? '' : `${ids[0]}@${net.nodes[0]!.ip}:26656`;
      if (i === 3) {
        doc.p2p!.pex = false;
        doc.rpc!.unsafe = true;
      }
      writeFileSync(file, stringify(doc));
    }
    net.start(0);
    await waitFor(
      'node0 serving',
      async () => (await peerIds(net, 0).catch(() => null)) !== null,
      NETWORK_UP_MS,
      net,
    );
    net.start(1);
    net.start(2);
    net.start(3);
  });
  after(async () => {
    await net?.cleanup();
  });

  it('nodes that know only a seed find each other and make blocks together', async () => {
    await waitFor(
      'node1 and node2 connected to each other',
      async () => (await peerIds(net, 1).catch((): string[] => [])).includes(ids[2]!),
      90_000,
      net,
    );
    await waitHeight(net, [0, 1, 2], 3, NETWORK_UP_MS);
    for (const i of [0, 1, 2]) {
      const peers = new Set(await peerIds(net, i));
      for (const j of [0, 1, 2])
        if (j !== i) assert.ok(peers.has(ids[j]!), `node${i} has node${j} as a peer`);
    }
  });

  it('dial_peers (unsafe RPC) connects a node without PEX, and refuses a malformed address', async () => {
    const n3 = net.nodes[3]!;
    await waitFor(
      'node3 serving',
      async () => (await peerIds(net, 3).catch(() => null)) !== null,
      NETWORK_UP_MS,
      net,
    );
    assert.deepEqual(await peerIds(net, 3), [], 'no peers without PEX, seeds or persistent peers');
    const bad = await fetch(`${n3.cometUrl}/dial_peers?peers=["nope@1.2.3.4:26656"]&persistent=true`);
    const badJson = (await bad.json()) as { error?: { data?: string } };
    assert.match(
      String(badJson.error?.data),
      /address \(nope@1\.2\.3\.4:26656\) does not contain ID|is not "<node_id>@<host>:<port>"/,
    );
    const addr0 = `${ids[0]}@${net.nodes[0]!.ip}:26656`;
    const res = await rpc(n3.cometUrl, `/dial_peers?peers=["${addr0}"]&persistent=true`);
    assert.equal(res.log, 'Dialing peers in progress. See /net_info for details');
    await waitFor(
      'node3 connected to node0',
      async () => (await peerIds(net, 3)).includes(ids[0]!),
      30_000,
      net,
    );
    await waitHeight(net, [3], 3, 60_000);
  });

  it('keeps what it learned in config/addrbook.json', async () => {
    await net.stopAll();
    const file = join(net.nodes[2]!.home, 'config', 'addrbook.json');
    assert.ok(existsSync(file), 'node2 wrote its address book');
    const book = JSON.parse(readFileSync(file, 'utf8')) as {
      addrs: Array<{ nodeId: string; host: string; port: number }>;
    };
    const node1 = book.addrs.find((a) => a.nodeId === ids[1]);
    assert.deepEqual(node1 && [node1.host, node1.port], [net.nodes[1]!.ip, 26656]);
  });
});
