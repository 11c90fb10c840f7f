// What issue 23 asks of the Kubernetes objects, beyond the API schemas: the validator's layout, the
// rpc-edge's autoscaling and disruption budget, which ports are reachable from where, selectors that
// select something, probes, resources and the security context. Shared by the kustomize and Helm tests.
import type { Manifest } from './k8s.js';
import { nameOf } from './k8s.js';

const WORKLOADS = new Set(['Deployment', 'StatefulSet', 'DaemonSet']);

function matches(
  selector: Record<string, string> | undefined,
  labels: Record<string, string> | undefined,
): boolean {
  if (!selector || Object.keys(selector).length === 0) return false;
  return Object.entries(selector).every(([k, v]) => labels?.[k] === v);
}

function find(docs: Manifest[], kind: string, name: string): Manifest | undefined {
  return docs.find((d) => d.kind === kind && d.metadata?.name === name);
}

/** Every rule the objects break, as sentences naming the object (empty: they keep them all). */
export function manifestProblems(docs: Manifest[]): string[] {
  const p: string[] = [];
  const workloads = docs.filter((d) => WORKLOADS.has(d.kind));
  const podLabels = workloads.map((w) => w.spec?.template?.metadata?.labels ?? {});

  // The validator: one StatefulSet replica with a PVC and its four services as containers.
  const validator = find(docs, 'StatefulSet', 'noded-validator');
  if (!validator) p.push('StatefulSet/noded-validator missing');
  else {
    if (validator.spec.replicas !== 1)
      p.push(`StatefulSet/noded-validator: replicas ${validator.spec.replicas}, must be 1 (one signer)`);
    if (!validator.spec.volumeClaimTemplates?.length)
      p.push('StatefulSet/noded-validator: no volumeClaimTemplates (PVC)');
    const names = (validator.spec.template.spec.containers as Manifest[]).map((c) => c.name).sort();
    const want = ['consensus', 'executor', 'metrics', 'p2p-gateway'];
    if (JSON.stringify(names) !== JSON.stringify(want))
      p.push(`StatefulSet/noded-validator: containers ${names}, expected ${want}`);
    const secrets = (validator.spec.template.spec.volumes as Manifest[])
      .filter((v) => v.secret)
      .map((v) => v.secret.secretName);
    if (!secrets.includes('noded-validator-keys'))
      p.push('StatefulSet/noded-validator: does not mount Secret noded-validator-keys');
    for (const v of (validator.spec.template.spec.volumes as Manifest[]).filter((x) => x.secret)) {
      const mode = v.secret.defaultMode ?? 0o644;
      if ((mode & 0o227) !== 0) {
        p.push(
          `StatefulSet/noded-validator: Secret ${v.secret.secretName} mode ${mode.toString(8)} is writable or world-readable`,
        );
      }
    }
  }
  const store = find(docs, 'StatefulSet', 'noded-state-store');
  if (!store) p.push('StatefulSet/noded-state-store missing');
  else if (!(store.spec.replicas >= 2))
    p.push(`StatefulSet/noded-state-store: replicas ${store.spec.replicas}, want at least 2`);
  else if (!store.spec.volumeClaimTemplates?.length)
    p.push('StatefulSet/noded-state-store: no volumeClaimTemplates');

  // rpc-edge: a Deployment, an HPA on it and a PDB over its pods.
  const edge = find(docs, 'Deployment', 'noded-rpc-edge');
  if (!edge) p.push('Deployment/noded-rpc-edge missing');
  const hpa = docs.find(
    (d) => d.kind === 'HorizontalPodAutoscaler' && d.spec?.scaleTargetRef?.name === 'noded-rpc-edge',
  );
  if (hpa?.spec.scaleTargetRef.kind !== 'Deployment')
    p.push('no HorizontalPodAutoscaler scales Deployment/noded-rpc-edge');
  else if (!(hpa.spec.minReplicas >= 1 && hpa.spec.maxReplicas >= hpa.spec.minReplicas)) {
    p.push(`${nameOf(hpa)}: minReplicas ${hpa.spec.minReplicas} / maxReplicas ${hpa.spec.maxReplicas}`);
  }
  if (
    edge &&
    !docs.some(
      (d) =>
        d.kind === 'PodDisruptionBudget' &&
        matches(d.spec?.selector?.matchLabels, edge.spec.template.metadata.labels),
    )
  ) {
    p.push('no PodDisruptionBudget covers the rpc-edge pods');
  }

  // Services: 26656 from outside, 26657 never outside the cluster; every selector selects pods.
  const services = docs.filter((d) => d.kind === 'Service');
  const ports = (s: Manifest): number[] => (s.spec.ports as Manifest[]).map((x) => x.port);
  const external = (s: Manifest) => s.spec.type === 'LoadBalancer' || s.spec.type === 'NodePort';
  if (!services.some((s) => external(s) && ports(s).includes(26656)))
    p.push('no LoadBalancer/NodePort Service publishes 26656');
  for (const s of services) {
    if (external(s) && ports(s).includes(26657)) p.push(`${nameOf(s)}: publishes 26657 outside the cluster`);
    if (s.spec.externalIPs?.length && ports(s).includes(26657)) p.push(`${nameOf(s)}: 26657 on externalIPs`);
    if (!podLabels.some((l) => matches(s.spec.selector, l)))
      p.push(`${nameOf(s)}: selector matches no pod template`);
  }
  for (const d of docs.filter((x) => x.kind === 'PodDisruptionBudget' || x.kind === 'NetworkPolicy')) {
    const sel = d.kind === 'NetworkPolicy' ? d.spec.podSelector?.matchLabels : d.spec.selector?.matchLabels;
    if (!podLabels.some((l) => matches(sel, l))) p.push(`${nameOf(d)}: selector matches no pod template`);
  }

  // NetworkPolicies: a default deny, and 26657 only from listed sources.
  const policies = docs.filter((d) => d.kind === 'NetworkPolicy');
  if (!policies.some((n) => n.spec.policyTypes?.includes('Ingress') && !n.spec.ingress))
    p.push('no default-deny ingress NetworkPolicy');
  for (const n of policies) {
    for (const rule of (n.spec.ingress ?? []) as Manifest[]) {
      const rpc = (rule.ports ?? []).some((x: Manifest) => x.port === 26657) || !rule.ports;
      if (rpc && !(rule.from?.length > 0)) p.push(`${nameOf(n)}: lets anyone reach 26657`);
      for (const f of (rule.from ?? []) as Manifest[]) {
        if (rpc && f.ipBlock?.cidr && /\/0$/.test(f.ipBlock.cidr))
          p.push(`${nameOf(n)}: 26657 open to ${f.ipBlock.cidr}`);
      }
    }
  }

  // Pods: non-root, no privilege escalation, read-only root, resources, probes.
  for (const w of workloads) {
    const spec = w.spec.template.spec;
    if (spec.securityContext?.runAsNonRoot !== true)
      p.push(`${nameOf(w)}: pod securityContext.runAsNonRoot is not true`);
    if (spec.automountServiceAccountToken !== false)
      p.push(`${nameOf(w)}: mounts a service account token it does not need`);
    for (const c of [...(spec.initContainers ?? []), ...spec.containers] as Manifest[]) {
      const where = `${nameOf(w)} container ${c.name}`;
      const sc = c.securityContext ?? {};
      if (sc.allowPrivilegeEscalation !== false) p.push(`${where}: allowPrivilegeEscalation is not false`);
      if (sc.readOnlyRootFilesystem !== true) p.push(`${where}: readOnlyRootFilesystem is not true`);
      if (!sc.capabilities?.drop?.includes('ALL')) p.push(`${where}: capabilities not dropped`);
      if (sc.privileged) p.push(`${where}: privileged`);
      for (const r of ['cpu', 'memory']) {
        if (!c.resources?.requests?.[r]) p.push(`${where}: no ${r} request`);
        if (!c.resources?.limits?.[r]) p.push(`${where}: no ${r} limit`);
      }
    }
    for (const c of spec.containers as Manifest[]) {
      if (!c.readinessProbe) p.push(`${nameOf(w)} container ${c.name}: no readinessProbe`);
      if (!c.livenessProbe) p.push(`${nameOf(w)} container ${c.name}: no livenessProbe`);
    }
  }

  // Config and keys: ConfigMaps that pods use exist; no Secret is ever rendered.
  const configMaps = new Set(docs.filter((d) => d.kind === 'ConfigMap').map((d) => d.metadata.name));
  for (const w of workloads) {
    const spec = w.spec.template.spec;
    const refs = [
      ...((spec.volumes ?? []) as Manifest[]).filter((v) => v.configMap).map((v) => v.configMap.name),
      ...([...(spec.initContainers ?? []), ...spec.containers] as Manifest[]).flatMap((c) =>
        ((c.envFrom ?? []) as Manifest[]).filter((e) => e.configMapRef).map((e) => e.configMapRef.name),
      ),
    ];
    for (const r of refs)
      if (!configMaps.has(r)) p.push(`${nameOf(w)}: uses ConfigMap ${r}, which is not rendered`);
  }
  for (const s of docs.filter((d) => d.kind === 'Secret'))
    p.push(`${nameOf(s)}: a Secret is rendered; keys are the operator's`);

  // Prometheus Operator: a ServiceMonitor that selects the Service holding 26660.
  const sm = docs.find((d) => d.kind === 'ServiceMonitor');
  const metricsSvc = services.find((s) => ports(s).includes(26660));
  if (!sm) p.push('no ServiceMonitor');
  else if (!metricsSvc || !matches(sm.spec.selector?.matchLabels, metricsSvc.metadata.labels)) {
    p.push(`${nameOf(sm)}: selects no Service with port 26660`);
  } else {
    const portName = (metricsSvc.spec.ports as Manifest[]).find((x) => x.port === 26660)!.name;
    if (!(sm.spec.endpoints as Manifest[]).some((e) => e.port === portName))
      p.push(`${nameOf(sm)}: no endpoint on port ${portName}`);
  }
  p.push(...clusterWiringProblems(docs));
  p.push(...securityProblems(docs));
  return p;
}

/** A container of a workload whose name starts with `workload`. */
function container(docs: Manifest[], workload: string, name: string): Manifest | undefined {
  const w = docs.find((d) => WORKLOADS.has(d.kind) && d.metadata?.name === workload);
  return (w?.spec.template.spec.containers as Manifest[] | undefined)?.find((c) => c.name === name);
}
const envOf = (c: Manifest | undefined, name: string): string | undefined =>
  ((c?.env ?? []) as Manifest[]).find((e) => e.name === name)?.value;

/**
 * The services agree on their addresses (the code's defaults: executor gRPC 26670, state-store gRPC
 * 26671; docs/cluster.md): every dialled address is one that something listens on, each service's
 * own metrics endpoint is in the metrics container's NODED_METRICS_TARGETS and reachable there (the
 * same pod, or a headless Service with that port and an allowing NetworkPolicy), and the metrics
 * container, whose home is read-only, logs to stdout only.
 */
export function clusterWiringProblems(docs: Manifest[]): string[] {
  const p: string[] = [];
  const env = docs.find((d) => d.kind === 'ConfigMap' && /^noded-env/.test(d.metadata.name))?.data ?? {};
  if (env.NODED_EXECUTOR_GRPC_ADDRESS !== 'noded-executor:26670')
    p.push(
      `noded-env: NODED_EXECUTOR_GRPC_ADDRESS ${env.NODED_EXECUTOR_GRPC_ADDRESS}, want noded-executor:26670`,
    );
  if (env.NODED_STATE_STORE_GRPC_ADDRESS !== 'noded-state-store:26671')
    p.push(
      `noded-env: NODED_STATE_STORE_GRPC_ADDRESS ${env.NODED_STATE_STORE_GRPC_ADDRESS}, want noded-state-store:26671`,
    );
  const svcPort = (name: string, port: number) =>
    (find(docs, 'Service', name)?.spec.ports as Manifest[] | undefined)?.find((x) => x.port === port);
  if (!svcPort('noded-executor', 26670)) p.push('Service/noded-executor: no port 26670');
  if (!svcPort('noded-state-store', 26671)) p.push('Service/noded-state-store: no port 26671');
  const executor = container(docs, 'noded-validator', 'executor');
  if (envOf(executor, 'NODED_EXECUTOR_GRPC_ADDRESS') !== '0.0.0.0:26670')
    p.push('noded-validator/executor: must listen on 0.0.0.0:26670');
  const store = container(docs, 'noded-state-store', 'state-store');
  if (envOf(store, 'NODED_STATE_STORE_GRPC_ADDRESS') !== '0.0.0.0:26671')
    p.push('noded-state-store/state-store: must listen on 0.0.0.0:26671');
  if (
    envOf(container(docs, 'noded-validator', 'consensus'), 'NODED_EXECUTOR_GRPC_ADDRESS') !==
    '127.0.0.1:26670'
  )
    p.push('noded-validator/consensus: must dial the executor of its pod at 127.0.0.1:26670');

  const metrics = container(docs, 'noded-validator', 'metrics');
  if (!metrics) return [...p, 'noded-validator: no metrics container'];
  const args = (metrics.args ?? []) as string[];
  const ro = ((metrics.volumeMounts ?? []) as Manifest[]).find((m) => m.mountPath === '/data')?.readOnly;
  if (ro && args.join(' ').indexOf('--log-file -') < 0)
    p.push('noded-validator/metrics: its home is read-only, so it must log with --log-file -');
  const targets = new Map(
    (envOf(metrics, 'NODED_METRICS_TARGETS') ?? '').split(',').map((t) => t.split('=') as [string, string]),
  );
  const own: Array<[string, string, string, string]> = [
    ['executor', 'noded-validator', 'executor', '127.0.0.1:26680'],
    ['consensus', 'noded-validator', 'consensus', '127.0.0.1:26681'],
    ['state-store', 'noded-state-store', 'state-store', 'noded-state-store-headless:26682'],
    ['rpc-edge', 'noded-rpc-edge', 'rpc-edge', 'noded-rpc-edge-metrics:26683'],
  ];
  for (const [service, workload, name, target] of own) {
    const c = container(docs, workload, name);
    const listen = envOf(c, 'NODED_SERVICE_METRICS_ADDRESS');
    const port = target.split(':')[1]!;
    if (targets.get(service) !== target)
      p.push(
        `noded-validator/metrics: NODED_METRICS_TARGETS has ${service}=${targets.get(service)}, want ${target}`,
      );
    // a target in the same pod (127.0.0.1) is reached on loopback or all interfaces (the latter when
    // kubelet probes it: the executor's /healthz with gRPC mutual TLS on)
    const listenOk = target.startsWith('127.')
      ? listen === `127.0.0.1:${port}` || listen === `0.0.0.0:${port}`
      : listen === `0.0.0.0:${port}`;
    if (!listenOk)
      p.push(
        `${workload}/${name}: NODED_SERVICE_METRICS_ADDRESS ${listen} does not match the target ${target}`,
      );
    if (target.startsWith('127.')) continue;
    const svcName = target.split(':')[0]!;
    const svc = find(docs, 'Service', svcName);
    const sp = svcPort(svcName, Number(port));
    if (svc?.spec.clusterIP !== 'None' || svc?.spec.publishNotReadyAddresses !== true)
      p.push(`Service/${svcName}: must be headless and publish not-ready addresses (one address per pod)`);
    if (
      !sp ||
      !((c?.ports ?? []) as Manifest[]).some(
        (x) => x.name === sp.targetPort && x.containerPort === Number(port),
      )
    )
      p.push(`Service/${svcName}: port ${port} does not reach ${workload}/${name}'s containerPort ${port}`);
    const allowed = docs
      .filter((d) => d.kind === 'NetworkPolicy')
      .some((np) =>
        ((np.spec.ingress ?? []) as Manifest[]).some(
          (rule) =>
            ((rule.ports ?? []) as Manifest[]).some((x) => x.port === Number(port)) &&
            ((rule.from ?? []) as Manifest[]).some(
              (f) => f.podSelector?.matchLabels?.['app.kubernetes.io/component'] === 'validator',
            ),
        ),
      );
    if (!allowed) p.push(`no NetworkPolicy lets the validator pod (metrics) reach ${port}`);
  }
  return p;
}

/** The cluster services' containers: [service, workload, container]. */
const SERVICES: Array<[string, string, string]> = [
  ['executor', 'noded-validator', 'executor'],
  ['consensus', 'noded-validator', 'consensus'],
  ['state-store', 'noded-state-store', 'state-store'],
  ['rpc-edge', 'noded-rpc-edge', 'rpc-edge'],
  // Serves the relay consensus dials (127.0.0.1:26672): with TLS on one end only, consensus never attaches.
  ['p2p-gateway', 'noded-validator', 'p2p-gateway'],
];
const TLS_VARS = ['NODED_GRPC_TLS_CERT', 'NODED_GRPC_TLS_KEY', 'NODED_GRPC_TLS_CA'];

/** Whether the cluster runs with NATS logins and gRPC mutual TLS (docs/cluster.md "Security"). */
export function clusterSecurity(docs: Manifest[]): { natsLogins: boolean; grpcTls: boolean } {
  const executor = container(docs, 'noded-validator', 'executor');
  return {
    natsLogins: envOf(executor, 'NODED_NATS_USER') !== undefined,
    grpcTls: envOf(executor, 'NODED_GRPC_TLS_CERT') !== undefined,
  };
}

/**
 * NATS logins and gRPC mutual TLS, on for every service or for none: a server with TLS and a client
 * without (or one service logged in and another not) is a cluster that does not connect. Each file a
 * variable names lies in a read-only mount of an operator's Secret (0440 or tighter); each NATS
 * password Secret belongs to one service only; with TLS, no kubelet gRPC probe (it presents no
 * client certificate) and the HTTP probes reach the service's own metrics port.
 */
export function securityProblems(docs: Manifest[]): string[] {
  const p: string[] = [];
  const workload = (name: string) => docs.find((d) => WORKLOADS.has(d.kind) && d.metadata?.name === name);
  /** The Secret volume a file of container `c` in `w` comes from, or a problem. */
  const secretOf = (w: string, c: Manifest, variable: string, file: string): string | undefined => {
    const mount = ((c.volumeMounts ?? []) as Manifest[])
      .filter((m) => file.startsWith(`${m.mountPath}/`))
      .sort((a, b) => b.mountPath.length - a.mountPath.length)[0];
    const where = `${w}/${c.name}: ${variable} ${file}`;
    if (!mount) return void p.push(`${where} is in no mounted volume`);
    const vol = ((workload(w)?.spec.template.spec.volumes ?? []) as Manifest[]).find(
      (v) => v.name === mount.name,
    );
    if (!vol?.secret) return void p.push(`${where} is not from a Secret (volume ${mount.name})`);
    if (mount.readOnly !== true) p.push(`${where}: volume ${mount.name} is not mounted read-only`);
    const mode = vol.secret.defaultMode ?? 0o644;
    if ((mode & 0o227) !== 0)
      p.push(`${w}: Secret ${vol.secret.secretName} mode ${mode.toString(8)} is writable or world-readable`);
    return vol.secret.secretName;
  };

  const tlsOn = SERVICES.filter(([, w, n]) => envOf(container(docs, w, n), 'NODED_GRPC_TLS_CERT'));
  if (tlsOn.length > 0 && tlsOn.length < SERVICES.length)
    p.push(
      `gRPC mutual TLS on for ${tlsOn.map(([s]) => s).join(', ')} only: executor, consensus, state-store, rpc-edge and p2p-gateway need it alike`,
    );
  for (const [service, w, n] of SERVICES) {
    const c = container(docs, w, n);
    if (!c) continue;
    const set = TLS_VARS.filter((v) => envOf(c, v) !== undefined);
    if (set.length > 0 && set.length < TLS_VARS.length)
      p.push(`${w}/${n}: ${set.join(', ')} without ${TLS_VARS.filter((v) => !set.includes(v)).join(', ')}`);
    for (const v of set) secretOf(w, c, v, envOf(c, v)!);
    if (set.length === 0 || (service !== 'executor' && service !== 'state-store')) continue;
    const listen = envOf(c, 'NODED_SERVICE_METRICS_ADDRESS') ?? '';
    for (const probe of ['startupProbe', 'readinessProbe', 'livenessProbe']) {
      const pr = c[probe] as Manifest | undefined;
      if (!pr) continue;
      if (pr.grpc)
        p.push(`${w}/${n}: ${probe} is a gRPC probe, which mutual TLS refuses (no client certificate)`);
      if (pr.httpGet) {
        const port = ((c.ports ?? []) as Manifest[]).find(
          (x) => x.name === pr.httpGet.port || x.containerPort === pr.httpGet.port,
        )?.containerPort;
        if (!listen.startsWith('0.0.0.0:') || port !== Number(listen.split(':')[1]))
          p.push(
            `${w}/${n}: ${probe} on port ${pr.httpGet.port} does not reach its metrics endpoint (${listen}) from kubelet`,
          );
      }
    }
  }

  const natsServices = SERVICES.filter(([s]) => s !== 'consensus' && s !== 'p2p-gateway');
  const loggedIn = natsServices.filter(([, w, n]) => envOf(container(docs, w, n), 'NODED_NATS_USER'));
  if (loggedIn.length > 0 && loggedIn.length < natsServices.length)
    p.push(
      `NATS logins for ${loggedIn.map(([s]) => s).join(', ')} only: executor, state-store and rpc-edge need one each`,
    );
  const owners = new Map<string, string>();
  for (const [service, w, n] of natsServices) {
    const c = container(docs, w, n);
    const user = envOf(c, 'NODED_NATS_USER');
    const file = envOf(c, 'NODED_NATS_PASSWORD_FILE');
    if (!c || (user === undefined && file === undefined)) continue;
    if (user === undefined || file === undefined) {
      p.push(`${w}/${n}: NODED_NATS_USER and NODED_NATS_PASSWORD_FILE must be set together`);
      continue;
    }
    if (user !== service) p.push(`${w}/${n}: NODED_NATS_USER ${user}, want ${service}`);
    const secret = secretOf(w, c, 'NODED_NATS_PASSWORD_FILE', file);
    if (secret && owners.has(secret) && owners.get(secret) !== service)
      p.push(`Secret ${secret} holds the NATS password of both ${owners.get(secret)} and ${service}`);
    if (secret) owners.set(secret, service);
  }
  return p;
}
