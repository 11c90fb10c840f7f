// noded init <full|light|archive> --chain-id <id>: writes a complete home. Everything is computed and
// checked first; only then is anything written, so a refused init leaves the disk as it was.
import { existsSync, readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { basename, relative } from 'node:path';
import {
  CHAIN_IDS,
  type ChainId,
  DEFAULT_DEV_MNEMONIC,
  DEV_ACCOUNT_BALANCE_BTC,
  type DevAccount,
  defaultConfigTomlValues,
  type Ed25519Key,
  formatProblem,
  homeLockHolder,
  homePaths,
  KeyFileError,
  LOCAL_VALIDATOR_POWER,
  loadNodeKey,
  loadValidatorKey,
  NODE_MODES,
  type NodeMode,
  newEd25519Key,
  parseGenesisText,
  shippedGenesisPath,
} from '@noded/config';
import { nodeIdFromPublicKey } from '@noded/crypto';
import type { Command } from 'commander';
import {
  chainIdProblem,
  devAccountsOf,
  devChainConsensus,
  generatedGenesisText,
  homeFiles,
  monikerProblems,
  nodeTomlValues,
  validatorAddressHex,
  writeHome,
} from '../home-files.js';
import { addHomeOption, CliError, type HomeOpts, homeOf, say } from '../util.js';

interface InitOpts extends HomeOpts {
  chainId: string;
  moniker?: string;
  overwrite?: boolean;
  genesis?: string;
  mnemonic?: string;
}

/** Keeps an existing valid key (an operator's identity is never replaced by init); else a new one. */
function keyFor(
  path: string,
  load: (file: string) => Ed25519Key,
  errors: string[],
): { key: Ed25519Key; kept: boolean } | undefined {
  if (!existsSync(path)) return { key: newEd25519Key(), kept: false };
  try {
    return { key: load(path), kept: true };
  } catch (err) {
    const reason = err instanceof KeyFileError ? err.message : (err as Error).message;
    errors.push(`${reason} (init keeps existing keys; move the file away to get a new key)`);
    return undefined;
  }
}

export function registerInit(program: Command): void {
  addHomeOption(
    program
      .command('init')
      .description('create a node home: config files, genesis, node and validator keys')
      .argument('<node_type>', `node type, recorded in app.toml "mode": ${NODE_MODES.join(', ')}`)
      .requiredOption('--chain-id <chain_id>', `network: ${CHAIN_IDS.join(', ')}`)
      .option('--moniker <name>', 'name of this node (default: the host name)')
      .option('--overwrite', 'replace the config files and genesis of an existing home (keys are kept)')
      .option('--genesis <file>', 'use this genesis.json instead of the shipped or generated one')
      .option('--mnemonic <words>', `chain-local dev accounts mnemonic (default: "${DEFAULT_DEV_MNEMONIC}")`),
  ).action((nodeType: string, opts: InitOpts) => runInit(nodeType, opts));
}

function runInit(nodeType: string, opts: InitOpts): void {
  const home = homeOf(opts);
  const paths = homePaths(home);
  const errors: string[] = [];

  if (!(NODE_MODES as readonly string[]).includes(nodeType)) {
    errors.push(`node_type: must be one of ${NODE_MODES.join(', ')}, got ${JSON.stringify(nodeType)}`);
  }
  const chainProblem = chainIdProblem(opts.chainId);
  const chainOk = chainProblem === undefined;
  if (chainProblem) errors.push(chainProblem);
  const chainId = opts.chainId as ChainId;

  const configValues = defaultConfigTomlValues();
  configValues.moniker = opts.moniker ?? (hostname() || 'noded');
  if (chainOk && chainId === 'chain-local') devChainConsensus(configValues);
  errors.push(...monikerProblems(configValues.moniker));

  let devAccounts: DevAccount[] = [];
  let mnemonic = DEFAULT_DEV_MNEMONIC;
  if (opts.mnemonic !== undefined && chainOk && chainId !== 'chain-local') {
    errors.push(`--mnemonic: only used with --chain-id chain-local, got --chain-id ${chainId}`);
  } else if (chainOk && chainId === 'chain-local' && opts.genesis === undefined) {
    ({ mnemonic, accounts: devAccounts } = devAccountsOf(opts.mnemonic ?? DEFAULT_DEV_MNEMONIC, errors));
  } else if (opts.mnemonic !== undefined && opts.genesis !== undefined) {
    errors.push('--mnemonic: not used with --genesis (the accounts come from the genesis file)');
  }

  // The genesis text, verbatim when it comes from a file (its bytes define the chain).
  let genesisText: string | undefined;
  let genesisSource = '';
  if (chainOk) {
    const file = opts.genesis ?? shippedGenesisPath(chainId);
    if (file !== undefined) {
      genesisSource = opts.genesis !== undefined ? file : `shipped ${chainId} genesis`;
      let text: string | undefined;
      try {
        text = readFileSync(file, 'utf8');
      } catch (err) {
        errors.push(
          `--genesis: cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
        );
      }
      if (text !== undefined) {
        const { json, problems } = parseGenesisText(text, basename(file));
        for (const p of problems) errors.push(`--genesis: ${formatProblem(p)}`);
        if (json && json.chain_id !== chainId) {
          errors.push(
            `--genesis: ${basename(file)}: chain_id: must match --chain-id "${chainId}", got "${json.chain_id}"`,
          );
        }
        if (json && problems.length === 0) genesisText = text;
      }
    } else if (chainId !== 'chain-local') {
      errors.push(
        `no shipped genesis for ${chainId} (libs/config/networks/${chainId}/genesis.json); pass --genesis FILE`,
      );
    }
  }
  if (errors.length > 0) throw new CliError('init: nothing was written', errors);

  // An existing home is only touched with --overwrite, and never while a node runs on it.
  const targets = [
    paths.configToml,
    paths.appToml,
    paths.clientToml,
    paths.genesis,
    paths.nodeKey,
    paths.privValidatorKey,
    paths.privValidatorState,
  ];
  const existing = targets.filter((p) => existsSync(p));
  if (existing.length > 0 && !opts.overwrite) {
    throw new CliError(
      `${existing[0]} already exists; nothing was written (pass --overwrite to replace the config files and genesis; keys and validator state are kept)`,
      existing.slice(1).map((p) => `also exists: ${p}`),
    );
  }
  const holder = homeLockHolder(home);
  if (holder !== undefined) {
    throw new CliError(`${paths.pidFile}: a node (pid ${holder}) is running on this home; stop it first`);
  }

  const nodeKey = keyFor(paths.nodeKey, loadNodeKey, errors);
  const valKey = keyFor(paths.privValidatorKey, loadValidatorKey, errors);
  if (errors.length > 0 || !nodeKey || !valKey) throw new CliError('init: nothing was written', errors);

  if (genesisText === undefined) {
    // chain-local without --genesis: this node is the single validator, dev accounts are funded.
    genesisText = generatedGenesisText(
      chainId,
      [{ publicKey: valKey.key.publicKey, power: LOCAL_VALIDATOR_POWER, name: configValues.moniker }],
      devAccounts,
    );
    genesisSource = 'generated: this node is the single validator';
  }

  const mode = nodeType as NodeMode;
  const { app: appValues, client: clientValues } = nodeTomlValues(mode, chainId);
  const keepState = existsSync(paths.privValidatorState);
  const files = homeFiles(paths, {
    config: configValues,
    app: appValues,
    client: clientValues,
    genesisText,
    nodeKey: nodeKey.kept ? undefined : nodeKey.key,
    validatorKey: valKey.kept ? undefined : valKey.key,
    devAccounts: { mnemonic, accounts: devAccounts },
    validatorState: !keepState,
  });
  writeHome(paths, files);

  const rel = (p: string) => relative(home, p);
  say(`initialised ${mode} node "${configValues.moniker}" for ${chainId} in ${home}`);
  say(
    `  node id:    ${nodeIdFromPublicKey(nodeKey.key.publicKey)}${nodeKey.kept ? ' (existing key kept)' : ''}`,
  );
  say(`  validator:  ${validatorAddressHex(valKey.key)}${valKey.kept ? ' (existing key kept)' : ''}`);
  say(`  genesis:    ${genesisSource}`);
  say('  wrote:');
  for (const f of files) say(`    ${rel(f.path)}`);
  if (keepState) say(`  kept:       ${rel(paths.privValidatorState)} (double-sign protection)`);
  if (devAccounts.length > 0) {
    say('');
    say(`dev accounts (m/44'/60'/0'/0/i), ${DEV_ACCOUNT_BALANCE_BTC} BTC each; mnemonic:`);
    say(`  ${mnemonic}`);
    // Listed once, by `noded start` (as a Hardhat node does), where they stay at hand.
    say(`  the ${devAccounts.length} accounts and their keys are listed when the node starts`);
  }
  if (mode === 'light') {
    say('\nlight node: no EVM state and no block execution; it follows and verifies headers from');
    say(
      'config.toml [p2p] persistent_peers (full nodes of this chain) and trusts what app.toml [light] says',
    );
  }
  say(`\nnext: noded start --home ${home}`);
}
