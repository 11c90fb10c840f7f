// `npm run bench:blocksync`: how fast a fresh full node catches up (issue 21, block sync).
// A chain-local network of `--validators V` (default 4, as the figure) plus one full node
// (and `--peers P - V` more full nodes that follow the chain and serve beside the validators, when P
// is above V), written by `noded testnet` on random loopback IPs, each node its own process:
//   1. one validator: it mines `--empty` empty blocks (hardhat_mine, every block a real consensus
//      height), then `--full` blocks of `--txs` value transfers each (automine off, the transfers
//      sent, then one evm_mine per block). Several validators (the dev mining methods are a single
//      validator's): they make empty blocks back to back (create_empty_blocks_interval "0s") until
//      the chain passes `--empty`, are restarted with create_empty_blocks = false (the chain then
//      stands still), and each of the `--full` rounds sends `--txs` transfers to the first validator
//      and waits until all are in blocks (a round may take more than one block: the count is shown);
//   2. the full node starts from genesis; its height is polled every 10 ms, and blocks/s is taken
//      over the empty range (from its first applied block) and over the transfer blocks;
//   3. its `block sync progress` log lines say where its time went (verify, execute, store, waiting
//      for blocks).
// `--snapshot DIR` keeps the prepared chain (step 1 takes minutes; the sync seconds): the first run
// stops the serving nodes once they are at the tip, copies their homes and the fresh node's into
// DIR/validators-V (one per validator count), and restarts them; later runs with the same DIR and
// sizes start from a copy of it instead of mining. The chain is the same for every build run against it, so A/B pairs sync the same blocks.
// Output: a summary on stdout and JSON under bench/results/.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { getBytes } from 'ethers';
import { parse, stringify } from 'smol-toml';
import { currentFees, type DevAccount, devAccounts, type Fees, fastSignTx, receivers } from './chain.js';
import { JsonRpcClient } from './rpc.js';
import { NODED_CLI, repoRoot } from './targets.js';

const log = (msg: string) => console.log(`[bench:blocksync] ${msg}`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Args {
  /** Validators of the source chain (the figure is for 4). */
  validators: number;
  empty: number;
  full: number;
  txs: number;
  /** Peers serving the syncing node at least: every validator, and full nodes at the tip for the rest. */
  peers: number;
  /** A directory that keeps the prepared chain for later runs (empty: none). */
  snapshot: string;
}

/** What a snapshot holds beside the homes: the sizes it was made with and where its ranges end. */
interface SnapshotMeta {
  start: string;
  /** Absent in snapshots made before --validators: 1. */
  validators?: number;
  empty: number;
  full: number;
  txs: number;
  peers: number;
  emptyTip: number;
  tip: number;
  fullTxs: number;
  sent: number;
}

function parseArgs(argv: string[]): Args {
  const a: Args = { validators: 4, empty: 3000, full: 200, txs: 200, peers: 1, snapshot: '' };
  for (let i = 0; i < argv.length; i++) {
    const k = argv[i];
    if (k === '--snapshot') {
      const dir = argv[i + 1];
      if (!dir) throw new Error('--snapshot needs a directory');
      a.snapshot = resolve(dir);
      i++;
      continue;
    }
    const v = Number(argv[i + 1]);
    if (k !== '--empty' && k !== '--full' && k !== '--txs' && k !== '--peers' && k !== '--validators')
      throw new Error(
        `unknown option ${k} (use --validators N --empty N --full N --txs N --peers N --snapshot DIR)`,
      );
    if (!Number.isInteger(v) || v < 0)
      throw new Error(`${k} needs a non-negative integer, got ${argv[i + 1]}`);
    a[k.slice(2) as 'empty' | 'full' | 'txs' | 'peers' | 'validators'] = v;
    i++;
  }
  if (a.txs > 20 * 60) throw new Error('--txs is at most 1200 (20 senders, 60 each per block)');
  if (a.peers < 1 || a.peers > 8) throw new Error(`--peers is 1..8, got ${a.peers}`);
  if (a.validators < 1 || a.validators > 8) throw new Error(`--validators is 1..8, got ${a.validators}`);
  return a;
}

const running = new Set<ChildProcess>();

/** CPU time (user + system, all threads) a child process has used so far, in ms; 0 once it is gone. */
function cpuMs(p: ChildProcess): number {
  try {
    // Fields after the command's closing parenthesis: state is the 3rd, utime the 14th, stime the 15th.
    const stat = readFileSync(`/proc/${p.pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(f[11]) + Number(f[12])) * 1000) / CLOCK_TICKS;
  } catch {
    return 0;
  }
}
/** USER_HZ, the unit of /proc/<pid>/stat times: 100 on Linux. */
const CLOCK_TICKS = 100;

async function comet(ip: string, path: string): Promise<Record<string, unknown>> {
  const res = await fetch(`http://${ip}:26657${path}`, { signal: AbortSignal.timeout(5000) });
  const j = (await res.json()) as { result?: Record<string, unknown> };
  if (!j.result) throw new Error(`${path}: no result`);
  return j.result;
}

async function height(ip: string): Promise<number> {
  try {
    const st = await comet(ip, '/status');
    return Number((st.sync_info as Record<string, unknown>).latest_block_height);
  } catch {
    return -1;
  }
}

async function waitFor(what: string, ms: number, ok: () => Promise<boolean>): Promise<void> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await ok()) return;
    await sleep(100);
  }
  throw new Error(`${what}: not within ${ms} ms`);
}

const PARTS = ['verifyMs', 'executeMs', 'commitMs', 'storeMs', 'publishMs', 'otherMs', 'waitMs'] as const;
/** Blocks, time per part, and how often the applier waited on the commit thread's verdict. */
type Progress = { blocks: number; verdictWaits: number } & Record<(typeof PARTS)[number], number>;

/**
 * Sums the `block sync progress` lines of a node's JSON log: those ending at or below `split` (the
 * empty blocks) and those above it (the transfer blocks); a line that spans both counts as the first.
 */
function progressOf(logFile: string, split: number): { empty: Progress; full: Progress } {
  const zero = (): Progress => {
    const p = { blocks: 0, verdictWaits: 0 } as Progress;
    for (const k of PARTS) p[k] = 0;
    return p;
  };
  const out = { empty: zero(), full: zero() };
  for (const line of readFileSync(logFile, 'utf8').split('\n')) {
    if (!line.includes('block sync progress')) continue;
    const j = JSON.parse(line) as Record<string, number>;
    const sum = (j.height ?? 0) - (j.blocks ?? 0) < split ? out.empty : out.full;
    sum.blocks += j.blocks ?? 0;
    sum.verdictWaits += j.verdictWaits ?? 0;
    for (const k of PARTS) sum[k] += j[k] ?? 0;
  }
  return out;
}

/**
 * Round `b` of at most `txs` value transfers, `perSender` from each sender in turn (nonces
 * continuing from the rounds before), and the next nonce of each sender that sent.
 */
function transferRound(
  senders: DevAccount[],
  keys: Uint8Array[],
  to: string[],
  fees: Fees,
  perSender: number,
  b: number,
  txs: number,
): { batch: string[]; nonces: Map<string, number> } {
  const batch: string[] = [];
  const nonces = new Map<string, number>();
  for (let x = 0; x < senders.length && batch.length < txs; x++) {
    for (let k = 0; k < perSender && batch.length < txs; k++) {
      const tx = fastSignTx(keys[x]!, senders[x]!.address, fees, {
        to: to[(x * 7 + k + b) % to.length]!,
        value: 1n,
        gasLimit: 21_000n,
        nonce: b * perSender + k,
      });
      batch.push(tx.raw);
      nonces.set(senders[x]!.address, b * perSender + k + 1);
    }
  }
  return { batch, nonces };
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  process.on('SIGINT', () => {
    for (const p of running) p.kill('SIGKILL');
    process.exit(130);
  });
  const dir = mkdtempSync(join(tmpdir(), 'noded-benchsync-'));
  const out = join(dir, 'net');
  // One snapshot per validator count under DIR.
  const snapDir = args.snapshot ? join(args.snapshot, `validators-${args.validators}`) : '';
  const metaFile = snapDir ? join(snapDir, 'meta.json') : '';
  let meta: SnapshotMeta | undefined;
  if (metaFile && existsSync(metaFile)) {
    meta = JSON.parse(readFileSync(metaFile, 'utf8')) as SnapshotMeta;
    for (const k of ['validators', 'empty', 'full', 'txs', 'peers'] as const)
      if ((meta[k] ?? 1) !== args[k])
        throw new Error(`snapshot ${snapDir} was made with --${k} ${meta[k] ?? 1}, not ${args[k]}`);
    cpSync(join(snapDir, 'net'), out, { recursive: true });
    log(`chain from snapshot ${snapDir}: ${meta.emptyTip} empty blocks, tip ${meta.tip}`);
  }
  const V = args.validators;
  // Full nodes serving beside the validators, so that at least --peers nodes serve.
  const fullServers = Math.max(0, args.peers - V);
  const start =
    meta?.start ?? `127.${10 + Math.floor(Math.random() * 240)}.${Math.floor(Math.random() * 250)}.2`;
  if (!meta) {
    const r = spawnSync(
      process.execPath,
      [
        NODED_CLI,
        'testnet',
        '--validators',
        String(V),
        '--non-validators',
        String(fullServers + 1),
        '--output',
        out,
        '--starting-ip',
        start,
      ],
      { encoding: 'utf8' },
    );
    if (r.status !== 0) throw new Error(`noded testnet failed: ${r.stderr}`);
  }
  const base = start.split('.').map(Number);
  // node0..node{V-1} the validators, then the full nodes that serve too, the last the syncing one.
  const n = V + fullServers + 1;
  const ips = Array.from({ length: n }, (_, i) => `${base[0]}.${base[1]}.${base[2]}.${base[3]! + i}`);
  const homes = Array.from({ length: n }, (_, i) => join(out, `node${i}`));
  const syncing = n - 1;
  /** Edits a node's config.toml. */
  const editConfig = (i: number, edit: (doc: Record<string, Record<string, unknown>>) => void) => {
    const file = join(homes[i]!, 'config', 'config.toml');
    const doc = parse(readFileSync(file, 'utf8')) as Record<string, Record<string, unknown>>;
    edit(doc);
    writeFileSync(file, stringify(doc));
  };
  if (!meta) {
    for (let i = 0; i < n; i++)
      editConfig(i, (doc) => {
        doc.instrumentation!.prometheus = false;
        // Several validators make empty blocks back to back, without the dev chain's 1 s pause.
        if (V > 1 && i < V) {
          doc.consensus!.create_empty_blocks = true;
          doc.consensus!.create_empty_blocks_interval = '0s';
          // The next height as soon as every precommit is in (testnet keeps the seed's 1 s wait).
          doc.consensus!.skip_timeout_commit = true;
        }
      });
  }
  const logs = homes.map((h) => join(h, 'bench.log'));
  const startNode = (i: number): ChildProcess => {
    const p = spawn(
      process.execPath,
      [
        ...(i === syncing && process.env.BENCH_SYNC_CPU_PROF
          ? ['--cpu-prof', '--cpu-prof-dir', process.env.BENCH_SYNC_CPU_PROF]
          : []),
        NODED_CLI,
        'start',
        '--home',
        homes[i]!,
        '--log-level',
        'info',
        '--log-file',
        logs[i]!,
      ],
      { stdio: 'ignore' },
    );
    running.add(p);
    p.once('exit', () => running.delete(p));
    return p;
  };
  /** Step 1: the validator mines the empty blocks, then the transfer blocks. */
  const mine = async (): Promise<SnapshotMeta> => {
    const v = ips[0]!;
    const rpc = new JsonRpcClient(`http://${v}:8545`, { timeoutMs: 600_000 });
    await waitFor('validator JSON-RPC up', 60_000, () =>
      rpc.call('eth_blockNumber').then(
        () => true,
        () => false,
      ),
    );
    await rpc.call('evm_setAutomine', [false]);
    const t0 = performance.now();
    for (let left = args.empty; left > 0; left -= 100)
      await rpc.call('hardhat_mine', [`0x${Math.min(left, 100).toString(16)}`]);
    const emptyTip = await height(v);
    log(
      `validator at ${emptyTip} after ${args.empty} empty blocks (${(performance.now() - t0).toFixed(0)} ms)`,
    );

    const senders = devAccounts(20);
    const keys = senders.map((s) => getBytes(s.key.privateKey));
    const to = receivers(64);
    const fees = await currentFees(rpc, 4n);
    const perSender = Math.ceil(args.txs / senders.length);
    let sent = 0;
    for (let b = 0; b < args.full; b++) {
      const { batch } = transferRound(senders, keys, to, fees, perSender, b, args.txs);
      const res = await rpc.batch(batch.map((raw) => ({ method: 'eth_sendRawTransaction', params: [raw] })));
      const bad = res.find((x) => x instanceof Error);
      if (bad) throw bad;
      sent += batch.length;
      await rpc.call('evm_mine');
    }
    rpc.close();
    const tip = await height(v);
    const fullTxs = Number(
      ((await comet(v, `/block?height=${tip}`)).block as { data: { txs: unknown[] } }).data.txs.length,
    );
    log(
      `validator at ${tip}: ${args.full} blocks of transfers (${sent} sent; the last block holds ${fullTxs})`,
    );
    return {
      start,
      empty: args.empty,
      full: args.full,
      txs: args.txs,
      peers: args.peers,
      emptyTip,
      tip,
      fullTxs,
      sent,
    };
  };
  /** Stops nodes gracefully (their databases closed) and waits until they are gone. */
  const stopNodes = async (procs: ChildProcess[]) => {
    const gone = procs.map((p) => new Promise((r) => (p.exitCode !== null ? r(0) : p.once('exit', r))));
    for (const p of procs) p.kill('SIGTERM');
    await Promise.all(gone);
  };
  /**
   * Step 1 with several validators: empty blocks back to back until the chain passes --empty, then
   * the validators restarted with create_empty_blocks = false (the chain stands still but for
   * transactions), then --full rounds of --txs transfers, each waited for until all are in blocks.
   */
  const mineValidators = async (servers: ChildProcess[]): Promise<SnapshotMeta> => {
    const v = ips[0]!;
    const t0 = performance.now();
    let last = 0;
    await waitFor(`the validators at height ${args.empty}`, 3_600_000, async () => {
      const h = await height(v);
      if (h >= last + 500) {
        last = h;
        log(`validators at ${h} (${((h * 1000) / (performance.now() - t0)).toFixed(0)} blocks/s)`);
      }
      return h >= args.empty;
    });
    await stopNodes(servers.slice(0, V));
    for (let i = 0; i < V; i++)
      editConfig(i, (doc) => {
        doc.consensus!.create_empty_blocks = false;
      });
    for (let i = 0; i < V; i++) servers[i] = startNode(i);
    // The tip once the restarted validators stand still (3 s without a new block).
    let emptyTip = -1;
    let since = performance.now();
    await waitFor('the restarted validators standing still', 120_000, async () => {
      const h = await height(v);
      if (h !== emptyTip) {
        emptyTip = h;
        since = performance.now();
      }
      return h > 0 && performance.now() - since >= 3000;
    });
    log(`${V} validators at ${emptyTip} after the empty blocks (${(performance.now() - t0).toFixed(0)} ms)`);

    const rpc = new JsonRpcClient(`http://${v}:8545`, { timeoutMs: 120_000 });
    const senders = devAccounts(20);
    const keys = senders.map((x) => getBytes(x.key.privateKey));
    const to = receivers(64);
    const fees = await currentFees(rpc, 4n);
    const perSender = Math.ceil(args.txs / senders.length);
    let sent = 0;
    for (let b = 0; b < args.full; b++) {
      const { batch, nonces } = transferRound(senders, keys, to, fees, perSender, b, args.txs);
      const res = await rpc.batch(batch.map((raw) => ({ method: 'eth_sendRawTransaction', params: [raw] })));
      const bad = res.find((x) => x instanceof Error);
      if (bad) throw bad;
      sent += batch.length;
      const who = [...nonces.keys()];
      await waitFor(`round ${b + 1} of transfers in blocks`, 120_000, async () => {
        const counts = await rpc.batch(
          who.map((a) => ({ method: 'eth_getTransactionCount', params: [a, 'latest'] })),
        );
        return counts.every((c, i) => !(c instanceof Error) && Number(c) >= nonces.get(who[i]!)!);
      });
    }
    rpc.close();
    const tip = await height(v);
    const fullTxs = args.full > 0 ? Math.round(sent / Math.max(1, tip - emptyTip)) : 0;
    if (args.full > 0)
      log(
        `validators at ${tip}: ${sent} transfers in ${tip - emptyTip} blocks (${fullTxs} a block on average)`,
      );
    return {
      start,
      validators: V,
      empty: args.empty,
      full: args.full,
      txs: args.txs,
      peers: args.peers,
      emptyTip,
      tip,
      fullTxs,
      sent,
    };
  };
  const results: Record<string, unknown> = {
    when: new Date().toISOString(),
    machine: { cpus: cpus().length, model: cpus()[0]?.model, loadavg: loadavg() },
    args,
  };
  try {
    // The serving full nodes follow the validators from the start.
    const servers = Array.from({ length: syncing }, (_, i) => startNode(i));
    const v = ips[0]!;
    await waitFor('validator up', 60_000, async () => (await height(v)) >= 1);
    const chain = meta ?? (V > 1 ? await mineValidators(servers) : await mine());
    const { emptyTip, tip, fullTxs } = chain;
    for (let i = V; i < syncing; i++)
      await waitFor(`serving full node ${i} at the tip`, 600_000, async () => (await height(ips[i]!)) >= tip);
    if (fullServers > 0) log(`${fullServers} full nodes at ${tip}, serving beside the validators`);
    if (args.snapshot && !meta) {
      // Stopped gracefully so that their databases are closed, copied, and started again.
      await stopNodes(servers);
      rmSync(snapDir, { recursive: true, force: true });
      cpSync(out, join(snapDir, 'net'), { recursive: true });
      writeFileSync(metaFile, `${JSON.stringify(chain, null, 2)}\n`);
      log(`chain kept in ${snapDir}`);
      for (let i = 0; i < syncing; i++) servers[i] = startNode(i);
    }
    for (let i = 0; i < syncing; i++)
      await waitFor(`serving node ${i} up at the tip`, 120_000, async () => (await height(ips[i]!)) >= tip);

    // 2. The fresh full node catches up.
    const f = ips[syncing]!;
    const syncProc = startNode(syncing);
    // CPU time of the syncing node and of the serving ones (all threads, /proc), at the first
    // height seen (after the node's start-up) and when the empty range is in: on a shared machine
    // CPU ms per block moves less with the load than blocks per second does.
    const cpuNow = () => [cpuMs(syncProc), servers.reduce((a, p) => a + cpuMs(p), 0)];
    let cpuAtStart = [0, 0];
    let cpuAtEmpty = [0, 0];
    let cpuAtTip = [0, 0];
    let first = -1;
    let tFirst = 0;
    let tEmpty = 0;
    let tTip = 0;
    const end = Date.now() + 900_000;
    for (;;) {
      if (Date.now() > end) throw new Error(`the full node did not reach ${tip}`);
      const h = await height(f);
      const now = performance.now();
      if (first < 0 && h > 0) {
        first = h;
        tFirst = now;
        cpuAtStart = cpuNow();
      }
      if (tEmpty === 0 && h >= emptyTip) {
        tEmpty = now;
        cpuAtEmpty = cpuNow();
      }
      if (h >= tip) {
        tTip = now;
        cpuAtTip = cpuNow();
        break;
      }
      await sleep(10);
    }
    const [hv, hf] = await Promise.all([comet(v, `/block?height=${tip}`), comet(f, `/block?height=${tip}`)]);
    const agree = (hv.block_id as { hash: string }).hash === (hf.block_id as { hash: string }).hash;
    if (!agree) throw new Error(`the full node holds another block at ${tip}`);
    // Each range is measured over the blocks of it the poll saw applied: from the first height seen
    // (or the empty tip, whichever is later) to its end. With --empty 0 (or an empty range the node
    // had passed by the first poll) there is no empty range to rate: null, not +-Infinity.
    const emptyBlocks = emptyTip - first;
    const emptyRate = emptyBlocks > 0 ? emptyBlocks / ((tEmpty - tFirst) / 1000) : null;
    const cpuPerEmptyBlock =
      emptyBlocks > 0
        ? {
            syncing: (cpuAtEmpty[0]! - cpuAtStart[0]!) / emptyBlocks,
            serving: (cpuAtEmpty[1]! - cpuAtStart[1]!) / emptyBlocks,
          }
        : null;
    const fullBlocks = tip - Math.max(first, emptyTip);
    const fullRate = args.full > 0 && fullBlocks > 0 ? fullBlocks / ((tTip - tEmpty) / 1000) : null;
    const cpuPerFullBlock =
      args.full > 0 && fullBlocks > 0
        ? {
            syncing: (cpuAtTip[0]! - cpuAtEmpty[0]!) / fullBlocks,
            serving: (cpuAtTip[1]! - cpuAtEmpty[1]!) / fullBlocks,
          }
        : null;
    const rate = (r: number | null) => (r === null ? 'none seen' : `${r.toFixed(0)} blocks/s`);
    await sleep(1500);
    // With --empty 0 the few blocks before the first transfers are not an empty range: every
    // progress line counts as transfer blocks (a line covers many heights, so a split at height 3
    // would put the first line's transfer blocks under "empty").
    const progress = progressOf(logs[syncing]!, args.empty > 0 ? emptyTip : 0);
    results.sync = {
      first,
      emptyTip,
      tip,
      emptyBlocksPerSec: emptyRate,
      emptyMs: tEmpty - tFirst,
      cpuPerEmptyBlock,
      fullBlocksPerSec: fullRate,
      cpuPerFullBlock,
      fullMs: tTip - tEmpty,
      txsPerFullBlock: fullTxs,
      sameBlockAtTip: agree,
      progress,
    };
    // The poll sees heights as published, in sync-point steps of up to 100 blocks: a range it saw
    // less than half of is said so (the node's log below is the measure then).
    const partly = (seen: number, all: number) =>
      seen < all / 2 ? ` [polled over ${seen} of its ${all} blocks only: see the node's log]` : '';
    log(
      `sync (polled; first height seen ${first}): empty blocks ..${emptyTip}: ${rate(emptyRate)} (${(tEmpty - tFirst).toFixed(0)} ms)${emptyRate === null ? '' : partly(emptyBlocks, emptyTip)}; ` +
        (args.full > 0
          ? `transfer blocks ${Math.max(first, emptyTip) + 1}..${tip}: ${rate(fullRate)} (${(tTip - tEmpty).toFixed(0)} ms)${partly(fullBlocks, tip - emptyTip)}`
          : 'no transfer blocks'),
    );
    if (cpuPerEmptyBlock)
      log(
        `CPU ms per empty block (first height seen to the empty tip, all threads): syncing node ${cpuPerEmptyBlock.syncing.toFixed(2)}, ` +
          `serving nodes together ${cpuPerEmptyBlock.serving.toFixed(2)}`,
      );
    if (cpuPerFullBlock)
      log(
        `CPU ms per transfer block (all threads): syncing node ${cpuPerFullBlock.syncing.toFixed(2)}, ` +
          `serving nodes together ${cpuPerFullBlock.serving.toFixed(2)}`,
      );
    for (const [range, p] of Object.entries(progress)) {
      if (p.blocks === 0) continue;
      // The node's own clock: its applying and waiting time over the blocks of this range. The
      // polled rates above see heights as published, in steps of a sync point's batch (up to 100
      // blocks or 250 ms while catching up), which a range of a few dozen blocks cannot average out.
      const ms = PARTS.reduce((sum, k) => sum + p[k], 0);
      log(
        `${range} blocks, the syncing node's time per block (ms): ` +
          PARTS.map((k) => `${k.slice(0, -2)} ${(p[k] / p.blocks).toFixed(2)}`).join(', ') +
          ` (${p.blocks} blocks, ${p.verdictWaits} verdict waits): ${(p.blocks / (ms / 1000)).toFixed(0)} blocks/s by its log`,
      );
    }
    const resDir = join(repoRoot(), 'bench', 'results');
    mkdirSync(resDir, { recursive: true });
    const file = join(resDir, `blocksync-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
    writeFileSync(file, `${JSON.stringify(results, null, 2)}\n`);
    log(`results in ${file}`);
  } finally {
    // BENCH_SYNC_CPU_PROF=<dir>: the syncing node is stopped gracefully, so that it writes its profile.
    if (process.env.BENCH_SYNC_CPU_PROF) {
      for (const p of running) p.kill('SIGTERM');
      await sleep(5000);
    }
    for (const p of running) p.kill('SIGKILL');
    await sleep(300);
    if (!process.env.KEEP_BENCH_DIR) rmSync(dir, { recursive: true, force: true });
    else log(`kept ${dir}`);
  }
}

main().catch((err) => {
  console.error(err);
  for (const p of running) p.kill('SIGKILL');
  process.exit(1);
});
