// genesis.json app_state.rewards (issue 25, the fee split): defaults, and a precise message for
// each bad value.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  BASE_UNITS_PER_BTC,
  DEFAULT_STAKING_PARAMS,
  formatProblem,
  type GenesisJson,
  makeGenesis,
  toRuntimeGenesis,
  validateGenesis,
} from '@noded/config';
import { ed25519Generate } from '@noded/crypto';

const keys = [1, 2].map((i) => ed25519Generate(new Uint8Array(32).fill(i)));
const OPS = ['0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266', '0x70997970C51812dc3A010C7d01b50e0d17dc79C8'];

function bonded(rewards?: unknown): GenesisJson {
  const g = makeGenesis({
    chainId: 'chain-local',
    genesisTime: '2025-01-02T03:04:05Z',
    validators: keys.map((k, i) => ({ publicKey: k.publicKey, power: 10n, name: `v${i}`, operator: OPS[i] })),
    accounts: [{ address: OPS[0]!, balance: 10000n * BASE_UNITS_PER_BTC }],
    staking: { params: { ...DEFAULT_STAKING_PARAMS } },
  });
  if (rewards !== undefined) (g.app_state as unknown as Record<string, unknown>).rewards = rewards;
  return g;
}

const problems = (g: GenesisJson) => validateGenesis(g).map(formatProblem);

describe('genesis app_state.rewards', () => {
  it('a chain with a validator pool and no app_state.rewards runs the defaults: half to the validators, no block reward', () => {
    const g = bonded();
    assert.deepEqual(problems(g), []);
    assert.deepEqual(toRuntimeGenesis(g).rewards, { validatorShare: 5n * 10n ** 17n, blockReward: 0n });
  });

  it('reads the params it sets and defaults the others', () => {
    const g = bonded({ params: { validator_share: '0.75' } });
    assert.deepEqual(problems(g), []);
    assert.deepEqual(toRuntimeGenesis(g).rewards, { validatorShare: 75n * 10n ** 16n, blockReward: 0n });
    const h = bonded({ params: { validator_share: '1', block_reward: '1000' } });
    assert.deepEqual(problems(h), []);
    assert.deepEqual(toRuntimeGenesis(h).rewards, { validatorShare: 10n ** 18n, blockReward: 1000n });
  });

  it('names each bad value with the rule', () => {
    assert.deepEqual(
      problems(
        bonded({
          params: { validator_share: '1.01', block_reward: '-5', bogus: '1' },
          extra: true,
        }),
      ),
      [
        'genesis.json: app_state.rewards.extra: unknown key',
        'genesis.json: app_state.rewards.params.validator_share: must be a decimal fraction from "0" to "1" with at most 18 decimals, got "1.01"',
        'genesis.json: app_state.rewards.params.block_reward: must be a string holding an integer (base units), got "-5"',
        'genesis.json: app_state.rewards.params.bogus: unknown key',
      ],
    );
    assert.deepEqual(
      problems(bonded({ params: { validator_share: 0.5, block_reward: (10n ** 24n + 1n).toString() } })),
      [
        'genesis.json: app_state.rewards.params.validator_share: must be a decimal fraction from "0" to "1" with at most 18 decimals, got 0.5',
        'genesis.json: app_state.rewards.params.block_reward: must be <= 1000000000000000000000000 base units, got "1000000000000000000000001"',
      ],
    );
    assert.deepEqual(problems(bonded([])), ['genesis.json: app_state.rewards: must be an object, got []']);
  });

  it('upgrade_height: the first height whose fees are split, a string from 1 to 2^53 − 1', () => {
    assert.equal(toRuntimeGenesis(bonded()).rewardsUpgradeHeight, undefined, 'absent: from genesis');
    const g = bonded({ upgrade_height: '1200' });
    assert.deepEqual(problems(g), []);
    assert.equal(toRuntimeGenesis(g).rewardsUpgradeHeight, 1200);
    for (const [bad, shown] of [
      ['0', '"0"'],
      ['-3', '"-3"'],
      ['1.5', '"1.5"'],
      [12, '12'],
      ['9007199254740992', '"9007199254740992"'],
    ] as const)
      assert.deepEqual(problems(bonded({ upgrade_height: bad })), [
        `genesis.json: app_state.rewards.upgrade_height: must be a string holding a block height from 1 to 2^53 − 1, got ${shown}`,
      ]);
  });

  it('needs app_state.staking', () => {
    const g = bonded({ params: {} });
    delete g.app_state.staking;
    assert.deepEqual(problems(g), [
      'genesis.json: app_state.rewards: needs app_state.staking (the validators are paid through the validator pool)',
    ]);
    assert.throws(() => toRuntimeGenesis(g), /app_state\.rewards: needs app_state\.staking/);
  });
});
