// The cost of the fee split (reward-state.ts) per block: empty blocks on RocksDB with N bonded
// validators and a block reward (so every block is split between them and a locker), against the
// same blocks without a block reward (nothing to split: only the checkpoint runs).
//
// Usage: node dist/bench/reward-split.js [--validators 100] [--blocks 50]
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ed25519 } from '@noble/curves/ed25519.js';
import { Interface } from 'ethers';
import { DEFAULT_STAKING_PARAMS } from '../libs/config/index.js';
import { sha256 } from '../libs/crypto/index.js';
import { Executor } from '../libs/execution/index.js';
import { RocksKV } from '../libs/storage/index.js';
import { EventBus, type Hex, type Validator } from '../libs/types/index.js';
import {
  addr,
  ETH,
  executorOptions,
  GENESIS_TIME,
  genesisState,
  key,
  produceBlock,
  signTx,
  TEST_CONSENSUS_PARAMS,
  type TestNode,
} from '../test/execution/helpers.js';
import { arg } from './exec-fixtures.js';

const REWARD = '0x7b7c000000000000000000000000000000000016' as Hex;
const stake = new Interface(['function lock(uint256) payable returns (uint256)']);

async function run(validators: number, blocks: number, blockReward: bigint): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), 'noded-reward-bench-'));
  const kv = await RocksKV.open(join(dir, 'application.db'));
  try {
    const ex = await Executor.open(executorOptions(kv, new EventBus()));
    const pubs = Array.from({ length: validators }, (_, i) => {
      const seed = new Uint8Array(32);
      new DataView(seed.buffer).setUint32(0, i + 1);
      return ed25519.getPublicKey(seed);
    });
    const ops = pubs.map((_, i) => key(i + 1));
    const locker = key(validators + 1);
    const set: Validator[] = pubs.map((p) => ({
      address: sha256(p).slice(0, 20),
      pubKey: p,
      votingPower: 10n,
      proposerPriority: 0n,
    }));
    await ex.initChain({
      chainId: 'chain-local',
      time: GENESIS_TIME,
      initialHeight: 1,
      validators: set,
      consensusParams: TEST_CONSENSUS_PARAMS,
      appState: {
        ...genesisState([{ address: addr(locker), balance: 100n * ETH }]),
        staking: {
          params: { ...DEFAULT_STAKING_PARAMS, max_validators: String(validators) },
          validators: pubs.map((p, i) => ({
            operator: addr(ops[i]!),
            pub_key: Buffer.from(p).toString('base64'),
            self_bond: (10n * ETH).toString(),
            commission_bps: '500',
          })),
        },
        rewards: { params: { block_reward: blockReward.toString() } },
      },
    });
    const n: TestNode = { ex, kv, bus: new EventBus(), events: [], height: 0, time: GENESIS_TIME };
    const unlock = GENESIS_TIME / 1_000_000_000n + 52n * 604_800n;
    await produceBlock(n, [
      signTx(locker, {
        nonce: 0n,
        to: REWARD,
        value: ETH,
        data: stake.encodeFunctionData('lock', [unlock]) as Hex,
        gas: 200_000n,
      }),
    ]);
    const t0 = performance.now();
    for (let b = 0; b < blocks; b++) await produceBlock(n, []);
    const ms = (performance.now() - t0) / blocks;
    await ex.close();
    return ms;
  } finally {
    await kv.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

const validators = Number(arg('validators', '100'));
const blocks = Number(arg('blocks', '50'));
const without = await run(validators, blocks, 0n);
const split = await run(validators, blocks, ETH);
console.log(
  JSON.stringify({
    validators,
    blocks,
    msPerBlockNothingToSplit: Number(without.toFixed(2)),
    msPerBlockSplit: Number(split.toFixed(2)),
    splitMsPerBlock: Number((split - without).toFixed(2)),
  }),
);
