// genesis.json app_state.rewards (issue 25, the reward stake): how each block's fees (and an
// optional per-block reward) are split between the validators and the reward stakers. Fractions
// are decimal strings read to 18 decimals, integers decimal strings, as in app_state.staking.
import { describeValue } from './problems.js';
import { parseFraction } from './staking.js';
import { parseDecimalString } from './values.js';

export interface RewardsParamsJson {
  /** Part of each block's rewards that goes to the validators by power ("0".."1"). */
  validator_share: string;
  /** Base units minted every block and split with the fees (0: only fees are split). */
  block_reward: string;
}

export interface RewardsGenesisJson {
  params?: Partial<RewardsParamsJson>;
  /**
   * The first height whose fees are split (docs/staking.md "Switching an existing chain"): before
   * it the proposer keeps them and the reward account does not exist. Absent: from genesis.
   */
  upgrade_height?: string;
}

/** Parameters as the node runs them; validator_share in parts of 10^18. */
export interface RewardsParams {
  validatorShare: bigint;
  blockReward: bigint;
}

/** The defaults of app_state.rewards.params (docs/staking.md). */
export const DEFAULT_REWARDS_PARAMS: RewardsParamsJson = {
  validator_share: '0.5',
  block_reward: '0',
};

/**
 * The largest block_reward: 10^24 base units (one million BTC) a block, so that a century of
 * one-second blocks stays far below what a uint256 supply slot holds.
 */
export const MAX_BLOCK_REWARD = 10n ** 24n;

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * Checks app_state.rewards. It needs app_state.staking (the validators' part is paid through the
 * validator pool); a chain with a pool and no app_state.rewards runs the defaults.
 */
export function validateRewardsGenesis(
  rewards: unknown,
  hasStaking: boolean,
  p: (key: string, message: string) => void,
): void {
  const base = 'app_state.rewards';
  const got = (v: unknown) => `got ${describeValue(v)}`;
  if (!isObj(rewards)) {
    p(base, `must be an object, ${got(rewards)}`);
    return;
  }
  if (!hasStaking) p(base, 'needs app_state.staking (the validators are paid through the validator pool)');
  for (const k of Object.keys(rewards))
    if (k !== 'params' && k !== 'upgrade_height') p(`${base}.${k}`, 'unknown key');
  if (rewards.upgrade_height !== undefined) {
    const v = rewards.upgrade_height;
    const n = typeof v === 'string' ? parseDecimalString(v) : undefined;
    if (n === undefined || n < 1n || n > BigInt(Number.MAX_SAFE_INTEGER))
      p(`${base}.upgrade_height`, `must be a string holding a block height from 1 to 2^53 − 1, ${got(v)}`);
  }
  if (rewards.params === undefined) return;
  if (!isObj(rewards.params)) {
    p(`${base}.params`, `must be an object, ${got(rewards.params)}`);
    return;
  }
  for (const [k, v] of Object.entries(rewards.params)) {
    const key = `${base}.params.${k}`;
    if (k === 'validator_share') {
      if (typeof v !== 'string' || parseFraction(v) === undefined)
        p(key, `must be a decimal fraction from "0" to "1" with at most 18 decimals, ${got(v)}`);
    } else if (k === 'block_reward') {
      const n = typeof v === 'string' ? parseDecimalString(v) : undefined;
      if (n === undefined) p(key, `must be a string holding an integer (base units), ${got(v)}`);
      else if (n > MAX_BLOCK_REWARD) p(key, `must be <= ${MAX_BLOCK_REWARD} base units, ${got(v)}`);
    } else p(key, 'unknown key');
  }
}

/** The upgrade height of a validated app_state.rewards, or undefined (the split runs from genesis). */
export function rewardsUpgradeHeightOf(json: RewardsGenesisJson | undefined): number | undefined {
  return json?.upgrade_height === undefined ? undefined : Number(json.upgrade_height);
}

/** The parameters of a validated app_state.rewards (or of none: the defaults). */
export function rewardsParamsOf(json: RewardsGenesisJson | undefined): RewardsParams {
  const v = { ...DEFAULT_REWARDS_PARAMS, ...json?.params };
  return { validatorShare: parseFraction(v.validator_share)!, blockReward: BigInt(v.block_reward) };
}
