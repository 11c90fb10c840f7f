// `networks list`, `networks show <chain_id>` and `version`.
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CHAIN_IDS, formatProblem, homePaths, loadNetworks, type NetworkInfo } from '@noded/config';
import type { Command } from 'commander';
import { addHomeOption, CliError, type HomeOpts, homeOf, say, table } from '../util.js';

interface NetOpts extends HomeOpts {
  output?: string;
}

function networks(opts: NetOpts): NetworkInfo[] {
  const override = process.env.NODED_NETWORKS_FILE || homePaths(homeOf(opts)).networks;
  const { networks, problems } = loadNetworks(override);
  if (problems.length > 0)
    throw new CliError('the network presets are not valid', problems.map(formatProblem));
  return networks;
}

function outputOf(opts: NetOpts): 'text' | 'json' {
  if (opts.output === undefined || opts.output === 'text') return 'text';
  if (opts.output === 'json') return 'json';
  throw new CliError(`--output: must be text or json, got ${JSON.stringify(opts.output)}`);
}

/** The seed's record fields (§2.1), plus the EVM chain id. */
function record(n: NetworkInfo): Record<string, string | number> {
  const r: Record<string, string | number> = {
    chain_id: n.chainId,
    evm_chain_id: n.evmChainId,
    rpc_endpoint: n.rpcEndpoint,
    websocket: n.websocket,
  };
  if (n.explorer) r.explorer = n.explorer;
  return r;
}

/** package.json of noded, found by walking up from this file. */
export function packageVersion(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const file = join(dir, 'package.json');
    if (existsSync(file)) {
      const pkg = JSON.parse(readFileSync(file, 'utf8')) as { name?: string; version?: string };
      if (pkg.name === 'noded') return pkg.version ?? 'unknown';
    }
    const up = dirname(dir);
    if (up === dir) return 'unknown';
    dir = up;
  }
}

export function registerInfo(program: Command): void {
  const net = program
    .command('networks')
    .description(
      'network presets: chain-mainnet, chain-testnet, chain-local (override: <home>/config/networks.json)',
    );
  addHomeOption(
    net.command('list').description('list the networks').option('--output <format>', 'text or json'),
  ).action((opts: NetOpts) => {
    const output = outputOf(opts);
    const list = networks(opts);
    if (output === 'json') {
      say(JSON.stringify(list.map(record), null, 2));
      return;
    }
    for (const l of table(
      list.map((n) => [n.chainId, `${n.rpcEndpoint}  (EVM chain id ${n.evmChainId})`]),
      '',
    ))
      say(l);
  });
  addHomeOption(
    net
      .command('show')
      .description('show one network: RPC, WebSocket, explorer, EVM chain id')
      .argument('<chain_id>', CHAIN_IDS.join(', '))
      .option('--output <format>', 'text or json'),
  ).action((chainId: string, opts: NetOpts) => {
    const output = outputOf(opts);
    if (!(CHAIN_IDS as readonly string[]).includes(chainId)) {
      throw new CliError(`chain_id: must be one of ${CHAIN_IDS.join(', ')}, got ${JSON.stringify(chainId)}`);
    }
    const n = networks(opts).find((x) => x.chainId === chainId)!;
    const r = record(n);
    if (output === 'json') say(JSON.stringify(r, null, 2));
    else
      for (const l of table(
        Object.entries(r).map(([k, v]) => [k, String(v)]),
        '',
      ))
        say(l);
  });

  program
    .command('version')
    .description('print the version of noded')
    .action(() => {
      say(`noded ${packageVersion()}`);
      say(`node ${process.version} ${process.platform}/${process.arch}`);
    });
}
