// The home directory (CometBFT layout) and its lock: data/noded.pid names the process that runs a
// node on this home, so a second node or a reset refuses to run beside it; data/services/ names the
// cluster services running on it (several may share a home), so a reset refuses beside them too.
import { closeSync, mkdirSync, openSync, readdirSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';

export interface HomePaths {
  home: string;
  config: string;
  data: string;
  logs: string;
  configToml: string;
  appToml: string;
  clientToml: string;
  genesis: string;
  nodeKey: string;
  /** config/addrbook.json: peer exchange's address book (CometBFT's file). */
  addrBook: string;
  privValidatorKey: string;
  /** data/services/: one `<service>.<pid>` file per cluster service process running on this home. */
  servicesDir: string;
  /** Optional operator override of the network presets (see docs/networks.md). */
  networks: string;
  /** chain-local only: the test mnemonic whose accounts `noded start` unlocks (TEST ONLY keys). */
  devAccounts: string;
  privValidatorState: string;
  pidFile: string;
  csWal: string;
  blockstoreDb: string;
  stateDb: string;
  applicationDb: string;
  txIndexDb: string;
  /** The light client's verified headers (mode = "light"). */
  lightDb: string;
  /** A dev chain revert in progress (evm_revert; finished at the next start if the process stopped). */
  rollbackIntent: string;
  /** The dev chain's genesis point, for anvil_reset (chain-local). */
  devGenesis: string;
  /** Default log file; `noded start --log-file` overrides it. */
  logFile: string;
}

/** $NODED_HOME, else ~/.noded. */
export function defaultHome(env: NodeJS.ProcessEnv = process.env): string {
  return resolve(env.NODED_HOME && env.NODED_HOME !== '' ? env.NODED_HOME : join(homedir(), '.noded'));
}

export function homePaths(home: string): HomePaths {
  const h = resolve(home);
  const config = join(h, 'config');
  const data = join(h, 'data');
  const logs = join(h, 'logs');
  return {
    home: h,
    config,
    data,
    logs,
    configToml: join(config, 'config.toml'),
    appToml: join(config, 'app.toml'),
    clientToml: join(config, 'client.toml'),
    genesis: join(config, 'genesis.json'),
    nodeKey: join(config, 'node_key.json'),
    addrBook: join(config, 'addrbook.json'),
    privValidatorKey: join(config, 'priv_validator_key.json'),
    networks: join(config, 'networks.json'),
    devAccounts: join(config, 'dev_accounts.json'),
    privValidatorState: join(data, 'priv_validator_state.json'),
    pidFile: join(data, 'noded.pid'),
    servicesDir: join(data, 'services'),
    csWal: join(data, 'cs.wal'),
    blockstoreDb: join(data, 'blockstore.db'),
    stateDb: join(data, 'state.db'),
    applicationDb: join(data, 'application.db'),
    txIndexDb: join(data, 'tx_index.db'),
    lightDb: join(data, 'light.db'),
    rollbackIntent: join(data, 'rollback.json'),
    devGenesis: join(data, 'dev-genesis.json'),
    logFile: join(logs, 'noded.log'),
  };
}

export class HomeLockedError extends Error {
  readonly code = 'HOME_LOCKED';
  constructor(
    readonly pidFile: string,
    readonly pid: number,
  ) {
    super(`${pidFile}: a node (pid ${pid}) is running on this home; stop it first`);
    this.name = 'HomeLockedError';
  }
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function readPid(file: string): number | undefined {
  try {
    const n = Number.parseInt(readFileSync(file, 'utf8').trim(), 10);
    return Number.isSafeInteger(n) && n > 0 ? n : undefined;
  } catch {
    return undefined;
  }
}

/** The pid of the live process holding the home, if any (a stale pid file does not count). */
export function homeLockHolder(home: string): number | undefined {
  const pid = readPid(homePaths(home).pidFile);
  return pid !== undefined && processAlive(pid) ? pid : undefined;
}

export function isHomeLocked(home: string): boolean {
  return homeLockHolder(home) !== undefined;
}

/**
 * Takes the home for this process by creating data/noded.pid exclusively. A pid file left by a dead
 * process is replaced; one held by a live process (this one included) throws HomeLockedError.
 */
export function acquireHomeLock(home: string): void {
  const { data, pidFile } = homePaths(home);
  mkdirSync(data, { recursive: true });
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(pidFile, 'wx', 0o644);
      try {
        writeSync(fd, `${process.pid}\n`);
      } finally {
        closeSync(fd);
      }
      return;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const pid = readPid(pidFile);
      if (pid !== undefined && processAlive(pid)) throw new HomeLockedError(pidFile, pid);
      unlinkSync(pidFile); // stale: its process is gone
    }
  }
  throw new HomeLockedError(pidFile, readPid(pidFile) ?? 0);
}

/** Removes data/noded.pid if this process holds it; leaves another process's lock alone. */
export function releaseHomeLock(home: string): void {
  const { pidFile } = homePaths(home);
  if (readPid(pidFile) === process.pid) {
    try {
      unlinkSync(pidFile);
    } catch {
      // already gone
    }
  }
}

/** A cluster service process that runs on a home (`noded service <name>`). */
export interface HomeService {
  service: string;
  pid: number;
}

/**
 * Marks the home in use by this process as `service`: writes data/services/<service>.<pid>. Unlike
 * data/noded.pid it is not exclusive (two rpc-edges or state-stores may share a home). Returns the
 * release, which removes the file; a file left by a killed process is ignored (its pid is not alive).
 */
export function markHomeService(home: string, service: string): () => void {
  const { servicesDir } = homePaths(home);
  mkdirSync(servicesDir, { recursive: true });
  const file = join(servicesDir, `${service}.${process.pid}`);
  const fd = openSync(file, 'w', 0o644);
  try {
    writeSync(fd, `${process.pid}\n`);
  } finally {
    closeSync(fd);
  }
  return () => {
    try {
      unlinkSync(file);
    } catch {
      // already gone (a reset of data/ cannot happen while it runs, but the file may be removed by hand)
    }
  };
}

/** The live cluster service processes marked on the home (markHomeService), by service then pid. */
export function homeServices(home: string): HomeService[] {
  let names: string[];
  try {
    names = readdirSync(homePaths(home).servicesDir);
  } catch {
    return [];
  }
  const found: HomeService[] = [];
  for (const name of names) {
    const m = /^([a-z0-9-]+)\.(\d+)$/.exec(name);
    if (!m) continue;
    const pid = Number(m[2]);
    if (pid > 0 && processAlive(pid)) found.push({ service: m[1]!, pid });
  }
  return found.sort((a, b) => a.service.localeCompare(b.service) || a.pid - b.pid);
}

/** "consensus pid 12, executor pid 34": the services of homeServices() for a message. */
export function describeServices(services: readonly HomeService[]): string {
  return services.map((s) => `${s.service} pid ${s.pid}`).join(', ');
}
