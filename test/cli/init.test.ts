import assert from 'node:assert/strict';
import { copyFileSync, existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  deriveDevAccounts,
  homePaths,
  loadGenesis,
  loadNodeConfig,
  loadNodeKey,
  loadValidatorKey,
  shippedGenesisPath,
} from '@noded/config';
import { removeDir, runCli, snapshot, tempDir } from './helpers.js';

const root = tempDir();
after(() => removeDir(root));
let n = 0;
const newHome = () => join(root, `home-${++n}`);

describe('noded init', () => {
  const home = newHome();
  let out = '';

  before(async () => {
    const r = await runCli([
      'init',
      'full',
      '--chain-id',
      'chain-local',
      '--moniker',
      'alice',
      '--home',
      home,
    ]);
    assert.equal(r.code, 0, r.stderr);
    out = r.stdout;
  });

  it('chain-local: writes every file; this node is the single validator; 20 dev accounts funded', () => {
    const p = homePaths(home);
    for (const f of [
      p.configToml,
      p.appToml,
      p.clientToml,
      p.genesis,
      p.nodeKey,
      p.privValidatorKey,
      p.privValidatorState,
    ]) {
      assert.ok(existsSync(f), `${f} missing`);
    }
    assert.equal(statSync(p.privValidatorKey).mode & 0o777, 0o600);
    assert.equal(statSync(p.nodeKey).mode & 0o777, 0o600);
    const loaded = loadNodeConfig(home);
    assert.deepEqual(loaded.problems, []);
    assert.equal(loaded.config.moniker, 'alice');
    assert.equal(loaded.app.mode, 'full');
    // A dev chain keeps every height's state, and mines on demand (docs/configuration.md).
    assert.equal(loaded.app.pruning, 'nothing');
    assert.equal(loaded.config.consensus.skipTimeoutCommit, true);
    assert.equal(loaded.config.consensus.createEmptyBlocksIntervalMs, 1000);
    assert.equal(loaded.config.consensus.timeoutCommitMs, 1000);
    assert.equal(loaded.client.chainId, 'chain-local');
    const { genesis, problems } = loadGenesis(p.genesis);
    assert.deepEqual(problems, []);
    const val = loadValidatorKey(p.privValidatorKey);
    assert.equal(genesis!.json.validators.length, 1);
    assert.equal(genesis!.json.validators[0]!.address, val.address);
    assert.equal(genesis!.json.validators[0]!.power, '10');
    assert.equal(genesis!.json.validators[0]!.name, 'alice');
    const accounts = genesis!.json.app_state.evm.accounts;
    assert.equal(accounts.length, 20);
    assert.equal(accounts[0]!.address, '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266');
    assert.ok(accounts.every((a) => a.balance === '10000000000000000000000'));
    assert.equal(genesis!.json.app_state.evm.chain_id, '31337');
    assert.deepEqual(JSON.parse(readFileSync(p.privValidatorState, 'utf8')), {
      height: '0',
      round: 0,
      step: 0,
    });
  });

  it('prints the mnemonic and the node id; the accounts are listed once, by start', () => {
    assert.match(out, /test test test test test test test test test test test junk/);
    assert.match(out, /the 20 accounts and their keys are listed when the node starts/);
    assert.doesNotMatch(out, /0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266/);
    assert.doesNotMatch(out, /0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80/);
    assert.ok(out.includes(loadNodeKey(homePaths(home).nodeKey).nodeId));
  });

  it('refuses an existing home, naming the file, and writes nothing', async () => {
    const before = snapshot(home);
    const r = await runCli(['init', 'archive', '--chain-id', 'chain-local', '--home', home]);
    assert.equal(r.code, 1);
    assert.match(
      r.stderr,
      new RegExp(`${homePaths(home).configToml.replace(/[.]/g, '\\.')} already exists; nothing was written`),
    );
    assert.deepEqual(snapshot(home), before);
  });

  it('--overwrite rewrites config and genesis but keeps the keys and the validator state', async () => {
    const h = newHome();
    assert.equal((await runCli(['init', 'full', '--chain-id', 'chain-local', '--home', h])).code, 0);
    const p = homePaths(h);
    const nodeId = loadNodeKey(p.nodeKey).nodeId;
    const keyText = readFileSync(p.privValidatorKey, 'utf8');
    writeFileSync(p.privValidatorState, '{"height":"7","round":0,"step":3}\n');
    writeFileSync(p.configToml, 'garbage = = =\n');
    const r = await runCli([
      'init',
      'archive',
      '--chain-id',
      'chain-local',
      '--moniker',
      'bob',
      '--overwrite',
      '--home',
      h,
    ]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /existing key kept/);
    assert.equal(loadNodeKey(p.nodeKey).nodeId, nodeId);
    assert.equal(readFileSync(p.privValidatorKey, 'utf8'), keyText);
    assert.equal(readFileSync(p.privValidatorState, 'utf8'), '{"height":"7","round":0,"step":3}\n');
    const loaded = loadNodeConfig(h);
    assert.deepEqual(loaded.problems, []);
    assert.equal(loaded.config.moniker, 'bob');
    assert.equal(loaded.app.mode, 'archive');
    assert.equal(loaded.app.pruning, 'nothing');
    // The regenerated genesis still names this node's (kept) validator key.
    assert.equal(
      loadGenesis(p.genesis).genesis!.json.validators[0]!.address,
      loadValidatorKey(p.privValidatorKey).address,
    );
  });

  it('--overwrite is refused while a node holds the home', async () => {
    const h = newHome();
    assert.equal((await runCli(['init', 'full', '--chain-id', 'chain-local', '--home', h])).code, 0);
    writeFileSync(homePaths(h).pidFile, `${process.pid}\n`); // this test process is alive
    const before = snapshot(h);
    const r = await runCli(['init', 'full', '--chain-id', 'chain-local', '--overwrite', '--home', h]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, new RegExp(`a node \\(pid ${process.pid}\\) is running on this home`));
    assert.deepEqual(snapshot(h), before);
  });

  it('chain-mainnet and chain-testnet use the shipped genesis byte for byte; light and archive are recorded', async () => {
    const h1 = newHome();
    const r1 = await runCli(['init', 'light', '--chain-id', 'chain-mainnet', '--home', h1]);
    assert.equal(r1.code, 0, r1.stderr);
    assert.equal(
      readFileSync(homePaths(h1).genesis, 'utf8'),
      readFileSync(shippedGenesisPath('chain-mainnet')!, 'utf8'),
    );
    assert.equal(loadNodeConfig(h1).app.mode, 'light');
    assert.doesNotMatch(r1.stdout, /mnemonic/);
    // Other chains keep the seed's pacing: a block every timeout_commit, no skipping.
    assert.equal(loadNodeConfig(h1).config.consensus.skipTimeoutCommit, false);
    assert.equal(loadNodeConfig(h1).config.consensus.createEmptyBlocksIntervalMs, 0);
    const h2 = newHome();
    const r2 = await runCli(['init', 'archive', '--chain-id', 'chain-testnet', '--home', h2]);
    assert.equal(r2.code, 0, r2.stderr);
    assert.equal(
      readFileSync(homePaths(h2).genesis, 'utf8'),
      readFileSync(shippedGenesisPath('chain-testnet')!, 'utf8'),
    );
    assert.equal(loadNodeConfig(h2).app.pruning, 'nothing');
    assert.equal(loadNodeConfig(h2).client.chainId, 'chain-testnet');
  });

  it('--genesis FILE is used verbatim; a custom --mnemonic is printed and funded', async () => {
    const file = join(root, 'my-genesis.json');
    copyFileSync(shippedGenesisPath('chain-testnet')!, file);
    const h1 = newHome();
    const r1 = await runCli(['init', 'full', '--chain-id', 'chain-testnet', '--genesis', file, '--home', h1]);
    assert.equal(r1.code, 0, r1.stderr);
    assert.equal(readFileSync(homePaths(h1).genesis, 'utf8'), readFileSync(file, 'utf8'));

    const words =
      'abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon about';
    const h2 = newHome();
    const r2 = await runCli(['init', 'full', '--chain-id', 'chain-local', '--mnemonic', words, '--home', h2]);
    assert.equal(r2.code, 0, r2.stderr);
    assert.ok(r2.stdout.includes(words));
    const first = deriveDevAccounts(words, 1)[0]!;
    assert.equal(
      loadGenesis(homePaths(h2).genesis).genesis!.json.app_state.evm.accounts[0]!.address,
      first.address,
    );
  });

  it('uses $NODED_HOME when --home is not given', async () => {
    const h = newHome();
    const r = await runCli(['init', 'full', '--chain-id', 'chain-local'], { env: { NODED_HOME: h } });
    assert.equal(r.code, 0, r.stderr);
    assert.ok(existsSync(homePaths(h).genesis));
  });

  it('every bad argument gets a precise message, exit 1, and nothing on disk', async () => {
    const badGenesis = join(root, 'bad-genesis.json');
    const g = JSON.parse(readFileSync(shippedGenesisPath('chain-testnet')!, 'utf8'));
    g.consensus_params.block.max_bytes = '0';
    writeFileSync(badGenesis, JSON.stringify(g));
    const cases: Array<[string[], RegExp]> = [
      [
        ['init', 'fast', '--chain-id', 'chain-local'],
        /node_type: must be one of full, light, archive, got "fast"/,
      ],
      [
        ['init', 'full', '--chain-id', 'chain-x'],
        /--chain-id: must be one of chain-mainnet, chain-testnet, chain-local, got "chain-x"/,
      ],
      [['init', 'full'], /required option '--chain-id <chain_id>' not specified/],
      [['init', '--chain-id', 'chain-local'], /missing required argument 'node_type'/],
      [['init', 'full', '--chain-id', 'chain-local', '--moniker', ''], /--moniker: must not be empty/],
      [
        ['init', 'full', '--chain-id', 'chain-local', '--mnemonic', 'one two three'],
        /--mnemonic: must be a BIP-39 English mnemonic/,
      ],
      [
        ['init', 'full', '--chain-id', 'chain-mainnet', '--mnemonic', 'x'],
        /--mnemonic: only used with --chain-id chain-local/,
      ],
      [
        ['init', 'full', '--chain-id', 'chain-testnet', '--genesis', join(root, 'nope.json')],
        /--genesis: cannot read .*nope\.json: ENOENT/,
      ],
      [
        ['init', 'full', '--chain-id', 'chain-testnet', '--genesis', badGenesis],
        /--genesis: bad-genesis\.json: consensus_params\.block\.max_bytes: must be > 0 and <= 104857600, got "0"/,
      ],
      [
        ['init', 'full', '--chain-id', 'chain-mainnet', '--genesis', shippedGenesisPath('chain-testnet')!],
        /chain_id: must match --chain-id "chain-mainnet", got "chain-testnet"/,
      ],
      [['init', 'full', '--chain-id', 'chain-local', '--bogus'], /unknown option '--bogus'/],
    ];
    const before = snapshot(root);
    const results = await Promise.all(
      cases.map(([args]) => runCli([...args, '--home', join(root, 'never')])),
    );
    results.forEach((r, i) => {
      assert.equal(r.code, 1, `${cases[i]![0].join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, cases[i]![1]);
    });
    assert.deepEqual(snapshot(root), before);
    assert.equal(existsSync(join(root, 'never')), false);
  });
});
