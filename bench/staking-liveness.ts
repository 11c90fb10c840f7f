// The cost of the validator pool's liveness pass (staking-slashing.ts) per block: empty blocks on
// RocksDB with N bonded validators, finalized and committed with a decided last commit listing all
// of them (one in ten missing) against the same blocks with an empty last commit.
//
// Usage: node dist/bench/staking-liveness.js [--validators 100] [--blocks 50]
import { sha256 } from '@noded/crypto';
import type { CommitInfo } from '@noded/types';
import { key, produceBlock } from '../test/execution/helpers.js';
import { startStakingNet, stopStakingNet, wideConsensusKey } from '../test/execution/staking-net.js';
import { arg } from './exec-fixtures.js';

async function run(validators: number, blocks: number, withVotes: boolean): Promise<number> {
  const pubs = Array.from({ length: validators }, (_, i) => wideConsensusKey(i));
  const n = await startStakingNet({
    operators: pubs.map((_, i) => key(i + 1)),
    pubKeys: pubs,
    accounts: [],
    balance: 0n,
    params: { max_validators: String(validators) },
    rocksDirPrefix: 'noded-liveness-bench-',
  });
  try {
    const commit: CommitInfo = {
      round: 0,
      votes: pubs.map((p, i) => ({
        validatorAddress: sha256(p).slice(0, 20),
        power: 10n,
        signed: i % 10 !== 0,
      })),
    };
    const empty: CommitInfo = { round: 0, votes: [] };
    await produceBlock(n, [], undefined, { decidedLastCommit: withVotes ? commit : empty }); // warm-up
    const t0 = performance.now();
    for (let b = 0; b < blocks; b++)
      await produceBlock(n, [], undefined, { decidedLastCommit: withVotes ? commit : empty });
    return (performance.now() - t0) / blocks;
  } finally {
    await stopStakingNet(n);
  }
}

const validators = Number(arg('validators', '100'));
const blocks = Number(arg('blocks', '50'));
const without = await run(validators, blocks, false);
const withVotes = await run(validators, blocks, true);
console.log(
  JSON.stringify({
    validators,
    blocks,
    msPerBlockWithoutLastCommit: Number(without.toFixed(2)),
    msPerBlockWithLastCommit: Number(withVotes.toFixed(2)),
    livenessMsPerBlock: Number((withVotes - without).toFixed(2)),
  }),
);
