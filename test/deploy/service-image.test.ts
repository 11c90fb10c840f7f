// Per-service images (issue 22, "Layout"): the Dockerfile's `service` stage, proven without a container
// runtime. For each service, the stage's instructions run as processes in a temporary directory that
// stands for the image's /opt/noded: COPY from the build context copies from the repository, each RUN
// runs its exact command with `sh -c` and the stage's ARG and ENV in the environment (npm answered from
// this machine's cache: npm_config_offline, which does not change the command; and `npm cache clean`,
// which in an image empties the image's own cache, is skipped here by an `npm` first on the PATH that
// passes every other command to npm: it would empty the machine's shared cache), the build stage's
// dist/ mount is this build's dist/, and the absolute paths /opt/noded and /usr/local/bin are mapped
// into the directory. Only the RUN that creates /data and /nats-auth and gives them to the image's
// `node` user is not run (no such user or root directories here). Then the six services run, each
// from its own directory through its `noded-service` link (the image's ENTRYPOINT), against a real
// nats-server, and the chain makes blocks that an rpc-edge serves and the metrics service reports
// ready. The sizes of the closures against the full production install are in docs/deploy.md.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  statfsSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { removeDir } from '../cli/helpers.js';
import { startNatsServer } from '../cluster/nats.js';
import { comet, until } from '../cluster/processes.js';
import { freePort, initLocalHome, repoRoot } from '../e2e/harness.js';
import { type Instruction, parseDockerfile } from './dockerfile-rules.js';

const root = repoRoot();
/** The dist/ this test runs from: what the build stage's `npm run build` made. */
const dist = fileURLToPath(new URL('../..', import.meta.url));
const SERVICES = ['executor', 'p2p-gateway', 'consensus', 'state-store', 'rpc-edge', 'metrics'] as const;
type Service = (typeof SERVICES)[number];

const cleanups: Array<() => Promise<void> | void> = [];
/**
 * Where the images' directories go: a tmpfs (/dev/shm) when the machine has one that allows
 * executables (the entry point and RocksDB's native module run from there) with 4 GiB free, else the
 * temporary directory. Each install writes 30,000-57,000 files; in memory, writing them and
 * removing them costs no journal.
 */
function imageRoot(): string {
  try {
    const shm = readFileSync('/proc/mounts', 'utf8')
      .split('\n')
      .map((l) => l.split(' '))
      .find((f) => f[1] === '/dev/shm');
    const s = statfsSync('/dev/shm');
    if (shm?.[2] === 'tmpfs' && !shm[3]!.split(',').includes('noexec') && s.bavail * s.bsize >= 4 * 2 ** 30)
      return '/dev/shm';
  } catch {}
  return tmpdir();
}
const IMAGE_ROOT = imageRoot();
/** The images' directories, removed at the end all at once (one `rm` each). */
const imageDirs: string[] = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
  await Promise.all(
    imageDirs.map(
      (d) =>
        new Promise<void>((resolve) => {
          const rm = spawn('rm', ['-rf', d], { stdio: 'ignore' });
          rm.once('exit', () => resolve());
          rm.once('error', () => {
            removeDir(d);
            resolve();
          });
        }),
    ),
  );
});

/** The instructions of the stage named `name` (FROM ... AS name), without the FROM. */
function stage(text: string, name: string): Instruction[] {
  const all = parseDockerfile(text);
  const at = all.findIndex((i) => i.keyword === 'FROM' && new RegExp(`\\bAS ${name}$`, 'i').test(i.args));
  assert.ok(at >= 0, `no stage ${name}`);
  const end = all.findIndex((i, n) => n > at && i.keyword === 'FROM');
  return all.slice(at + 1, end < 0 ? undefined : end);
}

/** KEY=value pairs of an ENV or ARG instruction (ARG without a default: undefined). */
function assignments(args: string): Array<[string, string | undefined]> {
  return [...args.matchAll(/([A-Za-z_][A-Za-z0-9_]*)(?:=("[^"]*"|\S*))?/g)].map((m) => [
    m[1]!,
    m[2]?.replace(/^"|"$/g, ''),
  ]);
}

const SYSTEM_SETUP = /\bchown\b/;

/** Runs `sh -c cmd` in `cwd`; resolves with its output, rejects with it on a non-zero exit. */
function sh(cmd: string, cwd: string, env: NodeJS.ProcessEnv, ms = 300_000): Promise<string> {
  return new Promise((resolve, reject) => {
    const p = spawn('sh', ['-c', cmd], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    p.stdout.on('data', (d) => {
      out += d;
    });
    p.stderr.on('data', (d) => {
      out += d;
    });
    const timer = setTimeout(() => p.kill('SIGKILL'), ms);
    p.once('exit', (code, signal) => {
      clearTimeout(timer);
      if (code === 0) resolve(out);
      else reject(new Error(`\`${cmd}\` exited ${code ?? signal}:\n${out.slice(-3000)}`));
    });
  });
}

interface BuiltImage {
  dir: string;
  /** The ENTRYPOINT's `noded-service`, the link the stage made (mapped /usr/local/bin). */
  entry: string;
  /** What each RUN printed. */
  log: string;
  /** The stage's ENV, which the image's processes get. */
  env: Record<string, string>;
}

/** The `service` stage for `service`, run as described at the top, in a new directory. */
async function buildServiceImage(text: string, service: Service): Promise<BuiltImage> {
  const dir = mkdtempSync(join(IMAGE_ROOT, `noded-svcimage-${service}-`));
  imageDirs.push(dir);
  const binDir = join(dir, '.usr-local-bin');
  mkdirSync(binDir, { recursive: true });
  const map = (s: string) =>
    s
      .replaceAll('/opt/noded', dir)
      .replaceAll('/usr/local/bin', binDir)
      .replaceAll('/mnt/dist', dist.replace(/\/$/, ''));
  // npm as the stage runs it, except `npm cache clean` (see the top of the file).
  const shim = join(dir, '.npm-shim');
  mkdirSync(shim);
  const npm = spawnSync('sh', ['-c', 'command -v npm'], { encoding: 'utf8' }).stdout.trim();
  assert.ok(npm !== '', 'npm is not on the PATH');
  writeFileSync(
    join(shim, 'npm'),
    `#!/bin/sh\nif [ "$1" = cache ] && [ "$2" = clean ]; then echo "npm cache clean: skipped (the machine's shared cache)"; exit 0; fi\nexec ${JSON.stringify(npm)} "$@"\n`,
    { mode: 0o755 },
  );
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    PATH: `${shim}:${process.env.PATH}`,
    npm_config_offline: 'true',
    SERVICE: service,
  };
  const imageEnv: Record<string, string> = {};
  let log = '';
  for (const i of stage(text, 'service')) {
    if (i.keyword === 'ARG' || i.keyword === 'ENV') {
      for (const [k, v] of assignments(i.args)) {
        if (v === undefined || k === 'SERVICE') continue;
        env[k] = v;
        if (i.keyword === 'ENV') imageEnv[k] = v;
      }
    } else if (i.keyword === 'WORKDIR') {
      assert.equal(i.args, '/opt/noded');
    } else if (i.keyword === 'COPY') {
      const words = i.args.split(' ');
      assert.ok(
        !words.some((w) => w.startsWith('--from=')),
        `line ${i.line}: the stage copies from another stage`,
      );
      const [dest, ...srcs] = words.reverse();
      for (const src of srcs) {
        const to = dest === './' ? join(dir, src) : join(dir, dest!);
        mkdirSync(dirname(to), { recursive: true });
        cpSync(join(root, src), to, { recursive: true });
      }
    } else if (i.keyword === 'RUN') {
      if (SYSTEM_SETUP.test(i.args)) continue;
      const cmd = map(i.args.replace(/^--mount=\S+\s+/, ''));
      log += await sh(cmd, dir, env);
    }
  }
  return { dir, entry: join(binDir, 'noded-service'), log, env: imageEnv };
}

/**
 * Runs at most `n` of `jobs` at once (the machine has two cores and one npm cache). After a failure
 * no new job starts, the running ones finish, and the first error is thrown.
 */
async function inPool<T>(n: number, jobs: Array<() => Promise<T>>): Promise<T[]> {
  const out: T[] = new Array(jobs.length);
  let next = 0;
  let failed: unknown;
  await Promise.all(
    Array.from({ length: n }, async () => {
      while (next < jobs.length && failed === undefined) {
        const k = next++;
        try {
          out[k] = await jobs[k]!();
        } catch (err) {
          failed ??= err;
        }
      }
    }),
  );
  if (failed !== undefined) throw failed;
  return out;
}

/** Every compiled .js file under `dir`. */
function jsFiles(dir: string, out: string[] = []): string[] {
  for (const e of readdirSync(dir)) {
    const p = join(dir, e);
    if (statSync(p).isDirectory()) jsFiles(p, out);
    else if (p.endsWith('.js')) out.push(p);
  }
  return out;
}

/** The packages a compiled file loads: bare specifiers of import, export-from, import() and require(). */
function loadedPackages(js: string): Set<string> {
  const out = new Set<string>();
  const re = /(?:\bfrom\s*|\bimport\s*\(\s*|\brequire\s*\(\s*|^\s*import\s+)(['"])([^'"\n]+)\1/gm;
  for (const m of js.matchAll(re)) {
    const spec = m[2]!;
    // A module name (npm's rules); other quoted text after `from` is prose in a string.
    if (!/^(@[a-z0-9][\w.-]*\/)?[a-z][\w.-]*(\/[\w./-]*)?$/.test(spec) || spec.startsWith('node:')) continue;
    const parts = spec.split('/');
    out.add(spec.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0]!);
  }
  return out;
}

describe('per-service images', () => {
  const dockerfile = readFileSync(join(root, 'Dockerfile'), 'utf8');

  it('each service package names its own entry point, and the compiled files load only what its package.json lists', () => {
    const builtins = new Set(
      spawnSync(process.execPath, ['-p', 'require("node:module").builtinModules.join(" ")'], {
        encoding: 'utf8',
      })
        .stdout.trim()
        .split(' '),
    );
    for (const group of ['libs', 'services']) {
      for (const d of readdirSync(join(root, group)).sort()) {
        const manifestPath = join(root, group, d, 'package.json');
        if (!existsSync(manifestPath)) continue;
        const m = JSON.parse(readFileSync(manifestPath, 'utf8')) as {
          name: string;
          bin?: Record<string, string>;
          dependencies?: Record<string, string>;
        };
        if (group === 'services' && (SERVICES as readonly string[]).includes(d)) {
          assert.deepEqual(m.bin, { [`noded-${d}`]: './src/main.js' }, `${m.name}: bin`);
          assert.ok(
            existsSync(join(dist, group, d, 'src', 'main.js')),
            `${group}/${d}/src/main.js not built`,
          );
        }
        const declared = new Set(Object.keys(m.dependencies ?? {}));
        const missing: string[] = [];
        for (const f of jsFiles(join(dist, group, d))) {
          for (const p of loadedPackages(readFileSync(f, 'utf8'))) {
            if (p === m.name || builtins.has(p) || declared.has(p)) continue;
            missing.push(`${f.slice(dist.length)} loads ${p}`);
          }
        }
        assert.deepEqual(missing, [], `${m.name}: loaded but not in its dependencies`);
      }
    }
  });

  it('a service entry point takes the options of `noded service <name>` and refuses others, naming them', () => {
    const main = join(dist, 'services', 'metrics', 'src', 'main.js');
    const run = (args: string[]) =>
      spawnSync(process.execPath, [main, ...args], { encoding: 'utf8', timeout: 60_000 });
    const version = run(['--version']);
    assert.equal(version.status, 0, version.stderr);
    assert.equal(version.stdout, `${JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).version}\n`);
    assert.match(run(['--help']).stdout, /^Usage: noded-metrics \[options\][\s\S]*--log-format <format>/);
    const cases: Array<[string[], RegExp]> = [
      [['--bogus'], /^noded-metrics: bad arguments\n {2}Unknown option '--bogus'/],
      [['extra'], /^noded-metrics: bad arguments\n {2}.*positional argument/i],
      [['--log-level', 'loud'], /--log-level: must be one of trace, debug, info, warn, error, got "loud"/],
      [['--log-format', 'xml'], /--log-format: must be one of plain, json, got "xml"/],
      [['--home', ''], /--home: must not be empty/],
      [['--home', '/nonexistent/noded'], /no node home at \/nonexistent\/noded \(no config\/ directory\)/],
    ];
    for (const [args, re] of cases) {
      const r = run(args);
      assert.equal(r.status, 1, `${args.join(' ')}: exit ${r.status}`);
      assert.match(r.stderr, re, args.join(' '));
    }
  });

  it('the stage installs one workspace without dev dependencies, links its main as the ENTRYPOINT, runs as node, and comes before the default (all-in-one) stage', () => {
    const s = stage(dockerfile, 'service');
    const runs = s.filter((i) => i.keyword === 'RUN').map((i) => i.args);
    assert.ok(s.some((i) => i.keyword === 'ARG' && i.args === 'SERVICE'));
    assert.ok(runs.some((r) => /npm ci --omit=dev --workspace "@noded\/service-\$\{SERVICE\}"/.test(r)));
    assert.ok(
      runs.some((r) =>
        /ln -s "\/opt\/noded\/dist\/services\/\$\{SERVICE\}\/src\/main\.js" \/usr\/local\/bin\/noded-service/.test(
          r,
        ),
      ),
    );
    assert.equal(s.filter((i) => i.keyword === 'ENTRYPOINT').at(-1)?.args, '["noded-service"]');
    assert.equal(s.filter((i) => i.keyword === 'USER').at(-1)?.args, 'node:node');
    // The CLI's package.json only (npm ci reads every workspace's), none of its files.
    const cli = s.filter(
      (i) => i.keyword === 'COPY' && /(^| )bin( |\/|$)|services\/noded\/(?!package\.json)/.test(i.args),
    );
    assert.deepEqual(cli, [], 'the CLI is copied');
    const froms = parseDockerfile(dockerfile).filter((i) => i.keyword === 'FROM');
    assert.match(
      froms.at(-1)!.args,
      / AS runtime$/,
      'the last stage (what a plain `docker build` makes) is the all-in-one runtime',
    );
  });

  it('deploy/compose/service-images.yml runs each service of docker-compose.yml from its own image, with the same options', () => {
    const config = (files: string[]) => {
      const r = spawnSync('docker-compose', [...files.flatMap((f) => ['-f', f]), 'config'], {
        cwd: root,
        encoding: 'utf8',
        env: { ...process.env, NODED_TAG: '0.1.0' },
      });
      assert.equal(r.status, 0, r.stderr);
      return parse(r.stdout) as { services: Record<string, Record<string, unknown>> };
    };
    const plain = config(['docker-compose.yml']).services;
    const split = config(['docker-compose.yml', 'deploy/compose/service-images.yml']).services;
    assert.deepEqual(Object.keys(split).sort(), Object.keys(plain).sort());
    // A merge of two files lists a service's volumes and ports in another order: compared as sets.
    const sortVolumes = (s: Record<string, unknown>): Record<string, unknown> => {
      const out = { ...s };
      for (const k of ['volumes', 'ports'])
        if (Array.isArray(out[k])) out[k] = [...(out[k] as unknown[])].map((v) => JSON.stringify(v)).sort();
      return out;
    };
    for (const svc of SERVICES) {
      const a = plain[svc]!;
      const b = split[svc]!;
      assert.equal(b.image, `noded-${svc}:0.1.0`);
      assert.deepEqual(b.build, {
        context: root.replace(/\/$/, ''),
        target: 'service',
        args: { SERVICE: svc },
      });
      // `noded service <svc> <options>` there, `noded-service <options>` here.
      assert.deepEqual(['service', svc, ...(b.command as string[])], a.command, svc);
      for (const k of ['environment', 'volumes', 'healthcheck', 'depends_on', 'ports', 'restart'])
        assert.deepEqual(sortVolumes(b)[k], sortVolumes(a)[k], `${svc}: ${k}`);
    }
    for (const [name, s] of Object.entries(split)) {
      if (!(SERVICES as readonly string[]).includes(name))
        assert.deepEqual(sortVolumes(s), sortVolumes(plain[name]!), name);
    }
  });

  it('builds each service from its own closure, smaller than the full install, and the six run the chain from them', async (t) => {
    // Three at once: an install waits on the disk and the npm cache about as much as on a core.
    const images = await inPool(
      3,
      SERVICES.map((s) => async () => [s, await buildServiceImage(dockerfile, s)] as const),
    );
    const bySvc = new Map<Service, BuiltImage>(images);
    for (const [svc, img] of images) {
      const linked = readdirSync(join(img.dir, 'node_modules', '@noded')).sort();
      assert.ok(linked.includes(`service-${svc}`), `${svc}: ${linked.join(' ')}`);
      assert.ok(!linked.includes('cli'), `${svc}: the CLI is in its closure`);
      for (const other of SERVICES) {
        if (other !== svc)
          assert.ok(!linked.includes(`service-${other}`), `${svc} installs service-${other}`);
      }
      assert.match(img.log, new RegExp(`service-dist: ${linked.length} packages`));
      // The closure's size, for docs/deploy.md's table.
      t.diagnostic(`${svc}: ${img.log.match(/node_modules [\d.]+ MiB in \d+ files/)?.[0]}`);
      assert.ok(
        !existsSync(join(img.dir, 'dist', 'services', 'noded')),
        `${svc}: the CLI's files were copied`,
      );
    }
    // What each image leaves out (the package lock marks none of these dev: it is the split, not --omit=dev).
    const has = (svc: Service, p: string) =>
      existsSync(join(bySvc.get(svc)!.dir, 'node_modules', ...p.split('/')));
    assert.equal(has('metrics', '@nxtedition/rocksdb'), false, 'metrics installs RocksDB');
    assert.equal(has('metrics', 'libp2p'), false, 'metrics installs libp2p');
    assert.equal(has('metrics', '@ethereumjs/evm'), false, 'metrics installs the EVM');
    assert.equal(has('p2p-gateway', '@ethereumjs/evm'), false, 'p2p-gateway installs the EVM');
    assert.equal(has('executor', '@ethereumjs/evm'), true);
    assert.equal(has('consensus', '@ethereumjs/evm'), false, 'consensus installs the EVM');

    const { home, ports } = await initLocalHome({ timeoutCommit: '300ms' });
    cleanups.push(() => removeDir(home));
    const nats = await startNatsServer();
    cleanups.push(() => nats.stop());
    const metricsOf = {} as Record<Service, string>;
    for (const s of SERVICES) metricsOf[s] = `127.0.0.1:${await freePort()}`;
    const common = {
      NODED_NATS_URL: nats.url,
      NODED_EXECUTOR_GRPC_ADDRESS: `127.0.0.1:${await freePort()}`,
      NODED_STATE_STORE_GRPC_ADDRESS: `127.0.0.1:${await freePort()}`,
      NODED_P2P_GATEWAY_ADDRESS: `127.0.0.1:${await freePort()}`,
      NODED_METRICS_TARGETS: SERVICES.filter((s) => s !== 'metrics')
        .map((s) => `${s}=${metricsOf[s]}`)
        .join(','),
    };
    const procs: Array<{ svc: Service; proc: ChildProcess; out: () => string }> = [];
    cleanups.push(async () => {
      await Promise.all(
        procs.map(async ({ proc }) => {
          if (proc.exitCode !== null || proc.signalCode !== null) return;
          const exited = new Promise((r) => proc.once('exit', r));
          const killer = setTimeout(() => proc.kill('SIGKILL'), 15_000);
          proc.kill('SIGTERM');
          await exited;
          clearTimeout(killer);
        }),
      );
    });
    for (const svc of SERVICES) {
      const img = bySvc.get(svc)!;
      // The image's ENTRYPOINT ["noded-service"], found on the PATH, with a home the test made.
      const proc = spawn('noded-service', ['--home', home, '--log-file', '-'], {
        cwd: img.dir,
        stdio: ['ignore', 'pipe', 'pipe'],
        env: {
          ...process.env,
          ...img.env,
          NODED_HOME: home,
          PATH: `${dirname(img.entry)}:${process.env.PATH}`,
          NODED_SERVICE_METRICS_ADDRESS: metricsOf[svc],
          ...common,
        },
      });
      let out = '';
      proc.stdout!.on('data', (d) => {
        out += d;
      });
      proc.stderr!.on('data', (d) => {
        out += d;
      });
      procs.push({ svc, proc, out: () => out });
      await until(`${svc} from its own image says it runs`, 60_000, async () => {
        if (proc.exitCode !== null) throw new Error(`${svc} exited ${proc.exitCode}:\n${out.slice(-3000)}`);
        return out.includes(`noded service ${svc} is running`) ? true : undefined;
      });
    }
    await until('consensus commits height 3', 90_000, async () => {
      const s = await comet<{ sync_info: { latest_block_height: string } }>(
        `http://127.0.0.1:${ports.rpc}`,
        'status',
      ).catch(() => undefined);
      return s && Number(s.sync_info.latest_block_height) >= 3 ? true : undefined;
    });
    await until('the rpc-edge serves height 3 (from the state-store)', 60_000, async () => {
      const res = await fetch(`http://127.0.0.1:${ports.evmHttp}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_blockNumber', params: [] }),
        signal: AbortSignal.timeout(5_000),
      }).catch(() => undefined);
      const j = res?.ok ? ((await res.json()) as { result?: string }) : undefined;
      return j?.result !== undefined && Number(j.result) >= 3 ? true : undefined;
    });
    await until('the metrics service reports the cluster ready', 60_000, async () => {
      const r = await fetch(`http://127.0.0.1:${ports.metrics}/readyz`, {
        signal: AbortSignal.timeout(5_000),
      }).catch(() => undefined);
      return r?.status === 200 ? true : undefined;
    });
    for (const { svc, proc } of procs) assert.equal(proc.exitCode, null, `${svc} exited`);
  });
});
