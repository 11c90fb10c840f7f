// Runs every compiled test file under dist/test with node's test runner, in two groups:
//   target node:    every file (the e2e suites start `noded start`);
//   target cluster: the client e2e suites again with NODED_E2E_TARGET=cluster, so that they run
//                   against scripts/cluster.sh (what `make cluster` runs) unchanged (docs/cluster.md, "Tests").
// Usage: [NODED_DIST=dir] [NODED_E2E_TARGET=node|cluster] node scripts/run-tests.mjs [substring filter ...]
// A filter picks files in both groups; NODED_E2E_TARGET set runs that group only.
import { spawn } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The e2e suites that run against the cluster too. `only`: the tests of that file that apply to the
 * cluster (the others are reported as "# SKIP test name does not match pattern"), with `why` the rest
 * do not. docs/cluster.md "Tests" lists them, and the suites that do not apply at all.
 */
const CLUSTER_SUITES = [
  { file: 'e2e/ethers.test.js' },
  { file: 'e2e/viem-web3.test.js' },
  { file: 'e2e/comet-cosmjs.test.js' },
  { file: 'e2e/fees.test.js' },
  { file: 'e2e/tx-index.test.js' },
  { file: 'e2e/empty-blocks.test.js' },
  { file: 'e2e/fuzz-node.test.js' },
  // Whole: its impersonation test's hardhat_setBalance, impersonateAccount and eth_sendTransaction
  // from the impersonated address go through the edge to the executor's noded.dev.v1.DevChain.
  { file: 'e2e/hardhat.test.js' },
];

function walk(dir) {
  const out = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...walk(p));
    else if (name.endsWith('.test.js')) out.push(p);
  }
  return out;
}

const escapeRegExp = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const filters = process.argv.slice(2);
const dist = process.env.NODED_DIST ?? 'dist';
const only = process.env.NODED_E2E_TARGET;
if (only !== undefined && only !== 'node' && only !== 'cluster') {
  console.error(`$NODED_E2E_TARGET must be "node" or "cluster", got ${JSON.stringify(only)}`);
  process.exit(2);
}
const files = walk(`${dist}/test`)
  .filter((f) => filters.length === 0 || filters.some((s) => f.includes(s)))
  .sort();
const suiteOf = (f) => CLUSTER_SUITES.find((s) => f.endsWith(join('test', s.file)));
const clusterFiles = files.filter((f) => suiteOf(f) !== undefined);
const runNode = only !== 'cluster' && files.length > 0;
const runCluster = only !== 'node' && clusterFiles.length > 0;
if (!runNode && !runCluster) {
  console.error(only === 'cluster' ? 'no cluster e2e suite matched' : 'no test files matched');
  process.exit(1);
}

/** Totals of the runs' closing summaries ("# pass N" and so on at the start of a line). */
const totals = { tests: 0, pass: 0, fail: 0, cancelled: 0, skipped: 0, todo: 0 };
/** Every failed test, as "group: file > suite > test", so the closing lines name what failed. */
const failures = [];

/**
 * One `node --test` run, its output passed through as it comes; its exit status. The closing
 * summary of each run is added to `totals`, so the last line can count every group.
 */
function run(list, env, extra = [], group = '') {
  return new Promise((resolve) => {
    const child = spawn(
      process.execPath,
      ['--test', '--test-concurrency=2', '--test-timeout=600000', '--enable-source-maps', ...extra, ...list],
      { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, ...env } },
    );
    const last = {};
    let partial = '';
    // The TAP reporter prints a test's "not ok" after its subtests, so a path of open subtests
    // (by indent) names each failure in full.
    const open = [];
    // The failure whose YAML block is being read: its `location:` line gives the file.
    let pending = -1;
    child.stdout.on('data', (chunk) => {
      process.stdout.write(chunk);
      const lines = (partial + chunk.toString()).split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) {
        const m = /^# (tests|pass|fail|cancelled|skipped|todo) (\d+)$/.exec(line);
        if (m) last[m[1]] = Number(m[2]);
        const sub = /^( *)# Subtest: (.*)$/.exec(line);
        if (sub) {
          const depth = sub[1].length / 4;
          open.length = depth;
          open[depth] = sub[2];
        }
        const bad = /^( *)not ok \d+ - (.*?)(?: # .*)?$/.exec(line);
        if (bad) {
          const depth = bad[1].length / 4;
          const path = [...open.slice(0, depth), bad[2]].map((n) => n.replace(`${process.cwd()}/`, ''));
          // Only the innermost failure: a failed suite or file repeats its failed children.
          const prefix = `${group}: ${path.join(' > ')}`;
          pending = -1;
          if (!failures.some((f) => f.startsWith(`${prefix} > `))) pending = failures.push(prefix) - 1;
          open.length = depth;
        }
        const at = /^ +location: '(.*):(\d+):\d+'$/.exec(line);
        if (at && pending >= 0) {
          failures[pending] += ` (${at[1].replace(`${process.cwd()}/`, '')}:${at[2]})`;
          pending = -1;
        }
      }
    });
    child.on('close', (code) => {
      for (const k of Object.keys(totals)) totals[k] += last[k] ?? 0;
      resolve(code ?? 1);
    });
  });
}

const results = [];
if (runNode) {
  console.log(`# test group: target node (noded start), ${files.length} files`);
  results.push(['target node', await run(files, { NODED_E2E_TARGET: 'node' }, [], 'node')]);
}
if (runCluster) {
  const whole = clusterFiles.filter((f) => suiteOf(f).only === undefined);
  const partial = clusterFiles.filter((f) => suiteOf(f).only !== undefined);
  console.log(
    `# test group: target cluster (NODED_E2E_TARGET=cluster, scripts/cluster.sh), ${clusterFiles.length} files`,
  );
  const env = { NODED_E2E_TARGET: 'cluster' };
  let status = whole.length > 0 ? await run(whole, env, [], 'cluster') : 0;
  if (partial.length > 0) {
    for (const f of partial) {
      const s = suiteOf(f);
      console.log(
        `# target cluster: ${s.file} runs only ${s.only.map((n) => `"${n}"`).join(', ')}: ${s.why}`,
      );
    }
    // --test-name-pattern is per run, so the partial suites share a run of their own.
    const patterns = partial.flatMap((f) =>
      suiteOf(f).only.map((n) => `--test-name-pattern=^${escapeRegExp(n)}$`),
    );
    const code = await run(partial, env, patterns, 'cluster');
    if (status === 0) status = code;
  }
  results.push(['target cluster', status]);
}
for (const [group, status] of results)
  console.log(`# test group ${group}: ${status === 0 ? 'pass' : `fail (exit ${status})`}`);
if (failures.length > 0) {
  console.log(`# failed tests (${failures.length}):`);
  for (const f of failures.slice(0, 40)) console.log(`#   ${f}`);
}
// The closing line over both groups (a cancelled test counts as failed); skipped and todo before it.
if (totals.skipped + totals.todo > 0)
  console.log(`# ${totals.skipped} skipped, ${totals.todo} todo (reasons above)`);
console.log(`${totals.pass} passed, ${totals.fail + totals.cancelled} failed`);
process.exit(results.some(([, s]) => s !== 0) ? 1 : 0);
