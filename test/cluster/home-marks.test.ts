// The marks cluster services leave on a home (data/services/), judged from another process as a
// home shared by containers or machines needs: a real `noded service metrics` (it opens nothing
// under data/) marks the home with its host, boot ID and process start, and keeps the mark fresh;
// `noded unsafe-reset-all` and `noded start` refuse beside it. A mark written by another container
// is judged by its heartbeat, not by its pid (a pid of another container can be alive here: every
// container's first process is pid 1): stale after 30 s, live while fresh (named with its host). A
// mark of this host whose pid now belongs to another process (a restarted container's pid 1) is
// stale. A mark left by kill -9 is stale on the same host, and the reset removes it.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import {
  chmodSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { bootId, HOME_MARK_STALE_MS, homePaths, homeServices, processStartTicks } from '@noded/config';
import { initLocalHome, runCli } from '../e2e/harness.js';
import { spawnService, waitForService } from './processes.js';

const cleanups: Array<() => unknown> = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

const TARGETS = 'executor=127.0.0.1:1,consensus=127.0.0.1:1,state-store=127.0.0.1:1,rpc-edge=127.0.0.1:1';

/** Writes a mark as another process would, with its mtime `ageMs` in the past. */
function writeMark(home: string, name: string, mark: Record<string, unknown>, ageMs: number): string {
  const dir = homePaths(home).servicesDir;
  mkdirSync(dir, { recursive: true });
  const file = join(dir, name);
  writeFileSync(file, `${JSON.stringify(mark)}\n`);
  const t = new Date(Date.now() - ageMs);
  utimesSync(file, t, t);
  return file;
}

const reset = (home: string) => runCli(['unsafe-reset-all', '--yes', '--home', home]);

describe('home marks of cluster services', { timeout: 420_000 }, () => {
  it('record host, boot and start; a heartbeat keeps them fresh; marks of other containers and reused pids are judged right', async () => {
    const { home } = await initLocalHome();
    cleanups.push(() => rmSync(home, { recursive: true, force: true }));
    const dir = homePaths(home).servicesDir;

    // ---- a running service's mark --------------------------------------------------------------
    const svc = spawnService('metrics', home, { NODED_METRICS_TARGETS: TARGETS });
    cleanups.push(() => svc.stop('SIGKILL'));
    await waitForService(svc, /noded service metrics is running/, 60_000);
    const pid = svc.proc.pid!;
    const names = readdirSync(dir);
    assert.equal(names.length, 1);
    assert.match(names[0]!, new RegExp(`^metrics\\.${pid}\\.[0-9a-f]{8}$`));
    const markFile = join(dir, names[0]!);
    const mark = JSON.parse(readFileSync(markFile, 'utf8'));
    assert.deepEqual(mark, {
      service: 'metrics',
      pid,
      host: hostname(),
      bootId: bootId(),
      startTicks: processStartTicks(pid),
    });
    assert.match(mark.bootId, /^[0-9a-f-]{36}$/);
    assert.match(mark.startTicks, /^\d+$/);
    // Its heartbeat: the mtime moves (every 5 s), even when set back by hand.
    const old = new Date(Date.now() - 120_000);
    utimesSync(markFile, old, old);
    const deadline = Date.now() + 12_000;
    while (statSync(markFile).mtimeMs < Date.now() - 60_000 && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 250));
    assert.ok(statSync(markFile).mtimeMs > Date.now() - 10_000, 'the running service refreshed its mark');
    const refused = reset(home);
    assert.equal(refused.code, 1);
    assert.match(
      refused.stderr,
      new RegExp(
        `data/services: cluster services are running on this home \\(metrics pid ${pid}\\); stop them first \\(nothing was removed\\)`,
      ),
    );

    // ---- kill -9: the mark stays, and is stale on this host ------------------------------------
    svc.proc.kill('SIGKILL');
    await svc.exited;
    assert.deepEqual(readdirSync(dir), names, 'kill -9 leaves the mark');
    assert.deepEqual(homeServices(home), []);

    // ---- a mark of another container, whose pid is alive here (this test's own) ----------------
    const foreign = {
      service: 'executor',
      pid: process.pid,
      host: 'f00dcafe1234',
      bootId: bootId(),
      startTicks: processStartTicks(process.pid),
    };
    // fresh heartbeat: live, named with its host (its pid means nothing here)
    const foreignFile = writeMark(home, `executor.${process.pid}.0badf00d`, foreign, 2_000);
    assert.deepEqual(homeServices(home), [{ service: 'executor', pid: process.pid, host: 'f00dcafe1234' }]);
    const r1 = reset(home);
    assert.equal(r1.code, 1);
    assert.match(r1.stderr, new RegExp(`\\(executor pid ${process.pid} on host f00dcafe1234\\)`));
    const start = runCli(['start', '--home', home]);
    assert.equal(start.code, 1);
    assert.match(
      start.stderr,
      new RegExp(
        `cluster services are running on this home \\(executor pid ${process.pid} on host f00dcafe1234\\); stop them before "noded start"`,
      ),
    );
    // no heartbeat for longer than the stale bound: the container is gone, although pid ${process.pid} lives here
    const t = new Date(Date.now() - HOME_MARK_STALE_MS - 5_000);
    utimesSync(foreignFile, t, t);
    assert.deepEqual(homeServices(home), []);

    // ---- a mark of this host whose pid now runs another process (a restarted container's pid 1) ---
    writeMark(
      home,
      `consensus.${process.pid}.12345678`,
      { ...foreign, service: 'consensus', host: hostname(), startTicks: '1' },
      0,
    );
    assert.deepEqual(homeServices(home), [], 'a reused pid is not the marked process');
    // the same pid with its own start tick is the marked process
    writeMark(
      home,
      `consensus.${process.pid}.87654321`,
      { ...foreign, service: 'consensus', host: hostname() },
      600_000,
    );
    assert.deepEqual(homeServices(home), [{ service: 'consensus', pid: process.pid }]);
    rmSync(join(dir, `consensus.${process.pid}.87654321`));

    // ---- every mark left is stale: the reset goes ahead and removes them --------------------------
    const ok = reset(home);
    assert.equal(ok.code, 0, ok.stderr);
    assert.match(ok.stdout, /removed data\/services/);
  });

  it('a service on a read-only home runs and says it is not marked', async (t) => {
    const { home } = await initLocalHome();
    cleanups.push(() => rmSync(home, { recursive: true, force: true }));
    const dir = homePaths(home).servicesDir;
    mkdirSync(dir, { recursive: true });
    // Read-only as an rpc-edge's container mounts the home: an unwritable directory for a user, a
    // read-only bind mount for root (whom permissions do not stop).
    if (process.getuid?.() === 0) {
      const bind = spawnSync('mount', ['--bind', dir, dir]);
      const ro = bind.status === 0 ? spawnSync('mount', ['-o', 'remount,ro,bind', dir]) : bind;
      if (ro.status !== 0) {
        spawnSync('umount', [dir]);
        t.skip(`root without mount(8) here: ${String(ro.stderr).trim()}`);
        return;
      }
      cleanups.push(() => spawnSync('umount', [dir]));
    } else {
      chmodSync(dir, 0o555);
      cleanups.push(() => chmodSync(dir, 0o755));
    }
    const svc = spawnService('metrics', home, { NODED_METRICS_TARGETS: TARGETS });
    cleanups.push(() => svc.stop('SIGKILL'));
    await waitForService(svc, /noded service metrics is running/, 60_000);
    assert.match(
      svc.output(),
      /data\/services: the home is read-only here; this metrics is not marked on it/,
    );
    assert.deepEqual(readdirSync(dir), []);
    assert.equal(await svc.stop(), 0, svc.output());
  });
});
