// Commands that check or read the home's files: `config validate`, `validate-genesis`,
// `tendermint show-node-id`, `tendermint show-validator`.
import { resolve } from 'node:path';
import {
  homePaths,
  KeyFileError,
  loadGenesis,
  loadNodeConfig,
  loadNodeKey,
  loadValidatorKey,
} from '@noded/config';
import type { Command } from 'commander';
import { addHomeOption, CliError, type HomeOpts, homeOf, problemsError, say } from '../util.js';

function keyError(err: unknown): CliError {
  return new CliError(err instanceof KeyFileError ? err.message : (err as Error).message);
}

export function registerFileCommands(program: Command, tendermint: Command): void {
  const config = program.command('config').description('configuration files');
  addHomeOption(
    config
      .command('validate')
      .description('check config.toml, app.toml and client.toml against their schemas; list every problem'),
  ).action((opts: HomeOpts) => {
    const home = homeOf(opts);
    const { problems } = loadNodeConfig(home);
    if (problems.length > 0) throw problemsError('config validate', problems);
    say(`config.toml, app.toml, client.toml: valid (${homePaths(home).config})`);
  });

  addHomeOption(
    program
      .command('validate-genesis')
      .description('check a genesis.json (default: <home>/config/genesis.json); list every problem')
      .argument('[file]', 'genesis file to check'),
  ).action((file: string | undefined, opts: HomeOpts) => {
    const path = file !== undefined ? resolve(file) : homePaths(homeOf(opts)).genesis;
    const { genesis, problems } = loadGenesis(path);
    if (!genesis) throw problemsError('validate-genesis', problems);
    const r = genesis.runtime;
    say(
      `${path}: valid genesis for ${r.chainId} (EVM chain id ${r.evmChainId}), ${r.validators.length} validator(s), ${r.appState.evm.accounts.length} account(s)`,
    );
  });

  addHomeOption(
    tendermint.command('show-node-id').description("print this node's id (from config/node_key.json)"),
  ).action((opts: HomeOpts) => {
    try {
      say(loadNodeKey(homePaths(homeOf(opts)).nodeKey).nodeId);
    } catch (err) {
      throw keyError(err);
    }
  });

  addHomeOption(
    tendermint
      .command('show-validator')
      .description("print this node's validator public key (from config/priv_validator_key.json)"),
  ).action((opts: HomeOpts) => {
    try {
      const key = loadValidatorKey(homePaths(homeOf(opts)).privValidatorKey);
      say(
        JSON.stringify({
          '@type': '/cosmos.crypto.ed25519.PubKey',
          key: Buffer.from(key.publicKey).toString('base64'),
        }),
      );
    } catch (err) {
      throw keyError(err);
    }
  });
}
