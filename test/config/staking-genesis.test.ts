// genesis.json app_state.staking: defaults, the bonds tied to the consensus validators, and a precise
// message for each bad value (issue 25).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  BASE_UNITS_PER_BTC,
  DEFAULT_STAKING_PARAMS,
  formatProblem,
  type GenesisJson,
  makeGenesis,
  parseFraction,
  toRuntimeGenesis,
  validateGenesis,
} from '@noded/config';
import { ed25519Generate } from '@noded/crypto';

const keys = [1, 2].map((i) => ed25519Generate(new Uint8Array(32).fill(i)));
const OPS = ['0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266', '0x70997970C51812dc3A010C7d01b50e0d17dc79C8'];

function bonded(): GenesisJson {
  return makeGenesis({
    chainId: 'chain-local',
    genesisTime: '2025-01-02T03:04:05Z',
    validators: keys.map((k, i) => ({ publicKey: k.publicKey, power: 10n, name: `v${i}`, operator: OPS[i] })),
    accounts: [{ address: OPS[0]!, balance: 10000n * BASE_UNITS_PER_BTC }],
    staking: { params: { ...DEFAULT_STAKING_PARAMS } },
  });
}

const edit = (
  f: (
    s: Record<string, unknown> & {
      params: Record<string, unknown>;
      validators: Array<Record<string, unknown>>;
    },
  ) => void,
) => {
  const g = bonded();
  f(g.app_state.staking as never);
  return validateGenesis(g).map(formatProblem);
};

describe('genesis app_state.staking', () => {
  it('a generated bonded genesis is valid; every validator is bonded power * power_reduction by its operator', () => {
    const g = bonded();
    assert.deepEqual(validateGenesis(g), []);
    const s = toRuntimeGenesis(g).staking!;
    assert.equal(s.params.powerReduction, BASE_UNITS_PER_BTC);
    assert.equal(s.params.minSelfBond, BASE_UNITS_PER_BTC);
    assert.equal(s.params.slashFractionDoubleSign, 5n * 10n ** 16n);
    assert.equal(s.params.minSignedPerWindow, 5n * 10n ** 17n);
    assert.deepEqual(
      s.validators.map((v) => [v.operator, v.selfBond, v.moniker]),
      [
        [OPS[0]!.toLowerCase(), 10n * BASE_UNITS_PER_BTC, 'v0'],
        [OPS[1]!.toLowerCase(), 10n * BASE_UNITS_PER_BTC, 'v1'],
      ],
    );
  });

  it('params take their defaults when left out', () => {
    const g = bonded();
    g.app_state.staking!.params = { unbonding_time: '60' };
    assert.deepEqual(validateGenesis(g), []);
    const p = toRuntimeGenesis(g).staking!.params;
    assert.equal(p.unbondingTime, 60n);
    assert.equal(p.maxValidators, 100n);
  });

  it('a genesis without app_state.staking stays valid (a fixed validator set)', () => {
    const g = bonded();
    delete g.app_state.staking;
    assert.deepEqual(validateGenesis(g), []);
    assert.equal(toRuntimeGenesis(g).staking, undefined);
  });

  it('names each bad parameter with the rule', () => {
    assert.deepEqual(
      edit((s) => {
        s.params.min_self_bond = '0';
        s.params.max_validators = '0';
        s.params.slash_fraction_double_sign = '1.5';
        s.params.min_signed_per_window = 0.5;
        s.params.unbonding_time = '-1';
        s.params.bogus = '1';
      }),
      [
        'genesis.json: app_state.staking.params.min_self_bond: must be > 0 (base units) and fit in a uint256, got "0"',
        'genesis.json: app_state.staking.params.unbonding_time: must be a string holding an integer, got "-1"',
        'genesis.json: app_state.staking.params.max_validators: must be >= 1 and <= 10000, got "0"',
        'genesis.json: app_state.staking.params.slash_fraction_double_sign: must be a decimal fraction from "0" to "1" with at most 18 decimals, got "1.5"',
        'genesis.json: app_state.staking.params.min_signed_per_window: must be a decimal string such as "0.05", got 0.5',
        'genesis.json: app_state.staking.params.bogus: unknown key',
      ],
    );
  });

  it('names the bad value of every other parameter with its rule, and takes each bound', () => {
    assert.deepEqual(
      edit((s) => {
        s.params.power_reduction = '0';
        s.params.slash_fraction_downtime = '2';
        s.params.signed_blocks_window = '100001';
        s.params.min_signed_per_window = '0';
        s.params.downtime_jail_duration = '18446744073709551616';
      }),
      [
        'genesis.json: app_state.staking.params.power_reduction: must be > 0 (base units per unit of power), got "0"',
        'genesis.json: app_state.staking.params.slash_fraction_downtime: must be a decimal fraction from "0" to "1" with at most 18 decimals, got "2"',
        'genesis.json: app_state.staking.params.signed_blocks_window: must be >= 1 and <= 100000, got "100001"',
        'genesis.json: app_state.staking.params.min_signed_per_window: must be > 0, got "0"',
        'genesis.json: app_state.staking.params.downtime_jail_duration: must be a number of seconds that fits in a uint64, got "18446744073709551616"',
      ],
    );
    assert.deepEqual(
      edit((s) => {
        s.params.signed_blocks_window = '0';
        s.params.max_validators = '10001';
      }),
      [
        'genesis.json: app_state.staking.params.max_validators: must be >= 1 and <= 10000, got "10001"',
        'genesis.json: app_state.staking.params.signed_blocks_window: must be >= 1 and <= 100000, got "0"',
      ],
    );
    // The bounds themselves are accepted.
    assert.deepEqual(
      edit((s) => {
        s.params.signed_blocks_window = '100000';
        s.params.max_validators = '10000';
        s.params.unbonding_time = '18446744073709551615';
        s.params.downtime_jail_duration = '0';
        s.params.slash_fraction_downtime = '1';
        s.params.slash_fraction_double_sign = '0';
        s.params.min_signed_per_window = '0.000000000000000001';
      }),
      [],
    );
  });

  it('ties the bonds to the consensus validators: power, keys, operators, min_self_bond', () => {
    assert.deepEqual(
      edit((s) => {
        s.validators[0]!.self_bond = (11n * BASE_UNITS_PER_BTC).toString();
      }),
      [
        'genesis.json: app_state.staking.validators[0].self_bond: gives power 11 (self_bond / params.power_reduction 1000000000000000000) but validators[0].power is 10',
      ],
    );
    assert.deepEqual(
      edit((s) => {
        s.validators[1]!.operator = OPS[0];
      }),
      [
        'genesis.json: app_state.staking.validators[1].operator: duplicate of app_state.staking.validators[0].operator',
      ],
    );
    assert.deepEqual(
      edit((s) => {
        s.validators.pop();
      }),
      [
        'genesis.json: app_state.staking.validators: has no bond for validators[1] (every genesis validator is bonded)',
      ],
    );
    assert.deepEqual(
      edit((s) => {
        s.params.power_reduction = '1';
        s.params.min_self_bond = '11';
        for (const v of s.validators) v.self_bond = '10';
      }),
      [
        'genesis.json: app_state.staking.validators[0].self_bond: must be >= params.min_self_bond (11), got "10"',
        'genesis.json: app_state.staking.validators[1].self_bond: must be >= params.min_self_bond (11), got "10"',
      ],
    );
    assert.deepEqual(
      edit((s) => {
        s.params.max_validators = '1';
      }),
      ['genesis.json: app_state.staking.validators: lists 2 validators, more than params.max_validators (1)'],
    );
    assert.deepEqual(
      edit((s) => {
        s.validators[0]!.pub_key = Buffer.from(new Uint8Array(32).fill(9)).toString('base64');
        s.validators[1]!.operator = '0x123';
        s.validators[1]!.commission_bps = '10001';
      }),
      [
        'genesis.json: app_state.staking.validators[0].pub_key: must be the key of one of the genesis validators, got "CQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQk="',
        'genesis.json: app_state.staking.validators[1].operator: must be 0x followed by 40 hex digits, got "0x123"',
        'genesis.json: app_state.staking.validators[1].commission_bps: must be a string holding an integer from 0 to 10000, got "10001"',
        'genesis.json: app_state.staking.validators: has no bond for validators[0] (every genesis validator is bonded)',
      ],
    );
  });

  it('reads fractions to 18 decimals and nothing past 1', () => {
    assert.equal(parseFraction('0.05'), 5n * 10n ** 16n);
    assert.equal(parseFraction('1'), 10n ** 18n);
    assert.equal(parseFraction('0.000000000000000001'), 1n);
    assert.equal(parseFraction('1.1'), undefined);
    assert.equal(parseFraction('0.0000000000000000001'), undefined);
    assert.equal(parseFraction('.5'), undefined);
  });
});
