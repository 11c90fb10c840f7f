// Events the node publishes after each step; the RPC subscriptions and metrics consume them.
import type { ExecTxResult, FinalizeBlockResponse, ValidatorUpdate } from './app.js';
import type { Block, BlockId, Proposal, Vote } from './consensus.js';
import type { EthBlock, EthLog, Hex } from './eth.js';

export type NodeEvent =
  | { kind: 'NewBlock'; block: Block; blockId: BlockId; result: FinalizeBlockResponse }
  | { kind: 'Tx'; height: number; index: number; tx: Uint8Array; result: ExecTxResult }
  | { kind: 'NewRound'; height: number; round: number; proposerAddress: Uint8Array; proposerIndex: number }
  | { kind: 'NewRoundStep'; height: number; round: number; step: string }
  | { kind: 'CompleteProposal'; height: number; round: number; blockId: BlockId; proposal: Proposal }
  | { kind: 'Vote'; vote: Vote }
  | { kind: 'ValidatorSetUpdates'; updates: ValidatorUpdate[] }
  /**
   * Emitted by execution after a block is committed: the Ethereum head and its logs. `accounts`,
   * when present, is every account the block changed, with its balance and nonce after the block
   * (an account the block deleted reads 0 and 0): a reader that held every other account's values
   * at the height before holds them all at this one.
   */
  | { kind: 'EthNewHead'; block: EthBlock; logs: EthLog[]; accounts?: HeadAccount[] }
  | { kind: 'EthPendingTx'; hash: Hex }
  /**
   * Dev chain evm_revert: every store is back at `height` and the next block is height + 1 again;
   * caches of later heights (eth_call results, block snapshots, filters) must be dropped.
   */
  | { kind: 'ChainRewound'; height: number };

/** An account's balance and nonce after a block; `address` is lowercase 0x-hex. */
export interface HeadAccount {
  address: Hex;
  balance: bigint;
  nonce: bigint;
}

export type NodeEventKind = NodeEvent['kind'];
export type Listener = (event: NodeEvent) => void;

/** What a subscriber reads beyond the events themselves. */
export interface SubscribeOptions {
  /**
   * It reads EthNewHead.accounts. Publishers build them only while such a subscriber is on the bus
   * (wantsHeadAccounts): a bus without one (the cluster's executor, a node without JSON-RPC) gets
   * its heads without them.
   */
  headAccounts?: boolean;
}

/** A synchronous in-process publish/subscribe bus. Listeners must not throw or block. */
export class EventBus {
  private readonly listeners = new Set<Listener>();
  private readonly accountReaders = new Set<Listener>();

  subscribe(listener: Listener, opts?: SubscribeOptions): () => void {
    this.listeners.add(listener);
    if (opts?.headAccounts) this.accountReaders.add(listener);
    return () => {
      this.accountReaders.delete(listener);
      this.listeners.delete(listener);
    };
  }

  /** Whether a subscriber reads EthNewHead.accounts (SubscribeOptions.headAccounts). */
  get wantsHeadAccounts(): boolean {
    return this.accountReaders.size > 0;
  }

  publish(event: NodeEvent): void {
    for (const listener of this.listeners) {
      try {
        listener(event);
      } catch {
        // A faulty subscriber must never stop consensus; subscribers log their own errors.
      }
    }
  }

  get size(): number {
    return this.listeners.size;
  }
}
