// What every cluster service reads before it starts: the home's config.toml and app.toml with
// NODED_<KEY> overrides, genesis.json, and the cluster's own variables (docs/cluster.md
// "Configuration"). Every problem is collected and reported at once, each naming the file or variable.
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { GrpcTlsMaterial } from '@noded/abci-grpc';
import {
  type ConfigProblem,
  checkSubjectToken,
  type Env,
  homeLockHolder,
  homePaths,
  type LoadedGenesis,
  type LoadedNodeConfig,
  loadGenesis,
  loadNodeConfig,
} from '@noded/config';
import { type TracingSettings, tracingSettingsOf } from './tracing.js';

/** The services `noded service <name>` runs today. */
export const SERVICE_NAMES = [
  'executor',
  'consensus',
  'state-store',
  'rpc-edge',
  'metrics',
  'p2p-gateway',
] as const;
export type ServiceName = (typeof SERVICE_NAMES)[number];
/** The services whose metrics the metrics service gathers. */
export type ScrapedService = Exclude<ServiceName, 'metrics'>;
export const SCRAPED_SERVICES: readonly ScrapedService[] = [
  'executor',
  'consensus',
  'state-store',
  'rpc-edge',
  'p2p-gateway',
];
/**
 * The services NODED_METRICS_TARGETS must name (and its default lists). The p2p-gateway is optional:
 * a single-validator cluster runs without one; name it when it runs.
 */
export const REQUIRED_SCRAPED_SERVICES: readonly ScrapedService[] = [
  'executor',
  'consensus',
  'state-store',
  'rpc-edge',
];

/**
 * Where each service serves its own /metrics, /healthz and /readyz unless NODED_SERVICE_METRICS_ADDRESS
 * says otherwise (the metrics service gathers them onto [instrumentation] prometheus_listen_addr).
 */
export const DEFAULT_SERVICE_METRICS_ADDRESSES: Record<ScrapedService, string> = {
  executor: '127.0.0.1:26680',
  consensus: '127.0.0.1:26681',
  'state-store': '127.0.0.1:26682',
  'rpc-edge': '127.0.0.1:26683',
  'p2p-gateway': '127.0.0.1:26684',
};

/** One endpoint the metrics service scrapes: a host name may stand for several replicas. */
export interface MetricsTarget {
  service: ScrapedService;
  host: string;
  port: number;
}

/** Where the executor serves noded.abci.v1.Application (and grpc.health.v1) unless told otherwise. */
export const DEFAULT_EXECUTOR_GRPC_ADDRESS = '127.0.0.1:26670';
/** Where a state-store serves noded.state.v1.StateReader (and grpc.health.v1) unless told otherwise. */
export const DEFAULT_STATE_STORE_GRPC_ADDRESS = '127.0.0.1:26671';
/** Where the p2p-gateway serves noded.p2p.v1.Gateway (and grpc.health.v1) unless told otherwise. */
export const DEFAULT_P2P_GATEWAY_ADDRESS = '127.0.0.1:26672';
/** nats-server's default client port. */
export const DEFAULT_NATS_URL = 'nats://127.0.0.1:4222';

/** This service's NATS login: a user of nats-server's authorization block and its password. */
export interface NatsLogin {
  user: string;
  pass: string;
  /** Where the password was read from (named in errors, never the password). */
  passwordFile: string;
}

/** Mutual TLS on the cluster's gRPC links, and the files it was read from. */
export interface GrpcTlsSettings extends GrpcTlsMaterial {
  files: { cert: string; key: string; ca: string };
}

export interface ClusterSettings {
  /** NODED_EXECUTOR_GRPC_ADDRESS: where the executor listens and consensus dials (host:port). */
  executorGrpcAddress: string;
  /** NODED_NATS_URL: one or more comma-separated nats:// URLs. */
  natsUrls: string[];
  /** NODED_EXECUTOR_WAIT: how long consensus waits for the executor at start and after a loss (ms). */
  executorWaitMs: number;
  /**
   * NODED_MEMPOOL_STREAM_MAX_BYTES: the executor's bound on bytes an admission stream's consumer may
   * be behind before it is cut off (default 64 MiB).
   */
  mempoolStreamMaxBytes: number;
  /** NODED_STATE_STORE_DB: the state-store's own RocksDB directory (default <home>/data/state-store.db). */
  stateStoreDb: string;
  /** NODED_STATE_STORE_GRPC_ADDRESS: where a state-store listens (host:port); an rpc-edge's first store. */
  stateStoreGrpcAddress: string;
  /**
   * NODED_STATE_STORE_GRPC_ADDRESS as an rpc-edge reads it: one or more comma-separated host:port,
   * in order of preference (the edge reads from the first one up).
   */
  stateStoreGrpcAddresses: string[];
  /** NODED_STATE_STORE_READ_WAIT: how long a state-store waits for a height a read needs (ms). */
  stateStoreReadWaitMs: number;
  /**
   * NODED_EDGE_READ_YOUR_WRITES: an rpc-edge's `latest` follows the executor's announced heads
   * (true, the default) or only its state-store's position (false: no read waits for a height).
   */
  edgeReadYourWrites: boolean;
  /**
   * NODED_CONSENSUS_RPC_ADDRESS: the CometBFT RPCs an rpc-edge's REST reads blocks, validator sets and
   * node info from: one or more comma-separated host:port, in order of preference (the first one up
   * answers, docs/cluster.md "Edge failover"); unset: the home's `[rpc] laddr` on its dialable host.
   */
  consensusRpcAddresses?: string[];
  /**
   * NODED_P2P_GATEWAY_ADDRESS: where the p2p-gateway serves its relay (host:port) and consensus dials
   * it. The gateway defaults to DEFAULT_P2P_GATEWAY_ADDRESS; for consensus, null (unset) means no
   * gateway: no peers, and a chain this home validates alone.
   */
  p2pGatewayAddress: string | null;
  /** NODED_SERVICE_METRICS_ADDRESS: where this service serves its own metrics (host:port). */
  serviceMetricsAddress: string;
  /** NODED_METRICS_TARGETS: what the metrics service scrapes. */
  metricsTargets: MetricsTarget[];
  /** NODED_METRICS_MAX_LAG: heights a state-store may be behind consensus and the cluster still ready. */
  metricsMaxLag: number;
  /** NODED_NATS_USER and NODED_NATS_PASSWORD_FILE; null: no login (a nats-server without authorization). */
  natsLogin: NatsLogin | null;
  /** NODED_GRPC_TLS_CERT, NODED_GRPC_TLS_KEY, NODED_GRPC_TLS_CA; null: plaintext gRPC. */
  grpcTls: GrpcTlsSettings | null;
}

export interface ServiceSettings {
  name: ServiceName;
  home: string;
  loaded: LoadedNodeConfig;
  genesis: LoadedGenesis;
  cluster: ClusterSettings;
  logLevel: string;
  /** JSON log file; null: stdout only (`--log-file -`, for a read-only home). */
  logFile: string | null;
  /** OpenTelemetry tracing from the OTEL_* variables (off unless an exporter is named). */
  tracing: TracingSettings;
}

/** Raised with every problem found; the CLI prints each on its own line. */
export class ServiceSettingsError extends Error {
  constructor(
    readonly service: string,
    readonly problems: string[],
  ) {
    super(`service ${service}: ${problems.length} problem(s) in the configuration`);
    this.name = 'ServiceSettingsError';
  }
}

const HOST_PORT_RE = /^(\[[0-9a-fA-F:]+\]|[A-Za-z0-9.-]+):(\d{1,5})$/;

function checkHostPort(name: string, value: string, problems: string[]): void {
  const m = HOST_PORT_RE.exec(value);
  if (!m) {
    problems.push(
      `$${name}: must be host:port (e.g. ${DEFAULT_EXECUTOR_GRPC_ADDRESS}), got ${JSON.stringify(value)}`,
    );
    return;
  }
  const port = Number(m[2]);
  if (port < 1 || port > 65535)
    problems.push(`$${name}: port must be 1..65535, got ${port} in ${JSON.stringify(value)}`);
}

/** A comma-separated list of host:port in order of preference: each checked, none twice. */
function hostPortList(name: string, value: string, problems: string[]): string[] {
  const list = value.split(',').map((a) => a.trim());
  for (const a of list) checkHostPort(name, a, problems);
  const twice = list.find((a, i) => a !== '' && list.indexOf(a) !== i);
  if (twice !== undefined) problems.push(`$${name}: names ${JSON.stringify(twice)} twice`);
  return list;
}

function natsUrlsOf(value: string, problems: string[]): string[] {
  const urls = value
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  if (urls.length === 0) problems.push('$NODED_NATS_URL: must name at least one nats:// URL, got ""');
  for (const u of urls) {
    let url: URL | undefined;
    try {
      url = new URL(u);
    } catch {
      // reported below
    }
    if (!url || (url.protocol !== 'nats:' && url.protocol !== 'tls:') || url.hostname === '') {
      problems.push(
        `$NODED_NATS_URL: each URL must be nats://host:port or tls://host:port, got ${JSON.stringify(u)}`,
      );
    } else if (url.username !== '' || url.password !== '') {
      // The login comes from $NODED_NATS_USER and the file $NODED_NATS_PASSWORD_FILE names, never from a URL.
      problems.push(
        `$NODED_NATS_URL: must not carry a user or password, got one in ${JSON.stringify(url.host)}`,
      );
    }
  }
  return urls;
}

/** A file named by `$name`, read whole; a problem naming the variable and the path when it cannot be. */
function readNamedFile(name: string, path: string, problems: string[]): Buffer | undefined {
  if (path.trim() === '') {
    problems.push(`$${name}: must be a file path, got ""`);
    return undefined;
  }
  try {
    const bytes = readFileSync(path);
    if (bytes.length === 0) {
      problems.push(`$${name}: ${path} is empty`);
      return undefined;
    }
    return bytes;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    problems.push(
      `$${name}: cannot read ${path} (${code === 'ENOENT' ? 'no such file' : code === 'EACCES' ? 'permission denied' : code === 'EISDIR' ? 'a directory' : (err as Error).message})`,
    );
    return undefined;
  }
}

// A nats-server user name as nats-server.conf takes it unquoted and the generated config writes it.
const NATS_USER_RE = /^[A-Za-z0-9_.-]{1,64}$/;

/** NODED_NATS_USER and NODED_NATS_PASSWORD_FILE: both or neither. */
function natsLoginOf(env: Env, problems: string[]): NatsLogin | null {
  const user = env.NODED_NATS_USER;
  const file = env.NODED_NATS_PASSWORD_FILE;
  if (user === undefined && file === undefined) return null;
  if (user === undefined || file === undefined) {
    problems.push(
      `$NODED_NATS_USER and $NODED_NATS_PASSWORD_FILE: set both or neither, got only $${user === undefined ? 'NODED_NATS_PASSWORD_FILE' : 'NODED_NATS_USER'}`,
    );
    return null;
  }
  if (!NATS_USER_RE.test(user))
    problems.push(`$NODED_NATS_USER: must be 1 to 64 of A-Z a-z 0-9 _ . -, got ${JSON.stringify(user)}`);
  const bytes = readNamedFile('NODED_NATS_PASSWORD_FILE', file, problems);
  if (bytes === undefined) return null;
  // One line; the newline an editor or `echo` leaves is not part of the password.
  const pass = bytes.toString('utf8').replace(/\r?\n$/, '');
  if (pass === '' || /[\r\n]/.test(pass)) {
    problems.push(
      `$NODED_NATS_PASSWORD_FILE: ${file} must hold the password on one line, got ${pass === '' ? 'an empty line' : 'several lines'}`,
    );
    return null;
  }
  return { user, pass, passwordFile: resolve(file) };
}

/** NODED_GRPC_TLS_CERT, _KEY and _CA: all three or none; parsed and checked against each other. */
function grpcTlsOf(env: Env, problems: string[]): GrpcTlsSettings | null {
  const names = ['NODED_GRPC_TLS_CERT', 'NODED_GRPC_TLS_KEY', 'NODED_GRPC_TLS_CA'] as const;
  const set = names.filter((n) => env[n] !== undefined);
  if (set.length === 0) return null;
  if (set.length < names.length) {
    problems.push(
      `$NODED_GRPC_TLS_CERT, $NODED_GRPC_TLS_KEY and $NODED_GRPC_TLS_CA: set all three or none, got only ${set.map((n) => `$${n}`).join(', ')}`,
    );
    return null;
  }
  const files = { cert: env.NODED_GRPC_TLS_CERT!, key: env.NODED_GRPC_TLS_KEY!, ca: env.NODED_GRPC_TLS_CA! };
  const cert = readNamedFile('NODED_GRPC_TLS_CERT', files.cert, problems);
  const key = readNamedFile('NODED_GRPC_TLS_KEY', files.key, problems);
  const ca = readNamedFile('NODED_GRPC_TLS_CA', files.ca, problems);
  if (!cert || !key || !ca) return null;
  const parse = <T>(name: string, path: string, what: string, f: () => T): T | undefined => {
    try {
      return f();
    } catch (err) {
      problems.push(`$${name}: ${path} is not a PEM ${what} (${(err as Error).message})`);
      return undefined;
    }
  };
  const leaf = parse('NODED_GRPC_TLS_CERT', files.cert, 'certificate', () => new X509Certificate(cert));
  const priv = parse('NODED_GRPC_TLS_KEY', files.key, 'private key', () => createPrivateKey(key));
  const root = parse('NODED_GRPC_TLS_CA', files.ca, 'CA certificate', () => new X509Certificate(ca));
  if (!leaf || !priv || !root) return null;
  const before = problems.length;
  if (!leaf.checkPrivateKey(priv))
    problems.push(
      `$NODED_GRPC_TLS_KEY: ${files.key} is not the private key of the certificate ${files.cert}`,
    );
  if (!leaf.checkIssued(root) || !leaf.verify(root.publicKey))
    problems.push(
      `$NODED_GRPC_TLS_CERT: ${files.cert} is not signed by the CA of $NODED_GRPC_TLS_CA (${files.ca}); the peers would refuse it`,
    );
  const now = Date.now();
  if (Date.parse(leaf.validTo) < now || Date.parse(leaf.validFrom) > now)
    problems.push(
      `$NODED_GRPC_TLS_CERT: ${files.cert} is valid from ${leaf.validFrom} to ${leaf.validTo}, not now`,
    );
  if (problems.length > before) return null;
  return {
    cert,
    key,
    ca,
    files: { cert: resolve(files.cert), key: resolve(files.key), ca: resolve(files.ca) },
  };
}

/** NODED_METRICS_TARGETS: comma-separated service=host:port, each service at least once. */
function metricsTargetsOf(value: string | undefined, problems: string[]): MetricsTarget[] {
  const text =
    value ?? REQUIRED_SCRAPED_SERVICES.map((s) => `${s}=${DEFAULT_SERVICE_METRICS_ADDRESSES[s]}`).join(',');
  const targets: MetricsTarget[] = [];
  for (const item of text.split(',').map((s) => s.trim())) {
    if (item === '') continue;
    const eq = item.indexOf('=');
    const service = eq < 0 ? '' : item.slice(0, eq);
    const address = eq < 0 ? item : item.slice(eq + 1);
    if (!(SCRAPED_SERVICES as readonly string[]).includes(service)) {
      problems.push(
        `$NODED_METRICS_TARGETS: each entry must be <service>=host:port with <service> one of ${SCRAPED_SERVICES.join(', ')}, got ${JSON.stringify(item)}`,
      );
      continue;
    }
    const m = HOST_PORT_RE.exec(address);
    const port = m ? Number(m[2]) : 0;
    if (!m || port < 1 || port > 65535) {
      problems.push(`$NODED_METRICS_TARGETS: ${service}: must be host:port, got ${JSON.stringify(address)}`);
      continue;
    }
    targets.push({ service: service as ScrapedService, host: m[1]!.replace(/^\[|\]$/g, ''), port });
  }
  for (const s of REQUIRED_SCRAPED_SERVICES) {
    if (
      !targets.some((t) => t.service === s) &&
      !problems.some((p) => p.startsWith('$NODED_METRICS_TARGETS'))
    ) {
      problems.push(`$NODED_METRICS_TARGETS: names no ${s} (every service of the cluster is required)`);
    }
  }
  return targets;
}

/** The cluster's own variables, checked; defaults when unset. */
export function clusterSettingsOf(
  env: Env,
  problems: string[],
  home = '.',
  service?: ServiceName,
): ClusterSettings {
  const executorGrpcAddress = env.NODED_EXECUTOR_GRPC_ADDRESS ?? DEFAULT_EXECUTOR_GRPC_ADDRESS;
  checkHostPort('NODED_EXECUTOR_GRPC_ADDRESS', executorGrpcAddress, problems);
  const natsUrls = natsUrlsOf(env.NODED_NATS_URL ?? DEFAULT_NATS_URL, problems);
  let executorWaitMs = 60_000;
  const wait = env.NODED_EXECUTOR_WAIT;
  if (wait !== undefined) {
    const m = /^(\d+)(ms|s)$/.exec(wait);
    if (!m)
      problems.push(
        `$NODED_EXECUTOR_WAIT: must be a duration like 30s or 500ms, got ${JSON.stringify(wait)}`,
      );
    else {
      executorWaitMs = Number(m[1]) * (m[2] === 's' ? 1000 : 1);
      if (executorWaitMs < 100 || executorWaitMs > 3_600_000)
        problems.push(`$NODED_EXECUTOR_WAIT: must be between 100ms and 3600s, got ${JSON.stringify(wait)}`);
    }
  }
  let mempoolStreamMaxBytes = 64 * 1024 * 1024;
  const streamMax = env.NODED_MEMPOOL_STREAM_MAX_BYTES;
  if (streamMax !== undefined) {
    mempoolStreamMaxBytes = /^\d{1,12}$/.test(streamMax) ? Number(streamMax) : -1;
    if (mempoolStreamMaxBytes < 1024 || mempoolStreamMaxBytes > 4 * 1024 ** 3)
      problems.push(
        `$NODED_MEMPOOL_STREAM_MAX_BYTES: must be a number of bytes from 1024 to 4294967296, got ${JSON.stringify(streamMax)}`,
      );
  }
  const db = env.NODED_STATE_STORE_DB;
  if (db !== undefined && db.trim() === '')
    problems.push('$NODED_STATE_STORE_DB: must be a directory path, got ""');
  const stateStoreDb =
    db !== undefined && db.trim() !== '' ? resolve(db) : join(homePaths(home).data, 'state-store.db');
  for (const own of ['application.db', 'blockstore.db', 'state.db', 'tx_index.db']) {
    if (stateStoreDb === join(homePaths(home).data, own)) {
      problems.push(`$NODED_STATE_STORE_DB: must not be the node's own ${own}, got ${JSON.stringify(db)}`);
    }
  }
  const stateStoreGrpcAddresses = hostPortList(
    'NODED_STATE_STORE_GRPC_ADDRESS',
    env.NODED_STATE_STORE_GRPC_ADDRESS ?? DEFAULT_STATE_STORE_GRPC_ADDRESS,
    problems,
  );
  if (service === 'state-store' && stateStoreGrpcAddresses.length > 1)
    problems.push(
      `$NODED_STATE_STORE_GRPC_ADDRESS: a state-store listens on one host:port (a comma-separated list is an rpc-edge's), got ${JSON.stringify(env.NODED_STATE_STORE_GRPC_ADDRESS)}`,
    );
  const stateStoreGrpcAddress = stateStoreGrpcAddresses[0]!;
  let stateStoreReadWaitMs = 1_000;
  const readWait = env.NODED_STATE_STORE_READ_WAIT;
  if (readWait !== undefined) {
    const m = /^(\d+)(ms|s)$/.exec(readWait);
    if (!m)
      problems.push(
        `$NODED_STATE_STORE_READ_WAIT: must be a duration like 1s or 500ms, got ${JSON.stringify(readWait)}`,
      );
    else {
      stateStoreReadWaitMs = Number(m[1]) * (m[2] === 's' ? 1000 : 1);
      if (stateStoreReadWaitMs > 60_000)
        problems.push(
          `$NODED_STATE_STORE_READ_WAIT: must be between 0ms and 60s, got ${JSON.stringify(readWait)}`,
        );
    }
  }
  const ryw = env.NODED_EDGE_READ_YOUR_WRITES;
  if (ryw !== undefined && ryw !== 'true' && ryw !== 'false')
    problems.push(`$NODED_EDGE_READ_YOUR_WRITES: must be true or false, got ${JSON.stringify(ryw)}`);
  const edgeReadYourWrites = ryw !== 'false';
  const consensusRpcAddresses =
    env.NODED_CONSENSUS_RPC_ADDRESS === undefined
      ? undefined
      : hostPortList('NODED_CONSENSUS_RPC_ADDRESS', env.NODED_CONSENSUS_RPC_ADDRESS, problems);
  const gatewayEnv = env.NODED_P2P_GATEWAY_ADDRESS;
  if (gatewayEnv !== undefined) checkHostPort('NODED_P2P_GATEWAY_ADDRESS', gatewayEnv, problems);
  const p2pGatewayAddress = gatewayEnv ?? (service === 'p2p-gateway' ? DEFAULT_P2P_GATEWAY_ADDRESS : null);
  const ownDefault =
    service !== undefined && service !== 'metrics' ? DEFAULT_SERVICE_METRICS_ADDRESSES[service] : '';
  const serviceMetricsAddress = env.NODED_SERVICE_METRICS_ADDRESS ?? ownDefault;
  // Port 0 (any free port) is allowed here: an endpoint nobody gathers, for tests and one-off runs.
  if (env.NODED_SERVICE_METRICS_ADDRESS !== undefined && !/:0$/.test(serviceMetricsAddress))
    checkHostPort('NODED_SERVICE_METRICS_ADDRESS', serviceMetricsAddress, problems);
  else if (env.NODED_SERVICE_METRICS_ADDRESS !== undefined && !HOST_PORT_RE.test(serviceMetricsAddress))
    problems.push(
      `$NODED_SERVICE_METRICS_ADDRESS: must be host:port (e.g. 127.0.0.1:26680), got ${JSON.stringify(serviceMetricsAddress)}`,
    );
  const metricsTargets = service === 'metrics' ? metricsTargetsOf(env.NODED_METRICS_TARGETS, problems) : [];
  let metricsMaxLag = 10;
  if (env.NODED_METRICS_MAX_LAG !== undefined) {
    metricsMaxLag = /^\d{1,9}$/.test(env.NODED_METRICS_MAX_LAG) ? Number(env.NODED_METRICS_MAX_LAG) : -1;
    if (metricsMaxLag < 0)
      problems.push(
        `$NODED_METRICS_MAX_LAG: must be a number of heights (0 or more), got ${JSON.stringify(env.NODED_METRICS_MAX_LAG)}`,
      );
  }
  const natsLogin = natsLoginOf(env, problems);
  const grpcTls = grpcTlsOf(env, problems);
  return {
    executorGrpcAddress,
    natsUrls,
    natsLogin,
    grpcTls,
    executorWaitMs,
    mempoolStreamMaxBytes,
    stateStoreDb,
    stateStoreGrpcAddress,
    stateStoreGrpcAddresses,
    stateStoreReadWaitMs,
    edgeReadYourWrites,
    ...(consensusRpcAddresses !== undefined ? { consensusRpcAddresses } : {}),
    p2pGatewayAddress,
    serviceMetricsAddress,
    metricsTargets,
    metricsMaxLag,
  };
}

const formatProblem = (p: ConfigProblem) =>
  p.key ? `${p.file}: ${p.key}: ${p.message}` : `${p.file}: ${p.message}`;

/**
 * Loads and checks everything a service needs from `home` and `env`. Refuses a home that `noded
 * start` holds: the all-in-one node and the services must not open the same databases.
 */
export function loadServiceSettings(
  name: ServiceName,
  home: string,
  env: Env,
  overrides: { logLevel?: string; logFile?: string | null } = {},
): ServiceSettings {
  const paths = homePaths(home);
  const problems: string[] = [];
  if (!existsSync(paths.config)) {
    throw new ServiceSettingsError(name, [
      `${paths.config}: no such directory (run "noded init" to create the home)`,
    ]);
  }
  const holder = homeLockHolder(home);
  if (holder !== undefined) {
    problems.push(
      `${paths.pidFile}: this home is in use by "noded start" (pid ${holder}); stop it before running the cluster's services on it`,
    );
  }
  const loaded = loadNodeConfig(home, env);
  problems.push(...loaded.problems.map(formatProblem));
  const g = loadGenesis(paths.genesis);
  problems.push(...g.problems.map(formatProblem));
  const cluster = clusterSettingsOf(env, problems, home, name);
  const tracing = tracingSettingsOf(env, problems, name);
  const token = g.genesis ? checkSubjectToken(g.genesis.runtime.chainId) : undefined;
  if (token) problems.push(`genesis.json: chain_id: ${token}`);
  if (problems.length > 0 || !g.genesis) throw new ServiceSettingsError(name, problems);
  return {
    name,
    home: paths.home,
    loaded,
    genesis: g.genesis,
    cluster,
    logLevel: overrides.logLevel ?? loaded.config.logLevel,
    logFile: overrides.logFile === undefined ? `${paths.logs}/${name}.log` : overrides.logFile,
    tracing,
  };
}
