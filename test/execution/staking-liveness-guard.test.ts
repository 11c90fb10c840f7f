// The liveness guard of the validator pool's downtime jailing, through the executor on RocksDB: a
// validator over the missed-blocks limit that signs again is not jailed in a block where taking it
// out would leave 2/3 or less of the remaining voting power online (the chain would halt): the
// block carries a liveness_guard event, the node counts it, and the jail happens at the first block
// where it no longer halts the chain.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { ed25519 } from '@noble/curves/ed25519.js';
import { DEFAULT_STAKING_PARAMS } from '../../libs/config/index.js';
import { sha256 } from '../../libs/crypto/index.js';
import { Executor } from '../../libs/execution/index.js';
import { wouldHalt } from '../../libs/execution/src/precompiles/staking-slashing.js';
import { MemoryKV, RocksKV } from '../../libs/storage/index.js';
import {
  type CommitInfo,
  EventBus,
  type FinalizeBlockResponse,
  type Validator,
} from '../../libs/types/index.js';
import {
  addr,
  ETH,
  executorOptions,
  GENESIS_TIME,
  genesisState,
  key,
  produceBlock,
  TEST_CONSENSUS_PARAMS,
} from './helpers.js';

const consensusKey = (i: number) => ed25519.getPublicKey(new Uint8Array(32).fill(i + 1));
const consAddr = (i: number) => sha256(consensusKey(i)).slice(0, 20);
const ops = [key(1), key(2), key(3), key(4)]; // four validators of power 10
const keyHex = (i: number) => Buffer.from(consensusKey(i)).toString('hex');

/** Everybody of the four signs the last block except `absent`. */
const commitOf = (absent: number[]): CommitInfo => ({
  round: 0,
  votes: ops.map((_, i) => ({ validatorAddress: consAddr(i), power: 10n, signed: !absent.includes(i) })),
});
const eventsOf = (res: FinalizeBlockResponse, type: string) =>
  res.events
    .filter((e) => e.type === type)
    .map((e) => Object.fromEntries(e.attributes.map((a) => [a.key, a.value])));

describe('validator pool: the liveness guard', () => {
  it('the rule: only a jail of a validator that signed can lower the online share, and it is held back at <= 2/3', () => {
    assert.equal(wouldHalt(true, 10n, 30n, 40n), true, '20 of 30 left online: exactly 2/3 halts');
    assert.equal(wouldHalt(true, 10n, 40n, 40n), false, '30 of 30');
    assert.equal(wouldHalt(true, 1n, 30n, 40n), false, '29 of 39 > 2/3');
    assert.equal(wouldHalt(false, 10n, 30n, 40n), false, 'an offline validator: 30 of 30 after it');
    assert.equal(wouldHalt(false, 10n, 20n, 40n), false, 'never held back when offline');
  });

  it('holds back the jail of a validator that came back while another is offline, and jails it once that no longer halts', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'noded-guard-'));
    const kv = await RocksKV.open(dir);
    const ex = await Executor.open(executorOptions(kv, new EventBus()));
    try {
      const validators: Validator[] = ops.map((_, i) => ({
        address: consAddr(i),
        pubKey: consensusKey(i),
        votingPower: 10n,
        proposerPriority: 0n,
      }));
      await ex.initChain({
        chainId: 'chain-local',
        time: GENESIS_TIME,
        initialHeight: 1,
        validators,
        consensusParams: TEST_CONSENSUS_PARAMS,
        appState: {
          ...genesisState(ops.map((k) => ({ address: addr(k), balance: 100n * ETH }))),
          staking: {
            params: {
              ...DEFAULT_STAKING_PARAMS,
              signed_blocks_window: '10',
              min_signed_per_window: '0.5',
              slash_fraction_downtime: '0.01',
              downtime_jail_duration: '60',
            },
            validators: ops.map((k, i) => ({
              operator: addr(k),
              pub_key: Buffer.from(consensusKey(i)).toString('base64'),
              self_bond: (10n * ETH).toString(),
            })),
          },
        },
      });
      const n = {
        ex,
        kv: new MemoryKV(),
        bus: new EventBus(),
        events: [],
        height: 0,
        time: GENESIS_TIME,
      };
      await produceBlock(n, []);
      // Validator 1 misses heights 2..10 (9 > the 5 allowed of a window of 10) and signs from 11 on.
      for (let h = 2; h <= 12; h++) {
        const res = await produceBlock(n, [], undefined, { decidedLastCommit: commitOf(h <= 10 ? [1] : []) });
        assert.deepEqual(eventsOf(res, 'jail'), [], `height ${h}: not yet (start 2 + window 10)`);
      }
      // Height 13 would jail it (7 misses in the window) — but validator 2 is offline in this
      // commit: 30 of 40 signed, and without validator 1 only 20 of 30 would be online.
      const held = await produceBlock(n, [], undefined, { decidedLastCommit: commitOf([2]) });
      assert.equal(n.height, 13);
      assert.deepEqual(eventsOf(held, 'jail'), []);
      assert.deepEqual(eventsOf(held, 'slash'), []);
      assert.deepEqual(held.validatorUpdates, []);
      assert.deepEqual(eventsOf(held, 'liveness_guard'), [
        {
          operator: addr(ops[1]!),
          power: '10',
          online_power: '30',
          total_power: '40',
          missed_blocks: '7',
        },
      ]);
      assert.equal(ex.executionStats().heldBackJails, 1);

      // Height 14: everyone signs; the jail no longer halts anything and happens (6 misses left).
      const jailed = await produceBlock(n, [], undefined, { decidedLastCommit: commitOf([]) });
      assert.deepEqual(eventsOf(jailed, 'liveness_guard'), []);
      assert.deepEqual(
        eventsOf(jailed, 'jail').map((e) => e.operator),
        [addr(ops[1]!)],
      );
      assert.deepEqual(
        jailed.validatorUpdates.map((u) => ({ key: Buffer.from(u.pubKey).toString('hex'), power: u.power })),
        [{ key: keyHex(1), power: 0n }],
      );
      assert.equal(ex.executionStats().heldBackJails, 1);
    } finally {
      await ex.close();
      await kv.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
