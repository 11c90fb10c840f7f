// Renders and checks Kubernetes manifests for the deployment tests (docs/deploy.md, "What CI checks").
// - kustomize: the real one, built into kubectl (`kubectl kustomize`).
// - Kubernetes API schemas, two ways, both from kubernetes-models (generated from the Kubernetes
//   OpenAPI): its ajv validators (types, required fields, enums, formats), and the TypeScript compiler
//   over the same API types (a manifest as a typed object literal: an unknown or misspelt field is an
//   excess-property error, which the schemas alone let through, as kubeconform does without -strict).
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as monitoring from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1';
import * as k8sApps from 'kubernetes-models/apps/v1';
import * as k8sAutoscaling from 'kubernetes-models/autoscaling/v2';
import * as k8sNetworking from 'kubernetes-models/networking.k8s.io/v1';
import * as k8sPolicy from 'kubernetes-models/policy/v1';
import * as k8sCore from 'kubernetes-models/v1';
import { parseAllDocuments } from 'yaml';
import { repoRoot } from '../e2e/harness.js';

// biome-ignore lint/suspicious/noExplicitAny: a manifest is any JSON; the checks below type it.
export type Manifest = Record<string, any>;

/** apiVersion -> [module the models come from, the module's namespace object]. */
const GROUPS: Record<string, [string, Record<string, unknown>]> = {
  v1: ['kubernetes-models/v1', k8sCore],
  'apps/v1': ['kubernetes-models/apps/v1', k8sApps],
  'autoscaling/v2': ['kubernetes-models/autoscaling/v2', k8sAutoscaling],
  'networking.k8s.io/v1': ['kubernetes-models/networking.k8s.io/v1', k8sNetworking],
  'policy/v1': ['kubernetes-models/policy/v1', k8sPolicy],
  'monitoring.coreos.com/v1': ['@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1', monitoring],
};

/** Multi-document YAML read as Kubernetes reads it (YAML 1.1: 0400 is octal, yes/no are booleans). */
export function parseManifests(text: string): Manifest[] {
  return parseAllDocuments(text, { version: '1.1' })
    .map((d) => {
      if (d.errors.length > 0) throw new Error(`YAML: ${d.errors.map((e) => e.message).join('; ')}`);
      return d.toJS() as Manifest | null;
    })
    .filter((d): d is Manifest => d !== null);
}

/**
 * Why the tests that need `kubectl kustomize` cannot run here, or false when they can. kubectl is
 * not a Debian package (this machine image carries Google Cloud SDK's); where it is missing those
 * tests are skipped with this reason, shown in the test output, rather than failing the suite.
 */
export const KUSTOMIZE_SKIP: string | false = (() => {
  try {
    execFileSync('kubectl', ['version', '--client'], { stdio: 'ignore' });
    return false;
  } catch {
    return 'kubectl (with its built-in kustomize v5) is not installed on this machine';
  }
})();

/** `kubectl kustomize <dir>` (kustomize v5 built into kubectl), parsed. */
export function kustomize(dir: string): Manifest[] {
  return parseManifests(
    execFileSync('kubectl', ['kustomize', dir], { encoding: 'utf8', maxBuffer: 64 << 20 }),
  );
}

export function nameOf(m: Manifest): string {
  return `${m.kind}/${m.metadata?.name}`;
}

/** Schema errors of each manifest (kubernetes-models' validators), as "Kind/name: path message". */
export function schemaProblems(docs: Manifest[]): string[] {
  const out: string[] = [];
  for (const m of docs) {
    const group = GROUPS[m.apiVersion];
    const Model = group?.[1][m.kind] as (new (d: Manifest) => { validate(): void }) | undefined;
    if (!Model) {
      out.push(`${nameOf(m)}: no schema for ${m.apiVersion} ${m.kind}`);
      continue;
    }
    try {
      new Model(m).validate();
    } catch (e) {
      out.push(`${nameOf(m)}: ${(e as Error).message}`);
    }
  }
  return out;
}

/**
 * Fields the Kubernetes API types do not have, found by type-checking each manifest as an object
 * literal of its kind's type with tsc (excess property checks). "Kind/name: tsc message" each.
 */
export function unknownFieldProblems(docs: Manifest[]): string[] {
  const root = repoRoot();
  mkdirSync(join(root, '.tmp'), { recursive: true });
  const dir = mkdtempSync(join(root, '.tmp', 'k8s-types-'));
  try {
    const lines: string[] = [];
    const imports = new Set<string>();
    docs.forEach((m, i) => {
      const group = GROUPS[m.apiVersion];
      if (!group || !(m.kind in group[1])) return; // reported by schemaProblems
      imports.add(`import type { I${m.kind} } from '${group[0]}';`);
      lines.push(`// ${nameOf(m)}`, `export const m${i}: I${m.kind} = ${JSON.stringify(m, null, 1)};`);
    });
    writeFileSync(join(dir, 'check.ts'), [...imports, ...lines].join('\n'));
    writeFileSync(
      join(dir, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          strict: true,
          noEmit: true,
          module: 'nodenext',
          moduleResolution: 'nodenext',
          skipLibCheck: true,
          types: [],
        },
        files: ['check.ts'],
      }),
    );
    const tsc = spawnSync(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p', dir], {
      encoding: 'utf8',
    });
    if (tsc.status === 0) return [];
    const src = [...imports, ...lines].join('\n').split('\n');
    const out: string[] = [];
    for (const line of tsc.stdout.split('\n')) {
      const m = /check\.ts\((\d+),\d+\): error TS\d+: (.*)$/.exec(line);
      if (!m) continue;
      // The manifest an error belongs to: the nearest "// Kind/name" line above it.
      let at = Number(m[1]) - 1;
      while (at > 0 && !src[at]!.startsWith('// ')) at--;
      out.push(`${src[at]!.slice(3)}: ${m[2]}`);
    }
    if (out.length === 0) out.push(`tsc failed: ${tsc.stdout}${tsc.stderr}`);
    return out;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
