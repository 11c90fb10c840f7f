// What `noded init` and `noded testnet` share: checking their common flags, deriving the chain-local
// dev accounts, building a chain-local genesis, and writing one complete home (the three TOML files,
// genesis, keys, validator state, dev accounts file) in CometBFT's layout.
import { mkdirSync, renameSync, writeFileSync } from 'node:fs';
import {
  type AppTomlFile,
  BASE_UNITS_PER_BTC,
  CHAIN_IDS,
  type ChainId,
  type ClientTomlFile,
  type ConfigTomlFile,
  DEFAULT_STAKING_PARAMS,
  DEV_ACCOUNT_BALANCE_BTC,
  DEV_ACCOUNT_COUNT,
  type DevAccount,
  defaultAppTomlValues,
  defaultClientTomlValues,
  deriveDevAccounts,
  type Ed25519Key,
  type HomePaths,
  initialValidatorStateJson,
  MnemonicError,
  makeGenesis,
  type NodeMode,
  nodeKeyJson,
  normalizeMnemonic,
  parseConfigToml,
  renderAppToml,
  renderClientToml,
  renderConfigToml,
  renderGenesisJson,
  validatorKeyJson,
} from '@noded/config';
import { ed25519Address } from '@noded/crypto';
import { CliError } from './util.js';

export interface FileToWrite {
  path: string;
  text: string;
  mode?: number;
}

export function writeAtomic(f: FileToWrite): void {
  const tmp = `${f.path}.tmp-${process.pid}`;
  writeFileSync(tmp, f.text, { mode: f.mode ?? 0o644 });
  renameSync(tmp, f.path);
}

export function isChainId(text: string): text is ChainId {
  return (CHAIN_IDS as readonly string[]).includes(text);
}

/** The message for a --chain-id that is not a known network, or undefined. */
export function chainIdProblem(text: string): string | undefined {
  return isChainId(text)
    ? undefined
    : `--chain-id: must be one of ${CHAIN_IDS.join(', ')}, got ${JSON.stringify(text)}`;
}

/** Problems of a moniker, checked by the config.toml schema itself so the rule is the same. */
export function monikerProblems(moniker: string): string[] {
  const problems: Parameters<typeof parseConfigToml>[1] = [];
  parseConfigToml(`moniker = ${JSON.stringify(moniker)}\n`, problems);
  return problems.map((p) => `--moniker: ${p.message}`);
}

export interface DevAccounts {
  mnemonic: string;
  accounts: DevAccount[];
}

/** The chain-local dev accounts of a mnemonic; a problem is pushed (as `--mnemonic: ...`) if it is bad. */
export function devAccountsOf(mnemonicText: string, errors: string[]): DevAccounts {
  const mnemonic = normalizeMnemonic(mnemonicText);
  try {
    return { mnemonic, accounts: deriveDevAccounts(mnemonic, DEV_ACCOUNT_COUNT) };
  } catch (err) {
    if (!(err instanceof MnemonicError)) throw err;
    errors.push(`--${err.message}`);
    return { mnemonic, accounts: [] };
  }
}

/**
 * A generated genesis: these validators (in order) and, on chain-local, the dev accounts funded with
 * DEV_ACCOUNT_BALANCE_BTC each. With dev accounts, the validators are bonded in the validator pool
 * (app_state.staking, default params): validator i is operated by dev account i, its self-bond is
 * power * power_reduction, held by the pool on top of the dev accounts' balances.
 */
export function generatedGenesisText(
  chainId: ChainId,
  validators: Array<{ publicKey: Uint8Array; power: bigint; name: string }>,
  devAccounts: DevAccount[],
): string {
  const bonded = devAccounts.length >= validators.length && validators.length > 0;
  return renderGenesisJson(
    makeGenesis({
      chainId,
      validators: validators.map((v, i) => (bonded ? { ...v, operator: devAccounts[i]!.address } : v)),
      accounts: devAccounts.map((a) => ({
        address: a.address,
        balance: DEV_ACCOUNT_BALANCE_BTC * BASE_UNITS_PER_BTC,
      })),
      ...(bonded ? { staking: { params: { ...DEFAULT_STAKING_PARAMS } } } : {}),
    }),
  );
}

/** app.toml and client.toml values of a node of this type on this chain. */
/**
 * chain-local's block pacing: a transaction at an idle node is proposed, voted and committed at
 * once, and an empty block follows a second after the last block (the seed's timeout_commit), as a
 * Hardhat node or anvil mines on demand. Other chains keep the seed's timeouts.
 */
export function devChainConsensus(config: ConfigTomlFile): void {
  config.consensus.skip_timeout_commit = true;
  config.consensus.create_empty_blocks = true;
  config.consensus.create_empty_blocks_interval = config.consensus.timeout_commit;
}

export function nodeTomlValues(
  mode: NodeMode,
  chainId: ChainId,
): { app: AppTomlFile; client: ClientTomlFile } {
  const app = defaultAppTomlValues();
  app.mode = mode;
  // A dev chain is small: chain-local keeps every height's state, so tools can read any block.
  app.pruning = mode === 'archive' || chainId === 'chain-local' ? 'nothing' : 'default';
  const client = defaultClientTomlValues();
  client['chain-id'] = chainId;
  return { app, client };
}

export interface HomeContent {
  config: ConfigTomlFile;
  app: AppTomlFile;
  client: ClientTomlFile;
  genesisText: string;
  /** Keys to write; undefined keeps the file on disk (an existing identity is never replaced). */
  nodeKey?: Ed25519Key;
  validatorKey?: Ed25519Key;
  /** chain-local: the mnemonic `noded start` unlocks the accounts of (config/dev_accounts.json). */
  devAccounts?: DevAccounts;
  /** Write data/priv_validator_state.json at height 0 (false keeps the existing one). */
  validatorState: boolean;
}

/** The files of a home, in the order they are written and listed. */
export function homeFiles(paths: HomePaths, c: HomeContent): FileToWrite[] {
  const files: FileToWrite[] = [
    { path: paths.configToml, text: renderConfigToml(c.config) },
    { path: paths.appToml, text: renderAppToml(c.app) },
    { path: paths.clientToml, text: renderClientToml(c.client) },
    { path: paths.genesis, text: c.genesisText },
  ];
  if (c.nodeKey) files.push({ path: paths.nodeKey, text: nodeKeyJson(c.nodeKey), mode: 0o600 });
  if (c.validatorKey)
    files.push({ path: paths.privValidatorKey, text: validatorKeyJson(c.validatorKey), mode: 0o600 });
  if (c.devAccounts && c.devAccounts.accounts.length > 0) {
    const devFile = {
      warning: 'TEST ONLY: these keys are public; never use them on mainnet or testnet',
      mnemonic: c.devAccounts.mnemonic,
      count: c.devAccounts.accounts.length,
    };
    files.push({ path: paths.devAccounts, text: `${JSON.stringify(devFile, null, 2)}\n`, mode: 0o600 });
  }
  if (c.validatorState)
    files.push({ path: paths.privValidatorState, text: initialValidatorStateJson(), mode: 0o600 });
  return files;
}

/** Creates config/ and data/ (mode 0700) and writes the files; a failure is a CliError naming the home. */
export function writeHome(paths: HomePaths, files: FileToWrite[]): void {
  try {
    mkdirSync(paths.config, { recursive: true, mode: 0o700 });
    mkdirSync(paths.data, { recursive: true, mode: 0o700 });
    for (const f of files) writeAtomic(f);
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    throw new CliError(`cannot write the home ${paths.home}: ${e.code ?? e.message} (${e.path ?? ''})`);
  }
}

/** Upper-case hex of the CometBFT validator address, as priv_validator_key.json holds it. */
export function validatorAddressHex(key: Ed25519Key): string {
  return Buffer.from(ed25519Address(key.publicKey)).toString('hex').toUpperCase();
}
