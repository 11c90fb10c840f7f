// Command-line flags of `npm run bench` (node dist/bench/run.js [flags]).
import { parseArgs } from 'node:util';

export type TargetName = 'hardhat' | 'noded';
export type WorkloadName = 'transfers' | 'erc20' | 'reads' | 'sequential';
export type LoaderChoice = 'auto' | 'wrk' | 'node';
/** Short names of the read rows, in table order: eth_blockNumber, eth_getBalance, eth_call, eth_call over 4096 holders. */
export const READ_KEYS = ['blockNumber', 'getBalance', 'call', 'call-holders'] as const;
export type ReadKey = (typeof READ_KEYS)[number];

export interface BenchOptions {
  quick: boolean;
  targets: TargetName[];
  workloads: WorkloadName[];
  /** Read rows to run (READ_KEYS), all by default. */
  reads: ReadKey[];
  /** Measured value transfers (after `txWarmup` unmeasured ones). */
  transfers: number;
  /** Transfers sent one at a time, each after the previous one's receipt (a script's or a test's pace). */
  sequential: number;
  /** Measured ERC-20 transfers. */
  erc20: number;
  /** Unmeasured transactions sent first by each transaction workload. */
  txWarmup: number;
  /** Distinct sending accounts (dev accounts 1..K; account 0 deploys the token). */
  senders: number;
  /** Most unconfirmed transactions one sender keeps in flight; 0 = no limit. */
  window: number;
  /** Hard limit for one transaction workload, submit to last receipt. */
  txTimeoutSec: number;
  readSeconds: number;
  readWarmupSeconds: number;
  readConcurrency: number;
  loader: LoaderChoice;
  /** Seconds a freshly started node sits unloaded before its idle memory is read. */
  idleSettleSeconds: number;
  /** Run noded under `node --cpu-prof` and summarise the profile. */
  profile: boolean;
  /**
   * Rounds: each starts every target afresh and runs every workload, the order of the targets
   * alternating; the table shows each figure's median over the rounds, and each ratio is the median
   * of the rounds' own ratios (a round's two runs are minutes apart, all rounds are not).
   */
  rounds: number;
  /** Overrides [consensus] timeout_commit of the fresh noded home (default: what `noded init` wrote). */
  timeoutCommit?: string;
  /** Directory for results (default <repo>/bench/results). */
  outDir?: string;
}

export const USAGE = `usage: npm run bench -- [flags]   (or: node dist/bench/run.js [flags])

Starts a Hardhat node and a fresh noded chain-local node on 127.0.0.1 (one after the other), runs the
same workloads against each, prints one table with noded/Hardhat ratios and writes JSON + markdown
under bench/results/.

  --quick                    small counts for a smoke run
  --only hardhat|noded       run against one node only
  --workloads LIST           comma list of transfers,erc20,reads,sequential (default: all)
  --reads LIST               comma list of read rows: blockNumber,getBalance,call,call-holders (default: all)
  --transfers N              measured value transfers (default 6000, quick 200)
  --sequential N             transfers sent one at a time, each after the previous receipt (default 200, quick 50)
  --erc20 N                  measured ERC-20 transfers (default 6000, quick 200)
  --tx-warmup N              unmeasured transactions before each measured burst (default 100, quick 20)
  --senders K                sending accounts, 1..19 (default 19, quick 8)
  --window W                 unconfirmed transactions in flight per sender, 0 = no limit (default 250:
                             19 senders stay within noded's 5,000-transaction pool)
  --tx-timeout SEC           limit for one transaction burst (default 300, quick 120)
  --read-seconds S           measured seconds per read method (default 10, quick 3)
  --read-warmup S            warm-up seconds per read method (default 2, quick 1)
  --read-concurrency C       connections kept busy by the read load (default 8)
  --loader auto|wrk|node     read load generator: wrk if installed (auto), or the built-in node:http loop
  --idle-settle S            seconds a started node idles before its idle memory is read (default 5, quick 2)
  --rounds R                 run both nodes R times in alternating order; medians in the table (default 1)
  --profile                  run noded under node --cpu-prof and print its top self-time functions
  --timeout-commit DUR       override noded's [consensus] timeout_commit (e.g. 500ms)
  --out DIR                  results directory (default bench/results)
  -h, --help                 this text`;

export class UsageError extends Error {
  readonly code = 'BENCH_USAGE';
}

function int(name: string, raw: string | undefined, fallback: number, min: number, max: number): number {
  if (raw === undefined) return fallback;
  if (!/^\d+$/.test(raw)) throw new UsageError(`--${name} ${raw}: expected a whole number`);
  const v = Number(raw);
  if (v < min || v > max) throw new UsageError(`--${name} ${raw}: must be between ${min} and ${max}`);
  return v;
}

/** Parses argv (without node and script); returns null when help was asked for. */
export function parseBenchArgs(argv: string[]): BenchOptions | null {
  const { values } = parseArgs({
    args: argv,
    strict: true,
    allowPositionals: false,
    options: {
      quick: { type: 'boolean', default: false },
      only: { type: 'string' },
      workloads: { type: 'string' },
      reads: { type: 'string' },
      transfers: { type: 'string' },
      sequential: { type: 'string' },
      erc20: { type: 'string' },
      'tx-warmup': { type: 'string' },
      senders: { type: 'string' },
      window: { type: 'string' },
      'tx-timeout': { type: 'string' },
      'read-seconds': { type: 'string' },
      'read-warmup': { type: 'string' },
      'read-concurrency': { type: 'string' },
      loader: { type: 'string' },
      'idle-settle': { type: 'string' },
      profile: { type: 'boolean', default: false },
      rounds: { type: 'string' },
      'timeout-commit': { type: 'string' },
      out: { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) return null;
  const quick = values.quick === true;

  let targets: TargetName[] = ['hardhat', 'noded'];
  if (values.only !== undefined) {
    if (values.only !== 'hardhat' && values.only !== 'noded') {
      throw new UsageError(`--only ${values.only}: expected hardhat or noded`);
    }
    targets = [values.only];
  }

  const all: WorkloadName[] = ['transfers', 'erc20', 'reads', 'sequential'];
  let workloads = all;
  if (values.workloads !== undefined) {
    const asked = values.workloads.split(',').map((s) => s.trim());
    for (const w of asked) {
      if (!all.includes(w as WorkloadName)) {
        throw new UsageError(
          `--workloads ${values.workloads}: unknown workload "${w}" (use ${all.join(',')})`,
        );
      }
    }
    workloads = all.filter((w) => asked.includes(w));
  }

  let reads: ReadKey[] = [...READ_KEYS];
  if (values.reads !== undefined) {
    const asked = values.reads.split(',').map((s) => s.trim());
    for (const r of asked) {
      if (!(READ_KEYS as readonly string[]).includes(r)) {
        throw new UsageError(`--reads ${values.reads}: unknown read "${r}" (use ${READ_KEYS.join(',')})`);
      }
    }
    reads = READ_KEYS.filter((r) => asked.includes(r));
  }

  const loader = (values.loader ?? 'auto') as LoaderChoice;
  if (!['auto', 'wrk', 'node'].includes(loader)) {
    throw new UsageError(`--loader ${values.loader}: expected auto, wrk or node`);
  }
  const timeoutCommit = values['timeout-commit'];
  if (timeoutCommit !== undefined && !/^\d+(ms|s)$/.test(timeoutCommit)) {
    throw new UsageError(`--timeout-commit ${timeoutCommit}: expected a duration such as 500ms or 1s`);
  }

  return {
    quick,
    targets,
    workloads,
    reads,
    transfers: int('transfers', values.transfers, quick ? 200 : 6000, 1, 100_000),
    sequential: int('sequential', values.sequential, quick ? 50 : 200, 1, 10_000),
    erc20: int('erc20', values.erc20, quick ? 200 : 6000, 1, 100_000),
    txWarmup: int('tx-warmup', values['tx-warmup'], quick ? 20 : 100, 0, 10_000),
    senders: int('senders', values.senders, quick ? 8 : 19, 1, 19),
    window: int('window', values.window, 250, 0, 100_000),
    txTimeoutSec: int('tx-timeout', values['tx-timeout'], quick ? 120 : 300, 5, 3600),
    readSeconds: int('read-seconds', values['read-seconds'], quick ? 3 : 10, 1, 600),
    readWarmupSeconds: int('read-warmup', values['read-warmup'], quick ? 1 : 2, 0, 60),
    readConcurrency: int('read-concurrency', values['read-concurrency'], 8, 1, 256),
    loader,
    idleSettleSeconds: int('idle-settle', values['idle-settle'], quick ? 2 : 5, 0, 120),
    profile: values.profile === true,
    rounds: int('rounds', values.rounds, 1, 1, 9),
    timeoutCommit,
    outDir: values.out,
  };
}
