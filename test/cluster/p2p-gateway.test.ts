// A cluster validator among all-in-one validators: `noded testnet --validators 3` writes three homes;
// node0 runs as the cluster (nats-server, `noded service executor`, `consensus`, `p2p-gateway`,
// `state-store` and `rpc-edge`, each its own process), node1 and node2 as `noded start`. With three equal validators every block
// needs all three, so each block proves the cluster validator signed through the gateway. The test
// checks the same block hashes everywhere, net_info of the consensus service naming the gateway's
// peers, a transfer sent to the cluster's :8545 (its rpc-edge) read back from an all-in-one node and
// one sent to an all-in-one node read back from the cluster's :8545 and :26657 (the cluster's
// services export traces to an OTLP receiver here: that transaction's trace runs from the gateway's
// `relay in` through consensus' `deliver` and `abci CheckTx` to the executor's CheckTx), the gateway's metrics and readiness, and that kill -9 of
// the gateway (then its restart) and kill -9 of consensus (then its restart) leave the chain going
// with the cluster validator signing again; while consensus is away, the edge's REST reads blocks,
// validator sets and node info from node1's RPC (NODED_CONSENSUS_RPC_ADDRESS lists both), and from
// consensus again once it is back, with no read failing.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { JsonRpcProvider, Transaction, Wallet } from 'ethers';
import { DEV_ADDRESSES, DEV_KEYS, freePort } from '../e2e/harness.js';
import {
  blockHashAt,
  createNetwork,
  heightOf,
  type Network,
  rpc,
  waitFor,
  waitHeight,
} from '../e2e/network.js';
import { type NatsServer, startNatsServer } from './nats.js';
import { OtlpReceiver } from './otlp.js';
import { type ServiceProcess, spawnService, waitForService } from './processes.js';

const GWEI = 1_000_000_000n;
const ALL = [0, 1, 2];

describe('a cluster validator behind a p2p-gateway among all-in-one validators', { timeout: 480_000 }, () => {
  let net: Network;
  let nats: NatsServer;
  let env: NodeJS.ProcessEnv;
  let gatewayMetrics: string;
  let edgeMetrics: string;
  let receiver: OtlpReceiver;
  const cluster: Record<string, ServiceProcess> = {};
  const tails = () =>
    Object.values(cluster)
      .map((s) => `--- ${s.name} ---\n${s.output().slice(-3000)}`)
      .join('\n');

  const startGateway = async () => {
    cluster.gateway = spawnService('p2p-gateway', net.nodes[0]!.home, {
      ...env,
      NODED_SERVICE_METRICS_ADDRESS: gatewayMetrics,
    });
    await waitForService(cluster.gateway, /noded service p2p-gateway is running/);
  };
  const startConsensus = async () => {
    cluster.consensus = spawnService('consensus', net.nodes[0]!.home, env);
    await waitForService(cluster.consensus, /noded service consensus is running/, 90_000);
  };
  const kill9 = async (s: ServiceProcess) => {
    s.proc.kill('SIGKILL');
    await s.exited;
  };
  /** The consensus RPC the edge's metrics say its REST reads from (the in_use gauge at 1). */
  const consensusRpcInUse = async () => {
    const text = await (
      await fetch(`http://${edgeMetrics}/metrics`, { signal: AbortSignal.timeout(10_000) })
    ).text();
    const using = [...text.matchAll(/_rpc_edge_consensus_rpc_in_use\{address="([^"]+)"\} 1\b/g)].map(
      (m) => m[1]!,
    );
    assert.equal(using.length, 1, `one consensus RPC in use, got ${JSON.stringify(using)}`);
    return using[0]!;
  };
  /** node0's validator signed the commit of `height` (read from another node). */
  const signedBy0 = async (height: number, address: string) => {
    const c = await rpc(net.nodes[1]!.cometUrl, `/commit?height=${height}`);
    const sigs = (c.signed_header as { commit: { signatures: Array<Record<string, unknown>> } }).commit
      .signatures;
    return sigs.some((s) => s.validator_address === address && s.block_id_flag === 2);
  };

  before(async () => {
    net = createNetwork({ validators: 3 });
    nats = await startNatsServer();
    receiver = await OtlpReceiver.start();
    env = {
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_BSP_SCHEDULE_DELAY: '200',
      NODED_NATS_URL: nats.url,
      NODED_EXECUTOR_GRPC_ADDRESS: `127.0.0.1:${await freePort()}`,
      NODED_P2P_GATEWAY_ADDRESS: `127.0.0.1:${await freePort()}`,
      NODED_STATE_STORE_GRPC_ADDRESS: `127.0.0.1:${await freePort()}`,
      NODED_EXECUTOR_WAIT: '60s',
    };
    gatewayMetrics = `127.0.0.1:${await freePort()}`;
    net.start(1);
    net.start(2);
    cluster.executor = spawnService('executor', net.nodes[0]!.home, env);
    await waitForService(cluster.executor, /noded service executor is running/, 90_000);
    await startGateway();
    await startConsensus();
    // The read side: a state-store following the executor's stream and an edge on node0's :8545.
    cluster.store = spawnService('state-store', net.nodes[0]!.home, env);
    await waitForService(cluster.store, /noded service state-store is running/, 90_000);
    // Its REST reads blocks and node info from consensus' :26657, or node1's while consensus is away.
    edgeMetrics = `127.0.0.1:${await freePort()}`;
    cluster.edge = spawnService('rpc-edge', net.nodes[0]!.home, {
      ...env,
      NODED_CONSENSUS_RPC_ADDRESS: `${net.nodes[0]!.ip}:26657,${net.nodes[1]!.ip}:26657`,
      NODED_SERVICE_METRICS_ADDRESS: edgeMetrics,
    });
    await waitForService(cluster.edge, /noded service rpc-edge is running/, 90_000);
  });
  after(async () => {
    for (const s of Object.values(cluster).reverse()) await s.stop('SIGKILL');
    await net?.cleanup();
    await nats?.stop();
    await receiver?.close();
  });

  it('commits the same blocks on the cluster and the all-in-one nodes; net_info shows the gateway peers', async (t) => {
    try {
      await waitHeight(net, ALL, 4, 120_000);
    } catch (err) {
      throw new Error(`${(err as Error).message}\n${tails()}`);
    }
    for (let h = 1; h <= 4; h++) {
      const hashes = await Promise.all(ALL.map((i) => blockHashAt(net.nodes[i]!, h)));
      assert.equal(new Set(hashes).size, 1, `disagreement at height ${h}: ${hashes.join(' ')}`);
    }
    // Block pace with a validator behind the relay (timeout_commit 1 s, timeout_propose 3 s): a relay
    // that held or lost consensus messages would make heights wait for timeout_propose and commit in a
    // later round. Over heights 3..9 most must commit in round 0, and the median interval must stay
    // under timeout_commit + timeout_propose (4 s). It was 3 s, which a loaded machine (load 40)
    // missed by 11 ms: "median block interval 3011 ms (gaps 3385, 2612, 3011, 2936, 2376, 3066)".
    await waitHeight(net, [0], 9, 120_000);
    const times: number[] = [];
    const rounds: number[] = [];
    for (let h = 3; h <= 9; h++) {
      const r = await rpc(net.nodes[0]!.cometUrl, `/header?height=${h}`);
      times.push(Date.parse(String((r.header as { time: string }).time).replace(/(\.\d{3})\d*/, '$1')));
      const c = await rpc(net.nodes[0]!.cometUrl, `/commit?height=${h}`);
      rounds.push((c.signed_header as { commit: { round: number } }).commit.round);
    }
    const gaps = times.slice(1).map((x, i) => x - times[i]!);
    const median = [...gaps].sort((a, b) => a - b)[Math.floor(gaps.length / 2)]!;
    const pace = `median block interval ${median} ms (gaps ${gaps.join(', ')}; rounds ${rounds.join(', ')})`;
    t.diagnostic(pace);
    assert.ok(rounds.filter((r) => r === 0).length > rounds.length / 2, pace);
    assert.ok(median < 4000, pace);
    const ids = await Promise.all(
      [1, 2].map(
        async (i) => ((await rpc(net.nodes[i]!.cometUrl, '/status')).node_info as { id: string }).id,
      ),
    );
    const info = await rpc(net.nodes[0]!.cometUrl, '/net_info');
    assert.equal(info.n_peers, '2');
    const peers = info.peers as Array<{ node_info: { id: string; network: string }; remote_ip: string }>;
    assert.deepEqual(peers.map((p) => p.node_info.id).sort(), [...ids].sort());
    assert.deepEqual(peers.map((p) => p.remote_ip).sort(), [net.nodes[1]!.ip, net.nodes[2]!.ip].sort());
    // The consensus service's node info names the gateway's P2P address.
    const status = await rpc(net.nodes[0]!.cometUrl, '/status');
    assert.equal((status.node_info as { listen_addr: string }).listen_addr, `${net.nodes[0]!.ip}:26656`);

    // The gateway's own metrics and readiness: two peers, traffic on the consensus channel.
    const metrics = await (await fetch(`http://${gatewayMetrics}/metrics`)).text();
    assert.match(metrics, /^cometbft_p2p_peers\{[^}]*\} 2$/m);
    for (const id of ids)
      assert.match(
        metrics,
        new RegExp(
          `^cometbft_p2p_peer_receive_bytes_total\\{[^}]*peer_id="${id}",chID="/noded/consensus/1"\\} [1-9]`,
          'm',
        ),
      );
    assert.equal((await fetch(`http://${gatewayMetrics}/readyz`)).status, 200);
  });

  it('gossips transactions both ways: sent to the cluster, read on an all-in-one node, and back', async () => {
    // To the cluster's :8545 (rpc-edge -> the executor's mempool), read as a receipt from node1's :8545.
    const provider0 = new JsonRpcProvider(net.nodes[0]!.ethUrl, undefined, {
      staticNetwork: true,
      cacheTimeout: -1,
    });
    const toCluster = await new Wallet(DEV_KEYS[0], provider0).sendTransaction({
      to: DEV_ADDRESSES[2],
      value: 5n * GWEI,
      gasLimit: 21_000,
    });
    // And one to the cluster's :26657 (broadcast_tx_sync -> the executor's CheckTx).
    const raw = await new Wallet(DEV_KEYS[2]).signTransaction({
      type: 2,
      chainId: 31337,
      nonce: 0,
      to: DEV_ADDRESSES[3],
      value: 6n * GWEI,
      gasLimit: 21_000,
      maxFeePerGas: 50n * GWEI,
      maxPriorityFeePerGas: 1n * GWEI,
    });
    const sent = await rpc(net.nodes[0]!.cometUrl, `/broadcast_tx_sync?tx=${raw}`);
    assert.equal(sent.code, 0, String(sent.log));
    const provider1 = new JsonRpcProvider(net.nodes[1]!.ethUrl, undefined, {
      staticNetwork: true,
      cacheTimeout: -1,
    });
    for (const hash of [toCluster.hash, Transaction.from(raw).hash!]) {
      const receipt = await provider1.waitForTransaction(hash, 1, 60_000);
      assert.ok(receipt, `node1 has the receipt of ${hash}, sent to the cluster`);
      assert.equal(receipt.status, 1);
    }
    provider1.destroy();

    // To node2's :8545 (eth_sendRawTransaction), read back from the cluster's :26657 (/tx).
    const provider2 = new JsonRpcProvider(net.nodes[2]!.ethUrl, undefined, {
      staticNetwork: true,
      cacheTimeout: -1,
    });
    const tx = await new Wallet(DEV_KEYS[1], provider2).sendTransaction({
      to: DEV_ADDRESSES[3],
      value: 7n * GWEI,
      gasLimit: 21_000,
    });
    provider2.destroy();
    let found: Record<string, unknown> | undefined;
    await waitFor(
      'the all-in-one transaction on the cluster',
      async () => {
        try {
          found = await rpc(net.nodes[0]!.cometUrl, `/tx?hash=${tx.hash}`);
          return true;
        } catch {
          return false;
        }
      },
      60_000,
      net,
    );
    assert.equal((found!.tx_result as { code: number }).code, 0);
    assert.equal(String(found!.hash).toLowerCase(), tx.hash.slice(2).toLowerCase());
    // and as a receipt from the cluster's own :8545 (the state-store applied the block)
    const onCluster = await provider0.waitForTransaction(tx.hash, 1, 60_000);
    assert.ok(onCluster, "the cluster's edge has the receipt of the transaction sent to node2");
    assert.equal(onCluster.status, 1);
    provider0.destroy();

    // Either transaction may have been proposed by the node it was sent to; the gateway's counters
    // show the gossip itself crossed the relay: mempool frames sent to both peers (the cluster's
    // transaction, which the traced cluster sends with its trace context on /noded/mempool/2, which
    // the all-in-one nodes take) and received from node2 (its own: untraced, /noded/mempool/1).
    const ids = await Promise.all(
      [1, 2].map(
        async (i) => ((await rpc(net.nodes[i]!.cometUrl, '/status')).node_info as { id: string }).id,
      ),
    );
    const mempoolBytes = (text: string, dir: 'send' | 'receive', id: string, version: 1 | 2) =>
      Number(
        new RegExp(
          `^cometbft_p2p_peer_${dir}_bytes_total\\{[^}]*peer_id="${id}",chID="/noded/mempool/${version}"\\} (\\d+)`,
          'm',
        ).exec(text)?.[1] ?? 0,
      );
    await waitFor(
      'mempool traffic through the gateway',
      async () => {
        const text = await (await fetch(`http://${gatewayMetrics}/metrics`)).text();
        return (
          mempoolBytes(text, 'send', ids[0]!, 2) > 0 &&
          mempoolBytes(text, 'send', ids[1]!, 2) > 0 &&
          mempoolBytes(text, 'receive', ids[1]!, 1) > 0
        );
      },
      10_000,
    );

    // Its trace on the cluster: a peer gossiped it to the gateway ("relay in"), the Frame carried the
    // context to consensus ("deliver"), whose ABCI CheckTx reached the executor. A copy may come
    // from each peer (the second is refused as known): one of them holds the whole chain.
    const chainOf = () => {
      const spans = receiver.spans;
      const byId = new Map(spans.map((x) => [x.spanId, x]));
      return spans
        .filter((x) => x.name === 'CheckTx' && x.attrs['noded.tx.hash'] === tx.hash.toLowerCase())
        .map((check) => {
          const abci = byId.get(check.parentSpanId ?? '');
          const deliver = byId.get(abci?.parentSpanId ?? '');
          const relayIn = byId.get(deliver?.parentSpanId ?? '');
          return { check, abci, deliver, relayIn };
        })
        .find((c) => c.relayIn !== undefined);
    };
    await waitFor(
      'the gossiped transaction traced from the gateway to the executor',
      async () => !!chainOf(),
      15_000,
    );
    const traced = chainOf()!;
    assert.equal(traced.check.service, 'noded-executor');
    assert.deepEqual([traced.abci!.name, traced.abci!.service], ['abci CheckTx', 'noded-consensus']);
    assert.deepEqual(
      [traced.deliver!.name, traced.deliver!.service],
      ['deliver /noded/mempool/1', 'noded-consensus'],
    );
    assert.deepEqual(
      [traced.relayIn!.name, traced.relayIn!.service, traced.relayIn!.parentSpanId],
      ['relay in /noded/mempool/1', 'noded-p2p-gateway', undefined],
    );
    assert.ok(ids.includes(String(traced.relayIn!.attrs['noded.p2p.peer'])), 'relayed from a peer');
    for (const x of [traced.abci!, traced.deliver!, traced.check])
      assert.equal(x.traceId, traced.relayIn!.traceId);
    // Consensus' own traffic is traced too: the gateway relays votes and block parts in both ways.
    assert.ok(receiver.spans.some((x) => x.name === 'relay in /noded/consensus/1'));
    assert.ok(receiver.spans.some((x) => /^relay (send|broadcast) \/noded\/consensus\/1$/.test(x.name)));
  });

  it('keeps going after kill -9 of the gateway and of consensus, the cluster validator signing again', async () => {
    const address = ((await rpc(net.nodes[0]!.cometUrl, '/status')).validator_info as { address: string })
      .address;

    // kill -9 of the gateway: consensus loses its peers; three validators of equal power need all three.
    await kill9(cluster.gateway!);
    await waitForService(cluster.consensus!, /relay stream to the p2p-gateway ended/, 30_000);
    await waitFor(
      'net_info without peers',
      async () => (await rpc(net.nodes[0]!.cometUrl, '/net_info')).n_peers === '0',
      30_000,
    );
    const during = Math.max(...(await Promise.all(ALL.map((i) => heightOf(net.nodes[i]!)))));
    // Without node0's votes no block is made (at most the one already being committed).
    await new Promise((r) => setTimeout(r, 2500));
    const halted = Math.max(...(await Promise.all([1, 2].map((i) => heightOf(net.nodes[i]!)))));
    assert.ok(
      halted <= during + 1,
      `the chain went on without the cluster validator: ${during} -> ${halted}`,
    );
    await startGateway();
    try {
      await waitHeight(net, ALL, during + 3, 120_000);
    } catch (err) {
      throw new Error(`${(err as Error).message}\n${tails()}`);
    }
    assert.ok(
      await signedBy0(during + 2, address),
      `node0 signed the commit of ${during + 2} after the gateway restart`,
    );

    // kill -9 of consensus: the gateway keeps its peers and lets a restarted consensus attach again.
    // Meanwhile the edge's REST reads blocks and node info from node1's RPC (the next of its
    // NODED_CONSENSUS_RPC_ADDRESS), and goes back to consensus once it answers: no read fails.
    const rest = `http://${net.nodes[0]!.ip}:1317/cosmos/base/tendermint/v1beta1`;
    const restGet = async (path: string) => {
      const res = await fetch(`${rest}/${path}`, { signal: AbortSignal.timeout(30_000) });
      const body = (await res.json()) as Record<string, unknown>;
      if (res.status !== 200) throw new Error(`${path}: ${res.status} ${JSON.stringify(body)}`);
      return body;
    };
    const nodeIdVia = async () =>
      String(((await restGet('node_info')).default_node_info as { default_node_id: string }).default_node_id);
    const consensusRpc = `${net.nodes[0]!.ip}:26657`;
    const node1Rpc = `${net.nodes[1]!.ip}:26657`;
    const consensusId = ((await rpc(net.nodes[0]!.cometUrl, '/status')).node_info as { id: string }).id;
    const node1Id = ((await rpc(net.nodes[1]!.cometUrl, '/status')).node_info as { id: string }).id;
    assert.equal(await consensusRpcInUse(), consensusRpc);
    assert.equal(await nodeIdVia(), consensusId);
    const restFailures: string[] = [];
    let restReads = 0;
    let reading = true;
    const reader = (async () => {
      while (reading) {
        try {
          await restGet('blocks/latest');
          await restGet('validatorsets/latest');
          restReads++;
        } catch (err) {
          restFailures.push((err as Error).message);
        }
        await new Promise((r) => setTimeout(r, 50));
      }
    })();
    await new Promise((r) => setTimeout(r, 300));
    await kill9(cluster.consensus!);
    await new Promise((r) => setTimeout(r, 1500));
    const metrics = await (await fetch(`http://${gatewayMetrics}/metrics`)).text();
    assert.match(metrics, /^cometbft_p2p_peers\{[^}]*\} 2$/m, 'the gateway kept both peers');
    assert.equal((await fetch(`http://${gatewayMetrics}/readyz`)).status, 503, 'not ready without consensus');
    const stalled = Math.max(...(await Promise.all([1, 2].map((i) => heightOf(net.nodes[i]!)))));
    await waitFor('the edge reads from node1', async () => (await consensusRpcInUse()) === node1Rpc, 15_000);
    assert.equal(await nodeIdVia(), node1Id);
    const readsWhileDown = restReads;
    await startConsensus();
    await waitFor(
      'the edge reads from consensus again',
      async () => (await consensusRpcInUse()) === consensusRpc,
      30_000,
    );
    assert.equal(await nodeIdVia(), consensusId);
    reading = false;
    await reader;
    assert.deepEqual(restFailures, [], 'no REST read through the edge failed');
    assert.ok(
      readsWhileDown > 3 && restReads > readsWhileDown,
      `REST reads went on: ${readsWhileDown}, ${restReads}`,
    );
    assert.match(cluster.edge!.output(), /consensus RPC unavailable; reading from the next one/);
    assert.match(cluster.edge!.output(), /consensus RPC answers again/);
    await waitFor(
      'the restarted consensus attached to the gateway',
      async () => (cluster.gateway!.output().match(/consensus service attached/g) ?? []).length >= 2,
      60_000,
    );
    try {
      await waitHeight(net, ALL, stalled + 3, 120_000);
    } catch (err) {
      throw new Error(`${(err as Error).message}\n${tails()}`);
    }
    assert.ok(
      await signedBy0(stalled + 2, address),
      `node0 signed the commit of ${stalled + 2} after the consensus restart`,
    );
    const top = Math.min(...(await Promise.all(ALL.map((i) => heightOf(net.nodes[i]!)))));
    for (let h = Math.max(1, top - 5); h <= top; h++) {
      const hashes = await Promise.all(ALL.map((i) => blockHashAt(net.nodes[i]!, h)));
      assert.equal(new Set(hashes).size, 1, `disagreement at height ${h}`);
    }
  });
});
