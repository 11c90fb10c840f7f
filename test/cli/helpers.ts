// Runs the real `noded` CLI (the compiled main.js next to this compiled test) as a child process.
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const MAIN = fileURLToPath(new URL('../../services/noded/src/cli/main.js', import.meta.url));

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export interface RunOptions {
  env?: Record<string, string>;
  input?: string;
  timeoutMs?: number;
}

/** Runs `noded <args>`; kills it after timeoutMs (default 20 s) so a hang fails instead of blocking. */
export function runCli(args: string[], opts: RunOptions = {}): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [MAIN, ...args], {
      // A command that forgot --home must not touch the real ~/.noded.
      env: {
        ...process.env,
        NODED_HOME: join(tmpdir(), `noded-test-no-home-${process.pid}`),
        NODED_RUNTIME_MODULE: '',
        NODED_NETWORKS_FILE: '',
        ...opts.env,
      },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => {
      stdout += d;
    });
    child.stderr.on('data', (d) => {
      stderr += d;
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 20_000);
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
    child.stdin.end(opts.input ?? '');
  });
}

export function tempDir(prefix = 'noded-test-'): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

export function removeDir(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
}

/** path -> sha256 of content (or "dir") of every entry under `dir`, for "nothing changed" checks. */
export function snapshot(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (d: string) => {
    let names: string[];
    try {
      names = readdirSync(d);
    } catch {
      return;
    }
    for (const name of names.sort()) {
      const p = join(d, name);
      if (statSync(p).isDirectory()) {
        out[p] = 'dir';
        walk(p);
      } else out[p] = createHash('sha256').update(readFileSync(p)).digest('hex');
    }
  };
  walk(dir);
  return out;
}

import { freePorts } from '../ports.js';

export { freePorts };

/** Points every listener of an initialised home at free 127.0.0.1 ports (the defaults may be taken). */
export async function useFreePorts(home: string): Promise<Record<string, number>> {
  const [p2p, rpc, api, evmHttp, evmWs, metrics] = (await freePorts(6)) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  const cfg = join(home, 'config', 'config.toml');
  const app = join(home, 'config', 'app.toml');
  const replaceAll = (text: string, pairs: Array<[string, string]>) =>
    pairs.reduce((t, [from, to]) => {
      if (!t.includes(from)) throw new Error(`useFreePorts: ${from} not found in the rendered file`);
      return t.replace(from, to);
    }, text);
  writeFileSync(
    cfg,
    replaceAll(readFileSync(cfg, 'utf8'), [
      ['laddr = "tcp://0.0.0.0:26656"', `laddr = "tcp://127.0.0.1:${p2p}"`],
      ['laddr = "tcp://127.0.0.1:26657"', `laddr = "tcp://127.0.0.1:${rpc}"`],
      ['prometheus_listen_addr = ":26660"', `prometheus_listen_addr = "127.0.0.1:${metrics}"`],
    ]),
  );
  writeFileSync(
    app,
    replaceAll(readFileSync(app, 'utf8'), [
      ['address = "tcp://0.0.0.0:1317"', `address = "tcp://127.0.0.1:${api}"`],
      ['api_address = "0.0.0.0:1317"', `api_address = "127.0.0.1:${api}"`],
      ['rpc_address = "0.0.0.0:8545"', `rpc_address = "127.0.0.1:${evmHttp}"`],
      ['ws_address = "0.0.0.0:8546"', `ws_address = "127.0.0.1:${evmWs}"`],
    ]),
  );
  return { p2p, rpc, api, evmHttp, evmWs, metrics };
}
