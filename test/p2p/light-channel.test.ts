// The light channel over real P2P hosts on 127.0.0.1: a full node answers light blocks (latest or
// by height, with the next validator set), refuses heights it does not have, a light node serves
// none; malformed requests are answered with an error and the third disconnects; an unknown frame
// disconnects at once; a peer that did not advertise the channel is never sent to.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import type { FetchedLightBlock, LightBlock } from '@noded/consensus';
import {
  encodeLightRequest,
  LIGHT_PROTOCOL,
  type LightBlockSource,
  LightChannel,
  LightRequestError,
  type P2PHost,
  type PeerAddress,
} from '@noded/p2p';
import type { Logger } from '@noded/types';
import { chain, KEYS, setOf } from '../consensus/light-helpers.js';
import { startTestHost, stopTestHosts, type TestHost, until } from './helpers.js';

const quiet: Logger = { trace() {}, debug() {}, info() {}, warn() {}, error() {}, child: () => quiet };
after(stopTestHosts);

const four = setOf(KEYS.slice(0, 4));
const BLOCKS = chain(5, () => four);

function sourceOf(blocks: LightBlock[], delayMs = 0): LightBlockSource {
  return {
    range: () => ({ base: 1, latest: blocks.length }),
    async lightBlock(h): Promise<FetchedLightBlock | undefined> {
      if (delayMs > 0) await new Promise((r) => setTimeout(r, delayMs));
      const height = h === 'latest' ? blocks.length : h;
      const block = blocks[height - 1];
      return block ? { block, nextValidators: four.validators } : undefined;
    },
  };
}

async function host(setup: (h: P2PHost) => void, peers: PeerAddress[] = []): Promise<TestHost> {
  return startTestHost(setup, { peers, maxInbound: 10, logger: quiet });
}

function refused(code: string, message?: RegExp) {
  return (err: unknown) => {
    assert.ok(err instanceof LightRequestError, String(err));
    assert.equal(err.code, code, err.message);
    if (message) assert.match(err.message, message);
    return true;
  };
}

describe('light channel', () => {
  it('serves the latest light block and any stored height, with the next validator set', async () => {
    const full = await host((h) => new LightChannel(h, { source: sourceOf(BLOCKS), logger: quiet }));
    let client!: LightChannel;
    const light = await host(
      (h) => {
        client = new LightChannel(h, { logger: quiet });
      },
      [{ nodeId: full.id, host: '127.0.0.1', port: full.port }],
    );
    await until('connected', () => light.host.peerCount === 1 && full.host.peerCount === 1);

    const latest = await client.request(full.id, 'latest');
    assert.deepEqual(latest.block, BLOCKS[4]);
    assert.deepEqual(latest.nextValidators, four.validators);
    const third = await client.request(full.id, 3);
    assert.deepEqual(third.block, BLOCKS[2]);
    const all = await Promise.all([1, 2, 3, 4, 5].map((h) => client.request(full.id, h)));
    assert.deepEqual(
      all.map((f) => f.block.header.height),
      [1, 2, 3, 4, 5],
    );

    await assert.rejects(
      client.request(full.id, 99),
      refused('REFUSED', /height 99 is not available: this node has heights 1 to 5/),
    );
    // The light node answers requests too, with a refusal.
    let fullAsClient!: LightChannel;
    const full2 = await host(
      (h) => {
        fullAsClient = new LightChannel(h, { source: sourceOf(BLOCKS), logger: quiet });
      },
      [{ nodeId: light.id, host: '127.0.0.1', port: light.port }],
    );
    await until('full2 connected', () => full2.host.peerCount === 1);
    await assert.rejects(
      fullAsClient.request(light.id, 'latest'),
      refused('REFUSED', /serves no light blocks \(it is a light node\)/),
    );
    assert.equal(full.host.peerCount, 1, 'refusals of well-formed requests disconnect nobody');
  });

  it('answers malformed requests with an error and disconnects the third time', async () => {
    const full = await host((h) => new LightChannel(h, { source: sourceOf(BLOCKS), logger: quiet }));
    const answers: string[] = [];
    const raw = await host(
      (h) =>
        h.register({
          protocol: LIGHT_PROTOCOL,
          maxMessageBytes: 1 << 20,
          onMessage: (_peer, payload) => {
            if (payload[0] === 3) answers.push(new TextDecoder().decode(payload.subarray(5)));
          },
        }),
      [{ nodeId: full.id, host: '127.0.0.1', port: full.port }],
    );
    await until('connected', () => raw.host.peerCount === 1);
    const tooLong = new Uint8Array(14);
    tooLong.set(encodeLightRequest(7, 1));
    raw.host.send(full.id, LIGHT_PROTOCOL, tooLong);
    await until('an error answer', () => answers.length === 1);
    assert.equal(answers[0], 'bad request: a request is 13 bytes, got 14');
    assert.equal(full.host.peerCount, 1);
    const huge = encodeLightRequest(8, 1);
    new DataView(huge.buffer).setBigUint64(5, 2n ** 60n);
    raw.host.send(full.id, LIGHT_PROTOCOL, huge);
    await until('the second error answer', () => answers.length === 2);
    assert.match(answers[1]!, /height 1152921504606846976 is out of range/);
    assert.equal(full.host.peerCount, 1);
    raw.host.send(full.id, LIGHT_PROTOCOL, tooLong);
    await until('the third bad request disconnects', () => full.host.peerCount === 0, 5000);
  });

  it('disconnects a peer that sends a frame of unknown type', async () => {
    const full = await host((h) => new LightChannel(h, { source: sourceOf(BLOCKS), logger: quiet }));
    const raw = await host(
      (h) => h.register({ protocol: LIGHT_PROTOCOL, maxMessageBytes: 1 << 20, onMessage: () => {} }),
      [{ nodeId: full.id, host: '127.0.0.1', port: full.port }],
    );
    // raw dials: once it counts the peer, both sides do (the listener admits before its verdict).
    await until('connected', () => raw.host.peerCount === 1 && full.host.peerCount === 1);
    assert.equal(raw.host.send(full.id, LIGHT_PROTOCOL, Uint8Array.of(9, 0, 0, 0, 1)), true);
    await until('disconnected', () => full.host.peerCount === 0, 5000);
  });

  it('times out a slow peer and refuses to send to a peer without the channel', async () => {
    const slow = await host((h) => new LightChannel(h, { source: sourceOf(BLOCKS, 2000), logger: quiet }));
    let client!: LightChannel;
    const light = await host(
      (h) => {
        client = new LightChannel(h, { logger: quiet, requestTimeoutMs: 300 });
      },
      [{ nodeId: slow.id, host: '127.0.0.1', port: slow.port }],
    );
    await until('connected', () => light.host.peerCount === 1);
    await assert.rejects(
      client.request(slow.id, 'latest'),
      refused('TIMEOUT', /did not answer within 300 ms/),
    );

    const bare = await host(() => {}, [{ nodeId: light.id, host: '127.0.0.1', port: light.port }]);
    await until('bare connected', () => bare.host.peerCount === 1);
    await assert.rejects(
      client.request(bare.id, 'latest'),
      refused('NOT_CONNECTED', /does not serve \/noded\/light\/1/),
    );
    assert.equal(bare.host.send(light.id, LIGHT_PROTOCOL, encodeLightRequest(1, 1)), true);
    assert.equal(light.host.send(bare.id, LIGHT_PROTOCOL, encodeLightRequest(1, 1)), false);
  });
});
