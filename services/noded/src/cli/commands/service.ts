// noded service <name> [--log-level] [--log-file] [--log-format]: runs one service of the cluster
// (docs/cluster.md) on a home, configured by its config.toml/app.toml, NODED_<KEY> overrides and
// the cluster's NODED_* variables. What containers run; `make cluster` runs them all.
import { resolve } from 'node:path';
import type { Command } from 'commander';
import { LOG_LEVELS } from '../../../../../libs/config/index.js';
import type { ServiceModuleFactory } from '../../../../shared/src/bootstrap.js';
import { SERVICE_NAMES, type ServiceName } from '../../../../shared/src/settings.js';
import { addHomeOption, CliError, type HomeOpts, homeOf, requireHome, say } from '../util.js';

interface ServiceOpts extends HomeOpts {
  logLevel?: string;
  logFile?: string;
  logFormat?: string;
}

/** Each service's module factory, loaded only when that service runs (Nest stays out of `noded start`). */
const MODULES: Record<ServiceName, () => Promise<ServiceModuleFactory>> = {
  executor: async () => (await import('../../../../executor/src/executor.module.js')).executorModule,
  consensus: async () => (await import('../../../../consensus/src/consensus.module.js')).consensusModule,
  'state-store': async () =>
    (await import('../../../../state-store/src/state-store.module.js')).stateStoreModule,
  'rpc-edge': async () => (await import('../../../../rpc-edge/src/rpc-edge.module.js')).rpcEdgeModule,
  metrics: async () => (await import('../../../../metrics/src/metrics.module.js')).metricsModule,
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
}

async function runService(name: string, opts: ServiceOpts): Promise<void> {
  const errors: string[] = [];
  if (!(SERVICE_NAMES as readonly string[]).includes(name)) {
    errors.push(
      `<name>: must be one of ${SERVICE_NAMES.join(', ')}, got ${JSON.stringify(name)} (p2p-gateway is not built yet)`,
    );
  }
  if (opts.logLevel !== undefined && !(LOG_LEVELS as readonly string[]).includes(opts.logLevel)) {
    errors.push(`--log-level: must be one of ${LOG_LEVELS.join(', ')}, got ${JSON.stringify(opts.logLevel)}`);
  }
  if (opts.logFormat !== undefined && opts.logFormat !== 'plain' && opts.logFormat !== 'json') {
    errors.push(`--log-format: must be one of plain, json, got ${JSON.stringify(opts.logFormat)}`);
  }
  if (opts.logFile === '') errors.push('--log-file: must not be empty');
  if (errors.length > 0) throw new CliError('service: bad arguments', errors);
  const home = homeOf(opts);
  requireHome(home);
  const service = name as ServiceName;

  const { loadServiceSettings, ServiceSettingsError } = await import('../../../../shared/src/settings.js');
  const { bootstrapService } = await import('../../../../shared/src/bootstrap.js');
  let settings: ReturnType<typeof loadServiceSettings>;
  try {
    settings = loadServiceSettings(service, home, process.env, {
      logLevel: opts.logLevel,
      logFile: opts.logFile === undefined ? undefined : opts.logFile === '-' ? null : resolve(opts.logFile),
    });
  } catch (err) {
    if (err instanceof ServiceSettingsError) throw new CliError(err.message, err.problems);
    throw err;
  }
  const seeLog = settings.logFile === null ? 'see its output above' : `see ${settings.logFile}`;
  const moduleOf = await MODULES[service]();
  let running: Awaited<ReturnType<typeof bootstrapService>>;
  try {
    running = await bootstrapService(settings, moduleOf, {
      logFormat: opts.logFormat as 'plain' | 'json' | undefined,
    });
  } catch (err) {
    throw new CliError(`service ${service} failed to start: ${(err as Error).message} (${seeLog})`);
  }
  say(`noded service ${service} is running (pid ${process.pid}); Ctrl-C or SIGTERM stops it`);

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) {
      console.error(`noded: ${signal} again, exiting without waiting`);
      process.exit(1);
    }
    stopping = true;
    console.error(`noded: ${signal} received, stopping service ${service}`);
    let code = 0;
    try {
      await running.stop();
    } catch (err) {
      console.error(`noded: stopping failed: ${(err as Error).message}`);
      code = 1;
    }
    process.exit(code);
  };
  process.on('SIGINT', () => void shutdown('SIGINT'));
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  try {
    await running.done;
  } catch (err) {
    throw new CliError(`service ${service} stopped with an error: ${(err as Error).message} (${seeLog})`);
  }
}
