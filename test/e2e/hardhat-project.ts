// A throwaway Hardhat 2 project against a noded node, shared by the Hardhat e2e tests that bring
// their contracts precompiled (`hardhat test --no-compile`): the config, the project files, and
// running Hardhat's CLI from the repository's node_modules with a bounded time.
import { spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DEV_KEYS, repoRoot } from './harness.js';

/** hardhat.config.cjs: the node as the default network, two dev accounts signing locally. */
export function hardhatConfig(url: string): string {
  return `
require('@nomicfoundation/hardhat-ethers');
module.exports = {
  solidity: '0.8.20',
  defaultNetwork: 'noded',
  networks: { noded: { url: ${JSON.stringify(url)}, chainId: 31337, accounts: ${JSON.stringify(DEV_KEYS.slice(0, 2))} } },
  mocha: { timeout: 120000 },
};
`;
}

/** Writes the project: its config, package.json and `files` (relative path -> text). */
export function writeHardhatProject(dir: string, url: string, files: Record<string, string>): void {
  mkdirSync(join(dir, 'test'), { recursive: true });
  writeFileSync(join(dir, 'hardhat.config.cjs'), hardhatConfig(url));
  writeFileSync(join(dir, 'package.json'), '{"name":"hh-e2e-project","private":true}');
  for (const [path, text] of Object.entries(files)) writeFileSync(join(dir, path), text);
}

/** Runs Hardhat's CLI in `cwd`; killed after 150 s. */
export function runHardhat(cwd: string, args: string[]): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const cli = join(repoRoot(), 'node_modules', 'hardhat', 'internal', 'cli', 'cli.js');
    const p = spawn(process.execPath, [cli, ...args], {
      cwd,
      env: { ...process.env, HARDHAT_DISABLE_TELEMETRY_PROMPT: 'true', CI: 'true' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    p.stdout.on('data', (d) => {
      out += d;
    });
    p.stderr.on('data', (d) => {
      out += d;
    });
    const timer = setTimeout(() => p.kill('SIGKILL'), 150_000);
    p.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, out });
    });
  });
}
