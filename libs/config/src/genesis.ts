// genesis.json as CometBFT writes it (seed §2.2), with this chain's app_state.
// All 64-bit integers are decimal strings, exactly as the seed shows.
import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import { ed25519 } from '@noble/curves/ed25519.js';
import { ed25519Address } from '@noded/crypto';
import type { ConsensusParams, TimeNs, Validator } from '@noded/types';
import { checkEthAddress } from './address.js';
import {
  CHAIN_IDS,
  type ChainId,
  EVM_CHAIN_IDS,
  MAX_BLOCK_SIZE_BYTES,
  MAX_TOTAL_VOTING_POWER,
  SEED_CONSENSUS_PARAMS,
} from './constants.js';
import { ConfigError, type ConfigProblem, describeValue } from './problems.js';
import {
  type RewardsGenesisJson,
  type RewardsParams,
  rewardsParamsOf,
  rewardsUpgradeHeightOf,
  validateRewardsGenesis,
} from './rewards.js';
import {
  type GenesisStakeJson,
  type StakingGenesis,
  type StakingGenesisJson,
  type StakingParamsJson,
  toStakingGenesis,
  validateStakingGenesis,
} from './staking.js';
import { parseDecimalString } from './values.js';

export interface GenesisValidatorJson {
  address: string; // upper-case hex
  pub_key: { type: 'tendermint/PubKeyEd25519'; value: string }; // base64
  power: string; // decimal
  name: string;
}

export interface GenesisAccountJson {
  address: string; // 0x-prefixed 20-byte hex
  balance: string; // decimal, base units (1 BTC = 10^18)
  nonce?: string;
  code?: string; // 0x hex
  storage?: Record<string, string>;
}

export interface AppStateJson {
  evm: {
    /** EVM chain id as a decimal string (31612 mainnet, 31611 testnet, 31337 local). */
    chain_id: string;
    accounts: GenesisAccountJson[];
  };
  /** The validator pool (issue 25); without it the validator set stays the genesis one. */
  staking?: StakingGenesisJson;
  /** The fee split (issue 25); with staking and without it, the defaults. */
  rewards?: RewardsGenesisJson;
  /** The bridge-out precompile's parameters (docs/bridge.md); without it bridge-out refuses. */
  bridge?: BridgeGenesisJson;
}

export interface BridgeGenesisJson {
  /** 0x address holding the pause switch. */
  admin: string;
  /** Start paused (default false). */
  paused?: boolean;
  /** Least amount of one bridgeOut, base units (decimal string). */
  min_amount: string;
  /** Length of an outflow window in seconds of block time (decimal string). */
  window_seconds: string;
  /** Most BTC bridged out per window, base units (decimal string). */
  max_outflow_per_window: string;
  /** Destination chain ids (uint8) bridgeOut accepts. */
  chains: number[];
  /**
   * Bridge in: the source-chain wrapped-BTC ERC-20 whose AssetsLocked deposits are minted as BTC
   * (deposits of any other token are skipped). Absent: nothing is minted.
   */
  btc_token_address?: string;
  /**
   * Bridge in: the most BTC minted per window (the windows of window_seconds), base units (decimal
   * string). Deposits beyond it wait, in order, for the next window. Absent: no limit.
   */
  max_inflow_per_window?: string;
  /**
   * Bridge in: the largest single deposit minted, base units (decimal string). A deposit of the
   * mapped token above it is processed without a mint (logged, counted) and the next ones go on.
   * At most max_inflow_per_window. Absent: no cap.
   */
  max_deposit_amount?: string;
}

/** Addresses of the chain's own precompiles, which genesis may not allocate (docs/btc-token.md, docs/bridge.md). */
export const RESERVED_GENESIS_ADDRESSES: Record<string, string> = {
  '0x7b7c000000000000000000000000000000000000': 'the BTC token precompile',
  '0x7b7c000000000000000000000000000000000012': 'the bridge-out precompile',
};

export interface GenesisJson {
  genesis_time: string; // ISO 8601 UTC
  chain_id: string;
  initial_height: string;
  consensus_params: {
    block: { max_bytes: string; max_gas: string };
    evidence: { max_age_num_blocks: string; max_age_duration: string; max_bytes: string };
    validator: { pub_key_types: string[] };
    version: { app: string };
    abci: { vote_extensions_enable_height: string };
  };
  validators: GenesisValidatorJson[];
  app_hash: string;
  app_state: AppStateJson;
}

/** Genesis as the node runs it: typed, bigint where CometBFT uses int64. */
export interface RuntimeGenesis {
  chainId: ChainId;
  time: TimeNs;
  initialHeight: number;
  /** In genesis order; proposerPriority 0n (the consensus engine sets priorities up). */
  validators: Validator[];
  /** Names of the validators, same order as `validators`. */
  validatorNames: string[];
  consensusParams: ConsensusParams;
  appHash: Uint8Array;
  appState: AppStateJson;
  evmChainId: bigint;
  /** app_state.staking, or undefined when the chain has no validator pool. */
  staking: StakingGenesis | undefined;
  /** The fee split (app_state.rewards or its defaults) of a chain with a pool; else undefined. */
  rewards: RewardsParams | undefined;
  /** app_state.rewards.upgrade_height: the first height whose fees are split (undefined: genesis). */
  rewardsUpgradeHeight: number | undefined;
}

/** A genesis file that passed validation: its exact text (served by /genesis), JSON and runtime form. */
export interface LoadedGenesis {
  file: string;
  text: string;
  json: GenesisJson;
  runtime: RuntimeGenesis;
}

const INT64_MAX = (1n << 63n) - 1n;

/** Defaults of the optional consensus_params (CometBFT v0.38 defaults). */
const DEFAULT_EVIDENCE_MAX_BYTES = '1048576';

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

const TIME_RE = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?Z$/;

/** Nanoseconds since the epoch of an ISO 8601 UTC timestamp, or undefined if it is not one. */
export function parseGenesisTime(text: string): TimeNs | undefined {
  const m = TIME_RE.exec(text);
  if (!m) return undefined;
  const [y, mo, d, h, mi, s] = m.slice(1, 7).map(Number) as [number, number, number, number, number, number];
  const ms = Date.UTC(y, mo - 1, d, h, mi, s);
  const back = new Date(ms);
  if (
    back.getUTCFullYear() !== y ||
    back.getUTCMonth() !== mo - 1 ||
    back.getUTCDate() !== d ||
    h > 23 ||
    mi > 59 ||
    s > 59
  ) {
    return undefined;
  }
  return BigInt(ms) * 1_000_000n + BigInt((m[7] ?? '').padEnd(9, '0'));
}

function decodeBase64Strict(text: string): Buffer | undefined {
  const buf = Buffer.from(text, 'base64');
  return buf.toString('base64') === text ? buf : undefined;
}

function isValidEd25519PublicKey(key: Uint8Array): boolean {
  try {
    ed25519.Point.fromBytes(key);
    return true;
  } catch {
    return false;
  }
}

/**
 * Checks a parsed genesis.json against the rules of the seed and CometBFT; every problem is listed.
 * `label` is the file name used in messages.
 */
export function validateGenesis(json: unknown, label = 'genesis.json'): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  const p = (key: string, message: string) => problems.push({ file: label, key, message });
  const got = (v: unknown) => `got ${describeValue(v)}`;
  if (!isObj(json)) {
    p('', `must be a JSON object, ${got(json)}`);
    return problems;
  }
  const unknownKeys = (o: Obj, path: string, known: string[]) => {
    for (const k of Object.keys(o)) if (!known.includes(k)) p(path ? `${path}.${k}` : k, 'unknown key');
  };
  /**
   * A string holding an integer; the rule text and test for its range. `width` is the integer type
   * CometBFT or the EVM reads it into (int64 unless said otherwise): a value past it is a problem,
   * not a silently different number.
   */
  const intString = (
    key: string,
    v: unknown,
    opts: {
      signed?: boolean;
      ok?: (n: bigint) => boolean;
      rule?: string;
      width?: 'int64' | 'uint64' | 'uint256';
    } = {},
  ): bigint | undefined => {
    if (v === undefined) {
      p(key, 'missing (must be a string holding an integer)');
      return undefined;
    }
    const n = typeof v === 'string' ? parseDecimalString(v, opts.signed) : undefined;
    if (n === undefined) {
      p(key, `must be a string holding an integer, ${got(v)}`);
      return undefined;
    }
    const width = opts.width ?? 'int64';
    const max = width === 'int64' ? INT64_MAX : width === 'uint64' ? (1n << 64n) - 1n : (1n << 256n) - 1n;
    if (n > max || n < -INT64_MAX - 1n) {
      p(key, `must fit in ${width === 'int64' ? 'an' : 'a'} ${width} (<= ${max}), ${got(v)}`);
      return undefined;
    }
    if (opts.ok && !opts.ok(n)) {
      p(key, `must be ${opts.rule}, ${got(v)}`);
      return undefined;
    }
    return n;
  };
  const table = (key: string, v: unknown): Obj | undefined => {
    if (isObj(v)) return v;
    p(key, v === undefined ? 'missing (must be an object)' : `must be an object, ${got(v)}`);
    return undefined;
  };

  unknownKeys(json, '', [
    'genesis_time',
    'chain_id',
    'initial_height',
    'consensus_params',
    'validators',
    'app_hash',
    'app_state',
  ]);

  const chainId = json.chain_id;
  const validChain = typeof chainId === 'string' && (CHAIN_IDS as readonly string[]).includes(chainId);
  if (!validChain)
    p('chain_id', `must be one of ${CHAIN_IDS.map((c) => `"${c}"`).join(', ')}, ${got(chainId)}`);

  if (typeof json.genesis_time !== 'string' || parseGenesisTime(json.genesis_time) === undefined) {
    p(
      'genesis_time',
      `must be an ISO 8601 UTC timestamp such as "2025-01-01T00:00:00Z", ${got(json.genesis_time)}`,
    );
  }
  if (json.initial_height !== undefined) {
    // Heights are JavaScript numbers in the node: at most 2^53 - 1.
    intString('initial_height', json.initial_height, {
      ok: (n) => n >= 1n && n <= BigInt(Number.MAX_SAFE_INTEGER),
      rule: `>= 1 and <= ${Number.MAX_SAFE_INTEGER}`,
    });
  }
  if (
    json.app_hash !== undefined &&
    (typeof json.app_hash !== 'string' || !/^(?:[0-9a-fA-F]{2})*$/.test(json.app_hash))
  ) {
    p('app_hash', `must be a hex string ("" before the first block), ${got(json.app_hash)}`);
  }

  // consensus_params (seed §2.2): block and evidence are required; the rest take CometBFT defaults.
  const cp = table('consensus_params', json.consensus_params);
  if (cp) {
    unknownKeys(cp, 'consensus_params', ['block', 'evidence', 'validator', 'version', 'abci']);
    let maxBytes: bigint | undefined;
    const block = table('consensus_params.block', cp.block);
    if (block) {
      unknownKeys(block, 'consensus_params.block', ['max_bytes', 'max_gas']);
      maxBytes = intString('consensus_params.block.max_bytes', block.max_bytes, {
        signed: true,
        ok: (n) => n > 0n && n <= MAX_BLOCK_SIZE_BYTES,
        rule: `> 0 and <= ${MAX_BLOCK_SIZE_BYTES}`,
      });
      intString('consensus_params.block.max_gas', block.max_gas, {
        signed: true,
        ok: (n) => n >= -1n,
        rule: '>= -1 (-1 = no cap)',
      });
    }
    const ev = table('consensus_params.evidence', cp.evidence);
    if (ev) {
      unknownKeys(ev, 'consensus_params.evidence', ['max_age_num_blocks', 'max_age_duration', 'max_bytes']);
      intString('consensus_params.evidence.max_age_num_blocks', ev.max_age_num_blocks, {
        signed: true,
        ok: (n) => n > 0n,
        rule: '> 0',
      });
      intString('consensus_params.evidence.max_age_duration', ev.max_age_duration, {
        signed: true,
        ok: (n) => n > 0n,
        rule: '> 0 (nanoseconds)',
      });
      if (ev.max_bytes !== undefined) {
        const limit = maxBytes ?? MAX_BLOCK_SIZE_BYTES;
        intString('consensus_params.evidence.max_bytes', ev.max_bytes, {
          signed: true,
          ok: (n) => n >= 0n && n <= limit,
          rule: `>= 0 and <= consensus_params.block.max_bytes (${limit})`,
        });
      }
    }
    if (cp.validator !== undefined) {
      const v = table('consensus_params.validator', cp.validator);
      if (v) {
        unknownKeys(v, 'consensus_params.validator', ['pub_key_types']);
        const types = v.pub_key_types;
        if (!Array.isArray(types) || types.length === 0 || types.some((t) => t !== 'ed25519')) {
          p(
            'consensus_params.validator.pub_key_types',
            `must be ["ed25519"] (the only key type supported), ${got(types)}`,
          );
        }
      }
    }
    if (cp.version !== undefined) {
      const v = table('consensus_params.version', cp.version);
      if (v) {
        unknownKeys(v, 'consensus_params.version', ['app']);
        if (v.app !== undefined) intString('consensus_params.version.app', v.app);
      }
    }
    if (cp.abci !== undefined) {
      const v = table('consensus_params.abci', cp.abci);
      if (v) {
        unknownKeys(v, 'consensus_params.abci', ['vote_extensions_enable_height']);
        if (v.vote_extensions_enable_height !== undefined)
          intString('consensus_params.abci.vote_extensions_enable_height', v.vote_extensions_enable_height);
      }
    }
  }

  // validators: at least one, each a valid ed25519 key with power > 0, no key twice.
  const vals = json.validators;
  /** Valid consensus keys (base64) with their index and power, for app_state.staking. */
  const consensusKeys = new Map<string, { index: number; power: bigint }>();
  if (!Array.isArray(vals) || vals.length === 0) {
    p('validators', `must list at least one validator, ${got(vals)}`);
  } else {
    const seen = new Map<string, number>();
    let total = 0n;
    vals.forEach((v, i) => {
      const key = `validators[${i}]`;
      if (!isObj(v)) {
        p(key, `must be an object, ${got(v)}`);
        return;
      }
      unknownKeys(v, key, ['address', 'pub_key', 'power', 'name']);
      const power = intString(`${key}.power`, v.power, { signed: true, ok: (n) => n > 0n, rule: '> 0' });
      if (power !== undefined) total += power;
      if (v.name !== undefined && typeof v.name !== 'string')
        p(`${key}.name`, `must be a string, ${got(v.name)}`);
      const pk = table(`${key}.pub_key`, v.pub_key);
      if (!pk) return;
      if (pk.type !== 'tendermint/PubKeyEd25519') {
        p(`${key}.pub_key.type`, `must be "tendermint/PubKeyEd25519", ${got(pk.type)}`);
        return;
      }
      const raw = typeof pk.value === 'string' ? decodeBase64Strict(pk.value) : undefined;
      if (!raw || !(raw.length === 32 && isValidEd25519PublicKey(raw))) {
        p(
          `${key}.pub_key.value`,
          `must be the base64 of a valid 32-byte ed25519 public key, ${got(pk.value)}`,
        );
        return;
      }
      const dup = seen.get(pk.value as string);
      if (dup !== undefined) p(`${key}.pub_key.value`, `duplicate of validators[${dup}].pub_key.value`);
      else {
        seen.set(pk.value as string, i);
        if (power !== undefined) consensusKeys.set(pk.value as string, { index: i, power });
      }
      const expected = Buffer.from(ed25519Address(raw)).toString('hex').toUpperCase();
      // Not String(v.address): a JSON object such as {"toString": 1} makes String() throw.
      if (
        v.address !== undefined &&
        v.address !== '' &&
        (typeof v.address !== 'string' || v.address.toUpperCase() !== expected)
      ) {
        p(
          `${key}.address`,
          `must be ${expected} (the first 20 bytes of sha256 of the key), ${got(v.address)}`,
        );
      }
    });
    if (total > MAX_TOTAL_VOTING_POWER) {
      p('validators', `total power must be <= ${MAX_TOTAL_VOTING_POWER}, got ${total}`);
    }
  }

  // app_state.evm: chain id of the network, accounts with valid, distinct addresses.
  const appState = table('app_state', json.app_state);
  // Other keys beside evm are left to later modules (docs/configuration.md).
  if (appState?.staking !== undefined) validateStakingGenesis(appState.staking, consensusKeys, p);
  if (appState?.rewards !== undefined)
    validateRewardsGenesis(appState.rewards, appState.staking !== undefined, p);
  const evm = appState ? table('app_state.evm', appState.evm) : undefined;
  if (evm) {
    unknownKeys(evm, 'app_state.evm', ['chain_id', 'accounts']);
    const evmId = intString('app_state.evm.chain_id', evm.chain_id, { ok: (n) => n > 0n, rule: '> 0' });
    if (evmId !== undefined && validChain) {
      const want = EVM_CHAIN_IDS[chainId as ChainId];
      if (evmId !== BigInt(want))
        p('app_state.evm.chain_id', `must be "${want}" for ${chainId}, ${got(evm.chain_id)}`);
    }
    if (!Array.isArray(evm.accounts)) {
      p('app_state.evm.accounts', `must be a list of accounts, ${got(evm.accounts)}`);
    } else {
      const seen = new Map<string, number>();
      evm.accounts.forEach((a, i) => {
        const key = `app_state.evm.accounts[${i}]`;
        if (!isObj(a)) {
          p(key, `must be an object, ${got(a)}`);
          return;
        }
        unknownKeys(a, key, ['address', 'balance', 'nonce', 'code', 'storage']);
        const why = typeof a.address === 'string' ? checkEthAddress(a.address) : 'must be a string';
        if (why) p(`${key}.address`, `${why}, ${got(a.address)}`);
        else {
          const lower = (a.address as string).toLowerCase();
          const reserved = RESERVED_GENESIS_ADDRESSES[lower];
          if (reserved) p(`${key}.address`, `is reserved for ${reserved}, ${got(a.address)}`);
          const dup = seen.get(lower);
          if (dup !== undefined)
            p(`${key}.address`, `duplicate of app_state.evm.accounts[${dup}], ${got(a.address)}`);
          else seen.set(lower, i);
        }
        intString(`${key}.balance`, a.balance, { width: 'uint256' });
        if (a.nonce !== undefined) intString(`${key}.nonce`, a.nonce, { width: 'uint64' });
        if (a.code !== undefined && (typeof a.code !== 'string' || !/^0x(?:[0-9a-fA-F]{2})*$/.test(a.code))) {
          p(`${key}.code`, `must be 0x-prefixed hex bytes, ${got(a.code)}`);
        }
        if (a.storage !== undefined) {
          const slot = /^0x[0-9a-fA-F]{1,64}$/;
          if (!isObj(a.storage))
            p(`${key}.storage`, `must be an object of 32-byte hex slots, ${got(a.storage)}`);
          else
            for (const [k, v] of Object.entries(a.storage)) {
              if (!slot.test(k) || typeof v !== 'string' || !slot.test(v))
                p(
                  `${key}.storage`,
                  `slot ${JSON.stringify(k)} must map 0x hex (<= 32 bytes) to 0x hex, ${got(v)}`,
                );
            }
        }
      });
    }
  }

  // app_state.bridge (optional): the bridge-out parameters every node must share.
  const bridge = appState?.bridge;
  if (appState && bridge !== undefined) {
    const b = table('app_state.bridge', bridge);
    if (b) {
      const key = 'app_state.bridge';
      unknownKeys(b, key, [
        'admin',
        'paused',
        'min_amount',
        'window_seconds',
        'max_outflow_per_window',
        'chains',
        'btc_token_address',
        'max_inflow_per_window',
        'max_deposit_amount',
      ]);
      if (b.btc_token_address !== undefined) {
        const bad =
          typeof b.btc_token_address === 'string' ? checkEthAddress(b.btc_token_address) : 'must be a string';
        if (bad) p(`${key}.btc_token_address`, `${bad}, ${got(b.btc_token_address)}`);
      }
      const why = typeof b.admin === 'string' ? checkEthAddress(b.admin) : 'must be a string';
      if (why) p(`${key}.admin`, `${why}, ${got(b.admin)}`);
      if (b.paused !== undefined && typeof b.paused !== 'boolean')
        p(`${key}.paused`, `must be true or false, ${got(b.paused)}`);
      const positive = { width: 'uint256' as const, ok: (n: bigint) => n > 0n, rule: '> 0' };
      const min = intString(`${key}.min_amount`, b.min_amount, positive);
      intString(`${key}.window_seconds`, b.window_seconds, positive);
      const max = intString(`${key}.max_outflow_per_window`, b.max_outflow_per_window, positive);
      const maxIn =
        b.max_inflow_per_window !== undefined
          ? intString(`${key}.max_inflow_per_window`, b.max_inflow_per_window, positive)
          : undefined;
      const cap =
        b.max_deposit_amount !== undefined
          ? intString(`${key}.max_deposit_amount`, b.max_deposit_amount, positive)
          : undefined;
      // A deposit the cap lets through but the window never could would block every later one.
      if (cap !== undefined && maxIn !== undefined && cap > maxIn)
        p(
          `${key}.max_deposit_amount`,
          `must be <= max_inflow_per_window (${maxIn}), ${got(b.max_deposit_amount)}`,
        );
      if (min !== undefined && max !== undefined && max < min) {
        p(
          `${key}.max_outflow_per_window`,
          `must be >= min_amount (${min}), ${got(b.max_outflow_per_window)}`,
        );
      }
      const chains = b.chains;
      if (!Array.isArray(chains) || chains.length === 0) {
        p(`${key}.chains`, `must be a non-empty list of destination chain ids 0-255, ${got(chains)}`);
      } else {
        chains.forEach((c, i) => {
          if (!Number.isInteger(c) || (c as number) < 0 || (c as number) > 255) {
            p(`${key}.chains[${i}]`, `must be an integer 0-255, ${got(c)}`);
          } else if (chains.indexOf(c) !== i)
            p(`${key}.chains[${i}]`, `duplicate of chains[${chains.indexOf(c)}], ${got(c)}`);
        });
      }
    }
  }
  return problems;
}

/** Parses genesis text; JSON syntax errors are problems too. */
export function parseGenesisText(
  text: string,
  label = 'genesis.json',
): { json?: GenesisJson; problems: ConfigProblem[] } {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    return { problems: [{ file: label, key: '', message: `not valid JSON: ${(err as Error).message}` }] };
  }
  const problems = validateGenesis(json, label);
  return problems.length === 0 ? { json: json as GenesisJson, problems } : { problems };
}

/** Converts a valid genesis to the runtime form; throws ConfigError if it is not valid. */
export function toRuntimeGenesis(json: GenesisJson): RuntimeGenesis {
  const problems = validateGenesis(json);
  if (problems.length > 0) throw new ConfigError(problems);
  const cp = json.consensus_params;
  const validators: Validator[] = json.validators.map((v) => {
    const pubKey = new Uint8Array(Buffer.from(v.pub_key.value, 'base64'));
    return {
      address: new Uint8Array(ed25519Address(pubKey)),
      pubKey,
      votingPower: BigInt(v.power),
      proposerPriority: 0n,
    };
  });
  return {
    chainId: json.chain_id as ChainId,
    time: parseGenesisTime(json.genesis_time)!,
    initialHeight: Number(json.initial_height ?? '1'),
    validators,
    validatorNames: json.validators.map((v) => v.name ?? ''),
    consensusParams: {
      block: { maxBytes: BigInt(cp.block.max_bytes), maxGas: BigInt(cp.block.max_gas) },
      evidence: {
        maxAgeNumBlocks: BigInt(cp.evidence.max_age_num_blocks),
        maxAgeDuration: BigInt(cp.evidence.max_age_duration),
        maxBytes: BigInt(cp.evidence.max_bytes ?? DEFAULT_EVIDENCE_MAX_BYTES),
      },
      validator: { pubKeyTypes: cp.validator?.pub_key_types ?? ['ed25519'] },
      version: { app: BigInt(cp.version?.app ?? '0') },
      abci: { voteExtensionsEnableHeight: BigInt(cp.abci?.vote_extensions_enable_height ?? '0') },
    },
    appHash: new Uint8Array(Buffer.from(json.app_hash ?? '', 'hex')),
    appState: json.app_state,
    evmChainId: BigInt(json.app_state.evm.chain_id),
    staking: json.app_state.staking ? toStakingGenesis(json.app_state.staking) : undefined,
    rewards: json.app_state.staking ? rewardsParamsOf(json.app_state.rewards) : undefined,
    rewardsUpgradeHeight: json.app_state.staking ? rewardsUpgradeHeightOf(json.app_state.rewards) : undefined,
  };
}

/** Reads, validates and converts a genesis file; problems name the file by its base name. */
export function loadGenesis(file: string): { genesis?: LoadedGenesis; problems: ConfigProblem[] } {
  const label = basename(file);
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const why = code === 'ENOENT' ? 'no such file' : (code ?? (err as Error).message);
    return { problems: [{ file: label, key: '', message: `cannot read ${file}: ${why}` }] };
  }
  const { json, problems } = parseGenesisText(text, label);
  if (!json) return { problems };
  return { genesis: { file, text, json, runtime: toRuntimeGenesis(json) }, problems: [] };
}

export interface GenesisValidatorInput {
  publicKey: Uint8Array;
  power: bigint;
  name: string;
  /** The EVM operator address; with `staking`, the validator is bonded with power * power_reduction. */
  operator?: string;
}

/** Builds a genesis with the seed's consensus_params (used by `init` for chain-local). */
export function makeGenesis(opts: {
  chainId: ChainId;
  genesisTime?: string;
  validators: GenesisValidatorInput[];
  accounts: Array<{ address: string; balance: bigint }>;
  /** Writes app_state.staking with these params, every validator bonded by its operator. */
  staking?: { params: StakingParamsJson };
}): GenesisJson {
  const staking = opts.staking;
  const stakes: GenesisStakeJson[] | undefined = staking
    ? opts.validators.map((v) => {
        if (!v.operator) throw new Error(`genesis validator ${v.name} has no operator address`);
        return {
          operator: v.operator,
          pub_key: Buffer.from(v.publicKey).toString('base64'),
          self_bond: (v.power * BigInt(staking.params.power_reduction)).toString(),
          moniker: v.name,
          commission_bps: '0',
        };
      })
    : undefined;
  return {
    genesis_time: opts.genesisTime ?? new Date().toISOString(),
    chain_id: opts.chainId,
    initial_height: '1',
    consensus_params: {
      block: { max_bytes: SEED_CONSENSUS_PARAMS.blockMaxBytes, max_gas: SEED_CONSENSUS_PARAMS.blockMaxGas },
      evidence: {
        max_age_num_blocks: SEED_CONSENSUS_PARAMS.evidenceMaxAgeNumBlocks,
        max_age_duration: SEED_CONSENSUS_PARAMS.evidenceMaxAgeDuration,
        max_bytes: DEFAULT_EVIDENCE_MAX_BYTES,
      },
      validator: { pub_key_types: ['ed25519'] },
      version: { app: '0' },
      abci: { vote_extensions_enable_height: '0' },
    },
    validators: opts.validators.map((v) => ({
      address: Buffer.from(ed25519Address(v.publicKey)).toString('hex').toUpperCase(),
      pub_key: { type: 'tendermint/PubKeyEd25519', value: Buffer.from(v.publicKey).toString('base64') },
      power: v.power.toString(),
      name: v.name,
    })),
    app_hash: '',
    app_state: {
      evm: {
        chain_id: String(EVM_CHAIN_IDS[opts.chainId]),
        accounts: opts.accounts.map((a) => ({ address: a.address, balance: a.balance.toString() })),
      },
      ...(staking && stakes ? { staking: { params: { ...staking.params }, validators: stakes } } : {}),
    },
  };
}

export function renderGenesisJson(json: GenesisJson): string {
  return `${JSON.stringify(json, null, 2)}\n`;
}
