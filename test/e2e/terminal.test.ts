// A developer's terminal: `noded start` under a pseudo-terminal (util-linux `script`) prints the
// accounts once, each transaction's hash, gas used and status and its block as anvil does, a
// progress line every 10 s, and no JSON log lines (the log goes to the file).
import assert from 'node:assert/strict';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { JsonRpcProvider, Wallet } from 'ethers';
import { CLI, DEV_KEYS, initLocalHome, type NodePorts } from './harness.js';

const hasScript = spawnSync('script', ['--version'], { encoding: 'utf8' }).status === 0;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until(what: string, ok: () => boolean | Promise<boolean>, ms: number): Promise<void> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await ok()) return;
    await sleep(200);
  }
  throw new Error(`timed out waiting for ${what}`);
}

describe('noded start on a terminal', { timeout: 420_000 }, () => {
  let home: string;
  let ports: NodePorts;
  let proc: ChildProcess | undefined;
  let out = '';

  before(async () => {
    assert.ok(hasScript, 'util-linux script is needed to give the node a terminal');
    ({ home, ports } = await initLocalHome());
    // script runs the command on a new pseudo-terminal and copies what it prints to its stdout.
    proc = spawn('script', ['-qfec', `${process.execPath} ${CLI} start --home ${home}`, '/dev/null'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    proc.stdout?.on('data', (d) => {
      out += d;
    });
    proc.stderr?.on('data', (d) => {
      out += d;
    });
    await until('the node to run', () => /noded is running \(pid \d+\)/.test(out), 60_000);
  });

  after(async () => {
    // Stop the node itself (its pid file), then the script around it.
    const pidFile = join(home, 'data', 'noded.pid');
    if (existsSync(pidFile)) {
      const pid = Number(readFileSync(pidFile, 'utf8').trim());
      if (pid > 0) {
        try {
          process.kill(pid, 'SIGTERM');
          await until('the node to stop', () => !existsSync(pidFile), 20_000);
        } catch {
          // already gone
        }
      }
    }
    if (proc && proc.exitCode === null) proc.kill('SIGTERM');
    rmSync(home, { recursive: true, force: true });
  });

  it('prints the accounts once, transactions as anvil does, progress lines, and no JSON', async () => {
    const provider = new JsonRpcProvider(`http://127.0.0.1:${ports.evmHttp}`, undefined, {
      staticNetwork: true,
      cacheTimeout: -1,
      pollingInterval: 50,
    });
    try {
      const wallet = new Wallet(DEV_KEYS[1], provider);
      const tx = await wallet.sendTransaction({ to: Wallet.createRandom().address, value: 1n });
      const receipt = await tx.wait(1, 20_000);
      await until('the transaction on the terminal', () => out.includes(`Transaction: ${tx.hash}`), 20_000);
      const at = out.indexOf(`Transaction: ${tx.hash}`);
      const block = out.slice(at, at + 400);
      assert.match(block, /Gas used: 21000\r?\n\s+Status: success/);
      assert.match(block, new RegExp(`Block Number: ${receipt!.blockNumber}\\r?\\n`));
      assert.match(block, /Block Time: "\w{3}, \d{2} \w{3} \d{4} \d{2}:\d{2}:\d{2} \+0000"/);
      await until(
        'a progress line',
        () => /height \d+ {2}\d+ blocks?, \d+ transactions? in the last 10 s/.test(out),
        15_000,
      );
      assert.equal(out.split('Account #0:').length - 1, 1, 'the accounts are printed once');
      assert.doesNotMatch(out, /"level":/, 'no JSON log lines on a terminal');
      assert.doesNotMatch(out, /committed block/, 'per-block log lines stay in the log file');
    } finally {
      provider.destroy();
    }
  });
});
