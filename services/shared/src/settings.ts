// What every cluster service reads before it starts: the home's config.toml and app.toml with
// NODED_<KEY> overrides, genesis.json, and the cluster's own variables (docs/cluster.md
// "Configuration"). Every problem is collected and reported at once, each naming the file or variable.
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import {
  type ConfigProblem,
  type Env,
  homeLockHolder,
  homePaths,
  type LoadedGenesis,
  type LoadedNodeConfig,
  loadGenesis,
  loadNodeConfig,
} from '../../../libs/config/index.js';
import { checkSubjectToken } from '../../../libs/stream/index.js';

/** The services `noded service <name>` runs today. */
export const SERVICE_NAMES = ['executor', 'consensus', 'state-store', 'rpc-edge'] as const;
export type ServiceName = (typeof SERVICE_NAMES)[number];

/** Where the executor serves noded.abci.v1.Application (and grpc.health.v1) unless told otherwise. */
export const DEFAULT_EXECUTOR_GRPC_ADDRESS = '127.0.0.1:26670';
/** Where a state-store serves noded.state.v1.StateReader (and grpc.health.v1) unless told otherwise. */
export const DEFAULT_STATE_STORE_GRPC_ADDRESS = '127.0.0.1:26671';
/** nats-server's default client port. */
export const DEFAULT_NATS_URL = 'nats://127.0.0.1:4222';

export interface ClusterSettings {
  /** NODED_EXECUTOR_GRPC_ADDRESS: where the executor listens and consensus dials (host:port). */
  executorGrpcAddress: string;
  /** NODED_NATS_URL: one or more comma-separated nats:// URLs. */
  natsUrls: string[];
  /** NODED_EXECUTOR_WAIT: how long consensus waits for the executor at start and after a loss (ms). */
  executorWaitMs: number;
  /** NODED_STATE_STORE_DB: the state-store's own RocksDB directory (default <home>/data/state-store.db). */
  stateStoreDb: string;
  /** NODED_STATE_STORE_GRPC_ADDRESS: where a state-store listens and an rpc-edge dials (host:port). */
  stateStoreGrpcAddress: string;
}

export interface ServiceSettings {
  name: ServiceName;
  home: string;
  loaded: LoadedNodeConfig;
  genesis: LoadedGenesis;
  cluster: ClusterSettings;
  logLevel: string;
  logFile: string;
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
      // Credentials come from files named in config (a later slice), never from a URL in the environment.
      problems.push(
        `$NODED_NATS_URL: must not carry a user or password, got one in ${JSON.stringify(url.host)}`,
      );
    }
  }
  return urls;
}

/** The cluster's own variables, checked; defaults when unset. */
export function clusterSettingsOf(env: Env, problems: string[], home = '.'): ClusterSettings {
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
  const stateStoreGrpcAddress = env.NODED_STATE_STORE_GRPC_ADDRESS ?? DEFAULT_STATE_STORE_GRPC_ADDRESS;
  checkHostPort('NODED_STATE_STORE_GRPC_ADDRESS', stateStoreGrpcAddress, problems);
  return { executorGrpcAddress, natsUrls, executorWaitMs, stateStoreDb, stateStoreGrpcAddress };
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
  overrides: { logLevel?: string; logFile?: string } = {},
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
  const cluster = clusterSettingsOf(env, problems, home);
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
    logFile: overrides.logFile ?? `${paths.logs}/${name}.log`,
  };
}
