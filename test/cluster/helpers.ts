// Shared fixtures of the cluster tests: a single-validator consensus runtime over any Application,
// and a loopback port nothing listens on.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { validatorKeyJson } from '@noded/config';
import { ConsensusRuntime, type ConsensusRuntimeOptions } from '@noded/consensus';
import { MemoryKV } from '@noded/storage';
import { type Application, EventBus, type FinalizeBlockResponse, silentLogger } from '@noded/types';
import { CHAIN_ID, GENESIS_TIME, PARAMS, TIMEOUTS, testKey, validatorsOf } from '../consensus/helpers.js';

export const VALIDATOR_KEY = testKey(0);

export interface CommittedBlock {
  height: number;
  txs: Uint8Array[];
  result: FinalizeBlockResponse;
}

/** A single validator's runtime options over `app`: fresh stores and a fresh home directory. */
export class Chain {
  readonly dir = mkdtempSync(join(tmpdir(), 'noded-cluster-'));
  readonly blocks: CommittedBlock[] = [];
  readonly opts: ConsensusRuntimeOptions;

  constructor(app: Application, over: Partial<ConsensusRuntimeOptions> = {}) {
    const keyFile = join(this.dir, 'priv_validator_key.json');
    writeFileSync(
      keyFile,
      validatorKeyJson({ seed: VALIDATOR_KEY.seed, publicKey: VALIDATOR_KEY.publicKey }),
    );
    const bus = new EventBus();
    bus.subscribe((e) => {
      if (e.kind === 'NewBlock')
        this.blocks.push({ height: e.block.header.height, txs: e.block.data.txs, result: e.result });
    });
    this.opts = {
      chainId: CHAIN_ID,
      genesis: {
        time: GENESIS_TIME,
        initialHeight: 1,
        validators: validatorsOf([VALIDATOR_KEY]),
        consensusParams: PARAMS,
        appState: { test: true },
      },
      timeouts: { ...TIMEOUTS, commit: 40 },
      createEmptyBlocks: true,
      doubleSignCheckHeight: 0,
      privValidator: { keyFile, stateFile: join(this.dir, 'priv_validator_state.json') },
      walDir: join(this.dir, 'cs.wal'),
      blockStore: new MemoryKV(),
      stateStore: new MemoryKV(),
      app,
      bus,
      logger: silentLogger,
      ...over,
    };
  }

  /** Creates a runtime on this chain's stores (optionally over another app), runs it to `height`. */
  async runTo(height: number, over: Partial<ConsensusRuntimeOptions> = {}): Promise<ConsensusRuntime> {
    const rt = await ConsensusRuntime.create({ ...this.opts, ...over });
    await rt.start();
    try {
      await rt.waitForHeight(height, 30_000);
    } finally {
      await rt.stop();
    }
    return rt;
  }

  remove(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** A 127.0.0.1 port that was free a moment ago and has no listener. */
export async function closedPort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  const port = (srv.address() as { port: number }).port;
  await new Promise<void>((resolve) => srv.close(() => resolve()));
  return port;
}
