// `npm run fuzz -- --requests 100000 --seed S [--concurrency C] [--only I,J] [--eth URL --ws URL --comet URL --rest URL]`:
// fuzzes a running node's public ports (fuzz-node.ts). Without URLs it starts a fresh chain-local node
// on free 127.0.0.1 ports (read timeouts shortened to 2 s so slow requests end quickly) and stops it after.
// Exit code 1 when any answer was missing or improper, or the node stopped or the chain stalled.
import { rmSync } from 'node:fs';
import { type FuzzTargets, runNodeFuzz } from './fuzz-node.js';
import { initLocalHome, startNode } from './harness.js';

const args = process.argv.slice(2);
function opt(name: string): string | undefined {
  const i = args.indexOf(name);
  return i < 0 ? undefined : args[i + 1];
}
function int(name: string, def: number): number {
  const v = opt(name);
  if (v === undefined) return def;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0) {
    console.error(`fuzz: ${name} needs a non-negative integer, got ${JSON.stringify(v)}`);
    process.exit(2);
  }
  return n;
}
const known = new Set([
  '--only',
  '--requests',
  '--seed',
  '--concurrency',
  '--slow-every',
  '--eth',
  '--ws',
  '--comet',
  '--rest',
]);
for (let i = 0; i < args.length; i += 2) {
  if (!known.has(args[i]!)) {
    console.error(`fuzz: unknown option ${args[i]} (use ${[...known].join(' ')})`);
    process.exit(2);
  }
}
const requests = int('--requests', 100_000);
const seed = int('--seed', Date.now() % 1_000_000);
const given = ['--eth', '--ws', '--comet', '--rest'].map(opt);
if (given.some((v) => v !== undefined) && given.some((v) => v === undefined)) {
  console.error('fuzz: give all of --eth --ws --comet --rest, or none (then a chain-local node is started)');
  process.exit(2);
}

let stop = async () => {};
let targets: FuzzTargets;
let slowCutoffMs = 45_000;
if (given[0] !== undefined) {
  targets = { eth: given[0]!, ws: given[1]!, comet: given[2]!, rest: given[3]! };
} else {
  const { home, ports } = await initLocalHome({
    extra: (_c, a) => {
      if (a.api) a.api.rpc_read_timeout = '2s';
      const evmRpc = (a.evm as Record<string, Record<string, unknown>> | undefined)?.rpc;
      if (evmRpc) evmRpc.http_timeout = '2s';
    },
  });
  const node = await startNode(home, ports);
  stop = async () => {
    const code = await node.stop();
    rmSync(home, { recursive: true, force: true });
    if (code !== 0) console.error(`fuzz: the node exited with ${code} on SIGTERM`);
  };
  targets = { eth: node.ethUrl, ws: node.wsUrl, comet: node.cometUrl, rest: node.apiUrl };
  slowCutoffMs = 14_000;
}
console.log(`[fuzz] seed ${seed}, ${requests} requests against ${JSON.stringify(targets)}`);
let report: Awaited<ReturnType<typeof runNodeFuzz>>;
try {
  report = await runNodeFuzz({
    targets,
    requests,
    seed,
    concurrency: int('--concurrency', 16),
    only: opt('--only')
      ?.split(',')
      .map(Number)
      .filter((n) => Number.isInteger(n) && n >= 0),
    slowEvery: int('--slow-every', 500),
    slowCutoffMs,
    log: (l) => console.log(`[fuzz] ${l}`),
  });
} finally {
  await stop();
}
const rows = Object.entries(report.answers).sort((a, b) => b[1] - a[1]);
console.log(
  `[fuzz] ${report.requests} requests in ${report.seconds.toFixed(1)} s; heights ${report.heights.first} -> ${report.heights.last}`,
);
for (const [k, n] of rows) console.log(`  ${String(n).padStart(7)}  ${k}`);
const byKind = new Map<string, typeof report.failures>();
for (const f of report.failures) {
  const k = f.why.replace(/0x[0-9a-f]+|\d+/gi, 'N').slice(0, 60);
  byKind.set(k, [...(byKind.get(k) ?? []), f]);
}
for (const [, fs] of [...byKind].sort((a, b) => b[1].length - a[1].length)) {
  console.log(`FAIL x${fs.length}, e.g.`);
  for (const f of fs.slice(0, 2))
    console.log(`  #${f.index}: ${f.what.slice(0, 160)}\n      ${f.why.slice(0, 300)}`);
}
for (const l of report.liveness) console.log(`LIVENESS: ${l}`);
const failed = report.failures.length + report.liveness.length;
console.log(`${report.requests - report.failures.length} passed, ${report.failures.length} failed`);
process.exit(failed > 0 ? 1 : 0);
