// NODED_<KEY> environment overrides (libs/config/src/env.ts), as the cluster's services load a home:
// the Cosmos SDK names, typed values, the same validation as the file with the variable named, and
// nothing applied unless the caller passes an environment.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import {
  AppTomlFile,
  type ConfigProblem,
  ConfigTomlFile,
  envNameOf,
  formatProblem,
  keyPaths,
  loadNodeConfig,
  parseAppToml,
  parseConfigToml,
  renderAppToml,
  renderClientToml,
  renderConfigToml,
} from '@noded/config';

const homes: string[] = [];
after(() => {
  for (const h of homes) rmSync(h, { recursive: true, force: true });
});

function home(): string {
  const h = mkdtempSync(join(tmpdir(), 'noded-env-'));
  homes.push(h);
  mkdirSync(join(h, 'config'));
  writeFileSync(join(h, 'config', 'config.toml'), renderConfigToml());
  writeFileSync(join(h, 'config', 'app.toml'), renderAppToml());
  writeFileSync(join(h, 'config', 'client.toml'), renderClientToml());
  return h;
}

describe('NODED_<KEY> environment overrides', () => {
  it('names follow the Cosmos SDK convention and no two keys of config.toml and app.toml share one', () => {
    assert.equal(envNameOf('api.address'), 'NODED_API_ADDRESS');
    assert.equal(envNameOf('evm.rpc_address'), 'NODED_EVM_RPC_ADDRESS');
    assert.equal(envNameOf('evm.gas.min_gas_price'), 'NODED_EVM_GAS_MIN_GAS_PRICE');
    const names = [...keyPaths(new ConfigTomlFile()), ...keyPaths(new AppTomlFile())].map(envNameOf);
    assert.ok(names.length > 90, `${names.length} keys`);
    assert.equal(new Set(names).size, names.length, 'every key has its own variable');
  });

  it('override strings, integers, booleans and lists, and win over the file', () => {
    const problems: ConfigProblem[] = [];
    const c = parseConfigToml(renderConfigToml(), problems, 'config.toml', {
      NODED_RPC_LADDR: 'tcp://127.0.0.1:36657',
      NODED_RPC_MAX_OPEN_CONNECTIONS: '12',
      NODED_CONSENSUS_CREATE_EMPTY_BLOCKS: 'false',
      NODED_RPC_CORS_ALLOWED_ORIGINS: 'https://a.example, https://b.example',
      NODED_MONIKER: '1234',
      // not a key: ignored, like any other variable
      NODED_HOME: '/elsewhere',
    });
    assert.deepEqual(problems.map(formatProblem), []);
    assert.equal(c.config.rpc.laddr.raw, 'tcp://127.0.0.1:36657');
    assert.equal(c.config.rpc.maxOpenConnections, 12);
    assert.equal(c.config.consensus.createEmptyBlocks, false);
    assert.deepEqual(c.config.rpc.corsAllowedOrigins, ['https://a.example', 'https://b.example']);
    assert.equal(c.config.moniker, '1234', 'a string key keeps digits as text');

    const a = parseAppToml(renderAppToml(), problems, '.', 'app.toml', {
      NODED_API_ADDRESS: 'tcp://127.0.0.1:41317',
      NODED_EVM_RPC_ADDRESS: '127.0.0.1:48545',
      NODED_EVM_API_ADDRESS: '127.0.0.1:41317',
      NODED_EVM_GAS_MIN_GAS_PRICE: '2000000000',
      NODED_EVM_GAS_BASE_FEE: '3000000000',
      // a config.toml key: not an app.toml override
      NODED_RPC_CORS_ALLOWED_ORIGINS: '["*"]',
    });
    assert.deepEqual(problems.map(formatProblem), []);
    assert.equal(a.app.api.address.raw, 'tcp://127.0.0.1:41317');
    assert.equal(a.app.evm.rpcAddress.raw, '127.0.0.1:48545');
    assert.equal(a.app.evm.gas.minGasPrice, 2_000_000_000n);
    assert.equal(a.app.evm.gas.baseFee, 3_000_000_000n);
  });

  it('a bad value is refused by the same rule as in the file, naming the key and the variable', () => {
    const problems: ConfigProblem[] = [];
    const c = parseConfigToml(renderConfigToml(), problems, 'config.toml', {
      NODED_RPC_LADDR: 'not an address',
      NODED_CONSENSUS_CREATE_EMPTY_BLOCKS: 'yes',
      NODED_RPC_MAX_OPEN_CONNECTIONS: 'many',
      NODED_MEMPOOL_MAX_TX_BYTES: '999999999999',
    });
    const text = problems.map(formatProblem);
    assert.equal(text.length, 4, text.join('\n'));
    assert.match(
      text.find((t) => t.includes('rpc.laddr'))!,
      /^config\.toml: rpc\.laddr: .*\(set by \$NODED_RPC_LADDR\)$/,
    );
    assert.equal(
      text.find((t) => t.includes('create_empty_blocks')),
      'config.toml: consensus.create_empty_blocks: must be true or false, got "yes" (set by $NODED_CONSENSUS_CREATE_EMPTY_BLOCKS)',
    );
    assert.equal(
      text.find((t) => t.includes('max_open_connections')),
      'config.toml: rpc.max_open_connections: not a TOML value, got "many" (set by $NODED_RPC_MAX_OPEN_CONNECTIONS)',
    );
    assert.match(
      text.find((t) => t.includes('max_tx_bytes'))!,
      /^config\.toml: mempool\.max_tx_bytes: must be <= mempool\.max_txs_bytes .*\(set by \$NODED_MEMPOOL_MAX_TX_BYTES\)$/,
    );
    // the bad values changed nothing: the file's (default) values stay
    assert.equal(c.config.rpc.laddr.raw, 'tcp://127.0.0.1:26657');
    assert.equal(c.config.consensus.createEmptyBlocks, true);
    assert.equal(c.config.rpc.maxOpenConnections, 900);
  });

  it('loadNodeConfig applies them only when given an environment (noded start passes none)', () => {
    const h = home();
    const env = {
      NODED_API_ADDRESS: 'tcp://127.0.0.1:41317',
      NODED_EVM_API_ADDRESS: '127.0.0.1:41317',
      NODED_RPC_LADDR: 'tcp://127.0.0.1:36657',
    };
    const withEnv = loadNodeConfig(h, env);
    assert.deepEqual(withEnv.problems, []);
    assert.equal(withEnv.app.api.address.raw, 'tcp://127.0.0.1:41317');
    assert.equal(withEnv.config.rpc.laddr.raw, 'tcp://127.0.0.1:36657');
    const without = loadNodeConfig(h);
    assert.equal(without.app.api.address.raw, 'tcp://0.0.0.0:1317');
    assert.equal(without.config.rpc.laddr.raw, 'tcp://127.0.0.1:26657');
    // a clash made by the environment is reported like one in the files
    const clash = loadNodeConfig(h, {
      NODED_API_ADDRESS: 'tcp://127.0.0.1:26657',
      NODED_EVM_API_ADDRESS: '127.0.0.1:26657',
    });
    assert.ok(
      clash.problems.some((p) => /26657/.test(p.message) && /\$NODED_(EVM_)?API_ADDRESS/.test(p.message)),
      clash.problems.map(formatProblem).join('\n'),
    );
  });
});
