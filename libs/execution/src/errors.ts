// Typed errors of the executor. Each names the bad value and the rule it broke.

export type ExecutionErrorCode =
  | 'ARCHIVE_ON_PRUNED_STORE'
  | 'CHAIN_ID_MISMATCH'
  | 'BAD_GENESIS'
  | 'SUPPLY_MISMATCH'
  | 'HEIGHT_MISMATCH'
  | 'NO_PENDING_BLOCK'
  | 'BAD_OPTIONS'
  | 'NOT_INITIALIZED';

export class ExecutionError extends Error {
  constructor(
    readonly code: ExecutionErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'ExecutionError';
  }
}

/** Opening a store whose history a full node already pruned in archive mode. */
export class ArchiveOnPrunedStoreError extends ExecutionError {
  constructor(
    readonly location: string,
    readonly oldestState: number,
    readonly genesisHeight: number,
  ) {
    super(
      'ARCHIVE_ON_PRUNED_STORE',
      `cannot run as an archive node on ${location}: it was run as a full node and its state before height ${oldestState} is already pruned (archive needs every height from ${genesisHeight}); resync an archive node from genesis with a fresh home (noded init archive), or keep --mode full`,
    );
    this.name = 'ArchiveOnPrunedStoreError';
  }
}

/** The native coin's total supply changed other than by the accounted burns: the node halts. */
export class SupplyInvariantError extends ExecutionError {
  constructor(
    readonly height: number,
    readonly expectedDelta: bigint,
    readonly actualDelta: bigint,
  ) {
    super(
      'SUPPLY_MISMATCH',
      `total supply invariant violated at height ${height}: balances changed by ${actualDelta} base units but the accounted change is ${expectedDelta}; refusing to commit the block (the node halts to protect the chain)`,
    );
    this.name = 'SupplyInvariantError';
  }
}
