// Running one service as a process, shared by `noded service <name>` (the CLI) and each service's
// own entry point (services/<name>/src/main.ts, `noded-<name>`: what a per-service image runs, with
// no CLI in it). Both take the same options and do the same thing: check them, load the settings,
// mark the home, start the Nest module, stop on SIGINT/SIGTERM.
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { defaultHome, homePaths, LOG_LEVELS, markHomeService } from '@noded/config';
import { bootstrapService, type ServiceModuleFactory } from './bootstrap.js';
import { loadServiceSettings, type ServiceName, ServiceSettingsError } from './settings.js';
import { stopOnSignals } from './signals.js';
import { NODED_VERSION } from './version.js';

/** The options of a service process, as given on its command line (undefined: not given). */
export interface ServiceRunOptions {
  /** The node home; default $NODED_HOME or ~/.noded. */
  home?: string;
  logLevel?: string;
  /** A JSON log file; "-" logs to stdout only (a read-only home). Default <home>/logs/<name>.log. */
  logFile?: string;
  /** "plain" (readable lines on a terminal) or "json". */
  logFormat?: string;
}

/** A service that cannot start or stopped with an error: the message, then one line per problem. */
export class ServiceRunError extends Error {
  readonly code = 'SERVICE_RUN';
  constructor(
    message: string,
    readonly problems: string[] = [],
  ) {
    super(message);
    this.name = 'ServiceRunError';
  }
}

/** The option problems of `opts`, each naming the option and the rule (empty: none). */
export function serviceOptionProblems(opts: ServiceRunOptions): string[] {
  const out: string[] = [];
  if (opts.logLevel !== undefined && !(LOG_LEVELS as readonly string[]).includes(opts.logLevel)) {
    out.push(`--log-level: must be one of ${LOG_LEVELS.join(', ')}, got ${JSON.stringify(opts.logLevel)}`);
  }
  if (opts.logFormat !== undefined && opts.logFormat !== 'plain' && opts.logFormat !== 'json') {
    out.push(`--log-format: must be one of plain, json, got ${JSON.stringify(opts.logFormat)}`);
  }
  if (opts.logFile === '') out.push('--log-file: must not be empty');
  if (opts.home === '') out.push('--home: must not be empty');
  return out;
}

/**
 * Runs `service` until SIGINT/SIGTERM (then exits 0, or 1 when stopping failed) or a fatal error
 * (rejects with a ServiceRunError). `say` prints the operator's lines (stdout).
 */
export async function runServiceProcess(
  service: ServiceName,
  moduleOf: ServiceModuleFactory,
  opts: ServiceRunOptions,
  say: (line: string) => void,
): Promise<void> {
  const problems = serviceOptionProblems(opts);
  if (problems.length > 0) throw new ServiceRunError('bad arguments', problems);
  const home = opts.home !== undefined ? resolve(opts.home) : defaultHome();
  if (!existsSync(resolve(home, 'config'))) {
    throw new ServiceRunError(
      `no node home at ${home} (no config/ directory); run "noded init" first or pass --home`,
    );
  }
  let settings: ReturnType<typeof loadServiceSettings>;
  try {
    settings = loadServiceSettings(service, home, process.env, {
      logLevel: opts.logLevel,
      logFile: opts.logFile === undefined ? undefined : opts.logFile === '-' ? null : resolve(opts.logFile),
    });
  } catch (err) {
    if (err instanceof ServiceSettingsError) throw new ServiceRunError(err.message, err.problems);
    throw err;
  }
  // data/services/<name>.<pid>.<nonce>: `unsafe-reset-all` and `noded start` refuse while it is there.
  const mark = markHomeService(home, service);
  process.on('exit', mark.release);
  if (mark.file === null)
    say(
      `${homePaths(home).servicesDir}: the home is read-only here; this ${service} is not marked on it (it writes nothing there)`,
    );
  const seeLog = settings.logFile === null ? 'see its output above' : `see ${settings.logFile}`;
  let running: Awaited<ReturnType<typeof bootstrapService>>;
  try {
    running = await bootstrapService(settings, moduleOf, {
      logFormat: opts.logFormat as 'plain' | 'json' | undefined,
    });
  } catch (err) {
    throw new ServiceRunError(`service ${service} failed to start: ${(err as Error).message} (${seeLog})`);
  }
  say(`noded service ${service} is running (pid ${process.pid}); Ctrl-C or SIGTERM stops it`);

  stopOnSignals(` service ${service}`, () => running.stop());
  try {
    await running.done;
  } catch (err) {
    throw new ServiceRunError(
      `service ${service} stopped with an error: ${(err as Error).message} (${seeLog})`,
    );
  }
}

const USAGE = (bin: string, service: ServiceName) =>
  [
    `Usage: ${bin} [options]`,
    '',
    `Runs the ${service} service of the cluster (docs/cluster.md), as \`noded service ${service}\` does.`,
    '',
    'Options:',
    '  --home <dir>           node home directory (default: $NODED_HOME or ~/.noded)',
    `  --log-level <level>    ${LOG_LEVELS.join(' | ')} (default: log_level in config.toml)`,
    `  --log-file <path>      JSON log file (default: <home>/logs/${service}.log); "-": stdout only`,
    '  --log-format <format>  console: plain (readable lines on a terminal) | json',
    '  -v, --version          print the version',
    '  -h, --help             print this help',
    '',
  ].join('\n');

/**
 * The whole of a service's own entry point (`noded-<name>`): parses `argv` (the arguments after the
 * script), runs the service, and sets the exit code; a bad option or a failed start prints
 * `noded-<name>: <message>` and one line per problem on stderr and exits 1.
 */
export async function serviceMain(
  service: ServiceName,
  moduleOf: ServiceModuleFactory,
  argv: string[] = process.argv.slice(2),
): Promise<void> {
  const bin = `noded-${service}`;
  const fail = (message: string, problems: string[] = []) => {
    process.stderr.write(`${bin}: ${message}\n${problems.map((p) => `  ${p}\n`).join('')}`);
    process.exitCode = 1;
  };
  let values: ServiceRunOptions & { help?: boolean; version?: boolean };
  try {
    const parsed = parseArgs({
      args: argv,
      strict: true,
      allowPositionals: false,
      options: {
        home: { type: 'string' },
        'log-level': { type: 'string' },
        'log-file': { type: 'string' },
        'log-format': { type: 'string' },
        help: { type: 'boolean', short: 'h' },
        version: { type: 'boolean', short: 'v' },
      },
    }).values;
    values = {
      home: parsed.home,
      logLevel: parsed['log-level'],
      logFile: parsed['log-file'],
      logFormat: parsed['log-format'],
      help: parsed.help,
      version: parsed.version,
    };
  } catch (err) {
    fail('bad arguments', [(err as Error).message, `(${bin} --help for usage)`]);
    return;
  }
  if (values.help) {
    process.stdout.write(USAGE(bin, service));
    return;
  }
  if (values.version) {
    process.stdout.write(`${NODED_VERSION}\n`);
    return;
  }
  try {
    await runServiceProcess(service, moduleOf, values, (line) => process.stdout.write(`${line}\n`));
  } catch (err) {
    if (err instanceof ServiceRunError) fail(err.message, err.problems);
    else fail(`unexpected error: ${(err as Error).stack ?? String(err)}`);
  }
}
