// noded service <name> [--log-level] [--log-file] [--log-format]: runs one service of the cluster
// (docs/cluster.md) on a home, configured by its config.toml/app.toml, NODED_<KEY> overrides and
// the cluster's NODED_* variables. What containers run; `make cluster` runs them all.
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { homePaths, LOG_LEVELS, loadGenesis } from '@noded/config';
import type { ServiceModuleFactory } from '@noded/service-shared/src/bootstrap.js';
import { SERVICE_NAMES, type ServiceName } from '@noded/service-shared/src/settings.js';
import type { Command } from 'commander';
import { addHomeOption, CliError, type HomeOpts, homeOf, requireHome, say } from '../util.js';

interface ServiceOpts extends HomeOpts {
  logLevel?: string;
  logFile?: string;
  logFormat?: string;
}

/** Each service's module factory, loaded only when that service runs (Nest stays out of `noded start`). */
const MODULES: Record<ServiceName, () => Promise<ServiceModuleFactory>> = {
  executor: async () => (await import('@noded/service-executor/src/executor.module.js')).executorModule,
  consensus: async () => (await import('@noded/service-consensus/src/consensus.module.js')).consensusModule,
  'state-store': async () =>
    (await import('@noded/service-state-store/src/state-store.module.js')).stateStoreModule,
  'rpc-edge': async () => (await import('@noded/service-rpc-edge/src/rpc-edge.module.js')).rpcEdgeModule,
  metrics: async () => (await import('@noded/service-metrics/src/metrics.module.js')).metricsModule,
  'p2p-gateway': async () =>
    (await import('@noded/service-p2p-gateway/src/p2p-gateway.module.js')).p2pGatewayModule,
};

export function registerService(program: Command): void {
  addHomeOption(
    program
      .command('service')
      .description(`run one service of the cluster: ${SERVICE_NAMES.join(' | ')} (docs/cluster.md)`)
      .argument('<name>', SERVICE_NAMES.join(' | '))
      .option('--log-level <level>', `${LOG_LEVELS.join(' | ')} (default: log_level in config.toml)`)
      .option(
        '--log-file <path>',
        'JSON log file (default: <home>/logs/<name>.log); "-": stdout only (a read-only home)',
      )
      .option('--log-format <format>', 'console: plain (readable lines on a terminal) | json'),
  ).action((name: string, opts: ServiceOpts) => runService(name, opts));

  addHomeOption(
    program
      .command('nats-auth')
      .description(
        "write nats-server's authorization block for the home's chain: a user per service (executor, state-store, rpc-edge) with its subject permissions, and each one's password file (docs/cluster.md)",
      )
      .option('--out <dir>', 'where to write auth.conf and <service>.password (default: <home>/data/nats)'),
  ).action((opts: HomeOpts & { out?: string }) => natsAuth(opts));
}

/**
 * Writes `<out>/<service>.password` for each NATS user (a new random password, or the one already
 * there: rerunning keeps logins valid; delete a file to rotate it) and `<out>/auth.conf` with every
 * user's permissions, both readable by their owner only.
 */
async function natsAuth(opts: HomeOpts & { out?: string }): Promise<void> {
  if (opts.out === '') throw new CliError('nats-auth: bad arguments', ['--out: must not be empty']);
  const home = homeOf(opts);
  requireHome(home);
  const g = loadGenesis(homePaths(home).genesis);
  if (!g.genesis)
    throw new CliError(
      'nats-auth: the home has no valid genesis.json',
      g.problems.map((p) => `${p.file}: ${p.message}`),
    );
  const { NATS_USERS, natsAuthConfig } = await import('@noded/service-shared/src/nats.js');
  const out = opts.out !== undefined ? resolve(opts.out) : join(homePaths(home).data, 'nats');
  mkdirSync(out, { recursive: true });
  const passwords = {} as Record<(typeof NATS_USERS)[number], string>;
  for (const user of NATS_USERS) {
    const file = join(out, `${user}.password`);
    const kept = existsSync(file) ? readFileSync(file, 'utf8').replace(/\r?\n$/, '') : '';
    if (kept !== '' && !/^[A-Za-z0-9_-]+$/.test(kept))
      throw new CliError(
        `nats-auth: ${file} holds a password with characters other than A-Z a-z 0-9 _ -; delete it to get a new one`,
      );
    passwords[user] = kept !== '' ? kept : randomBytes(24).toString('base64url');
    if (kept === '') writeFileSync(file, `${passwords[user]}\n`, { mode: 0o600 });
    chmodSync(file, 0o600);
  }
  const conf = join(out, 'auth.conf');
  writeFileSync(conf, natsAuthConfig(g.genesis.runtime.chainId, passwords), { mode: 0o600 });
  chmodSync(conf, 0o600);
  say(`${conf}: users ${NATS_USERS.join(', ')} for chain ${g.genesis.runtime.chainId}`);
  for (const user of NATS_USERS)
    say(`  ${user}: NODED_NATS_USER=${user} NODED_NATS_PASSWORD_FILE=${join(out, `${user}.password`)}`);
}

async function runService(name: string, opts: ServiceOpts): Promise<void> {
  const { runServiceProcess, serviceOptionProblems, ServiceRunError } = await import(
    '@noded/service-shared/src/run.js'
  );
  const errors: string[] = [];
  if (!(SERVICE_NAMES as readonly string[]).includes(name)) {
    errors.push(`<name>: must be one of ${SERVICE_NAMES.join(', ')}, got ${JSON.stringify(name)}`);
  }
  errors.push(...serviceOptionProblems(opts));
  if (errors.length > 0) throw new CliError('service: bad arguments', errors);
  const home = homeOf(opts);
  requireHome(home);
  const service = name as ServiceName;
  try {
    await runServiceProcess(service, await MODULES[service](), { ...opts, home }, say);
  } catch (err) {
    if (err instanceof ServiceRunError) throw new CliError(err.message, err.problems);
    throw err;
  }
}
