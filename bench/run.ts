// `npm run bench`: noded chain-local, anvil with 1 s blocks, anvil automine and a Hardhat node, one after
// the other, under the same workloads; the load generator's own ceiling against a canned server first;
// one table with every noded figure divided by each other node's; raw figures as JSON and a markdown
// summary under bench/results/.
import { copyFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { getBytes } from 'ethers';
import { type BenchOptions, parseBenchArgs, type TargetName, USAGE, UsageError } from './args.js';
import { type LoadCase, loadCases, sendersNeeded } from './cases.js';
import { castLoop } from './cast.js';
import {
  compileToken,
  currentFees,
  type DevAccount,
  devAccounts,
  estimateGas,
  type Fees,
  fastSignTx,
  pendingNonce,
  receivers,
  type SignedTx,
  signTx,
} from './chain.js';
import { startCluster } from './cluster.js';
import { cpuSampler } from './cpu.js';
import { type LoadResult, loadComplete, runLoad } from './loadgen.js';
import { type MemorySample, sampleMemory } from './memory.js';
import { formatProfile, type ProfileSummary, type ProfileWindow, summarizeProfile } from './profile.js';
import { pickLoader, runReads } from './reads.js';
import {
  type BenchReport,
  describeLoad,
  formatCpuTable,
  formatMarkdown,
  formatTable,
  machineInfo,
  type ReadMethod,
  type ReadSettle,
  readKey,
  type TargetRun,
} from './report.js';
import { type HeadFeed, hexQty, JsonRpcClient, openHeadFeed } from './rpc.js';
import {
  type BenchTarget,
  castBinary,
  repoRoot,
  startAnvil,
  startHardhat,
  startNoded,
  startStub,
  stopAllTargets,
  threadProfiles,
} from './targets.js';
import { type BurstResult, burstComplete, runBurst } from './txburst.js';

const log = (msg: string) => console.log(`[bench] ${msg}`);

/** The target's CPU: each process of a cluster on its own, else the node's process tree. */
const nodeCpu = (t: BenchTarget) => cpuSampler(t.processes ?? t.pid);

/** Under this much CPU (cores, the node's whole process tree) a node counts as quiet before the reads. */
const READS_QUIET_CORES = 0.15;
/** The longest the reads wait for a node to go quiet, ms. */
const READS_SETTLE_MAX_MS = 120_000;

/**
 * Waits until the node has used under READS_QUIET_CORES for `quietSeconds` in a row, at most
 * READS_SETTLE_MAX_MS, so that the reads measure a node at rest rather than what the loads before
 * them left it doing; logs and returns how long that took and whether it went quiet.
 */
async function settle(name: string, target: BenchTarget, quietSeconds: number): Promise<ReadSettle> {
  const sample = nodeCpu(target);
  const start = performance.now();
  let prev = sample();
  let quietSince = prev.at;
  let busiest = 0;
  for (;;) {
    await sleep(1000);
    const cur = sample();
    const cores = (cur.nodeMs - prev.nodeMs) / (cur.at - prev.at);
    prev = cur;
    if (cores >= READS_QUIET_CORES) {
      quietSince = cur.at;
      busiest = Math.max(busiest, cores);
    }
    const waitedMs = cur.at - start;
    const quiet = cur.at - quietSince >= quietSeconds * 1000;
    if (quiet || waitedMs >= READS_SETTLE_MAX_MS) {
      log(
        quiet
          ? `${name}: quiet for ${quietSeconds} s before the reads, after ${(waitedMs / 1000).toFixed(0)} s (busiest second ${busiest.toFixed(2)} cores)`
          : `${name}: still busy after ${(waitedMs / 1000).toFixed(0)} s (${cores.toFixed(2)} cores in the last second); the reads start anyway`,
      );
      return { waitedMs, quiet, busiestCores: busiest };
    }
  }
}

/** Resident memory of the node: a cluster's processes summed. */
function nodeMemory(t: BenchTarget): MemorySample {
  if (!t.processes) return sampleMemory(t.pid);
  const parts = t.processes.map((p) => sampleMemory(p.pid));
  return {
    rssMB: parts.reduce((n, m) => n + m.rssMB, 0),
    peakMB: parts.reduce((n, m) => n + m.peakMB, 0),
    pids: parts.flatMap((m) => m.pids),
  };
}
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

class WorkloadError extends Error {
  readonly code = 'BENCH_WORKLOAD';
}

interface Ctx {
  opts: BenchOptions;
  target: BenchTarget;
  rpc: JsonRpcClient;
  heads: HeadFeed;
  deployer: DevAccount;
  /** Senders of the node:http bursts (--senders). */
  senders: DevAccount[];
  /** Every sender any load needs (accounts 1..19). */
  allSenders: DevAccount[];
  /** Hashes of the last completed load's transactions (the receipt read row asks them). */
  receiptHashes: string[];
}

const TRANSFER_VALUE = 1_000_000_000n; // 1 gwei
const RECEIVERS = receivers(64);

/** Spreads `count` transactions round-robin over the senders, nonces continuing from `nonces`. */
function plan(
  ctx: Ctx,
  fees: Fees,
  nonces: number[],
  count: number,
  build: (i: number) => { to: string; value?: bigint; data?: string; gasLimit: bigint },
): SignedTx[][] {
  const out: SignedTx[][] = ctx.senders.map(() => []);
  for (let i = 0; i < count; i++) {
    const s = i % ctx.senders.length;
    const sender = ctx.senders[s];
    out[s].push(signTx(sender.key, sender.address, fees, { ...build(i), nonce: nonces[s]++ }));
  }
  return out;
}

function describeBurst(name: string, b: BurstResult): string {
  return (
    `${name}: ${b.confirmed}/${b.planned} confirmed in ${(b.elapsedMs / 1000).toFixed(2)} s = ${b.txPerSec.toFixed(1)} tx/s, ` +
    `latency p50 ${b.latencyMs.p50.toFixed(1)} ms p99 ${b.latencyMs.p99.toFixed(1)} ms, ${b.blocks} blocks` +
    `${b.refused ? `, ${b.refused} refused` : ''}${b.reverted ? `, ${b.reverted} reverted` : ''}` +
    `${b.timedOut ? ', TIMED OUT' : ''}${b.firstError ? ` (first error: ${b.firstError})` : ''}`
  );
}

function mustComplete(what: string, b: BurstResult): void {
  if (b.confirmed !== b.planned) {
    throw new WorkloadError(`${what}: ${describeBurst(what, b)}`);
  }
}

/** Warm-up burst (unmeasured) then the measured burst, both pre-signed before anything is sent. */
async function txWorkload(
  ctx: Ctx,
  name: string,
  count: number,
  build: (i: number) => { to: string; value?: bigint; data?: string; gasLimit: bigint },
): Promise<BurstResult> {
  const { opts, rpc, heads } = ctx;
  // 3x the next base fee: full blocks may push the base fee up during the burst.
  const fees = await currentFees(rpc, 3n);
  const nonces = await Promise.all(ctx.senders.map((s) => pendingNonce(rpc, s.address)));
  const t = performance.now();
  const warm = plan(ctx, fees, nonces, opts.txWarmup, build);
  const measured = plan(ctx, fees, nonces, count, (i) => build(opts.txWarmup + i));
  log(
    `${name}: signed ${opts.txWarmup} + ${count} transactions in ${((performance.now() - t) / 1000).toFixed(1)} s`,
  );
  const burst = { window: opts.window, timeoutMs: opts.txTimeoutSec * 1000 };
  if (opts.txWarmup > 0) {
    const w = await runBurst(rpc, heads, warm, burst);
    log(describeBurst(`${name} warm-up`, w));
    mustComplete(`${name} warm-up`, w);
  }
  const b = await runBurst(rpc, heads, measured, { ...burst, cpu: nodeCpu(ctx.target) });
  log(describeBurst(name, b));
  return b;
}

async function deployToken(ctx: Ctx, run: TargetRun): Promise<string> {
  const { rpc, heads, deployer, allSenders: senders } = ctx;
  const token = compileToken();
  const supply = 10n ** 27n;
  const data = token.bytecode + token.abi.encodeDeploy([supply]).slice(2);
  const fees = await currentFees(ctx.rpc);
  let nonce = await pendingNonce(rpc, deployer.address);
  const gas = await rpc.call<string>('eth_estimateGas', [{ from: deployer.address, data }]);
  const deploy = signTx(deployer.key, deployer.address, fees, {
    to: null,
    data,
    gasLimit: (BigInt(gas) * 12n) / 10n,
    nonce: nonce++,
  });
  const d = await runBurst(rpc, heads, [[deploy]], { window: 1, timeoutMs: 60_000 });
  mustComplete('token deployment', d);
  const receipt = await rpc.call<{ contractAddress?: string; status?: string }>('eth_getTransactionReceipt', [
    deploy.hash,
  ]);
  if (!receipt?.contractAddress) throw new WorkloadError(`token deployment receipt has no contractAddress`);
  const address = receipt.contractAddress;
  // Give every sender tokens (setup, unmeasured).
  const share = supply / BigInt(senders.length * 2);
  const funding = senders.map((s) =>
    signTx(deployer.key, deployer.address, fees, {
      to: address,
      data: token.abi.encodeFunctionData('transfer', [s.address, share]),
      gasLimit: 100_000n,
      nonce: nonce++,
    }),
  );
  const f = await runBurst(rpc, heads, [funding], { window: 64, timeoutMs: 120_000 });
  mustComplete('token funding', f);
  run.setup = { ...run.setup, tokenAddress: address };
  log(`token ${address} deployed and ${senders.length} senders funded`);
  return address;
}

async function erc20Workload(ctx: Ctx, run: TargetRun, tokenAddress: string): Promise<BurstResult> {
  const token = compileToken();
  const dataFor = (i: number) =>
    token.abi.encodeFunctionData('transfer', [RECEIVERS[i % RECEIVERS.length], 1n]);
  // Estimated against a receiver that holds no tokens yet (the dearer, zero-to-nonzero store), +25%.
  const est = await estimateGas(ctx.rpc, {
    from: ctx.senders[0].address,
    to: tokenAddress,
    data: dataFor(0),
  });
  const gasLimit = (est * 125n) / 100n;
  run.setup = { ...run.setup, erc20GasLimit: gasLimit.toString() };
  return txWorkload(ctx, 'ERC-20 transfers', ctx.opts.erc20, (i) => ({
    to: tokenAddress,
    data: dataFor(i),
    gasLimit,
  }));
}

/** Distinct holders asked by the 'eth_call balanceOf, 4096 holders' load (more than a call cache keeps). */
const HOLDERS = 4096;

/** The eth_getLogs row's holder: paid by no load, only by the LOG_HISTORY transfers of seedLogHistory. */
const HISTORY_HOLDER = `0x${'4157'.padStart(40, '0')}`;
/** Transfers to HISTORY_HOLDER before the eth_getLogs row: each node's reply holds exactly these. */
const LOG_HISTORY = 400;

/**
 * Sends LOG_HISTORY token transfers of 1 from the deployer to HISTORY_HOLDER, all in flight at once
 * (so automine makes a block of each, one-second blocks a few), and waits for every receipt. A node
 * whose chain already holds them (a second reads row) gets none more.
 */
async function seedLogHistory(ctx: Ctx, tokenAddress: string): Promise<void> {
  const token = compileToken();
  const { rpc, deployer } = ctx;
  const have = BigInt(
    await rpc.call<string>('eth_call', [
      { to: tokenAddress, data: token.abi.encodeFunctionData('balanceOf', [HISTORY_HOLDER]) },
      'latest',
    ]),
  );
  if (have >= BigInt(LOG_HISTORY)) return;
  // After the transaction loads the base fee can stand at the loads' own cap (1,000 gwei), where twice
  // it is over noded's max_gas_price: wait (bounded) for empty blocks to bring it down, then never
  // offer more than the loads do.
  let fees = await currentFees(rpc);
  for (let waited = 0; fees.maxFeePerGas > LOAD_FEES.maxFeePerGas && waited < 60_000; waited += 500) {
    await sleep(500);
    fees = await currentFees(rpc);
  }
  if (fees.maxFeePerGas > LOAD_FEES.maxFeePerGas) fees = { ...fees, maxFeePerGas: LOAD_FEES.maxFeePerGas };
  const nonce = await pendingNonce(rpc, deployer.address);
  const data = token.abi.encodeFunctionData('transfer', [HISTORY_HOLDER, 1n]);
  const txs = Array.from({ length: LOG_HISTORY - Number(have) }, (_, i) =>
    signTx(deployer.key, deployer.address, fees, {
      to: tokenAddress,
      data,
      gasLimit: 100_000n,
      nonce: nonce + i,
    }),
  );
  const b = await runBurst(rpc, ctx.heads, [txs], { window: 64, timeoutMs: 120_000 });
  mustComplete('eth_getLogs history', b);
}

/**
 * The request bodies of each read method; a load cycles through a method's bodies, one per request.
 * 'eth_call balanceOf' repeats one call, as a wallet polling its balance does (noded answers
 * repeats at the same height from its call cache); the 4096-holder variant asks a different holder
 * each time (every call executes), the cost of a call itself. eth_getLogs asks the token's logs over
 * the last 1,000 blocks (a fixed range, taken when the row starts); eth_getTransactionReceipt cycles
 * through the receipts of the run's last completed load.
 */
async function readBodies(
  ctx: Ctx,
  run: TargetRun,
  tokenAddress: string | undefined,
): Promise<Array<[ReadMethod, string[]]>> {
  const who = ctx.allSenders[0].address;
  const want = ctx.opts.reads;
  const bodies: Array<[ReadMethod, string[]]> = [];
  if (want.includes('blockNumber')) bodies.push(['eth_blockNumber', [req('eth_blockNumber', [])]]);
  if (want.includes('getBalance')) bodies.push(['eth_getBalance', [req('eth_getBalance', [who, 'latest'])]]);
  if (tokenAddress) {
    const abi = compileToken().abi;
    const balanceOf = (holder: string) =>
      req('eth_call', [{ to: tokenAddress, data: abi.encodeFunctionData('balanceOf', [holder]) }, 'latest']);
    if (want.includes('call')) bodies.push(['eth_call balanceOf', [balanceOf(who)]]);
    if (want.includes('call-holders')) {
      const holders = [...ctx.allSenders.map((s) => s.address), ...RECEIVERS];
      for (let i = holders.length; i < HOLDERS; i++)
        holders.push(`0x${(0xb0000 + i).toString(16).padStart(40, '0')}`);
      bodies.push(['eth_call balanceOf, 4096 holders', holders.slice(0, HOLDERS).map(balanceOf)]);
    }
    if (want.includes('logs')) {
      const body = await logsBody(ctx, run, tokenAddress);
      if (body !== undefined) bodies.push(['eth_getLogs, last 1000 blocks', [body]]);
    }
  }
  if (want.includes('receipt') && ctx.receiptHashes.length > 0) {
    const hashes = ctx.receiptHashes.slice(0, HOLDERS);
    run.readNotes = {
      ...run.readNotes,
      eth_getTransactionReceipt: `${hashes.length} distinct receipts of the last completed load, in turn`,
    };
    bodies.push(['eth_getTransactionReceipt', hashes.map((h) => req('eth_getTransactionReceipt', [h]))]);
  }
  return bodies;
}

/** A JSON-RPC request body. */
const req = (method: string, params: unknown[]) => JSON.stringify({ jsonrpc: '2.0', id: 1, method, params });

/**
 * The eth_getLogs row's body: one holder's incoming transfers (topic 2 = the receiver), as a
 * wallet's history view asks (all the token's logs would pass the 10,000-result cap of noded and of
 * public endpoints). The holder is one no load pays, given the same LOG_HISTORY transfers on every
 * node just before the row, so every node's reply holds the same logs whatever its loads completed.
 * Undefined when that seed fails (anvil's automine stalled by the loads before it): the other reads
 * still run, and the row is reported as not run, with why.
 */
async function logsBody(ctx: Ctx, run: TargetRun, tokenAddress: string): Promise<string | undefined> {
  const row = 'eth_getLogs, last 1000 blocks';
  try {
    await seedLogHistory(ctx, tokenAddress);
  } catch (err) {
    run.readNotes = { ...run.readNotes, [row]: `not run: ${(err as Error).message}` };
    log(`${run.target}: eth_getLogs row not run: ${(err as Error).message}`);
    return undefined;
  }
  const latest = Number(BigInt(await ctx.rpc.call<string>('eth_blockNumber')));
  const from = Math.max(0, latest - 999);
  const transferTopic = compileToken().abi.getEvent('Transfer')!.topicHash;
  const holderTopic = `0x${HISTORY_HOLDER.slice(2).toLowerCase().padStart(64, '0')}`;
  const filter = {
    address: tokenAddress,
    fromBlock: hexQty(from),
    toBlock: hexQty(latest),
    topics: [transferTopic, null, holderTopic],
  };
  const logs = await ctx.rpc.call<unknown[]>('eth_getLogs', [filter]);
  const off =
    logs.length === LOG_HISTORY ? '' : ` (NOT the ${LOG_HISTORY} sent: the rows are not comparable)`;
  run.readNotes = {
    ...run.readNotes,
    [row]: `blocks ${from}..${latest} (${latest - from + 1} blocks), Transfer logs to one receiver: ${logs.length} per reply${off}`,
  };
  return req('eth_getLogs', [filter]);
}

/** Fees every generator transaction carries on every node (so the same bytes serve every node). */
const LOAD_FEES: Fees = { maxFeePerGas: 1000n * 1_000_000_000n, maxPriorityFeePerGas: 1_000_000_000n };
/** ERC-20 gas limit of the generator's transfers: estimated on the first node, then fixed for the run. */
let loadErc20GasLimit: bigint | undefined;
/** Signed lists by case, sender and start nonce: a later node starting from the same nonces reuses them. */
const signedCache = new Map<string, SignedTx[]>();

function signedFor(
  c: LoadCase,
  sender: DevAccount,
  k: number,
  nonce: number,
  tokenAddress: string | undefined,
): SignedTx[] {
  const key = `${c.id}|${sender.index}|${nonce}|${tokenAddress ?? ''}|${loadErc20GasLimit ?? ''}`;
  const hit = signedCache.get(key);
  if (hit) return hit;
  const pk = getBytes(sender.key.privateKey);
  const abi = c.kind === 'erc20' ? compileToken().abi : undefined;
  /** transfer(receiver, 1) calldata by receiver: ABI-encoding it per transaction would double the signing time. */
  const calldata = abi ? RECEIVERS.map((r) => abi.encodeFunctionData('transfer', [r, 1n])) : [];
  const out: SignedTx[] = [];
  for (let i = 0; i < c.perSender; i++) {
    const r = (k * 7 + i) % RECEIVERS.length;
    const to = RECEIVERS[r];
    out.push(
      c.kind === 'transfer'
        ? fastSignTx(pk, sender.address, LOAD_FEES, {
            to,
            value: TRANSFER_VALUE,
            gasLimit: 21_000n,
            nonce: nonce + i,
          })
        : fastSignTx(pk, sender.address, LOAD_FEES, {
            to: tokenAddress!,
            data: calldata[r],
            gasLimit: loadErc20GasLimit!,
            nonce: nonce + i,
          }),
    );
  }
  // A sustained case's lists are large (rate x seconds): keep only the newest start nonce of each sender.
  if (c.workload === 'sustained') {
    for (const k of signedCache.keys()) if (k.startsWith(`${c.id}|${sender.index}|`)) signedCache.delete(k);
  }
  signedCache.set(key, out);
  return out;
}

async function generatorLoad(ctx: Ctx, c: LoadCase, tokenAddress: string | undefined): Promise<LoadResult> {
  const { rpc, opts, target } = ctx;
  const senders = ctx.allSenders.slice(0, c.senders);
  if (c.kind === 'erc20') {
    if (!tokenAddress) throw new WorkloadError(`${c.label}: no token deployed`);
    if (loadErc20GasLimit === undefined) {
      const data = compileToken().abi.encodeFunctionData('transfer', [RECEIVERS[0], 1n]);
      // Estimated against a receiver that holds no tokens yet (the dearer store), +25%.
      loadErc20GasLimit =
        ((await estimateGas(rpc, { from: senders[0].address, to: tokenAddress, data })) * 125n) / 100n;
    }
  }
  const nonces = await Promise.all(senders.map((s) => pendingNonce(rpc, s.address)));
  const t = performance.now();
  const perSender = senders.map((s, k) => signedFor(c, s, k, nonces[k], tokenAddress));
  const signedMs = performance.now() - t;
  if (signedMs > 500)
    log(`${c.label}: signed ${c.senders * c.perSender} transactions in ${(signedMs / 1000).toFixed(1)} s`);
  const r = await runLoad(perSender, {
    url: target.httpUrl,
    inflight: c.inflight,
    maxPending: c.maxPending,
    pollMs: opts.pollMs,
    sendForMs: c.sendForMs,
    timeoutMs: opts.txTimeoutSec * 1000,
    threads: opts.generatorThreads,
    heads: ctx.heads,
    cpu: nodeCpu(target),
  });
  log(`${c.label}: ${describeLoad(r)}`);
  if (loadComplete(r, c.workload === 'sustained')) {
    ctx.receiptHashes = perSender.flatMap((l) =>
      l.slice(0, Math.ceil(HOLDERS / senders.length)).map((x) => x.hash),
    );
  }
  return r;
}

/** The generator against the canned server: made-up transactions of a transfer's size (it checks nothing). */
async function generatorCeiling(c: LoadCase, opts: BenchOptions): Promise<LoadResult> {
  const stub = await startStub();
  try {
    const fake = (s: number, i: number): SignedTx => {
      const id = `${s.toString(16).padStart(4, '0')}${i.toString(16).padStart(8, '0')}`;
      return { raw: `0x02f873${id.repeat(19)}`, hash: `0x${id.padStart(64, '0')}`, from: '', nonce: i };
    };
    const perSender = Array.from({ length: c.senders }, (_, s) =>
      Array.from({ length: c.perSender }, (_, i) => fake(s, i)),
    );
    const r = await runLoad(perSender, {
      url: stub.httpUrl,
      inflight: c.inflight,
      maxPending: c.maxPending,
      pollMs: opts.pollMs,
      sendForMs: c.sendForMs,
      timeoutMs: 30_000,
      threads: opts.generatorThreads,
      cpu: cpuSampler(stub.pid),
    });
    log(`${c.label}: ${describeLoad(r)}`);
    return r;
  } finally {
    await stub.stop();
  }
}

function startTarget(
  name: TargetName,
  opts: BenchOptions,
  profileDir: string | undefined,
): Promise<BenchTarget> {
  switch (name) {
    case 'hardhat':
      return startHardhat();
    case 'anvil':
      return startAnvil();
    case 'anvil-1s':
      return startAnvil(1);
    case 'noded':
      return startNoded({ cpuProfDir: profileDir, timeoutCommit: opts.timeoutCommit });
    case 'cluster':
      return startCluster({ edges: 1, timeoutCommit: opts.timeoutCommit });
    case 'cluster-2edges':
      return startCluster({ edges: 2, timeoutCommit: opts.timeoutCommit });
  }
}

async function benchTarget(
  name: TargetName,
  opts: BenchOptions,
  report: BenchReport,
  loader: 'wrk' | 'node',
  round: number,
) {
  const run: TargetRun = { target: name, round, memory: {}, reads: {}, loads: {} };
  report.runs.push(run);
  const cases = (report.cases ?? []).filter((c) => c.workload !== 'ceiling');
  const profileDir =
    opts.profile && name === 'noded'
      ? join(resultsDir(opts), 'profiles', opts.rounds > 1 ? `${stamp(report)}-round${round}` : stamp(report))
      : undefined;
  let target: BenchTarget | undefined;
  const t0 = performance.now();
  try {
    log(`${name}: starting`);
    target = await startTarget(name, opts, profileDir);
    run.version = target.version;
    run.startupMs = Math.round(performance.now() - t0);
    log(
      `${name}: ${target.version} ready at ${target.httpUrl} (pid ${target.pid}) after ${run.startupMs} ms; load average ${loadavg()
        .map((x) => x.toFixed(2))
        .join(' ')}`,
    );
    await sleep(opts.idleSettleSeconds * 1000);
    run.memory.idle = nodeMemory(target);
    log(
      `${name}: idle RSS ${run.memory.idle.rssMB.toFixed(0)} MB${target.processes ? ` (${target.processes.map((p) => `${p.name} ${p.pid}`).join(', ')})` : ''}`,
    );

    const rpc = new JsonRpcClient(target.httpUrl, { maxSockets: opts.senders + 8 });
    const heads = await openHeadFeed(target.wsUrl, rpc);
    log(`${name}: new heads via ${heads.source}`);
    const accounts = devAccounts(sendersNeeded(cases, opts) + 1);
    const ctx: Ctx = {
      opts,
      target,
      rpc,
      heads,
      deployer: accounts[0],
      senders: accounts.slice(1, opts.senders + 1),
      allSenders: accounts.slice(1),
      receiptHashes: [],
    };
    try {
      let tokenAddress: string | undefined;
      const needToken =
        opts.workloads.includes('erc20') ||
        opts.workloads.includes('reads') ||
        cases.some((c) => c.kind === 'erc20');
      // First, so that the token's address (deployer, nonce 0) is the same on every node.
      if (needToken) tokenAddress = await deployToken(ctx, run);
      let stalled: string | undefined;
      for (const c of cases) {
        if (stalled) {
          // Its transactions still sit in the pool with their nonces: every later load would queue behind them.
          run.skipped = { ...run.skipped, [c.id]: `not run: ${stalled} did not complete` };
          log(`${c.label}: skipped (${stalled} did not complete)`);
          continue;
        }
        const l = await generatorLoad(ctx, c, tokenAddress);
        run.loads![c.id] = l;
        if (l.missing > 0 || l.timedOut) stalled = c.label;
      }
      if (opts.workloads.includes('cast')) {
        // The deployer's key: every load before this one has its receipts, so cast's nonce is right.
        const key = ctx.deployer.key.privateKey;
        const r = await castLoop(castBinary(), target.httpUrl, key, opts.loop);
        run.castLoop = r;
        log(
          `cast send loop of ${r.sends}: ${(r.elapsedMs / 1000).toFixed(2)} s, per send p50 ${r.sendMs.p50.toFixed(1)} p99 ${r.sendMs.p99.toFixed(1)} ms`,
        );
      }
      if (opts.workloads.includes('transfers')) {
        run.setup = { ...run.setup, transferGasLimit: '21000' };
        run.transfers = await txWorkload(ctx, 'value transfers', opts.transfers, (i) => ({
          to: RECEIVERS[i % RECEIVERS.length],
          value: TRANSFER_VALUE,
          gasLimit: 21_000n,
        }));
      }
      if (opts.workloads.includes('erc20') && tokenAddress) {
        run.erc20 = await erc20Workload(ctx, run, tokenAddress);
      }
      if (opts.workloads.includes('reads')) {
        const rows = await readBodies(ctx, run, tokenAddress);
        if (opts.readSettleSeconds > 0) run.readSettle = await settle(name, target, opts.readSettleSeconds);
        for (const concurrency of opts.readConcurrency) {
          for (const [method, bodies] of rows) {
            const probe = JSON.parse(bodies[0]!) as { method: string; params: unknown[] };
            try {
              await rpc.call(probe.method, probe.params); // refused here rather than as N errors
            } catch (err) {
              // One refused row (a node's result cap, a method it lacks) leaves the others to run.
              const why = `not run: ${(err as Error).message}`;
              run.readNotes = { ...run.readNotes, [readKey(method, concurrency)]: why };
              log(`${method} @${concurrency}: ${why}`);
              continue;
            }
            const r = await runReads(loader, {
              url: target.httpUrl,
              bodies,
              seconds: opts.readSeconds,
              warmupSeconds: opts.readWarmupSeconds,
              concurrency,
              cpu: nodeCpu(target),
            });
            run.reads[readKey(method, concurrency)] = r;
            log(
              `${method} @${concurrency}: ${r.reqPerSec.toFixed(0)} req/s, p50 ${r.latencyMs.p50.toFixed(2)} ms, p99 ${r.latencyMs.p99.toFixed(2)} ms` +
                `${r.errors ? `, ${r.errors} errors` : ''}`,
            );
          }
        }
      }
      run.memory.afterLoad = nodeMemory(target);
      log(`${name}: RSS after load ${run.memory.afterLoad.rssMB.toFixed(0)} MB`);
    } finally {
      heads.close();
      rpc.close();
    }
  } catch (err) {
    run.error = err instanceof Error ? err.message : String(err);
    log(`${name}: FAILED: ${run.error}`);
    if (target) log(`${name}: last output:\n${target.output().slice(-2000)}`);
  } finally {
    if (target) {
      await target.stop();
      log(`${name}: stopped`);
    }
  }
  if (profileDir) {
    const files = threadProfiles(profileDir);
    if (files.length === 0) {
      log(`noded: no .cpuprofile was written to ${profileDir} (did the node exit cleanly on SIGTERM?)`);
    }
    run.profiles = [];
    for (const { thread, file } of files) {
      const whole = summarizeProfile(file, 40);
      console.log(`\n[${thread} thread]\n${formatProfile(whole)}`);
      const phases: Record<string, ProfileSummary> = {};
      for (const [phase, windows] of profileWindows(run, report.cases ?? [])) {
        phases[phase] = summarizeProfile(file, 25, windows);
        console.log(`\n[${thread} thread, ${phase}]\n${formatProfile(phases[phase], 12)}`);
      }
      run.profiles.push({ thread, file, whole, phases });
    }
  }
}

/** The measured stretches of a run, as windows on the profile's clock. */
function profileWindows(run: TargetRun, cases: LoadCase[]): Array<[string, ProfileWindow[]]> {
  const out: Array<[string, ProfileWindow[]]> = [];
  for (const c of cases) {
    const l = run.loads?.[c.id];
    if (l?.fromUs !== undefined && l.toUs !== undefined)
      out.push([c.label, [{ fromUs: l.fromUs, toUs: l.toUs }]]);
  }
  for (const [name, b] of [
    ['value transfers', run.transfers],
    ['ERC-20 transfers', run.erc20],
  ] as const) {
    if (!b?.startedAtUs) continue;
    const included = b.startedAtUs + b.elapsedMs * 1000;
    out.push([`${name}: submit to last block`, [{ fromUs: b.startedAtUs, toUs: included }]]);
    if (b.receiptsDoneMs > b.elapsedMs + 500) {
      out.push([
        `${name}: receipt fetching after the last block`,
        [{ fromUs: included, toUs: b.startedAtUs + b.receiptsDoneMs * 1000 }],
      ]);
    }
  }
  for (const [m, r] of Object.entries(run.reads)) {
    if (r) out.push([`reads: ${m} conns`, [{ fromUs: r.fromUs, toUs: r.toUs }]]);
  }
  return out;
}

function resultsDir(opts: BenchOptions): string {
  return opts.outDir ?? join(repoRoot(), 'bench', 'results');
}

function stamp(report: BenchReport): string {
  return report.startedAt.replace(/[:.]/g, '-');
}

function writeResults(report: BenchReport): string[] {
  const dir = resultsDir(report.options);
  mkdirSync(dir, { recursive: true });
  const base = join(dir, `bench-${stamp(report)}`);
  writeFileSync(`${base}.json`, `${JSON.stringify(report, null, 2)}\n`);
  writeFileSync(`${base}.md`, formatMarkdown(report));
  copyFileSync(`${base}.json`, join(dir, 'latest.json'));
  copyFileSync(`${base}.md`, join(dir, 'latest.md'));
  return [`${base}.json`, `${base}.md`];
}

async function main(): Promise<number> {
  let opts: BenchOptions | null;
  try {
    opts = parseBenchArgs(process.argv.slice(2));
  } catch (err) {
    console.error(`bench: ${(err as Error).message}\n\n${USAGE}`);
    return 2;
  }
  if (!opts) {
    console.log(USAGE);
    return 0;
  }
  const loader = pickLoader(opts.loader);
  const report: BenchReport = {
    startedAt: new Date().toISOString(),
    machine: machineInfo(),
    options: opts,
    loader: loader.version,
    runs: [],
  };
  const cases = loadCases(opts);
  report.cases = cases;
  if (
    opts.workloads.includes('erc20') ||
    opts.workloads.includes('reads') ||
    cases.some((c) => c.kind === 'erc20')
  ) {
    const t = performance.now();
    report.solc = compileToken().solcVersion;
    log(`compiled BenchToken with solc ${report.solc} in ${((performance.now() - t) / 1000).toFixed(1)} s`);
  }
  // The generator's ceiling before the nodes and again after them: the machine's load moves.
  const ceiling = cases.find((c) => c.workload === 'ceiling');
  if (ceiling) report.ceiling = await generatorCeiling(ceiling, opts);
  for (let round = 1; round <= opts.rounds; round++) {
    // Alternating order, so that neither node always runs first (or on a warmer, busier machine).
    const order = round % 2 === 1 ? opts.targets : [...opts.targets].reverse();
    if (opts.rounds > 1) log(`round ${round} of ${opts.rounds}: ${order.join(', ')}`);
    for (const name of order) await benchTarget(name, opts, report, loader.kind, round);
  }
  if (ceiling) report.ceilingAfter = await generatorCeiling(ceiling, opts);
  report.finishedAt = new Date().toISOString();
  report.machine.loadAvgAtEnd = loadavg().map((x) => Math.round(x * 100) / 100);

  console.log('');
  console.log(formatTable(report));
  const cpuTable = formatCpuTable(report);
  if (cpuTable) console.log(`\n${cpuTable}`);
  const files = writeResults(report);
  console.log(`\nresults: ${files.join(', ')}`);
  // A reference node that cannot finish a load is a finding (Hardhat's automine and a nonce gap), not
  // a failure of the bench; noded not finishing one is.
  const incomplete = report.runs.some(
    (r) =>
      (r.target === 'noded' || r.target.startsWith('cluster')) &&
      ([r.transfers, r.erc20].some((b) => b && !burstComplete(b)) ||
        cases.some((c) => {
          const l = r.loads?.[c.id];
          return l !== undefined && !loadComplete(l, c.workload === 'sustained');
        })),
  );
  return report.runs.some((r) => r.error) || incomplete ? 1 : 0;
}

let interrupted = false;
for (const sig of ['SIGINT', 'SIGTERM'] as const) {
  process.on(sig, () => {
    if (interrupted) process.exit(130);
    interrupted = true;
    console.error(`\n[bench] ${sig}: stopping the nodes`);
    void stopAllTargets().finally(() => process.exit(130));
  });
}

try {
  process.exitCode = await main();
} catch (err) {
  console.error(`bench: ${err instanceof UsageError ? err.message : ((err as Error).stack ?? String(err))}`);
  process.exitCode = 1;
} finally {
  await stopAllTargets();
}
