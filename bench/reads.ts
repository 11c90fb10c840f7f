// Read load for a fixed duration with a fixed number of keep-alive connections, each sending the next
// request when the previous reply arrives (closed loop). Two generators, same method of measurement:
// - wrk (Debian's `wrk` package; C, epoll): preferred, it leaves the CPU to the node under test;
// - a node:http loop: the fallback when wrk is not installed.
// Every reply is checked: HTTP 200 with a JSON-RPC "result" and no "error", else it counts as an error.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { LoaderChoice } from './args.js';
import { type CpuSample, cpuPer1k } from './cpu.js';
import { monoUs } from './profile.js';
import { ratePerSecond, summarize } from './stats.js';

export interface ReadLatency {
  mean: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
}

export interface ReadResult {
  loader: 'wrk' | 'node';
  concurrency: number;
  durationSec: number;
  requests: number;
  errors: number;
  reqPerSec: number;
  /** Milliseconds. */
  latencyMs: ReadLatency;
  /** Monotonic clock (µs) around the measured run: places it in a CPU profile of the node. */
  fromUs: number;
  toUs: number;
  /** CPU ms per 1,000 requests of the measured run, by node process, `all` (their sum) and `generator`. */
  cpuPer1k?: Record<string, number>;
}

export interface ReadSpec {
  url: string;
  /** Request bodies, sent in turn (one per request, cycling). */
  bodies: string[];
  seconds: number;
  warmupSeconds: number;
  concurrency: number;
  /** Sampled at the start and the end of the measured run (not the warm-up). */
  cpu?: () => CpuSample;
}

export class LoaderError extends Error {
  readonly code = 'BENCH_LOADER';
}

export function wrkVersion(): string | undefined {
  const r = spawnSync('wrk', ['--version'], { encoding: 'utf8', timeout: 5000 });
  if (r.error) return undefined;
  const m = /wrk\s+(\S+)/.exec(`${r.stdout}${r.stderr}`);
  return m ? `wrk ${m[1]}` : 'wrk';
}

export function pickLoader(choice: LoaderChoice): { kind: 'wrk' | 'node'; version: string } {
  const wrk = wrkVersion();
  if (choice === 'wrk' && !wrk)
    throw new LoaderError('--loader wrk: wrk is not installed (apt-get install -y wrk)');
  if (choice !== 'node' && wrk) return { kind: 'wrk', version: wrk };
  return { kind: 'node', version: `node:http loop (Node ${process.version})` };
}

export async function runReads(kind: 'wrk' | 'node', spec: ReadSpec): Promise<ReadResult> {
  const run = kind === 'wrk' ? wrkRun : nodeRun;
  if (spec.warmupSeconds > 0) await run(spec, spec.warmupSeconds);
  const cpuFrom = spec.cpu?.();
  const fromUs = monoUs();
  const r = await run(spec, spec.seconds);
  const toUs = monoUs();
  const cpuTo = spec.cpu?.();
  const per1k = cpuFrom && cpuTo ? cpuPer1k(cpuFrom, cpuTo, r.requests) : undefined;
  return { ...r, fromUs, toUs, ...(per1k ? { cpuPer1k: per1k } : {}) };
}

// ---- wrk ------------------------------------------------------------------------------------------

const WRK_SCRIPT = (bodies: string[]) => `-- Written by bench/reads.ts for one wrk run.
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
local bodies = {
${bodies.map((b) => `[==[${b}]==],`).join('\n')}
}
local requests = {}
local next_request = 0
function request()
  next_request = next_request % #requests + 1
  return requests[next_request]
end
local threads = {}
function setup(thread) table.insert(threads, thread) end
function init(args)
  bad = 0
  for i, b in ipairs(bodies) do requests[i] = wrk.format(nil, nil, nil, b) end
end
function response(status, headers, body)
  if status ~= 200 or string.find(body, '"error"', 1, true) or not string.find(body, '"result"', 1, true) then
    bad = bad + 1
  end
end
function done(summary, latency, requests)
  local bad = 0
  for _, t in ipairs(threads) do bad = bad + (t:get("bad") or 0) end
  local e = summary.errors
  io.write(string.format(
    'BENCH_JSON {"requests":%d,"durationUs":%d,"errors":%d,"bad":%d,"p50":%.1f,"p90":%.1f,"p99":%.1f,"max":%.1f,"mean":%.3f}\\n',
    summary.requests, summary.duration, e.connect + e.read + e.write + e.status + e.timeout, bad,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max, latency.mean))
end
`;

type Measured = Omit<ReadResult, 'fromUs' | 'toUs'>;

async function wrkRun(spec: ReadSpec, seconds: number): Promise<Measured> {
  if (spec.bodies.some((b) => b.includes(']==]')))
    throw new LoaderError('request body cannot be quoted for the wrk script');
  const dir = mkdtempSync(join(tmpdir(), 'bench-wrk-'));
  const script = join(dir, 'rpc.lua');
  writeFileSync(script, WRK_SCRIPT(spec.bodies));
  try {
    const args = ['-t1', `-c${spec.concurrency}`, `-d${seconds}s`, '--timeout', '5s', '-s', script, spec.url];
    const out = await new Promise<string>((resolve, reject) => {
      const p = spawn('wrk', args, { stdio: ['ignore', 'pipe', 'pipe'] });
      let text = '';
      p.stdout.on('data', (d) => {
        text += d;
      });
      p.stderr.on('data', (d) => {
        text += d;
      });
      const killer = setTimeout(() => p.kill('SIGKILL'), (seconds + 30) * 1000);
      p.on('error', reject);
      p.on('exit', (code) => {
        clearTimeout(killer);
        if (code === 0) resolve(text);
        else reject(new LoaderError(`wrk exited with ${code}: ${text.slice(-500)}`));
      });
    });
    const line = out.split('\n').find((l) => l.startsWith('BENCH_JSON '));
    if (!line) throw new LoaderError(`wrk printed no result: ${out.slice(-500)}`);
    const r = JSON.parse(line.slice('BENCH_JSON '.length)) as {
      requests: number;
      durationUs: number;
      errors: number;
      bad: number;
      p50: number;
      p90: number;
      p99: number;
      max: number;
      mean: number;
    };
    return {
      loader: 'wrk',
      concurrency: spec.concurrency,
      durationSec: r.durationUs / 1e6,
      requests: r.requests,
      errors: r.errors + r.bad,
      reqPerSec: ratePerSecond(r.requests - r.bad, r.durationUs / 1000),
      latencyMs: {
        mean: r.mean / 1000,
        p50: r.p50 / 1000,
        p90: r.p90 / 1000,
        p99: r.p99 / 1000,
        max: r.max / 1000,
      },
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

// ---- node:http loop -------------------------------------------------------------------------------

async function nodeRun(spec: ReadSpec, seconds: number): Promise<Measured> {
  const url = new URL(spec.url);
  const agent = new Agent({ keepAlive: true, maxSockets: spec.concurrency });
  const bodies = spec.bodies.map((b) => Buffer.from(b));
  let nextBody = 0;
  const latencies: number[] = [];
  let errors = 0;
  const started = performance.now();
  const until = started + seconds * 1000;

  const once = (body: Buffer) =>
    new Promise<boolean>((resolve) => {
      const req = request(
        {
          host: url.hostname,
          port: url.port,
          path: url.pathname || '/',
          method: 'POST',
          agent,
          headers: { 'content-type': 'application/json', 'content-length': body.length },
          timeout: 5000,
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            resolve(res.statusCode === 200 && text.includes('"result"') && !text.includes('"error"'));
          });
          res.on('error', () => resolve(false));
        },
      );
      req.on('timeout', () => req.destroy());
      req.on('error', () => resolve(false));
      req.end(body);
    });

  const worker = async () => {
    while (performance.now() < until) {
      const t = performance.now();
      const body = bodies[nextBody]!;
      nextBody = (nextBody + 1) % bodies.length;
      const ok = await once(body);
      if (ok) latencies.push(performance.now() - t);
      else errors++;
    }
  };
  await Promise.all(Array.from({ length: spec.concurrency }, worker));
  const elapsed = performance.now() - started;
  agent.destroy();
  const s = summarize(latencies);
  return {
    loader: 'node',
    concurrency: spec.concurrency,
    durationSec: elapsed / 1000,
    requests: latencies.length + errors,
    errors,
    reqPerSec: ratePerSecond(latencies.length, elapsed),
    latencyMs: { mean: s.mean, p50: s.p50, p90: s.p90, p99: s.p99, max: s.max },
  };
}
