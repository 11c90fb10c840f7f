// The home directory (CometBFT layout) and its lock: data/noded.pid names the process that runs a
// node on this home, so a second node or a reset refuses to run beside it; data/services/ names the
// cluster services running on it (several may share a home), so a reset refuses beside them too;
// each such mark records its host, boot and process start and is kept fresh by a heartbeat, so that
// a home shared by containers or machines judges another's mark correctly (markHomeService).
import { randomBytes } from 'node:crypto';
import {
  closeSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  statSync,
  unlinkSync,
  utimesSync,
  writeSync,
} from 'node:fs';
import { homedir, hostname } from 'node:os';
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
  /** The host (container) it runs on, when not this one: its pid means nothing here. */
  host?: string;
}

/**
 * What a mark records (JSON in data/services/<service>.<pid>.<nonce>): enough to judge from another
 * process, container or machine sharing the home whether its process still runs. A pid alone is
 * not: pids are per container (every container's first process is pid 1), so a mark left by a
 * killed container looks alive to any other.
 */
export interface HomeMark {
  service: string;
  pid: number;
  /** os.hostname(): a container's own name (Docker: the container ID; Kubernetes: the pod name). */
  host: string;
  /** /proc/sys/kernel/random/boot_id: the kernel that runs it (shared by containers on one machine). */
  bootId: string;
  /** Field 22 of /proc/<pid>/stat (clock ticks after boot): tells a reused pid from the process. */
  startTicks: string;
}

/** A running service rewrites its mark's mtime this often (its heartbeat). */
export const HOME_MARK_HEARTBEAT_MS = 5_000;
/** A mark of another host whose heartbeat is older than this is stale (its process is gone). */
export const HOME_MARK_STALE_MS = 30_000;

function readOr(file: string, fallback: string): string {
  try {
    return readFileSync(file, 'utf8').trim();
  } catch {
    return fallback;
  }
}

/** This kernel's boot ID ("" where /proc does not have it). */
export function bootId(): string {
  return readOr('/proc/sys/kernel/random/boot_id', '');
}

/** Field 22 (starttime) of /proc/<pid>/stat, or "" when unreadable (no /proc, or no such process). */
export function processStartTicks(pid: number): string {
  const stat = readOr(`/proc/${pid}/stat`, '');
  const close = stat.lastIndexOf(')');
  if (close < 0) return '';
  // After "pid (comm)" the fields are numbered from 3 (state): starttime, field 22, is the 20th.
  return stat.slice(close + 2).split(' ')[19] ?? '';
}

/** The mark's process is alive, judged from this process (see HomeMark). */
export function homeMarkAlive(mark: HomeMark, mtimeMs: number, nowMs = Date.now()): boolean {
  const here = mark.host === hostname() && mark.bootId === bootId();
  if (here) {
    if (!processAlive(mark.pid)) return false;
    // The pid runs; it is the marked process only if it started at the same tick (not a reuse).
    const ticks = processStartTicks(mark.pid);
    return ticks === '' || mark.startTicks === '' || ticks === mark.startTicks;
  }
  // Another container or machine: its pids are not ours to check; its heartbeat tells.
  return nowMs - mtimeMs < HOME_MARK_STALE_MS;
}

/** The result of markHomeService: the release, and the mark's file (null: the home is read-only). */
export interface HomeMarkHandle {
  file: string | null;
  release(): void;
}

/**
 * Marks the home in use by this process as `service`: writes data/services/<service>.<pid>.<nonce>
 * (a HomeMark) and rewrites its mtime every HOME_MARK_HEARTBEAT_MS. Unlike data/noded.pid it is not
 * exclusive (two rpc-edges or state-stores may share a home). The release stops the heartbeat and
 * removes the file; a mark left by a killed process is judged stale (homeMarkAlive). A home mounted
 * read-only (an rpc-edge's or the metrics service's container) cannot be marked: `file` is null.
 */
export function markHomeService(home: string, service: string): HomeMarkHandle {
  const { servicesDir } = homePaths(home);
  const file = join(servicesDir, `${service}.${process.pid}.${randomBytes(4).toString('hex')}`);
  const mark: HomeMark = {
    service,
    pid: process.pid,
    host: hostname(),
    bootId: bootId(),
    startTicks: processStartTicks(process.pid),
  };
  try {
    mkdirSync(servicesDir, { recursive: true });
    const fd = openSync(file, 'w', 0o644);
    try {
      writeSync(fd, `${JSON.stringify(mark)}\n`);
    } finally {
      closeSync(fd);
    }
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EROFS' || code === 'EACCES' || code === 'EPERM') return { file: null, release: () => {} };
    throw err;
  }
  const beat = setInterval(() => {
    const now = new Date();
    try {
      utimesSync(file, now, now);
    } catch {
      // removed by hand: nothing to keep fresh
    }
  }, HOME_MARK_HEARTBEAT_MS);
  beat.unref();
  return {
    file,
    release: () => {
      clearInterval(beat);
      try {
        unlinkSync(file);
      } catch {
        // already gone (a reset of data/ cannot happen while it runs, but the file may be removed by hand)
      }
    },
  };
}

/** A mark file's name: <service>.<pid>, and since marks record their host, .<nonce> after it. */
const MARK_NAME = /^([a-z0-9-]+)\.(\d+)(?:\.[0-9a-f]{8})?$/;

function parseMark(text: string): HomeMark | undefined {
  try {
    const m = JSON.parse(text) as Partial<HomeMark>;
    if (
      typeof m.service === 'string' &&
      typeof m.pid === 'number' &&
      typeof m.host === 'string' &&
      typeof m.bootId === 'string' &&
      typeof m.startTicks === 'string'
    )
      return m as HomeMark;
  } catch {
    // an older mark: the pid alone
  }
  return undefined;
}

/** The live cluster service processes marked on the home (markHomeService), by service then pid. */
export function homeServices(home: string, nowMs = Date.now()): HomeService[] {
  const dir = homePaths(home).servicesDir;
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  const found: HomeService[] = [];
  for (const name of names) {
    const m = MARK_NAME.exec(name);
    if (!m) continue;
    const pid = Number(m[2]);
    if (!(pid > 0)) continue;
    let text: string;
    let mtimeMs: number;
    try {
      text = readFileSync(join(dir, name), 'utf8');
      mtimeMs = statSync(join(dir, name)).mtimeMs;
    } catch {
      continue; // removed meanwhile: its service stopped
    }
    const mark = parseMark(text);
    if (mark === undefined) {
      // A mark written before marks recorded their host: judged by its pid, as then.
      if (processAlive(pid)) found.push({ service: m[1]!, pid });
      continue;
    }
    if (!homeMarkAlive(mark, mtimeMs, nowMs)) continue;
    const here = mark.host === hostname() && mark.bootId === bootId();
    found.push({ service: mark.service, pid: mark.pid, ...(here ? {} : { host: mark.host }) });
  }
  return found.sort(
    (a, b) =>
      a.service.localeCompare(b.service) || (a.host ?? '').localeCompare(b.host ?? '') || a.pid - b.pid,
  );
}

/** "consensus pid 12, executor pid 34": the services of homeServices() for a message. */
export function describeServices(services: readonly HomeService[]): string {
  return services
    .map((s) => `${s.service} pid ${s.pid}${s.host === undefined ? '' : ` on host ${s.host}`}`)
    .join(', ');
}
