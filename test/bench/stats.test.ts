// The arithmetic under the benchmark table (percentiles, summaries, rates, ratios against each reference
// node, the target checks), the bench's arguments, the load generator's accounting, its HTTP parsing and signer.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { describe, it } from 'node:test';
import { getBytes } from 'ethers';
import { parseBenchArgs, type TargetName, type WorkloadName } from '../../bench/args.js';
import { loadCases } from '../../bench/cases.js';
import { devAccounts, fastSignTx, receivers, signTx } from '../../bench/chain.js';
import { cpuPer1k, cpuSampler, cpuUse } from '../../bench/cpu.js';
import { parseResponse, WireError } from '../../bench/httpwire.js';
import { type LoadResult, loadComplete, summarizeLoad } from '../../bench/loadgen.js';
import type { SenderReport } from '../../bench/loadgen-worker.js';
import {
  type BenchReport,
  cpuLines,
  formatCpuTable,
  formatMarkdown,
  readKey,
  type TargetRun,
  tableLines,
} from '../../bench/report.js';
import {
  percentile,
  percentileSorted,
  ratePerSecond,
  ratio,
  StatsError,
  summarize,
} from '../../bench/stats.js';
import { cannedReply } from '../../bench/stub-server.js';

describe('bench statistics', () => {
  it('takes nearest-rank percentiles', () => {
    const xs = [15, 20, 35, 40, 50];
    assert.equal(percentile(xs, 0), 15);
    assert.equal(percentile(xs, 5), 15);
    assert.equal(percentile(xs, 30), 20);
    assert.equal(percentile(xs, 40), 20);
    assert.equal(percentile(xs, 50), 35);
    assert.equal(percentile(xs, 100), 50);
  });

  it('p99 of 1..1000 is 990 and p50 is 500, whatever the input order', () => {
    const xs = Array.from({ length: 1000 }, (_, i) => 1000 - i);
    assert.equal(percentile(xs, 99), 990);
    assert.equal(percentile(xs, 50), 500);
    assert.equal(xs[0], 1000, 'the input is not sorted in place');
  });

  it('a single sample is every percentile; an empty one is NaN', () => {
    assert.equal(percentileSorted([7], 1), 7);
    assert.equal(percentileSorted([7], 99), 7);
    assert.ok(Number.isNaN(percentileSorted([], 50)));
  });

  it('refuses percentiles outside [0, 100]', () => {
    assert.throws(() => percentile([1, 2], 101), StatsError);
    assert.throws(() => percentile([1, 2], -1), /outside \[0, 100\]/);
    assert.throws(() => percentile([1, 2], Number.NaN), StatsError);
  });

  it('summarises min, mean, percentiles and max', () => {
    const s = summarize([4, 1, 3, 2]);
    assert.deepEqual(s, { count: 4, min: 1, mean: 2.5, p50: 2, p90: 4, p99: 4, max: 4 });
    assert.equal(summarize([]).count, 0);
    assert.ok(Number.isNaN(summarize([]).p99));
  });

  it('computes rates and ratios, NaN where they are undefined', () => {
    assert.equal(ratePerSecond(500, 250), 2000);
    assert.ok(Number.isNaN(ratePerSecond(5, 0)));
    assert.equal(ratio(300, 150), 2);
    assert.ok(Number.isNaN(ratio(1, 0)));
    assert.ok(Number.isNaN(ratio(undefined, 3)));
    assert.ok(Number.isNaN(ratio(Number.NaN, 3)));
  });
});

describe('bench table', () => {
  const opts = {
    ...parseBenchArgs(['--quick'])!,
    workloads: ['sustained', 'reads'] as WorkloadName[],
    targets: ['noded', 'anvil-1s', 'anvil', 'hardhat'] as TargetName[],
  };
  const cases = loadCases(opts);
  const sustainedTransfers = cases.find((c) => c.id.startsWith('sustained-transfer'))!;
  const load = (tps: number, p50 = 500): LoadResult => ({
    planned: 100,
    sent: 100,
    refused: 0,
    confirmed: 100,
    reverted: 0,
    missing: 0,
    timedOut: false,
    elapsedMs: 1000,
    txPerSec: tps,
    receiptMs: { ...summarize([1]), p50 },
    blocks: 1,
    maxTxPerBlock: 100,
  });
  const read = (reqPerSec: number, p99: number) => ({
    loader: 'wrk' as const,
    concurrency: 32,
    durationSec: 1,
    requests: 1000,
    errors: 0,
    reqPerSec,
    latencyMs: { mean: 1, p50: 1, p90: 2, p99, max: p99 },
    fromUs: 0,
    toUs: 1,
  });
  const run = (target: TargetName, tps: number, readRate: number, p99 = 1, round = 1): TargetRun => ({
    target,
    round,
    memory: { idle: { rssMB: 100, peakMB: 100, pids: [1] } },
    loads: { [sustainedTransfers.id]: load(tps) },
    reads: { [readKey('eth_blockNumber', 32)]: read(readRate, p99) },
  });
  const report = (runs: TargetRun[]): BenchReport => ({
    startedAt: 'now',
    machine: { cores: 2, cpuModel: 'x', node: 'v20', os: 'linux', memoryGB: 1, loadAvgAtStart: [0, 0, 0] },
    options: opts,
    loader: 'wrk',
    cases,
    runs,
  });
  const line = (r: BenchReport, label: string) => {
    const l = tableLines(r).find((x) => x.label.startsWith(label));
    assert.ok(l, `a row starting ${label}`);
    return l;
  };
  const RATE = `${sustainedTransfers.label}: tx/s, receipts in hand`;

  it('the CPU table: per 1,000 requests by process for the cluster, all processes for the others, medians over rounds', () => {
    const withCpu = (r: TargetRun, tx: Record<string, number>, reads: Record<string, number>): TargetRun => {
      const l = r.loads![sustainedTransfers.id]!;
      l.cpu = { nodeMsPerTx: 1, clientMsPerTx: 1, nodeCores: 1, clientCores: 1, per1k: tx };
      r.reads[readKey('eth_blockNumber', 32)]!.cpuPer1k = reads;
      return r;
    };
    const r = report([
      withCpu(run('noded', 5000, 800), { all: 900, generator: 100 }, { all: 40, generator: 30 }),
      withCpu(
        run('cluster-2edges', 3000, 900, 1, 1),
        { executor: 400, 'rpc-edge-1': 300, 'rpc-edge-2': 310, haproxy: 20, all: 1030, generator: 100 },
        { 'rpc-edge-1': 20, 'rpc-edge-2': 22, all: 50, generator: 30 },
      ),
      withCpu(
        run('cluster-2edges', 3000, 900, 1, 2),
        { executor: 600, 'rpc-edge-1': 300, 'rpc-edge-2': 310, haproxy: 20, all: 1230, generator: 100 },
        { 'rpc-edge-1': 24, 'rpc-edge-2': 22, all: 54, generator: 30 },
      ),
      withCpu(
        run('cluster-2edges', 3000, 900, 1, 3),
        { executor: 500, 'rpc-edge-1': 300, 'rpc-edge-2': 310, haproxy: 20, all: 1130, generator: 100 },
        { 'rpc-edge-1': 22, 'rpc-edge-2': 22, all: 52, generator: 30 },
      ),
    ]);
    r.options = { ...opts, rounds: 3, targets: ['noded', 'cluster-2edges'] };
    const lines = cpuLines(r);
    const tx = lines.find(
      (l) => l.target === 'cluster-2edges' && l.workload.startsWith(sustainedTransfers.label),
    )!;
    assert.deepEqual(tx.per1k, {
      executor: 500,
      'rpc-edge-1': 300,
      'rpc-edge-2': 310,
      haproxy: 20,
      all: 1130,
      generator: 100,
    });
    const read = lines.find(
      (l) => l.target === 'cluster-2edges' && l.workload === 'eth_blockNumber @32 conns',
    )!;
    assert.deepEqual(read.per1k, { 'rpc-edge-1': 22, 'rpc-edge-2': 22, all: 52, generator: 30 });
    const table = formatCpuTable(r);
    assert.match(
      table,
      /CPU ms per 1,000 requests\s+node\s+executor\s+rpc-edge-1\s+rpc-edge-2\s+haproxy\s+all\s+generator/,
    );
    assert.match(table, /eth_blockNumber @32 conns\s+noded\s+-\s+-\s+-\s+-\s+40\s+30/);
    assert.match(formatMarkdown(r), /\| CPU ms per 1,000 requests \| node \| executor \|/);
    assert.equal(formatCpuTable(report([run('noded', 5000, 800)])), '');
  });

  it('divides every noded figure by each reference node of the same run', () => {
    const r = report([
      run('noded', 5000, 800),
      run('anvil-1s', 1000, 1000),
      run('anvil', 2000, 1000),
      run('hardhat', 500, 400),
    ]);
    const l = line(r, RATE);
    assert.deepEqual(l.values, { noded: '5000', 'anvil-1s': '1000', anvil: '2000', hardhat: '500' });
    assert.deepEqual(l.ratios, { 'anvil-1s': '5.00x', anvil: '2.50x', hardhat: '10.00x' });
    assert.equal(line(r, 'eth_blockNumber @32 conns req/s').ratios.anvil, '0.80x');
    const md = formatMarkdown(r);
    assert.match(
      md,
      /\| figure \| unit \| noded \| anvil-1s \| anvil \| hardhat \| noded\/anvil-1s \| noded\/anvil \| noded\/hardhat \| target \|/,
    );
  });

  it('sustained transfers need 4,000/s and 2.5x anvil with 1 s blocks; reads 0.8x anvil and p99 <= 5 ms', () => {
    const good = report([run('noded', 4000, 800, 5), run('anvil-1s', 1600, 1), run('anvil', 9000, 1000)]);
    good.options = { ...opts, targets: ['noded', 'anvil-1s', 'anvil'] };
    assert.equal(line(good, RATE).met, 'met');
    assert.equal(line(good, 'eth_blockNumber @32 conns req/s').met, 'met');
    assert.equal(line(good, 'eth_blockNumber @32 conns p99').met, 'met');
    const fast = report([run('noded', 4000, 799, 5.01), run('anvil-1s', 1601, 1), run('anvil', 9000, 1000)]);
    fast.options = good.options;
    assert.equal(line(fast, RATE).met, 'NOT met', '4,000/s but under 2.5x anvil-1s');
    assert.equal(line(fast, 'eth_blockNumber @32 conns req/s').met, 'NOT met');
    assert.equal(line(fast, 'eth_blockNumber @32 conns p99').met, 'NOT met');
    const slow = report([run('noded', 3999, 800), run('anvil-1s', 100, 1)]);
    slow.options = { ...opts, targets: ['noded', 'anvil-1s'] };
    assert.equal(line(slow, RATE).met, 'NOT met', '40x anvil-1s but under 4,000/s');
  });

  it('says n/a when the reference node has no figure, and leaves out a load that did not complete', () => {
    const r = report([
      run('noded', 5000, 800),
      run('anvil-1s', 1000, 1000),
      run('anvil', 2000, 1000),
      run('hardhat', 500, 400),
    ]);
    r.runs[1].loads![sustainedTransfers.id] = { ...load(1000), timedOut: true };
    assert.equal(line(r, RATE).values['anvil-1s'], '-');
    assert.equal(line(r, RATE).ratios['anvil-1s'], '-');
    assert.equal(line(r, RATE).met, 'n/a');
    r.runs[0].loads![sustainedTransfers.id] = { ...load(5000), refused: 1 };
    assert.equal(line(r, RATE).values.noded, '-');
  });

  it('a read row with no valid reply shows 0 req/s and no latency (wrk reports 0 ms then)', () => {
    const r = report([run('noded', 5000, 0, 0), run('anvil', 2000, 1000, 3)]);
    r.options = { ...opts, targets: ['noded', 'anvil'] };
    assert.equal(line(r, 'eth_blockNumber @32 conns req/s').values.noded, '0');
    assert.equal(line(r, 'eth_blockNumber @32 conns req/s').met, 'NOT met');
    assert.equal(line(r, 'eth_blockNumber @32 conns p99').values.noded, '-');
    assert.equal(line(r, 'eth_blockNumber @32 conns p99').met, 'n/a');
  });

  it('with rounds: each figure is the median over rounds, each ratio the median of the rounds own ratios', () => {
    // Per-round noded/anvil-1s ratios 2.0, 1.5, 2.2 -> median 2.0 (the ratio of the medians, 200 / 110, would say 1.82).
    const rounds = [
      { a: 100, n: 200 },
      { a: 60, n: 90 },
      { a: 110, n: 242 },
    ];
    const r = report(
      rounds.flatMap((x, i) => [run('noded', x.n, 1, 1, i + 1), run('anvil-1s', x.a, 1, 1, i + 1)]),
    );
    r.options = { ...opts, rounds: 3, targets: ['noded', 'anvil-1s'] };
    const l = line(r, RATE);
    assert.equal(l.values['anvil-1s'], '100');
    assert.equal(l.values.noded, '200');
    assert.equal(l.ratios['anvil-1s'], '2.00x');
    assert.match(formatMarkdown(r), /noded\/anvil-1s 2\.00x, 1\.50x, 2\.20x/);
  });

  it('the loop is judged on its total time: at most 3x anvil', () => {
    const o = { ...opts, workloads: ['loop'] as WorkloadName[], targets: ['noded', 'anvil'] as TargetName[] };
    const c = loadCases(o);
    const loop = (ms: number): LoadResult => ({ ...load(1), elapsedMs: ms });
    const r: BenchReport = { ...report([]), options: o, cases: c };
    r.runs = [
      { target: 'noded', memory: {}, reads: {}, loads: { [c[0].id]: loop(300) } },
      { target: 'anvil', memory: {}, reads: {}, loads: { [c[0].id]: loop(100) } },
    ];
    const l = line(r, `${c[0].label}: total time`);
    assert.equal(l.ratios.anvil, '3.00x');
    assert.equal(l.met, 'met');
    r.runs[0].loads![c[0].id] = loop(301);
    assert.equal(line(r, `${c[0].label}: total time`).met, 'NOT met');
  });
});

describe('bench arguments', () => {
  it('keeps each sender within the pool by default: 19 x 250 transactions without receipt', () => {
    const o = parseBenchArgs([])!;
    assert.equal(o.maxPending, 250);
    assert.ok(19 * o.maxPending <= 5000);
    assert.equal(parseBenchArgs(['--window', '0'])!.window, 0);
  });

  it('waits for 25 quiet seconds before the reads by default, none with --quick; --read-settle is checked', () => {
    assert.equal(parseBenchArgs([])!.readSettleSeconds, 25);
    assert.equal(parseBenchArgs(['--quick'])!.readSettleSeconds, 0);
    assert.equal(parseBenchArgs(['--read-settle', '0'])!.readSettleSeconds, 0);
    assert.throws(() => parseBenchArgs(['--read-settle', '111']), /read-settle/);
    assert.throws(() => parseBenchArgs(['--read-settle', 'soon']), /read-settle/);
  });

  it('runs all six nodes and the generator workloads by default; --only and --targets pick nodes', () => {
    const o = parseBenchArgs([])!;
    assert.deepEqual(o.targets, ['noded', 'cluster', 'cluster-2edges', 'anvil-1s', 'anvil', 'hardhat']);
    assert.deepEqual(parseBenchArgs(['--targets', 'cluster-2edges,noded'])!.targets, [
      'noded',
      'cluster-2edges',
    ]);
    assert.deepEqual(o.workloads, ['ceiling', 'load', 'loop', 'cast', 'sustained', 'reads']);
    assert.deepEqual(o.readConcurrency, [32, 256]);
    assert.deepEqual(parseBenchArgs(['--only', 'anvil'])!.targets, ['anvil']);
    assert.deepEqual(parseBenchArgs(['--targets', 'hardhat,noded'])!.targets, ['noded', 'hardhat']);
    assert.throws(
      () => parseBenchArgs(['--targets', 'noded,geth']),
      /--targets noded,geth: unknown node "geth"/,
    );
    assert.throws(() => parseBenchArgs(['--only', 'noded', '--targets', 'anvil']), /give one of them/);
  });

  it('parses number lists and refuses repeats, non-numbers and out-of-range values', () => {
    assert.deepEqual(parseBenchArgs(['--load-senders', '19,1'])!.loadSenders, [19, 1]);
    assert.deepEqual(parseBenchArgs(['--inflight', '1, 4'])!.inflight, [1, 4]);
    assert.throws(() => parseBenchArgs(['--load-senders', '1,1']), /--load-senders 1,1: a value is repeated/);
    assert.throws(
      () => parseBenchArgs(['--load-senders', '20']),
      /--load-senders 20: must be between 1 and 19/,
    );
    assert.throws(() => parseBenchArgs(['--inflight', 'x']), /--inflight x: expected a whole number/);
    assert.throws(() => parseBenchArgs(['--kinds', 'swap']), /--kinds swap: unknown kind "swap"/);
    assert.throws(() => parseBenchArgs(['--workloads', 'load,mint']), /unknown workload "mint"/);
  });

  it('parses --rounds and refuses out-of-range values', () => {
    assert.equal(parseBenchArgs(['--rounds', '3'])!.rounds, 3);
    assert.equal(parseBenchArgs([])!.rounds, 1);
    assert.throws(() => parseBenchArgs(['--rounds', '0']), /--rounds 0: must be between 1 and 9/);
  });

  it('parses --reads into the chosen rows in table order and names an unknown one', () => {
    assert.deepEqual(parseBenchArgs([])!.reads, [
      'blockNumber',
      'getBalance',
      'call',
      'call-holders',
      'logs',
      'receipt',
    ]);
    assert.deepEqual(parseBenchArgs(['--reads', 'receipt, getBalance'])!.reads, ['getBalance', 'receipt']);
    assert.throws(
      () => parseBenchArgs(['--reads', 'call,balance']),
      /--reads call,balance: unknown read "balance"/,
    );
  });
});

describe('generator loads', () => {
  it('derives 2 kinds x 3 sender counts x 2 in-flight counts, the loop, and one sustained load per kind', () => {
    const o = parseBenchArgs([])!;
    const c = loadCases(o);
    assert.equal(c.filter((x) => x.workload === 'load').length, 12);
    const loop = c.find((x) => x.workload === 'loop')!;
    assert.deepEqual([loop.senders, loop.inflight, loop.maxPending, loop.perSender], [1, 1, 1, 200]);
    const sus = c.filter((x) => x.workload === 'sustained');
    assert.deepEqual(
      sus.map((x) => x.kind),
      ['transfer', 'erc20'],
    );
    assert.equal(sus[0].sendForMs, 60_000);
    // Enough pre-signed for 4,000 tx/s over the 60 s.
    assert.ok(sus[0].perSender * sus[0].senders >= 4000 * 60);
    assert.equal(new Set(c.map((x) => x.id)).size, c.length, 'ids are distinct');
    assert.equal(c.filter((x) => x.workload === 'ceiling').length, 1);
  });

  it('counts receipts, refusals, missing receipts and rates from the senders reports', () => {
    const t0 = 1_000_000;
    // Sender A: 3 sent, receipts at +100/+200 ms (blocks 5, 6), the third without a receipt.
    const a: SenderReport = {
      submitAt: Float64Array.from([t0, t0 + 10, t0 + 20]),
      receiptAt: Float64Array.from([t0 + 100, t0 + 200, Number.NaN]),
      block: Int32Array.from([5, 6, -1]),
      outcome: Uint8Array.from([1, 1, 0]),
      timedOut: true,
    };
    a.receiptCalls = 5;
    a.receiptMisses = 3;
    // Sender B: one confirmed (block 6, receipt at +400), one refused, one never sent.
    const b: SenderReport = {
      submitAt: Float64Array.from([t0 + 50, t0 + 60, Number.NaN]),
      receiptAt: Float64Array.from([t0 + 400, Number.NaN, Number.NaN]),
      block: Int32Array.from([6, -1, -1]),
      outcome: Uint8Array.from([1, 3, 0]),
      firstError: 'nonce too low',
      timedOut: false,
    };
    // Block 5 announced at +90, block 7 at +300 (block 6's announcement was not seen: the next one counts).
    const s = summarizeLoad(
      [a, b],
      new Map([
        [5, t0 + 90],
        [7, t0 + 300],
      ]),
    );
    assert.equal(s.planned, 6);
    assert.equal(s.sent, 5);
    assert.equal(s.confirmed, 3);
    assert.equal(s.refused, 1);
    assert.equal(s.sendersStopped, 1, 'sender B');
    assert.equal(s.firstRefusalMs, 60, "B's refused transaction was sent 60 ms after the first submit");
    assert.equal(s.missing, 1);
    assert.equal(s.receiptCallsPerTx, 5 / 3, 'lookups per receipt in hand (B made none)');
    assert.equal(s.receiptMissShare, 3 / 5);
    assert.equal(s.timedOut, true);
    assert.equal(s.firstError, 'nonce too low');
    assert.equal(s.elapsedMs, 400);
    assert.equal(s.txPerSec, 7.5);
    assert.equal(s.includedMs, 300);
    assert.equal(s.includedTxPerSec, 10);
    assert.deepEqual([s.receiptMs.min, s.receiptMs.max], [100, 350]);
    assert.deepEqual([s.inclusionMs!.min, s.inclusionMs!.max], [90, 290]);
    assert.equal(s.blocks, 2);
    assert.equal(s.maxTxPerBlock, 2);
    assert.equal(loadComplete({ ...s }, false), false);
  });

  it('a sustained load may leave transactions unsent; a burst may not', () => {
    const one: SenderReport = {
      submitAt: Float64Array.from([0, 5, Number.NaN]),
      receiptAt: Float64Array.from([50, 60, Number.NaN]),
      block: Int32Array.from([1, 1, -1]),
      outcome: Uint8Array.from([1, 1, 0]),
      timedOut: false,
    };
    const s = summarizeLoad([one], new Map(), 55);
    assert.equal(s.windowTxPerSec, ratePerSecond(1, 55), 'one receipt in hand within the 55 ms of sending');
    assert.equal(loadComplete(s, true), true);
    assert.equal(loadComplete(s, false), false);
  });
});

describe('bench wire', () => {
  it('parses Content-Length and chunked HTTP/1.1 replies, and waits for an incomplete one', () => {
    const cl = Buffer.from('HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhelloHTTP/1.1');
    assert.deepEqual(
      (({ status, body, used }) => ({ status, body: body.toString(), used }))(parseResponse(cl)!),
      { status: 200, body: 'hello', used: cl.length - 8 },
    );
    assert.equal(parseResponse(Buffer.from('HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nhello')), undefined);
    const ch = Buffer.from(
      'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n',
    );
    assert.equal(parseResponse(ch)!.body.toString(), 'abcde');
    assert.equal(parseResponse(ch)!.used, ch.length);
    assert.equal(parseResponse(ch.subarray(0, ch.length - 3)), undefined);
    assert.throws(() => parseResponse(Buffer.from('SSH-2.0\r\n\r\n')), WireError);
  });

  it('the canned server echoes each id with the reply its method gets', () => {
    const batch = JSON.parse(
      cannedReply(
        '[{"jsonrpc":"2.0","id":7,"method":"eth_getTransactionReceipt","params":["0x1"]},{"jsonrpc":"2.0","id":9,"method":"eth_getTransactionReceipt","params":["0x2"]}]',
      ),
    ) as Array<{ id: number; result: { status: string } }>;
    assert.deepEqual(
      batch.map((x) => [x.id, x.result.status]),
      [
        [7, '0x1'],
        [9, '0x1'],
      ],
    );
    const one = JSON.parse(
      cannedReply('{"jsonrpc":"2.0","id":3,"method":"eth_sendRawTransaction","params":["0x02"]}'),
    );
    assert.equal(one.id, 3);
    assert.match(one.result, /^0x[0-9a-f]{64}$/);
  });

  it('signs by hand the same bytes as ethers: transfers, contract calls, nonces across RLP boundaries', () => {
    const [acct] = devAccounts(1);
    const fees = { maxFeePerGas: 1000n * 10n ** 9n, maxPriorityFeePerGas: 10n ** 9n };
    const pk = getBytes(acct.key.privateKey);
    for (const nonce of [0, 1, 127, 128, 255, 256, 70_000]) {
      for (const f of [
        { to: receivers(1)[0], value: 10n ** 9n, gasLimit: 21_000n, nonce },
        { to: receivers(2)[1], data: '0xa9059cbb0000', gasLimit: 64_000n, nonce },
      ]) {
        assert.deepEqual(fastSignTx(pk, acct.address, fees, f), signTx(acct.key, acct.address, fees, f));
      }
    }
  });
});

describe('CPU use of a burst', () => {
  it('divides node and bench CPU by the transactions, and both by the wall time for busy cores', () => {
    const from = { nodeMs: 1_000, perProcess: {}, clientMs: 200, at: 10_000 };
    const to = { nodeMs: 7_000, perProcess: {}, clientMs: 2_200, at: 14_000 };
    assert.deepEqual(cpuUse(from, to, 4_000), { nodeMsPerTx: 1.5, clientMsPerTx: 0.5, coresBusy: 2 });
    assert.equal(cpuUse(from, to, 0), undefined);
    assert.equal(cpuUse(to, to, 10), undefined);
  });

  it('per 1,000 requests: each process, all of them, and the generator', () => {
    const from = { nodeMs: 300, perProcess: { executor: 100, 'rpc-edge': 200 }, clientMs: 50, at: 0 };
    const to = { nodeMs: 1_800, perProcess: { executor: 600, 'rpc-edge': 1_200 }, clientMs: 550, at: 1_000 };
    assert.deepEqual(cpuPer1k(from, to, 2_000), {
      executor: 250,
      'rpc-edge': 500,
      all: 750,
      generator: 250,
    });
    assert.equal(cpuPer1k(from, to, 0), undefined);
  });

  it('samples each process of a cluster on its own: the busy one shows its CPU, the idle one none', async () => {
    // Both print "ready" once started (Node's own start-up costs CPU); the spinner then spins until
    // killed. The loop waits for 200 ms of its CPU, however busy the machine is (bounded at 20 s).
    const start = (code: string) => {
      const p = spawn(process.execPath, ['-e', code], { stdio: ['ignore', 'pipe', 'ignore'] });
      const ready = new Promise((r) => p.stdout!.once('data', r));
      return { p, ready };
    };
    const spin = start('console.log("ready");for(;;){}');
    const idle = start('console.log("ready");setInterval(()=>{},1000)');
    try {
      await Promise.all([spin.ready, idle.ready]);
      const sample = cpuSampler([
        { name: 'busy', pid: spin.p.pid! },
        { name: 'idle', pid: idle.p.pid! },
      ]);
      const a = sample();
      const giveUp = Date.now() + 20_000;
      let b = sample();
      while (b.perProcess.busy! - a.perProcess.busy! < 200 && Date.now() < giveUp) {
        await new Promise((r) => setTimeout(r, 100));
        b = sample();
      }
      const busy = b.perProcess.busy! - a.perProcess.busy!;
      const still = b.perProcess.idle! - a.perProcess.idle!;
      assert.ok(busy >= 200, `a spinning process used CPU: ${busy}`);
      assert.ok(still <= 30, `a sleeping process used almost none: ${still}`);
      assert.equal(b.nodeMs - a.nodeMs, busy + still);
    } finally {
      spin.p.kill('SIGKILL');
      idle.p.kill('SIGKILL');
    }
  });

  it("tells a node's main thread from its other threads, and counts both in the process", async () => {
    // One child spins a worker thread while its main thread sleeps, the other spins its main thread.
    // Each is sampled until it used 200 ms of CPU (bounded at 20 s, however busy the machine is).
    const start = (code: string) => {
      const p = spawn(process.execPath, ['-e', code], { stdio: ['ignore', 'pipe', 'ignore'] });
      const ready = new Promise((r) => p.stdout!.once('data', r));
      return { p, ready };
    };
    const worker = start(
      'const{Worker}=require("node:worker_threads");new Worker("for(;;){}",{eval:true}).on("online",()=>console.log("ready"));setInterval(()=>{},1000)',
    );
    const main = start('console.log("ready");for(;;){}');
    try {
      await Promise.all([worker.ready, main.ready]);
      for (const [c, mainSpins] of [
        [worker, false],
        [main, true],
      ] as const) {
        const sample = cpuSampler(c.p.pid!);
        const a = sample();
        const giveUp = Date.now() + 20_000;
        let b = sample();
        while (b.nodeMs - a.nodeMs < 200 && Date.now() < giveUp) {
          await new Promise((r) => setTimeout(r, 100));
          b = sample();
        }
        const per1k = cpuPer1k(a, b, 1_000)!;
        assert.ok(per1k.all! >= 200, `the child used CPU: ${per1k.all}`);
        if (mainSpins)
          assert.ok(
            per1k['main-thread']! >= per1k.all! - 40,
            `main thread ${per1k['main-thread']} of ${per1k.all}`,
          );
        else
          assert.ok(
            per1k['main-thread']! <= 40,
            `the sleeping main thread used almost none: ${per1k['main-thread']}`,
          );
        assert.equal(per1k.rocksdb, 0, 'no RocksDB threads in either child');
      }
    } finally {
      worker.p.kill('SIGKILL');
      main.p.kill('SIGKILL');
    }
  });

  it('reads the CPU time of a live process tree from /proc', () => {
    // Spins until this process has used 100 ms of CPU (by its own count), however busy the machine is
    // (the wall-clock bound only stops a broken clock), then checks that /proc saw the same work.
    const sample = cpuSampler(process.pid);
    const a = sample();
    const giveUp = performance.now() + 20_000;
    while (sample().clientMs - a.clientMs < 100 && performance.now() < giveUp) Math.sqrt(Math.random());
    const b = sample();
    assert.ok(b.clientMs - a.clientMs >= 100, `the process used 100 ms of CPU: ${b.clientMs - a.clientMs}`);
    assert.ok(
      b.nodeMs - a.nodeMs >= 80,
      `100 ms of spinning shows in /proc/<pid>/stat (10 ms ticks): ${b.nodeMs - a.nodeMs}`,
    );
  });
});
