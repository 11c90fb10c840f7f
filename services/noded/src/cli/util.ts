// Shared pieces of the CLI: the --home option, errors that end a command with exit code 1, and
// printing problem lists in the one style (`<file>: <key>: <rule>, got <value>`).
import { accessSync, constants, existsSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { type ConfigProblem, defaultHome, formatProblem } from '@noded/config';
import type { Command } from 'commander';

/** Ends the command: `noded: <message>` (and any detail lines) on stderr, exit code 1. */
export class CliError extends Error {
  readonly code = 'CLI_ERROR';
  constructor(
    message: string,
    readonly details: string[] = [],
  ) {
    super(message);
    this.name = 'CliError';
  }
}

/** A command that found problems in the operator's files: every one is printed. */
export function problemsError(what: string, problems: ConfigProblem[]): CliError {
  const n = problems.length;
  return new CliError(`${what}: ${n} problem${n === 1 ? '' : 's'}`, problems.map(formatProblem));
}

export interface HomeOpts {
  home?: string;
}

export function addHomeOption(cmd: Command): Command {
  return cmd.option('--home <dir>', 'node home directory (default: $NODED_HOME or ~/.noded)');
}

export function homeOf(opts: HomeOpts): string {
  return opts.home !== undefined && opts.home !== '' ? resolve(opts.home) : defaultHome();
}

/** Refuses a home that `noded init` has not created. */
export function requireHome(home: string): void {
  if (!existsSync(resolve(home, 'config'))) {
    throw new CliError(
      `no node home at ${home} (no config/ directory); run "noded init" first or pass --home`,
    );
  }
}

/** Whether a file could be created at `path`: its nearest existing ancestor is a writable directory. */
export function canCreate(path: string): string | undefined {
  let dir = dirname(path);
  while (!existsSync(dir)) {
    const up = dirname(dir);
    if (up === dir) break;
    dir = up;
  }
  try {
    if (!statSync(dir).isDirectory()) return `${dir} is not a directory`;
    accessSync(dir, constants.W_OK);
    return undefined;
  } catch {
    return `${dir} is not writable`;
  }
}

export function say(line = ''): void {
  console.log(line);
}

/** Two aligned columns. */
export function table(rows: Array<[string, string]>, indent = '  '): string[] {
  const w = Math.max(0, ...rows.map(([k]) => k.length));
  return rows.map(([k, v]) => `${indent}${k.padEnd(w)}  ${v}`);
}

/** Parses a positive integer flag value, or throws a CliError naming the flag. */
export function positiveInt(flag: string, text: string): number {
  if (!/^[1-9]\d*$/.test(text) || !Number.isSafeInteger(Number(text))) {
    throw new CliError(`${flag}: must be a positive integer, got ${JSON.stringify(text)}`);
  }
  return Number(text);
}
