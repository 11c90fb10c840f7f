// The value rules every key of config.toml, app.toml and client.toml is declared with
// (libs/config/src/schema/rules.ts) and the value parsers under them (values.ts): each rule at its
// bounds, each message exactly as the operator reads it, and a refused value left at its default.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  type ConfigProblem,
  checkListenAddress,
  formatDuration,
  formatProblem,
  nodeHttpUrl,
  parseAppToml,
  parseBtcAmount,
  parseClientToml,
  parseConfigToml,
  parseDecimalString,
  parseDuration,
  parseListenAddress,
} from '@noded/config';

const cfg = (text: string) => {
  const problems: ConfigProblem[] = [];
  const r = parseConfigToml(text, problems);
  return { ...r, problems: problems.map(formatProblem) };
};
const app = (text: string) => {
  const problems: ConfigProblem[] = [];
  const r = parseAppToml(text, problems);
  return { ...r, problems: problems.map(formatProblem) };
};
const client = (text: string) => {
  const problems: ConfigProblem[] = [];
  const r = parseClientToml(text, problems);
  return { ...r, problems: problems.map(formatProblem) };
};
/** The problems of one `key = value` line in a [section] of config.toml. */
const cfgKey = (section: string, line: string) =>
  cfg(section ? `[${section}]\n${line}\n` : `${line}\n`).problems;
const appKey = (section: string, line: string) =>
  app(section ? `[${section}]\n${line}\n` : `${line}\n`).problems;

describe('config values: durations', () => {
  it('reads each unit, fractions and sums; refuses anything else', () => {
    const cases: Array<[string, number]> = [
      ['1ns', 1e-6],
      ['1us', 1e-3],
      ['1µs', 1e-3],
      ['1ms', 1],
      ['1s', 1000],
      ['1m', 60_000],
      ['1h', 3_600_000],
      ['1h2m3s4ms', 3_723_004],
      ['2.5s', 2500],
      ['1.25s', 1250],
      ['0.125ms', 0.125],
      ['0s', 0],
      ['0', 0],
    ];
    for (const [text, ms] of cases) assert.equal(parseDuration(text), ms, text);
    for (const bad of ['00', '1', 's1', '1s ', ' 1s', '1.s', '.5s', '1sx', 'x1s', '1S', '1e3s', '-0s', '+1s'])
      assert.equal(parseDuration(bad), undefined, bad);
    // A duration too large for a number is refused, not read as Infinity.
    assert.equal(parseDuration(`${'9'.repeat(400)}h`), undefined);
  });

  it('formats milliseconds as the shortest Go duration', () => {
    assert.equal(formatDuration(0), '0s');
    assert.equal(formatDuration(1), '1ms');
    assert.equal(formatDuration(999), '999ms');
    assert.equal(formatDuration(1000), '1s');
    assert.equal(formatDuration(60_000), '1m');
    assert.equal(formatDuration(3_600_000), '1h');
    assert.equal(formatDuration(3_723_004), '1h2m3s4ms');
    assert.equal(formatDuration(3_600_001), '1h1ms');
    assert.equal(formatDuration(1.4), '1ms');
  });

  it('a duration key: a string of that shape, at least its minimum', () => {
    assert.deepEqual(cfgKey('consensus', 'timeout_commit = "0s"'), []);
    assert.deepEqual(cfgKey('consensus', 'timeout_propose = "1ms"'), []);
    assert.deepEqual(cfgKey('consensus', 'timeout_propose = "999us"'), [
      'config.toml: consensus.timeout_propose: must be at least 1ms, got "999us"',
    ]);
    assert.deepEqual(appKey('bridge', 'poll_interval = "100ms"'), []);
    assert.deepEqual(appKey('bridge', 'poll_interval = "99ms"'), [
      'app.toml: bridge.poll_interval: must be at least 100ms, got "99ms"',
    ]);
    assert.deepEqual(cfgKey('consensus', 'timeout_commit = true'), [
      'config.toml: consensus.timeout_commit: must be a duration string such as "1s", "500ms" or "1m30s", got true',
    ]);
    assert.deepEqual(cfgKey('consensus', 'timeout_commit = ["1s"]'), [
      'config.toml: consensus.timeout_commit: must be a duration string such as "1s", "500ms" or "1m30s", got ["1s"]',
    ]);
    const r = cfg('[consensus]\ntimeout_propose = "999us"\n');
    assert.equal(r.config.consensus.timeoutProposeMs, 3000, 'a refused value keeps the default');
  });
});

describe('config values: listen and external addresses', () => {
  it('tcp:// is optional, other schemes are refused, an empty host is every interface', () => {
    assert.deepEqual(checkListenAddress('tcp://127.0.0.1:80'), {
      raw: 'tcp://127.0.0.1:80',
      host: '127.0.0.1',
      port: 80,
    });
    assert.deepEqual(checkListenAddress(':26660'), { raw: ':26660', host: '0.0.0.0', port: 26660 });
    assert.deepEqual(checkListenAddress('tcp://:1'), { raw: 'tcp://:1', host: '0.0.0.0', port: 1 });
    assert.deepEqual(checkListenAddress('h:65535'), { raw: 'h:65535', host: 'h', port: 65535 });
    assert.equal(
      checkListenAddress('udp://1.2.3.4:80'),
      'must be a listen address "tcp://host:port" or "host:port" (only tcp is supported), got "udp://1.2.3.4:80"',
    );
    assert.equal(
      checkListenAddress('tcp://tcp://1.2.3.4:80'),
      'must be a listen address "tcp://host:port" or "host:port" (only tcp is supported), got "tcp://tcp://1.2.3.4:80"',
    );
    assert.equal(
      checkListenAddress('TCP://1.2.3.4:80'),
      'must be a listen address "tcp://host:port" or "host:port" (only tcp is supported), got "TCP://1.2.3.4:80"',
    );
    // Only a scheme at the start is a scheme.
    assert.equal(
      checkListenAddress('1.2.3.4:80x://'),
      'must be a listen address "tcp://host:port" or "host:port", got "1.2.3.4:80x://"',
    );
    assert.equal(checkListenAddress('h:65536'), 'port must be between 1 and 65535, got "h:65536"');
    assert.equal(checkListenAddress('h:0'), 'port must be between 1 and 65535, got "h:0"');
    assert.equal(parseListenAddress('h:0'), undefined);
    assert.deepEqual(parseListenAddress('h:1'), { raw: 'h:1', host: 'h', port: 1 });
  });

  it('a listen address key: a string, else the message names the shape', () => {
    assert.deepEqual(cfgKey('rpc', 'laddr = 26657'), [
      'config.toml: rpc.laddr: must be a listen address string "tcp://host:port" or "host:port", got 26657',
    ]);
    assert.deepEqual(cfgKey('rpc', 'laddr = "x://h:1"'), [
      'config.toml: rpc.laddr: must be a listen address "tcp://host:port" or "host:port" (only tcp is supported), got "x://h:1"',
    ]);
    assert.deepEqual(cfg('[rpc]\nladdr = "x://h:1"\n').config.rpc.laddr.port, 26657);
  });

  it('external_address: "" or a dialable host:port, with or without tcp://', () => {
    assert.deepEqual(cfgKey('p2p', 'external_address = ""'), []);
    assert.deepEqual(cfgKey('p2p', 'external_address = "1.2.3.4:26656"'), []);
    assert.deepEqual(cfgKey('p2p', 'external_address = "tcp://node.example.org:26656"'), []);
    assert.equal(cfg('[p2p]\nexternal_address = "tcp://h:5"\n').config.p2p.externalAddress, 'tcp://h:5');
    assert.deepEqual(cfgKey('p2p', 'external_address = 5'), [
      'config.toml: p2p.external_address: must be a string "host:port" or "", got 5',
    ]);
    for (const v of [':26656', 'h', 'h:0', 'tcp://h', 'tcp:/h:1', 'h:1:2'])
      assert.deepEqual(cfgKey('p2p', `external_address = ${JSON.stringify(v)}`), [
        `config.toml: p2p.external_address: must be "" or "host:port" with a port between 1 and 65535, got ${JSON.stringify(v)}`,
      ]);
    assert.deepEqual(cfgKey('p2p', 'external_address = "0.0.0.0:26656"'), [
      'config.toml: p2p.external_address: must be an address peers can dial, not the wildcard 0.0.0.0, got "0.0.0.0:26656"',
    ]);
    assert.deepEqual(cfgKey('p2p', 'external_address = "[::]:26656"'), [
      'config.toml: p2p.external_address: must be an address peers can dial, not the wildcard ::, got "[::]:26656"',
    ]);
    assert.equal(cfg('[p2p]\nexternal_address = "0.0.0.0:1"\n').config.p2p.externalAddress, '');
  });
});

describe('config values: integers, integer strings and BTC amounts', () => {
  it('an integer key: a TOML integer between its bounds, the message naming them', () => {
    assert.deepEqual(cfgKey('mempool', 'price_bump = 1'), []);
    assert.deepEqual(cfgKey('mempool', 'price_bump = 1000'), []);
    assert.deepEqual(cfgKey('mempool', 'price_bump = 0'), [
      'config.toml: mempool.price_bump: must be an integer between 1 and 1000, got 0',
    ]);
    assert.deepEqual(cfgKey('mempool', 'price_bump = 1001'), [
      'config.toml: mempool.price_bump: must be an integer between 1 and 1000, got 1001',
    ]);
    assert.deepEqual(cfgKey('rpc', 'experimental_subscription_buffer_size = 100'), []);
    assert.deepEqual(cfgKey('rpc', 'experimental_subscription_buffer_size = 99'), [
      'config.toml: rpc.experimental_subscription_buffer_size: must be an integer >= 100, got 99',
    ]);
    assert.deepEqual(cfgKey('rpc', 'max_open_connections = 0'), []);
    assert.deepEqual(cfgKey('rpc', 'max_open_connections = -1'), [
      'config.toml: rpc.max_open_connections: must be an integer >= 0, got -1',
    ]);
    assert.deepEqual(cfgKey('rpc', `max_open_connections = ${Number.MAX_SAFE_INTEGER}`), []);
    assert.deepEqual(cfgKey('rpc', 'max_open_connections = 1.5'), [
      'config.toml: rpc.max_open_connections: must be an integer, got 1.5',
    ]);
    assert.deepEqual(cfgKey('rpc', 'max_open_connections = true'), [
      'config.toml: rpc.max_open_connections: must be an integer, got true',
    ]);
    // Beyond 2^53 TOML gives a bigint: out of range, named with its exact digits.
    assert.deepEqual(cfgKey('rpc', 'max_open_connections = 9007199254740993'), [
      'config.toml: rpc.max_open_connections: must be an integer >= 0, got 9007199254740993',
    ]);
  });

  it('gas_cap: any integer >= 0, also beyond 2^53', () => {
    assert.deepEqual(appKey('evm.rpc', 'gas_cap = 0'), []);
    assert.equal(app('[evm.rpc]\ngas_cap = 9007199254740993\n').app.evm.rpc.gasCap, 9007199254740993n);
    assert.deepEqual(appKey('evm.rpc', 'gas_cap = -1'), [
      'app.toml: evm.rpc.gas_cap: must be an integer >= 0, got -1',
    ]);
    assert.deepEqual(appKey('evm.rpc', 'gas_cap = -9007199254740993'), [
      'app.toml: evm.rpc.gas_cap: must be an integer >= 0, got -9007199254740993',
    ]);
    assert.deepEqual(appKey('evm.rpc', 'gas_cap = 1.5'), [
      'app.toml: evm.rpc.gas_cap: must be an integer, got 1.5',
    ]);
    assert.deepEqual(appKey('evm.rpc', 'gas_cap = "5"'), [
      'app.toml: evm.rpc.gas_cap: must be an integer, got "5"',
    ]);
  });

  it('integer strings: canonical decimal digits, at least the key minimum', () => {
    assert.equal(parseDecimalString('0'), 0n);
    assert.equal(parseDecimalString('10'), 10n);
    for (const bad of ['', '01', '-1', '+1', '1.0', ' 1', '1 ', '1e3', '0x10'])
      assert.equal(parseDecimalString(bad), undefined, bad);
    assert.equal(parseDecimalString('-1', true), -1n);
    assert.equal(parseDecimalString('-0', true), 0n);
    assert.equal(parseDecimalString('7', true), 7n, 'signed also takes an unsigned value');
    for (const bad of ['-', '--1', '-01', '1-', '+1'])
      assert.equal(parseDecimalString(bad, true), undefined, bad);
    assert.deepEqual(app('[evm.gas]\nblock_gas_limit = "21000"\ngas_target = "21000"\n').problems, []);
    assert.deepEqual(appKey('evm.gas', 'block_gas_limit = "20999"'), [
      'app.toml: evm.gas.block_gas_limit: must be >= 21000, got "20999"',
    ]);
    assert.deepEqual(appKey('', 'pruning_keep_recent = "0"'), [
      'app.toml: pruning_keep_recent: must be >= 1, got "0"',
    ]);
    assert.deepEqual(appKey('', 'pruning_keep_recent = "1"'), []);
  });

  it('BTC amounts: whole BTC and up to 18 decimals, in base units', () => {
    assert.equal(parseBtcAmount('0'), 0n);
    assert.equal(parseBtcAmount('1'), 10n ** 18n);
    assert.equal(parseBtcAmount('12.5'), 125n * 10n ** 17n);
    assert.equal(parseBtcAmount('0.000000000000000001'), 1n);
    for (const bad of ['', '01', '1.', '.5', '-1', '1.0000000000000000001', ' 1', '1 ', '1e18', 'x'])
      assert.equal(parseBtcAmount(bad), undefined, bad);
    assert.equal(app('[evm.rpc]\ntxfee_cap = "0.25"\n').app.evm.rpc.txFeeCap, 25n * 10n ** 16n);
    assert.deepEqual(appKey('evm.rpc', 'txfee_cap = 1'), [
      'app.toml: evm.rpc.txfee_cap: must be a decimal BTC amount string with at most 18 decimals such as "1" or "0.5", got 1',
    ]);
  });
});

describe('config values: text, choices and lists', () => {
  it('moniker: 1 to 70 printable characters, not blank', () => {
    assert.deepEqual(cfgKey('', `moniker = "${'m'.repeat(70)}"`), []);
    assert.deepEqual(cfgKey('', `moniker = "${'m'.repeat(71)}"`), [
      `config.toml: moniker: must be 1 to 70 printable characters, got "${'m'.repeat(71)}"`,
    ]);
    assert.deepEqual(cfgKey('', 'moniker = "   "'), ['config.toml: moniker: must not be empty, got "   "']);
    assert.deepEqual(cfgKey('', 'moniker = "a\\tb"'), [
      'config.toml: moniker: must be 1 to 70 printable characters, got "a\\tb"',
    ]);
    assert.deepEqual(cfgKey('', 'moniker = 5'), ['config.toml: moniker: must be a string, got 5']);
    assert.equal(cfg('moniker = " node 1 "\n').config.moniker, ' node 1 ');
  });

  it('text with a pattern: the instrumentation namespace and the light trust hash', () => {
    assert.deepEqual(cfgKey('instrumentation', 'namespace = "_a1"'), []);
    assert.deepEqual(cfgKey('instrumentation', 'namespace = "1a"'), [
      'config.toml: instrumentation.namespace: must be a Prometheus metric name prefix ([A-Za-z_][A-Za-z0-9_]*), got "1a"',
    ]);
    assert.deepEqual(cfgKey('instrumentation', 'namespace = "a-b"'), [
      'config.toml: instrumentation.namespace: must be a Prometheus metric name prefix ([A-Za-z_][A-Za-z0-9_]*), got "a-b"',
    ]);
    assert.deepEqual(appKey('light', 'trust_hash = ""'), []);
    assert.deepEqual(appKey('light', 'rpc_servers = 5'), [
      'app.toml: light.rpc_servers: must be a string, got 5',
    ]);
    // Text without a rule but the type takes any string, also empty ones.
    assert.deepEqual(appKey('api', 'tls_cert_file = ""'), []);
  });

  it('booleans and choices', () => {
    assert.deepEqual(cfgKey('p2p', 'pex = false'), []);
    assert.deepEqual(cfgKey('p2p', 'pex = "false"'), [
      'config.toml: p2p.pex: must be true or false, got "false"',
    ]);
    assert.deepEqual(cfgKey('p2p', 'pex = 0'), ['config.toml: p2p.pex: must be true or false, got 0']);
    assert.deepEqual(cfgKey('', 'log_format = "json"'), []);
    assert.deepEqual(cfgKey('', 'log_format = "JSON"'), [
      'config.toml: log_format: must be one of "plain", "json", got "JSON"',
    ]);
    assert.deepEqual(cfgKey('', 'log_format = 1'), [
      'config.toml: log_format: must be one of "plain", "json", got 1',
    ]);
    assert.deepEqual(cfgKey('tx_index', 'indexer = "null"'), []);
    assert.deepEqual(cfgKey('tx_index', 'indexer = ""'), [
      'config.toml: tx_index.indexer: must be one of "kv", "null", got ""',
    ]);
  });

  it('lists of strings', () => {
    assert.deepEqual(cfgKey('rpc', 'cors_allowed_origins = []'), []);
    assert.deepEqual(cfgKey('rpc', 'cors_allowed_origins = ["a", "b"]'), []);
    assert.deepEqual(cfgKey('rpc', 'cors_allowed_origins = ["a", 1]'), [
      'config.toml: rpc.cors_allowed_origins: must be a list of strings such as ["*"], got ["a",1]',
    ]);
    assert.deepEqual(cfg('[rpc]\ncors_allowed_origins = ["a", "b"]\n').config.rpc.corsAllowedOrigins, [
      'a',
      'b',
    ]);
  });

  it('comma-separated names, each from the list', () => {
    assert.deepEqual(appKey('evm.rpc', 'apis = ""'), []);
    assert.deepEqual(app('[evm.rpc]\napis = " eth , net,,"\n').app.evm.rpc.apis, ['eth', 'net']);
    assert.deepEqual(appKey('evm.rpc', 'apis = "eth,admin"'), [
      'app.toml: evm.rpc.apis: each entry must be one of eth, net, web3, txpool, debug, got "admin" in "eth,admin"',
    ]);
    assert.deepEqual(appKey('evm.rpc', 'apis = ["eth"]'), [
      'app.toml: evm.rpc.apis: must be a comma-separated string, got ["eth"]',
    ]);
  });

  it('node id and peer lists must be strings', () => {
    assert.deepEqual(cfgKey('p2p', 'unconditional_peer_ids = []'), [
      'config.toml: p2p.unconditional_peer_ids: must be a comma-separated string of node ids, got []',
    ]);
    assert.deepEqual(cfgKey('p2p', 'seeds = 1'), [
      'config.toml: p2p.seeds: must be a comma-separated string of "<node_id>@<host>:<port>", got 1',
    ]);
  });
});

describe('config values: node URLs (client.toml node, light.rpc_servers)', () => {
  it('tcp:// becomes http://, http(s) keep their path without a trailing slash', () => {
    assert.equal(nodeHttpUrl('tcp://localhost:26657'), 'http://localhost:26657');
    assert.equal(nodeHttpUrl('tcp://localhost:26657/'), 'http://localhost:26657');
    assert.equal(nodeHttpUrl('http://h:1/'), 'http://h:1');
    assert.equal(nodeHttpUrl('https://rpc.example.org'), 'https://rpc.example.org');
    assert.equal(nodeHttpUrl('https://rpc.example.org/a/'), 'https://rpc.example.org/a');
    assert.equal(nodeHttpUrl('tcp://localhost'), undefined, 'tcp needs a port');
    assert.equal(nodeHttpUrl('ws://h:1'), undefined);
    assert.equal(nodeHttpUrl('localhost:26657'), undefined);
    assert.equal(nodeHttpUrl('not a url'), undefined);
    assert.equal(nodeHttpUrl('file:///x'), undefined);
  });

  it('client.toml: node and the choices', () => {
    const ok = client(
      'node = "https://rpc.example.org/"\nbroadcast-mode = "async"\nkeyring-backend = "memory"\n',
    );
    assert.deepEqual(ok.problems, []);
    assert.equal(ok.client.nodeHttpUrl, 'https://rpc.example.org');
    assert.equal(ok.client.broadcastMode, 'async');
    assert.deepEqual(client('node = ["http://a:1"]\n').problems, [
      'client.toml: node: must be a node URL such as "tcp://localhost:26657" or "https://rpc.example.org", got ["http://a:1"]',
    ]);
    assert.deepEqual(client('node = 5\n').problems, [
      'client.toml: node: must be a node URL such as "tcp://localhost:26657" or "https://rpc.example.org", got 5',
    ]);
    assert.deepEqual(client('broadcast-mode = "block"\n').problems, [
      'client.toml: broadcast-mode: must be one of "sync", "async", got "block"',
    ]);
  });
});
