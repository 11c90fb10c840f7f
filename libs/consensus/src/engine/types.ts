// Inputs, outputs and state of the pure consensus engine.
import type {
  Block,
  BlockId,
  Commit,
  DuplicateVoteEvidence,
  ExtendedCommitInfo,
  NodeEvent,
  Proposal,
  TimeNs,
  Validator,
  Vote,
} from '@noded/types';
import type { Verifier } from '../block.js';
import type { ChainState } from '../chainstate.js';
import type { HeightVoteSet, VoteSet } from '../voteset.js';

export type RoundStep =
  | 'NewHeight'
  | 'NewRound'
  | 'Propose'
  | 'Prevote'
  | 'PrevoteWait'
  | 'Precommit'
  | 'PrecommitWait'
  | 'Commit';

export const STEP_ORDER: Record<RoundStep, number> = {
  NewHeight: 1,
  NewRound: 2,
  Propose: 3,
  Prevote: 4,
  PrevoteWait: 5,
  Precommit: 6,
  PrecommitWait: 7,
  Commit: 8,
};

export type TimeoutStep = 'NewHeight' | 'Propose' | 'PrevoteWait' | 'PrecommitWait';

/** config.toml [consensus] timeouts, in milliseconds. */
export interface TimeoutConfig {
  propose: number;
  proposeDelta: number;
  prevote: number;
  prevoteDelta: number;
  precommit: number;
  precommitDelta: number;
  commit: number;
}

export interface EngineConfig {
  /** Address of this node's validator key; null for a node that never signs. */
  ownAddress: Uint8Array | null;
  timeouts: TimeoutConfig;
  /** false: at round 0 wait for `txsAvailable` unless a proof block is needed (app hash changed). */
  createEmptyBlocks: boolean;
  /** Signature check; must be pure (a memoizing cache is fine). */
  verify: Verifier;
}

/** Messages validators exchange. Blocks travel whole with their proposal. */
export type ConsensusMessage =
  | { kind: 'proposal'; proposal: Proposal; block: Block }
  | { kind: 'vote'; vote: Vote }
  /**
   * Where the sender is, with bit arrays ('x' present, '_' missing, validator order) of the prevotes and
   * precommits it holds for its round. Peers ahead send `commit` certificates; peers at the same height
   * send the votes (and the proposal) it lacks, so every vote a correct node holds reaches the others.
   */
  | {
      kind: 'status';
      height: number;
      round: number;
      step: RoundStep;
      prevotes?: string;
      precommits?: string;
      hasProposal?: boolean;
    }
  /**
   * A committed block and its commit, for a peer that fell behind (block sync). Where vote
   * extensions are on at the block's height, `extendedCommit` carries the precommits with their
   * signed extensions (the receiver's next proposal needs them) and is required.
   */
  | { kind: 'commit'; block: Block; commit: Commit; extendedCommit?: Commit }
  /** Pending duplicate-vote evidence, so every validator can include it. */
  | { kind: 'evidence'; evidence: DuplicateVoteEvidence };

export type EngineEvent =
  /** Begin (or resume after WAL replay): schedules the current step's timeout and pending requests. */
  | { kind: 'start'; now: TimeNs }
  | { kind: 'timeout'; height: number; round: number; step: TimeoutStep; now: TimeNs }
  | { kind: 'proposal'; proposal: Proposal; block: Block; now: TimeNs }
  | { kind: 'vote'; vote: Vote; now: TimeNs }
  | {
      kind: 'commitCert';
      block: Block;
      commit: Commit;
      extendedCommit?: Commit;
      /**
       * The driver knows height + 1 is committed (a peer stores it): this node will not propose
       * height + 1, so where extensions are on the block may come without its extended commit (a
       * store written before extended commits were kept per height has none to send).
       */
      nextHeightCommitted?: boolean;
      now: TimeNs;
    }
  | { kind: 'txsAvailable'; now: TimeNs }
  /** Answer to requestProposal. */
  | {
      kind: 'proposalTxs';
      height: number;
      round: number;
      txs: Uint8Array[];
      evidence: DuplicateVoteEvidence[];
      /**
       * The block time the proposer picked, used only where it may (proposerPicksTime, after the
       * last block's time); otherwise the BFT time of the request stands.
       */
      time?: TimeNs;
      now: TimeNs;
    }
  /** Answer to validateBlock (evidence checks and the application's processProposal). */
  | { kind: 'blockValidated'; height: number; blockHash: Uint8Array; valid: boolean; now: TimeNs }
  /** Answer to signProposal. */
  | { kind: 'ownProposal'; proposal: Proposal; block: Block; now: TimeNs }
  /** Answer to signVote. */
  | { kind: 'ownVote'; vote: Vote; now: TimeNs }
  /** Answer to decide: the block is stored and applied; `chain` is the state for the next height. */
  | { kind: 'committed'; chain: ChainState; now: TimeNs };

/** Events recorded in the WAL (everything that changes the round state, except start/committed). */
export type WalEntry = Exclude<EngineEvent, { kind: 'start' } | { kind: 'committed' }>;

export type EngineEffect =
  /** Append the input to the WAL; with sync, fsync before executing the next effect. */
  | { kind: 'wal'; entry: WalEntry; sync: boolean }
  | { kind: 'broadcast'; message: ConsensusMessage }
  | { kind: 'scheduleTimeout'; height: number; round: number; step: TimeoutStep; durationMs: number }
  /**
   * Sign through the double-sign guard, then feed back `ownVote`. With `extend` (a non-nil precommit
   * at a height with vote extensions) first ask the application for the extension (extendVote) and
   * sign it too.
   */
  | { kind: 'signVote'; vote: Vote; extend: boolean }
  /** Sign through the double-sign guard, then feed back `ownProposal`. */
  | { kind: 'signProposal'; proposal: Proposal; block: Block }
  /** Ask the application for transactions (and the runtime for evidence), then feed back `proposalTxs`. */
  | {
      kind: 'requestProposal';
      height: number;
      round: number;
      time: TimeNs;
      proposerAddress: Uint8Array;
      validatorCount: number;
      /** The last height's extended votes, when vote extensions were enabled there. */
      localLastCommit?: ExtendedCommitInfo;
    }
  /** Check evidence and ask the application (processProposal), then feed back `blockValidated`. */
  | { kind: 'validateBlock'; height: number; round: number; block: Block; blockId: BlockId }
  /**
   * Store, finalize and commit the block, then feed back `committed`. `extendedCommit` (heights with
   * vote extensions) is the commit with the extensions this node holds, stored for the next proposer.
   */
  | {
      kind: 'decide';
      height: number;
      round: number;
      block: Block;
      blockId: BlockId;
      commit: Commit;
      extendedCommit: Commit | null;
    }
  /** A validator signed two different votes for one height/round/type. */
  | { kind: 'conflictingVotes'; voteA: Vote; voteB: Vote }
  /** Publish on the node's event bus. */
  | { kind: 'publish'; event: NodeEvent }
  /**
   * The input failed a check no honest sender fails (a forged signature, a validator index or address
   * not in the set, a block that does not hash to its proposal's block ID); the runtime reports the peer.
   */
  | { kind: 'rejected'; reason: string };

export interface ProposalRecord {
  proposal: Proposal;
  block: Block;
  blockId: BlockId;
  key: string;
}

export type PendingProposal =
  | { round: number; stage: 'txs'; time: TimeNs; lastCommit: Commit | null }
  | { round: number; stage: 'sign'; proposal: Proposal; block: Block };

export interface EngineState {
  config: EngineConfig;
  chain: ChainState;
  height: number;
  round: number;
  step: RoundStep;
  /** When the current round started (event time). */
  startTime: TimeNs;
  ownIndex: number;
  votes: HeightVoteSet;
  /** Precommits for the previous height's block (become the next block's last_commit). */
  lastCommit: VoteSet | null;
  proposals: Map<number, ProposalRecord>;
  /** Blocks of this height seen in proposals or commits, by header hash (hex). */
  blocks: Map<string, { block: Block; blockId: BlockId }>;
  /** Validation outcome by block id key; 'pending' while the runtime checks it. */
  validity: Map<string, boolean | 'pending'>;
  lockedRound: number;
  /** The locked value (its proposal when known; after a crash only its id may be known). */
  lockedBlock: { key: string; blockId: BlockId } | null;
  validRound: number;
  validBlock: ProposalRecord | null;
  /** L36 of the paper already applied in the current round. */
  polkaSeen: boolean;
  triggeredPrecommitWait: boolean;
  commitRound: number;
  decided: boolean;
  /** The commit the decision was taken on (own tally or a received commit certificate). */
  decidedCommit: Commit | null;
  /**
   * Decided on a plain commit certificate although extensions are on at this height (the next
   * height was known committed): the height's precommits are kept without extensions.
   */
  decidedWithoutExtensions?: boolean;
  /**
   * When the height was decided (CometBFT's CommitTime): timeout_commit counts from here, so the
   * time spent executing and storing the block is part of the wait, not added to it.
   */
  commitTime: TimeNs | null;
  /** Votes asked of the signer and not yet returned (re-asked on start after a replay). */
  pendingVotes: Vote[];
  pendingProposal: PendingProposal | null;
  txsAvailable: boolean;
  proposers: Map<number, Validator>;
}
