// Command-line flags of `npm run bench` (node dist/bench/run.js [flags]).
import { parseArgs } from 'node:util';

/**
 * The nodes a run compares, in table order: noded all-in-one, then the same chain as the cluster's
 * services (nats-server, executor, consensus, state-store and one rpc-edge, or two behind haproxy);
 * anvil with one-second blocks is noded's closest peer.
 */
export const TARGETS = ['noded', 'cluster', 'cluster-2edges', 'anvil-1s', 'anvil', 'hardhat'] as const;
export type TargetName = (typeof TARGETS)[number];
/** The nodes every noded figure is divided by, one ratio column each. */
export const REFERENCES: TargetName[] = ['anvil-1s', 'anvil', 'hardhat'];
/**
 * ceiling: the load generator against a canned server (its own limit); load: value and ERC-20 transfer
 * bursts from 1/8/19 senders, sequential and pipelined; loop: one sender's send-receipt-next loop;
 * sustained: a fixed time of pipelined transfers; reads: closed-loop read load at 32 and 256 connections;
 * transfers/erc20: the earlier node:http bursts measured to block announcement (not run by default);
 * cast: the loop as a developer runs it, `cast send` after `cast send` (Foundry's CLI, from npm).
 */
export const WORKLOADS = [
  'ceiling',
  'load',
  'loop',
  'cast',
  'sustained',
  'reads',
  'transfers',
  'erc20',
] as const;
export type WorkloadName = (typeof WORKLOADS)[number];
export const DEFAULT_WORKLOADS: WorkloadName[] = ['ceiling', 'load', 'loop', 'cast', 'sustained', 'reads'];
export const TX_KINDS = ['transfer', 'erc20'] as const;
export type TxKind = (typeof TX_KINDS)[number];
export type LoaderChoice = 'auto' | 'wrk' | 'node';
/** Short names of the read rows, in table order: eth_blockNumber, eth_getBalance, eth_call, eth_call over 4096 holders. */
export const READ_KEYS = ['blockNumber', 'getBalance', 'call', 'call-holders', 'logs', 'receipt'] as const;
export type ReadKey = (typeof READ_KEYS)[number];

export interface BenchOptions {
  quick: boolean;
  targets: TargetName[];
  workloads: WorkloadName[];
  /** Read rows to run (READ_KEYS), all by default. */
  reads: ReadKey[];
  /** Measured value transfers (after `txWarmup` unmeasured ones). */
  transfers: number;
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
  /** Connection counts of the read load; every read row runs at each. */
  readConcurrency: number[];
  loader: LoaderChoice;
  /** Transaction kinds of the load, loop and sustained workloads. */
  kinds: TxKind[];
  /** Sender counts of the load workload. */
  loadSenders: number[];
  /** eth_sendRawTransaction requests in flight per sender: 1 = sequential per sender, more = pipelined. */
  inflight: number[];
  /** Transactions per sender in one load burst. */
  perSender: number;
  /** Accepted transactions per sender without a receipt in hand, at most (the node pools' bound). */
  maxPending: number;
  /** Pause between receipt polls that brought nothing, ms. */
  pollMs: number;
  /** Transfers of the sequential loop (one sender: send, wait for the receipt, next). */
  loop: number;
  sustainedSeconds: number;
  /** Most transactions per second a sustained load can send: it pre-signs rate x seconds of them. */
  sustainedRate: number;
  /** Seconds the generator loads the canned server (its ceiling). */
  ceilingSeconds: number;
  /** Threads of the load generator (senders dealt round-robin over them). */
  generatorThreads: number;
  /** Seconds a freshly started node sits unloaded before its idle memory is read. */
  idleSettleSeconds: number;
  /**
   * Before the reads: seconds in a row the node must stay under READS_QUIET_CORES of CPU (the
   * compaction, indexing and idle reclaim a load leaves behind done); 0: start the reads at once.
   */
  readSettleSeconds: number;
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

Starts noded chain-local (all-in-one, then as the cluster's services with one rpc-edge and with two
behind haproxy), anvil with 1 s blocks, anvil (automine) and a Hardhat node on 127.0.0.1 (one after
the other, each fresh), runs the same workloads against each, prints one table with every noded
figure divided by each other node's and one of CPU per 1,000 requests by process, and writes JSON +
markdown under bench/results/.

  --quick                    small counts for a smoke run (under 2 minutes)
  --targets LIST             comma list of noded,cluster,cluster-2edges,anvil-1s,anvil,hardhat (default: all)
  --only NAME                one node only (same as --targets NAME)
  --workloads LIST           comma list of ceiling,load,loop,cast,sustained,reads,transfers,erc20
                             (default: ceiling,load,loop,cast,sustained,reads)
  --kinds LIST               transaction kinds: transfer,erc20 (default: both)
  --load-senders LIST        sender counts of the load bursts (default 1,8,19; quick 8)
  --inflight LIST            eth_sendRawTransaction requests in flight per sender (default 1,16)
  --per-sender N             transactions per sender in one load burst (default 100, quick 10)
  --max-pending N            accepted transactions per sender without a receipt, at most (default 250)
  --poll-ms MS               pause between receipt polls that brought nothing (default 20)
  --loop N                   transfers of the sequential loop: send, wait for the receipt, next (default 200, quick 5);
                             also the number of \`cast send\` runs of the cast workload
  --sustained-seconds S      sending time of the sustained loads (default 60, quick 3)
  --sustained-rate R         most tx/s a sustained load can send (it pre-signs R x S; default 4000, quick 1000)
  --ceiling-seconds S        generator against the canned server (default 5, quick 2)
  --generator-threads N      worker threads of the load generator, senders dealt over them (default 2)
  --reads LIST               comma list of read rows: blockNumber,getBalance,call,call-holders,logs,receipt
                             (default: all; quick blockNumber,getBalance)
  --transfers N              measured value transfers of the transfers workload (default 6000, quick 200)
  --erc20 N                  measured ERC-20 transfers of the erc20 workload (default 6000, quick 200)
  --tx-warmup N              unmeasured transactions before each measured burst (default 100, quick 20)
  --senders K                sending accounts, 1..19 (default 19, quick 8)
  --window W                 unconfirmed transactions in flight per sender, 0 = no limit (default 250:
                             19 senders stay within noded's 5,000-transaction pool)
  --tx-timeout SEC           a load gives up after this long without a receipt (default 120, quick 10)
  --read-seconds S           measured seconds per read method (default 10, quick 1)
  --read-warmup S            warm-up seconds per read method (default 2, quick 0)
  --read-concurrency LIST    connection counts of the read load, each row at each (default 32,256; quick 32)
  --loader auto|wrk|node     read load generator: wrk if installed (auto), or the built-in node:http loop
  --idle-settle S            seconds a started node idles before its idle memory is read (default 5, quick 1)
  --read-settle S            before the reads, wait (up to 120 s) until the node has used under 0.15 cores
                             for S seconds in a row, so that what the loads left behind (compaction, the
                             index catching up, the idle reclaim 15 s after a load) is done (default 25,
                             quick 0; 0: at once)
  --rounds R                 run every node R times in alternating order; medians in the table (default 1)
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

/** A comma list of distinct whole numbers, each in [min, max], in the order given. */
function ints(name: string, raw: string | undefined, fallback: number[], min: number, max: number): number[] {
  if (raw === undefined) return fallback;
  const out = raw.split(',').map((x) => int(name, x.trim(), 0, min, max));
  if (new Set(out).size !== out.length) throw new UsageError(`--${name} ${raw}: a value is repeated`);
  return out;
}

/** A comma list of names from `known`, returned in `known`'s order; an unknown one is named. */
function names<T extends string>(
  name: string,
  raw: string | undefined,
  known: readonly T[],
  fallback: T[],
): T[] {
  if (raw === undefined) return fallback;
  const asked = raw.split(',').map((x) => x.trim());
  for (const a of asked) {
    if (!(known as readonly string[]).includes(a)) {
      throw new UsageError(
        `--${name} ${raw}: unknown ${name === 'targets' ? 'node' : name.replace(/s$/, '')} "${a}" (use ${known.join(',')})`,
      );
    }
  }
  return known.filter((k) => asked.includes(k));
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
      targets: { type: 'string' },
      kinds: { type: 'string' },
      'load-senders': { type: 'string' },
      inflight: { type: 'string' },
      'per-sender': { type: 'string' },
      'max-pending': { type: 'string' },
      'poll-ms': { type: 'string' },
      loop: { type: 'string' },
      'sustained-seconds': { type: 'string' },
      'sustained-rate': { type: 'string' },
      'ceiling-seconds': { type: 'string' },
      'generator-threads': { type: 'string' },
      workloads: { type: 'string' },
      reads: { type: 'string' },
      transfers: { type: 'string' },
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
      'read-settle': { type: 'string' },
      profile: { type: 'boolean', default: false },
      rounds: { type: 'string' },
      'timeout-commit': { type: 'string' },
      out: { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) return null;
  const quick = values.quick === true;

  if (values.only !== undefined && values.targets !== undefined) {
    throw new UsageError('--only and --targets: give one of them');
  }
  const targets = names('targets', values.targets ?? values.only, TARGETS, [...TARGETS]);
  const workloads = names('workloads', values.workloads, WORKLOADS, DEFAULT_WORKLOADS);
  const kinds = names('kinds', values.kinds, TX_KINDS, [...TX_KINDS]);

  // Quick: the two cheapest rows only (a smoke run of the read path, not a measurement).
  let reads: ReadKey[] = quick ? ['blockNumber', 'getBalance'] : [...READ_KEYS];
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
    erc20: int('erc20', values.erc20, quick ? 200 : 6000, 1, 100_000),
    txWarmup: int('tx-warmup', values['tx-warmup'], quick ? 20 : 100, 0, 10_000),
    senders: int('senders', values.senders, quick ? 8 : 19, 1, 19),
    window: int('window', values.window, 250, 0, 100_000),
    txTimeoutSec: int('tx-timeout', values['tx-timeout'], quick ? 10 : 120, 5, 3600),
    readSeconds: int('read-seconds', values['read-seconds'], quick ? 1 : 10, 1, 600),
    readWarmupSeconds: int('read-warmup', values['read-warmup'], quick ? 0 : 2, 0, 60),
    readConcurrency: ints('read-concurrency', values['read-concurrency'], quick ? [32] : [32, 256], 1, 1024),
    loader,
    kinds,
    loadSenders: ints('load-senders', values['load-senders'], quick ? [8] : [1, 8, 19], 1, 19),
    inflight: ints('inflight', values.inflight, [1, 16], 1, 256),
    perSender: int('per-sender', values['per-sender'], quick ? 10 : 100, 1, 100_000),
    maxPending: int('max-pending', values['max-pending'], 250, 1, 100_000),
    pollMs: int('poll-ms', values['poll-ms'], 20, 1, 10_000),
    loop: int('loop', values.loop, quick ? 5 : 200, 1, 100_000),
    sustainedSeconds: int('sustained-seconds', values['sustained-seconds'], quick ? 3 : 60, 1, 3600),
    sustainedRate: int('sustained-rate', values['sustained-rate'], quick ? 1000 : 4000, 1, 100_000),
    ceilingSeconds: int('ceiling-seconds', values['ceiling-seconds'], quick ? 2 : 5, 1, 600),
    generatorThreads: int('generator-threads', values['generator-threads'], 2, 1, 19),
    idleSettleSeconds: int('idle-settle', values['idle-settle'], quick ? 1 : 5, 0, 120),
    readSettleSeconds: int('read-settle', values['read-settle'], quick ? 0 : 25, 0, 110),
    profile: values.profile === true,
    rounds: int('rounds', values.rounds, 1, 1, 9),
    timeoutCommit,
    outDir: values.out,
  };
}
