// `npm run soak -- --minutes 30 [--idle-seconds 60] [--settle-seconds 60] [--tx-per-sec 20] [--senders 8]
// [--max-slope 20] [--max-after 1.2] [--keep-home]`: starts a fresh chain-local node on free 127.0.0.1 ports, runs the
// memory soak of soak.ts against it, prints the samples as a Markdown table with the verdict, and stops
// the node. Exit code 1 when memory did not come back or grew (the reasons are printed).
import { rmSync } from 'node:fs';
import { initLocalHome, startNode, waitForOutput } from './harness.js';
import { formatSoak, runSoak } from './soak.js';

// --keep-home (no value): the node's home, with its log, is left for a look afterwards.
const args = process.argv.slice(2).filter((a) => a !== '--keep-home');
const known = [
  '--minutes',
  '--idle-seconds',
  '--settle-seconds',
  '--tx-per-sec',
  '--senders',
  '--max-slope',
  '--max-after',
];
for (let i = 0; i < args.length; i += 2) {
  if (!known.includes(args[i]!)) {
    console.error(`soak: unknown option ${args[i]} (use ${known.join(' ')} --keep-home)`);
    process.exit(2);
  }
}
function num(name: string, def: number): number {
  const i = args.indexOf(name);
  if (i < 0) return def;
  const v = args[i + 1];
  const n = Number(v);
  if (v === undefined || !Number.isFinite(n) || n <= 0) {
    console.error(`soak: ${name} needs a positive number, got ${JSON.stringify(v)}`);
    process.exit(2);
  }
  return n;
}
const minutes = num('--minutes', 30);
const { home, ports } = await initLocalHome();
const node = await startNode(home, ports);
let code = 1;
try {
  await waitForOutput(node, /metrics|prometheus/i, 15_000).catch(() => {});
  const pid = node.proc.pid;
  if (pid === undefined) throw new Error('the node has no pid');
  console.log(`[soak] node pid ${pid}, ${minutes} min of load, node ${process.version}`);
  const report = await runSoak({
    targets: {
      pid,
      eth: node.ethUrl,
      ws: node.wsUrl,
      comet: node.cometUrl,
      rest: node.apiUrl,
      metrics: node.metricsUrl,
    },
    loadMs: minutes * 60_000,
    idleMs: num('--idle-seconds', 60) * 1000,
    settleMs: num('--settle-seconds', 60) * 1000,
    txPerSec: num('--tx-per-sec', 20),
    senders: num('--senders', 8),
    maxSlopeMBPerHour: num('--max-slope', 20),
    maxAfterRatio: num('--max-after', 1.2),
    log: (l) => console.log(l),
  });
  console.log(`\n${formatSoak(report)}`);
  if (report.failures.length > 0) console.log(`\nFAIL:\n- ${report.failures.join('\n- ')}`);
  else console.log('\nPASS');
  code = report.failures.length > 0 ? 1 : 0;
} finally {
  const exit = await node.stop();
  if (process.argv.includes('--keep-home')) console.log(`[soak] home kept at ${home}`);
  else rmSync(home, { recursive: true, force: true });
  if (exit !== 0) {
    console.error(`soak: the node exited with ${exit} on SIGTERM`);
    code = 1;
  }
}
process.exit(code);
