// Loading the three TOML files of a home: parse, check keys and values, cross-check, convert.
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import { parse, TomlError } from 'smol-toml';
import { checkEthAddress } from './address.js';
import { applyEnvOverrides, type Env, markEnvProblems } from './env.js';
import { homePaths } from './home.js';
import { type ConfigProblem, describeValue } from './problems.js';
import { type AppToml, AppTomlFile, toAppToml } from './schema/app-toml.js';
import { type ClientToml, ClientTomlFile, toClientToml } from './schema/client-toml.js';
import { type ConfigToml, ConfigTomlFile, toConfigToml } from './schema/config-toml.js';
import { fillSection, type TomlSection, validateTree } from './schema/section.js';
import { type ListenAddress, nodeHttpUrl, splitList } from './values.js';

export interface LoadedNodeConfig {
  config: ConfigToml;
  app: AppToml;
  client: ClientToml;
  /** Every problem found in the three files; empty when they are valid. */
  problems: ConfigProblem[];
  /** Keys set by NODED_<KEY> environment variables (`env` given), in file then key order. */
  overrides: Array<{ file: 'config.toml' | 'app.toml'; key: string; variable: string }>;
}

interface ParsedFile<F> {
  file: F;
  /** Dotted keys whose values were bad (replaced by defaults). */
  bad: Set<string>;
  /** Keys set by NODED_<KEY> environment variables, with the variable's name. */
  applied?: Map<string, string>;
}

function errnoText(err: unknown): string {
  const code = (err as NodeJS.ErrnoException).code;
  if (code === 'ENOENT') return 'no such file';
  if (code === 'EACCES') return 'permission denied';
  if (code === 'EISDIR') return 'is a directory';
  return code ?? (err as Error).message;
}

/** Reads a file; a problem (and undefined) when it cannot be read. */
export function readTextFile(
  label: string,
  path: string,
  problems: ConfigProblem[],
  hint = '',
): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch (err) {
    problems.push({ file: label, key: '', message: `cannot read ${path}: ${errnoText(err)}${hint}` });
    return undefined;
  }
}

function parseTomlInto<F extends TomlSection>(
  label: string,
  text: string | undefined,
  make: () => F,
  problems: ConfigProblem[],
  env?: Env,
): ParsedFile<F> {
  const file = make();
  // '*' marks a file that could not be read or parsed: cross-checks then skip it entirely.
  if (text === undefined) return { file, bad: new Set(['*']) };
  let raw: unknown;
  try {
    raw = parse(text, { integersAsBigInt: 'asNeeded', unsafeKeyBehaviour: 'throw' });
  } catch (err) {
    if (err instanceof TomlError) {
      const why = err.message.split('\n')[0]!.replace(/^Invalid TOML document: /, '');
      problems.push({
        file: label,
        key: '',
        message: `not valid TOML at line ${err.line}, column ${err.column}: ${why}`,
      });
    } else problems.push({ file: label, key: '', message: `not valid TOML: ${(err as Error).message}` });
    return { file, bad: new Set(['*']) };
  }
  const from = problems.length;
  const applied =
    env === undefined
      ? new Map<string, string>()
      : applyEnvOverrides(label, raw as Record<string, unknown>, make(), env, problems);
  fillSection(label, '', file, raw, problems);
  const bad = validateTree(label, '', file, make(), problems);
  markEnvProblems(label, applied, problems, from);
  return { file, bad, applied };
}

/**
 * Parses and checks config.toml (undefined text: the file could not be read, defaults are used);
 * with `env`, NODED_<KEY> variables override the file's keys (env.ts).
 */
export function parseConfigToml(
  text: string | undefined,
  problems: ConfigProblem[],
  label = 'config.toml',
  env?: Env,
) {
  const parsed = parseTomlInto(label, text, () => new ConfigTomlFile(), problems, env);
  const config = toConfigToml(parsed.file);
  const from = problems.length;
  checkConfigToml(label, config, parsed.bad, problems);
  markEnvProblems(label, parsed.applied ?? new Map(), problems, from);
  return { config, file: parsed.file, bad: parsed.bad, applied: parsed.applied };
}

/** Parses and checks app.toml; relative TLS paths resolve against `configDir`. */
export function parseAppToml(
  text: string | undefined,
  problems: ConfigProblem[],
  configDir = '.',
  label = 'app.toml',
  env?: Env,
) {
  const parsed = parseTomlInto(label, text, () => new AppTomlFile(), problems, env);
  const app = toAppToml(parsed.file, (p) => (isAbsolute(p) ? p : resolve(configDir, p)));
  const from = problems.length;
  checkAppToml(label, app, parsed.file, parsed.bad, problems);
  markEnvProblems(label, parsed.applied ?? new Map(), problems, from);
  return { app, file: parsed.file, bad: parsed.bad, applied: parsed.applied };
}

export function parseClientToml(text: string | undefined, problems: ConfigProblem[], label = 'client.toml') {
  const parsed = parseTomlInto(label, text, () => new ClientTomlFile(), problems);
  return { client: toClientToml(parsed.file), file: parsed.file, bad: parsed.bad };
}

/**
 * The one loader the node and the CLI call: <home>/config/{config,app,client}.toml, all checked.
 * With `env` (`noded start` and the cluster's services pass process.env), NODED_<KEY> variables
 * override config.toml and app.toml keys.
 */
export function loadNodeConfig(home: string, env?: Env): LoadedNodeConfig {
  const paths = homePaths(home);
  const problems: ConfigProblem[] = [];
  const read = (label: string, path: string) =>
    readTextFile(label, path, problems, ' (run "noded init" to create the home)');
  const c = parseConfigToml(read('config.toml', paths.configToml), problems, 'config.toml', env);
  const a = parseAppToml(read('app.toml', paths.appToml), problems, paths.config, 'app.toml', env);
  const k = parseClientToml(read('client.toml', paths.clientToml), problems);
  const from = problems.length;
  checkPortConflicts(c.config, a.app, c.bad, a.bad, problems);
  markEnvProblems('config.toml', c.applied ?? new Map(), problems, from);
  markEnvProblems('app.toml', a.applied ?? new Map(), problems, from);
  const overrides = [
    ...[...(c.applied ?? [])].map(([key, variable]) => ({ file: 'config.toml' as const, key, variable })),
    ...[...(a.applied ?? [])].map(([key, variable]) => ({ file: 'app.toml' as const, key, variable })),
  ];
  return { config: c.config, app: a.app, client: k.client, problems, overrides };
}

function checkConfigToml(label: string, config: ConfigToml, bad: Set<string>, problems: ConfigProblem[]) {
  const m = config.mempool;
  const ok = !bad.has('*') && !bad.has('mempool.max_tx_bytes') && !bad.has('mempool.max_txs_bytes');
  if (ok && m.maxTxBytes > m.maxTxsBytes) {
    problems.push({
      file: label,
      key: 'mempool.max_tx_bytes',
      message: `must be <= mempool.max_txs_bytes (${m.maxTxsBytes}), got ${m.maxTxBytes}`,
    });
  }
  const p = config.p2p;
  if (!bad.has('*') && !bad.has('p2p.seed_mode') && !bad.has('p2p.pex') && p.seedMode && !p.pex) {
    problems.push({
      file: label,
      key: 'p2p.seed_mode',
      message: 'seed mode answers peer exchange requests: it needs p2p.pex = true, got pex = false',
    });
  }
}

const q = (v: bigint) => `"${v}"`;

function checkAppToml(
  label: string,
  app: AppToml,
  file: AppTomlFile,
  bad: Set<string>,
  problems: ConfigProblem[],
) {
  const ok = (...keys: string[]) => !bad.has('*') && keys.every((k) => !bad.has(k));
  const push = (key: string, message: string) => problems.push({ file: label, key, message });
  const g = app.evm.gas;

  // Seed §2.4 / §8: min_gas_price <= base_fee <= max_gas_price.
  if (ok('evm.gas.min_gas_price', 'evm.gas.max_gas_price') && g.minGasPrice > g.maxGasPrice) {
    push(
      'evm.gas.min_gas_price',
      `must be <= evm.gas.max_gas_price (${q(g.maxGasPrice)}), got ${q(g.minGasPrice)}`,
    );
  } else if (
    ok('evm.gas.min_gas_price', 'evm.gas.max_gas_price', 'evm.gas.base_fee') &&
    (g.baseFee < g.minGasPrice || g.baseFee > g.maxGasPrice)
  ) {
    push(
      'evm.gas.base_fee',
      `must be between evm.gas.min_gas_price (${q(g.minGasPrice)}) and evm.gas.max_gas_price (${q(g.maxGasPrice)}), got ${q(g.baseFee)}`,
    );
  }
  if (ok('evm.min_gas_price', 'evm.max_gas_price') && app.evm.minGasPrice > app.evm.maxGasPrice) {
    push(
      'evm.min_gas_price',
      `must be <= evm.max_gas_price (${q(app.evm.maxGasPrice)}), got ${q(app.evm.minGasPrice)}`,
    );
  } else if (ok('evm.max_gas_price', 'evm.gas.base_fee') && app.evm.maxGasPrice < g.baseFee) {
    push(
      'evm.max_gas_price',
      `must be >= evm.gas.base_fee (${q(g.baseFee)}), or no transaction could pay the first block's base fee, got ${q(app.evm.maxGasPrice)}`,
    );
  }
  if (ok('evm.gas.gas_target', 'evm.gas.block_gas_limit') && g.gasTarget > g.blockGasLimit) {
    push(
      'evm.gas.gas_target',
      `must be <= evm.gas.block_gas_limit (${q(g.blockGasLimit)}), got ${q(g.gasTarget)}`,
    );
  }

  if (ok('mode', 'pruning') && app.mode === 'archive' && app.pruning !== 'nothing') {
    push(
      'pruning',
      `must be "nothing" when mode is "archive" (an archive node keeps all state), got "${app.pruning}"`,
    );
  }

  if (
    ok('api.address', 'evm.api_address') &&
    (app.api.address.host !== app.evm.apiAddress.host || app.api.address.port !== app.evm.apiAddress.port)
  ) {
    push(
      'evm.api_address',
      `must name the same host and port as api.address (${describeValue(file.api.address)}), got ${describeValue(file.evm.api_address)}`,
    );
  }

  if (ok('api.tls_cert_file', 'api.tls_key_file')) checkTls(app, file, push);
  // Each bridge key is checked on its own (a bad one does not hide another's problem: its default
  // would reveal it on the next read, e.g. a missing RPC URL behind a malformed token address).
  if (ok('bridge.enable')) checkBridge(app, file, push, (key) => ok(`bridge.${key}`));

  // A header trusted by hash needs both its height and its hash.
  if (ok('light.trust_height', 'light.trust_hash')) {
    const { trustHeight, trustHash } = app.light;
    if (trustHeight > 0 && trustHash === '') {
      push('light.trust_hash', `must be set when light.trust_height is set (${trustHeight}), got ""`);
    } else if (trustHeight === 0 && trustHash !== '') {
      push('light.trust_height', `must be set (> 0) when light.trust_hash is set, got 0`);
    }
  }
  if (ok('light.rpc_servers')) {
    const bad = splitList(file.light.rpc_servers).find((u) => nodeHttpUrl(u) === undefined);
    if (bad !== undefined) {
      push(
        'light.rpc_servers',
        `must be a comma-separated list of "http://host:port", "https://host" or "tcp://host:port" URLs, got ${JSON.stringify(bad)} in ${describeValue(file.light.rpc_servers)}`,
      );
    }
  }
}

/** [bridge]: checksummed addresses, and all three endpoints once enabled. */
function checkBridge(
  app: AppToml,
  file: AppTomlFile,
  push: (key: string, message: string) => void,
  valid: (key: 'ethereum_rpc_url' | 'bridge_address' | 'btc_token_address') => boolean,
) {
  let addressesOk = valid('bridge_address') && valid('btc_token_address');
  for (const key of ['bridge_address', 'btc_token_address'] as const) {
    if (!valid(key)) continue;
    const v = file.bridge[key];
    const why = v === '' ? undefined : checkEthAddress(v);
    if (why) {
      push(`bridge.${key}`, `${why}, got ${describeValue(v)}`);
      addressesOk = false;
    }
  }
  if (!app.bridge.enable) return;
  for (const key of ['ethereum_rpc_url', 'bridge_address', 'btc_token_address'] as const) {
    if (valid(key) && file.bridge[key] === '')
      push(`bridge.${key}`, 'must be set when bridge.enable is true, got ""');
  }
  if (
    addressesOk &&
    app.bridge.bridgeAddress !== '' &&
    app.bridge.bridgeAddress === app.bridge.btcTokenAddress
  ) {
    push(
      'bridge.btc_token_address',
      `must differ from bridge.bridge_address, got ${describeValue(file.bridge.btc_token_address)}`,
    );
  }
}

function checkTls(app: AppToml, file: AppTomlFile, push: (key: string, message: string) => void) {
  const cert = app.api.tlsCertFile;
  const key = app.api.tlsKeyFile;
  if (cert === '' && key === '') return;
  if (key === '') {
    push(
      'api.tls_key_file',
      `must be set when api.tls_cert_file is set (${describeValue(file.api.tls_cert_file)})`,
    );
    return;
  }
  if (cert === '') {
    push(
      'api.tls_cert_file',
      `must be set when api.tls_key_file is set (${describeValue(file.api.tls_key_file)})`,
    );
    return;
  }
  const read = (k: string, path: string): string | undefined => {
    try {
      if (!statSync(path).isFile()) {
        push(k, `${describeValue(path)} is not a file`);
        return undefined;
      }
      return readFileSync(path, 'utf8');
    } catch (err) {
      push(k, `cannot read ${describeValue(path)}: ${errnoText(err)}`);
      return undefined;
    }
  };
  const certPem = read('api.tls_cert_file', cert);
  const keyPem = read('api.tls_key_file', key);
  let x509: X509Certificate | undefined;
  let priv: ReturnType<typeof createPrivateKey> | undefined;
  if (certPem !== undefined) {
    try {
      x509 = new X509Certificate(certPem);
    } catch {
      push('api.tls_cert_file', `${describeValue(cert)} does not hold a PEM certificate`);
    }
  }
  if (keyPem !== undefined) {
    try {
      priv = createPrivateKey(keyPem);
    } catch {
      push('api.tls_key_file', `${describeValue(key)} does not hold a PEM private key (or it is encrypted)`);
    }
  }
  if (x509 && priv && !x509.checkPrivateKey(priv)) {
    push(
      'api.tls_key_file',
      `${describeValue(key)} is not the private key of the certificate in api.tls_cert_file`,
    );
  }
}

/** One server socket the node opens, as configured. */
export interface ListenerConfig {
  /** What listens there, for people: "p2p", "rpc", "rest api", "evm http", "evm ws", "metrics". */
  name: string;
  file: 'config.toml' | 'app.toml';
  key: string;
  address: ListenAddress;
  enabled: boolean;
}

/** Every listener of the node in a fixed order, enabled or not. */
export function listenAddresses(config: ConfigToml, app: AppToml): ListenerConfig[] {
  return [
    { name: 'p2p', file: 'config.toml', key: 'p2p.laddr', address: config.p2p.laddr, enabled: true },
    { name: 'rpc', file: 'config.toml', key: 'rpc.laddr', address: config.rpc.laddr, enabled: true },
    {
      name: 'rest api',
      file: 'app.toml',
      key: 'api.address',
      address: app.api.address,
      enabled: app.api.enable,
    },
    {
      name: 'evm http',
      file: 'app.toml',
      key: 'evm.rpc_address',
      address: app.evm.rpcAddress,
      enabled: app.evm.rpc.enable,
    },
    {
      name: 'evm ws',
      file: 'app.toml',
      key: 'evm.ws_address',
      address: app.evm.wsAddress,
      enabled: app.evm.rpc.wsEnable,
    },
    {
      name: 'metrics',
      file: 'config.toml',
      key: 'instrumentation.prometheus_listen_addr',
      address: config.instrumentation.prometheusListenAddr,
      enabled: config.instrumentation.prometheus,
    },
  ];
}

const WILDCARDS = new Set(['0.0.0.0', '::', '']);

function overlaps(a: ListenAddress, b: ListenAddress): boolean {
  return a.port === b.port && (a.host === b.host || WILDCARDS.has(a.host) || WILDCARDS.has(b.host));
}

function checkPortConflicts(
  config: ConfigToml,
  app: AppToml,
  configBad: Set<string>,
  appBad: Set<string>,
  problems: ConfigProblem[],
) {
  const seen: ListenerConfig[] = [];
  for (const l of listenAddresses(config, app)) {
    const bad = l.file === 'config.toml' ? configBad : appBad;
    if (!l.enabled || bad.has(l.key) || bad.has('*')) continue;
    const clash = seen.find((s) => overlaps(s.address, l.address));
    if (clash) {
      problems.push({
        file: l.file,
        key: l.key,
        message: `port ${l.address.port} is already used by ${clash.file}: ${clash.key} (${describeValue(clash.address.raw)}), got ${describeValue(l.address.raw)}`,
      });
    } else seen.push(l);
  }
}
