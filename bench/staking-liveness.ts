// The cost of the validator pool's liveness pass (staking-slashing.ts) per block: empty blocks on
// RocksDB with N bonded validators, finalized and committed with a decided last commit listing all
// of them (one in ten missing) against the same blocks with an empty last commit.
//
// Usage: node dist/bench/staking-liveness.js [--validators 100] [--blocks 50]
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ed25519 } from '@noble/curves/ed25519.js';
import { DEFAULT_STAKING_PARAMS } from '../libs/config/index.js';
import { sha256 } from '../libs/crypto/index.js';
import { Executor } from '../libs/execution/index.js';
import { RocksKV } from '../libs/storage/index.js';
import { type CommitInfo, EventBus, type Validator } from '../libs/types/index.js';
import {
  addr,
  ETH,
  executorOptions,
  GENESIS_TIME,
  genesisState,
  key,
  produceBlock,
  TEST_CONSENSUS_PARAMS,
  type TestNode,
} from '../test/execution/helpers.js';
import { arg } from './exec-fixtures.js';

async function run(validators: number, blocks: number, withVotes: boolean): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), 'noded-liveness-bench-'));
  const kv = await RocksKV.open(join(dir, 'application.db'));
  try {
    const ex = await Executor.open(executorOptions(kv, new EventBus()));
    const pubs = Array.from({ length: validators }, (_, i) => {
      const seed = new Uint8Array(32);
      new DataView(seed.buffer).setUint32(0, i + 1);
      return ed25519.getPublicKey(seed);
    });
    const ops = pubs.map((_, i) => key(i + 1));
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
        ...genesisState([]),
        staking: {
          params: { ...DEFAULT_STAKING_PARAMS, max_validators: String(validators) },
          validators: pubs.map((p, i) => ({
            operator: addr(ops[i]!),
            pub_key: Buffer.from(p).toString('base64'),
            self_bond: (10n * ETH).toString(),
          })),
        },
      },
    });
    const n: TestNode = { ex, kv, bus: new EventBus(), events: [], height: 0, time: GENESIS_TIME };
    const commit: CommitInfo = {
      round: 0,
      votes: set.map((v, i) => ({ validatorAddress: v.address, power: 10n, signed: i % 10 !== 0 })),
    };
    const empty: CommitInfo = { round: 0, votes: [] };
    await produceBlock(n, [], undefined, { decidedLastCommit: withVotes ? commit : empty }); // warm-up
    const t0 = performance.now();
    for (let b = 0; b < blocks; b++)
      await produceBlock(n, [], undefined, { decidedLastCommit: withVotes ? commit : empty });
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
