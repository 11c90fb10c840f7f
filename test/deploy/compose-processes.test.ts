// docker-compose.yml proven as processes (issue 23), without a container runtime: every service of the
// default profile, as Debian's docker-compose normalizes it, runs with its exact command and
// environment as a local process, each "container" on its own loopback IP (127.a.b.x), as on a
// compose network:
//   - a noded image service runs `node bin/noded.js <command>` (the image's ENTRYPOINT is `noded`),
//     the nats image runs nats-server, the haproxy image haproxy;
//   - service host names in the environment become that service's IP (a scaled service's name in a
//     list becomes one entry per replica, as Docker's DNS answers all of them), 0.0.0.0 (all of the
//     container's interfaces) and 127.0.0.1 in a health check become the service's own IP;
//   - volumes become temporary directories (named volumes shared as compose shares them), and a
//     mounted config file is copied with its container paths mapped the same way;
//   - a port of the file that is busy on this machine is remapped to a free one everywhere;
//   - the start order follows depends_on, and each service's own health check (translated as above)
//     must pass before what depends on it starts; init must complete successfully.
// nats-server runs the shipped nats.conf with the auth.conf that init's `noded nats-auth` wrote into
// volume nats-auth, so every NATS client logs in as compose tells it to (a client without a login is
// refused). haproxy gets the shipped config with two changes Docker's DNS would make unnecessary: the
// `resolvers docker` section is left out and each `server-template ... rpc-edge:<port>` becomes one
// `server` line per rpc-edge replica. Then: ethers sends a transfer through the proxy on 8545 and gets
// its receipt, 26657 shows the block, REST on 1317 through the proxy gives the balance and the
// block, WebSocket 8546 through the proxy answers, both rpc-edge replicas
// (`--scale rpc-edge=2`) serve requests (counted by the metrics service on 26660, whose /readyz is
// 200), the p2p-gateway has consensus attached (its P2P address is consensus' listen address), and
// with one replica killed the proxy keeps serving.
import assert from 'node:assert/strict';
import { type ChildProcess, execFileSync, spawn, spawnSync } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  readFileSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { createServer } from 'node:net';
import { basename, join } from 'node:path';
import { after, describe, it } from 'node:test';
import { JsonRpcProvider, Wallet, WebSocketProvider } from 'ethers';
import { connect } from 'nats';
import { parse } from 'yaml';
import { MAIN, removeDir, tempDir } from '../cli/helpers.js';
import { DEV_ADDRESSES, DEV_KEYS, freePort, repoRoot } from '../e2e/harness.js';
import { randomBaseIp } from '../e2e/network.js';

const root = repoRoot();
const work = tempDir('noded-compose-proc-');
// biome-ignore lint/suspicious/noExplicitAny: compose's normalized output is any YAML.
type Any = any;

interface Running {
  name: string;
  proc: ChildProcess;
  output: () => string;
}
const running: Running[] = [];
after(async () => {
  for (const r of running.reverse()) {
    if (r.proc.exitCode !== null || r.proc.signalCode !== null) continue;
    const exited = new Promise((res) => r.proc.once('exit', res));
    const killer = setTimeout(() => r.proc.kill('SIGKILL'), 15_000);
    r.proc.kill('SIGTERM');
    await exited;
    clearTimeout(killer);
  }
  removeDir(work);
});

const SCALE: Record<string, number> = { 'rpc-edge': 2 };

/** Whether `port` can be bound on `ip` now. */
function bindable(ip: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.once('error', () => resolve(false));
    srv.listen(port, ip, () => srv.close(() => resolve(true)));
  });
}

/** depends_on order (compose starts a service after what it depends on). */
function startOrder(services: Record<string, Any>): string[] {
  const order: string[] = [];
  const visit = (n: string, path: string[]) => {
    if (order.includes(n)) return;
    assert.ok(!path.includes(n), `depends_on cycle: ${[...path, n].join(' -> ')}`);
    for (const d of Object.keys(services[n].depends_on ?? {})) visit(d, [...path, n]);
    order.push(n);
  };
  for (const n of Object.keys(services)) visit(n, []);
  return order;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function jsonRpc(url: string, method: string, params: unknown[] = []): Promise<unknown> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
    signal: AbortSignal.timeout(10_000),
  });
  const json = (await res.json()) as { result?: unknown; error?: { message: string } };
  if (json.error) throw new Error(`${method}: ${json.error.message}`);
  return json.result;
}

/** A CA and one certificate it signed for every service (the hosts `names`), as compose's grpc-tls.yml wants them. */
function makeTlsDir(dir: string, names: string[]): void {
  const openssl = (args: string[]) =>
    execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  openssl([
    'req',
    '-x509',
    ...ec,
    '-keyout',
    'ca.key',
    '-out',
    'ca.crt',
    '-days',
    '2',
    '-subj',
    '/CN=compose test CA',
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign',
  ]);
  openssl(['req', ...ec, '-keyout', 'tls.key', '-out', 'tls.csr', '-subj', '/CN=noded services']);
  const san = names.map((n) => (/^[\d.]+$/.test(n) ? `IP:${n}` : `DNS:${n}`)).join(',');
  writeFileSync(
    join(dir, 'tls.ext'),
    `subjectAltName=${san}\nextendedKeyUsage=serverAuth,clientAuth\nbasicConstraints=CA:FALSE\n`,
  );
  openssl([
    'x509',
    '-req',
    '-in',
    'tls.csr',
    '-CA',
    'ca.crt',
    '-CAkey',
    'ca.key',
    '-CAcreateserial',
    '-out',
    'tls.crt',
    '-days',
    '2',
    '-extfile',
    'tls.ext',
  ]);
}

describe('docker-compose.yml as processes', () => {
  it('runs the default profile with --scale rpc-edge=2: a transfer and its receipt through the proxy on 8545, the block on 26657, metrics on 26660', async () => {
    await runDefaultProfile(join(work, 'plain'), false);
  });

  it('the same with deploy/compose/grpc-tls.yml: gRPC mutual TLS between every service, certificates from NODED_GRPC_TLS_DIR', async () => {
    await runDefaultProfile(join(work, 'tls'), true);
  });
});

async function runDefaultProfile(work: string, tls: boolean): Promise<void> {
  mkdirSync(work, { recursive: true });
  const started = running.length;
  const tlsDir = join(work, 'grpc-tls');
  mkdirSync(tlsDir, { recursive: true });
  try {
    const files = ['docker-compose.yml', ...(tls ? ['deploy/compose/grpc-tls.yml'] : [])];
    const cfg = spawnSync('docker-compose', [...files.flatMap((f) => ['-f', join(root, f)]), 'config'], {
      cwd: root,
      encoding: 'utf8',
      env: { ...process.env, COMPOSE_PROFILES: '', ...(tls ? { NODED_GRPC_TLS_DIR: tlsDir } : {}) },
    });
    assert.equal(cfg.status, 0, cfg.stderr);
    const all = parse(cfg.stdout).services as Record<string, Any>;
    const services = Object.fromEntries(Object.entries(all).filter(([, s]) => s.profiles === undefined));
    assert.deepEqual(Object.keys(services).sort(), [
      'consensus',
      'executor',
      'init',
      'metrics',
      'nats',
      'p2p-gateway',
      'proxy',
      'rpc-edge',
      'state-store',
    ]);

    // One loopback IP per container; replicas of a scaled service get one each.
    const base = randomBaseIp().split('.').slice(0, 3).join('.');
    let next = 2;
    const ips: Record<string, string[]> = {};
    for (const name of Object.keys(services))
      ips[name] = Array.from({ length: SCALE[name] ?? 1 }, () => `${base}.${next++}`);
    // The operator's certificate: the names the clients dial (here the services' IPs, as below).
    if (tls)
      makeTlsDir(tlsDir, [
        'executor',
        'state-store',
        'p2p-gateway',
        ...ips.executor!,
        ...ips['state-store']!,
        ...ips['p2p-gateway']!,
      ]);

    // Ports named in the file; any that is busy on its IP here is remapped to a free one everywhere.
    const text = readFileSync(join(root, 'docker-compose.yml'), 'utf8');
    const haproxyCfg = readFileSync(join(root, 'deploy/compose/haproxy.cfg'), 'utf8');
    const natsConf = readFileSync(join(root, 'deploy/compose/nats.conf'), 'utf8');
    const portsInFiles = new Set(
      [...`${text}\n${haproxyCfg}\n${natsConf}`.matchAll(/(?:[:\s]|port\s)(\d{4,5})\b/g)]
        .map((m) => Number(m[1]))
        .filter((p) => p >= 1024 && p < 65536),
    );
    const portMap = new Map<number, number>();
    for (const p of portsInFiles) {
      for (const ip of Object.values(ips).flat()) {
        if (!(await bindable(ip, p))) {
          portMap.set(p, await freePort());
          break;
        }
      }
    }
    const mapPorts = (s: string) =>
      s.replace(/([:\s]|port\s+)(\d{4,5})\b/g, (m, pre: string, p: string) =>
        portMap.has(Number(p)) ? `${pre}${portMap.get(Number(p))}` : m,
      );

    // Named volumes: one directory each, shared by the services that mount them.
    const volumeDirs: Record<string, string> = {};
    const mountsOf = (s: Any): Array<[string, string]> =>
      (s.volumes ?? []).map((v: Any) => {
        const [src, dst] = typeof v === 'string' ? v.split(':') : [v.source, v.target];
        if (src.startsWith('/') && existsSync(src) && statSync(src).isDirectory()) return [src, dst];
        if (src.startsWith('/')) {
          // a bind mount of a file of the repo: a copy with the container's paths mapped (below)
          const copy = join(work, 'files', basename(src));
          return [copy, dst];
        }
        volumeDirs[src] ??= join(work, 'volumes', src);
        mkdirSync(volumeDirs[src], { recursive: true });
        return [volumeDirs[src], dst];
      });

    const hostOf = (name: string) => ips[name];
    /** A container's string in this topology: its paths, the other services' names, its own IP. */
    const translate = (s: string, own: string, mounts: Array<[string, string]>): string => {
      let out = mapPorts(s);
      for (const [host, container] of [...mounts].sort((a, b) => b[1].length - a[1].length)) {
        out = out.replace(
          new RegExp(`(^|[\\s"'=])${container.replace(/[/.]/g, '\\$&')}(?=$|[/\\s"',;)])`, 'g'),
          `$1${host}`,
        );
      }
      out = out.replaceAll('0.0.0.0', own).replaceAll('127.0.0.1', own);
      // a list of service=host:port (or host:port) items: a scaled host is one item per replica
      out = out
        .split(',')
        .flatMap((item) => {
          const m = /^(.*?)([a-z][a-z0-9-]*)(:\d+.*)$/.exec(item);
          const replicas = m ? hostOf(m[2]!) : undefined;
          if (!m || !replicas || (m[1] !== '' && !/[=/]$/.test(m[1]!))) return [item];
          return replicas.map((ip) => `${m[1]}${ip}${m[3]}`);
        })
        .join(',');
      return out;
    };

    // `noded` on the PATH for init's shell command, as in the image.
    const bin = join(work, 'bin');
    mkdirSync(bin, { recursive: true });
    writeFileSync(join(bin, 'noded'), `#!/bin/sh\nexec "${process.execPath}" "${MAIN}" "$@"\n`);
    chmodSync(join(bin, 'noded'), 0o755);
    mkdirSync(join(work, 'files'), { recursive: true });

    /** The argv of a service (or its health check) for this machine. */
    const argvOf = (name: string, s: Any, args: string[], own: string, mounts: Array<[string, string]>) => {
      const image = String(s.image);
      const t = args.map((a) => translate(a, own, mounts));
      if (image.startsWith('noded:')) {
        const entry = (s.entrypoint as string[] | undefined) ?? ['noded'];
        if (entry[0] === 'noded') return [process.execPath, MAIN, ...t];
        return [...entry, ...t];
      }
      if (image.startsWith('nats:')) return ['nats-server', ...t, '-a', own];
      if (image.startsWith('haproxy:')) return ['haproxy', '-db', '-f', mounts[0]![0]];
      throw new Error(`${name}: image ${image} has no local equivalent in this test`);
    };

    // The mounted files, with the container's paths and the topology's names and ports.
    const natsMounts = mountsOf(services.nats);
    // nats-server resolves `include` relative to the including file: a volume mounted beside
    // nats.conf in the container (/etc/nats/auth) is linked beside its copy.
    for (const [host, dst] of natsMounts) {
      if (dst.startsWith('/etc/nats/') && !dst.endsWith('.conf'))
        symlinkSync(host, join(work, 'files', dst.slice('/etc/nats/'.length)));
    }
    writeFileSync(
      join(work, 'files', 'nats.conf'),
      translate(
        natsConf,
        ips.nats![0]!,
        natsMounts.filter(([, d]) => !d.endsWith('.conf')),
      ),
    );
    const proxyIp = ips.proxy![0]!;
    const edgeIps = ips['rpc-edge']!;
    const haproxyLocal = mapPorts(
      haproxyCfg
        .replace(/\nresolvers docker\n(?:[ \t]+.*\n)+/, '\n')
        .replace(/bind :(\d+)/g, `bind ${proxyIp}:$1`)
        .replace(
          /server-template (\S+) \d+ rpc-edge:(\d+) resolvers docker resolve-prefer ipv4(.*)/g,
          (_m, prefix: string, port: string, rest: string) =>
            edgeIps.map((ip, i) => `server ${prefix}${i + 1} ${ip}:${port}${rest}`).join('\n  '),
        ),
    );
    assert.doesNotMatch(haproxyLocal, /resolvers|server-template/);
    writeFileSync(join(work, 'files', 'haproxy.cfg'), haproxyLocal);

    const env0 = { PATH: `${bin}:${process.env.PATH}`, HOME: work };
    const healthy = async (
      name: string,
      s: Any,
      own: string,
      mounts: Array<[string, string]>,
      r?: Running,
    ) => {
      const test = s.healthcheck?.test as string[] | undefined;
      if (!test) return;
      assert.equal(test[0], 'CMD', `${name}: healthcheck form`);
      // CMD runs in the container directly (not through the entrypoint); `node` is the image's Node.
      const argv = test.slice(1).map((a) => translate(a, own, mounts));
      const cmd = argv[0] === 'node' ? process.execPath : argv[0]!;
      const deadline = Date.now() + 120_000;
      for (;;) {
        const h = spawnSync(cmd, argv.slice(1), { encoding: 'utf8', env: env0, timeout: 10_000 });
        if (h.status === 0) return;
        if (r && (r.proc.exitCode !== null || r.proc.signalCode !== null))
          throw new Error(
            `${name} exited (${r.proc.exitCode ?? r.proc.signalCode}):\n${r.output().slice(-3000)}`,
          );
        if (Date.now() > deadline)
          throw new Error(
            `${name}: health check ${argv.join(' ')} never passed:\n${r?.output().slice(-3000)}`,
          );
        await sleep(500);
      }
    };

    for (const name of startOrder(services)) {
      const s = services[name];
      const mounts = mountsOf(s);
      for (const own of ips[name]!) {
        const env: Record<string, string> = { ...env0 };
        for (const [k, v] of Object.entries(s.environment ?? {})) env[k] = translate(String(v), own, mounts);
        const argv = argvOf(name, s, (s.command as string[] | undefined) ?? [], own, mounts);
        if (s.restart === 'no') {
          const r = spawnSync(argv[0]!, argv.slice(1), { encoding: 'utf8', env, timeout: 120_000 });
          assert.equal(r.status, 0, `${name}: ${r.stdout}${r.stderr}`);
          continue;
        }
        let out = '';
        const proc = spawn(argv[0]!, argv.slice(1), { env, stdio: ['ignore', 'pipe', 'pipe'] });
        proc.stdout?.on('data', (d) => {
          out += d;
        });
        proc.stderr?.on('data', (d) => {
          out += d;
        });
        const r: Running = { name, proc, output: () => out };
        running.push(r);
        await healthy(name, s, own, mounts, r);
      }
    }
    const byName = (n: string) => running.filter((r) => r.name === n);

    // The home the init wrote is what every service used; the read-only edges and metrics wrote no log file.
    const home = volumeDirs.home!;
    assert.ok(existsSync(join(home, 'config', 'genesis.json')));
    assert.ok(existsSync(join(home, 'logs', 'executor.log')));
    assert.ok(!existsSync(join(home, 'logs', 'rpc-edge.log')));
    assert.ok(!existsSync(join(home, 'logs', 'metrics.log')));

    const port = (p: number) => portMap.get(p) ?? p;

    // NATS requires the logins init wrote: a client without one is refused, and the services that
    // use NATS (executor, state-store, rpc-edge) each run with their own user and password file.
    const natsUrl = `nats://${ips.nats![0]}:${port(4222)}`;
    await assert.rejects(connect({ servers: natsUrl, reconnect: false }), /Authorization Violation/i);
    for (const n of ['executor', 'state-store', 'rpc-edge']) {
      const e = services[n].environment;
      assert.equal(e.NODED_NATS_USER, n);
      const file = translate(String(e.NODED_NATS_PASSWORD_FILE), ips[n]![0]!, mountsOf(services[n]));
      const nc = await connect({
        servers: natsUrl,
        user: n,
        pass: readFileSync(file, 'utf8').trim(),
        reconnect: false,
      });
      await nc.close();
    }
    // gRPC: mutual TLS with grpc-tls.yml, plaintext without, as each server logs at start.
    for (const n of ['executor', 'state-store', 'p2p-gateway']) {
      const logged = readFileSync(join(home, 'logs', `${n}.log`), 'utf8');
      assert.match(logged, tls ? /"tls":"mutual"/ : /"tls":"none"/, `${n}: ${logged.slice(0, 2000)}`);
    }
    for (const n of ['executor', 'consensus', 'state-store', 'rpc-edge'])
      assert.equal(
        services[n].environment.NODED_GRPC_TLS_CA,
        tls ? '/etc/noded/grpc-tls/ca.crt' : undefined,
        n,
      );
    const proxyUrl = `http://${proxyIp}:${port(8545)}`;
    const provider = new JsonRpcProvider(proxyUrl, 31337, {
      staticNetwork: true,
      cacheTimeout: -1,
      pollingInterval: 250,
    });
    try {
      const wallet = new Wallet(DEV_KEYS[0], provider);
      const before = await provider.getBalance(DEV_ADDRESSES[3]);
      const tx = await wallet.sendTransaction({ to: DEV_ADDRESSES[3], value: 424242n });
      const receipt = await tx.wait(1, 60_000);
      assert.equal(receipt?.status, 1);
      // Behind the proxy the balance may come from the other edge: read-your-writes across edges
      // (docs/cluster.md) makes it the new one at once, whichever edge answers.
      assert.equal(await provider.getBalance(DEV_ADDRESSES[3]), before + 424242n);

      // 26657 (published on the host's 127.0.0.1; here the consensus process's own IP) has the block.
      const status = (await (await fetch(`http://${ips.consensus![0]}:${port(26657)}/status`)).json()) as Any;
      assert.ok(Number(status.result.sync_info.latest_block_height) >= receipt!.blockNumber);
      const block = (await (
        await fetch(`http://${ips.consensus![0]}:${port(26657)}/block?height=${receipt!.blockNumber}`)
      ).json()) as Any;
      assert.equal(block.result.block.data.txs.length >= 1, true);

      // REST through the proxy on 1317: the balance from a state-store, the block from consensus.
      const restBase = `http://${proxyIp}:${port(1317)}`;
      const restGet = async (path: string) => {
        const res = await fetch(`${restBase}${path}`, { signal: AbortSignal.timeout(10_000) });
        assert.equal(res.status, 200, `${path}: ${await res.clone().text()}`);
        return (await res.json()) as Any;
      };
      const h = String(receipt!.blockNumber);
      const bank = await restGet(`/cosmos/bank/v1beta1/balances/${DEV_ADDRESSES[3]}`);
      assert.equal(
        bank.balances[0].amount,
        BigInt(
          (await jsonRpc(proxyUrl, 'eth_getBalance', [DEV_ADDRESSES[3], 'latest'])) as string,
        ).toString(),
      );
      const restBlock = await restGet(`/cosmos/base/tendermint/v1beta1/blocks/${h}`);
      assert.equal(
        restBlock.block_id.hash,
        Buffer.from(block.result.block_id.hash, 'hex').toString('base64'),
      );
      assert.deepEqual(restBlock.block.data.txs, block.result.block.data.txs);

      // WebSocket through the proxy on 8546.
      const ws = new WebSocketProvider(`ws://${proxyIp}:${port(8546)}`, 31337, {
        staticNetwork: true,
        cacheTimeout: -1,
      });
      try {
        assert.ok((await ws.getBlockNumber()) >= receipt!.blockNumber);
      } finally {
        await ws.destroy();
      }

      // Both edges serve: the metrics service counts each replica's calls.
      for (let i = 0; i < 20; i++) await jsonRpc(proxyUrl, 'eth_chainId');
      const metricsBase = `http://${ips.metrics![0]}:${port(26660)}`;
      const exposition = await (await fetch(`${metricsBase}/metrics`)).text();
      for (const ip of edgeIps) {
        const re = new RegExp(
          `^cometbft_rpc_requests_total\\{[^}]*method="eth_chainId"[^}]*service="rpc-edge",replica="${ip.replaceAll('.', '\\.')}:${port(26683)}"\\} (\\d+)`,
          'm',
        );
        const m = re.exec(exposition);
        assert.ok(m && Number(m[1]) >= 1, `edge ${ip} served no eth_chainId:\n${exposition.slice(0, 1500)}`);
      }
      const ready = await fetch(`${metricsBase}/readyz`);
      assert.equal(ready.status, 200, await ready.text());

      // The p2p-gateway runs its real command: consensus attached to its relay (26672), so the gateway
      // is ready, its P2P address (26656) is consensus' listen address, and metrics gathers it.
      const gatewayIp = ips['p2p-gateway']![0]!;
      const gatewayReady = await fetch(`http://${gatewayIp}:${port(26684)}/readyz`);
      assert.equal(gatewayReady.status, 200, await gatewayReady.text());
      const nodeInfo = (
        (await (await fetch(`http://${ips.consensus![0]}:${port(26657)}/status`)).json()) as Any
      ).result.node_info;
      assert.equal(nodeInfo.listen_addr, `${gatewayIp}:${port(26656)}`);
      assert.match(exposition, /^cometbft_p2p_peers\{[^}]*service="p2p-gateway"[^}]*\} 0$/m);

      // One edge killed: the proxy takes it out and keeps serving.
      const edge = byName('rpc-edge')[0]!;
      edge.proc.kill('SIGKILL');
      let inARow = 0;
      const deadline = Date.now() + 30_000;
      while (inARow < 10) {
        assert.ok(Date.now() < deadline, 'the proxy did not settle on the remaining edge');
        try {
          assert.equal(await jsonRpc(proxyUrl, 'eth_chainId'), '0x7a69');
          inARow++;
        } catch {
          inARow = 0;
          await sleep(250);
        }
      }
      const notReady = await fetch(`${metricsBase}/readyz`);
      assert.equal(notReady.status, 503);
      assert.match(await notReady.text(), new RegExp(`rpc-edge at ${edgeIps[0]!.replaceAll('.', '\\.')}`));
    } finally {
      provider.destroy();
    }
  } finally {
    // This run's processes stop before the next run starts its own.
    for (const r of running.splice(started).reverse()) {
      if (r.proc.exitCode !== null || r.proc.signalCode !== null) continue;
      const exited = new Promise((res) => r.proc.once('exit', res));
      const killer = setTimeout(() => r.proc.kill('SIGKILL'), 15_000);
      r.proc.kill('SIGTERM');
      await exited;
      clearTimeout(killer);
    }
  }
}
