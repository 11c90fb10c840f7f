// The consensus channel over real hosts on 127.0.0.1: votes whole, proposals and committed blocks as
// a head plus 64 KiB parts each proven against the signed part set hash; a forged part disconnects.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { BLOCK_PART_SIZE, blockIdOf, type ConsensusMessage, encodeBlock, makeBlock } from '@noded/consensus';
import { CONSENSUS_PROTOCOL, ConsensusChannel, consensusFrames } from '@noded/p2p';
import type { Block, Commit } from '@noded/types';
import { genesis, signedProposal, signedVote, testKey } from '../consensus/helpers.js';
import { startTestHost, stopTestHosts, until } from './helpers.js';

after(stopTestHosts);

async function pair(maxBlockBytes = 22020096) {
  const make = async (peers: Array<{ nodeId: string; host: string; port: number }>) => {
    let channel!: ConsensusChannel;
    const got: Array<{ peer: string; m: ConsensusMessage }> = [];
    const t = await startTestHost(
      (host) => {
        channel = new ConsensusChannel(host, maxBlockBytes);
        channel.subscribe((peer, m) => got.push({ peer, m }));
      },
      { peers, maxInbound: 10 },
    );
    return { ...t, channel, got };
  };
  const a = await make([]);
  const b = await make([{ nodeId: a.id, host: '127.0.0.1', port: a.port }]);
  await until('connected', () => a.host.peerCount === 1 && b.host.peerCount === 1);
  return { a, b };
}

const keys = [testKey(0), testKey(1), testKey(2), testKey(3)];
const chain = genesis(keys);

/** A block of about `bytes` bytes of transactions. */
function bigBlock(bytes: number): Block {
  const txs: Uint8Array[] = [];
  for (let i = 0; i * 10_000 < bytes; i++) txs.push(new Uint8Array(10_000).fill(i % 251));
  return makeBlock(chain, {
    height: 1,
    time: chain.lastBlockTime,
    txs,
    evidence: [],
    lastCommit: null,
    proposerAddress: keys[0]!.address,
  });
}

describe('ConsensusChannel', () => {
  it('sends a 1.2 MB proposal as a head and 19 parts, and delivers the same block and proposal', async () => {
    const { a, b } = await pair();
    const block = bigBlock(1_200_000);
    const proposal = signedProposal(keys[0]!, block, 0);
    const frames = consensusFrames({ kind: 'proposal', proposal, block });
    const parts = Math.ceil(encodeBlock(block).length / BLOCK_PART_SIZE);
    assert.equal(proposal.blockId.partSetHeader.total, parts);
    assert.equal(frames.length, 1 + parts);
    assert.ok(
      frames.every((f) => f.length <= BLOCK_PART_SIZE + 2048),
      'no frame is much over one part',
    );

    b.channel.send(a.id, { kind: 'proposal', proposal, block });
    await until('the proposal arrives', () => a.got.length === 1);
    const m = a.got[0]!.m;
    assert.equal(m.kind, 'proposal');
    if (m.kind !== 'proposal') return;
    assert.deepEqual(blockIdOf(m.block), proposal.blockId);
    assert.deepEqual(m.block.data.txs, block.data.txs);
    assert.deepEqual(m.proposal, proposal);
    assert.equal(a.channel.partialCount(b.id), 0);
  });

  it('carries a committed block for block sync the same way, and votes whole', async () => {
    const { a, b } = await pair();
    const block = bigBlock(150_000);
    const id = blockIdOf(block);
    const commit: Commit = {
      height: 1,
      round: 0,
      blockId: id,
      signatures: keys.map((k) => {
        const v = signedVote(chain, k, 2, 1, 0, id);
        return {
          blockIdFlag: 2,
          validatorAddress: k.address,
          timestamp: v.timestamp,
          signature: v.signature,
        };
      }),
    };
    const vote = signedVote(chain, keys[1]!, 1, 1, 0, id);
    a.channel.send(b.id, { kind: 'commit', block, commit });
    a.channel.broadcast({ kind: 'vote', vote });
    await until('both arrive', () => b.got.length === 2);
    const [c, v] = b.got.map((g) => g.m);
    assert.equal(c!.kind, 'commit');
    if (c!.kind === 'commit') {
      assert.deepEqual(blockIdOf(c.block), id);
      assert.deepEqual(c.commit, commit);
    }
    assert.deepEqual(v, { kind: 'vote', vote });
  });

  it('carries a block sync commit with its extended commit (vote extensions on), extensions intact', async () => {
    const { a, b } = await pair();
    const block = bigBlock(100_000);
    const id = blockIdOf(block);
    const ext: Commit = {
      height: 1,
      round: 0,
      blockId: id,
      signatures: keys.map((k, i) => {
        const v = signedVote(chain, k, 2, 1, 0, id);
        return {
          blockIdFlag: 2,
          validatorAddress: k.address,
          timestamp: v.timestamp,
          signature: v.signature,
          extension: new TextEncoder().encode(`deposits seen by ${i}`),
          extensionSignature: new Uint8Array(64).fill(i + 1),
        };
      }),
    };
    const plain: Commit = {
      ...ext,
      signatures: ext.signatures.map(({ extension: _e, extensionSignature: _s, ...rest }) => rest),
    };
    a.channel.send(b.id, { kind: 'commit', block, commit: plain, extendedCommit: ext });
    await until('it arrives', () => b.got.length === 1);
    const m = b.got[0]!.m;
    assert.equal(m.kind, 'commit');
    if (m.kind === 'commit') {
      assert.deepEqual(blockIdOf(m.block), id);
      assert.deepEqual(m.extendedCommit, ext, 'the extensions and their signatures arrive');
      assert.deepEqual(m.commit, ext, 'the extended commit is the commit that decides');
    }
  });

  it('disconnects a peer whose block part does not prove against the part set hash; nothing is delivered', async () => {
    const { a, b } = await pair();
    const block = bigBlock(200_000);
    const proposal = signedProposal(keys[0]!, block, 0);
    const frames = consensusFrames({ kind: 'proposal', proposal, block });
    const forged = frames[2]!.slice();
    forged[forged.length - 1] ^= 0xff;
    b.host.send(a.id, CONSENSUS_PROTOCOL, frames[0]!);
    b.host.send(a.id, CONSENSUS_PROTOCOL, frames[1]!);
    b.host.send(a.id, CONSENSUS_PROTOCOL, forged);
    await until('a drops b', () => a.host.peerCount === 0);
    assert.equal(a.got.length, 0);
  });

  it('refuses a head whose part set is larger than a max_bytes block can be', async () => {
    const { a, b } = await pair(100_000);
    const block = bigBlock(300_000);
    const proposal = signedProposal(keys[0]!, block, 0);
    b.channel.send(a.id, { kind: 'proposal', proposal, block });
    await until('a drops b', () => a.host.peerCount === 0);
    assert.equal(a.got.length, 0);
  });
});
