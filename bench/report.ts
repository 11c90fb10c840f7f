// The run's record (written as JSON) and its one table, as text for the terminal and as markdown.
import { cpus, loadavg, type as osType, release, totalmem } from 'node:os';
import type { BenchOptions, TargetName, WorkloadName } from './args.js';
import type { MemorySample } from './memory.js';
import type { ProfileSummary } from './profile.js';
import type { ReadResult } from './reads.js';
import { type LatencySummary, median, ratio } from './stats.js';
import { type BurstResult, burstComplete } from './txburst.js';

export interface MachineInfo {
  cores: number;
  cpuModel: string;
  node: string;
  os: string;
  memoryGB: number;
  loadAvgAtStart: number[];
  loadAvgAtEnd?: number[];
}

export function machineInfo(): MachineInfo {
  const c = cpus();
  return {
    cores: c.length,
    cpuModel: c[0]?.model.trim() ?? 'unknown',
    node: process.version,
    os: `${osType()} ${release()}`,
    memoryGB: Math.round(totalmem() / 1e9),
    loadAvgAtStart: loadavg().map((x) => Math.round(x * 100) / 100),
  };
}

export type ReadMethod =
  | 'eth_blockNumber'
  | 'eth_getBalance'
  | 'eth_call balanceOf'
  | 'eth_call balanceOf, 4096 holders';
export const READ_METHODS: ReadMethod[] = [
  'eth_blockNumber',
  'eth_getBalance',
  'eth_call balanceOf',
  'eth_call balanceOf, 4096 holders',
];

export interface TargetRun {
  target: TargetName;
  /** 1-based round (--rounds); absent in reports written before rounds existed. */
  round?: number;
  version?: string;
  /** Set when the target failed to start or a workload threw; figures gathered before stay. */
  error?: string;
  startupMs?: number;
  memory: { idle?: MemorySample; afterLoad?: MemorySample };
  setup?: { tokenAddress?: string; erc20GasLimit?: string; transferGasLimit?: string };
  transfers?: BurstResult;
  /** One transfer at a time: send, wait for the receipt, next (ms per transaction). */
  sequential?: { count: number; msPerTx: number; latencyMs: LatencySummary };
  erc20?: BurstResult;
  reads: Partial<Record<ReadMethod, ReadResult>>;
  /** CPU profiles (--profile, noded only): one per thread (main, JSON-RPC). */
  profiles?: ThreadProfile[];
}

export interface ThreadProfile {
  /** "main" (consensus, execution, storage) or "json-rpc" (the Ethereum JSON-RPC worker). */
  thread: string;
  file: string;
  /** The whole run. */
  whole: ProfileSummary;
  /** The same profile cut to each measured stretch (burst, read method). */
  phases: Record<string, ProfileSummary>;
}

export interface BenchReport {
  startedAt: string;
  finishedAt?: string;
  machine: MachineInfo;
  options: BenchOptions;
  loader: string;
  solc?: string;
  runs: TargetRun[];
}

interface Row {
  workload?: WorkloadName;
  label: string;
  unit: string;
  digits: number;
  get(r: TargetRun): number | undefined;
  /** Target from the issue, checked on the noded figure or on the noded/Hardhat ratio. */
  target?: { text: string; check(noded: number | undefined, ratio: number): boolean | undefined };
}

const atLeastRatio = (x: number) => ({
  text: `>= ${x}x`,
  check: (_n: number | undefined, r: number) => (Number.isFinite(r) ? r >= x : undefined),
});
const atMost = (v: number, unit: string) => ({
  text: `<= ${v} ${unit}`,
  check: (n: number | undefined) => (n === undefined || !Number.isFinite(n) ? undefined : n <= v),
});

function burstRows(key: 'transfers' | 'erc20', name: string): Row[] {
  const ok = (b: BurstResult | undefined) => (b && burstComplete(b) ? b : undefined);
  const rows: Row[] = [
    {
      label: `${name} tx/s`,
      unit: 'tx/s',
      digits: 1,
      get: (r) => ok(r[key])?.txPerSec,
      target: atLeastRatio(2),
    },
    { label: `${name} p50 submit->receipt`, unit: 'ms', digits: 1, get: (r) => ok(r[key])?.latencyMs.p50 },
    { label: `${name} p99 submit->receipt`, unit: 'ms', digits: 1, get: (r) => ok(r[key])?.latencyMs.p99 },
    {
      label: `${name} CPU per tx (node)`,
      unit: 'ms CPU',
      digits: 2,
      get: (r) => ok(r[key])?.cpu?.nodeMsPerTx,
    },
    {
      label: `${name} cores busy (node + bench)`,
      unit: 'cores',
      digits: 2,
      get: (r) => ok(r[key])?.cpu?.coresBusy,
    },
    {
      label: `${name} receipt lookup (batched)`,
      unit: 'ms/receipt',
      digits: 2,
      get: (r) => ok(r[key])?.receiptLookupMs.p50,
    },
  ];
  return rows.map((row) => ({ ...row, workload: key }));
}

function readRows(m: ReadMethod): Row[] {
  const rows: Row[] = [
    {
      label: `${m} req/s`,
      unit: 'req/s',
      digits: 0,
      get: (r) => r.reads[m]?.reqPerSec,
      target: atLeastRatio(1),
    },
    { label: `${m} p50`, unit: 'ms', digits: 2, get: (r) => r.reads[m]?.latencyMs.p50 },
    {
      label: `${m} p99`,
      unit: 'ms',
      digits: 2,
      get: (r) => r.reads[m]?.latencyMs.p99,
      target: atMost(5, 'ms'),
    },
  ];
  return rows.map((row) => ({ ...row, workload: 'reads' }));
}

export const ROWS: Row[] = [
  ...burstRows('transfers', 'value transfers'),
  {
    workload: 'sequential',
    label: 'sequential transfers (send, receipt, next)',
    unit: 'ms/tx',
    digits: 1,
    get: (r) => r.sequential?.msPerTx,
  },
  {
    workload: 'sequential',
    label: 'sequential transfers p99 send->receipt',
    unit: 'ms',
    digits: 1,
    get: (r) => r.sequential?.latencyMs.p99,
  },
  ...burstRows('erc20', 'ERC-20 transfers'),
  ...READ_METHODS.flatMap(readRows),
  { label: 'RSS idle', unit: 'MB', digits: 0, get: (r) => r.memory.idle?.rssMB, target: atMost(300, 'MB') },
  { label: 'RSS after load', unit: 'MB', digits: 0, get: (r) => r.memory.afterLoad?.rssMB },
];

export interface TableLine {
  label: string;
  unit: string;
  hardhat: string;
  noded: string;
  ratio: string;
  target: string;
  met: string;
}

const fmt = (v: number | undefined, digits: number) =>
  v === undefined || !Number.isFinite(v) ? '-' : v.toFixed(digits);

/** The rounds' runs of one target (one run per round; a report without rounds is one round). */
function runsOf(report: BenchReport, target: TargetName): Map<number, TargetRun> {
  const out = new Map<number, TargetRun>();
  for (const r of report.runs) if (r.target === target) out.set(r.round ?? 1, r);
  return out;
}

/** A row's figure per node (median over rounds) and the median of the rounds' own ratios. */
function rowFigures(
  report: BenchReport,
  row: Row,
): { h?: number; n?: number; ratio: number; rounds: number[] } {
  const hh = runsOf(report, 'hardhat');
  const nd = runsOf(report, 'noded');
  const values = (runs: Map<number, TargetRun>) =>
    [...runs.values()].map((r) => row.get(r)).filter((v): v is number => v !== undefined);
  const perRound: number[] = [];
  for (const [round, n] of nd) {
    const h = hh.get(round);
    const r = ratio(n === undefined ? undefined : row.get(n), h === undefined ? undefined : row.get(h));
    if (Number.isFinite(r)) perRound.push(r);
  }
  return {
    h: median(values(hh)),
    n: median(values(nd)),
    ratio: median(perRound) ?? Number.NaN,
    rounds: perRound,
  };
}

export function tableLines(report: BenchReport): TableLine[] {
  return ROWS.filter((row) => !row.workload || report.options.workloads.includes(row.workload)).map((row) => {
    const { h, n, ratio: r } = rowFigures(report, row);
    const met = row.target?.check(n, r);
    return {
      label: row.label,
      unit: row.unit,
      hardhat: fmt(h, row.digits),
      noded: fmt(n, row.digits),
      ratio: Number.isFinite(r) ? `${r.toFixed(2)}x` : '-',
      target: row.target?.text ?? '',
      met: met === undefined ? (row.target ? 'n/a' : '') : met ? 'met' : 'NOT met',
    };
  });
}

export function headerLines(report: BenchReport): string[] {
  const m = report.machine;
  const o = report.options;
  const w = o.workloads;
  const versions = [...new Set(report.runs.map((r) => r.version ?? r.target))].join(', ');
  const txs = [
    w.includes('transfers') ? `${o.transfers} value` : '',
    w.includes('erc20') ? `${o.erc20} ERC-20` : '',
  ]
    .filter(Boolean)
    .join(' + ');
  const lines = [
    `machine: ${m.cores} cores (${m.cpuModel}), ${m.memoryGB} GB, ${m.os}, Node ${m.node}; load average ${m.loadAvgAtStart.join(' ')} at start${m.loadAvgAtEnd ? `, ${m.loadAvgAtEnd.join(' ')} at end` : ''}`,
    `nodes: ${versions}; started ${report.startedAt}`,
  ];
  if (txs) {
    lines.push(
      `transactions: ${txs} transfers (after ${o.txWarmup} warm-up each) from ${o.senders} senders, ${o.window > 0 ? `<= ${o.window}` : 'no limit on transactions'} in flight per sender`,
    );
  }
  if (w.includes('reads')) {
    lines.push(
      `reads: ${o.readSeconds} s per method (after ${o.readWarmupSeconds} s warm-up), ${o.readConcurrency} keep-alive connections, ${report.loader}`,
    );
  }
  if ((o.rounds ?? 1) > 1) {
    lines.push(
      `rounds: ${o.rounds}, node order alternating; figures are medians over the rounds, ratios the median of each round's ratio`,
    );
  }
  return lines;
}

export function formatTable(report: BenchReport): string {
  const lines = tableLines(report);
  const head: TableLine = {
    label: 'figure',
    unit: 'unit',
    hardhat: 'Hardhat',
    noded: 'noded',
    ratio: 'noded/Hardhat',
    target: 'target',
    met: '',
  };
  const all = [head, ...lines];
  const w = (k: keyof TableLine) => Math.max(...all.map((l) => l[k].length));
  const widths = {
    label: w('label'),
    unit: w('unit'),
    hardhat: w('hardhat'),
    noded: w('noded'),
    ratio: w('ratio'),
    target: w('target'),
  };
  const row = (l: TableLine) =>
    [
      l.label.padEnd(widths.label),
      l.unit.padEnd(widths.unit),
      l.hardhat.padStart(widths.hardhat),
      l.noded.padStart(widths.noded),
      l.ratio.padStart(widths.ratio),
      l.target.padEnd(widths.target),
      l.met,
    ]
      .join('  ')
      .trimEnd();
  const rule = '-'.repeat(row(head).length);
  return [...headerLines(report), rule, row(head), rule, ...lines.map(row), rule].join('\n');
}

export function formatMarkdown(report: BenchReport): string {
  const out = ['# noded vs Hardhat: benchmark run', '', ...headerLines(report).map((l) => `- ${l}`), ''];
  out.push('| figure | unit | Hardhat | noded | noded/Hardhat | target | |');
  out.push('|---|---|---:|---:|---:|---|---|');
  for (const l of tableLines(report)) {
    out.push(`| ${l.label} | ${l.unit} | ${l.hardhat} | ${l.noded} | ${l.ratio} | ${l.target} | ${l.met} |`);
  }
  out.push('');
  if ((report.options.rounds ?? 1) > 1) {
    out.push("Each round's noded/Hardhat ratio, in round order:", '');
    for (const row of ROWS.filter(
      (r) => r.target && (!r.workload || report.options.workloads.includes(r.workload)),
    )) {
      const { rounds } = rowFigures(report, row);
      out.push(`- ${row.label}: ${rounds.map((x) => `${x.toFixed(2)}x`).join(', ') || '-'}`);
    }
    out.push('');
  }
  for (const r of report.runs) {
    const notes: string[] = [];
    if (r.error) notes.push(`error: ${r.error.split('\n')[0]}`);
    for (const [k, b] of [
      ['value transfers', r.transfers],
      ['ERC-20 transfers', r.erc20],
    ] as const) {
      if (!b) continue;
      notes.push(
        `${k}: ${b.confirmed}/${b.planned} confirmed, ${b.reverted} reverted, ${b.refused} refused, ${b.missing} missing` +
          `${b.timedOut ? ' (TIMED OUT)' : burstComplete(b) ? '' : ' (INCOMPLETE: left out of the table)'}; ${b.blocks} blocks (max ${b.maxTxPerBlock} tx/block); ` +
          `eth_sendRawTransaction p50 ${fmt(b.sendRttMs.p50, 1)} ms; receipt lookup p50 ${fmt(b.receiptLookupMs.p50, 2)} ms/receipt; ` +
          `all receipts fetched ${fmt(b.receiptsDoneMs / 1000, 1)} s after the first submit; ` +
          `heads via ${b.headSource}${b.firstError ? `; first error: ${b.firstError}` : ''}`,
      );
      if (b.blockTimeline.length > 0 && b.blockTimeline.length <= 20) {
        notes.push(
          `${k} blocks (height: our txs @ ms after first submit): ` +
            b.blockTimeline.map((x) => `${x.height}: ${x.txs} @ ${x.atMs}`).join(', '),
        );
      }
    }
    for (const m of READ_METHODS) {
      const x = r.reads[m];
      if (x?.errors) notes.push(`${m}: ${x.errors} errors of ${x.requests}`);
    }
    if (notes.length) out.push(`${r.target}:`, ...notes.map((n) => `- ${n}`), '');
    for (const t of r.profiles ?? []) {
      out.push(`${r.target} ${t.thread} thread CPU profile (${t.file}), top self time:`, '');
      out.push('| share of busy | self ms | function | where |', '|---:|---:|---|---|');
      for (const e of t.whole.topFunctions.slice(0, 20)) {
        out.push(`| ${e.busyPct.toFixed(1)}% | ${e.selfMs.toFixed(0)} | ${e.name} | ${e.where} |`);
      }
      out.push('');
      for (const [phase, p] of Object.entries(t.phases)) {
        out.push(
          `${t.thread} thread, ${phase}: ${(p.busyMs / 1000).toFixed(1)} s busy of ${(p.totalMs / 1000).toFixed(1)} s (GC ${(p.gcMs / 1000).toFixed(1)} s)`,
          '',
          '| share of busy | self ms | function | where |',
          '|---:|---:|---|---|',
        );
        for (const e of p.topFunctions.slice(0, 10)) {
          out.push(`| ${e.busyPct.toFixed(1)}% | ${e.selfMs.toFixed(0)} | ${e.name} | ${e.where} |`);
        }
        out.push('');
      }
    }
  }
  return `${out.join('\n')}\n`;
}
