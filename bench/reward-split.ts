// The cost of the fee split (reward-state.ts) per block: empty blocks on RocksDB with N bonded
// validators and a block reward (so every block is split between them and a locker), against the
// same blocks without a block reward (nothing to split: only the checkpoint runs).
//
// Usage: node dist/bench/reward-split.js [--validators 100] [--blocks 50]

import type { Hex } from '@noded/types';
import { Interface } from 'ethers';
import { ETH, key, produceBlock, signTx } from '../test/execution/helpers.js';
import { REWARD, startStakingNet, stopStakingNet, wideConsensusKey } from '../test/execution/staking-net.js';
import { arg } from './exec-fixtures.js';

const stake = new Interface(['function lock(uint256) payable returns (uint256)']);

async function run(validators: number, blocks: number, blockReward: bigint): Promise<number> {
  const ops = Array.from({ length: validators }, (_, i) => key(i + 1));
  const locker = key(validators + 1);
  const n = await startStakingNet({
    operators: ops,
    pubKeys: ops.map((_, i) => wideConsensusKey(i)),
    commissionBps: ops.map(() => 500n),
    accounts: [locker],
    balance: 100n * ETH,
    params: { max_validators: String(validators) },
    appState: { rewards: { params: { block_reward: blockReward.toString() } } },
    rocksDirPrefix: 'noded-reward-bench-',
  });
  try {
    const unlock = n.time / 1_000_000_000n + 52n * 604_800n;
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
    return (performance.now() - t0) / blocks;
  } finally {
    await stopStakingNet(n);
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
