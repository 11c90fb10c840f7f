import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { appendFileSync, cpSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { homePaths, loadNodeKey, loadValidatorKey, shippedGenesisPath } from '@noded/config';
import { MAIN, removeDir, runCli, snapshot, tempDir } from './helpers.js';

const root = tempDir();
const template = join(root, 'template');
let n = 0;
function freshHome(): string {
  const home = join(root, `home-${++n}`);
  cpSync(template, home, { recursive: true });
  return home;
}

before(async () => {
  const r = await runCli(['init', 'full', '--chain-id', 'chain-local', '--home', template]);
  assert.equal(r.code, 0, r.stderr);
});
after(() => removeDir(root));

describe('noded config validate', () => {
  it('passes on a fresh home', async () => {
    const r = await runCli(['config', 'validate', '--home', template]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /config\.toml, app\.toml, client\.toml: valid/);
  });

  it('prints every problem in the file: key: rule style, exits 1, changes nothing', async () => {
    const home = freshHome();
    const p = homePaths(home);
    const app = readFileSync(p.appToml, 'utf8')
      .replace('max_gas_price = "1000000000000"', 'max_gas_price = "abc"')
      .replace('rpc_read_timeout = "10s"', 'rpc_read_timeout = "10 seconds"')
      .replace('tls_cert_file = ""', 'tls_cert_file = "missing.pem"')
      .replace('max_open_connections = 1000', 'max_open_connections = "1000"');
    writeFileSync(p.appToml, app);
    const cfg = readFileSync(p.configToml, 'utf8')
      .replace('laddr = "tcp://0.0.0.0:26656"', 'laddr = "tcp://0.0.0.0:99999"')
      .replace('prometheus_listen_addr = ":26660"', 'prometheus_listen_addr = "metrics"')
      .replace('\n[consensus]\n', '\n[consensus]\ntimeout_commitx = "1s"\n');
    writeFileSync(p.configToml, cfg);
    writeFileSync(
      p.clientToml,
      `${readFileSync(p.clientToml, 'utf8')}\nbroadcast-mode = "block"\n`.replace(
        'broadcast-mode = "sync"\n',
        '',
      ),
    );
    const before = snapshot(home);
    const r = await runCli(['config', 'validate', '--home', home]);
    assert.equal(r.code, 1);
    for (const line of [
      'config.toml: consensus.timeout_commitx: unknown key (did you mean "timeout_commit"?)',
      'config.toml: p2p.laddr: port must be between 1 and 65535, got "tcp://0.0.0.0:99999"',
      'config.toml: instrumentation.prometheus_listen_addr: must be a listen address "tcp://host:port" or "host:port", got "metrics"',
      'app.toml: api.max_open_connections: must be an integer, got "1000"',
      'app.toml: api.rpc_read_timeout: must be a duration string such as "1s", "500ms" or "1m30s", got "10 seconds"',
      'app.toml: evm.max_gas_price: must be a decimal integer string, got "abc"',
      'app.toml: api.tls_key_file: must be set when api.tls_cert_file is set ("missing.pem")',
      'client.toml: broadcast-mode: must be one of "sync", "async", got "block"',
    ]) {
      assert.ok(r.stderr.includes(`  ${line}\n`), `missing "${line}" in:\n${r.stderr}`);
    }
    assert.match(r.stderr, /^noded: config validate: 8 problems$/m);
    assert.deepEqual(snapshot(home), before);
  });

  it('names a missing home file', async () => {
    const home = freshHome();
    rmSync(homePaths(home).appToml);
    const r = await runCli(['config', 'validate', '--home', home]);
    assert.equal(r.code, 1);
    assert.ok(r.stderr.includes(`app.toml: cannot read ${homePaths(home).appToml}: no such file`), r.stderr);
  });
});

describe('noded validate-genesis', () => {
  it('passes on the home genesis and on a FILE argument', async () => {
    const [a, b] = await Promise.all([
      runCli(['validate-genesis', '--home', template]),
      runCli(['validate-genesis', shippedGenesisPath('chain-mainnet')!]),
    ]);
    assert.equal(a.code, 0, a.stderr);
    assert.match(
      a.stdout,
      /valid genesis for chain-local \(EVM chain id 31337\), 1 validator\(s\), 20 account\(s\)/,
    );
    assert.equal(b.code, 0, b.stderr);
    assert.match(b.stdout, /valid genesis for chain-mainnet \(EVM chain id 31612\)/);
  });

  it('lists every problem of a bad genesis; not JSON; missing file', async () => {
    const g = JSON.parse(readFileSync(homePaths(template).genesis, 'utf8'));
    g.consensus_params.block.max_bytes = '0';
    g.chain_id = 'chain-moon';
    g.validators[0].power = '0';
    g.app_state.evm.accounts[1].address = g.app_state.evm.accounts[0].address;
    const bad = join(root, 'bad.json');
    writeFileSync(bad, JSON.stringify(g));
    const notJson = join(root, 'broken.json');
    writeFileSync(notJson, '{"chain_id": ');
    const [r, j, m] = await Promise.all([
      runCli(['validate-genesis', bad]),
      runCli(['validate-genesis', notJson]),
      runCli(['validate-genesis', join(root, 'absent.json')]),
    ]);
    assert.equal(r.code, 1);
    for (const line of [
      'bad.json: chain_id: must be one of "chain-mainnet", "chain-testnet", "chain-local", got "chain-moon"',
      'bad.json: consensus_params.block.max_bytes: must be > 0 and <= 104857600, got "0"',
      'bad.json: validators[0].power: must be > 0, got "0"',
      `bad.json: app_state.evm.accounts[1].address: duplicate of app_state.evm.accounts[0], got "${g.app_state.evm.accounts[0].address}"`,
    ]) {
      assert.ok(r.stderr.includes(line), `missing "${line}" in:\n${r.stderr}`);
    }
    assert.equal(j.code, 1);
    assert.match(j.stderr, /broken\.json: not valid JSON/);
    assert.equal(m.code, 1);
    assert.match(m.stderr, /absent\.json: cannot read .*absent\.json: no such file/);
  });
});

describe('noded tendermint show-node-id / show-validator', () => {
  it('print the node id and the validator public key from the key files', async () => {
    const [id, val] = await Promise.all([
      runCli(['tendermint', 'show-node-id', '--home', template]),
      runCli(['tendermint', 'show-validator', '--home', template]),
    ]);
    assert.equal(id.code, 0, id.stderr);
    assert.equal(id.stdout.trim(), loadNodeKey(homePaths(template).nodeKey).nodeId);
    assert.equal(val.code, 0, val.stderr);
    assert.deepEqual(JSON.parse(val.stdout), {
      '@type': '/cosmos.crypto.ed25519.PubKey',
      key: Buffer.from(loadValidatorKey(homePaths(template).privValidatorKey).publicKey).toString('base64'),
    });
  });

  it('name a missing or broken key file', async () => {
    const home = freshHome();
    rmSync(homePaths(home).nodeKey);
    writeFileSync(homePaths(home).privValidatorKey, 'not json');
    const [id, val] = await Promise.all([
      runCli(['tendermint', 'show-node-id', '--home', home]),
      runCli(['tendermint', 'show-validator', '--home', home]),
    ]);
    assert.equal(id.code, 1);
    assert.equal(id.stderr, `noded: ${homePaths(home).nodeKey}: cannot read: ENOENT\n`);
    assert.equal(val.code, 1);
    assert.match(val.stderr, /priv_validator_key\.json: not valid JSON/);
  });
});

describe('noded networks / version', () => {
  it('list and show the presets (seed §2.1 fields), text and json', async () => {
    const [list, show, local, unknown] = await Promise.all([
      runCli(['networks', 'list', '--home', template]),
      runCli(['networks', 'show', 'chain-mainnet', '--output', 'json', '--home', template]),
      runCli(['networks', 'show', 'chain-local', '--home', template]),
      runCli(['networks', 'show', 'chain-moon', '--home', template]),
    ]);
    assert.equal(list.code, 0, list.stderr);
    assert.deepEqual(
      list.stdout
        .trim()
        .split('\n')
        .map((l) => l.split(/\s+/)[0]),
      ['chain-mainnet', 'chain-testnet', 'chain-local'],
    );
    const m = JSON.parse(show.stdout);
    assert.equal(m.chain_id, 'chain-mainnet');
    assert.equal(m.evm_chain_id, 31612);
    assert.equal(m.websocket, `${m.rpc_endpoint.replace('https://', 'wss://')}/websocket`);
    assert.match(m.explorer, /^https:\/\//);
    assert.match(local.stdout, /^rpc_endpoint +http:\/\/localhost:26657$/m);
    assert.match(local.stdout, /^websocket +ws:\/\/localhost:26657\/websocket$/m);
    assert.doesNotMatch(local.stdout, /explorer/);
    assert.equal(unknown.code, 1);
    assert.match(
      unknown.stderr,
      /chain_id: must be one of chain-mainnet, chain-testnet, chain-local, got "chain-moon"/,
    );
  });

  it('<home>/config/networks.json overrides the public URLs; a bad override is refused', async () => {
    const home = freshHome();
    writeFileSync(
      join(home, 'config', 'networks.json'),
      JSON.stringify({ 'chain-mainnet': { rpc_endpoint: 'https://rpc.mine.example' } }),
    );
    const r = await runCli(['networks', 'show', 'chain-mainnet', '--home', home]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^websocket +wss:\/\/rpc\.mine\.example\/websocket$/m);
    writeFileSync(
      join(home, 'config', 'networks.json'),
      JSON.stringify({ 'chain-local': { explorer: 'https://x.example' } }),
    );
    const bad = await runCli(['networks', 'list', '--home', home]);
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /chain-local\.explorer: chain-local has no explorer/);
  });

  it('version prints the package version', async () => {
    const r = await runCli(['version']);
    assert.equal(r.code, 0);
    assert.match(r.stdout, /^noded \d+\.\d+\.\d+\n/);
  });
});

describe('noded logs', () => {
  const line = (i: number) =>
    JSON.stringify({
      level: 30,
      time: 1735787045000 + i,
      pid: 1,
      hostname: 'h',
      module: 'consensus',
      msg: `committed block`,
      height: i,
    });

  it('shows the last N lines of <home>/logs/noded.log, readable or raw', async () => {
    const home = freshHome();
    mkdirSync(join(home, 'logs'));
    writeFileSync(
      join(home, 'logs', 'noded.log'),
      `${[1, 2, 3, 4, 5].map(line).join('\n')}\nplain text line\n`,
    );
    const [r, raw] = await Promise.all([
      runCli(['logs', '--lines', '2', '--home', home]),
      runCli(['logs', '-n', '1', '--raw', '--home', home]),
    ]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(
      r.stdout,
      '2025-01-02T03:04:05.005Z INFO  [consensus] committed block height=5\nplain text line\n',
    );
    assert.equal(raw.stdout, 'plain text line\n');
  });

  it('--follow prints lines as they are appended, until SIGTERM', async () => {
    const home = freshHome();
    const file = join(home, 'logs', 'noded.log');
    mkdirSync(join(home, 'logs'));
    writeFileSync(file, `${line(1)}\n`);
    const child = spawn(process.execPath, [MAIN, 'logs', '--follow', '--home', home], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d) => {
      out += d;
    });
    const exited = new Promise<number | null>((r) => child.on('close', (code) => r(code)));
    try {
      const waitFor = async (s: string) => {
        const deadline = Date.now() + 10_000;
        while (!out.includes(s) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
        assert.ok(out.includes(s), `never saw ${s} in ${out}`);
      };
      await waitFor('height=1');
      appendFileSync(file, `${line(2)}\n`);
      await waitFor('height=2');
      child.kill('SIGTERM');
      assert.equal(await exited, 0);
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
    }
  });

  it('a missing log file and a bad --lines are named', async () => {
    const home = freshHome();
    const [missing, badLines] = await Promise.all([
      runCli(['logs', '--home', home]),
      runCli(['logs', '--lines', '0', '--home', home]),
    ]);
    assert.equal(missing.code, 1);
    assert.ok(missing.stderr.includes(`no log file at ${join(home, 'logs', 'noded.log')}`), missing.stderr);
    assert.equal(badLines.code, 1);
    assert.match(badLines.stderr, /--lines: must be a positive integer, got "0"/);
  });
});

describe('--help', () => {
  it('every command has help', async () => {
    const commands = [
      ['init'],
      ['start'],
      ['service'],
      ['nats-auth'],
      ['status'],
      ['logs'],
      ['config', 'validate'],
      ['validate-genesis'],
      ['tendermint', 'show-peers'],
      ['tendermint', 'show-node-id'],
      ['tendermint', 'show-validator'],
      ['tendermint', 'unsafe-reset-all'],
      ['unsafe-reset-all'],
      ['networks', 'list'],
      ['networks', 'show'],
      ['version'],
    ];
    for (let i = 0; i < commands.length; i += 5) {
      const batch = commands.slice(i, i + 5);
      const results = await Promise.all(batch.map((c) => runCli([...c, '--help'])));
      results.forEach((r, j) => {
        assert.equal(r.code, 0, batch[j]!.join(' '));
        assert.match(r.stdout, new RegExp(`^Usage: noded ${batch[j]!.join(' ')}`), batch[j]!.join(' '));
        if (!['version'].includes(batch[j]![0]!)) assert.match(r.stdout, /--home <dir>/, batch[j]!.join(' '));
      });
    }
  });
});
