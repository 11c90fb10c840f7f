// The sequential loop as a developer runs it (workload `cast`): `cast send` after `cast send`, each a
// fresh process of Foundry's CLI that asks the node for the chain id, nonce, fees and gas, sends the
// signed transaction and polls for its receipt, exactly as a shell script or a deploy script does.
// Process start-up is in every figure, for every node alike; what differs is the node.
import { execFile } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import type { LatencySummary } from './stats.js';
import { summarize } from './stats.js';

export interface CastLoopResult {
  sends: number;
  elapsedMs: number;
  /** One `cast send` (process start to exit, receipt in hand). */
  sendMs: LatencySummary;
}

/** The receiver of every cast transfer (no key needed). */
const CAST_RECEIVER = '0x000000000000000000000000000000000000dEaD';

function castSend(bin: string, url: string, key: string): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile(
      bin,
      ['send', '--private-key', key, '--rpc-url', url, CAST_RECEIVER, '--value', '1', '--timeout', '60'],
      { timeout: 90_000, env: { ...process.env, NO_COLOR: '1', FOUNDRY_DISABLE_NIGHTLY_WARNING: '1' } },
      (err, stdout, stderr) => {
        if (err) {
          reject(
            new Error(`cast send: ${err.message.split('\n')[0]}: ${(stderr || stdout).trim().slice(-500)}`),
          );
          return;
        }
        // cast prints the receipt; a reverted transfer is a failed measurement, not a slow one.
        if (!/status\s+1 \(success\)/.test(stdout)) {
          reject(new Error(`cast send: no successful receipt in its output: ${stdout.trim().slice(-500)}`));
          return;
        }
        resolve();
      },
    );
  });
}

/** `n` cast sends from `key` (hex private key), one after the other. */
export async function castLoop(bin: string, url: string, key: string, n: number): Promise<CastLoopResult> {
  const each: number[] = [];
  const t0 = performance.now();
  for (let i = 0; i < n; i++) {
    const s = performance.now();
    await castSend(bin, url, key);
    each.push(performance.now() - s);
  }
  return { sends: n, elapsedMs: performance.now() - t0, sendMs: summarize(each) };
}
