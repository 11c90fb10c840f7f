// The NATS subjects of the cluster, named once (docs/cluster.md "NATS"): lowercase dot tokens from
// general to specific, `noded.<chain_id>.<stream>`, each beside its message type.

/** JetStream: one CommittedHeight (proto/noded/stream/v1) per height, Nats-Msg-Id = the height. */
export function blocksSubject(chainId: string): string {
  return `noded.${chainId}.blocks`;
}

/** Core NATS: one NewHead per height, after it is in the blocks stream. */
export function headsSubject(chainId: string): string {
  return `noded.${chainId}.heads`;
}

/** Core NATS: PendingTransactions, the hashes the executor's mempool admitted (batched, at most once). */
export function pendingTxsSubject(chainId: string): string {
  return `noded.${chainId}.txs.pending`;
}

/** The JetStream stream that holds blocksSubject (stream names take no dots). */
export function blocksStreamName(chainId: string): string {
  return `noded-${chainId}-blocks`;
}

/** A chain id usable in a subject token: no dots, wildcards or spaces. */
export function checkSubjectToken(chainId: string): string | undefined {
  return /^[A-Za-z0-9_-]+$/.test(chainId)
    ? undefined
    : `chain id ${JSON.stringify(chainId)} cannot be a NATS subject token (letters, digits, "-" and "_" only)`;
}
