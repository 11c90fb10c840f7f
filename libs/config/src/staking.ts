// genesis.json app_state.staking (issue 25, the validation stake): the parameters of the validator
// pool and the genesis validators' bonds. Integers are decimal strings like the rest of genesis;
// fractions are decimal strings ("0.05") read to 18 decimals, as the Cosmos SDK writes them.
import { checkEthAddress } from './address.js';
import { describeValue } from './problems.js';
import { parseDecimalString } from './values.js';

export interface StakingParamsJson {
  /** Least self-bond of a validator, base units (1 BTC = 10^18). */
  min_self_bond: string;
  /** Seconds an undelegation waits before withdrawUnbonded() pays it out. */
  unbonding_time: string;
  /** How many validators (the top by power) sign blocks. */
  max_validators: string;
  /** Base units of bonded BTC per unit of voting power. */
  power_reduction: string;
  slash_fraction_double_sign: string;
  slash_fraction_downtime: string;
  signed_blocks_window: string;
  min_signed_per_window: string;
  /** Seconds a validator jailed for downtime stays jailed. */
  downtime_jail_duration: string;
}

export interface GenesisStakeJson {
  /** The EVM address that operates the validator (its self-bond is its delegation). */
  operator: string;
  /** base64 ed25519 consensus key, the same text as in `validators[].pub_key.value`. */
  pub_key: string;
  /** Base units; the validator's genesis power is self_bond / power_reduction. */
  self_bond: string;
  moniker?: string;
  /** Commission in basis points (0..10000), a decimal string. */
  commission_bps?: string;
}

export interface StakingGenesisJson {
  params?: Partial<StakingParamsJson>;
  validators: GenesisStakeJson[];
}

/** Parameters as the node runs them; fractions in parts of 10^18. */
export interface StakingParams {
  minSelfBond: bigint;
  unbondingTime: bigint;
  maxValidators: bigint;
  powerReduction: bigint;
  slashFractionDoubleSign: bigint;
  slashFractionDowntime: bigint;
  signedBlocksWindow: bigint;
  minSignedPerWindow: bigint;
  downtimeJailDuration: bigint;
}

export interface GenesisStake {
  operator: string; // 0x, lower case
  pubKey: Uint8Array;
  selfBond: bigint;
  moniker: string;
  commissionBps: number;
}

export interface StakingGenesis {
  params: StakingParams;
  validators: GenesisStake[];
}

/** 10^18: the scale of fractions (1.0). */
export const FRACTION_ONE = 10n ** 18n;
/** The longest moniker (the Cosmos SDK's limit). */
export const MAX_MONIKER_BYTES = 70;
export const MAX_COMMISSION_BPS = 10_000;

/** The defaults of app_state.staking.params (docs/staking.md). */
export const DEFAULT_STAKING_PARAMS: StakingParamsJson = {
  min_self_bond: '1000000000000000000', // 1 BTC
  unbonding_time: '1209600', // 14 days
  max_validators: '100',
  power_reduction: '1000000000000000000', // 1 power per bonded BTC
  slash_fraction_double_sign: '0.05',
  slash_fraction_downtime: '0.0001',
  signed_blocks_window: '10000',
  min_signed_per_window: '0.5',
  downtime_jail_duration: '600',
};

const PARAM_KEYS = Object.keys(DEFAULT_STAKING_PARAMS) as Array<keyof StakingParamsJson>;
const FRACTION_KEYS = new Set<keyof StakingParamsJson>([
  'slash_fraction_double_sign',
  'slash_fraction_downtime',
  'min_signed_per_window',
]);

const FRACTION_RE = /^(0|1)(?:\.(\d{1,18}))?$/;

/** A fraction in [0, 1] with at most 18 decimals, as parts of 10^18; undefined if it is not one. */
export function parseFraction(text: string): bigint | undefined {
  const m = FRACTION_RE.exec(text);
  if (!m) return undefined;
  const v = BigInt(m[1]!) * FRACTION_ONE + BigInt((m[2] ?? '').padEnd(18, '0'));
  return v <= FRACTION_ONE ? v : undefined;
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const UINT256_MAX = (1n << 256n) - 1n;
const UINT64_MAX = (1n << 64n) - 1n;
/** The longest liveness window (blocks): its missed-blocks bitmap is 391 storage slots. */
export const MAX_SIGNED_BLOCKS_WINDOW = 100_000n;

/**
 * Checks app_state.staking against the consensus validators of the same genesis: every consensus
 * validator is bonded here exactly once, with power = self_bond / power_reduction.
 * `consensus` maps each valid `validators[].pub_key.value` to its index and power.
 */
export function validateStakingGenesis(
  staking: unknown,
  consensus: Map<string, { index: number; power: bigint }>,
  p: (key: string, message: string) => void,
): void {
  const base = 'app_state.staking';
  const got = (v: unknown) => `got ${describeValue(v)}`;
  if (!isObj(staking)) {
    p(base, `must be an object, ${got(staking)}`);
    return;
  }
  for (const k of Object.keys(staking))
    if (k !== 'params' && k !== 'validators') p(`${base}.${k}`, 'unknown key');
  const params = { ...DEFAULT_STAKING_PARAMS };
  let paramsOk = true;
  if (staking.params !== undefined) {
    if (!isObj(staking.params)) {
      p(`${base}.params`, `must be an object, ${got(staking.params)}`);
      paramsOk = false;
    } else {
      for (const [k, v] of Object.entries(staking.params)) {
        const key = `${base}.params.${k}`;
        if (!(PARAM_KEYS as string[]).includes(k)) {
          p(key, 'unknown key');
          continue;
        }
        const name = k as keyof StakingParamsJson;
        const why = paramProblem(name, v);
        if (why) {
          p(key, `${why}, ${got(v)}`);
          paramsOk = false;
        } else params[name] = v as string;
      }
    }
  }
  const powerReduction = BigInt(params.power_reduction);
  const minSelfBond = BigInt(params.min_self_bond);
  const maxValidators = BigInt(params.max_validators);

  const list = staking.validators;
  if (!Array.isArray(list)) {
    p(`${base}.validators`, `must be a list of the genesis validators' bonds, ${got(list)}`);
    return;
  }
  const operators = new Map<string, number>();
  const keys = new Map<string, number>();
  list.forEach((v, i) => {
    const key = `${base}.validators[${i}]`;
    if (!isObj(v)) {
      p(key, `must be an object, ${got(v)}`);
      return;
    }
    for (const k of Object.keys(v))
      if (!['operator', 'pub_key', 'self_bond', 'moniker', 'commission_bps'].includes(k))
        p(`${key}.${k}`, 'unknown key');
    const why = typeof v.operator === 'string' ? checkEthAddress(v.operator) : 'must be a string';
    if (why) p(`${key}.operator`, `${why}, ${got(v.operator)}`);
    else {
      const lower = (v.operator as string).toLowerCase();
      const dup = operators.get(lower);
      if (dup !== undefined) p(`${key}.operator`, `duplicate of ${base}.validators[${dup}].operator`);
      else operators.set(lower, i);
    }
    const bond = typeof v.self_bond === 'string' ? parseDecimalString(v.self_bond) : undefined;
    if (bond === undefined || bond > UINT256_MAX)
      p(`${key}.self_bond`, `must be a string holding an integer of base units, ${got(v.self_bond)}`);
    else if (paramsOk && bond < minSelfBond)
      p(`${key}.self_bond`, `must be >= params.min_self_bond (${minSelfBond}), ${got(v.self_bond)}`);
    if (
      v.moniker !== undefined &&
      (typeof v.moniker !== 'string' || byteLength(v.moniker) > MAX_MONIKER_BYTES)
    )
      p(`${key}.moniker`, `must be a string of at most ${MAX_MONIKER_BYTES} bytes, ${got(v.moniker)}`);
    if (v.commission_bps !== undefined) {
      const c = typeof v.commission_bps === 'string' ? parseDecimalString(v.commission_bps) : undefined;
      if (c === undefined || c > BigInt(MAX_COMMISSION_BPS))
        p(
          `${key}.commission_bps`,
          `must be a string holding an integer from 0 to ${MAX_COMMISSION_BPS}, ${got(v.commission_bps)}`,
        );
    }
    if (typeof v.pub_key !== 'string') {
      p(
        `${key}.pub_key`,
        `must be the base64 text of a key in validators[].pub_key.value, ${got(v.pub_key)}`,
      );
      return;
    }
    const dupKey = keys.get(v.pub_key);
    if (dupKey !== undefined) {
      p(`${key}.pub_key`, `duplicate of ${base}.validators[${dupKey}].pub_key`);
      return;
    }
    keys.set(v.pub_key, i);
    const c = consensus.get(v.pub_key);
    if (!c) {
      p(`${key}.pub_key`, `must be the key of one of the genesis validators, ${got(v.pub_key)}`);
      return;
    }
    if (bond !== undefined && paramsOk && bond / powerReduction !== c.power)
      p(
        `${key}.self_bond`,
        `gives power ${bond / powerReduction} (self_bond / params.power_reduction ${powerReduction}) but validators[${c.index}].power is ${c.power}`,
      );
  });
  for (const [pk, c] of consensus)
    if (!keys.has(pk))
      p(`${base}.validators`, `has no bond for validators[${c.index}] (every genesis validator is bonded)`);
  if (paramsOk && BigInt(list.length) > maxValidators)
    p(
      `${base}.validators`,
      `lists ${list.length} validators, more than params.max_validators (${maxValidators})`,
    );
}

function paramProblem(name: keyof StakingParamsJson, v: unknown): string | undefined {
  if (typeof v !== 'string')
    return FRACTION_KEYS.has(name)
      ? 'must be a decimal string such as "0.05"'
      : 'must be a string holding an integer';
  if (FRACTION_KEYS.has(name)) {
    const f = parseFraction(v);
    if (f === undefined) return 'must be a decimal fraction from "0" to "1" with at most 18 decimals';
    if (name === 'min_signed_per_window' && f === 0n) return 'must be > 0';
    return undefined;
  }
  const n = parseDecimalString(v);
  if (n === undefined) return 'must be a string holding an integer';
  switch (name) {
    case 'min_self_bond':
      return n > 0n && n <= UINT256_MAX ? undefined : 'must be > 0 (base units) and fit in a uint256';
    case 'power_reduction':
      return n > 0n && n <= UINT256_MAX ? undefined : 'must be > 0 (base units per unit of power)';
    case 'max_validators':
      return n >= 1n && n <= 10_000n ? undefined : 'must be >= 1 and <= 10000';
    case 'signed_blocks_window':
      // One bit a block in the pool's storage, cleared whole when a validator is jailed.
      return n >= 1n && n <= MAX_SIGNED_BLOCKS_WINDOW
        ? undefined
        : `must be >= 1 and <= ${MAX_SIGNED_BLOCKS_WINDOW}`;
    default:
      // unbonding_time, downtime_jail_duration: seconds.
      return n <= UINT64_MAX ? undefined : 'must be a number of seconds that fits in a uint64';
  }
}

function byteLength(s: string): number {
  return Buffer.byteLength(s, 'utf8');
}

/** The parameters of a validated params object, defaults filled in. */
export function stakingParamsOf(json: Partial<StakingParamsJson> | undefined): StakingParams {
  const v = { ...DEFAULT_STAKING_PARAMS, ...json };
  return {
    minSelfBond: BigInt(v.min_self_bond),
    unbondingTime: BigInt(v.unbonding_time),
    maxValidators: BigInt(v.max_validators),
    powerReduction: BigInt(v.power_reduction),
    slashFractionDoubleSign: parseFraction(v.slash_fraction_double_sign)!,
    slashFractionDowntime: parseFraction(v.slash_fraction_downtime)!,
    signedBlocksWindow: BigInt(v.signed_blocks_window),
    minSignedPerWindow: parseFraction(v.min_signed_per_window)!,
    downtimeJailDuration: BigInt(v.downtime_jail_duration),
  };
}

/** The runtime form of a validated app_state.staking. */
export function toStakingGenesis(json: StakingGenesisJson): StakingGenesis {
  return {
    params: stakingParamsOf(json.params),
    validators: json.validators.map((v) => ({
      operator: v.operator.toLowerCase(),
      pubKey: new Uint8Array(Buffer.from(v.pub_key, 'base64')),
      selfBond: BigInt(v.self_bond),
      moniker: v.moniker ?? '',
      commissionBps: Number(v.commission_bps ?? '0'),
    })),
  };
}
