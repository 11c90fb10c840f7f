// The light client's follow loop, one round at a time: establish the trust root (the chain's first
// block checked against the genesis validators, or a header given by height and hash), ask every
// source for its latest light block, verify the highest one from the latest trusted block
// (adjacent, or skipping with bisection), store what verified, and fill the heights skipped over
// by walking the hash chain backwards. Sources are opaque names (P2P peers); fetching is a port, so
// this runs the same against the network and against test doubles. No timers inside: the caller
// decides when rounds run.
import type { Logger, TimeNs, Validator } from '@noded/types';
import type { Verifier } from '../block.js';
import { bytesEqual, headerHash, hexUpper, validatorsHash } from '../hash.js';
import { ValidatorSet } from '../validators.js';
import type { LightStore } from './store.js';
import {
  type LightBlock,
  LightClientError,
  type LightErrorCode,
  type TrustOptions,
  verifyBackwards,
  verifySkipping,
  verifyTrustRoot,
} from './verify.js';

/** A light block as a source answers it, with the next height's validators when it has them. */
export interface FetchedLightBlock {
  block: LightBlock;
  nextValidators?: Validator[];
}

/** Where light blocks come from. */
export interface LightProvider {
  /** Sources to ask now (connected peers). */
  sources(): string[];
  /** The light block at `height` ('latest': the source's highest); rejects when it cannot answer. */
  fetch(source: string, height: number | 'latest'): Promise<FetchedLightBlock>;
  /** `source` sent data that fails verification in a way no honest node's data can. */
  report?(source: string, reason: string): void;
}

export type TrustRoot =
  /** The first block of the chain, signed by the genesis validators. */
  | { kind: 'genesis'; initialHeight: number; time: TimeNs; validators: Validator[] }
  /** An operator-given header (trust_height, trust_hash), e.g. from a block explorer. */
  | { kind: 'hash'; height: number; hash: Uint8Array };

export interface LightClientOptions {
  chainId: string;
  store: LightStore;
  root: TrustRoot;
  trustingPeriodNs: bigint;
  maxClockDriftNs: bigint;
  now: () => TimeNs;
  verify: Verifier;
  logger: Logger;
  /** Called after a new latest light block is stored. */
  onVerified?: (lb: LightBlock) => void;
  /** Heights filled backwards per round (default 32). */
  backfillPerRound?: number;
}

/** Codes only a faulty or malicious source can cause (not our clock, not an expired trust). */
const FAULTY: ReadonlySet<LightErrorCode> = new Set([
  'INVALID_LIGHT_BLOCK',
  'WRONG_CHAIN',
  'TIME',
  'VALIDATORS_HASH',
  'NEXT_VALIDATORS_HASH',
  'FORGED_SIGNATURE',
  'INSUFFICIENT_POWER',
  'HASH_MISMATCH',
]);

export function isFaultyLightBlock(err: unknown): boolean {
  return err instanceof LightClientError && FAULTY.has(err.code);
}

/** Outcome of one round, for logs and tests. */
export interface RoundResult {
  /** Height verified and stored as the latest this round, if any. */
  advancedTo?: number;
  /** Light blocks refused this round, with the source and the reason. */
  refused: Array<{ source: string; height: number; code: string; reason: string }>;
  /** Heights filled below verified headers this round. */
  backfilled: number;
}

export class LightClient {
  private readonly log: Logger;
  /** Ranges [lo, hi] of heights skipped over, to be filled from hi downwards. */
  private readonly gaps: Array<{ lo: number; hi: number }> = [];
  private best = 0;
  private rootProblem: string | undefined;

  constructor(private readonly opts: LightClientOptions) {
    this.log = opts.logger;
  }

  /** The highest height any source reported in the last round. */
  get highestSeen(): number {
    return this.best;
  }

  /** Why the trust root could not be established yet (undefined once it is). */
  get rootStatus(): string | undefined {
    return this.rootProblem;
  }

  private trust(): TrustOptions {
    return {
      trustingPeriodNs: this.opts.trustingPeriodNs,
      maxClockDriftNs: this.opts.maxClockDriftNs,
      now: this.opts.now(),
    };
  }

  private refuse(result: RoundResult, p: LightProvider, source: string, height: number, err: unknown): void {
    const code = err instanceof LightClientError ? err.code : 'ERROR';
    const reason = (err as Error).message;
    const at = err instanceof LightClientError ? err.height : height;
    result.refused.push({ source, height: at, code, reason });
    this.log.warn(
      { peer: source, height: at, code, reason, trusted: this.opts.store.latest },
      'light block refused; not advancing on it',
    );
    if (isFaultyLightBlock(err)) p.report?.(source, `light block at height ${at} refused: ${reason}`);
  }

  /** One round: root, follow the highest source, backfill. */
  async round(p: LightProvider): Promise<RoundResult> {
    const result: RoundResult = { refused: [], backfilled: 0 };
    const sources = p.sources();
    if (sources.length === 0) return result;
    if (!this.opts.store.latestBlock()) {
      await this.establishRoot(p, sources, result);
      if (!this.opts.store.latestBlock()) return result;
    }
    await this.follow(p, sources, result);
    await this.backfill(p, sources, result);
    return result;
  }

  private async establishRoot(p: LightProvider, sources: string[], result: RoundResult): Promise<void> {
    const root = this.opts.root;
    const height = root.kind === 'genesis' ? root.initialHeight : root.height;
    for (const source of sources) {
      let fetched: FetchedLightBlock;
      try {
        fetched = await p.fetch(source, height);
      } catch (err) {
        this.rootProblem = `no source has served the light block at height ${height} yet (last: ${(err as Error).message})`;
        this.log.debug({ peer: source, height, err: (err as Error).message }, 'trust root not available');
        continue;
      }
      try {
        const lb = fetched.block;
        if (root.kind === 'genesis') {
          const genesisSet = ValidatorSet.create(
            root.validators.map((v) => ({ pubKey: v.pubKey, votingPower: v.votingPower })),
          );
          verifyTrustRoot(
            this.opts.chainId,
            lb,
            { height, validatorsHash: genesisSet.hash() },
            this.trust(),
            this.opts.verify,
          );
          if (lb.header.time !== root.time) {
            throw new LightClientError(
              'TIME',
              height,
              `the first block's time ${lb.header.time} is not the genesis time ${root.time}`,
            );
          }
        } else {
          verifyTrustRoot(this.opts.chainId, lb, { height, hash: root.hash }, this.trust(), this.opts.verify);
        }
        await this.opts.store.save([lb], this.nextOf(fetched));
        this.rootProblem = undefined;
        this.log.info(
          { height, hash: hexUpper(headerHash(lb.header)), peer: source, root: root.kind },
          'light client trust root verified',
        );
        this.opts.onVerified?.(lb);
        return;
      } catch (err) {
        this.rootProblem = `the trust root at height ${height} was refused: ${(err as Error).message}`;
        this.refuse(result, p, source, height, err);
        if (err instanceof LightClientError && err.code === 'EXPIRED') return;
      }
    }
  }

  /** The next height's validator set, when the source sent one matching next_validators_hash. */
  private nextOf(f: FetchedLightBlock): { height: number; validators: Validator[] } | undefined {
    const nv = f.nextValidators;
    if (!nv || nv.length === 0) return undefined;
    if (!bytesEqual(validatorsHash(nv), f.block.header.nextValidatorsHash)) return undefined;
    return { height: f.block.header.height + 1, validators: nv };
  }

  private async follow(p: LightProvider, sources: string[], result: RoundResult): Promise<void> {
    const answers = await Promise.all(
      sources.map(async (source) => {
        try {
          return { source, fetched: await p.fetch(source, 'latest') };
        } catch (err) {
          this.log.debug({ peer: source, err: (err as Error).message }, 'no latest light block from peer');
          return undefined;
        }
      }),
    );
    const store = this.opts.store;
    const trusted = store.latestBlock()!;
    let best = 0;
    const candidates: Array<{ source: string; fetched: FetchedLightBlock }> = [];
    for (const a of answers) {
      if (!a) continue;
      const h = a.fetched.block.header.height;
      if (!Number.isSafeInteger(h)) continue;
      best = Math.max(best, h);
      if (h > trusted.header.height) candidates.push(a);
      else if (
        h === trusted.header.height &&
        !bytesEqual(headerHash(a.fetched.block.header), headerHash(trusted.header))
      ) {
        this.log.warn(
          {
            peer: a.source,
            height: h,
            theirs: hexUpper(headerHash(a.fetched.block.header)),
            ours: hexUpper(headerHash(trusted.header)),
          },
          'peer reports a different header at the trusted height (not verified; ignored)',
        );
      }
    }
    this.best = best;
    candidates.sort((a, b) => b.fetched.block.header.height - a.fetched.block.header.height);
    for (const c of candidates) {
      const target = c.fetched.block;
      try {
        const verified = await verifySkipping(
          this.opts.chainId,
          trusted,
          target,
          async (height) => (await p.fetch(c.source, height)).block,
          this.trust(),
          this.opts.verify,
        );
        await store.save(verified, this.nextOf(c.fetched));
        // Heights skipped over are filled later, from each verified header down.
        let below = trusted.header.height;
        for (const lb of verified) {
          if (lb.header.height > below + 1) this.gaps.push({ lo: below + 1, hi: lb.header.height - 1 });
          below = lb.header.height;
        }
        result.advancedTo = target.header.height;
        this.log.debug(
          { height: target.header.height, peer: c.source, steps: verified.length },
          'light block verified',
        );
        this.opts.onVerified?.(target);
        return;
      } catch (err) {
        this.refuse(result, p, c.source, target.header.height, err);
      }
    }
  }

  private async backfill(p: LightProvider, sources: string[], result: RoundResult): Promise<void> {
    let budget = this.opts.backfillPerRound ?? 32;
    const store = this.opts.store;
    while (budget > 0 && this.gaps.length > 0) {
      const gap = this.gaps[this.gaps.length - 1]!;
      const above = await store.signedHeader(gap.hi + 1);
      if (!above) {
        this.gaps.pop();
        continue;
      }
      let filled = false;
      for (const source of sources) {
        let lb: LightBlock;
        try {
          lb = (await p.fetch(source, gap.hi)).block;
        } catch {
          continue;
        }
        try {
          verifyBackwards(this.opts.chainId, above.header, lb, this.opts.verify);
        } catch (err) {
          this.refuse(result, p, source, gap.hi, err);
          continue;
        }
        await store.save([lb]);
        filled = true;
        break;
      }
      if (!filled) return;
      budget--;
      result.backfilled++;
      gap.hi--;
      if (gap.hi < gap.lo) this.gaps.pop();
    }
  }
}
