// The run's record (written as JSON) and its one table, as text for the terminal and as markdown: a
// column per node, and every noded figure divided by each reference node's (anvil with 1 s blocks,
// anvil automine, Hardhat), all from this run.
import { cpus, loadavg, type as osType, release, totalmem } from 'node:os';
import { type BenchOptions, REFERENCES, type TargetName } from './args.js';
import type { LoadCase } from './cases.js';
import type { CastLoopResult } from './cast.js';
import type { LoadResult } from './loadgen.js';
import { loadComplete } from './loadgen.js';
import type { MemorySample } from './memory.js';
import type { ProfileSummary } from './profile.js';
import type { ReadResult } from './reads.js';
import { median, ratio } from './stats.js';
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
  | 'eth_call balanceOf, 4096 holders'
  | 'eth_getLogs, last 1000 blocks'
  | 'eth_getTransactionReceipt';
export const READ_METHODS: ReadMethod[] = [
  'eth_blockNumber',
  'eth_getBalance',
  'eth_call balanceOf',
  'eth_call balanceOf, 4096 holders',
  'eth_getLogs, last 1000 blocks',
  'eth_getTransactionReceipt',
];

/** The key of a read row measured at `concurrency` connections. */
export const readKey = (m: ReadMethod, concurrency: number) => `${m} @${concurrency}`;

/** How long the reads waited for the node to go quiet, and whether it did (bench/run.ts settle). */
export interface ReadSettle {
  waitedMs: number;
  quiet: boolean;
  /** The node's busiest second in the wait, cores. */
  busiestCores: number;
}

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
  erc20?: BurstResult;
  /** The cast workload: `cast send` after `cast send` (bench/cast.ts). */
  castLoop?: CastLoopResult;
  /** Generator loads by case id (bench/cases.ts). */
  loads?: Record<string, LoadResult>;
  /** Loads not run, by case id, and why (an earlier load left transactions stuck in the pool). */
  skipped?: Record<string, string>;
  /** Read rows by readKey(method, connections). */
  reads: Partial<Record<string, ReadResult>>;
  /** What each read row asked, where it is not obvious (the getLogs range and its log count). */
  readNotes?: Record<string, string>;
  /** The wait for the node to go quiet before the reads (--read-settle). */
  readSettle?: ReadSettle;
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
  /** The generator's loads of this run, in order. */
  cases?: LoadCase[];
  /** The generator against the canned server: its own ceiling, before the nodes and after them. */
  ceiling?: LoadResult;
  ceilingAfter?: LoadResult;
  runs: TargetRun[];
}

/** Reads one figure of a run; undefined when it was not measured or its load did not complete. */
type Getter = (r: TargetRun) => number | undefined;

export interface TargetCheck {
  text: string;
  /** The noded figure and its ratios (by reference node); undefined when it cannot be told. */
  check(noded: number | undefined, ratios: Partial<Record<TargetName, number>>): boolean | undefined;
}

export interface Row {
  label: string;
  unit: string;
  digits: number;
  get: Getter;
  target?: TargetCheck;
}

const finite = (x: number | undefined): x is number => x !== undefined && Number.isFinite(x);

/** Every check must hold; undefined when any cannot be told. */
function allOf(...checks: TargetCheck[]): TargetCheck {
  return {
    text: checks.map((c) => c.text).join(' and '),
    check: (n, r) => {
      const v = checks.map((c) => c.check(n, r));
      return v.some((x) => x === undefined) ? undefined : v.every(Boolean);
    },
  };
}
export const atLeast = (v: number, unit: string): TargetCheck => ({
  text: `>= ${v} ${unit}`,
  check: (n) => (finite(n) ? n >= v : undefined),
});
export const atMost = (v: number, unit: string): TargetCheck => ({
  text: `<= ${v} ${unit}`,
  check: (n) => (finite(n) ? n <= v : undefined),
});
export const ratioAtLeast = (x: number, ref: TargetName): TargetCheck => ({
  text: `>= ${x}x ${ref}`,
  check: (_n, r) => (finite(r[ref]) ? r[ref] >= x : undefined),
});
export const ratioAtMost = (x: number, ref: TargetName): TargetCheck => ({
  text: `<= ${x}x ${ref}`,
  check: (_n, r) => (finite(r[ref]) ? r[ref] <= x : undefined),
});

function loadRows(c: LoadCase): Row[] {
  const sustained = c.workload === 'sustained';
  const ok = (r: TargetRun) => {
    const l = r.loads?.[c.id];
    return l && loadComplete(l, sustained) ? l : undefined;
  };
  const name = c.label;
  if (c.workload === 'loop') {
    return [
      {
        label: `${name}: total time`,
        unit: 's',
        digits: 2,
        get: (r) => {
          const l = ok(r);
          return l ? l.elapsedMs / 1000 : undefined;
        },
        target: ratioAtMost(3, 'anvil'),
      },
      { label: `${name}: p50 send->receipt`, unit: 'ms', digits: 1, get: (r) => ok(r)?.receiptMs.p50 },
    ];
  }
  const rate: Row = {
    label: `${name}: tx/s, receipts in hand`,
    unit: 'tx/s',
    digits: 0,
    get: (r) => ok(r)?.txPerSec,
  };
  if (sustained && c.kind === 'transfer')
    rate.target = allOf(atLeast(4000, 'tx/s'), ratioAtLeast(2.5, 'anvil-1s'));
  if (sustained && c.kind === 'erc20') rate.target = atLeast(2500, 'tx/s');
  const p50: Row = {
    label: `${name}: p50 send->receipt`,
    unit: 'ms',
    digits: 0,
    get: (r) => ok(r)?.receiptMs.p50,
  };
  if (sustained) p50.target = atMost(1200, 'ms');
  return [
    rate,
    {
      label: `${name}: tx/s, to block inclusion`,
      unit: 'tx/s',
      digits: 0,
      get: (r) => ok(r)?.includedTxPerSec,
    },
    p50,
    { label: `${name}: p99 send->receipt`, unit: 'ms', digits: 0, get: (r) => ok(r)?.receiptMs.p99 },
    { label: `${name}: p50 send->inclusion`, unit: 'ms', digits: 0, get: (r) => ok(r)?.inclusionMs?.p50 },
    { label: `${name}: node CPU`, unit: 'cores', digits: 2, get: (r) => ok(r)?.cpu?.nodeCores },
    { label: `${name}: generator CPU`, unit: 'cores', digits: 2, get: (r) => ok(r)?.cpu?.clientCores },
  ];
}

function readRows(m: ReadMethod, c: number): Row[] {
  const k = readKey(m, c);
  /** Latency only of a row that had valid replies (wrk reports 0 ms when none came within its timeout). */
  const answered = (r: TargetRun) => {
    const x = r.reads[k];
    return x && x.reqPerSec > 0 ? x : undefined;
  };
  const req: Row = {
    label: `${m} @${c} conns req/s`,
    unit: 'req/s',
    digits: 0,
    get: (r) => r.reads[k]?.reqPerSec,
  };
  const p99: Row = {
    label: `${m} @${c} conns p99`,
    unit: 'ms',
    digits: 2,
    get: (r) => answered(r)?.latencyMs.p99,
  };
  if (c === 32) {
    if (m === 'eth_blockNumber' || m === 'eth_getBalance') {
      req.target = ratioAtLeast(0.8, 'anvil');
      p99.target = atMost(5, 'ms');
    }
    if (m === 'eth_call balanceOf') req.target = ratioAtLeast(0.8, 'anvil');
    if (m === 'eth_getLogs, last 1000 blocks') req.target = ratioAtLeast(1, 'anvil');
  }
  return [
    req,
    { label: `${m} @${c} conns p50`, unit: 'ms', digits: 2, get: (r) => answered(r)?.latencyMs.p50 },
    p99,
  ];
}

function burstRows(key: 'transfers' | 'erc20', name: string): Row[] {
  const ok = (b: BurstResult | undefined) => (b && burstComplete(b) ? b : undefined);
  return [
    { label: `${name} (node:http burst) tx/s`, unit: 'tx/s', digits: 1, get: (r) => ok(r[key])?.txPerSec },
    {
      label: `${name} (node:http burst) p50 submit->block`,
      unit: 'ms',
      digits: 1,
      get: (r) => ok(r[key])?.latencyMs.p50,
    },
    {
      label: `${name} (node:http burst) CPU per tx (node)`,
      unit: 'ms CPU',
      digits: 2,
      get: (r) => ok(r[key])?.cpu?.nodeMsPerTx,
    },
  ];
}

/** The table's rows for this report's options and loads, in order. */
export function rows(report: BenchReport): Row[] {
  const o = report.options;
  const out: Row[] = [];
  for (const c of report.cases ?? []) if (c.workload !== 'ceiling') out.push(...loadRows(c));
  if (o.workloads.includes('cast')) {
    const label = `cast send loop of ${o.loop} transfers (a process each, receipt awaited)`;
    out.push(
      {
        label: `${label}: total time`,
        unit: 's',
        digits: 2,
        get: (r) => (r.castLoop ? r.castLoop.elapsedMs / 1000 : undefined),
        target: ratioAtMost(3, 'anvil'),
      },
      { label: `${label}: p50 per send`, unit: 'ms', digits: 1, get: (r) => r.castLoop?.sendMs.p50 },
    );
  }
  if (o.workloads.includes('transfers')) out.push(...burstRows('transfers', 'value transfers'));
  if (o.workloads.includes('erc20')) out.push(...burstRows('erc20', 'ERC-20 transfers'));
  if (o.workloads.includes('reads')) {
    const wanted = new Set(o.reads.map((k) => READ_METHODS[READ_KEY_ORDER.indexOf(k)]));
    for (const c of o.readConcurrency)
      for (const m of READ_METHODS) if (wanted.has(m)) out.push(...readRows(m, c));
  }
  out.push(
    { label: 'RSS idle', unit: 'MB', digits: 0, get: (r) => r.memory.idle?.rssMB },
    { label: 'RSS after load', unit: 'MB', digits: 0, get: (r) => r.memory.afterLoad?.rssMB },
  );
  return out;
}

/** args.ts READ_KEYS in the order of READ_METHODS. */
const READ_KEY_ORDER = ['blockNumber', 'getBalance', 'call', 'call-holders', 'logs', 'receipt'];

export interface TableLine {
  label: string;
  unit: string;
  /** Figure per node (median over rounds), formatted. */
  values: Partial<Record<TargetName, string>>;
  /** noded / reference, formatted, per reference node. */
  ratios: Partial<Record<TargetName, string>>;
  target: string;
  met: string;
}

const fmt = (v: number | undefined, digits: number) => (!finite(v) ? '-' : v.toFixed(digits));

/** The rounds' runs of one target (one run per round; a report without rounds is one round). */
function runsOf(report: BenchReport, target: TargetName): Map<number, TargetRun> {
  const out = new Map<number, TargetRun>();
  for (const r of report.runs) if (r.target === target) out.set(r.round ?? 1, r);
  return out;
}

/** A row's figure per node (median over rounds) and, per reference, the median of the rounds' own ratios. */
export function rowFigures(
  report: BenchReport,
  row: Row,
): {
  values: Partial<Record<TargetName, number>>;
  ratios: Partial<Record<TargetName, number>>;
  rounds: Partial<Record<TargetName, number[]>>;
} {
  const values: Partial<Record<TargetName, number>> = {};
  const ratios: Partial<Record<TargetName, number>> = {};
  const rounds: Partial<Record<TargetName, number[]>> = {};
  for (const t of report.options.targets) {
    const v = median([...runsOf(report, t).values()].map(row.get).filter(finite));
    if (v !== undefined) values[t] = v;
  }
  const nd = runsOf(report, 'noded');
  for (const ref of REFERENCES) {
    if (!report.options.targets.includes(ref)) continue;
    const rr = runsOf(report, ref);
    const perRound: number[] = [];
    for (const [round, n] of nd) {
      const h = rr.get(round);
      const x = ratio(row.get(n), h === undefined ? undefined : row.get(h));
      if (Number.isFinite(x)) perRound.push(x);
    }
    rounds[ref] = perRound;
    const m = median(perRound);
    if (m !== undefined) ratios[ref] = m;
  }
  return { values, ratios, rounds };
}

export function tableLines(report: BenchReport): TableLine[] {
  return rows(report).map((row) => {
    const { values, ratios } = rowFigures(report, row);
    const met = row.target?.check(values.noded, ratios);
    const v: TableLine['values'] = {};
    for (const t of report.options.targets) v[t] = fmt(values[t], row.digits);
    const r: TableLine['ratios'] = {};
    for (const ref of REFERENCES)
      if (report.options.targets.includes(ref))
        r[ref] = finite(ratios[ref]) ? `${ratios[ref].toFixed(2)}x` : '-';
    return {
      label: row.label,
      unit: row.unit,
      values: v,
      ratios: r,
      target: row.target?.text ?? '',
      met: met === undefined ? (row.target ? 'n/a' : '') : met ? 'met' : 'NOT met',
    };
  });
}

export function describeLoad(l: LoadResult): string {
  const f = (x: number | undefined, d = 0) => fmt(x, d);
  return (
    `${l.confirmed}/${l.planned} receipts (${l.sent} sent${l.refused ? `, ${l.refused} refused${l.sendersStopped ? ` (${l.sendersStopped} senders stopped, the first ${f((l.firstRefusalMs ?? 0) / 1000, 1)} s in)` : ''}` : ''}${l.reverted ? `, ${l.reverted} reverted` : ''}${l.missing ? `, ${l.missing} missing` : ''}) in ${f(l.elapsedMs / 1000, 2)} s = ${f(l.txPerSec)} tx/s` +
    `${l.windowTxPerSec !== undefined ? ` (${f(l.windowTxPerSec)} tx/s while sending)` : ''}` +
    `; to inclusion ${f(l.includedTxPerSec)} tx/s; send->receipt p50 ${f(l.receiptMs.p50, 1)} p99 ${f(l.receiptMs.p99, 1)} ms` +
    `${l.inclusionMs ? `; send->inclusion p50 ${f(l.inclusionMs.p50, 1)} ms` : ''}; ${l.blocks} blocks (max ${l.maxTxPerBlock})` +
    `${l.receiptCallsPerTx !== undefined ? `; ${f(l.receiptCallsPerTx, 1)} receipt lookups a transaction (${f((l.receiptMissShare ?? 0) * 100)}% found none)` : ''}` +
    `${l.cpu ? `; CPU node ${f(l.cpu.nodeCores, 2)} cores, generator ${f(l.cpu.clientCores, 2)} cores` : ''}` +
    `${l.timedOut ? '; TIMED OUT' : ''}${l.firstError ? `; first error: ${l.firstError}` : ''}`
  );
}

export function headerLines(report: BenchReport): string[] {
  const m = report.machine;
  const o = report.options;
  const versions = [...new Set(report.runs.map((r) => r.version ?? r.target))].join(', ');
  const lines = [
    `machine: ${m.cores} cores (${m.cpuModel}), ${m.memoryGB} GB, ${m.os}, Node ${m.node}; load average ${m.loadAvgAtStart.join(' ')} at start${m.loadAvgAtEnd ? `, ${m.loadAvgAtEnd.join(' ')} at end` : ''}`,
    `nodes: ${versions}; started ${report.startedAt}`,
  ];
  if ((report.cases ?? []).some((c) => c.workload !== 'ceiling')) {
    lines.push(
      `transactions: generator of ${o.kinds.join(' + ')} (a worker thread per sender, raw keep-alive HTTP, pre-signed), receipts polled every ${o.pollMs} ms while none comes, <= ${o.maxPending} without receipt per sender`,
    );
  }
  if (report.ceiling) {
    lines.push(`generator ceiling (canned server), before the nodes: ${describeLoad(report.ceiling)}`);
  }
  if (report.ceilingAfter) {
    lines.push(`generator ceiling (canned server), after the nodes: ${describeLoad(report.ceilingAfter)}`);
  }
  if (o.workloads.includes('reads')) {
    lines.push(
      `reads: ${o.readSeconds} s per row (after ${o.readWarmupSeconds} s warm-up) at ${o.readConcurrency.join(' and ')} keep-alive connections, ${report.loader}`,
    );
  }
  if ((o.rounds ?? 1) > 1) {
    lines.push(
      `rounds: ${o.rounds}, node order alternating; figures are medians over the rounds, ratios the median of each round's ratio`,
    );
  }
  return lines;
}

function columns(report: BenchReport): { head: string[]; cells(l: TableLine): string[] } {
  const t = report.options.targets;
  const refs = REFERENCES.filter((r) => t.includes(r) && t.includes('noded'));
  return {
    head: ['figure', 'unit', ...t, ...refs.map((r) => `noded/${r}`), 'target', ''],
    cells: (l) => [
      l.label,
      l.unit,
      ...t.map((x) => l.values[x] ?? '-'),
      ...refs.map((r) => l.ratios[r] ?? '-'),
      l.target,
      l.met,
    ],
  };
}

export function formatTable(report: BenchReport): string {
  const { head, cells } = columns(report);
  const all = [head, ...tableLines(report).map(cells)];
  const widths = head.map((_, i) => Math.max(...all.map((r) => r[i].length)));
  const numeric = (i: number) => i >= 2 && i < head.length - 2;
  const line = (r: string[]) =>
    r
      .map((c, i) => (numeric(i) ? c.padStart(widths[i]) : c.padEnd(widths[i])))
      .join('  ')
      .trimEnd();
  const rule = '-'.repeat(line(head).length);
  return [...headerLines(report), rule, line(head), rule, ...all.slice(1).map(line), rule].join('\n');
}

export function formatMarkdown(report: BenchReport): string {
  const out = [
    '# noded beside anvil and Hardhat: benchmark run',
    '',
    ...headerLines(report).map((l) => `- ${l}`),
    '',
  ];
  const { head, cells } = columns(report);
  out.push(`| ${head.join(' | ')} |`);
  out.push(`|${head.map((_, i) => (i >= 2 && i < head.length - 2 ? '---:' : '---')).join('|')}|`);
  for (const l of tableLines(report)) out.push(`| ${cells(l).join(' | ')} |`);
  out.push('');
  if ((report.options.rounds ?? 1) > 1) {
    out.push("Each round's ratio, in round order:", '');
    for (const row of rows(report).filter((r) => r.target)) {
      const { rounds } = rowFigures(report, row);
      const parts = Object.entries(rounds).map(
        ([ref, xs]) => `noded/${ref} ${xs.map((x) => `${x.toFixed(2)}x`).join(', ') || '-'}`,
      );
      out.push(`- ${row.label}: ${parts.join('; ')}`);
    }
    out.push('');
  }
  const cpu = cpuLines(report);
  if (cpu.length > 0) {
    const { head, cells } = cpuColumns(cpu);
    out.push(
      "CPU per 1,000 requests by process (ms; transaction loads per 1,000 receipts in hand; main-thread = the node's main thread and rocksdb = RocksDB's compaction and flush threads, both within all; all = every process of the node, generator = the bench process):",
      '',
      `| ${head.join(' | ')} |`,
      `|${head.map((_, i) => (i >= 2 ? '---:' : '---')).join('|')}|`,
      ...cpu.map((l) => `| ${cells(l).join(' | ')} |`),
      '',
    );
  }
  for (const r of report.runs) {
    const notes: string[] = [];
    if (r.error) notes.push(`error: ${r.error.split('\n')[0]}`);
    for (const c of report.cases ?? []) {
      const l = r.loads?.[c.id];
      if (l) {
        const complete = loadComplete(l, c.workload === 'sustained');
        notes.push(`${c.label}: ${describeLoad(l)}${complete ? '' : ' (INCOMPLETE: left out of the table)'}`);
      }
      const skip = r.skipped?.[c.id];
      if (skip) notes.push(`${c.label}: ${skip}`);
    }
    for (const [k, b] of [
      ['value transfers', r.transfers],
      ['ERC-20 transfers', r.erc20],
    ] as const) {
      if (!b) continue;
      notes.push(
        `${k} (node:http burst): ${b.confirmed}/${b.planned} confirmed, ${b.refused} refused, ${b.missing} missing${b.timedOut ? ' (TIMED OUT)' : ''}; ${b.blocks} blocks`,
      );
    }
    for (const [k, x] of Object.entries(r.reads)) {
      if (x?.errors) notes.push(`${k}: ${x.errors} errors of ${x.requests}`);
    }
    for (const [k, v] of Object.entries(r.readNotes ?? {})) notes.push(`${k}: ${v}`);
    if (notes.length)
      out.push(`${r.target}${r.version ? ` (${r.version})` : ''}:`, ...notes.map((n) => `- ${n}`), '');
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

/** Columns of the CPU table: a cluster's processes in start order, then every node process, then the generator. */
const CPU_COLUMNS = [
  'nats-server',
  'executor',
  'consensus',
  'state-store',
  'rpc-edge',
  'rpc-edge-1',
  'rpc-edge-2',
  'haproxy',
  'main-thread',
  'rocksdb',
  'all',
  'generator',
];

export interface CpuLine {
  workload: string;
  target: TargetName;
  /** CPU ms per 1,000 requests (reads) or receipts in hand (transactions), median over rounds. */
  per1k: Record<string, number>;
}

/**
 * CPU per 1,000 requests by process, for each transaction load and read row of each node: where the
 * work goes in a cluster (which process would gain from a machine of its own), beside the all-in-one
 * node and the references, whose processes count as one (`all`). `generator` is this bench process.
 */
export function cpuLines(report: BenchReport): CpuLine[] {
  const out: CpuLine[] = [];
  const workloads: Array<[string, (r: TargetRun) => Record<string, number> | undefined]> = [];
  for (const c of report.cases ?? []) {
    if (c.workload === 'ceiling') continue;
    workloads.push([
      `${c.label} (per 1,000 tx)`,
      (r) => {
        const l = r.loads?.[c.id];
        return l && loadComplete(l, c.workload === 'sustained') ? l.cpu?.per1k : undefined;
      },
    ]);
  }
  const o = report.options;
  if (o.workloads.includes('reads')) {
    const wanted = new Set(o.reads.map((k) => READ_METHODS[READ_KEY_ORDER.indexOf(k)]));
    for (const conc of o.readConcurrency)
      for (const m of READ_METHODS)
        if (wanted.has(m))
          workloads.push([`${m} @${conc} conns`, (r) => r.reads[readKey(m, conc)]?.cpuPer1k]);
  }
  for (const [workload, get] of workloads) {
    for (const t of o.targets) {
      const runs = [...runsOf(report, t).values()].map(get).filter((x) => x !== undefined);
      if (runs.length === 0) continue;
      const per1k: Record<string, number> = {};
      for (const col of CPU_COLUMNS) {
        const m = median(runs.map((x) => x[col]).filter(finite));
        if (m !== undefined) per1k[col] = m;
      }
      out.push({ workload, target: t, per1k });
    }
  }
  return out;
}

function cpuColumns(lines: CpuLine[]): { head: string[]; cells(l: CpuLine): string[] } {
  const cols = CPU_COLUMNS.filter((c) => lines.some((l) => l.per1k[c] !== undefined));
  return {
    head: ['CPU ms per 1,000 requests', 'node', ...cols],
    cells: (l) => [l.workload, l.target, ...cols.map((c) => fmt(l.per1k[c], 0))],
  };
}

/** The CPU table, or '' when no figure has one. */
export function formatCpuTable(report: BenchReport): string {
  const lines = cpuLines(report);
  if (lines.length === 0) return '';
  const { head, cells } = cpuColumns(lines);
  const all = [head, ...lines.map(cells)];
  const widths = head.map((_, i) => Math.max(...all.map((r) => r[i]!.length)));
  const line = (r: string[]) =>
    r
      .map((c, i) => (i >= 2 ? c.padStart(widths[i]!) : c.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  const rule = '-'.repeat(line(head).length);
  return [
    "CPU per 1,000 requests by process (ms; transaction loads per 1,000 receipts in hand; main-thread = the node's main thread and rocksdb = RocksDB's compaction and flush threads, both within all; all = every process of the node, generator = the bench process)",
    rule,
    line(head),
    rule,
    ...all.slice(1).map(line),
    rule,
  ].join('\n');
}
