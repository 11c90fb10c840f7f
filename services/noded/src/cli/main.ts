// The `noded` command line (bin/noded.js imports the compiled form of this file).
import { Command } from 'commander';
import { registerFileCommands } from './commands/files.js';
import { packageVersion, registerInfo } from './commands/info.js';
import { registerInit } from './commands/init.js';
import { registerLogs } from './commands/logs.js';
import { registerQueries } from './commands/query.js';
import { registerReset } from './commands/reset.js';
import { registerService } from './commands/service.js';
import { registerStart } from './commands/start.js';
import { registerTestnet } from './commands/testnet.js';
import { CliError } from './util.js';

export function buildProgram(): Command {
  const program = new Command('noded')
    .description('node of a Bitcoin-first, EVM-compatible chain with BFT finality')
    .version(packageVersion(), '-v, --version', 'print the version')
    .showHelpAfterError('(add --help for usage)')
    .configureHelp({ sortSubcommands: false });
  const tendermint = new Command('tendermint').description('CometBFT node commands: ids, keys, peers, reset');

  registerInit(program);
  registerTestnet(program);
  registerStart(program);
  registerService(program);
  registerQueries(program, tendermint);
  registerLogs(program);
  registerFileCommands(program, tendermint);
  registerReset(program, tendermint);
  program.addCommand(tendermint);
  registerInfo(program);
  return program;
}

try {
  await buildProgram().parseAsync(process.argv);
} catch (err) {
  if (err instanceof CliError) {
    console.error(`noded: ${err.message}`);
    for (const line of err.details) console.error(`  ${line}`);
  } else {
    console.error(`noded: unexpected error: ${(err as Error).stack ?? String(err)}`);
  }
  process.exitCode = 1;
}
