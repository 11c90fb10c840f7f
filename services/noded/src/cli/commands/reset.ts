// `unsafe-reset-all` and `tendermint unsafe-reset-all`: delete all blockchain data under data/ and reset
// the double-sign guard to height 0; config/ and the keys are never touched.
import { existsSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { relative } from 'node:path';
import { createInterface } from 'node:readline/promises';
import {
  describeServices,
  homeLockHolder,
  homePaths,
  homeServices,
  initialValidatorStateJson,
} from '@noded/config';
import type { Command } from 'commander';
import { addHomeOption, CliError, type HomeOpts, homeOf, requireHome, say } from '../util.js';

interface ResetOpts extends HomeOpts {
  yes?: boolean;
}

async function confirm(data: string): Promise<boolean> {
  const rl = createInterface({ input: process.stdin, output: process.stdout });
  try {
    const answer = await rl.question(
      `This deletes ALL blockchain data under ${data}. Type "yes" to continue: `,
    );
    return answer.trim() === 'yes';
  } finally {
    rl.close();
  }
}

async function runReset(opts: ResetOpts): Promise<void> {
  const home = homeOf(opts);
  requireHome(home);
  const paths = homePaths(home);
  const holder = homeLockHolder(home);
  if (holder !== undefined) {
    throw new CliError(
      `${paths.pidFile}: a node (pid ${holder}) is running on this home; stop it first (nothing was removed)`,
    );
  }
  const services = homeServices(home);
  if (services.length > 0) {
    throw new CliError(
      `${paths.servicesDir}: cluster services are running on this home (${describeServices(services)}); stop them first (nothing was removed)`,
    );
  }
  if (!opts.yes) {
    if (!process.stdin.isTTY || !process.stdout.isTTY) {
      throw new CliError(
        'this deletes all blockchain data: pass --yes (no terminal to confirm on; nothing was removed)',
      );
    }
    if (!(await confirm(paths.data))) throw new CliError('not confirmed; nothing was removed');
  }
  const keep = 'priv_validator_state.json';
  const entries = existsSync(paths.data)
    ? readdirSync(paths.data)
        .filter((e) => e !== keep)
        .sort()
    : [];
  for (const e of entries) rmSync(`${paths.data}/${e}`, { recursive: true, force: true });
  writeFileSync(paths.privValidatorState, initialValidatorStateJson(), { mode: 0o600 });
  const rel = (p: string) => relative(home, p);
  if (entries.length === 0) say(`nothing to remove under ${rel(paths.data)}/`);
  for (const e of entries) say(`removed ${rel(paths.data)}/${e}`);
  say(`reset ${rel(paths.privValidatorState)} to height 0`);
  say(`kept ${rel(paths.config)}/ (configuration and keys)`);
}

function resetCommand(parent: Command): void {
  addHomeOption(
    parent
      .command('unsafe-reset-all')
      .description(
        'delete all blockchain data under <home>/data and reset the validator state; keeps config/',
      )
      .option('-y, --yes', 'do not ask for confirmation'),
  ).action((opts: ResetOpts) => runReset(opts));
}

export function registerReset(program: Command, tendermint: Command): void {
  resetCommand(program);
  resetCommand(tendermint);
}
