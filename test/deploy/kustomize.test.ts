// k8s/ (issue 23): `kubectl kustomize` of the base and of the mainnet and testnet overlays, every object
// checked against the Kubernetes API schemas (kubernetes-models: schemas, and unknown fields through
// the API's TypeScript types) and against the rules; the ConfigMap's config files accepted by
// `noded config validate`; the initContainer's script run for real.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { MAIN, removeDir, runCli, tempDir } from '../cli/helpers.js';
import { repoRoot } from '../e2e/harness.js';
import {
  KUSTOMIZE_SKIP,
  kustomize,
  type Manifest,
  nameOf,
  schemaProblems,
  unknownFieldProblems,
} from './k8s.js';
import { clusterSecurity, clusterWiringProblems, manifestProblems, securityProblems } from './k8s-rules.js';

const root = repoRoot();
const TARGETS = ['k8s/base', 'k8s/overlays/testnet', 'k8s/overlays/mainnet'] as const;
const rendered = new Map<string, Manifest[]>();
const work = tempDir('noded-deploy-k8s-');

before(() => {
  if (KUSTOMIZE_SKIP) return;
  for (const t of TARGETS) rendered.set(t, kustomize(join(root, t)));
});
after(() => removeDir(work));

function docs(t: (typeof TARGETS)[number]): Manifest[] {
  return structuredClone(rendered.get(t)!);
}
function get(list: Manifest[], kind: string, name: string): Manifest {
  const m = list.find((d) => d.kind === kind && d.metadata.name.startsWith(name));
  assert.ok(m, `${kind}/${name} not rendered`);
  return m;
}

describe('kustomize build of k8s/', { skip: KUSTOMIZE_SKIP }, () => {
  it('renders the same 24 objects for the base and both overlays', () => {
    const kinds = (t: (typeof TARGETS)[number]) =>
      docs(t)
        .map(nameOf)
        .map((n) => n.replace(/-[a-z0-9]{10}$/, ''))
        .sort();
    assert.equal(docs('k8s/base').length, 24);
    assert.deepEqual(kinds('k8s/overlays/mainnet'), kinds('k8s/base'));
    assert.deepEqual(kinds('k8s/overlays/testnet'), kinds('k8s/base'));
  });

  it('the services agree on their addresses (26670, 26671, own metrics 26680..26683) and a mismatch is found', () => {
    for (const t of TARGETS) assert.deepEqual(clusterWiringProblems(docs(t)), [], t);
    const broken = docs('k8s/base');
    const edge = get(broken, 'Deployment', 'noded-rpc-edge').spec.template.spec.containers[0];
    edge.env.find((e: Manifest) => e.name === 'NODED_SERVICE_METRICS_ADDRESS').value = '0.0.0.0:9999';
    const env = get(broken, 'ConfigMap', 'noded-env');
    env.data.NODED_EXECUTOR_GRPC_ADDRESS = 'noded-executor:26658';
    const metrics = get(broken, 'StatefulSet', 'noded-validator').spec.template.spec.containers.find(
      (c: Manifest) => c.name === 'metrics',
    );
    metrics.args = ['service', 'metrics', '--home', '/data'];
    assert.deepEqual(clusterWiringProblems(broken), [
      'noded-env: NODED_EXECUTOR_GRPC_ADDRESS noded-executor:26658, want noded-executor:26670',
      'noded-validator/metrics: its home is read-only, so it must log with --log-file -',
      'noded-rpc-edge/rpc-edge: NODED_SERVICE_METRICS_ADDRESS 0.0.0.0:9999 does not match the target noded-rpc-edge-metrics:26683',
    ]);
  });

  it('every object is valid against the Kubernetes API schemas, with no unknown field', () => {
    for (const t of TARGETS) assert.deepEqual(schemaProblems(docs(t)), [], t);
    assert.deepEqual(unknownFieldProblems(TARGETS.flatMap((t) => docs(t))), []);
  });

  it('the objects keep the rules of issue 23 (layout, exposure, policies, probes, resources, security, monitoring)', () => {
    for (const t of TARGETS) assert.deepEqual(manifestProblems(docs(t)), [], t);
  });

  it('the validators refuse broken objects, each with a message naming the object and the field', () => {
    const d = docs('k8s/overlays/mainnet');
    const validator = get(d, 'StatefulSet', 'noded-validator');
    validator.spec.replicas = 2;
    validator.spec.template.spec.volumes.find((v: Manifest) => v.secret).secret.defaultMode = 0o644;
    validator.spec.template.spec.containers[1].securityContext.readOnlyRootFileSystem = true;
    get(d, 'Service', 'noded-consensus').spec.type = 'LoadBalancer';
    get(d, 'Deployment', 'noded-rpc-edge').spec.template.spec.containers[0].resources.limits = {};
    get(d, 'HorizontalPodAutoscaler', 'noded-rpc-edge').spec.minReplicas = 'two';
    d.push({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'noded-validator-keys' }, data: {} });
    assert.deepEqual(schemaProblems(d), [
      'HorizontalPodAutoscaler/noded-rpc-edge: data/spec/minReplicas must be integer',
    ]);
    const unknown = unknownFieldProblems(d);
    assert.ok(
      unknown.some((u) =>
        /^StatefulSet\/noded-validator: .*'"readOnlyRootFileSystem"' does not exist in type 'ISecurityContext'/.test(
          u,
        ),
      ),
      unknown.join('\n'),
    );
    assert.ok(
      unknown.some((u) => u.startsWith('HorizontalPodAutoscaler/noded-rpc-edge: ')),
      unknown.join('\n'),
    );
    const rules = manifestProblems(d);
    for (const want of [
      'StatefulSet/noded-validator: replicas 2, must be 1 (one signer)',
      'StatefulSet/noded-validator: Secret noded-validator-keys mode 644 is writable or world-readable',
      'Service/noded-consensus: publishes 26657 outside the cluster',
      'Deployment/noded-rpc-edge container rpc-edge: no cpu limit',
      "Secret/noded-validator-keys: a Secret is rendered; keys are the operator's",
    ]) {
      assert.ok(rules.includes(want), `${want} not in:\n${rules.join('\n')}`);
    }
  });

  it('both overlays run NATS logins and gRPC mutual TLS from the Secrets of k8s/components/cluster-security; the base runs without', () => {
    assert.deepEqual(clusterSecurity(docs('k8s/base')), { natsLogins: false, grpcTls: false });
    for (const t of ['k8s/overlays/mainnet', 'k8s/overlays/testnet'] as const) {
      const d = docs(t);
      assert.deepEqual(clusterSecurity(d), { natsLogins: true, grpcTls: true }, t);
      assert.deepEqual(securityProblems(d), [], t);
      const secrets = (w: string) =>
        (
          get(d, w === 'noded-rpc-edge' ? 'Deployment' : 'StatefulSet', w).spec.template.spec
            .volumes as Manifest[]
        )
          .filter((v) => v.secret)
          .map((v) => v.secret.secretName);
      assert.deepEqual(secrets('noded-validator'), [
        'noded-validator-keys',
        'noded-nats-executor',
        'noded-grpc-tls-validator',
      ]);
      assert.deepEqual(secrets('noded-state-store'), [
        'noded-nats-state-store',
        'noded-grpc-tls-state-store',
      ]);
      assert.deepEqual(secrets('noded-rpc-edge'), ['noded-nats-rpc-edge', 'noded-grpc-tls-rpc-edge']);
      // the executor's probes moved off gRPC to its own metrics port, reachable by kubelet
      const executor = get(d, 'StatefulSet', 'noded-validator').spec.template.spec.containers[2];
      assert.equal(executor.name, 'executor');
      assert.deepEqual(executor.readinessProbe.httpGet, { path: '/readyz', port: 'own-metrics' });
      assert.equal(executor.readinessProbe.grpc, undefined);
    }
  });

  it('a half-secured cluster is refused, naming what is missing', () => {
    const d = docs('k8s/overlays/mainnet');
    const edge = get(d, 'Deployment', 'noded-rpc-edge').spec.template.spec.containers[0];
    edge.env = edge.env.filter((e: Manifest) => !/^NODED_GRPC_TLS|^NODED_NATS_USER$/.test(e.name));
    const store = get(d, 'StatefulSet', 'noded-state-store').spec.template.spec;
    store.containers[0].readinessProbe = { grpc: { port: 26671 } };
    store.volumes.find((v: Manifest) => v.name === 'nats-login').secret.secretName = 'noded-nats-executor';
    const validator = get(d, 'StatefulSet', 'noded-validator').spec.template.spec;
    validator.containers[2].volumeMounts.find((m: Manifest) => m.name === 'grpc-tls').readOnly = false;
    validator.volumes.find((v: Manifest) => v.name === 'grpc-tls').secret.defaultMode = 0o644;
    const problems = securityProblems(d);
    for (const want of [
      'gRPC mutual TLS on for executor, consensus, state-store, p2p-gateway only: executor, consensus, state-store, rpc-edge and p2p-gateway need it alike',
      'NATS logins for executor, state-store only: executor, state-store and rpc-edge need one each',
      'noded-rpc-edge/rpc-edge: NODED_NATS_USER and NODED_NATS_PASSWORD_FILE must be set together',
      'noded-state-store/state-store: readinessProbe is a gRPC probe, which mutual TLS refuses (no client certificate)',
      'Secret noded-nats-executor holds the NATS password of both executor and state-store',
      'noded-validator/executor: NODED_GRPC_TLS_CERT /etc/noded/grpc-tls/tls.crt: volume grpc-tls is not mounted read-only',
      'noded-validator: Secret noded-grpc-tls-validator mode 644 is writable or world-readable',
    ])
      assert.ok(problems.includes(want), `${want} not in:\n${problems.join('\n')}`);
  });

  it('the overlays set their network, namespace and sizes', () => {
    for (const [t, chain, ns] of [
      ['k8s/overlays/mainnet', 'chain-mainnet', 'noded-mainnet'],
      ['k8s/overlays/testnet', 'chain-testnet', 'noded-testnet'],
    ] as const) {
      const d = docs(t);
      for (const m of d.filter((x) => x.kind !== 'Namespace'))
        assert.equal(m.metadata.namespace, ns, `${t} ${nameOf(m)}`);
      assert.equal(get(d, 'ConfigMap', 'noded-env').data.NODED_CHAIN_ID, chain);
      assert.equal(get(d, 'Service', 'noded-rpc').spec.type, 'LoadBalancer');
      assert.equal(get(d, 'Service', 'noded-consensus').spec.type, 'ClusterIP');
    }
    const main = docs('k8s/overlays/mainnet');
    const hpa = get(main, 'HorizontalPodAutoscaler', 'noded-rpc-edge');
    assert.deepEqual([hpa.spec.minReplicas, hpa.spec.maxReplicas], [3, 20]);
    assert.equal(get(main, 'StatefulSet', 'noded-state-store').spec.replicas, 3);
    const executor = get(main, 'StatefulSet', 'noded-validator').spec.template.spec.containers.find(
      (c: Manifest) => c.name === 'executor',
    );
    assert.equal(executor.resources.limits.memory, '8Gi');
    const testnetRpcRule = get(docs('k8s/overlays/testnet'), 'NetworkPolicy', 'noded-validator').spec
      .ingress[1];
    assert.deepEqual(testnetRpcRule.ports, [{ port: 26657, protocol: 'TCP' }]);
    assert.deepEqual(testnetRpcRule.from.at(-1), { ipBlock: { cidr: '10.0.0.0/8' } });
  });

  it('the ConfigMap config.toml and app.toml pass `noded config validate` and serve 26657 to the pod network', async () => {
    const home = join(work, 'cm-home');
    const init = await runCli(['init', 'full', '--chain-id', 'chain-testnet', '--home', home]);
    assert.equal(init.code, 0, init.stderr);
    const cm = get(docs('k8s/overlays/mainnet'), 'ConfigMap', 'noded-config');
    writeFileSync(join(home, 'config', 'config.toml'), cm.data['config.toml']);
    writeFileSync(join(home, 'config', 'app.toml'), cm.data['app.toml']);
    const r = await runCli(['config', 'validate', '--home', home]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(cm.data['config.toml'], /\[rpc\][^[]*\nladdr = "tcp:\/\/0\.0\.0\.0:26657"/);
  });
});

describe('k8s/base/init-home.sh (the initContainer)', () => {
  const bin = join(work, 'bin');
  const script = join(root, 'k8s/base/init-home.sh');
  function run(env: Record<string, string>) {
    return spawnSync('/bin/sh', [script], {
      encoding: 'utf8',
      timeout: 60_000,
      env: { PATH: `${bin}:${process.env.PATH}`, HOME: work, ...env },
    });
  }
  before(() => {
    mkdirSync(bin, { recursive: true });
    writeFileSync(join(bin, 'noded'), `#!/bin/sh\nexec "${process.execPath}" "${MAIN}" "$@"\n`);
    chmodSync(join(bin, 'noded'), 0o755);
  });

  it('first start: a home for the chain with the ConfigMap files and the Secret keys (0600); a restart keeps data', async () => {
    const secretHome = join(work, 'secret-src');
    assert.equal(
      (await runCli(['init', 'full', '--chain-id', 'chain-testnet', '--home', secretHome])).code,
      0,
    );
    const keys = join(work, 'keys');
    mkdirSync(keys);
    for (const k of ['priv_validator_key.json', 'node_key.json']) {
      writeFileSync(join(keys, k), readFileSync(join(secretHome, 'config', k)));
    }
    const home = join(work, 'pvc');
    const env = {
      NODED_HOME: home,
      NODED_CHAIN_ID: 'chain-testnet',
      NODED_MONIKER: 'noded-validator-0',
      NODED_CONFIG_DIR: join(root, 'k8s/base/config'),
      NODED_KEYS_DIR: keys,
    };
    const r = run(env);
    assert.equal(r.status, 0, r.stderr);
    const genesis = JSON.parse(readFileSync(join(home, 'config/genesis.json'), 'utf8')) as {
      chain_id: string;
    };
    assert.equal(genesis.chain_id, 'chain-testnet');
    for (const f of ['config.toml', 'app.toml']) {
      assert.equal(
        readFileSync(join(home, 'config', f), 'utf8'),
        readFileSync(join(root, 'k8s/base/config', f), 'utf8'),
      );
    }
    for (const k of ['priv_validator_key.json', 'node_key.json']) {
      assert.equal(readFileSync(join(home, 'config', k), 'utf8'), readFileSync(join(keys, k), 'utf8'), k);
      assert.equal(statSync(join(home, 'config', k)).mode & 0o777, 0o600, k);
    }
    // A restart: chain data and the signing state stay as they are.
    const state = join(home, 'data/priv_validator_state.json');
    writeFileSync(state, '{"height":"42","round":0,"step":3}');
    writeFileSync(join(home, 'data/marker'), 'kept');
    const again = run(env);
    assert.equal(again.status, 0, again.stderr);
    assert.equal(readFileSync(state, 'utf8'), '{"height":"42","round":0,"step":3}');
    assert.equal(readFileSync(join(home, 'data/marker'), 'utf8'), 'kept');
  });

  it('refuses a Secret without node_key.json, naming it, and writes nothing', () => {
    const keys = join(work, 'keys-partial');
    mkdirSync(keys);
    writeFileSync(join(keys, 'priv_validator_key.json'), '{}');
    const home = join(work, 'pvc-refused');
    const r = run({ NODED_HOME: home, NODED_CHAIN_ID: 'chain-testnet', NODED_KEYS_DIR: keys });
    assert.equal(r.status, 1);
    assert.match(
      r.stderr,
      /keys-partial\/node_key\.json is missing or empty; create the Secret noded-validator-keys/,
    );
    assert.throws(() => statSync(home), /ENOENT/);
  });
});
