// Rolling the dev chain back to an earlier height (evm_revert on chain-local; docs/json-rpc.md,
// "evm_snapshot / evm_revert"). Every store is brought back to the same height H, in this order:
//   1. the intent (data/rollback.json: H, the chain state at H, the application's point) is
//      written atomically; from here on the revert happens, whatever stops the process;
//   2. the application (application.db, tx_index.db), each in one synced batch;
//   3. the block store and the state store, each in one synced batch;
//   4. the WAL files (their heights are gone) and the double-sign guard, moved back to H;
//   5. the intent is removed.
// Each step is idempotent, so a node that stops anywhere after 1 finishes the same steps at its
// next start (finishRollback) before the handshake; one that stops before 1 never began.
import type { Logger } from '@noded/types';
import { type ChainState, loadChainState, type StoredChainState, storeChainState } from '../chainstate.js';
import { decodeTagged, encodeTagged } from '../codec/json.js';
import { ConsensusError } from '../errors.js';
import type { DurableFs } from '../fs.js';
import { FilePV } from '../privval.js';
import type { BlockStore, StateStore } from './stores.js';

/** What a revert brings the node back to: consensus' state at H and the application's opaque point. */
export interface RollbackTarget<A = unknown> {
  chainState: ChainState;
  app: A;
}

interface IntentFile {
  version: 1;
  height: number;
  /** Tagged JSON of the stored chain state. */
  chainState: string;
  app: unknown;
}

const dec = new TextDecoder();
const enc = new TextEncoder();

export async function writeRollbackIntent(fs: DurableFs, file: string, t: RollbackTarget): Promise<void> {
  const body: IntentFile = {
    version: 1,
    height: t.chainState.lastBlockHeight,
    chainState: dec.decode(encodeTagged(storeChainState(t.chainState))),
    app: t.app,
  };
  await fs.writeAtomic(file, enc.encode(`${JSON.stringify(body)}\n`));
}

/** The revert an earlier process began and did not finish, or undefined. */
export async function readRollbackIntent(fs: DurableFs, file: string): Promise<RollbackTarget | undefined> {
  const bytes = await fs.readFile(file);
  if (bytes === undefined) return undefined;
  let j: IntentFile;
  try {
    j = JSON.parse(dec.decode(bytes)) as IntentFile;
    if (j.version !== 1 || typeof j.chainState !== 'string' || !Number.isSafeInteger(j.height))
      throw new Error('unknown layout');
  } catch (err) {
    // writeAtomic never leaves half a file: anything else here is not ours to guess about.
    throw new ConsensusError(
      'ROLLBACK',
      `${file}: unreadable revert intent (${(err as Error).message}); the stores may be between two heights`,
    );
  }
  const chainState = loadChainState(decodeTagged<StoredChainState>(enc.encode(j.chainState)));
  if (chainState.lastBlockHeight !== j.height)
    throw new ConsensusError('ROLLBACK', `${file}: height ${j.height} disagrees with its chain state`);
  return { chainState, app: j.app };
}

/** Steps 3 and 4: the consensus stores, the WAL and the double-sign guard, back to the target height. */
export async function rollbackConsensusStores(
  parts: {
    fs: DurableFs;
    blockStore: BlockStore;
    stateStore: StateStore;
    walDir: string;
    privValidatorStateFile: string | undefined;
    /** The loaded signer, when there is one (its in-memory guard moves too). */
    privval?: FilePV | null;
  },
  chainState: ChainState,
): Promise<void> {
  const height = chainState.lastBlockHeight;
  await parts.blockStore.rollbackTo(height);
  await parts.stateStore.rollbackTo(chainState);
  for (const name of await parts.fs.list(parts.walDir)) {
    if (/^wal(\.\d+)?$/.test(name)) await parts.fs.remove(`${parts.walDir}/${name}`);
  }
  if (parts.privval) await parts.privval.rewindForDevChain(height);
  else if (parts.privValidatorStateFile)
    await FilePV.rewindStateFile(parts.fs, parts.privValidatorStateFile, height);
}

/**
 * At startup, before the handshake: finishes a revert that a stopped process began (an intent
 * file is there), through the same idempotent steps. Returns the height it finished at, or
 * undefined when there was nothing to finish.
 */
export async function finishRollback(parts: {
  fs: DurableFs;
  intentFile: string;
  blockStore: BlockStore;
  stateStore: StateStore;
  walDir: string;
  privValidatorStateFile: string | undefined;
  rollbackApp: (app: unknown, height: number) => Promise<void>;
  logger: Logger;
}): Promise<number | undefined> {
  const t = await readRollbackIntent(parts.fs, parts.intentFile);
  if (!t) return undefined;
  const height = t.chainState.lastBlockHeight;
  parts.logger.warn({ height }, 'finishing an interrupted evm_revert');
  await parts.rollbackApp(t.app, height);
  await rollbackConsensusStores(parts, t.chainState);
  await parts.fs.remove(parts.intentFile);
  return height;
}
