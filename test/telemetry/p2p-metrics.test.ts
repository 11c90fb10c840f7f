// CometBFT's per-peer traffic counters fed from the P2P host's cumulative counts: each sample adds
// only what is new, and a peer whose counts restart (it reconnected) is counted from zero again.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { NodeMetrics } from '@noded/telemetry';

const A = 'aa'.repeat(20);
const B = 'bb'.repeat(20);
const CONSENSUS = '/noded/consensus/1';
const MEMPOOL = '/noded/mempool/1';

/** The counter's value for one peer and channel (undefined when it has no series yet). */
async function value(
  m: NodeMetrics,
  name: 'send' | 'receive',
  peer: string,
  channel: string,
): Promise<number | undefined> {
  const metric = m.registry.getSingleMetric(`cometbft_p2p_peer_${name}_bytes_total`);
  assert.ok(metric, `cometbft_p2p_peer_${name}_bytes_total is registered`);
  const { values } = await metric.get();
  return values.find((v) => v.labels.peer_id === peer && v.labels.chID === channel)?.value;
}

function traffic(peer: string, channel: string, sent: number, received: number) {
  return { peer, channel, sent, received };
}

describe('p2p peer traffic counters', () => {
  it('add the increase of each peer and channel since the previous sample', async () => {
    const m = new NodeMetrics({ namespace: 'cometbft', chainId: 'chain-local', processMetrics: false });
    m.recordPeerTraffic([
      traffic(A, CONSENSUS, 100, 40),
      traffic(A, MEMPOOL, 0, 7),
      traffic(B, CONSENSUS, 5, 0),
    ]);
    assert.equal(await value(m, 'send', A, CONSENSUS), 100);
    assert.equal(await value(m, 'receive', A, CONSENSUS), 40);
    assert.equal(await value(m, 'receive', A, MEMPOOL), 7);
    assert.equal(await value(m, 'send', A, MEMPOOL), undefined, 'nothing sent yet: no series');
    assert.equal(await value(m, 'send', B, CONSENSUS), 5);

    m.recordPeerTraffic([
      traffic(A, CONSENSUS, 250, 40),
      traffic(A, MEMPOOL, 3, 7),
      traffic(B, CONSENSUS, 5, 9),
    ]);
    assert.equal(await value(m, 'send', A, CONSENSUS), 250);
    assert.equal(await value(m, 'receive', A, CONSENSUS), 40, 'unchanged count adds nothing');
    assert.equal(await value(m, 'send', A, MEMPOOL), 3);
    assert.equal(await value(m, 'receive', A, MEMPOOL), 7);
    assert.equal(await value(m, 'receive', B, CONSENSUS), 9);

    // The same sample again adds nothing.
    m.recordPeerTraffic([
      traffic(A, CONSENSUS, 250, 40),
      traffic(A, MEMPOOL, 3, 7),
      traffic(B, CONSENSUS, 5, 9),
    ]);
    assert.equal(await value(m, 'send', A, CONSENSUS), 250);
    assert.equal(await value(m, 'receive', B, CONSENSUS), 9);

    const text = await m.text();
    assert.match(
      text,
      new RegExp(
        `^cometbft_p2p_peer_send_bytes_total\\{chain_id="chain-local",peer_id="${A}",chID="/noded/consensus/1"\\} 250$`,
        'm',
      ),
    );
    assert.match(text, /^# TYPE cometbft_p2p_peer_receive_bytes_total counter$/m);
  });

  it('count a reconnected peer from zero: a smaller count, or a peer missing from a sample, is a reset', async () => {
    const m = new NodeMetrics({ namespace: 'cometbft', chainId: 'chain-local', processMetrics: false });
    m.recordPeerTraffic([traffic(A, CONSENSUS, 1000, 800), traffic(B, CONSENSUS, 10, 10)]);

    // A reconnected between samples: its new connection has sent 30 and received 900 so far. The
    // smaller sent count shows the reset, so both counts are new (900 > 800 is not a delta of 100).
    m.recordPeerTraffic([traffic(A, CONSENSUS, 30, 900), traffic(B, CONSENSUS, 10, 10)]);
    assert.equal(await value(m, 'send', A, CONSENSUS), 1030);
    assert.equal(await value(m, 'receive', A, CONSENSUS), 1700);

    // B disconnects (absent from a sample), then reconnects with counts above its old ones.
    m.recordPeerTraffic([traffic(A, CONSENSUS, 30, 900)]);
    m.recordPeerTraffic([traffic(A, CONSENSUS, 31, 900), traffic(B, CONSENSUS, 25, 12)]);
    assert.equal(await value(m, 'send', B, CONSENSUS), 35);
    assert.equal(await value(m, 'receive', B, CONSENSUS), 22);
    assert.equal(await value(m, 'send', A, CONSENSUS), 1031);

    // Counters never go down, whatever the samples say.
    m.recordPeerTraffic([]);
    assert.equal(await value(m, 'send', A, CONSENSUS), 1031);
    assert.equal(await value(m, 'receive', B, CONSENSUS), 22);
  });
});
