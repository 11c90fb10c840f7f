// Summarises a V8 .cpuprofile (from `node --cpu-prof`): where the samples' self time went, by function
// and by package/file. Used by run.ts --profile; also runnable alone:
//   node dist/bench/profile.js <file.cpuprofile> [--top N]
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

interface CpuProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number };
  hitCount?: number;
  children?: number[];
}

interface CpuProfile {
  nodes: CpuProfileNode[];
  startTime: number;
  endTime: number;
  samples?: number[];
  timeDeltas?: number[];
}

export interface ProfileEntry {
  name: string;
  where: string;
  selfMs: number;
  /** Share of busy time (everything but "(idle)"), percent. */
  busyPct: number;
}

/** A time window on the machine's monotonic clock, in microseconds (process.hrtime, V8 profile time). */
export interface ProfileWindow {
  fromUs: number;
  toUs: number;
}

/** Monotonic clock in microseconds, comparable with the timestamps of a V8 profile from another process. */
export const monoUs = (): number => Number(process.hrtime.bigint() / 1000n);

export interface ProfileSummary {
  file: string;
  /** Set when only samples inside these windows were counted. */
  windows?: ProfileWindow[];
  totalMs: number;
  idleMs: number;
  busyMs: number;
  gcMs: number;
  topFunctions: ProfileEntry[];
  topModules: ProfileEntry[];
}

/** node_modules/<pkg> (scoped packages keep their scope), else the path after the repo's dist dir. */
export function moduleOf(url: string): string {
  if (!url) return '(native)';
  if (url.startsWith('node:')) return url;
  const nm = url.lastIndexOf('node_modules/');
  if (nm >= 0) {
    const rest = url.slice(nm + 'node_modules/'.length).split('/');
    return rest[0].startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0];
  }
  const m = /\/(libs|services|bench)\/(.+)$/.exec(url);
  return m ? `${m[1]}/${m[2]}` : url.replace(/^file:\/\//, '');
}

/** The file, shortened: the path inside node_modules, or inside the repo's (compiled) tree. */
export function fileOf(url: string): string {
  if (!url || url.startsWith('node:')) return url;
  const nm = url.lastIndexOf('node_modules/');
  if (nm >= 0) return url.slice(nm + 'node_modules/'.length);
  const m = /\/(libs|services|bench)\/(.+)$/.exec(url);
  return m ? `${m[1]}/${m[2]}` : url.replace(/^file:\/\//, '');
}

const loaded = new Map<string, CpuProfile>();

/**
 * Self time by function and by package. With `windows`, only samples taken inside them count (the
 * profile's clock is the machine's monotonic clock, the same as process.hrtime in the bench process).
 */
export function summarizeProfile(file: string, top = 25, windows?: ProfileWindow[]): ProfileSummary {
  let prof = loaded.get(file);
  if (!prof) {
    prof = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
    loaded.clear();
    loaded.set(file, prof);
  }
  const inWindow = (t: number) => !windows || windows.some((w) => t >= w.fromUs && t <= w.toUs);
  const byId = new Map<number, CpuProfileNode>();
  for (const n of prof.nodes) byId.set(n.id, n);
  const selfUs = new Map<number, number>();
  const samples = prof.samples ?? [];
  const deltas = prof.timeDeltas ?? [];
  if (samples.length > 0 && deltas.length === samples.length) {
    // timeDeltas[i] is the time since the previous sample; the interval up to the next sample belongs
    // to sample i, so attribute deltas[i + 1] (the last sample gets the mean interval).
    const meanDelta = (prof.endTime - prof.startTime) / samples.length;
    let t = prof.startTime;
    for (let i = 0; i < samples.length; i++) {
      t += deltas[i];
      if (!inWindow(t)) continue;
      const d = i + 1 < deltas.length ? deltas[i + 1] : meanDelta;
      selfUs.set(samples[i], (selfUs.get(samples[i]) ?? 0) + Math.max(0, d));
    }
  } else if (!windows) {
    const interval =
      (prof.endTime - prof.startTime) /
      Math.max(
        1,
        prof.nodes.reduce((a, n) => a + (n.hitCount ?? 0), 0),
      );
    for (const n of prof.nodes) selfUs.set(n.id, (n.hitCount ?? 0) * interval);
  }

  let totalUs = 0;
  let idleUs = 0;
  let gcUs = 0;
  const fns = new Map<string, { name: string; where: string; us: number }>();
  const mods = new Map<string, number>();
  for (const [id, us] of selfUs) {
    const n = byId.get(id);
    if (!n) continue;
    totalUs += us;
    const { functionName, url, lineNumber } = n.callFrame;
    if (functionName === '(idle)') {
      idleUs += us;
      continue;
    }
    if (functionName === '(garbage collector)') gcUs += us;
    const name = functionName || '(anonymous)';
    const where = url ? `${fileOf(url)}:${lineNumber + 1}` : '';
    const key = `${name}@${where}`;
    const e = fns.get(key) ?? { name, where, us: 0 };
    e.us += us;
    fns.set(key, e);
    const mod = url ? moduleOf(url) : name.startsWith('(') ? name : '(native)';
    mods.set(mod, (mods.get(mod) ?? 0) + us);
  }
  const busyUs = totalUs - idleUs;
  const pct = (us: number) => (busyUs > 0 ? (100 * us) / busyUs : 0);
  return {
    file,
    windows,
    totalMs: totalUs / 1000,
    idleMs: idleUs / 1000,
    busyMs: busyUs / 1000,
    gcMs: gcUs / 1000,
    topFunctions: [...fns.values()]
      .sort((a, b) => b.us - a.us)
      .slice(0, top)
      .map((e) => ({ name: e.name, where: e.where, selfMs: e.us / 1000, busyPct: pct(e.us) })),
    topModules: [...mods.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([where, us]) => ({ name: where, where, selfMs: us / 1000, busyPct: pct(us) })),
  };
}

export function formatProfile(p: ProfileSummary, top = 20): string {
  const lines = [
    `profile ${p.file}`,
    `  ${(p.totalMs / 1000).toFixed(1)} s sampled: ${(p.busyMs / 1000).toFixed(1)} s busy, ${(p.idleMs / 1000).toFixed(1)} s idle, ${(p.gcMs / 1000).toFixed(1)} s in GC`,
    '  top self time (share of busy time):',
  ];
  for (const e of p.topFunctions.slice(0, top)) {
    lines.push(
      `    ${e.busyPct.toFixed(1).padStart(5)}%  ${e.selfMs.toFixed(0).padStart(7)} ms  ${e.name}  ${e.where}`,
    );
  }
  lines.push('  by package / file:');
  for (const e of p.topModules.slice(0, Math.min(top, 12))) {
    lines.push(`    ${e.busyPct.toFixed(1).padStart(5)}%  ${e.selfMs.toFixed(0).padStart(7)} ms  ${e.name}`);
  }
  return lines.join('\n');
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const file = process.argv[2];
  if (!file) {
    console.error('usage: node dist/bench/profile.js <file.cpuprofile> [--top N]');
    process.exit(2);
  }
  const ti = process.argv.indexOf('--top');
  const top = ti > 0 ? Number(process.argv[ti + 1]) || 25 : 25;
  console.log(formatProfile(summarizeProfile(file, top), top));
}
