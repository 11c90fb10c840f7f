// noded testnet --validators N [--non-validators M] --output DIR: writes DIR/node0 .. DIR/node{N+M-1},
// each a complete home as `noded init full` writes it, sharing one genesis that lists the N validators
// with equal power. Node i listens on its own loopback address (--starting-ip + i) with the default
// ports, so the nodes run side by side on one machine like hosts of a network, each naming all the
// others as persistent peers. Everything is built and checked in a staging directory first; DIR is
// only created (or, with --overwrite, replaced) once every home is complete.
import { existsSync, mkdirSync, readdirSync, renameSync, rmSync, statSync } from 'node:fs';
import { isIPv4 } from 'node:net';
import { homedir } from 'node:os';
import { basename, dirname, join, resolve, sep } from 'node:path';
import {
  CHAIN_IDS,
  type ChainId,
  DEFAULT_DEV_MNEMONIC,
  DEV_ACCOUNT_BALANCE_BTC,
  defaultConfigTomlValues,
  type Ed25519Key,
  formatProblem,
  homeLockHolder,
  homePaths,
  LOCAL_VALIDATOR_POWER,
  loadGenesis,
  loadNodeConfig,
  newEd25519Key,
  PORTS,
} from '@noded/config';
import { nodeIdFromPublicKey } from '@noded/crypto';
import type { Command } from 'commander';
import {
  chainIdProblem,
  type DevAccounts,
  devAccountsOf,
  generatedGenesisText,
  homeFiles,
  nodeTomlValues,
  writeHome,
} from '../home-files.js';
import { CliError, say } from '../util.js';

interface TestnetOpts {
  validators: string;
  nonValidators: string;
  output: string;
  chainId: string;
  startingIp: string;
  overwrite?: boolean;
}

interface TestnetNode {
  name: string;
  ip: string;
  nodeKey: Ed25519Key;
  nodeId: string;
  validatorKey: Ed25519Key;
  validator: boolean;
}

/** A flag holding a whole number >= min; undefined (and a problem) otherwise. */
function countFlag(flag: string, text: string, min: number, errors: string[]): number | undefined {
  const n = /^\d+$/.test(text) ? Number(text) : Number.NaN;
  if (!Number.isSafeInteger(n) || n < min) {
    errors.push(`${flag}: must be an integer >= ${min}, got ${JSON.stringify(text)}`);
    return undefined;
  }
  return n;
}

/** The four numbers of --starting-ip; undefined (and a problem) when it is not a usable IPv4 host. */
function startingIp(text: string, errors: string[]): number[] | undefined {
  if (!isIPv4(text)) {
    errors.push(`--starting-ip: must be an IPv4 address such as 127.0.0.2, got ${JSON.stringify(text)}`);
    return undefined;
  }
  const octets = text.split('.').map(Number);
  if (octets[0] === 0) {
    errors.push(`--starting-ip: must be an address nodes can be dialed at, not in 0.0.0.0/8, got "${text}"`);
    return undefined;
  }
  if (octets[3]! < 1 || octets[3]! > 254) {
    errors.push(`--starting-ip: the last number must be between 1 and 254, got "${text}"`);
    return undefined;
  }
  return octets;
}

export function registerTestnet(program: Command): void {
  program
    .command('testnet')
    .description(
      'write the homes of a local multi-node network (one shared genesis, each node on its own 127.0.0.x)',
    )
    .requiredOption('--validators <n>', 'number of validator nodes (>= 1), node0 .. node<n-1>')
    .option('--non-validators <m>', 'number of full nodes that are not validators (>= 0)', '0')
    .requiredOption('--output <dir>', 'directory to write node0 .. node<n+m-1> into')
    .option('--chain-id <chain_id>', `network: ${CHAIN_IDS.join(', ')}`, 'chain-local')
    .option('--starting-ip <ip>', 'IPv4 address of node0; node i gets the last number + i', '127.0.0.2')
    .option('--overwrite', 'replace an existing, non-empty output directory')
    .action((opts: TestnetOpts) => runTestnet(opts));
}

function runTestnet(opts: TestnetOpts): void {
  const errors: string[] = [];
  const validators = countFlag('--validators', opts.validators, 1, errors);
  const nonValidators = countFlag('--non-validators', opts.nonValidators, 0, errors);
  const chainProblem = chainIdProblem(opts.chainId);
  if (chainProblem) errors.push(chainProblem);
  const chainId = opts.chainId as ChainId;
  const ip0 = startingIp(opts.startingIp, errors);
  if (opts.output.trim() === '') errors.push('--output: must not be empty');
  const total = (validators ?? 0) + (nonValidators ?? 0);
  if (ip0 && validators !== undefined && nonValidators !== undefined) {
    const room = 254 - ip0[3]! + 1;
    if (total > room) {
      errors.push(
        `--starting-ip: ${opts.startingIp} leaves room for ${room} node${room === 1 ? '' : 's'} (the last number may not pass 254), got ${total} (--validators ${validators} + --non-validators ${nonValidators})`,
      );
    }
  }
  if (errors.length > 0) throw new CliError('testnet: nothing was written', errors);

  const dir = resolve(opts.output);
  checkOutputDir(dir, opts.overwrite === true);

  const nodes: TestnetNode[] = Array.from({ length: total }, (_, i) => {
    const nodeKey = newEd25519Key();
    return {
      name: `node${i}`,
      ip: [...ip0!.slice(0, 3), ip0![3]! + i].join('.'),
      nodeKey,
      nodeId: nodeIdFromPublicKey(nodeKey.publicKey),
      validatorKey: newEd25519Key(),
      validator: i < validators!,
    };
  });

  // chain-local: the dev accounts `noded init full --chain-id chain-local` funds and unlocks.
  let dev: DevAccounts | undefined;
  if (chainId === 'chain-local') {
    dev = devAccountsOf(DEFAULT_DEV_MNEMONIC, errors);
    if (errors.length > 0) throw new CliError('testnet: nothing was written', errors);
  }
  // One genesis text, written byte for byte into every home.
  const genesisText = generatedGenesisText(
    chainId,
    nodes
      .filter((n) => n.validator)
      .map((n) => ({ publicKey: n.validatorKey.publicKey, power: LOCAL_VALIDATOR_POWER, name: n.name })),
    dev?.accounts ?? [],
  );

  const staging = join(dirname(dir), `.${basename(dir)}.tmp-${process.pid}`);
  const old = `${staging}-old`;
  try {
    rmSync(staging, { recursive: true, force: true });
    mkdirSync(staging, { recursive: true, mode: 0o755 });
    for (const node of nodes) writeNodeHome(join(staging, node.name), node, nodes, chainId, genesisText, dev);
    selfCheck(staging, nodes);
    // Swap the staged homes in; the old directory (--overwrite) goes only once they are in place.
    if (existsSync(dir)) renameSync(dir, old);
    try {
      renameSync(staging, dir);
    } catch (err) {
      if (existsSync(old)) renameSync(old, dir);
      throw err;
    }
    rmSync(old, { recursive: true, force: true });
  } catch (err) {
    rmSync(staging, { recursive: true, force: true });
    if (err instanceof CliError) throw err;
    const e = err as NodeJS.ErrnoException;
    throw new CliError(`cannot write ${dir}: ${e.code ?? e.message}${e.path ? ` (${e.path})` : ''}`);
  }

  const nv = nonValidators!;
  say(
    `wrote a ${total}-node ${chainId} network in ${dir}: ${validators === 1 ? `1 validator (power ${LOCAL_VALIDATOR_POWER})` : `${validators} validators (power ${LOCAL_VALIDATOR_POWER} each)`}, ${nv} non-validator${nv === 1 ? '' : 's'}`,
  );
  const rows = [
    ['dir', 'node id', 'ip', 'role'],
    ...nodes.map((n) => [join(dir, n.name), n.nodeId, n.ip, n.validator ? 'validator' : 'non-validator']),
  ];
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map((r) => r[c]!.length)));
  for (const r of rows) say(`  ${r.map((cell, c) => cell.padEnd(widths[c]!)).join('  ')}`.trimEnd());
  if (dev) {
    say(
      `dev accounts: the ${dev.accounts.length} accounts of "${dev.mnemonic}" hold ${DEV_ACCOUNT_BALANCE_BTC} BTC each and are unlocked on every node (TEST ONLY keys)`,
    );
  }
  say(`start each node: noded start --home ${join(dir, 'node<i>')}`);
}

/** DIR must not exist, or be an empty directory, or (with --overwrite) one no running node uses. */
function checkOutputDir(dir: string, overwrite: boolean): void {
  if (!existsSync(dir)) return;
  if (!statSync(dir).isDirectory()) {
    throw new CliError(`${dir} exists and is not a directory; nothing was written`);
  }
  const entries = readdirSync(dir);
  if (entries.length === 0) return;
  if (!overwrite) {
    throw new CliError(
      `${dir} exists and is not empty; nothing was written (pass --overwrite to replace it and everything in it)`,
    );
  }
  const home = homedir();
  if (dir === resolve(sep) || home === dir || home.startsWith(`${dir}${sep}`)) {
    throw new CliError(`--overwrite: refusing to replace ${dir}: it holds your home directory`);
  }
  for (const name of entries) {
    const holder = homeLockHolder(join(dir, name));
    if (holder !== undefined) {
      throw new CliError(
        `${homePaths(join(dir, name)).pidFile}: a node (pid ${holder}) is running on this home; stop it first; nothing was written`,
      );
    }
  }
}

function writeNodeHome(
  home: string,
  node: TestnetNode,
  nodes: TestnetNode[],
  chainId: ChainId,
  genesisText: string,
  dev: DevAccounts | undefined,
): void {
  const at = (port: number) => `${node.ip}:${port}`;
  const config = defaultConfigTomlValues();
  config.moniker = node.name;
  config.rpc.laddr = `tcp://${at(PORTS.rpc)}`;
  config.p2p.laddr = `tcp://${at(PORTS.p2p)}`;
  config.p2p.external_address = at(PORTS.p2p);
  config.p2p.persistent_peers = nodes
    .filter((n) => n !== node)
    .map((n) => `${n.nodeId}@${n.ip}:${PORTS.p2p}`)
    .join(',');
  // Several nodes on one machine (each dials from its own loopback address), on addresses that are
  // not routable.
  config.p2p.allow_duplicate_ip = true;
  config.p2p.addr_book_strict = false;
  config.instrumentation.prometheus_listen_addr = at(PORTS.metrics);

  const { app, client } = nodeTomlValues('full', chainId);
  app.api.address = `tcp://${at(PORTS.api)}`;
  app.evm.rpc_address = at(PORTS.evmHttp);
  app.evm.ws_address = at(PORTS.evmWs);
  app.evm.api_address = at(PORTS.api);
  client.node = `tcp://${at(PORTS.rpc)}`;

  const paths = homePaths(home);
  writeHome(
    paths,
    homeFiles(paths, {
      config,
      app,
      client,
      genesisText,
      nodeKey: node.nodeKey,
      validatorKey: node.validatorKey,
      devAccounts: dev,
      validatorState: true,
    }),
  );
}

/** Every staged home loads as `noded config validate` and `validate-genesis` load it. */
function selfCheck(staging: string, nodes: TestnetNode[]): void {
  const problems: string[] = [];
  for (const node of nodes) {
    const home = join(staging, node.name);
    const loaded = loadNodeConfig(home);
    const genesis = loadGenesis(homePaths(home).genesis);
    for (const p of [...loaded.problems, ...genesis.problems])
      problems.push(`${node.name}: ${formatProblem(p)}`);
  }
  if (problems.length > 0) {
    throw new CliError('testnet: a generated home does not validate; nothing was written', problems);
  }
}
