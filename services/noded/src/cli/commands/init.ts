// noded init <full|light|archive> --chain-id <id>: writes a complete home. Everything is computed and
// checked first; only then is anything written, so a refused init leaves the disk as it was.
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { basename, relative } from 'node:path';
import type { Command } from 'commander';
import {
  BASE_UNITS_PER_BTC,
  CHAIN_IDS,
  type ChainId,
  DEFAULT_DEV_MNEMONIC,
  DEV_ACCOUNT_BALANCE_BTC,
  DEV_ACCOUNT_COUNT,
  type DevAccount,
  defaultAppTomlValues,
  defaultClientTomlValues,
  defaultConfigTomlValues,
  deriveDevAccounts,
  type Ed25519Key,
  formatProblem,
  homeLockHolder,
  homePaths,
  initialValidatorStateJson,
  KeyFileError,
  LOCAL_VALIDATOR_POWER,
  loadNodeKey,
  loadValidatorKey,
  MnemonicError,
  makeGenesis,
  NODE_MODES,
  type NodeMode,
  newEd25519Key,
  nodeKeyJson,
  normalizeMnemonic,
  parseConfigToml,
  parseGenesisText,
  renderAppToml,
  renderClientToml,
  renderConfigToml,
  renderGenesisJson,
  shippedGenesisPath,
  validatorKeyJson,
} from '../../../../../libs/config/index.js';
import { ed25519Address, nodeIdFromPublicKey } from '../../../../../libs/crypto/index.js';
import { addHomeOption, CliError, type HomeOpts, homeOf, say } from '../util.js';

interface InitOpts extends HomeOpts {
  chainId: string;
  moniker?: string;
  overwrite?: boolean;
  genesis?: string;
  mnemonic?: string;
}

interface FileToWrite {
  path: string;
  text: string;
  mode?: number;
}

function writeAtomic(f: FileToWrite): void {
  const tmp = `${f.path}.tmp-${process.pid}`;
  writeFileSync(tmp, f.text, { mode: f.mode ?? 0o644 });
  renameSync(tmp, f.path);
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
  const chainOk = (CHAIN_IDS as readonly string[]).includes(opts.chainId);
  if (!chainOk)
    errors.push(`--chain-id: must be one of ${CHAIN_IDS.join(', ')}, got ${JSON.stringify(opts.chainId)}`);
  const chainId = opts.chainId as ChainId;

  // The moniker is checked by the config.toml schema itself, so the rule is the same in both places.
  const configValues = defaultConfigTomlValues();
  configValues.moniker = opts.moniker ?? (hostname() || 'noded');
  const monikerProblems: Parameters<typeof parseConfigToml>[1] = [];
  parseConfigToml(`moniker = ${JSON.stringify(configValues.moniker)}\n`, monikerProblems);
  for (const p of monikerProblems) errors.push(`--moniker: ${p.message}`);

  let devAccounts: DevAccount[] = [];
  let mnemonic = DEFAULT_DEV_MNEMONIC;
  if (opts.mnemonic !== undefined && chainOk && chainId !== 'chain-local') {
    errors.push(`--mnemonic: only used with --chain-id chain-local, got --chain-id ${chainId}`);
  } else if (chainOk && chainId === 'chain-local' && opts.genesis === undefined) {
    mnemonic = normalizeMnemonic(opts.mnemonic ?? DEFAULT_DEV_MNEMONIC);
    try {
      devAccounts = deriveDevAccounts(mnemonic, DEV_ACCOUNT_COUNT);
    } catch (err) {
      if (!(err instanceof MnemonicError)) throw err;
      errors.push(`--${err.message}`);
    }
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
    const genesis = makeGenesis({
      chainId,
      validators: [
        { publicKey: valKey.key.publicKey, power: LOCAL_VALIDATOR_POWER, name: configValues.moniker },
      ],
      accounts: devAccounts.map((a) => ({
        address: a.address,
        balance: DEV_ACCOUNT_BALANCE_BTC * BASE_UNITS_PER_BTC,
      })),
    });
    genesisText = renderGenesisJson(genesis);
    genesisSource = 'generated: this node is the single validator';
  }

  const mode = nodeType as NodeMode;
  const appValues = defaultAppTomlValues();
  appValues.mode = mode;
  appValues.pruning = mode === 'archive' ? 'nothing' : 'default';
  const clientValues = defaultClientTomlValues();
  clientValues['chain-id'] = chainId;

  const files: FileToWrite[] = [
    { path: paths.configToml, text: renderConfigToml(configValues) },
    { path: paths.appToml, text: renderAppToml(appValues) },
    { path: paths.clientToml, text: renderClientToml(clientValues) },
    { path: paths.genesis, text: genesisText },
  ];
  if (!nodeKey.kept) files.push({ path: paths.nodeKey, text: nodeKeyJson(nodeKey.key), mode: 0o600 });
  if (!valKey.kept)
    files.push({ path: paths.privValidatorKey, text: validatorKeyJson(valKey.key), mode: 0o600 });
  if (devAccounts.length > 0) {
    const devFile = {
      warning: 'TEST ONLY: these keys are public; never use them on mainnet or testnet',
      mnemonic,
      count: devAccounts.length,
    };
    files.push({ path: paths.devAccounts, text: `${JSON.stringify(devFile, null, 2)}\n`, mode: 0o600 });
  }
  const keepState = existsSync(paths.privValidatorState);
  if (!keepState)
    files.push({ path: paths.privValidatorState, text: initialValidatorStateJson(), mode: 0o600 });

  try {
    mkdirSync(paths.config, { recursive: true, mode: 0o700 });
    mkdirSync(paths.data, { recursive: true, mode: 0o700 });
    for (const f of files) writeAtomic(f);
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    throw new CliError(`cannot write the home ${home}: ${e.code ?? e.message} (${e.path ?? ''})`);
  }

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
    devAccounts.forEach((a, i) => {
      say(`  (${i}) ${a.address}  ${a.privateKey}`);
    });
  }
  if (mode === 'light')
    say('\nnote: light mode is recorded, but `noded start` cannot run a light client yet');
  say(`\nnext: noded start --home ${home}`);
}

function validatorAddressHex(key: Ed25519Key): string {
  return Buffer.from(ed25519Address(key.publicKey)).toString('hex').toUpperCase();
}
