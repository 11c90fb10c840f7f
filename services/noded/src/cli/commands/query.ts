// Commands that ask a running node over its CometBFT-style RPC: `status`, `tendermint show-peers`.
import { existsSync, readFileSync } from 'node:fs';
import {
  type ClientToml,
  formatProblem,
  homePaths,
  parseAppToml,
  parseClientToml,
  parseDuration,
} from '@noded/config';
import type { Command } from 'commander';
import { getRpc, nodeUrlFromFlag } from '../http.js';
import { addHomeOption, CliError, type HomeOpts, homeOf, say, table } from '../util.js';

interface QueryOpts extends HomeOpts {
  node?: string;
  output?: string;
  timeout: string;
}

/** client.toml of the home when there is one (its node and output), else the defaults. */
function clientSettings(home: string): ClientToml | undefined {
  const file = homePaths(home).clientToml;
  if (!existsSync(file)) return undefined;
  const problems: Parameters<typeof parseClientToml>[1] = [];
  const { client } = parseClientToml(readFileSync(file, 'utf8'), problems);
  if (problems.length > 0) {
    throw new CliError(`${file} is not valid; fix it or pass --node`, problems.map(formatProblem));
  }
  return client;
}

function resolveTarget(opts: QueryOpts): {
  base: string;
  timeoutMs: number;
  output: 'text' | 'json';
  home: string;
} {
  const home = homeOf(opts);
  const timeoutMs = parseDuration(opts.timeout);
  if (timeoutMs === undefined || timeoutMs <= 0) {
    throw new CliError(
      `--timeout: must be a duration such as "5s" or "500ms", got ${JSON.stringify(opts.timeout)}`,
    );
  }
  if (opts.output !== undefined && opts.output !== 'text' && opts.output !== 'json') {
    throw new CliError(`--output: must be text or json, got ${JSON.stringify(opts.output)}`);
  }
  const client = opts.node === undefined || opts.output === undefined ? clientSettings(home) : undefined;
  const base =
    opts.node !== undefined ? nodeUrlFromFlag(opts.node) : (client?.nodeHttpUrl ?? 'http://localhost:26657');
  const output = (opts.output ?? client?.output ?? 'text') as 'text' | 'json';
  return { base, timeoutMs, output, home };
}

function queryOptions(cmd: Command): Command {
  return addHomeOption(
    cmd
      .option(
        '--node <url>',
        'CometBFT RPC of the node (default: "node" in client.toml, else tcp://localhost:26657)',
      )
      .option('--output <format>', 'text or json (default: "output" in client.toml, else text)')
      .option('--timeout <duration>', 'how long to wait for the node', '5s'),
  );
}

type Obj = Record<string, unknown>;
const obj = (v: unknown): Obj => (typeof v === 'object' && v !== null ? (v as Obj) : {});

/** Mode as the node reports it (node_info.other.mode), else as the home's app.toml records it. */
function modeOf(status: Obj, home: string, nodeGiven: boolean): string {
  const reported = obj(obj(status.node_info).other).mode;
  if (typeof reported === 'string') return reported;
  const file = homePaths(home).appToml;
  if (!nodeGiven && existsSync(file)) {
    const problems: Parameters<typeof parseAppToml>[1] = [];
    const { app } = parseAppToml(readFileSync(file, 'utf8'), problems);
    if (!problems.some((p) => p.key === 'mode'))
      return `${app.mode} (from ${file}; the node does not report it)`;
  }
  return 'unknown (the node does not report it)';
}

export function registerQueries(program: Command, tendermint: Command): void {
  queryOptions(
    program
      .command('status')
      .description("ask the running node's /status: height, hash, time, catching_up, peers, mode"),
  ).action(async (opts: QueryOpts) => {
    const t = resolveTarget(opts);
    const status = await getRpc(t.base, '/status', t.timeoutMs);
    const sync = obj(status.sync_info);
    if (sync.latest_block_height === undefined) {
      throw new CliError(
        `the node at ${t.base} answered /status without sync_info; is it a CometBFT-style RPC?`,
      );
    }
    let peers: string;
    try {
      const net = await getRpc(t.base, '/net_info', t.timeoutMs);
      peers = String(net.n_peers ?? 'unknown');
    } catch (err) {
      peers = `unknown (${(err as Error).message})`;
    }
    const info = {
      node: t.base,
      network: String(obj(status.node_info).network ?? ''),
      moniker: String(obj(status.node_info).moniker ?? ''),
      height: String(sync.latest_block_height),
      hash: String(sync.latest_block_hash ?? ''),
      time: String(sync.latest_block_time ?? ''),
      catching_up: Boolean(sync.catching_up),
      peers,
      mode: modeOf(status, t.home, opts.node !== undefined),
    };
    if (t.output === 'json') {
      say(JSON.stringify(info, null, 2));
      return;
    }
    for (const l of table(
      [
        ['node', info.node],
        ['network', info.network],
        ['moniker', info.moniker],
        ['height', info.height],
        ['hash', info.hash],
        ['time', info.time],
        ['catching_up', String(info.catching_up)],
        ['peers', info.peers],
        ['mode', info.mode],
      ],
      '',
    ))
      say(l);
  });

  queryOptions(
    tendermint
      .command('show-peers')
      .description('peers of the running node from /net_info: id, address, direction, moniker'),
  ).action(async (opts: QueryOpts) => {
    const t = resolveTarget(opts);
    const net = await getRpc(t.base, '/net_info', t.timeoutMs);
    const list = Array.isArray(net.peers) ? (net.peers as unknown[]) : [];
    const peers = list.map((p) => {
      const ni = obj(obj(p).node_info);
      const listen = String(ni.listen_addr ?? '');
      const port = /:(\d+)$/.exec(listen)?.[1] ?? '';
      const ip = String(obj(p).remote_ip ?? '');
      return {
        id: String(ni.id ?? ''),
        address: ip && port ? `${ip}:${port}` : listen.replace(/^tcp:\/\//, ''),
        direction: obj(p).is_outbound ? 'outbound' : 'inbound',
        moniker: String(ni.moniker ?? ''),
      };
    });
    if (t.output === 'json') {
      say(JSON.stringify(peers, null, 2));
      return;
    }
    if (peers.length === 0) {
      say(`no peers (${t.base})`);
      return;
    }
    const rows = [
      ['ID', 'ADDRESS', 'DIRECTION', 'MONIKER'],
      ...peers.map((p) => [p.id, p.address, p.direction, p.moniker]),
    ];
    const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
    for (const r of rows) say(r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!))).join('  '));
  });
}
