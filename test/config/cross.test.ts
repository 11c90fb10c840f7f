// The loader's rules across keys and files (libs/config/src/load.ts) and the section machinery
// under every file (schema/section.ts): each rule at its boundary, a key already refused on its own
// not reported again by a rule that reads it, unknown keys and their suggestion, a bad value
// replaced by its default.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import {
  type ConfigProblem,
  defaultAppTomlValues,
  defaultConfigTomlValues,
  formatProblem,
  loadNodeConfig,
  parseAppToml,
  parseConfigToml,
  renderAppToml,
  renderClientToml,
  renderConfigToml,
} from '@noded/config';

const cfg = (text: string) => {
  const problems: ConfigProblem[] = [];
  const r = parseConfigToml(text, problems);
  return { ...r, problems: problems.map(formatProblem) };
};
const app = (text: string, dir = '.') => {
  const problems: ConfigProblem[] = [];
  const r = parseAppToml(text, problems, dir);
  return { ...r, problems: problems.map(formatProblem) };
};

const tmp = mkdtempSync(join(tmpdir(), 'noded-config-cross-'));
after(() => rmSync(tmp, { recursive: true, force: true }));

function loadHome(name: string, config: string, appToml: string): string[] {
  const home = join(tmp, name);
  mkdirSync(join(home, 'config'), { recursive: true });
  writeFileSync(join(home, 'config', 'config.toml'), config);
  writeFileSync(join(home, 'config', 'app.toml'), appToml);
  writeFileSync(join(home, 'config', 'client.toml'), renderClientToml());
  return loadNodeConfig(home).problems.map(formatProblem);
}

describe('config sections: unknown keys, tables and defaults', () => {
  it('suggests the nearest known key only when it is close for the key length', () => {
    const unknown = (line: string, section = 'rpc') => cfg(`[${section}]\n${line} = 1\n`).problems;
    assert.deepEqual(unknown('unsaf'), ['config.toml: rpc.unsaf: unknown key (did you mean "unsafe"?)']);
    assert.deepEqual(unknown('ladr'), ['config.toml: rpc.ladr: unknown key (did you mean "laddr"?)']);
    // Below 8 letters one edit at most: two are too far.
    assert.deepEqual(unknown('ldr'), ['config.toml: rpc.ldr: unknown key']);
    assert.deepEqual(unknown('unsfa'), ['config.toml: rpc.unsfa: unknown key']);
    // 8 to 11 letters: two edits, not three.
    assert.deepEqual(unknown('snd_rxte', 'p2p'), [
      'config.toml: p2p.snd_rxte: unknown key (did you mean "send_rate"?)',
    ]);
    assert.deepEqual(unknown('sxnd_rxt', 'p2p'), ['config.toml: p2p.sxnd_rxt: unknown key']);
    assert.deepEqual(unknown('sxnd_rxtx', 'p2p'), ['config.toml: p2p.sxnd_rxtx: unknown key']);
    // 12 letters and more: three edits, never four.
    assert.deepEqual(unknown('mxx_bxdy_bxtes'), [
      'config.toml: rpc.mxx_bxdy_bxtes: unknown key (did you mean "max_body_bytes"?)',
    ]);
    assert.deepEqual(unknown('max_hxxdxr_bytes'), [
      'config.toml: rpc.max_hxxdxr_bytes: unknown key (did you mean "max_header_bytes"?)',
    ]);
    assert.deepEqual(unknown('max_hxxdxr_bytxs'), ['config.toml: rpc.max_hxxdxr_bytxs: unknown key']);
    // The closest of several near keys wins; at equal distance the first declared.
    assert.deepEqual(unknown('seed', 'p2p'), ['config.toml: p2p.seed: unknown key (did you mean "seeds"?)']);
    assert.deepEqual(unknown('recv_rat', 'p2p'), [
      'config.toml: p2p.recv_rat: unknown key (did you mean "recv_rate"?)',
    ]);
    // Substitution, insertion and deletion each count one.
    assert.deepEqual(unknown('pax', 'p2p'), ['config.toml: p2p.pax: unknown key (did you mean "pex"?)']);
    assert.deepEqual(unknown('ppex', 'p2p'), ['config.toml: p2p.ppex: unknown key (did you mean "pex"?)']);
    assert.deepEqual(unknown('px', 'p2p'), ['config.toml: p2p.px: unknown key (did you mean "pex"?)']);
    assert.deepEqual(unknown('xpe', 'p2p'), ['config.toml: p2p.xpe: unknown key']);
    // Top-level keys and sections are suggested too.
    assert.deepEqual(cfg('mempol = 1\n').problems, [
      'config.toml: mempol: unknown key (did you mean "mempool"?)',
    ]);
  });

  it('a value where a table belongs, and a table where a value belongs', () => {
    assert.deepEqual(cfg('consensus = "fast"\n').problems, [
      'config.toml: consensus: must be a table [consensus], got "fast"',
    ]);
    assert.deepEqual(cfg('consensus = [1]\n').problems, [
      'config.toml: consensus: must be a table [consensus], got [1]',
    ]);
    assert.deepEqual(cfg('consensus = 2024-01-02T03:04:05Z\n').problems, [
      'config.toml: consensus: must be a table [consensus], got 2024-01-02T03:04:05.000Z',
    ]);
    assert.deepEqual(app('[evm]\ngas = 1\n').problems, [
      'app.toml: evm.gas: must be a table [evm.gas], got 1',
    ]);
    assert.deepEqual(cfg('[rpc.laddr]\nx = 1\n').problems, [
      'config.toml: rpc.laddr: must be a listen address string "tcp://host:port" or "host:port", got a table',
    ]);
    // Keys of a nested section are named by their full path, also when unknown.
    assert.deepEqual(app('[evm.gas]\nbase_fe = "1"\n').problems, [
      'app.toml: evm.gas.base_fe: unknown key (did you mean "base_fee"?)',
    ]);
  });

  it('each bad key is reported once and keeps its default; good keys beside it are taken', () => {
    const c = cfg(
      '[mempool]\nsize = 0\nrecheck = false\n[consensus]\ntimeout_commit = "x"\ntimeout_propose = "7s"\n',
    );
    assert.deepEqual(c.problems, [
      'config.toml: mempool.size: must be an integer >= 1, got 0',
      'config.toml: consensus.timeout_commit: must be a duration string such as "1s", "500ms" or "1m30s", got "x"',
    ]);
    assert.deepEqual([...c.bad].sort(), ['consensus.timeout_commit', 'mempool.size']);
    assert.equal(c.config.mempool.size, 5000);
    assert.equal(c.config.mempool.recheck, false);
    assert.equal(c.config.consensus.timeoutCommitMs, 1000);
    assert.equal(c.config.consensus.timeoutProposeMs, 7000);
    assert.equal(c.file.mempool.size, 5000);
    const a = app('[evm.gas]\nbase_fee = 5\n');
    assert.deepEqual([...a.bad], ['evm.gas.base_fee']);
    assert.equal(a.app.evm.gas.baseFee, 1_000_000_000n);
  });
});

describe('config.toml rules across keys', () => {
  it('max_tx_bytes may equal max_txs_bytes; a bad size skips the rule', () => {
    assert.deepEqual(cfg('[mempool]\nmax_tx_bytes = 1000\nmax_txs_bytes = 1000\n').problems, []);
    assert.deepEqual(cfg('[mempool]\nmax_tx_bytes = 1001\nmax_txs_bytes = 1000\n').problems, [
      'config.toml: mempool.max_tx_bytes: must be <= mempool.max_txs_bytes (1000), got 1001',
    ]);
    assert.deepEqual(cfg('[mempool]\nmax_tx_bytes = 2000000000\nmax_txs_bytes = 0\n').problems, [
      'config.toml: mempool.max_txs_bytes: must be an integer >= 1, got 0',
    ]);
    assert.deepEqual(cfg('[mempool]\nmax_tx_bytes = "2"\nmax_txs_bytes = 1\n').problems, [
      'config.toml: mempool.max_tx_bytes: must be an integer, got "2"',
    ]);
  });

  it('seed_mode needs pex, unless one of them is already refused', () => {
    assert.deepEqual(cfg('[p2p]\nseed_mode = false\npex = false\n').problems, []);
    assert.deepEqual(cfg('[p2p]\nseed_mode = true\npex = "no"\n').problems, [
      'config.toml: p2p.pex: must be true or false, got "no"',
    ]);
    assert.deepEqual(cfg('[p2p]\nseed_mode = 1\npex = false\n').problems, [
      'config.toml: p2p.seed_mode: must be true or false, got 1',
    ]);
  });

  it('a file that could not be parsed skips the rules across its keys', () => {
    const problems: ConfigProblem[] = [];
    parseConfigToml('[mempool\n', problems);
    assert.equal(problems.length, 1);
    const missing: ConfigProblem[] = [];
    parseAppToml(undefined, missing);
    assert.deepEqual(missing, []);
  });
});

describe('app.toml rules across keys', () => {
  const gas = (lines: string) => app(`[evm.gas]\n${lines}\n`).problems;

  it('min_gas_price <= base_fee <= max_gas_price at both ends, and each reported once', () => {
    assert.deepEqual(gas('min_gas_price = "5"\nbase_fee = "5"\nmax_gas_price = "5"'), []);
    assert.deepEqual(gas('min_gas_price = "5"\nbase_fee = "4"\nmax_gas_price = "9"'), [
      'app.toml: evm.gas.base_fee: must be between evm.gas.min_gas_price ("5") and evm.gas.max_gas_price ("9"), got "4"',
    ]);
    assert.deepEqual(gas('min_gas_price = "5"\nbase_fee = "10"\nmax_gas_price = "9"'), [
      'app.toml: evm.gas.base_fee: must be between evm.gas.min_gas_price ("5") and evm.gas.max_gas_price ("9"), got "10"',
    ]);
    // min above max is the one problem named, not the base fee as well.
    assert.deepEqual(gas('min_gas_price = "10"\nbase_fee = "7"\nmax_gas_price = "9"'), [
      'app.toml: evm.gas.min_gas_price: must be <= evm.gas.max_gas_price ("9"), got "10"',
    ]);
    // A refused bound or base fee skips the rules that read it.
    assert.deepEqual(gas('min_gas_price = "x"\nbase_fee = "1"'), [
      'app.toml: evm.gas.min_gas_price: must be a decimal integer string, got "x"',
    ]);
    assert.deepEqual(gas('max_gas_price = 1\nbase_fee = "1"\nmin_gas_price = "2000000000000"'), [
      'app.toml: evm.gas.max_gas_price: must be a decimal integer string, got 1',
    ]);
  });

  it('[evm] min_gas_price <= max_gas_price >= the first base fee', () => {
    const evm = (lines: string) => app(`[evm]\n${lines}\n`).problems;
    assert.deepEqual(evm('min_gas_price = "7"\nmax_gas_price = "1000000000"'), []);
    assert.deepEqual(evm('min_gas_price = "1000000000"\nmax_gas_price = "1000000000"'), []);
    assert.deepEqual(evm('max_gas_price = "999999999"\nmin_gas_price = "1"'), [
      'app.toml: evm.max_gas_price: must be >= evm.gas.base_fee ("1000000000"), or no transaction could pay the first block\'s base fee, got "999999999"',
    ]);
    assert.deepEqual(evm('min_gas_price = "1000000001"\nmax_gas_price = "1000000000"'), [
      'app.toml: evm.min_gas_price: must be <= evm.max_gas_price ("1000000000"), got "1000000001"',
    ]);
    assert.deepEqual(
      app('[evm]\nmax_gas_price = "5"\nmin_gas_price = "1"\n[evm.gas]\nbase_fee = "x"\n').problems,
      ['app.toml: evm.gas.base_fee: must be a decimal integer string, got "x"'],
    );
  });

  it('gas_target <= block_gas_limit', () => {
    assert.deepEqual(gas('gas_target = "30000000"\nblock_gas_limit = "30000000"'), []);
    assert.deepEqual(gas('gas_target = "30000001"\nblock_gas_limit = "30000000"'), [
      'app.toml: evm.gas.gas_target: must be <= evm.gas.block_gas_limit ("30000000"), got "30000001"',
    ]);
    assert.deepEqual(gas('gas_target = "30000001"\nblock_gas_limit = "1"'), [
      'app.toml: evm.gas.block_gas_limit: must be >= 21000, got "1"',
    ]);
  });

  it('archive pruning, and the API address both [api] and [evm] name', () => {
    assert.deepEqual(app('mode = "full"\npruning = "nothing"\n').problems, []);
    assert.deepEqual(app('mode = "light"\n').problems, []);
    assert.deepEqual(app('mode = "archive"\npruning = "all"\n').problems, [
      'app.toml: pruning: must be one of "default", "nothing", got "all"',
    ]);
    assert.deepEqual(
      app('[api]\naddress = "tcp://0.0.0.0:1318"\n[evm]\napi_address = "0.0.0.0:1318"\n').problems,
      [],
    );
    assert.deepEqual(app('[evm]\napi_address = "127.0.0.1:1317"\n').problems, [
      'app.toml: evm.api_address: must name the same host and port as api.address ("tcp://0.0.0.0:1317"), got "127.0.0.1:1317"',
    ]);
    assert.deepEqual(app('[evm]\napi_address = "1317"\n').problems, [
      'app.toml: evm.api_address: must be a listen address "tcp://host:port" or "host:port", got "1317"',
    ]);
  });

  it('TLS files: a directory is not a file', () => {
    const dir = join(tmp, 'tls-dir');
    mkdirSync(join(dir, 'cert.pem'), { recursive: true });
    mkdirSync(join(dir, 'key.pem'), { recursive: true });
    assert.deepEqual(app('[api]\ntls_cert_file = "cert.pem"\ntls_key_file = "key.pem"\n', dir).problems, [
      `app.toml: api.tls_cert_file: ${JSON.stringify(join(dir, 'cert.pem'))} is not a file`,
      `app.toml: api.tls_key_file: ${JSON.stringify(join(dir, 'key.pem'))} is not a file`,
    ]);
    writeFileSync(join(dir, 'plain.txt'), 'not a key\n');
    assert.deepEqual(app('[api]\ntls_cert_file = "plain.txt"\ntls_key_file = "plain.txt"\n', dir).problems, [
      `app.toml: api.tls_cert_file: ${JSON.stringify(join(dir, 'plain.txt'))} does not hold a PEM certificate`,
      `app.toml: api.tls_key_file: ${JSON.stringify(join(dir, 'plain.txt'))} does not hold a PEM private key (or it is encrypted)`,
    ]);
    // An absolute path is taken as written.
    assert.equal(
      app(`[api]\ntls_cert_file = "/x/c.pem"\ntls_key_file = "/x/k.pem"\n`, dir).app.api.tlsKeyFile,
      '/x/k.pem',
    );
  });

  it('light: the RPC servers must be node URLs', () => {
    assert.deepEqual(app('[light]\nrpc_servers = "http://a:1, tcp://b:2"\n').problems, []);
    assert.deepEqual(app('[light]\nrpc_servers = "http://a:1,b:2"\n').problems, [
      'app.toml: light.rpc_servers: must be a comma-separated list of "http://host:port", "https://host" or "tcp://host:port" URLs, got "b:2" in "http://a:1,b:2"',
    ]);
    assert.deepEqual(
      app('[light]\ntrust_height = 5\ntrust_hash = "zz"\n').problems,
      ['app.toml: light.trust_hash: must be 64 hex characters (a header hash) or "", got "zz"'],
      'a refused hash is not also missing',
    );
  });

  it('bridge: a refused address is not checked again; enabled with both addresses set', () => {
    const a = '0x'.padEnd(42, 'a');
    const b = '0x'.padEnd(42, 'b');
    assert.deepEqual(
      app(
        `[bridge]\nenable = true\nethereum_rpc_url = "http://h:1"\nbridge_address = "${a}"\nbtc_token_address = "${b}"\n`,
      ).problems,
      [],
    );
    assert.deepEqual(app(`[bridge]\nbridge_address = "${a}"\nbtc_token_address = "${a}"\n`).problems, []);
    assert.deepEqual(app('[bridge]\nenable = true\nethereum_rpc_url = 5\n').problems, [
      'app.toml: bridge.ethereum_rpc_url: must be a string, got 5',
      'app.toml: bridge.bridge_address: must be set when bridge.enable is true, got ""',
      'app.toml: bridge.btc_token_address: must be set when bridge.enable is true, got ""',
    ]);
    assert.deepEqual(app('[bridge]\nenable = 1\n').problems, [
      'app.toml: bridge.enable: must be true or false, got 1',
    ]);
  });
});

describe('a refused key keeps its default and is not reported again by a rule across keys', () => {
  it('each rule skips a key already refused, even where its default would break the rule', () => {
    const a = '0x'.padEnd(42, 'a').replace('aa', 'aA');
    const cases: Array<[string, string]> = [
      // the default min_gas_price (1000000000) is above this max
      ['[evm.gas]\nmin_gas_price = "x"\nmax_gas_price = "5"\nbase_fee = "5"', 'evm.gas.min_gas_price'],
      // the default base_fee (1000000000) is below this min
      ['[evm.gas]\nmin_gas_price = "2000000000"\nbase_fee = 1', 'evm.gas.base_fee'],
      // the default [evm] max_gas_price (1000000000000) is below this min
      ['[evm]\nmin_gas_price = "2000000000000"\nmax_gas_price = 1', 'evm.max_gas_price'],
      // the default [evm] min_gas_price (1000000000) is above this max (which is >= base_fee)
      [
        '[evm]\nmin_gas_price = 1\nmax_gas_price = "999"\n[evm.gas]\nmin_gas_price = "1"\nbase_fee = "999"',
        'evm.min_gas_price',
      ],
      // the default gas_target (15000000) is above this limit
      ['[evm.gas]\ngas_target = 1\nblock_gas_limit = "21000"', 'evm.gas.gas_target'],
      // the default api.address (0.0.0.0:1317) differs from this api_address
      ['[api]\naddress = "x"\n[evm]\napi_address = "127.0.0.1:1318"', 'api.address'],
      // the default evm.api_address differs from this api.address
      ['[api]\naddress = "tcp://127.0.0.1:1318"\n[evm]\napi_address = 5', 'evm.api_address'],
      // the default [evm] max_gas_price (1000000000000) is below this first base fee
      [
        '[evm]\nmax_gas_price = 1\n[evm.gas]\nmax_gas_price = "3000000000000"\nbase_fee = "2000000000000"',
        'evm.max_gas_price',
      ],
      // the default tls_key_file ("") with a certificate set
      ['[api]\ntls_cert_file = "c.pem"\ntls_key_file = 5', 'api.tls_key_file'],
      // the default tls_cert_file ("") with a key set
      ['[api]\ntls_cert_file = 5\ntls_key_file = "k.pem"', 'api.tls_cert_file'],
      // the default trust_height (0) with a hash set
      [`[light]\ntrust_height = -1\ntrust_hash = "${'ab'.repeat(32)}"`, 'light.trust_height'],
    ];
    for (const [text, key] of cases) {
      const r = app(text);
      assert.equal(r.problems.length, 1, `${text}: ${r.problems.join('; ')}`);
      assert.ok(r.problems[0]!.startsWith(`app.toml: ${key}: `), `${text}: ${r.problems[0]}`);
    }
    // Two addresses refused for their checksum are not also "the same address".
    const both = app(
      `[bridge]\nenable = true\nethereum_rpc_url = "http://h:1"\nbridge_address = "${a}"\nbtc_token_address = "${a}"\n`,
    ).problems;
    assert.deepEqual(
      both.map((p) => p.split(': ')[1]),
      ['bridge.bridge_address', 'bridge.btc_token_address'],
    );
  });

  it('a refused listen address of either file is not compared for clashes', () => {
    // app.toml's api.address refused: its default (1317) would clash with this rpc.laddr.
    const c = defaultConfigTomlValues();
    c.rpc.laddr = 'tcp://127.0.0.1:1317';
    const a = defaultAppTomlValues();
    a.api.address = 'tcp://h:0';
    a.evm.api_address = '127.0.0.1:1317';
    assert.deepEqual(loadHome('clash-bad-app', renderConfigToml(c), renderAppToml(a)), [
      'app.toml: api.address: port must be between 1 and 65535, got "tcp://h:0"',
    ]);
    // config.toml unreadable as TOML: its defaults are not compared (26657 here would clash).
    const a2 = defaultAppTomlValues();
    a2.api.address = 'tcp://0.0.0.0:26657';
    a2.evm.api_address = '0.0.0.0:26657';
    const problems = loadHome('clash-bad-config', '[rpc\n', renderAppToml(a2));
    assert.equal(problems.length, 1, problems.join('; '));
    assert.match(problems[0]!, /^config\.toml: not valid TOML/);
  });
});

describe('listen port clashes across config.toml and app.toml', () => {
  const withRpc = (laddr: string) => {
    const c = defaultConfigTomlValues();
    c.rpc.laddr = laddr;
    return renderConfigToml(c);
  };

  it('a wildcard host clashes with any host on its port; two specific hosts do not', () => {
    assert.deepEqual(loadHome('clash-1', withRpc('tcp://127.0.0.1:1317'), renderAppToml()), [
      'app.toml: api.address: port 1317 is already used by config.toml: rpc.laddr ("tcp://127.0.0.1:1317"), got "tcp://0.0.0.0:1317"',
    ]);
    const a = defaultAppTomlValues();
    a.api.address = 'tcp://127.0.0.2:26657';
    a.evm.api_address = '127.0.0.2:26657';
    assert.deepEqual(loadHome('clash-2', withRpc('tcp://127.0.0.1:26657'), renderAppToml(a)), []);
    a.api.address = 'tcp://[::]:26657';
    a.evm.api_address = '[::]:26657';
    assert.deepEqual(loadHome('clash-3', withRpc('tcp://127.0.0.1:26657'), renderAppToml(a)), [
      'app.toml: api.address: port 26657 is already used by config.toml: rpc.laddr ("tcp://127.0.0.1:26657"), got "tcp://[::]:26657"',
    ]);
    a.api.address = 'tcp://127.0.0.1:26657';
    a.evm.api_address = '127.0.0.1:26657';
    assert.deepEqual(loadHome('clash-4', withRpc(':26657'), renderAppToml(a)), [
      'app.toml: api.address: port 26657 is already used by config.toml: rpc.laddr (":26657"), got "tcp://127.0.0.1:26657"',
    ]);
  });

  it('the metrics listener, and each later listener compared with every earlier one', () => {
    const c = defaultConfigTomlValues();
    c.instrumentation.prometheus_listen_addr = '127.0.0.1:8546';
    const problems = loadHome('clash-5', renderConfigToml(c), renderAppToml());
    assert.deepEqual(problems, [
      'config.toml: instrumentation.prometheus_listen_addr: port 8546 is already used by app.toml: evm.ws_address ("0.0.0.0:8546"), got "127.0.0.1:8546"',
    ]);
    // With the WebSocket off, the metrics may take its port.
    const a = defaultAppTomlValues();
    a.evm.rpc.ws_enable = false;
    assert.deepEqual(loadHome('clash-6', renderConfigToml(c), renderAppToml(a)), []);
    // A refused address is not compared.
    const bad = defaultConfigTomlValues();
    bad.p2p.laddr = 'tcp://0.0.0.0:99999';
    bad.rpc.laddr = 'tcp://0.0.0.0:26656';
    assert.deepEqual(loadHome('clash-7', renderConfigToml(bad), renderAppToml()), [
      'config.toml: p2p.laddr: port must be between 1 and 65535, got "tcp://0.0.0.0:99999"',
    ]);
  });
});
