// evm_snapshot / evm_revert on chain-local (docs/json-rpc.md, "evm_snapshot / evm_revert"): the
// snapshots a session took, in memory (as Hardhat and anvil keep them), and the revert that brings
// every store of the node back to one of them (libs/consensus runtime/rollback.ts for the order
// and the crash safety). Snapshots do not survive a restart; an interrupted revert does complete.
// anvil_reset is a revert to the genesis point, the one snapshot kept on disk (data/dev-genesis.json),
// written before the chain's first block.
import {
  BlockStore,
  ConsensusError,
  type ConsensusRuntime,
  type DevSnapshot,
  finishRollback,
  NodeFs,
  type RollbackTarget,
  readRollbackIntent,
  StateStore,
  writeRollbackIntent,
} from '@noded/consensus';
import type { AppRollbackPoint, Executor } from '@noded/execution';
import type { TxIndexer } from '@noded/rpc';
import type { KVStore } from '@noded/storage';
import type { Logger } from '@noded/types';

/** The application's part of a revert: application.db, then tx_index.db. */
function rollbackApp(executor: Executor, indexer: TxIndexer) {
  return async (app: unknown, height: number): Promise<void> => {
    await executor.rollbackTo(asAppPoint(app, height));
    await indexer.rollbackTo(height);
  };
}

function asAppPoint(app: unknown, height: number): AppRollbackPoint {
  const p = app as Partial<AppRollbackPoint> | null;
  if (
    p === null ||
    typeof p !== 'object' ||
    p.height !== height ||
    typeof p.meta !== 'object' ||
    p.meta === null ||
    !Object.values(p.meta).every((v) => typeof v === 'string')
  )
    throw new Error(`revert intent: the application's point is not one of height ${height}`);
  return { height, meta: p.meta };
}

export class DevSnapshots {
  private readonly taken = new Map<bigint, DevSnapshot<AppRollbackPoint>>();
  /** Hardhat's first id is 0x1 and ids only grow, also across reverts. */
  private nextId = 1n;
  /** Snapshot and revert calls run one at a time, in arrival order. */
  private turn: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly deps: {
      consensus: ConsensusRuntime;
      executor: Executor;
      indexer: TxIndexer;
      intentFile: string;
      /** data/dev-genesis.json: the genesis point that anvil_reset goes back to. */
      genesisFile: string;
    },
  ) {}

  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.turn.then(fn, fn);
    this.turn = run.catch(() => {});
    return run;
  }

  /** evm_snapshot: the id of a snapshot of the chain as it is now (between blocks). */
  snapshot(): Promise<bigint> {
    return this.serial(async () => {
      const snap = await this.deps.consensus.devSnapshot(() => this.deps.executor.rollbackPoint());
      const id = this.nextId++;
      this.taken.set(id, snap);
      return id;
    });
  }

  /**
   * evm_revert: false for an id never given or already used; otherwise the chain is brought back
   * to that snapshot, which and every later snapshot are forgotten, and true.
   */
  revert(id: bigint): Promise<boolean> {
    return this.serial(async () => {
      // Refused on a node without dev controls even for an id it never gave (no false answer).
      const refusal = this.deps.consensus.devControlsRefusal();
      if (refusal !== null) throw new ConsensusError('DEV_CONTROLS_REFUSED', refusal);
      const snap = this.taken.get(id);
      if (snap === undefined) return false;
      for (const k of [...this.taken.keys()]) if (k >= id) this.taken.delete(k);
      const { executor, indexer } = this.deps;
      await this.deps.consensus.devRewind(snap, {
        intentFile: this.deps.intentFile,
        rollbackApp: rollbackApp(executor, indexer),
      });
      return true;
    });
  }

  /**
   * anvil_reset: the chain back at its genesis point (no blocks, the genesis state, the dev clock
   * at zero); every snapshot is forgotten. Refused, naming the file, on a home whose first block
   * was made before the genesis point was recorded.
   */
  reset(): Promise<void> {
    return this.serial(async () => {
      const refusal = this.deps.consensus.devControlsRefusal();
      if (refusal !== null) throw new ConsensusError('DEV_CONTROLS_REFUSED', refusal);
      const target = await readGenesisPoint(this.deps.genesisFile);
      const { executor, indexer } = this.deps;
      await this.deps.consensus.devRewind(
        { target, clockOffsetNs: 0n, nextBlockTimeNs: null, timeMoved: false },
        { intentFile: this.deps.intentFile, rollbackApp: rollbackApp(executor, indexer) },
      );
      this.taken.clear();
    });
  }
}

async function readGenesisPoint(file: string): Promise<RollbackTarget<AppRollbackPoint>> {
  const fs = new NodeFs();
  try {
    const t = await readRollbackIntent(fs, file);
    if (t === undefined)
      throw new ConsensusError(
        'ROLLBACK',
        `${file} is missing: this home made its first block before noded recorded a genesis point; \`noded tendermint unsafe-reset-all\` starts it over with one`,
      );
    return { chainState: t.chainState, app: asAppPoint(t.app, t.chainState.lastBlockHeight) };
  } finally {
    await fs.close();
  }
}

/**
 * Before a dev chain's first block: records its genesis point (the chain state after InitChain and
 * the application's point at that height) in `file`, atomically, for anvil_reset. Does nothing once
 * the chain has a block or the file exists. Returns whether it wrote the file.
 */
export async function recordGenesisPoint(parts: {
  consensus: ConsensusRuntime;
  executor: Executor;
  file: string;
}): Promise<boolean> {
  if (parts.consensus.blockStoreHeight() > 0) return false;
  const fs = new NodeFs();
  try {
    if ((await fs.readFile(parts.file)) !== undefined) return false;
    const target: RollbackTarget<AppRollbackPoint> = {
      chainState: parts.consensus.chainState(),
      app: await parts.executor.rollbackPoint(),
    };
    await writeRollbackIntent(fs, parts.file, target);
    return true;
  } finally {
    await fs.close();
  }
}

/**
 * At startup, before consensus opens its stores: finishes a revert that a stopped process began.
 * Refuses (throws) on a node without dev controls, whose double-sign guard never moves back.
 */
export async function finishInterruptedRevert(parts: {
  devControls: boolean;
  intentFile: string;
  blockStore: KVStore;
  stateStore: KVStore;
  walDir: string;
  privValidatorStateFile: string;
  executor: Executor;
  indexer: TxIndexer;
  logger: Logger;
}): Promise<number | undefined> {
  const fs = new NodeFs();
  try {
    if (!parts.devControls) {
      if ((await fs.readFile(parts.intentFile)) === undefined) return undefined;
      throw new Error(
        `${parts.intentFile}: a revert intent on a node without dev controls (only chain-local's single validator reverts); refusing to start`,
      );
    }
    return await finishRollback({
      fs,
      intentFile: parts.intentFile,
      blockStore: await BlockStore.open(parts.blockStore),
      stateStore: new StateStore(parts.stateStore),
      walDir: parts.walDir,
      privValidatorStateFile: parts.privValidatorStateFile,
      rollbackApp: rollbackApp(parts.executor, parts.indexer),
      logger: parts.logger,
    });
  } finally {
    await fs.close();
  }
}
