// bin/noded.js runs `noded start` (and `noded service`) once more with glibc's malloc variables when
// they are missing (services/noded/src/cli/malloc-env.ts). Checked on the real binary: the environment
// of the process that runs the node, signals sent to the first process reaching the node, a stop
// delivered to both at once (Ctrl-C) stopping it cleanly, and the exit code or signal coming back.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { cpSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import {
  MALLOC_ENV,
  MALLOC_OPT_OUT,
  MallocEnvError,
  mallocReexecEnv,
  runsOnGlibc,
} from '@noded/cli/src/cli/malloc-env.js';
import { removeDir, runCli, tempDir, useFreePorts } from './helpers.js';

const BIN = fileURLToPath(new URL('../../../bin/noded.js', import.meta.url));
const MALLOC_KEYS = Object.keys(MALLOC_ENV);

describe('mallocReexecEnv', () => {
  it('adds the three variables for start and service, keeps what the user set, and nothing else changes', () => {
    const env = mallocReexecEnv(['start', '--home', '/h'], { PATH: '/bin', MALLOC_ARENA_MAX: '4' }, true);
    assert.deepEqual(env, {
      PATH: '/bin',
      MALLOC_ARENA_MAX: '4',
      MALLOC_MMAP_THRESHOLD_: '131072',
      MALLOC_TRIM_THRESHOLD_: '131072',
    });
    assert.equal(mallocReexecEnv(['service', 'executor', '--home', '/h'], {}, true)?.MALLOC_ARENA_MAX, '2');
    // An empty variable is as good as none to glibc.
    assert.equal(mallocReexecEnv(['start'], { MALLOC_ARENA_MAX: '' }, true)?.MALLOC_ARENA_MAX, '2');
  });

  it('runs in place when every variable is set (the image, make local, and the child itself)', () => {
    assert.equal(mallocReexecEnv(['start'], { ...MALLOC_ENV }, true), undefined);
  });

  it('runs in place for short commands, off glibc, and with the opt-out', () => {
    for (const args of [['init', 'full'], ['status'], ['--help'], []])
      assert.equal(mallocReexecEnv(args, {}, true), undefined, args.join(' '));
    assert.equal(mallocReexecEnv(['start'], {}, false), undefined);
    assert.equal(mallocReexecEnv(['start'], { [MALLOC_OPT_OUT]: 'off' }, true), undefined);
    assert.ok(mallocReexecEnv(['start'], { [MALLOC_OPT_OUT]: 'on' }, true));
  });

  it('refuses a bad opt-out value, naming it', () => {
    assert.throws(
      () => mallocReexecEnv(['start'], { [MALLOC_OPT_OUT]: 'no' }, true),
      (e: Error) =>
        e instanceof MallocEnvError && /NODED_MALLOC_ENV must be "on" .* or "off" .*got "no"/.test(e.message),
    );
  });

  it('this machine is glibc Linux, so the process tests below exercise the second process', () => {
    assert.equal(runsOnGlibc(), true);
  });
});

const root = tempDir();
const template = join(root, 'template');
let n = 0;
before(async () => {
  const r = await runCli(['init', 'full', '--chain-id', 'chain-local', '--home', template]);
  assert.equal(r.code, 0, r.stderr);
});
after(() => removeDir(root));

/** The environment of a plain shell: no MALLOC_* variables, whatever ran the tests. */
function bareEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, NODED_RUNTIME_MODULE: '', NODED_NETWORKS_FILE: '' };
  for (const k of Object.keys(env)) if (k.startsWith('MALLOC_') || k === MALLOC_OPT_OUT) delete env[k];
  return { ...env, ...extra };
}

interface Started {
  proc: ChildProcess;
  /** The pid the node prints ("noded is running (pid N)"): the process that runs the node. */
  nodePid: number;
  output: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** `bin/noded.js start` on a fresh copy of the template home; resolves once the node says it runs. */
async function startBin(env: NodeJS.ProcessEnv, detached = false): Promise<Started> {
  const home = join(root, `home-${++n}`);
  cpSync(template, home, { recursive: true });
  await useFreePorts(home);
  const proc = spawn(process.execPath, [BIN, 'start', '--home', home], {
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached,
  });
  let out = '';
  proc.stdout?.on('data', (d) => {
    out += d;
  });
  proc.stderr?.on('data', (d) => {
    out += d;
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    proc.once('exit', (code, signal) => resolve({ code, signal })),
  );
  const deadline = Date.now() + 60_000;
  let m: RegExpExecArray | null = null;
  while (Date.now() < deadline && proc.exitCode === null && proc.signalCode === null) {
    m = /noded is running \(pid (\d+)\)/.exec(out);
    if (m) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  if (!m) {
    proc.kill('SIGKILL');
    throw new Error(`the node did not start:\n${out}`);
  }
  return { proc, nodePid: Number(m[1]), output: () => out, exited };
}

function environOf(pid: number): Record<string, string> {
  const out: Record<string, string> = {};
  for (const entry of readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0')) {
    const i = entry.indexOf('=');
    if (i > 0) out[entry.slice(0, i)] = entry.slice(i + 1);
  }
  return out;
}

function parentOf(pid: number): number {
  const m = /^PPid:\s+(\d+)$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(m?.[1]);
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Waits (bounded) for a process to be gone; a zombie counts as gone. */
async function gone(pid: number, ms = 5_000): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (!alive(pid)) return true;
    try {
      if (/^State:\s+Z/m.test(readFileSync(`/proc/${pid}/status`, 'utf8'))) return true;
    } catch {
      return true;
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return false;
}

describe('bin/noded.js start without the malloc variables', { timeout: 180_000 }, () => {
  it('runs the node in a child with the three variables; SIGTERM to the first process stops it cleanly, exit 0', async () => {
    const s = await startBin(bareEnv());
    try {
      assert.notEqual(s.nodePid, s.proc.pid, 'the node runs in a second process');
      assert.equal(parentOf(s.nodePid), s.proc.pid);
      const env = environOf(s.nodePid);
      for (const k of MALLOC_KEYS) assert.equal(env[k], MALLOC_ENV[k], k);
      s.proc.kill('SIGTERM');
      const { code, signal } = await s.exited;
      assert.equal(signal, null);
      assert.equal(code, 0, s.output());
      assert.match(s.output(), /SIGTERM received, stopping/);
      assert.doesNotMatch(s.output(), /again, exiting without waiting/);
      assert.ok(await gone(s.nodePid), 'the node process is gone');
    } finally {
      if (alive(s.nodePid)) process.kill(s.nodePid, 'SIGKILL');
      s.proc.kill('SIGKILL');
    }
  });

  it('keeps a value the user set and fills in the others', async () => {
    const s = await startBin(bareEnv({ MALLOC_ARENA_MAX: '4' }));
    try {
      const env = environOf(s.nodePid);
      assert.equal(env.MALLOC_ARENA_MAX, '4');
      assert.equal(env.MALLOC_MMAP_THRESHOLD_, '131072');
      assert.equal(env.MALLOC_TRIM_THRESHOLD_, '131072');
      s.proc.kill('SIGTERM');
      assert.equal((await s.exited).code, 0, s.output());
    } finally {
      if (alive(s.nodePid)) process.kill(s.nodePid, 'SIGKILL');
      s.proc.kill('SIGKILL');
    }
  });

  it('a SIGINT to the whole process group (Ctrl-C) reaches the node twice and still stops it cleanly', async () => {
    const s = await startBin(bareEnv(), true);
    try {
      const pgid = s.proc.pid;
      assert.ok(pgid);
      process.kill(-pgid, 'SIGINT');
      const { code, signal } = await s.exited;
      assert.equal(signal, null);
      assert.equal(code, 0, s.output());
      assert.equal(s.output().match(/SIGINT received, stopping/g)?.length, 1, s.output());
      assert.doesNotMatch(s.output(), /again, exiting without waiting/);
      assert.ok(await gone(s.nodePid));
    } finally {
      if (alive(s.nodePid)) process.kill(s.nodePid, 'SIGKILL');
      s.proc.kill('SIGKILL');
    }
  });

  it('the first process dies of the signal that killed the node', async () => {
    const s = await startBin(bareEnv());
    process.kill(s.nodePid, 'SIGKILL');
    const { code, signal } = await s.exited;
    assert.equal(signal, 'SIGKILL');
    assert.equal(code, null);
  });

  it('a SIGKILL of the first process (which cannot pass it on) still stops the node, as on SIGTERM', async () => {
    const s = await startBin(bareEnv());
    try {
      s.proc.kill('SIGKILL');
      assert.equal((await s.exited).signal, 'SIGKILL');
      assert.ok(await gone(s.nodePid, 30_000), 'the node stopped instead of running on unseen');
      // Its stdout and stderr are still this test's pipes.
      assert.match(s.output(), /SIGTERM received, stopping/);
    } finally {
      if (alive(s.nodePid)) process.kill(s.nodePid, 'SIGKILL');
    }
  });

  it("the node's exit code and error come back: start on a home without a genesis exits 1", async () => {
    const home = join(root, 'empty-home');
    const proc = spawn(process.execPath, [BIN, 'start', '--home', home], {
      env: bareEnv(),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let err = '';
    proc.stderr.on('data', (d) => {
      err += d;
    });
    const timer = setTimeout(() => proc.kill('SIGKILL'), 30_000);
    const code = await new Promise<number | null>((resolve) => proc.once('exit', (c) => resolve(c)));
    clearTimeout(timer);
    assert.equal(code, 1, err);
    assert.match(err, /^noded: /m);
    assert.ok(err.includes(home), err);
  });

  it('NODED_MALLOC_ENV=off runs the node in the first process, environment untouched', async () => {
    const s = await startBin(bareEnv({ [MALLOC_OPT_OUT]: 'off' }));
    try {
      assert.equal(s.nodePid, s.proc.pid);
      const env = environOf(s.nodePid);
      for (const k of MALLOC_KEYS) assert.equal(env[k], undefined, k);
      s.proc.kill('SIGTERM');
      assert.equal((await s.exited).code, 0, s.output());
    } finally {
      s.proc.kill('SIGKILL');
    }
  });

  it('a bad NODED_MALLOC_ENV stops before anything starts, naming the value', async () => {
    const home = join(root, `home-${++n}`);
    cpSync(template, home, { recursive: true });
    const proc = spawn(process.execPath, [BIN, 'start', '--home', home], {
      env: bareEnv({ [MALLOC_OPT_OUT]: 'yes' }),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    proc.stdout.on('data', (d) => {
      out += d;
    });
    proc.stderr.on('data', (d) => {
      out += d;
    });
    const timer = setTimeout(() => proc.kill('SIGKILL'), 30_000);
    const code = await new Promise<number | null>((resolve) => proc.once('exit', (c) => resolve(c)));
    clearTimeout(timer);
    assert.equal(code, 1);
    assert.match(out, /noded: NODED_MALLOC_ENV must be "on" .* got "yes"/);
    assert.doesNotMatch(out, /running/);
  });
});
