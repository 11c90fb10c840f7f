import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import {
  BASE_UNITS_PER_BTC,
  formatProblem,
  type GenesisJson,
  loadGenesis,
  makeGenesis,
  parseGenesisTime,
  shippedGenesisPath,
  toRuntimeGenesis,
  validateGenesis,
} from '@noded/config';
import { ed25519Generate, sha256 } from '@noded/crypto';

const key = ed25519Generate(new Uint8Array(32).fill(1));
const HARDHAT0 = '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266';

function local(): GenesisJson {
  return makeGenesis({
    chainId: 'chain-local',
    genesisTime: '2025-01-02T03:04:05.123456789Z',
    validators: [{ publicKey: key.publicKey, power: 10n, name: 'solo' }],
    accounts: [{ address: HARDHAT0, balance: 10000n * BASE_UNITS_PER_BTC }],
  });
}

const problems = (g: unknown) => validateGenesis(g).map(formatProblem);
const edit = (f: (g: GenesisJson & Record<string, unknown>) => void) => {
  const g = local() as GenesisJson & Record<string, unknown>;
  f(g);
  return problems(g);
};

describe('genesis', () => {
  it('the shipped mainnet and testnet genesis files are valid and carry the seed consensus_params', () => {
    for (const [chainId, evm] of [
      ['chain-mainnet', '31612'],
      ['chain-testnet', '31611'],
    ] as const) {
      const file = shippedGenesisPath(chainId)!;
      const { genesis, problems: ps } = loadGenesis(file);
      assert.deepEqual(ps, []);
      const j = genesis!.json;
      assert.equal(j.chain_id, chainId);
      assert.deepEqual(j.consensus_params.block, { max_bytes: '22020096', max_gas: '-1' });
      assert.equal(j.consensus_params.evidence.max_age_num_blocks, '100000');
      assert.equal(j.consensus_params.evidence.max_age_duration, '172800000000000');
      assert.equal(j.app_state.evm.chain_id, evm);
      assert.equal(genesis!.text, readFileSync(file, 'utf8'));
    }
  });

  it('a generated chain-local genesis is valid and converts to the runtime form', () => {
    const g = local();
    assert.deepEqual(problems(g), []);
    const r = toRuntimeGenesis(g);
    assert.equal(r.chainId, 'chain-local');
    assert.equal(r.time, 1735787045123456789n);
    assert.equal(r.initialHeight, 1);
    assert.equal(r.evmChainId, 31337n);
    assert.equal(r.validators.length, 1);
    assert.deepEqual(r.validators[0]!.address, sha256(key.publicKey).subarray(0, 20));
    assert.deepEqual(r.validators[0]!.pubKey, key.publicKey);
    assert.equal(r.validators[0]!.votingPower, 10n);
    assert.equal(r.validators[0]!.proposerPriority, 0n);
    assert.deepEqual(r.consensusParams, {
      block: { maxBytes: 22020096n, maxGas: -1n },
      evidence: { maxAgeNumBlocks: 100000n, maxAgeDuration: 172800000000000n, maxBytes: 1048576n },
      validator: { pubKeyTypes: ['ed25519'] },
      version: { app: 0n },
      abci: { voteExtensionsEnableHeight: 0n },
    });
    assert.equal(r.appState.evm.accounts[0]!.balance, '10000000000000000000000');
  });

  it('the issue example: block.max_bytes out of range', () => {
    assert.deepEqual(
      edit((g) => {
        g.consensus_params.block.max_bytes = '0';
      }),
      ['genesis.json: consensus_params.block.max_bytes: must be > 0 and <= 104857600, got "0"'],
    );
    assert.deepEqual(
      edit((g) => {
        g.consensus_params.block.max_bytes = '104857601';
      }),
      ['genesis.json: consensus_params.block.max_bytes: must be > 0 and <= 104857600, got "104857601"'],
    );
  });

  it('chain_id, genesis_time and integer strings', () => {
    assert.deepEqual(
      edit((g) => {
        g.chain_id = 'chain-foo';
        g.genesis_time = '2025-02-30T00:00:00Z';
        (g.consensus_params.block as Record<string, unknown>).max_gas = -1;
        g.consensus_params.evidence.max_age_num_blocks = '0';
        g.consensus_params.evidence.max_age_duration = '-5';
      }),
      [
        'genesis.json: chain_id: must be one of "chain-mainnet", "chain-testnet", "chain-local", got "chain-foo"',
        'genesis.json: genesis_time: must be an ISO 8601 UTC timestamp such as "2025-01-01T00:00:00Z", got "2025-02-30T00:00:00Z"',
        'genesis.json: consensus_params.block.max_gas: must be a string holding an integer, got -1',
        'genesis.json: consensus_params.evidence.max_age_num_blocks: must be > 0, got "0"',
        'genesis.json: consensus_params.evidence.max_age_duration: must be > 0 (nanoseconds), got "-5"',
      ],
    );
    assert.match(
      edit((g) => {
        g.consensus_params.block.max_gas = '-2';
      })[0]!,
      /max_gas: must be >= -1/,
    );
    assert.equal(parseGenesisTime('2025-01-01T00:00:00+02:00'), undefined);
    assert.equal(parseGenesisTime('2025-01-01 00:00:00Z'), undefined);
    assert.equal(parseGenesisTime('1970-01-01T00:00:01.5Z'), 1500000000n);
    assert.deepEqual(
      edit((g) => {
        g.extra = 1;
      }),
      ['genesis.json: extra: unknown key'],
    );
  });

  it('validators: at least one, valid ed25519 keys, power > 0, addresses that match, no duplicates', () => {
    assert.deepEqual(
      edit((g) => {
        g.validators = [];
      }),
      ['genesis.json: validators: must list at least one validator, got []'],
    );
    const bad = edit((g) => {
      const v = g.validators[0]!;
      g.validators.push({ ...v, power: '0' });
      g.validators.push({
        ...v,
        pub_key: { ...v.pub_key, value: Buffer.alloc(32, 0xff).toString('base64') },
      });
      g.validators.push({ ...v, pub_key: { ...v.pub_key, value: 'abc' } });
      g.validators.push({
        ...v,
        pub_key: { type: 'tendermint/PubKeySecp256k1' as 'tendermint/PubKeyEd25519', value: '' },
      });
      g.validators.push({ ...ed25519Validator(), address: 'AAAA' });
    });
    assert.deepEqual(bad.slice(0, 4), [
      'genesis.json: validators[1].power: must be > 0, got "0"',
      'genesis.json: validators[1].pub_key.value: duplicate of validators[0].pub_key.value',
      `genesis.json: validators[2].pub_key.value: must be the base64 of a valid 32-byte ed25519 public key, got "${Buffer.alloc(32, 0xff).toString('base64')}"`,
      'genesis.json: validators[3].pub_key.value: must be the base64 of a valid 32-byte ed25519 public key, got "abc"',
    ]);
    assert.equal(
      bad[4],
      'genesis.json: validators[4].pub_key.type: must be "tendermint/PubKeyEd25519", got "tendermint/PubKeySecp256k1"',
    );
    assert.match(
      bad[5]!,
      /^genesis\.json: validators\[5\]\.address: must be [0-9A-F]{40} \(the first 20 bytes of sha256 of the key\), got "AAAA"$/,
    );
    assert.equal(bad.length, 6);
  });

  it('accounts: valid addresses (EIP-55 when mixed case), integer balances, no duplicates, EVM chain id', () => {
    const bad = edit((g) => {
      const a = g.app_state.evm.accounts;
      a.push({ address: HARDHAT0.toLowerCase(), balance: '1' });
      a.push({ address: '0xF39fd6e51aad88F6F4ce6aB8827279cffFb92266', balance: '1' });
      a.push({ address: '0x1234', balance: '1' });
      a.push({ address: '0x0000000000000000000000000000000000000001', balance: '1.5' });
      g.app_state.evm.chain_id = '1';
    });
    assert.deepEqual(bad, [
      'genesis.json: app_state.evm.chain_id: must be "31337" for chain-local, got "1"',
      `genesis.json: app_state.evm.accounts[1].address: duplicate of app_state.evm.accounts[0], got "${HARDHAT0.toLowerCase()}"`,
      'genesis.json: app_state.evm.accounts[2].address: has mixed case but a wrong EIP-55 checksum, got "0xF39fd6e51aad88F6F4ce6aB8827279cffFb92266"',
      'genesis.json: app_state.evm.accounts[3].address: must be 0x followed by 40 hex digits, got "0x1234"',
      'genesis.json: app_state.evm.accounts[4].balance: must be a string holding an integer, got "1.5"',
    ]);
  });

  it('app_state.bridge: optional; admin, positive amounts and window, distinct uint8 chains; reserved addresses', () => {
    const bridge = {
      admin: HARDHAT0,
      min_amount: '1000',
      window_seconds: '3600',
      max_outflow_per_window: '5000',
      chains: [1, 2],
    };
    assert.deepEqual(
      edit((g) => {
        g.app_state.bridge = { ...bridge };
      }),
      [],
    );
    assert.deepEqual(
      edit((g) => {
        g.app_state.bridge = {
          ...bridge,
          admin: '0x1234',
          paused: 'yes' as never,
          min_amount: '0',
          window_seconds: '-5',
          chains: [1, 256, 1],
          fee: '1',
        } as never;
      }),
      [
        'genesis.json: app_state.bridge.fee: unknown key',
        'genesis.json: app_state.bridge.admin: must be 0x followed by 40 hex digits, got "0x1234"',
        'genesis.json: app_state.bridge.paused: must be true or false, got "yes"',
        'genesis.json: app_state.bridge.min_amount: must be > 0, got "0"',
        'genesis.json: app_state.bridge.window_seconds: must be a string holding an integer, got "-5"',
        'genesis.json: app_state.bridge.chains[1]: must be an integer 0-255, got 256',
        'genesis.json: app_state.bridge.chains[2]: duplicate of chains[0], got 1',
      ],
    );
    assert.deepEqual(
      edit((g) => {
        g.app_state.bridge = { ...bridge, max_outflow_per_window: '999', chains: [] };
      }),
      [
        'genesis.json: app_state.bridge.max_outflow_per_window: must be >= min_amount (1000), got "999"',
        'genesis.json: app_state.bridge.chains: must be a non-empty list of destination chain ids 0-255, got []',
      ],
    );
    assert.deepEqual(
      edit((g) => {
        g.app_state.bridge = { ...bridge, max_inflow_per_window: '1' } as never;
      }),
      [],
    );
    for (const [v, why] of [
      ['0', 'must be > 0, got "0"'],
      ['-1', 'must be a string holding an integer, got "-1"'],
      [7, 'must be a string holding an integer, got 7'],
    ] as const) {
      assert.deepEqual(
        edit((g) => {
          g.app_state.bridge = { ...bridge, max_inflow_per_window: v } as never;
        }),
        [`genesis.json: app_state.bridge.max_inflow_per_window: ${why}`],
      );
    }
    // The per-deposit cap: a positive integer string, and no larger than the inflow window (a
    // deposit the cap lets through but no window can hold would block every later one).
    assert.deepEqual(
      edit((g) => {
        g.app_state.bridge = { ...bridge, max_inflow_per_window: '10', max_deposit_amount: '10' } as never;
      }),
      [],
    );
    assert.deepEqual(
      edit((g) => {
        g.app_state.bridge = { ...bridge, max_deposit_amount: '0' } as never;
      }),
      ['genesis.json: app_state.bridge.max_deposit_amount: must be > 0, got "0"'],
    );
    assert.deepEqual(
      edit((g) => {
        g.app_state.bridge = { ...bridge, max_inflow_per_window: '10', max_deposit_amount: '11' } as never;
      }),
      ['genesis.json: app_state.bridge.max_deposit_amount: must be <= max_inflow_per_window (10), got "11"'],
    );
    assert.deepEqual(
      edit((g) => {
        g.app_state.evm.accounts.push({
          address: '0x7b7c000000000000000000000000000000000012',
          balance: '1',
        });
      }),
      [
        'genesis.json: app_state.evm.accounts[1].address: is reserved for the bridge-out precompile, got "0x7b7c000000000000000000000000000000000012"',
      ],
    );
  });

  it('loadGenesis names the file and reports unreadable or non-JSON files', () => {
    assert.deepEqual(loadGenesis('/nonexistent/dir/gen.json').problems.map(formatProblem), [
      'gen.json: cannot read /nonexistent/dir/gen.json: no such file',
    ]);
    assert.throws(() => toRuntimeGenesis({ ...local(), chain_id: 'x' }), /chain_id: must be one of/);
  });
});

function ed25519Validator() {
  const k = ed25519Generate(new Uint8Array(32).fill(9));
  return {
    address: '',
    pub_key: {
      type: 'tendermint/PubKeyEd25519' as const,
      value: Buffer.from(k.publicKey).toString('base64'),
    },
    power: '1',
    name: 'x',
  };
}
