// `npm run bench`: Hardhat node and noded chain-local, one after the other, under the same workloads;
// one table with noded/Hardhat ratios; raw figures as JSON and a markdown summary under bench/results/.
import { copyFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { type BenchOptions, parseBenchArgs, type TargetName, USAGE, UsageError } from './args.js';
import {
  compileToken,
  currentFees,
  type DevAccount,
  devAccounts,
  estimateGas,
  type Fees,
  pendingNonce,
  receivers,
  type SignedTx,
  signTx,
} from './chain.js';
import { cpuSampler } from './cpu.js';
import { sampleMemory } from './memory.js';
import { formatProfile, type ProfileSummary, type ProfileWindow, summarizeProfile } from './profile.js';
import { pickLoader, runReads } from './reads.js';
import {
  type BenchReport,
  formatMarkdown,
  formatTable,
  machineInfo,
  type ReadMethod,
  type TargetRun,
} from './report.js';
import { type HeadFeed, JsonRpcClient, openHeadFeed } from './rpc.js';
import { summarize } from './stats.js';
import {
  type BenchTarget,
  repoRoot,
  startHardhat,
  startNoded,
  stopAllTargets,
  threadProfiles,
} from './targets.js';
import { type BurstResult, burstComplete, runBurst } from './txburst.js';

const log = (msg: string) => console.log(`[bench] ${msg}`);
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
  senders: DevAccount[];
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
  const b = await runBurst(rpc, heads, measured, { ...burst, cpu: cpuSampler(ctx.target.pid) });
  log(describeBurst(name, b));
  return b;
}

/**
 * Transfers one at a time, each sent after the previous one's receipt, as a deploy script or a test
 * suite does: the time a developer waits per transaction (anvil answers a cast send in ~15-20 ms).
 */
async function sequentialWorkload(ctx: Ctx, count: number): Promise<NonNullable<TargetRun['sequential']>> {
  const { rpc } = ctx;
  const sender = ctx.deployer;
  const fees = await currentFees(rpc, 3n);
  let nonce = await pendingNonce(rpc, sender.address);
  const to = RECEIVERS[0]!;
  const took: number[] = [];
  const deadline = Date.now() + ctx.opts.txTimeoutSec * 1000;
  const t0 = performance.now();
  for (let i = 0; i < count; i++) {
    const start = performance.now();
    const tx = signTx(sender.key, sender.address, fees, {
      to,
      value: TRANSFER_VALUE,
      gasLimit: 21_000n,
      nonce: nonce++,
    });
    await rpc.call('eth_sendRawTransaction', [tx.raw]);
    while ((await rpc.call<unknown>('eth_getTransactionReceipt', [tx.hash])) === null) {
      if (Date.now() > deadline)
        throw new Error(`sequential transfers: no receipt for ${tx.hash} within --tx-timeout`);
      await sleep(1);
    }
    took.push(performance.now() - start);
  }
  const msPerTx = (performance.now() - t0) / count;
  const latencyMs = summarize(took);
  log(
    `sequential transfers: ${count} in ${((msPerTx * count) / 1000).toFixed(2)} s = ${msPerTx.toFixed(1)} ms per transaction, p50 ${latencyMs.p50.toFixed(1)} ms, p99 ${latencyMs.p99.toFixed(1)} ms`,
  );
  return { count, msPerTx, latencyMs };
}

async function deployToken(ctx: Ctx, run: TargetRun): Promise<string> {
  const { rpc, heads, deployer, senders } = ctx;
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

/**
 * The request bodies of each read method; a load cycles through a method's bodies, one per request.
 * 'eth_call balanceOf' repeats one call, as a wallet polling its balance does (noded answers
 * repeats at the same height from its call cache); the 4096-holder variant asks a different holder
 * each time (every call executes), the cost of a call itself.
 */
function readBodies(ctx: Ctx, tokenAddress: string | undefined): Array<[ReadMethod, string[]]> {
  const who = ctx.senders[0].address;
  const req = (method: string, params: unknown[]) =>
    JSON.stringify({ jsonrpc: '2.0', id: 1, method, params });
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
      const holders = [...ctx.senders.map((s) => s.address), ...RECEIVERS];
      for (let i = holders.length; i < HOLDERS; i++)
        holders.push(`0x${(0xb0000 + i).toString(16).padStart(40, '0')}`);
      bodies.push(['eth_call balanceOf, 4096 holders', holders.slice(0, HOLDERS).map(balanceOf)]);
    }
  }
  return bodies;
}

async function benchTarget(
  name: TargetName,
  opts: BenchOptions,
  report: BenchReport,
  loader: 'wrk' | 'node',
  round: number,
) {
  const run: TargetRun = { target: name, round, memory: {}, reads: {} };
  report.runs.push(run);
  const profileDir =
    opts.profile && name === 'noded'
      ? join(resultsDir(opts), 'profiles', opts.rounds > 1 ? `${stamp(report)}-round${round}` : stamp(report))
      : undefined;
  let target: BenchTarget | undefined;
  const t0 = performance.now();
  try {
    log(`${name}: starting`);
    target =
      name === 'hardhat'
        ? await startHardhat()
        : await startNoded({ cpuProfDir: profileDir, timeoutCommit: opts.timeoutCommit });
    run.version = target.version;
    run.startupMs = Math.round(performance.now() - t0);
    log(
      `${name}: ${target.version} ready at ${target.httpUrl} (pid ${target.pid}) after ${run.startupMs} ms`,
    );
    await sleep(opts.idleSettleSeconds * 1000);
    run.memory.idle = sampleMemory(target.pid);
    log(`${name}: idle RSS ${run.memory.idle.rssMB.toFixed(0)} MB`);

    const rpc = new JsonRpcClient(target.httpUrl, { maxSockets: opts.senders + 8 });
    const heads = await openHeadFeed(target.wsUrl, rpc);
    log(`${name}: new heads via ${heads.source}`);
    const accounts = devAccounts(opts.senders + 1);
    const ctx: Ctx = { opts, target, rpc, heads, deployer: accounts[0], senders: accounts.slice(1) };
    try {
      if (opts.workloads.includes('transfers')) {
        run.setup = { ...run.setup, transferGasLimit: '21000' };
        run.transfers = await txWorkload(ctx, 'value transfers', opts.transfers, (i) => ({
          to: RECEIVERS[i % RECEIVERS.length],
          value: TRANSFER_VALUE,
          gasLimit: 21_000n,
        }));
      }
      if (opts.workloads.includes('sequential')) {
        run.sequential = await sequentialWorkload(ctx, opts.sequential);
      }
      let tokenAddress: string | undefined;
      if (opts.workloads.includes('erc20') || opts.workloads.includes('reads')) {
        tokenAddress = await deployToken(ctx, run);
      }
      if (opts.workloads.includes('erc20') && tokenAddress) {
        run.erc20 = await erc20Workload(ctx, run, tokenAddress);
      }
      if (opts.workloads.includes('reads')) {
        for (const [method, bodies] of readBodies(ctx, tokenAddress)) {
          const probe = JSON.parse(bodies[0]!) as { method: string; params: unknown[] };
          await rpc.call(probe.method, probe.params); // fails loudly here rather than as N errors
          const r = await runReads(loader, {
            url: target.httpUrl,
            bodies,
            seconds: opts.readSeconds,
            warmupSeconds: opts.readWarmupSeconds,
            concurrency: opts.readConcurrency,
          });
          run.reads[method] = r;
          log(
            `${method}: ${r.reqPerSec.toFixed(0)} req/s, p50 ${r.latencyMs.p50.toFixed(2)} ms, p99 ${r.latencyMs.p99.toFixed(2)} ms` +
              `${r.errors ? `, ${r.errors} errors` : ''}`,
          );
        }
      }
      run.memory.afterLoad = sampleMemory(target.pid);
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
      for (const [phase, windows] of profileWindows(run)) {
        phases[phase] = summarizeProfile(file, 25, windows);
        console.log(`\n[${thread} thread, ${phase}]\n${formatProfile(phases[phase], 12)}`);
      }
      run.profiles.push({ thread, file, whole, phases });
    }
  }
}

/** The measured stretches of a run, as windows on the profile's clock. */
function profileWindows(run: TargetRun): Array<[string, ProfileWindow[]]> {
  const out: Array<[string, ProfileWindow[]]> = [];
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
    if (r) out.push([`reads: ${m}`, [{ fromUs: r.fromUs, toUs: r.toUs }]]);
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
  if (opts.workloads.includes('erc20') || opts.workloads.includes('reads')) {
    const t = performance.now();
    report.solc = compileToken().solcVersion;
    log(`compiled BenchToken with solc ${report.solc} in ${((performance.now() - t) / 1000).toFixed(1)} s`);
  }
  for (let round = 1; round <= opts.rounds; round++) {
    // Alternating order, so that neither node always runs first (or on a warmer, busier machine).
    const order = round % 2 === 1 ? opts.targets : [...opts.targets].reverse();
    if (opts.rounds > 1) log(`round ${round} of ${opts.rounds}: ${order.join(', ')}`);
    for (const name of order) await benchTarget(name, opts, report, loader.kind, round);
  }
  report.finishedAt = new Date().toISOString();
  report.machine.loadAvgAtEnd = loadavg().map((x) => Math.round(x * 100) / 100);

  console.log('');
  console.log(formatTable(report));
  const files = writeResults(report);
  console.log(`\nresults: ${files.join(', ')}`);
  const incomplete = report.runs.some((r) => [r.transfers, r.erc20].some((b) => b && !burstComplete(b)));
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
