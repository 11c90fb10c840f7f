// noded start [--mode] [--log-level] [--log-file] [--dry-run]: checks everything, then either prints
// what would run (--dry-run) or hands over to the node runtime (services/noded/src/node.ts).
import { mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import {
  acquireHomeLock,
  type ChainId,
  describeServices,
  EVM_CHAIN_IDS,
  formatDuration,
  HomeLockedError,
  homePaths,
  homeServices,
  LOG_LEVELS,
  type LoadedGenesis,
  type LoadedNodeConfig,
  NODE_MODES,
  type NodeMode,
  releaseHomeLock,
} from '@noded/config';
import { stopOnSignals } from '@noded/service-shared/src/signals.js';
import type { Command } from 'commander';
import { checkStart, type StartCheck } from '../checks.js';
import {
  addHomeOption,
  CliError,
  type HomeOpts,
  homeOf,
  problemsError,
  requireHome,
  say,
  table,
} from '../util.js';

interface StartOpts extends HomeOpts {
  mode?: string;
  logLevel?: string;
  logFormat?: string;
  logFile?: string;
  dryRun?: boolean;
}

/** What services/noded/src/node.ts exports; the CLI holds the home lock while it runs. */
export interface RunNodeOptions {
  home: string;
  mode: 'full' | 'archive';
  logLevel: string;
  /** Console format: readable lines ("plain", on a terminal only) or JSON lines. */
  logFormat: 'plain' | 'json';
  logFile: string;
  loaded: LoadedNodeConfig;
  genesis: LoadedGenesis;
}
export interface RunningNode {
  stop(): Promise<void>;
  done: Promise<void>;
}
/** What start hands to a runtime: node.ts takes full and archive, light-node.ts light. */
export type StartOptions = Omit<RunNodeOptions, 'mode'> & { mode: NodeMode };
type RunNode = (opts: StartOptions) => Promise<RunningNode>;

export function registerStart(program: Command): void {
  addHomeOption(
    program
      .command('start')
      .description('check the home and run the node (--dry-run: check and print what would run)')
      .option('--mode <mode>', `${NODE_MODES.join(' | ')} (default: "mode" in app.toml, set by init)`)
      .option('--log-level <level>', `${LOG_LEVELS.join(' | ')} (default: log_level in config.toml)`)
      .option('--log-file <path>', 'JSON log file (default: <home>/logs/noded.log)')
      .option(
        '--log-format <format>',
        'console: plain (readable lines on a terminal, JSON lines otherwise) | json (default: log_format in config.toml)',
      )
      .option(
        '--dry-run',
        'validate configs, genesis, keys, data dir and listen addresses, print the plan, exit',
      ),
  ).action((opts: StartOpts) => runStart(opts));
}

/** What a light node trusts, for the plan. */
function lightTrust(c: StartCheck): string {
  const l = c.loaded.app.light;
  const root =
    l.trustHeight > 0
      ? `header ${l.trustHash} at height ${l.trustHeight}`
      : `the first block, signed by the ${c.genesis!.runtime.validators.length} genesis validators`;
  return `trusts ${root}; trusting period ${formatDuration(l.trustingPeriodMs)}`;
}

function summary(home: string, mode: string, logFile: string, logLevel: string, c: StartCheck): string[] {
  const { config } = c.loaded;
  const g = c.genesis!;
  const chainId = g.json.chain_id as ChainId;
  const inSet = g.runtime.validators.find(
    (v) => Buffer.from(v.address).toString('hex').toUpperCase() === c.validator?.address,
  );
  const lines = table([
    ['home', home],
    ['chain id', `${chainId} (EVM chain id ${EVM_CHAIN_IDS[chainId]})`],
    ['mode', mode],
    ['moniker', config.moniker],
    ['node id', c.nodeId ?? ''],
    mode === 'light'
      ? ['light client', lightTrust(c)]
      : [
          'validator',
          `${c.validator?.address} ${inSet ? `(power ${inSet.votingPower} of ${g.runtime.validators.length} genesis validators)` : '(not in the genesis validator set)'}`,
        ],
    ['log file', `${logFile} (level ${logLevel})`],
  ]);
  if (c.loaded.overrides.length > 0) {
    lines.push('  set by environment variables:');
    lines.push(
      ...table(
        c.loaded.overrides.map((o) => [o.variable, `${o.file} ${o.key}`]),
        '    ',
      ),
    );
  }
  lines.push('  ports:');
  lines.push(
    ...table(
      c.listeners.map((l) => [l.name, l.enabled ? `${l.address.raw}  (${l.file} ${l.key})` : '(disabled)']),
      '    ',
    ),
  );
  const peers = config.p2p.persistentPeers.map((p) => `${p.nodeId}@${p.host}:${p.port}`);
  const seeds = config.p2p.seeds.map((p) => `${p.nodeId}@${p.host}:${p.port}`);
  lines.push('  peers:');
  lines.push(
    ...table(
      [
        ['persistent_peers', peers.length > 0 ? peers.join(', ') : '(none)'],
        ['seeds', seeds.length > 0 ? seeds.join(', ') : '(none)'],
        ['external_address', config.p2p.externalAddress || '(none)'],
      ],
      '    ',
    ),
  );
  return lines;
}

async function runStart(opts: StartOpts): Promise<void> {
  const home = homeOf(opts);
  const errors: string[] = [];
  if (opts.mode !== undefined && !(NODE_MODES as readonly string[]).includes(opts.mode)) {
    errors.push(`--mode: must be one of ${NODE_MODES.join(', ')}, got ${JSON.stringify(opts.mode)}`);
  }
  if (opts.logLevel !== undefined && !(LOG_LEVELS as readonly string[]).includes(opts.logLevel)) {
    errors.push(`--log-level: must be one of ${LOG_LEVELS.join(', ')}, got ${JSON.stringify(opts.logLevel)}`);
  }
  if (opts.logFormat !== undefined && opts.logFormat !== 'plain' && opts.logFormat !== 'json') {
    errors.push(`--log-format: must be one of plain, json, got ${JSON.stringify(opts.logFormat)}`);
  }
  if (opts.logFile === '') errors.push('--log-file: must not be empty');
  if (errors.length > 0) throw new CliError('start: bad arguments', errors);
  requireHome(home);

  const logFile = opts.logFile !== undefined ? resolve(opts.logFile) : homePaths(home).logFile;
  const check = await checkStart(home, logFile, opts.mode);
  const homeMode = check.loaded.app.mode;
  const mode = opts.mode ?? homeMode;
  if (!check.problems.some((p) => p.file === 'app.toml' && p.key === 'mode'))
    modeMismatch(mode, homeMode, check);
  if (check.problems.length > 0)
    throw problemsError(opts.dryRun ? 'start --dry-run' : 'start', check.problems);
  const logLevel = opts.logLevel ?? check.loaded.config.logLevel;

  if (opts.dryRun) {
    say('start --dry-run: every check passed; the node would run with:');
    for (const l of summary(home, mode, logFile, logLevel, check)) say(l);
    return;
  }
  await runNodeProcess(
    {
      home,
      mode: mode as NodeMode,
      logLevel,
      logFormat: (opts.logFormat as 'plain' | 'json' | undefined) ?? check.loaded.config.logFormat,
      logFile,
      loaded: check.loaded,
      genesis: check.genesis!,
    },
    summary(home, mode, logFile, logLevel, check),
  );
}

/**
 * A light home holds only verified headers (data/light.db), a full or archive home a block store and
 * EVM state: neither runs as the other. Between full and archive --mode switches for one run.
 */
function modeMismatch(mode: string, homeMode: string, check: StartCheck): void {
  if (mode === homeMode || (mode !== 'light' && homeMode !== 'light')) return;
  const chainId = check.genesis?.json.chain_id ?? '<chain id>';
  if (mode === 'light') {
    throw new CliError(
      `--mode light: this home was initialised as a ${homeMode} node (app.toml mode = "${homeMode}"); a light node keeps only verified headers (data/light.db) and does not run on a ${homeMode} node's home`,
      [
        `to run a light node, make a light home: noded init light --chain-id ${chainId} --home <another directory>`,
      ],
    );
  }
  throw new CliError(
    `--mode ${mode}: this home was initialised as a light node (app.toml mode = "light"); it holds no block store or EVM state to run as ${mode === 'archive' ? 'an' : 'a'} ${mode} node`,
    [
      `to run a ${mode} node, make a ${mode} home: noded init ${mode} --chain-id ${chainId} --home <another directory>`,
    ],
  );
}

async function loadRuntime(mode: NodeMode): Promise<RunNode> {
  // NODED_RUNTIME_MODULE replaces the node runtime (tests use it to exercise the lifecycle here).
  const [spec, name] = process.env.NODED_RUNTIME_MODULE
    ? [new URL(`file://${resolve(process.env.NODED_RUNTIME_MODULE)}`).href, 'runNode']
    : mode === 'light'
      ? [new URL('../../light-node.js', import.meta.url).href, 'runLightNode']
      : [new URL('../../node.js', import.meta.url).href, 'runNode'];
  let mod: Record<string, unknown>;
  try {
    mod = (await import(spec)) as Record<string, unknown>;
  } catch (err) {
    throw new CliError(`the node runtime (${spec}) cannot be loaded: ${(err as Error).message}`);
  }
  if (typeof mod[name] !== 'function')
    throw new CliError(`the node runtime (${spec}) does not export ${name}()`);
  return mod[name] as RunNode;
}

async function runNodeProcess(opts: StartOptions, plan: string[]): Promise<void> {
  const runNode = await loadRuntime(opts.mode);
  try {
    acquireHomeLock(opts.home);
  } catch (err) {
    if (err instanceof HomeLockedError) throw new CliError(err.message);
    throw err;
  }
  process.on('exit', () => releaseHomeLock(opts.home));
  const services = homeServices(opts.home);
  if (services.length > 0) {
    throw new CliError(
      `${homePaths(opts.home).servicesDir}: cluster services are running on this home (${describeServices(services)}); stop them before "noded start"`,
    );
  }
  mkdirSync(dirname(opts.logFile), { recursive: true });

  say('starting noded:');
  for (const l of plan) say(l);

  let node: RunningNode;
  try {
    node = await runNode(opts);
  } catch (err) {
    releaseHomeLock(opts.home);
    throw new CliError(`the node failed to start: ${(err as Error).message} (see ${opts.logFile})`);
  }
  say(`noded is running (pid ${process.pid}); Ctrl-C or SIGTERM stops it`);

  const stopping = stopOnSignals('', async () => {
    try {
      await node.stop();
    } finally {
      releaseHomeLock(opts.home);
    }
  });

  try {
    await node.done;
  } catch (err) {
    releaseHomeLock(opts.home);
    throw new CliError(`the node stopped with an error: ${(err as Error).message} (see ${opts.logFile})`);
  }
  // When a signal started the shutdown, stopOnSignals exits once stop() returns.
  if (!stopping()) {
    releaseHomeLock(opts.home);
    say('noded: the node stopped');
  }
}
