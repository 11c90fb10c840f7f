import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { homePaths } from '@noded/config';
import { freePorts, MAIN, removeDir, runCli, snapshot, tempDir, useFreePorts } from './helpers.js';

const root = tempDir();
const template = join(root, 'template');
let n = 0;
/** A fresh copy of an initialised chain-local home whose listeners use free ports. */
async function freshHome(): Promise<{ home: string; ports: Record<string, number> }> {
  const home = join(root, `home-${++n}`);
  cpSync(template, home, { recursive: true });
  return { home, ports: await useFreePorts(home) };
}

before(async () => {
  const r = await runCli([
    'init',
    'full',
    '--chain-id',
    'chain-local',
    '--moniker',
    'starter',
    '--home',
    template,
  ]);
  assert.equal(r.code, 0, r.stderr);
});
after(() => removeDir(root));

describe('noded start --dry-run', () => {
  it('passes on a fresh home and prints chain id, mode, ports, peers and home without writing anything', async () => {
    const { home, ports } = await freshHome();
    const before = snapshot(home);
    const r = await runCli(['start', '--dry-run', '--home', home]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /every check passed/);
    assert.match(r.stdout, /chain id +chain-local \(EVM chain id 31337\)/);
    assert.match(r.stdout, /mode +full/);
    assert.ok(r.stdout.includes(home));
    for (const p of Object.values(ports)) assert.ok(r.stdout.includes(`:${p}`), `port ${p} not printed`);
    assert.match(r.stdout, /persistent_peers +\(none\)/);
    assert.match(r.stdout, /power 10 of 1 genesis validators/);
    assert.ok(r.stdout.includes(join(home, 'logs', 'noded.log')));
    assert.deepEqual(snapshot(home), before);
  });

  it('--mode archive, --log-level and --log-file are taken into the plan', async () => {
    const { home } = await freshHome();
    const log = join(root, 'elsewhere', 'n.log');
    const r = await runCli([
      'start',
      '--dry-run',
      '--mode',
      'archive',
      '--log-level',
      'debug',
      '--log-file',
      log,
      '--home',
      home,
    ]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /mode +archive/);
    assert.ok(r.stdout.includes(`${log} (level debug)`));
  });

  it('a listen address that is taken is reported with its key', async () => {
    const { home, ports } = await freshHome();
    const server: Server = createServer();
    await new Promise<void>((r) => server.listen(ports.rpc, '127.0.0.1', r));
    try {
      const r = await runCli(['start', '--dry-run', '--home', home]);
      assert.equal(r.code, 1);
      assert.ok(
        r.stderr.includes(
          `config.toml: rpc.laddr: cannot listen on 127.0.0.1:${ports.rpc}: address already in use`,
        ),
        r.stderr,
      );
    } finally {
      await new Promise((r) => server.close(r));
    }
  });

  it('lists every problem of configs, genesis, keys and validator state, and exits 1', async () => {
    const { home } = await freshHome();
    const p = homePaths(home);
    writeFileSync(
      p.appToml,
      readFileSync(p.appToml, 'utf8').replace('base_fee = "1000000000"', 'base_fee = "1"'),
    );
    writeFileSync(p.configToml, `${readFileSync(p.configToml, 'utf8')}\n[extra]\n`);
    const g = JSON.parse(readFileSync(p.genesis, 'utf8'));
    g.genesis_time = 'yesterday';
    writeFileSync(p.genesis, JSON.stringify(g));
    writeFileSync(p.nodeKey, '{"priv_key":{"type":"tendermint/PrivKeyEd25519","value":"AAAA"}}');
    writeFileSync(p.privValidatorState, '{"height":5,"round":0,"step":9}');
    writeFileSync(p.clientToml, 'chain-id = "chain-testnet"\n');
    const before = snapshot(home);
    const r = await runCli(['start', '--dry-run', '--home', home]);
    assert.equal(r.code, 1);
    for (const line of [
      'config.toml: extra: unknown key',
      'app.toml: evm.gas.base_fee: must be between evm.gas.min_gas_price ("1000000000") and evm.gas.max_gas_price ("1000000000000"), got "1"',
      'genesis.json: genesis_time: must be an ISO 8601 UTC timestamp',
      'node_key.json: priv_key.value: must hold 64 bytes (seed and public key), got 3',
      'priv_validator_state.json: height: must be a string holding an integer >= 0, got 5',
      'priv_validator_state.json: step: must be an integer between 0 and 3, got 9',
    ]) {
      assert.ok(r.stderr.includes(line), `missing "${line}" in:\n${r.stderr}`);
    }
    assert.match(r.stderr, /start --dry-run: \d+ problems/);
    assert.deepEqual(snapshot(home), before);

    // client.toml chain-id must agree with genesis once the genesis is readable.
    writeFileSync(p.genesis, readFileSync(join(template, 'config', 'genesis.json')));
    const r2 = await runCli(['start', '--dry-run', '--home', home]);
    assert.ok(
      r2.stderr.includes(
        'client.toml: chain-id: must match genesis.json chain_id "chain-local", got "chain-testnet"',
      ),
      r2.stderr,
    );
  });

  it('takes NODED_<KEY> environment overrides of config.toml and app.toml, names them, and checks them as the file', async () => {
    const { home, ports } = await freshHome();
    const [rpc] = await freePorts(1);
    const before = snapshot(home);
    const env = {
      NODED_RPC_LADDR: `tcp://127.0.0.1:${rpc}`,
      NODED_MONIKER: 'from-env',
      NODED_EVM_GAS_BASE_FEE: '2000000000',
    };
    const r = await runCli(['start', '--dry-run', '--home', home], { env });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /moniker +from-env/);
    assert.ok(r.stdout.includes(`127.0.0.1:${rpc}  (config.toml rpc.laddr)`), r.stdout);
    assert.ok(
      !r.stdout.includes(`:${ports.rpc}  (config.toml rpc.laddr)`),
      "the file's rpc.laddr is replaced",
    );
    assert.match(r.stdout, /set by environment variables:/);
    assert.match(r.stdout, /NODED_RPC_LADDR +config\.toml rpc\.laddr/);
    assert.match(r.stdout, /NODED_MONIKER +config\.toml moniker/);
    assert.match(r.stdout, /NODED_EVM_GAS_BASE_FEE +app\.toml evm\.gas\.base_fee/);
    assert.deepEqual(snapshot(home), before, 'an override is not written into the home');

    const bad = await runCli(['start', '--dry-run', '--home', home], {
      env: { NODED_CONSENSUS_CREATE_EMPTY_BLOCKS: 'yes', NODED_EVM_GAS_BASE_FEE: '1' },
    });
    assert.equal(bad.code, 1);
    assert.ok(
      bad.stderr.includes(
        'config.toml: consensus.create_empty_blocks: must be true or false, got "yes" (set by $NODED_CONSENSUS_CREATE_EMPTY_BLOCKS)',
      ),
      bad.stderr,
    );
    assert.match(
      bad.stderr,
      /app\.toml: evm\.gas\.base_fee: must be between .*got "1" \(set by \$NODED_EVM_GAS_BASE_FEE\)/,
    );
    const plain = await runCli(['start', '--dry-run', '--home', home]);
    assert.equal(plain.code, 0, plain.stderr);
    assert.doesNotMatch(plain.stdout, /set by environment variables/);
  });

  it('runs a light home as a light node: no REST API, the trust root and trusting period in the plan', async () => {
    const light = join(root, 'light-plan');
    assert.equal((await runCli(['init', 'light', '--chain-id', 'chain-local', '--home', light])).code, 0);
    const ports = await useFreePorts(light);
    // Something else holds the REST API's port: a light node does not serve it, so that is no problem.
    const blocker = createServer();
    await new Promise<void>((r) => blocker.listen(ports.api, '127.0.0.1', r));
    try {
      const r = await runCli(['start', '--dry-run', '--home', light]);
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, /mode +light/);
      assert.match(
        r.stdout,
        /light client +trusts the first block, signed by the 1 genesis validators; trusting period 168h/,
      );
      assert.match(r.stdout, /rest api +\(disabled\)/);
      const full = await runCli(['start', '--dry-run', '--mode', 'light', '--home', light]);
      assert.equal(full.code, 0, full.stderr);
    } finally {
      blocker.close();
    }
  });

  it('refuses a light run on a full home and the reverse, bad flags, a missing home and a home another node holds', async () => {
    const light = join(root, 'light');
    assert.equal((await runCli(['init', 'light', '--chain-id', 'chain-local', '--home', light])).code, 0);
    const { home } = await freshHome();
    writeFileSync(homePaths(home).pidFile, `${process.pid}\n`);
    const cases: Array<[string[], RegExp]> = [
      [
        ['start', '--dry-run', '--mode', 'light', '--home', home],
        /--mode light: this home was initialised as a full node \(app\.toml mode = "full"\); a light node keeps only verified headers \(data\/light\.db\)[\s\S]*noded init light --chain-id chain-local --home <another directory>/,
      ],
      [
        ['start', '--dry-run', '--mode', 'archive', '--home', light],
        /--mode archive: this home was initialised as a light node \(app\.toml mode = "light"\); it holds no block store or EVM state to run as an archive node[\s\S]*noded init archive --chain-id chain-local/,
      ],
      [
        ['start', '--mode', 'turbo', '--home', home],
        /--mode: must be one of full, light, archive, got "turbo"/,
      ],
      [
        ['start', '--log-level', 'loud', '--home', home],
        /--log-level: must be one of trace, debug, info, warn, error, got "loud"/,
      ],
      [
        ['start', '--log-format', 'xml', '--home', home],
        /--log-format: must be one of plain, json, got "xml"/,
      ],
      [['start', '--dry-run', '--home', join(root, 'nothing-here')], /no node home at .*nothing-here/],
      [
        ['start', '--dry-run', '--home', home],
        new RegExp(`noded\\.pid: a node \\(pid ${process.pid}\\) is already running on this home`),
      ],
    ];
    const results = await Promise.all(cases.map(([args]) => runCli(args)));
    results.forEach((r, i) => {
      assert.equal(r.code, 1, cases[i]![0].join(' '));
      assert.match(r.stderr, cases[i]![1]);
    });
    assert.equal(existsSync(join(root, 'nothing-here')), false);
  });
});

describe('noded start (runtime lifecycle)', () => {
  const fake = join(root, 'fake-node.mjs');
  before(() => {
    // A stand-in for services/noded/src/node.ts that records what it was given.
    writeFileSync(
      fake,
      `import { writeFileSync } from 'node:fs';
export async function runNode(opts) {
  if (process.env.FAKE_FAIL) throw new Error('database is corrupt');
  writeFileSync(process.env.FAKE_OUT, JSON.stringify({
    mode: opts.mode, logLevel: opts.logLevel, logFile: opts.logFile, home: opts.home,
    chainId: opts.genesis.runtime.chainId, moniker: opts.loaded.config.moniker,
    validators: opts.genesis.runtime.validators.length,
  }));
  let finish;
  const done = new Promise((r) => { finish = r; });
  const keepAlive = setInterval(() => {}, 1000);
  return { done, async stop() { clearInterval(keepAlive); writeFileSync(process.env.FAKE_OUT + '.stopped', 'yes'); finish(); } };
}
`,
    );
  });

  it('runs the node with the checked config, holds the home lock, and stops cleanly on SIGTERM', async () => {
    const { home } = await freshHome();
    const out = join(root, 'fake-out.json');
    const child = spawn(
      process.execPath,
      [MAIN, 'start', '--mode', 'archive', '--log-level', 'warn', '--home', home],
      {
        env: { ...process.env, NODED_RUNTIME_MODULE: fake, FAKE_OUT: out },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => {
      stdout += d;
    });
    child.stderr.on('data', (d) => {
      stderr += d;
    });
    const exited = new Promise<number | null>((r) => child.on('close', (code) => r(code)));
    try {
      const deadline = Date.now() + 15_000;
      while (!stdout.includes('noded is running') && Date.now() < deadline && child.exitCode === null) {
        await new Promise((r) => setTimeout(r, 50));
      }
      assert.match(stdout, /noded is running/, stderr);
      assert.equal(readFileSync(homePaths(home).pidFile, 'utf8').trim(), String(child.pid));
      assert.deepEqual(JSON.parse(readFileSync(out, 'utf8')), {
        mode: 'archive',
        logLevel: 'warn',
        logFile: join(home, 'logs', 'noded.log'),
        home,
        chainId: 'chain-local',
        moniker: 'starter',
        validators: 1,
      });
      assert.ok(existsSync(join(home, 'logs')));
      child.kill('SIGTERM');
      assert.equal(await exited, 0);
      assert.equal(readFileSync(`${out}.stopped`, 'utf8'), 'yes');
      assert.equal(existsSync(homePaths(home).pidFile), false);
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
    }
  });

  it('refuses a persistent_peers entry whose node id is malformed, names it, and starts nothing', async () => {
    const { home } = await freshHome();
    const p = homePaths(home);
    const original = readFileSync(p.configToml, 'utf8');
    const good = '0123456789ABCDEF0123456789abcdef01234567';
    const setPeers = (peers: string) =>
      writeFileSync(
        p.configToml,
        original.replace(/^persistent_peers = .*$/m, `persistent_peers = ${JSON.stringify(peers)}`),
      );
    for (const id of [good.slice(0, 39), `${good}0`, `${good.slice(0, 39)}g`, `0x${good.slice(0, 38)}`]) {
      const entry = `${id}@127.0.0.1:26656`;
      setPeers(`${good}@127.0.0.2:26656,${entry}`);
      const before = snapshot(home);
      const message = `config.toml: p2p.persistent_peers: each peer's node id must be exactly 40 hex digits, got ${JSON.stringify(id)} in ${JSON.stringify(entry)}`;
      const dry = await runCli(['start', '--dry-run', '--home', home]);
      assert.equal(dry.code, 1, dry.stdout);
      assert.ok(dry.stderr.includes(message), `missing "${message}" in:\n${dry.stderr}`);
      // The real start refuses before any runtime is loaded: the failing runtime never speaks.
      const run = await runCli(['start', '--home', home], {
        env: { NODED_RUNTIME_MODULE: fake, FAKE_OUT: join(root, 'peers.json'), FAKE_FAIL: '1' },
      });
      assert.equal(run.code, 1);
      assert.ok(run.stderr.includes(message), `missing "${message}" in:\n${run.stderr}`);
      assert.doesNotMatch(run.stderr, /database is corrupt/);
      assert.deepEqual(snapshot(home), before);
    }
    // CometBFT decodes the id as hex: either case is a well-formed id, read as lower case.
    setPeers(`${good}@127.0.0.2:26656`);
    const ok = await runCli(['start', '--dry-run', '--home', home]);
    assert.equal(ok.code, 0, ok.stderr);
    assert.match(ok.stdout, new RegExp(`persistent_peers +${good.toLowerCase()}@127\\.0\\.0\\.2:26656`));
  });

  it('refuses to start beside cluster services running on the home, naming them, and releases the lock', async () => {
    const { home } = await freshHome();
    // what `noded service executor` writes while it runs (the test process stands in as the live pid)
    mkdirSync(homePaths(home).servicesDir, { recursive: true });
    writeFileSync(join(homePaths(home).servicesDir, `executor.${process.pid}`), `${process.pid}\n`);
    const out = join(root, 'beside-services.json');
    const r = await runCli(['start', '--home', home], { env: { NODED_RUNTIME_MODULE: fake, FAKE_OUT: out } });
    assert.equal(r.code, 1);
    assert.match(
      r.stderr,
      new RegExp(
        `data/services: cluster services are running on this home \\(executor pid ${process.pid}\\); stop them before "noded start"`,
      ),
    );
    assert.equal(existsSync(out), false, 'the runtime never ran');
    assert.equal(existsSync(homePaths(home).pidFile), false);
  });

  it('a runtime that fails to start gives exit 1 and releases the lock', async () => {
    const { home } = await freshHome();
    const r = await runCli(['start', '--home', home], {
      env: { NODED_RUNTIME_MODULE: fake, FAKE_OUT: join(root, 'x.json'), FAKE_FAIL: '1' },
    });
    assert.equal(r.code, 1);
    assert.match(r.stderr, /the node failed to start: database is corrupt/);
    assert.equal(existsSync(homePaths(home).pidFile), false);
  });
});
