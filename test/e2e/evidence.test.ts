// A validator key copied onto two running nodes (the classic operator mistake of a hot standby
// that is not standing by): when that validator proposes, each copy prevotes its own proposal, so
// one key signs two different votes at one height and round. Another node sees both, forms
// duplicate-vote evidence, gossips it, and a proposer commits it in a block.
import assert from 'node:assert/strict';
import { copyFileSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { initialValidatorStateJson } from '@noded/config';
import { createNetwork, heightOf, NETWORK_UP_MS, type Network, rpc, waitFor, waitHeight } from './network.js';

describe('duplicate votes from one key on two nodes', { timeout: 420_000 }, () => {
  let net: Network;

  before(() => {
    net = createNetwork({ validators: 4, nonValidators: 1 });
    // node4 signs with node3's validator key, from a fresh double-sign guard.
    const from = net.nodes[3]!.home;
    const to = net.nodes[4]!.home;
    copyFileSync(
      join(from, 'config', 'priv_validator_key.json'),
      join(to, 'config', 'priv_validator_key.json'),
    );
    writeFileSync(join(to, 'data', 'priv_validator_state.json'), initialValidatorStateJson());
    for (const n of net.nodes) net.start(n.index);
  });
  after(async () => {
    await net?.cleanup();
  });

  it('commits duplicate-vote evidence naming the doubled validator, and the chain goes on', async () => {
    await waitHeight(net, [0, 1, 2], 2, NETWORK_UP_MS);
    const validators = (await rpc(net.nodes[0]!.cometUrl, '/validators')).validators as Array<{
      address: string;
      pub_key: { value: string };
    }>;
    const key = JSON.parse(
      readFileSync(join(net.nodes[3]!.home, 'config', 'priv_validator_key.json'), 'utf8'),
    ) as { address: string };
    assert.ok(validators.some((v) => v.address === key.address));

    let found: { height: number; evidence: Array<Record<string, unknown>> } | undefined;
    let scanned = 0;
    await waitFor(
      'a block with duplicate-vote evidence',
      async () => {
        const top = await heightOf(net.nodes[0]!);
        for (let h = scanned + 1; h <= top; h++) {
          const b = await rpc(net.nodes[0]!.cometUrl, `/block?height=${h}`);
          const ev = (
            (b.block as Record<string, unknown>).evidence as { evidence: Array<Record<string, unknown>> }
          ).evidence;
          scanned = h;
          if (ev.length > 0) {
            found = { height: h, evidence: ev };
            return true;
          }
        }
        return false;
      },
      150_000,
      net,
    );
    const ev = found!.evidence[0]!;
    assert.equal(ev.type, 'tendermint/DuplicateVoteEvidence');
    const value = ev.value as { vote_a: Record<string, unknown>; vote_b: Record<string, unknown> };
    assert.equal(value.vote_a.validator_address, key.address);
    assert.equal(value.vote_b.validator_address, key.address);
    assert.equal(value.vote_a.height, value.vote_b.height);
    assert.equal(value.vote_a.round, value.vote_b.round);
    assert.notDeepEqual(value.vote_a.block_id, value.vote_b.block_id);
    // The chain goes on past the evidence, and the honest validators agree on the block holding it.
    await waitHeight(net, [0, 1, 2], found!.height + 2, 60_000);
    const hashes = await Promise.all(
      [0, 1, 2].map(
        async (i) => (await rpc(net.nodes[i]!.cometUrl, `/block?height=${found!.height}`)).block_id,
      ),
    );
    assert.equal(new Set(hashes.map((h) => JSON.stringify(h))).size, 1);
  });
});
