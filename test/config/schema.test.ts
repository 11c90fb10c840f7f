import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import {
  AppTomlFile,
  ClientTomlFile,
  type ConfigProblem,
  ConfigTomlFile,
  defaultAppTomlValues,
  defaultConfigTomlValues,
  formatProblem,
  keyPaths,
  listenAddresses,
  loadNodeConfig,
  parseAppToml,
  parseBtcAmount,
  parseClientToml,
  parseConfigToml,
  parseDuration,
  parseListenAddress,
  renderAppToml,
  renderClientToml,
  renderConfigToml,
  toApiOptions,
  toCometRpcOptions,
  toConsensusTimeouts,
  toEthRpcOptions,
  toExecutorSettings,
  toInstrumentationOptions,
} from '@noded/config';

const lines = (ps: ConfigProblem[]) => ps.map(formatProblem);
const app = (text: string, dir = '.') => {
  const problems: ConfigProblem[] = [];
  const r = parseAppToml(text, problems, dir);
  return { ...r, problems: lines(problems) };
};
const cfg = (text: string) => {
  const problems: ConfigProblem[] = [];
  const r = parseConfigToml(text, problems);
  return { ...r, problems: lines(problems) };
};

/** The repo root (walks up from the compiled test to the directory holding docs/). */
function repoFile(...parts: string[]): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'docs', 'configuration.md'))) {
    const up = dirname(dir);
    assert.notEqual(up, dir, 'docs/configuration.md not found above the test');
    dir = up;
  }
  return join(dir, ...parts);
}

const tmp = mkdtempSync(join(tmpdir(), 'noded-config-'));
after(() => rmSync(tmp, { recursive: true, force: true }));

describe('config defaults (seed §2.4, §8 and the integration contract)', () => {
  it('config.toml holds the seed consensus timeouts and p2p values, CometBFT elsewhere', () => {
    const f = defaultConfigTomlValues();
    assert.deepEqual(
      { ...f.consensus },
      {
        timeout_propose: '3s',
        timeout_propose_delta: '500ms',
        timeout_prevote: '1s',
        timeout_prevote_delta: '500ms',
        timeout_precommit: '1s',
        timeout_precommit_delta: '500ms',
        timeout_commit: '1s',
        create_empty_blocks: true,
        create_empty_blocks_interval: '0s',
        skip_timeout_commit: false,
        double_sign_check_height: 0,
      },
    );
    assert.equal(f.p2p.laddr, 'tcp://0.0.0.0:26656');
    assert.equal(f.p2p.unconditional_peer_ids, '');
    assert.equal(f.p2p.max_num_inbound_peers, 40);
    assert.equal(f.p2p.max_num_outbound_peers, 10);
    assert.equal(f.rpc.laddr, 'tcp://127.0.0.1:26657');
    assert.equal(f.rpc.max_open_connections, 900);
    assert.equal(f.rpc.max_subscription_clients, 100);
    assert.equal(f.rpc.max_subscriptions_per_client, 5);
    assert.equal(f.rpc.timeout_broadcast_tx_commit, '10s');
    assert.equal(f.rpc.max_body_bytes, 1000000);
    assert.equal(f.rpc.unsafe, false);
    assert.equal(f.mempool.size, 5000);
    assert.equal(f.mempool.max_txs_per_sender, 64);
    assert.equal(f.tx_index.indexer, 'kv');
    assert.deepEqual(
      { ...f.instrumentation },
      {
        prometheus: true,
        prometheus_listen_addr: ':26660',
        max_open_connections: 3,
        namespace: 'cometbft',
      },
    );
  });

  it('app.toml holds the seed [api], [evm], [evm.gas] values as the seed writes them', () => {
    const f = defaultAppTomlValues();
    assert.deepEqual(
      { ...f.api },
      {
        enable: true,
        swagger: false,
        address: 'tcp://0.0.0.0:1317',
        max_open_connections: 1000,
        rpc_read_timeout: '10s',
        rpc_write_timeout: '10s',
        rpc_max_body_bytes: 1000000,
        tls_cert_file: '',
        tls_key_file: '',
      },
    );
    assert.equal(f.evm.rpc_address, '0.0.0.0:8545');
    assert.equal(f.evm.ws_address, '0.0.0.0:8546');
    assert.equal(f.evm.api_address, '0.0.0.0:1317');
    assert.equal(f.evm.max_gas_price, '1000000000000');
    assert.equal(f.evm.min_gas_price, '1000000000');
    assert.deepEqual(
      { ...f.evm.gas },
      {
        base_fee: '1000000000',
        min_gas_price: '1000000000',
        max_gas_price: '1000000000000',
        gas_target: '15000000',
        block_gas_limit: '30000000',
      },
    );
    assert.equal(f.evm.rpc.gas_cap, 50000000);
    assert.equal(f.evm.rpc.evm_timeout, '5s');
    assert.equal(f.evm.rpc.txfee_cap, '1');
    assert.equal(f.evm.rpc.logs_cap, 10000);
    assert.equal(f.evm.rpc.block_range_cap, 10000);
    assert.equal(f.evm.rpc.batch_request_limit, 1000);
    assert.equal(f.evm.rpc.max_body_bytes, 5242880);
    assert.equal(f.evm.rpc.filter_timeout, '5m');
    assert.equal(f.evm.rpc.allow_unprotected_txs, false);
    assert.equal(f.evm.rpc.apis, 'eth,net,web3,txpool,debug');
    assert.equal(f.pruning, 'default');
    // The Cosmos SDK's default window (362,880 recent states); chain-local homes keep everything.
    assert.equal(f.pruning_keep_recent, '362880');
  });

  it('rendered files parse back without problems into the typed values', () => {
    const c = cfg(renderConfigToml());
    assert.deepEqual(c.problems, []);
    assert.equal(c.config.consensus.timeoutProposeMs, 3000);
    assert.equal(c.config.consensus.timeoutProposeDeltaMs, 500);
    assert.deepEqual(c.config.rpc.laddr, { raw: 'tcp://127.0.0.1:26657', host: '127.0.0.1', port: 26657 });
    assert.deepEqual(c.config.instrumentation.prometheusListenAddr, {
      raw: ':26660',
      host: '0.0.0.0',
      port: 26660,
    });
    const a = app(renderAppToml());
    assert.deepEqual(a.problems, []);
    assert.equal(a.app.evm.gas.baseFee, 1000000000n);
    assert.equal(a.app.evm.maxGasPrice, 1000000000000n);
    assert.equal(a.app.evm.rpc.gasCap, 50000000n);
    assert.equal(a.app.evm.rpc.txFeeCap, 10n ** 18n);
    assert.equal(a.app.evm.rpc.filterTimeoutMs, 300000);
    assert.equal(a.app.api.rpcReadTimeoutMs, 10000);
    assert.equal(a.app.pruningKeepRecent, 362880n);
    const problems: ConfigProblem[] = [];
    const k = parseClientToml(renderClientToml(), problems);
    assert.deepEqual(problems, []);
    assert.equal(k.client.nodeHttpUrl, 'http://localhost:26657');
    assert.equal(k.client.broadcastMode, 'sync');
  });

  it('every key of the three files is commented when rendered and documented in docs/configuration.md', () => {
    const docs = readFileSync(repoFile('docs', 'configuration.md'), 'utf8');
    for (const [root, text] of [
      [new ConfigTomlFile(), renderConfigToml()],
      [new AppTomlFile(), renderAppToml()],
      [new ClientTomlFile(), renderClientToml()],
    ] as const) {
      for (const path of keyPaths(root)) {
        const key = path.split('.').pop()!;
        assert.match(
          text,
          new RegExp(`# .+\\n${key.includes('-') ? `"?${key}"?` : key} = `),
          `no comment above ${path}`,
        );
        assert.ok(docs.includes(`\`${key}\``), `docs/configuration.md does not mention ${path}`);
      }
    }
  });

  it('a file that leaves keys out gets their defaults', () => {
    const c = cfg('moniker = "x"\n[consensus]\ntimeout_commit = "2s"\n');
    assert.deepEqual(c.problems, []);
    assert.equal(c.config.consensus.timeoutCommitMs, 2000);
    assert.equal(c.config.consensus.timeoutProposeMs, 3000);
  });
});

describe('config problems name the file, the key, the rule and the value', () => {
  it('the example of the issue, exactly', () => {
    assert.deepEqual(app('[evm]\nmax_gas_price = "abc"\n').problems, [
      'app.toml: evm.max_gas_price: must be a decimal integer string, got "abc"',
    ]);
  });

  it('unknown keys and sections, with a suggestion for a near miss', () => {
    const c = cfg('[rpc]\nmax_open_conections = 5\n[nonsense]\na = 1\n');
    assert.deepEqual(c.problems, [
      'config.toml: rpc.max_open_conections: unknown key (did you mean "max_open_connections"?)',
      'config.toml: nonsense: unknown key',
    ]);
  });

  it('wrong types', () => {
    const c = cfg(
      '[rpc]\nmax_open_connections = "900"\nunsafe = "yes"\ncors_allowed_origins = "*"\n[consensus]\ntimeout_commit = 1\n',
    );
    assert.deepEqual(c.problems, [
      'config.toml: rpc.cors_allowed_origins: must be a list of strings such as ["*"], got "*"',
      'config.toml: rpc.max_open_connections: must be an integer, got "900"',
      'config.toml: rpc.unsafe: must be true or false, got "yes"',
      'config.toml: consensus.timeout_commit: must be a duration string such as "1s", "500ms" or "1m30s", got 1',
    ]);
    assert.deepEqual(cfg('rpc = 5\n').problems, ['config.toml: rpc: must be a table [rpc], got 5']);
  });

  it('listen addresses: tcp://host:port or host:port, ports 1-65535', () => {
    const bad = (v: string) => cfg(`[rpc]\nladdr = ${JSON.stringify(v)}\n`).problems;
    assert.deepEqual(bad('localhost'), [
      'config.toml: rpc.laddr: must be a listen address "tcp://host:port" or "host:port", got "localhost"',
    ]);
    assert.deepEqual(bad('tcp://0.0.0.0:70000'), [
      'config.toml: rpc.laddr: port must be between 1 and 65535, got "tcp://0.0.0.0:70000"',
    ]);
    assert.deepEqual(bad('tcp://0.0.0.0:0'), [
      'config.toml: rpc.laddr: port must be between 1 and 65535, got "tcp://0.0.0.0:0"',
    ]);
    assert.match(bad('unix:///tmp/x.sock')[0]!, /only tcp is supported/);
    assert.match(bad('http://1.2.3.4:80')[0]!, /only tcp is supported/);
    assert.match(bad('bad host:80')[0]!, /must be a listen address/);
    assert.deepEqual(bad('[::1]:26657'), []);
    assert.deepEqual(bad('node-1.example.org:26657'), []);
    assert.deepEqual(parseListenAddress('tcp://[::]:1'), { raw: 'tcp://[::]:1', host: '::', port: 1 });
  });

  it('durations', () => {
    assert.equal(parseDuration('1s'), 1000);
    assert.equal(parseDuration('500ms'), 500);
    assert.equal(parseDuration('1m30s'), 90000);
    assert.equal(parseDuration('1.5h'), 5400000);
    assert.equal(parseDuration('0'), 0);
    for (const bad of ['1', '-1s', '1d', 's', '1 s', '']) assert.equal(parseDuration(bad), undefined, bad);
    assert.deepEqual(cfg('[consensus]\ntimeout_propose = "3"\ntimeout_prevote = "0s"\n').problems, [
      'config.toml: consensus.timeout_propose: must be a duration string such as "1s", "500ms" or "1m30s", got "3"',
      'config.toml: consensus.timeout_prevote: must be at least 1ms, got "0s"',
    ]);
  });

  it('integers held in strings, and integer ranges', () => {
    assert.deepEqual(
      app('[evm.gas]\nbase_fee = 1000000000\nmin_gas_price = "-1"\nmax_gas_price = "1e12"\n').problems,
      [
        'app.toml: evm.gas.base_fee: must be a decimal integer string, got 1000000000',
        'app.toml: evm.gas.min_gas_price: must be a decimal integer string, got "-1"',
        'app.toml: evm.gas.max_gas_price: must be a decimal integer string, got "1e12"',
      ],
    );
    assert.deepEqual(cfg('[mempool]\nsize = 0\nprice_bump = 5000\n').problems, [
      'config.toml: mempool.size: must be an integer >= 1, got 0',
      'config.toml: mempool.price_bump: must be an integer between 1 and 1000, got 5000',
    ]);
    assert.deepEqual(cfg('[rpc]\nmax_body_bytes = 99999999999999999999\n').problems, [
      'config.toml: rpc.max_body_bytes: must be an integer >= 1, got 99999999999999999999',
    ]);
    assert.equal(parseBtcAmount('0.5'), 5n * 10n ** 17n);
    assert.match(app('[evm.rpc]\ntxfee_cap = "1.0000000000000000001"\n').problems[0]!, /at most 18 decimals/);
  });

  it('min_gas_price <= base_fee <= max_gas_price in [evm.gas], and [evm] min <= max', () => {
    assert.deepEqual(app('[evm.gas]\nbase_fee = "1"\n').problems, [
      'app.toml: evm.gas.base_fee: must be between evm.gas.min_gas_price ("1000000000") and evm.gas.max_gas_price ("1000000000000"), got "1"',
    ]);
    assert.deepEqual(app('[evm.gas]\nmin_gas_price = "5000000000000"\n').problems, [
      'app.toml: evm.gas.min_gas_price: must be <= evm.gas.max_gas_price ("1000000000000"), got "5000000000000"',
    ]);
    assert.deepEqual(app('[evm]\nmin_gas_price = "2000000000000"\n').problems, [
      'app.toml: evm.min_gas_price: must be <= evm.max_gas_price ("1000000000000"), got "2000000000000"',
    ]);
    assert.match(
      app('[evm]\nmax_gas_price = "10"\nmin_gas_price = "1"\n').problems[0]!,
      /^app\.toml: evm\.max_gas_price: must be >= evm\.gas\.base_fee/,
    );
    // A bad value is reported once, not again by the ordering rule.
    assert.equal(app('[evm.gas]\nbase_fee = "x"\n').problems.length, 1);
  });

  it('other cross-key rules: api_address, archive pruning, mempool sizes, gas target, port clashes', () => {
    assert.deepEqual(app('[evm]\napi_address = "0.0.0.0:1318"\n').problems, [
      'app.toml: evm.api_address: must name the same host and port as api.address ("tcp://0.0.0.0:1317"), got "0.0.0.0:1318"',
    ]);
    assert.deepEqual(app('mode = "archive"\n').problems, [
      'app.toml: pruning: must be "nothing" when mode is "archive" (an archive node keeps all state), got "default"',
    ]);
    assert.deepEqual(app('mode = "archive"\npruning = "nothing"\n').problems, []);
    assert.deepEqual(cfg('[mempool]\nmax_tx_bytes = 2000\nmax_txs_bytes = 1000\n').problems, [
      'config.toml: mempool.max_tx_bytes: must be <= mempool.max_txs_bytes (1000), got 2000',
    ]);
    assert.deepEqual(cfg('[p2p]\nseed_mode = true\npex = false\n').problems, [
      'config.toml: p2p.seed_mode: seed mode answers peer exchange requests: it needs p2p.pex = true, got pex = false',
    ]);
    assert.deepEqual(cfg('[p2p]\nseed_mode = true\n').problems, []);
    assert.match(
      app('[evm.gas]\ngas_target = "40000000"\n').problems[0]!,
      /gas_target: must be <= evm.gas.block_gas_limit/,
    );

    const home = join(tmp, 'clash');
    const c = defaultConfigTomlValues();
    c.rpc.laddr = 'tcp://127.0.0.1:8545';
    writeHome(home, renderConfigToml(c), renderAppToml(), renderClientToml());
    assert.deepEqual(lines(loadNodeConfig(home).problems), [
      'app.toml: evm.rpc_address: port 8545 is already used by config.toml: rpc.laddr ("tcp://127.0.0.1:8545"), got "0.0.0.0:8545"',
    ]);
    // A disabled listener does not clash.
    const a = defaultAppTomlValues();
    a.evm.rpc.enable = false;
    writeHome(home, renderConfigToml(c), renderAppToml(a), renderClientToml());
    assert.deepEqual(loadNodeConfig(home).problems, []);
  });

  it('TLS: cert and key both set or both empty, readable, a certificate and its key', () => {
    assert.deepEqual(app('[api]\ntls_cert_file = "cert.pem"\n').problems, [
      'app.toml: api.tls_key_file: must be set when api.tls_cert_file is set ("cert.pem")',
    ]);
    assert.deepEqual(app('[api]\ntls_key_file = "key.pem"\n').problems, [
      'app.toml: api.tls_cert_file: must be set when api.tls_key_file is set ("key.pem")',
    ]);
    assert.deepEqual(app('[api]\ntls_cert_file = "nope.pem"\ntls_key_file = "nope.key"\n', tmp).problems, [
      `app.toml: api.tls_cert_file: cannot read ${JSON.stringify(join(tmp, 'nope.pem'))}: no such file`,
      `app.toml: api.tls_key_file: cannot read ${JSON.stringify(join(tmp, 'nope.key'))}: no such file`,
    ]);
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:prime256v1',
        '-nodes',
        '-keyout',
        join(tmp, 'key.pem'),
        '-out',
        join(tmp, 'cert.pem'),
        '-days',
        '1',
        '-subj',
        '/CN=localhost',
      ],
      { stdio: 'ignore' },
    );
    const ok = app('[api]\ntls_cert_file = "cert.pem"\ntls_key_file = "key.pem"\n', tmp);
    assert.deepEqual(ok.problems, []);
    assert.equal(ok.app.api.tlsCertFile, join(tmp, 'cert.pem'));
    assert.equal(toApiOptions(ok.app).tlsKeyFile, join(tmp, 'key.pem'));

    const other = generateKeyPairSync('ec', { namedCurve: 'prime256v1' }).privateKey.export({
      type: 'pkcs8',
      format: 'pem',
    });
    writeFileSync(join(tmp, 'other.pem'), other);
    assert.deepEqual(app('[api]\ntls_cert_file = "cert.pem"\ntls_key_file = "other.pem"\n', tmp).problems, [
      `app.toml: api.tls_key_file: ${JSON.stringify(join(tmp, 'other.pem'))} is not the private key of the certificate in api.tls_cert_file`,
    ]);
    assert.deepEqual(app('[api]\ntls_cert_file = "key.pem"\ntls_key_file = "key.pem"\n', tmp).problems, [
      `app.toml: api.tls_cert_file: ${JSON.stringify(join(tmp, 'key.pem'))} does not hold a PEM certificate`,
    ]);
  });

  it('client.toml values and TOML syntax errors', () => {
    const problems: ConfigProblem[] = [];
    parseClientToml('chain-id = "chain-x"\nnode = "localhost"\noutput = "yaml"\n', problems);
    assert.deepEqual(lines(problems), [
      'client.toml: chain-id: must be one of "", "chain-mainnet", "chain-testnet", "chain-local", got "chain-x"',
      'client.toml: output: must be one of "text", "json", got "yaml"',
      'client.toml: node: must be a node URL such as "tcp://localhost:26657" or "https://rpc.example.org", got "localhost"',
    ]);
    const syntax = cfg('[rpc]\nladdr = "tcp://x:1\n').problems;
    assert.equal(syntax.length, 1);
    assert.match(syntax[0]!, /^config\.toml: not valid TOML at line 2, column \d+: \S/);
  });

  it('missing files are named with a hint, and every file is checked in one pass', () => {
    const home = join(tmp, 'partial');
    writeHome(home, 'log_level = "loud"\n', '[evm]\nmin_gas_price = 1\n');
    assert.deepEqual(lines(loadNodeConfig(home).problems), [
      'config.toml: log_level: must be one of "trace", "debug", "info", "warn", "error", got "loud"',
      'app.toml: evm.min_gas_price: must be a decimal integer string, got 1',
      `client.toml: cannot read ${join(home, 'config', 'client.toml')}: no such file (run "noded init" to create the home)`,
    ]);
  });
});

describe('option mappers', () => {
  it('produce the camelCase records of the integration contract', () => {
    const home = join(tmp, 'mappers');
    writeHome(home, renderConfigToml(), renderAppToml(), renderClientToml());
    const { config, app: a, problems } = loadNodeConfig(home);
    assert.deepEqual(problems, []);
    const eth = toEthRpcOptions(a);
    assert.deepEqual(Object.keys(eth).sort(), [
      'allowUnprotectedTxs',
      'apis',
      'batchRequestLimit',
      'batchResponseMaxSize',
      'blockRangeCap',
      'corsAllowedOrigins',
      'enable',
      'evmTimeoutMs',
      'feeHistoryCap',
      'filterCap',
      'filterTimeoutMs',
      'gasCap',
      'httpTimeoutMs',
      'logsCap',
      'maxBodyBytes',
      'maxSubscriptionsPerConnection',
      'txFeeCap',
      'wsEnable',
      'wsMaxBufferedBytes',
      'wsPingIntervalMs',
    ]);
    assert.deepEqual(eth.apis, ['eth', 'net', 'web3', 'txpool', 'debug']);
    assert.equal(eth.evmTimeoutMs, 5000);
    assert.equal(eth.wsMaxBufferedBytes, 16777216);
    assert.equal(eth.feeHistoryCap, 1024);
    assert.equal(toCometRpcOptions(config).laddr, 'tcp://127.0.0.1:26657');
    assert.equal(toCometRpcOptions(config).timeoutBroadcastTxCommitMs, 10000);
    assert.deepEqual(toApiOptions(a), {
      enable: true,
      swagger: false,
      address: 'tcp://0.0.0.0:1317',
      maxOpenConnections: 1000,
      rpcReadTimeoutMs: 10000,
      rpcWriteTimeoutMs: 10000,
      rpcMaxBodyBytes: 1000000,
      tlsCertFile: '',
      tlsKeyFile: '',
    });
    assert.deepEqual(toInstrumentationOptions(config), {
      prometheus: true,
      prometheusListenAddr: ':26660',
      maxOpenConnections: 3,
      namespace: 'cometbft',
    });
    const ex = toExecutorSettings(config, a);
    assert.equal(ex.mode, 'full');
    assert.equal(ex.keepRecent, 362880);
    assert.deepEqual(ex.gas, {
      baseFee: 1000000000n,
      minGasPrice: 1000000000n,
      maxGasPrice: 1000000000000n,
      gasTarget: 15000000n,
      blockGasLimit: 30000000n,
    });
    assert.equal(ex.mempool.maxTxsPerSender, 64);
    assert.equal(ex.txFeeCap, 10n ** 18n);
    assert.equal(toExecutorSettings(config, a, 'archive').mode, 'archive');
    assert.deepEqual(toConsensusTimeouts(config), {
      timeouts: {
        propose: 3000,
        proposeDelta: 500,
        prevote: 1000,
        prevoteDelta: 500,
        precommit: 1000,
        precommitDelta: 500,
        commit: 1000,
      },
      createEmptyBlocks: true,
      createEmptyBlocksIntervalMs: 0,
      skipTimeoutCommit: false,
      doubleSignCheckHeight: 0,
    });
    assert.deepEqual(
      listenAddresses(config, a).map((l) => [l.name, l.address.port]),
      [
        ['p2p', 26656],
        ['rpc', 26657],
        ['rest api', 1317],
        ['evm http', 8545],
        ['evm ws', 8546],
        ['metrics', 26660],
      ],
    );
  });
});

function writeHome(home: string, config?: string, appToml?: string, client?: string) {
  const dir = join(home, 'config');
  rmSync(home, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  if (config !== undefined) writeFileSync(join(dir, 'config.toml'), config);
  if (appToml !== undefined) writeFileSync(join(dir, 'app.toml'), appToml);
  if (client !== undefined) writeFileSync(join(dir, 'client.toml'), client);
}
