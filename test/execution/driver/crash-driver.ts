// Child process of the crash-consistency test: a node's execution side fed the deterministic
// workload, resuming from whatever height application.db says was executed (the handshake replay
// consensus does), committing block after block until killed or done.
// Usage: node crash-driver.js <dir> <blocks> <seed> <code.json>
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { keccak256 } from '@noded/crypto';
import { Executor } from '@noded/execution';
import { RocksKV } from '@noded/storage';
import { EventBus } from '@noded/types';
import { executorOptions, GENESIS_TIME, genesisState, PROPOSER, TEST_CONSENSUS_PARAMS } from '../helpers.js';
import { workloadBlocks, workloadGenesis } from '../workload.js';

const [dir, blocksArg, seedArg, codePath] = process.argv.slice(2);
const code = JSON.parse(readFileSync(codePath, 'utf8'));
const count = Number(blocksArg);
const kv = await RocksKV.open(join(dir, 'application.db'));
const ex = await Executor.open(executorOptions(kv, new EventBus(), { keepRecent: 5 }));
const info = await ex.info();
const blocks = workloadBlocks(count, Number(seedArg), code, code.selectors, info.lastBlockHeight + 1);
if (info.lastBlockHeight === 0) {
  await ex.initChain({
    chainId: 'chain-local',
    time: GENESIS_TIME,
    initialHeight: 1,
    validators: [],
    consensusParams: TEST_CONSENSUS_PARAMS,
    appState: genesisState(workloadGenesis()),
  });
}
process.stdout.write(`start ${info.lastBlockHeight}\n`);
for (let h = info.lastBlockHeight + 1; h <= count; h++) {
  await ex.finalizeBlock({
    height: h,
    time: GENESIS_TIME + BigInt(h) * 1_000_000_000n,
    proposerAddress: PROPOSER,
    hash: keccak256(new TextEncoder().encode(`block-${h}`)),
    txs: blocks[h - 1],
    misbehavior: [],
    decidedLastCommit: { round: 0, votes: [] },
  });
  await ex.commit();
  process.stdout.write(`committed ${h}\n`);
}
await ex.close();
await kv.close();
process.stdout.write('done\n');
