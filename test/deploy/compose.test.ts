// docker-compose.yml (issue 23): validated by Debian's docker-compose (v1) `config -q`, its proxy config
// by `haproxy -c`, and checked against the rules on compose's own normalized output; the
// one-shot init and the localnet profile's `noded testnet` run for real, and the addresses they write
// match the compose file's. compose-processes.test.ts runs every service of the default profile as a
// local process.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { parse as parseToml } from 'smol-toml';
import { parse } from 'yaml';
import { MAIN, removeDir, tempDir } from '../cli/helpers.js';
import { repoRoot } from '../e2e/harness.js';

const root = repoRoot();
const work = tempDir('noded-deploy-compose-');
// biome-ignore lint/suspicious/noExplicitAny: compose's normalized output is any YAML.
type Any = any;

function compose(dir: string, args: string[], profiles = '') {
  return spawnSync('docker-compose', ['-f', join(dir, 'docker-compose.yml'), ...args], {
    cwd: dir,
    encoding: 'utf8',
    timeout: 60_000,
    env: { ...process.env, COMPOSE_PROFILES: profiles },
  });
}

let services: Record<string, Any> = {};
let localnet: Record<string, Any> = {};
const bin = join(work, 'bin');

before(() => {
  const def = compose(root, ['config']);
  assert.equal(def.status, 0, def.stderr);
  services = parse(def.stdout).services;
  const ln = compose(root, ['config'], 'localnet');
  assert.equal(ln.status, 0, ln.stderr);
  localnet = parse(ln.stdout).services;
  mkdirSync(bin, { recursive: true });
  writeFileSync(join(bin, 'noded'), `#!/bin/sh\nexec "${process.execPath}" "${MAIN}" "$@"\n`);
  chmodSync(join(bin, 'noded'), 0o755);
});
after(() => removeDir(work));

/** The six services of the cluster (issue 22), all in the default profile. */
const SIX = ['p2p-gateway', 'consensus', 'executor', 'state-store', 'rpc-edge', 'metrics'];
/** Published ports from compose v1's normalized forms ({ published, target } or "127.0.0.1:26657:26657/tcp"). */
const hostPorts = (s: Any): { host: number; ip?: string }[] =>
  (s.ports ?? []).map((p: Any) => {
    if (typeof p === 'object') return { host: Number(p.published), ip: p.host_ip };
    const m = /^(?:([\d.]+):)?(\d+):(\d+)(?:\/\w+)?$/.exec(String(p));
    assert.ok(m, `port ${p}`);
    return { host: Number(m[2]), ip: m[1] };
  });

describe('docker-compose.yml', () => {
  it('docker-compose config -q accepts it, with and without the localnet profile, printing nothing', () => {
    for (const profiles of ['', 'localnet']) {
      const r = compose(root, ['config', '-q'], profiles);
      assert.equal(r.status, 0, r.stderr);
      assert.equal(r.stdout + r.stderr, '', profiles);
    }
  });

  it('docker-compose config refuses a broken copy, naming the service and the field', () => {
    const dir = join(work, 'broken');
    mkdirSync(dir);
    const text = readFileSync(join(root, 'docker-compose.yml'), 'utf8');
    writeFileSync(
      join(dir, 'docker-compose.yml'),
      text.replace('condition: service_healthy', 'condition: healthy'),
    );
    const r = compose(dir, ['config', '-q']);
    assert.notEqual(r.status, 0);
    assert.match(
      r.stderr,
      /services\.executor\.depends_on\.nats\.condition contains "healthy", which is an invalid type/,
    );
  });

  it('nats is the official image, pinned, with JetStream on, max_payload 64 MiB and a health check that requires it', () => {
    const nats = services.nats;
    assert.match(nats.image, /^nats:\d+\.\d+\.\d+-alpine$/);
    assert.deepEqual(nats.command, ['--config', '/etc/nats/nats.conf']);
    assert.ok(
      nats.volumes.includes(`${join(root, 'deploy/compose/nats.conf')}:/etc/nats/nats.conf:ro`),
      nats.volumes,
    );
    const conf = readFileSync(join(root, 'deploy/compose/nats.conf'), 'utf8');
    assert.match(conf, /^max_payload: 67108864$/m);
    assert.match(conf, /^jetstream \{\n\s+store_dir: "\/data"\n\}/m);
    assert.match(conf, /^http_port: 8222$/m);
    // the logins: auth.conf from volume nats-auth (written by init), included relative to nats.conf
    assert.match(conf, /^include "auth\/auth\.conf"$/m);
    assert.ok(nats.volumes.includes('nats-auth:/etc/nats/auth:ro'), nats.volumes);
    assert.deepEqual(nats.depends_on, { init: { condition: 'service_completed_successfully' } });
    // nats-server -t with the auth.conf that init's `noded nats-auth` writes beside it
    const etc = join(work, 'etc-nats');
    mkdirSync(etc, { recursive: true });
    writeFileSync(join(etc, 'nats.conf'), conf);
    const home = join(work, 'nats-home');
    const init = spawnSync(
      process.execPath,
      [MAIN, 'init', 'full', '--chain-id', 'chain-local', '--home', home],
      {
        encoding: 'utf8',
      },
    );
    assert.equal(init.status, 0, init.stderr);
    const auth = spawnSync(
      process.execPath,
      [MAIN, 'nats-auth', '--home', home, '--out', join(etc, 'auth')],
      {
        encoding: 'utf8',
      },
    );
    assert.equal(auth.status, 0, auth.stderr);
    const t = spawnSync('nats-server', ['-c', join(etc, 'nats.conf'), '-t'], { encoding: 'utf8' });
    assert.equal(t.status, 0, t.stdout + t.stderr);
    // without auth.conf the file is refused: nats cannot start open by mistake
    const bare = spawnSync('nats-server', ['-c', join(root, 'deploy/compose/nats.conf'), '-t'], {
      encoding: 'utf8',
    });
    assert.notEqual(bare.status, 0, 'nats.conf without auth/auth.conf was accepted');
    assert.match(bare.stdout + bare.stderr, /auth\.conf/);
    assert.match(nats.healthcheck.test.join(' '), /healthz\?js-enabled-only=true/);
    assert.deepEqual(hostPorts(nats), []);
  });

  it('the six services run `noded service <name> --home /data` from the image, each with a health check, after what they need', () => {
    const image = services.executor.image;
    assert.match(image, /^noded:/);
    for (const name of SIX) {
      const s = services[name];
      assert.equal(s.profiles, undefined, `${name} is in the default profile`);
      assert.ok(s, `service ${name} missing`);
      assert.equal(s.image, image, name);
      // the read-only homes log to stdout only
      const readOnly = name === 'rpc-edge' || name === 'metrics';
      assert.deepEqual(
        s.command,
        ['service', name, '--home', '/data', ...(readOnly ? ['--log-file', '-'] : [])],
        name,
      );
      if (readOnly)
        assert.deepEqual(
          s.volumes,
          name === 'rpc-edge' ? ['home:/data:ro', 'nats-auth:/nats-auth:ro'] : ['home:/data:ro'],
          name,
        );
      assert.equal(s.environment.NODED_NATS_URL, 'nats://nats:4222', name);
      assert.ok(s.healthcheck?.test?.length > 1, `${name}: no healthcheck`);
    }
    for (const [name, s] of Object.entries(services)) {
      for (const [dep, d] of Object.entries((s as Any).depends_on ?? {})) {
        const cond = (d as Any).condition;
        assert.ok(
          ['service_healthy', 'service_completed_successfully'].includes(cond),
          `${name} -> ${dep}: ${cond}`,
        );
        if (cond === 'service_healthy')
          assert.ok(services[dep]?.healthcheck, `${name} waits for ${dep}, which has no healthcheck`);
      }
    }
    const needs = (name: string) => Object.keys(services[name].depends_on ?? {}).sort();
    assert.deepEqual(needs('executor'), ['init', 'nats']);
    assert.deepEqual(needs('consensus'), ['executor']);
    assert.deepEqual(needs('p2p-gateway'), ['consensus']);
    assert.deepEqual(needs('rpc-edge'), ['executor', 'state-store']);
    assert.equal(services.init.depends_on, undefined);
    assert.equal(services.init.restart, 'no');
  });

  it('the services agree on their addresses: gRPC 26670/26671/26672, own metrics 26680..26684 gathered by metrics, all on 0.0.0.0', () => {
    for (const name of SIX) {
      const e = services[name].environment;
      if (!['executor', 'state-store'].includes(name)) {
        assert.equal(e.NODED_EXECUTOR_GRPC_ADDRESS, 'executor:26670', name);
        assert.equal(e.NODED_STATE_STORE_GRPC_ADDRESS, 'state-store:26671', name);
      }
    }
    assert.equal(services.executor.environment.NODED_EXECUTOR_GRPC_ADDRESS, '0.0.0.0:26670');
    assert.equal(services['state-store'].environment.NODED_STATE_STORE_GRPC_ADDRESS, '0.0.0.0:26671');
    assert.match(services.executor.healthcheck.test.join(' '), /connect\(26670,/);
    assert.match(services['state-store'].healthcheck.test.join(' '), /connect\(26671,/);
    // consensus reaches its peers through the gateway's relay, which listens on all interfaces.
    assert.equal(services['p2p-gateway'].environment.NODED_P2P_GATEWAY_ADDRESS, '0.0.0.0:26672');
    assert.equal(services.consensus.environment.NODED_P2P_GATEWAY_ADDRESS, 'p2p-gateway:26672');
    assert.equal(services['p2p-gateway'].environment.NODED_P2P_LADDR, 'tcp://0.0.0.0:26656');
    assert.match(services['p2p-gateway'].healthcheck.test.join(' '), /connect\(26672,/);
    const own: Record<string, string> = {
      executor: '26680',
      consensus: '26681',
      'state-store': '26682',
      'rpc-edge': '26683',
      'p2p-gateway': '26684',
    };
    for (const [name, p] of Object.entries(own))
      assert.equal(services[name].environment.NODED_SERVICE_METRICS_ADDRESS, `0.0.0.0:${p}`, name);
    assert.equal(
      services.metrics.environment.NODED_METRICS_TARGETS,
      Object.entries(own)
        .map(([name, p]) => `${name}=${name}:${p}`)
        .join(','),
    );
    assert.equal(services.metrics.environment.NODED_INSTRUMENTATION_PROMETHEUS_LISTEN_ADDR, '0.0.0.0:26660');
    assert.equal(services['rpc-edge'].environment.NODED_EVM_RPC_ADDRESS, '0.0.0.0:8545');
    assert.equal(services['rpc-edge'].environment.NODED_EVM_WS_ADDRESS, '0.0.0.0:8546');
    assert.equal(services['rpc-edge'].environment.NODED_API_ADDRESS, 'tcp://0.0.0.0:1317');
    assert.equal(services['rpc-edge'].environment.NODED_EVM_API_ADDRESS, '0.0.0.0:1317');
    assert.equal(services['rpc-edge'].environment.NODED_CONSENSUS_RPC_ADDRESS, 'consensus:26657');
  });

  it('publishes the spec ports: 26656 p2p-gateway, 26657 consensus and 26660 metrics on 127.0.0.1, 8545/8546/1317 by the proxy only', () => {
    assert.deepEqual(hostPorts(services['p2p-gateway']), [{ host: 26656, ip: undefined }]);
    assert.deepEqual(hostPorts(services.consensus), [{ host: 26657, ip: '127.0.0.1' }]);
    assert.deepEqual(hostPorts(services.metrics), [{ host: 26660, ip: '127.0.0.1' }]);
    assert.deepEqual(
      hostPorts(services.proxy).map((p) => p.host),
      [8545, 8546, 1317],
    );
    for (const name of ['executor', 'state-store', 'rpc-edge', 'init', 'nats']) {
      assert.deepEqual(hostPorts(services[name]), [], `${name} publishes a host port`);
    }
  });

  it('--scale rpc-edge=3 can work: no host port or container name on rpc-edge, the proxy re-resolves it on all three ports', () => {
    const edge = services['rpc-edge'];
    assert.equal(edge.container_name, undefined);
    assert.deepEqual(edge.expose.map(String).sort(), ['1317', '8545', '8546']);
    const proxy = services.proxy;
    assert.match(proxy.image, /^haproxy:\d+\.\d+\.\d+-alpine$/);
    assert.deepEqual(proxy.volumes, [
      `${join(root, 'deploy/compose/haproxy.cfg')}:/usr/local/etc/haproxy/haproxy.cfg:ro`,
    ]);
    const cfg = readFileSync(join(root, 'deploy/compose/haproxy.cfg'), 'utf8');
    for (const port of [8545, 8546, 1317]) {
      assert.match(cfg, new RegExp(`\\n\\s+bind :${port}\\n`));
      assert.match(cfg, new RegExp(`server-template edge (\\d+) rpc-edge:${port} resolvers docker`));
      assert.ok(Number(new RegExp(`server-template edge (\\d+) rpc-edge:${port}`).exec(cfg)![1]) >= 3);
    }
    assert.match(cfg, /nameserver dns 127\.0\.0\.11:53/);
    assert.match(cfg, /timeout tunnel \d+s/);
  });

  it('haproxy -c accepts the proxy config', () => {
    const r = spawnSync('haproxy', ['-c', '-f', join(root, 'deploy/compose/haproxy.cfg')], {
      encoding: 'utf8',
    });
    assert.equal(r.status, 0, r.stdout + r.stderr);
    assert.match(r.stdout, /Configuration file is valid/);
  });

  it('NATS logins: executor, state-store and rpc-edge each log in as themselves from the read-only nats-auth volume; consensus and metrics use no NATS login', () => {
    for (const name of ['executor', 'state-store', 'rpc-edge']) {
      const s = services[name];
      assert.equal(s.environment.NODED_NATS_USER, name, name);
      assert.equal(s.environment.NODED_NATS_PASSWORD_FILE, `/nats-auth/${name}.password`, name);
      assert.ok(s.volumes.includes('nats-auth:/nats-auth:ro'), `${name}: ${s.volumes}`);
    }
    for (const name of ['consensus', 'metrics']) {
      const s = services[name];
      assert.equal(s.environment.NODED_NATS_USER, undefined, name);
      assert.ok(!(s.volumes ?? []).some((v: string) => v.startsWith('nats-auth:')), name);
    }
  });

  it('deploy/compose/grpc-tls.yml adds mutual TLS to executor, consensus, state-store and rpc-edge from NODED_GRPC_TLS_DIR, and refuses to run without it', () => {
    const files = ['-f', join(root, 'docker-compose.yml'), '-f', join(root, 'deploy/compose/grpc-tls.yml')];
    const run = (env: NodeJS.ProcessEnv) =>
      spawnSync('docker-compose', [...files, 'config'], {
        cwd: root,
        encoding: 'utf8',
        timeout: 60_000,
        env: { ...process.env, COMPOSE_PROFILES: '', ...env },
      });
    const dir = join(work, 'operator-tls');
    const ok = run({ NODED_GRPC_TLS_DIR: dir });
    assert.equal(ok.status, 0, ok.stderr);
    const tls = parse(ok.stdout).services as Record<string, Any>;
    for (const name of ['executor', 'consensus', 'state-store', 'rpc-edge']) {
      const e = tls[name].environment;
      assert.deepEqual(
        [e.NODED_GRPC_TLS_CERT, e.NODED_GRPC_TLS_KEY, e.NODED_GRPC_TLS_CA],
        ['/etc/noded/grpc-tls/tls.crt', '/etc/noded/grpc-tls/tls.key', '/etc/noded/grpc-tls/ca.crt'],
        name,
      );
      assert.ok(tls[name].volumes.includes(`${dir}:/etc/noded/grpc-tls:ro`), `${name}: ${tls[name].volumes}`);
      // everything else of the service is the base file's
      assert.equal(e.NODED_NATS_URL, 'nats://nats:4222', name);
    }
    assert.equal(tls.metrics.environment.NODED_GRPC_TLS_CERT, undefined);
    const env = { ...process.env };
    delete env.NODED_GRPC_TLS_DIR;
    const missing = spawnSync('docker-compose', [...files, 'config', '-q'], {
      cwd: root,
      encoding: 'utf8',
      timeout: 60_000,
      env: { ...env, COMPOSE_PROFILES: '' },
    });
    assert.notEqual(missing.status, 0);
    assert.match(
      missing.stderr,
      /set NODED_GRPC_TLS_DIR to the directory holding tls\.crt, tls\.key and ca\.crt/,
    );
  });

  it('the one-shot init writes a chain-local home into an empty volume and leaves an existing one alone', () => {
    const data = join(work, 'volume');
    const natsAuth = join(work, 'nats-auth-volume');
    assert.deepEqual(services.init.volumes, ['home:/data:rw', 'nats-auth:/nats-auth:rw']);
    const cmd = (services.init.command as string[])
      .at(-1)!
      .replaceAll('/data', data)
      .replaceAll('/nats-auth', natsAuth);
    const env = { PATH: `${bin}:${process.env.PATH}`, HOME: work };
    const first = spawnSync('/bin/sh', ['-c', cmd], { encoding: 'utf8', env, timeout: 60_000 });
    assert.equal(first.status, 0, first.stderr);
    const genesis = readFileSync(join(data, 'config/genesis.json'), 'utf8');
    assert.equal((JSON.parse(genesis) as { chain_id: string }).chain_id, 'chain-local');
    const key = readFileSync(join(data, 'config/priv_validator_key.json'), 'utf8');
    // the NATS logins: auth.conf for chain-local and one password per service, owner-only
    const USERS = ['executor', 'state-store', 'rpc-edge'];
    const authConf = readFileSync(join(natsAuth, 'auth.conf'), 'utf8');
    assert.match(authConf, /noded\.chain-local\.blocks/);
    const passwords = USERS.map((u) => readFileSync(join(natsAuth, `${u}.password`), 'utf8'));
    for (const [i, u] of USERS.entries()) {
      assert.match(passwords[i]!, /^[A-Za-z0-9_-]{32}\n$/, u);
      assert.ok(authConf.includes(`"${passwords[i]!.trim()}"`), `${u}'s password not in auth.conf`);
      assert.equal(statSync(join(natsAuth, `${u}.password`)).mode & 0o777, 0o600, u);
    }
    assert.equal(statSync(join(natsAuth, 'auth.conf')).mode & 0o777, 0o600);
    const again = spawnSync('/bin/sh', ['-c', cmd], { encoding: 'utf8', env, timeout: 60_000 });
    assert.equal(again.status, 0, again.stderr);
    assert.equal(readFileSync(join(data, 'config/priv_validator_key.json'), 'utf8'), key);
    assert.equal(readFileSync(join(data, 'config/genesis.json'), 'utf8'), genesis);
    // a later `up` keeps the passwords, so running services stay logged in
    assert.deepEqual(
      USERS.map((u) => readFileSync(join(natsAuth, `${u}.password`), 'utf8')),
      passwords,
    );
    // NODED_RPC_LADDR (consensus) overrides a key the home's config.toml has: [rpc] laddr.
    const config = parseToml(readFileSync(join(data, 'config/config.toml'), 'utf8')) as Any;
    assert.equal(typeof config.rpc.laddr, 'string');
    assert.equal(services.consensus.environment.NODED_RPC_LADDR, 'tcp://0.0.0.0:26657');
  });

  it('profile localnet: 4 validators from `noded testnet`, each on the address its config was written for', () => {
    const nodes = ['node0', 'node1', 'node2', 'node3'];
    const inProfile = Object.keys(localnet).filter((n) => localnet[n].profiles?.includes('localnet'));
    assert.deepEqual(inProfile.sort(), ['localnet-init', ...nodes]);
    for (const n of [...SIX, 'nats', 'init', 'proxy']) assert.equal(services[n].profiles, undefined, n);
    const out = join(work, 'localnet');
    const cmd = (localnet['localnet-init'].command as string[]).at(-1)!.replaceAll('/localnet', out);
    const env = { PATH: `${bin}:${process.env.PATH}`, HOME: work };
    const r = spawnSync('/bin/sh', ['-c', cmd], { encoding: 'utf8', env, timeout: 120_000 });
    assert.equal(r.status, 0, r.stderr);
    assert.ok(!existsSync(join(out, 'node4')));
    nodes.forEach((n, i) => {
      const s = localnet[n];
      assert.deepEqual(s.command, ['start', '--home', `/localnet/${n}`]);
      const ip = s.networks.localnet.ipv4_address;
      assert.equal(ip, `172.28.0.${2 + i}`);
      const config = parseToml(readFileSync(join(out, n, 'config/config.toml'), 'utf8')) as Any;
      assert.equal(config.p2p.laddr, `tcp://${ip}:26656`, n);
      assert.equal(config.instrumentation.prometheus_listen_addr, `${ip}:26660`, n);
      assert.match(
        s.healthcheck.test.join(' '),
        new RegExp(`http://${ip.replaceAll('.', '\\.')}:26660/healthz`),
      );
      assert.deepEqual(Object.keys(s.depends_on), ['localnet-init']);
    });
    // The persistent peers of node0 are the other three compose addresses.
    const peers = (parseToml(readFileSync(join(out, 'node0/config/config.toml'), 'utf8')) as Any).p2p
      .persistent_peers;
    assert.deepEqual(
      String(peers)
        .split(',')
        .map((p) => p.split('@')[1])
        .sort(),
      ['172.28.0.3:26656', '172.28.0.4:26656', '172.28.0.5:26656'],
    );
    const subnet = parse(compose(root, ['config'], 'localnet').stdout).networks.localnet.ipam.config[0]
      .subnet;
    assert.equal(subnet, '172.28.0.0/24');
  });
});
