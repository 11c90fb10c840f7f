// Evidence pool of the runtime: conflicting votes reported by the engine become duplicate-vote
// evidence once the block of their height is committed (its time stamps the evidence); evidence is
// verified against the validator set of its height, proposed until a block includes it, included at
// most once, and dropped when expired (both age limits exceeded).
import type { DuplicateVoteEvidence, Logger, Vote } from '@noded/types';
import type { Verifier } from '../block.js';
import type { ChainState } from '../chainstate.js';
import { encodeEvidence } from '../codec/types.js';
import { ConsensusError } from '../errors.js';
import { isEvidenceExpired, makeDuplicateVoteEvidence, verifyDuplicateVoteEvidence } from '../evidence.js';
import { evidenceHash, hex } from '../hash.js';
import type { BlockStore, StateStore } from './stores.js';

export class EvidencePool {
  private readonly pending = new Map<string, { evidence: DuplicateVoteEvidence; hash: Uint8Array }>();
  private conflicts: Array<{ voteA: Vote; voteB: Vote }> = [];
  private readonly seenConflicts = new Set<string>();
  /** Evidence already committed, so gossip of it is dropped cheaply. */
  private readonly settled = new Set<string>();

  constructor(
    private readonly chainId: string,
    private readonly blockStore: BlockStore,
    private readonly stateStore: StateStore,
    private readonly verify: Verifier,
    private readonly logger: Logger,
  ) {}

  async load(): Promise<void> {
    for (const e of await this.stateStore.listPendingEvidence()) {
      const hash = evidenceHash(e);
      this.pending.set(hex(hash), { evidence: e, hash });
    }
  }

  /**
   * Conflicting votes seen by consensus; they become evidence once their height is committed (the
   * block time stamps the evidence): at once for a committed height, else at that height's commit.
   */
  async reportConflict(voteA: Vote, voteB: Vote, state: ChainState): Promise<void> {
    const k = `${voteA.height}/${voteA.round}/${voteA.type}/${hex(voteA.validatorAddress)}`;
    if (this.seenConflicts.has(k)) return;
    this.seenConflicts.add(k);
    if (this.seenConflicts.size > 10_000) this.seenConflicts.clear();
    if (voteA.height <= state.lastBlockHeight) await this.formEvidence(voteA, voteB, state);
    else this.conflicts.push({ voteA, voteB });
  }

  private async formEvidence(voteA: Vote, voteB: Vote, state: ChainState): Promise<void> {
    try {
      const meta = await this.blockStore.loadBlockMeta(voteA.height);
      const vals = await this.stateStore.loadValidators(voteA.height);
      if (!meta || !vals) return;
      await this.add(makeDuplicateVoteEvidence(voteA, voteB, meta.header.time, vals), state);
    } catch (err) {
      this.logger.warn({ err: (err as Error).message }, 'conflicting votes did not make valid evidence');
    }
  }

  /** Throws INVALID_EVIDENCE unless `e` may go into a block on top of `state`. */
  async check(e: DuplicateVoteEvidence, state: ChainState): Promise<void> {
    const h = e.voteA.height;
    if (h > state.lastBlockHeight)
      throw new ConsensusError(
        'INVALID_EVIDENCE',
        `evidence from height ${h} is from the future (last block ${state.lastBlockHeight})`,
      );
    if (
      isEvidenceExpired(state.consensusParams, state.lastBlockHeight, state.lastBlockTime, h, e.timestamp)
    ) {
      throw new ConsensusError(
        'INVALID_EVIDENCE',
        `evidence from height ${h} is expired: older than ${state.consensusParams.evidence.maxAgeNumBlocks} blocks and ${state.consensusParams.evidence.maxAgeDuration} ns`,
      );
    }
    const meta = await this.blockStore.loadBlockMeta(h);
    if (!meta)
      throw new ConsensusError(
        'INVALID_EVIDENCE',
        `no block stored at evidence height ${h} to check its time`,
      );
    const vals = await this.stateStore.loadValidators(h);
    if (!vals)
      throw new ConsensusError('INVALID_EVIDENCE', `no validator set stored for evidence height ${h}`);
    verifyDuplicateVoteEvidence(this.chainId, e, vals, meta.header.time, this.verify);
    if (await this.stateStore.isEvidenceCommitted(evidenceHash(e)))
      throw new ConsensusError(
        'INVALID_EVIDENCE',
        `evidence ${hex(evidenceHash(e)).toUpperCase()} was already committed`,
      );
  }

  /** Verifies and adds evidence (from the RPC or consensus); returns its hash. */
  async add(e: DuplicateVoteEvidence, state: ChainState): Promise<Uint8Array> {
    const hash = evidenceHash(e);
    const k = hex(hash);
    if (this.pending.has(k)) return hash;
    if (this.settled.has(k))
      throw new ConsensusError('INVALID_EVIDENCE', `evidence ${k.toUpperCase()} was already committed`);
    await this.check(e, state);
    this.pending.set(hex(hash), { evidence: e, hash });
    await this.stateStore.savePendingEvidence(hash, e);
    this.logger.info(
      { height: e.voteA.height, validator: hex(e.voteA.validatorAddress).toUpperCase() },
      'evidence of a duplicate vote added',
    );
    return hash;
  }

  /** Why the evidence of a proposed block is unacceptable, or null. */
  async checkBlock(evidence: DuplicateVoteEvidence[], state: ChainState): Promise<string | null> {
    const seen = new Set<string>();
    for (const e of evidence) {
      const k = hex(evidenceHash(e));
      if (seen.has(k)) return `evidence ${k.toUpperCase()} appears twice in the block`;
      seen.add(k);
      try {
        await this.check(e, state);
      } catch (err) {
        return (err as Error).message;
      }
    }
    return null;
  }

  /** Pending evidence to propose, up to maxBytes of encoding. */
  forProposal(maxBytes: bigint): DuplicateVoteEvidence[] {
    const out: DuplicateVoteEvidence[] = [];
    let size = 0n;
    for (const { evidence } of this.pending.values()) {
      const n = BigInt(encodeEvidence(evidence).length);
      if (size + n > maxBytes) break;
      size += n;
      out.push(evidence);
    }
    return out;
  }

  private settle(k: string): void {
    if (this.settled.size > 10_000) this.settled.clear();
    this.settled.add(k);
  }

  pendingCount(): number {
    return this.pending.size;
  }

  /** After a block is committed: mark its evidence, turn buffered conflicts into evidence, expire. */
  async update(evidenceInBlock: DuplicateVoteEvidence[], height: number, state: ChainState): Promise<void> {
    const committed = evidenceInBlock.map(evidenceHash);
    for (const h of committed) {
      this.pending.delete(hex(h));
      this.settle(hex(h));
    }
    const expired: Uint8Array[] = [];
    for (const [k, p] of this.pending) {
      const evH = p.evidence.voteA.height;
      if (
        isEvidenceExpired(
          state.consensusParams,
          state.lastBlockHeight,
          state.lastBlockTime,
          evH,
          p.evidence.timestamp,
        )
      ) {
        expired.push(p.hash);
        this.pending.delete(k);
      }
    }
    await this.stateStore.commitEvidence(committed, height, expired);
    const ready = this.conflicts.filter((c) => c.voteA.height <= height);
    this.conflicts = this.conflicts.filter((c) => c.voteA.height > height);
    for (const c of ready) await this.formEvidence(c.voteA, c.voteB, state);
  }
}
