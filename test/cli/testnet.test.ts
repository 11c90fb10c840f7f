import assert from 'node:assert/strict';
import { createHash, createPrivateKey, createPublicKey } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { listenAddresses, loadNodeConfig } from '@noded/config';
import { type CliResult, removeDir, runCli, snapshot, tempDir } from './helpers.js';

const root = tempDir('noded-testnet-');
after(() => removeDir(root));

const HOME_FILES = [
  'config/config.toml',
  'config/app.toml',
  'config/client.toml',
  'config/genesis.json',
  'config/node_key.json',
  'config/priv_validator_key.json',
  'data/priv_validator_state.json',
];

/** The CLI with a generous time limit: a loaded machine makes a node process start slowly. */
const run = (args: string[]) => runCli(args, { timeoutMs: 60_000 });

/** Runs the CLI for each argument list, a few at a time (a loaded machine makes many at once slow). */
async function runEach(argLists: string[][], atOnce = 3): Promise<CliResult[]> {
  const results: CliResult[] = new Array(argLists.length);
  let next = 0;
  const worker = async () => {
    while (next < argLists.length) {
      const i = next++;
      results[i] = await run(argLists[i]!);
    }
  };
  await Promise.all(Array.from({ length: atOnce }, worker));
  return results;
}

const readJson = (path: string) => JSON.parse(readFileSync(path, 'utf8'));

/** Node id computed here, independently of the code under test: sha256(ed25519 public key)[0..20]. */
function nodeIdOf(home: string): string {
  const raw = Buffer.from(readJson(join(home, 'config', 'node_key.json')).priv_key.value, 'base64');
  assert.equal(raw.length, 64);
  const seed = raw.subarray(0, 32);
  const pub = raw.subarray(32);
  // The stored public half must be the key of the seed (derived with node's own crypto).
  const der = Buffer.concat([Buffer.from('302e020100300506032b657004220420', 'hex'), seed]);
  const jwk = createPublicKey(createPrivateKey({ key: der, format: 'der', type: 'pkcs8' })).export({
    format: 'jwk',
  });
  assert.equal(Buffer.from(jwk.x!, 'base64url').toString('hex'), pub.toString('hex'));
  return createHash('sha256').update(pub).digest().subarray(0, 20).toString('hex');
}

/** The value of `key` in the `[section]` of a rendered TOML file (a plain line scan). */
function tomlValue(text: string, section: string, key: string): string {
  let current = '';
  for (const line of text.split('\n')) {
    const s = /^\[([^\]]+)\]$/.exec(line);
    if (s) current = s[1]!;
    const kv = /^("?[A-Za-z0-9_-]+"?) = (.*)$/.exec(line);
    if (kv && current === section && kv[1]!.replace(/"/g, '') === key) return kv[2]!;
  }
  throw new Error(`${section}.${key} not found`);
}

describe('noded testnet: 4 validators + 1 non-validator', () => {
  const out = join(root, 'net');
  const ips = ['127.0.0.2', '127.0.0.3', '127.0.0.4', '127.0.0.5', '127.0.0.6'];
  const homes = ips.map((_, i) => join(out, `node${i}`));
  let stdout = '';
  let ids: string[] = [];

  before(async () => {
    const r = await run(['testnet', '--validators', '4', '--non-validators', '1', '--output', out]);
    assert.equal(r.code, 0, r.stderr);
    stdout = r.stdout;
    ids = homes.map(nodeIdOf);
  });

  it('writes exactly node0..node4, each a complete home with its own keys', () => {
    assert.deepEqual(readdirSync(out).sort(), ['node0', 'node1', 'node2', 'node3', 'node4']);
    for (const home of homes) {
      for (const f of HOME_FILES) assert.ok(existsSync(join(home, f)), `${home}/${f} missing`);
      for (const f of ['node_key.json', 'priv_validator_key.json', 'dev_accounts.json'])
        assert.equal(statSync(join(home, 'config', f)).mode & 0o777, 0o600, f);
      assert.deepEqual(readJson(join(home, 'data', 'priv_validator_state.json')), {
        height: '0',
        round: 0,
        step: 0,
      });
    }
    assert.equal(new Set(ids).size, 5);
    const valKeys = homes.map((h) => readJson(join(h, 'config', 'priv_validator_key.json')).pub_key.value);
    assert.equal(new Set(valKeys).size, 5);
  });

  it('one genesis, byte-identical everywhere, with the 4 validators at equal power', () => {
    const texts = homes.map((h) => readFileSync(join(h, 'config', 'genesis.json')));
    for (const t of texts) assert.ok(t.equals(texts[0]!));
    const g = JSON.parse(texts[0]!.toString());
    assert.equal(g.chain_id, 'chain-local');
    assert.equal(g.validators.length, 4);
    homes.slice(0, 4).forEach((h, i) => {
      const key = readJson(join(h, 'config', 'priv_validator_key.json'));
      const v = g.validators[i];
      assert.deepEqual(v.pub_key, key.pub_key);
      assert.equal(v.address, key.address);
      assert.equal(v.power, '10');
      assert.equal(v.name, `node${i}`);
    });
    const nonValidator = readJson(join(homes[4]!, 'config', 'priv_validator_key.json')).pub_key.value;
    assert.ok(g.validators.every((v: { pub_key: { value: string } }) => v.pub_key.value !== nonValidator));
  });

  it('chain-local: the dev accounts and dev_accounts.json are exactly those of init full', async () => {
    const initHome = join(root, 'init-home');
    const r = await run(['init', 'full', '--chain-id', 'chain-local', '--home', initHome]);
    assert.equal(r.code, 0, r.stderr);
    const initGenesis = readJson(join(initHome, 'config', 'genesis.json'));
    const initDev = readFileSync(join(initHome, 'config', 'dev_accounts.json'), 'utf8');
    const g = readJson(join(homes[0]!, 'config', 'genesis.json'));
    assert.equal(g.app_state.evm.accounts.length, 20);
    assert.deepEqual(g.app_state.evm, initGenesis.app_state.evm);
    assert.deepEqual(g.consensus_params, initGenesis.consensus_params);
    for (const h of homes)
      assert.equal(readFileSync(join(h, 'config', 'dev_accounts.json'), 'utf8'), initDev);
  });

  it('each node names exactly the other four as persistent peers, on 127.0.0.2..6', () => {
    homes.forEach((home, i) => {
      const { config, problems } = loadNodeConfig(home);
      assert.deepEqual(problems, []);
      assert.equal(config.moniker, `node${i}`);
      const expected = ips
        .map((ip, j) => ({ nodeId: ids[j]!, host: ip, port: 26656 }))
        .filter((_, j) => j !== i);
      assert.deepEqual(
        [...config.p2p.persistentPeers].sort((a, b) => a.host.localeCompare(b.host)),
        expected,
      );
      // And as written in the file, each entry as <node_id>@<ip>:26656.
      const text = readFileSync(join(home, 'config', 'config.toml'), 'utf8');
      const written = JSON.parse(tomlValue(text, 'p2p', 'persistent_peers'))
        .split(',')
        .sort();
      assert.deepEqual(written, expected.map((p) => `${p.nodeId}@${p.host}:26656`).sort());
      assert.equal(config.p2p.externalAddress, `${ips[i]}:26656`);
      assert.equal(config.p2p.allowDuplicateIp, true);
      assert.equal(config.p2p.addrBookStrict, false);
      assert.equal(config.p2p.pex, true);
    });
  });

  it("every listener of node i is bound to node i's IP with the default ports; client.toml points at it", () => {
    homes.forEach((home, i) => {
      const { config, app, client, problems } = loadNodeConfig(home);
      assert.deepEqual(problems, []);
      assert.deepEqual(
        listenAddresses(config, app).map((l) => [l.key, l.address.host, l.address.port, l.enabled]),
        [
          ['p2p.laddr', ips[i], 26656, true],
          ['rpc.laddr', ips[i], 26657, true],
          ['api.address', ips[i], 1317, true],
          ['evm.rpc_address', ips[i], 8545, true],
          ['evm.ws_address', ips[i], 8546, true],
          ['instrumentation.prometheus_listen_addr', ips[i], 26660, true],
        ],
      );
      assert.equal(config.p2p.laddr.raw, `tcp://${ips[i]}:26656`);
      assert.equal(config.rpc.laddr.raw, `tcp://${ips[i]}:26657`);
      assert.deepEqual(
        { host: app.evm.apiAddress.host, port: app.evm.apiAddress.port },
        { host: ips[i], port: 1317 },
      );
      assert.equal(client.nodeHttpUrl, `http://${ips[i]}:26657`);
      assert.equal(client.chainId, 'chain-local');
      assert.equal(app.mode, 'full');
    });
  });

  it('every home passes `noded config validate` and `noded validate-genesis`', async () => {
    const results = await runEach(
      homes.flatMap((home) => [
        ['config', 'validate', '--home', home],
        ['validate-genesis', '--home', home],
      ]),
    );
    results.forEach((r, k) => {
      assert.equal(r.code, 0, `${homes[k >> 1]}: ${r.stderr}`);
    });
    assert.match(
      results[1]!.stdout,
      /valid genesis for chain-local \(EVM chain id 31337\), 4 validator\(s\), 20/,
    );
  });

  it('prints each node: dir, node id, IP, validator or not', () => {
    homes.forEach((home, i) => {
      const line = stdout.split('\n').find((l) => l.includes(`${home} `));
      assert.ok(line, `no line for ${home}`);
      assert.ok(line.includes(ids[i]!), line);
      assert.ok(line.includes(ips[i]!), line);
      assert.match(line, i < 4 ? /\bvalidator$/ : /\bnon-validator$/);
    });
    assert.match(stdout, /4 validators \(power 10 each\), 1 non-validator/);
  });
});

describe('noded testnet: the output directory', () => {
  it('an existing non-empty directory is refused without --overwrite and replaced with it', async () => {
    const out = join(root, 'existing');
    mkdirSync(out);
    writeFileSync(join(out, 'keep-me.txt'), 'x');
    const before = snapshot(root);
    const r1 = await run(['testnet', '--validators', '1', '--output', out]);
    assert.equal(r1.code, 1);
    assert.equal(
      r1.stderr.trim(),
      `noded: ${out} exists and is not empty; nothing was written (pass --overwrite to replace it and everything in it)`,
    );
    assert.deepEqual(snapshot(root), before);

    const r2 = await run(['testnet', '--validators', '2', '--output', out, '--overwrite']);
    assert.equal(r2.code, 0, r2.stderr);
    assert.deepEqual(readdirSync(out).sort(), ['node0', 'node1']);
    const first = nodeIdOf(join(out, 'node0'));

    // Again with --overwrite: a fresh network (new keys), nothing left of the old one.
    const r3 = await run(['testnet', '--validators', '1', '--output', out, '--overwrite']);
    assert.equal(r3.code, 0, r3.stderr);
    assert.deepEqual(readdirSync(out), ['node0']);
    assert.notEqual(nodeIdOf(join(out, 'node0')), first);
    // No staging directory is left beside it.
    assert.deepEqual(
      readdirSync(root).filter((n) => n.includes('tmp')),
      [],
    );
  });

  it('an empty directory is used; a file is refused; --overwrite is refused while a node runs there', async () => {
    const empty = join(root, 'empty');
    mkdirSync(empty);
    const r1 = await run(['testnet', '--validators', '1', '--output', empty]);
    assert.equal(r1.code, 0, r1.stderr);

    const file = join(root, 'a-file');
    writeFileSync(file, 'x');
    const r2 = await run(['testnet', '--validators', '1', '--output', file, '--overwrite']);
    assert.equal(r2.code, 1);
    assert.match(r2.stderr, /a-file exists and is not a directory; nothing was written/);

    writeFileSync(join(empty, 'node0', 'data', 'noded.pid'), `${process.pid}\n`);
    const before = snapshot(empty);
    const r3 = await run(['testnet', '--validators', '1', '--output', empty, '--overwrite']);
    assert.equal(r3.code, 1);
    assert.match(
      r3.stderr,
      new RegExp(`a node \\(pid ${process.pid}\\) is running on this home; stop it first`),
    );
    assert.deepEqual(snapshot(empty), before);
  });
});

describe('noded testnet: other networks and bad arguments', () => {
  it('--chain-id chain-testnet: the same layout, its own genesis with the validators, no dev accounts', async () => {
    const out = join(root, 'testnet-chain');
    const r = await run([
      'testnet',
      '--validators',
      '2',
      '--output',
      out,
      '--chain-id',
      'chain-testnet',
      '--starting-ip',
      '127.0.1.10',
    ]);
    assert.equal(r.code, 0, r.stderr);
    assert.doesNotMatch(r.stdout, /dev accounts|mnemonic/);
    for (const [i, ip] of ['127.0.1.10', '127.0.1.11'].entries()) {
      const home = join(out, `node${i}`);
      assert.equal(existsSync(join(home, 'config', 'dev_accounts.json')), false);
      const g = readJson(join(home, 'config', 'genesis.json'));
      assert.equal(g.chain_id, 'chain-testnet');
      assert.equal(g.app_state.evm.chain_id, '31611');
      assert.deepEqual(g.app_state.evm.accounts, []);
      assert.equal(g.validators.length, 2);
      const { config, client, problems } = loadNodeConfig(home);
      assert.deepEqual(problems, []);
      assert.equal(client.chainId, 'chain-testnet');
      assert.equal(config.p2p.laddr.host, ip);
      const v = await run(['validate-genesis', '--home', home]);
      assert.equal(v.code, 0, v.stderr);
    }
  });

  it('every bad argument gets a precise message, exit 1, and nothing on disk', async () => {
    const never = join(root, 'never');
    const cases: Array<[string[], string[]]> = [
      [['--validators', '0'], ['--validators: must be an integer >= 1, got "0"']],
      [['--validators', 'two'], ['--validators: must be an integer >= 1, got "two"']],
      [['--validators', '1.5'], ['--validators: must be an integer >= 1, got "1.5"']],
      [
        ['--validators', '2', '--non-validators', '-1'],
        ['--non-validators: must be an integer >= 0, got "-1"'],
      ],
      [
        ['--validators', '1', '--starting-ip', '127.0.0'],
        ['--starting-ip: must be an IPv4 address such as 127.0.0.2, got "127.0.0"'],
      ],
      [
        ['--validators', '1', '--starting-ip', '127.0.0.256'],
        ['--starting-ip: must be an IPv4 address such as 127.0.0.2, got "127.0.0.256"'],
      ],
      [
        ['--validators', '1', '--starting-ip', '::1'],
        ['--starting-ip: must be an IPv4 address such as 127.0.0.2, got "::1"'],
      ],
      [
        ['--validators', '1', '--starting-ip', '127.0.0.255'],
        ['--starting-ip: the last number must be between 1 and 254, got "127.0.0.255"'],
      ],
      [
        ['--validators', '1', '--starting-ip', '0.0.0.2'],
        ['--starting-ip: must be an address nodes can be dialed at, not in 0.0.0.0/8, got "0.0.0.2"'],
      ],
      [
        ['--validators', '3', '--non-validators', '2', '--starting-ip', '127.0.0.251'],
        [
          '--starting-ip: 127.0.0.251 leaves room for 4 nodes (the last number may not pass 254), got 5 (--validators 3 + --non-validators 2)',
        ],
      ],
      [
        ['--validators', '1', '--chain-id', 'chain-x'],
        ['--chain-id: must be one of chain-mainnet, chain-testnet, chain-local, got "chain-x"'],
      ],
      [
        ['--validators', '0', '--chain-id', 'nope', '--starting-ip', 'x'],
        [
          '--validators: must be an integer >= 1, got "0"',
          '--chain-id: must be one of chain-mainnet, chain-testnet, chain-local, got "nope"',
          '--starting-ip: must be an IPv4 address such as 127.0.0.2, got "x"',
        ],
      ],
    ];
    const before = snapshot(root);
    const results = await runEach(cases.map(([args]) => ['testnet', ...args, '--output', never]));
    results.forEach((r, i) => {
      const [args, lines] = cases[i]!;
      assert.equal(r.code, 1, `${args.join(' ')}: ${r.stderr}`);
      assert.equal(
        r.stderr,
        `noded: testnet: nothing was written\n${lines.map((l) => `  ${l}\n`).join('')}`,
        args.join(' '),
      );
    });
    // The same rule and message as init for a chain id.
    const init = await run(['init', 'full', '--chain-id', 'chain-x', '--home', never]);
    assert.ok(init.stderr.includes(cases[10]![1][0]!), init.stderr);

    const missing = await run(['testnet', '--output', never]);
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /required option '--validators <n>' not specified/);
    const noOutput = await run(['testnet', '--validators', '1']);
    assert.equal(noOutput.code, 1);
    assert.match(noOutput.stderr, /required option '--output <dir>' not specified/);
    assert.deepEqual(snapshot(root), before);
    assert.equal(existsSync(never), false);
  });
});
