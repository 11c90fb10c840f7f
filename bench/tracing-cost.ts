// What tracing costs on the JSON-RPC hot path: CPU time per in-process call (eth_blockNumber through
// EthRpcServer.handle, no HTTP) with tracing off (libs/telemetry's default: the SDK never started),
// then on (the Node SDK with a batch span processor whose exporter drops the batches, so only the
// spans' own cost is measured). Median of --rounds rounds of --calls calls each.
//
// Usage: node dist/bench/tracing-cost.js [--calls 100000] [--rounds 5]

import { setTracingEnabled } from '@noded/telemetry';
import { startHarness } from '../test/rpc-eth/helpers.js';
import { startDroppingSdk } from './dropping-sdk.js';
import { arg } from './exec-fixtures.js';

const calls = Number(arg('calls', '100000'));
const rounds = Number(arg('rounds', '5'));
const h = await startHarness();
const body = '{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]}';

async function cpuPerCall(n: number): Promise<number> {
  const c = process.cpuUsage();
  for (let i = 0; i < n; i++) await h.server.handle(body, 'http');
  const d = process.cpuUsage(c);
  return (d.user + d.system) / n;
}

async function median(): Promise<number> {
  await cpuPerCall(Math.min(calls, 20_000)); // warm-up
  const samples: number[] = [];
  for (let r = 0; r < rounds; r++) samples.push(await cpuPerCall(calls));
  samples.sort((a, b) => a - b);
  return samples[Math.floor(samples.length / 2)]!;
}

const off = await median();
const sdk = startDroppingSdk();
setTracingEnabled(true);
const on = await median();
setTracingEnabled(false);
await sdk.stop();
await h.close();
process.stdout.write(
  `eth_blockNumber in-process, CPU per call (median of ${rounds} x ${calls}): tracing off ${off.toFixed(2)} us, on ${on.toFixed(2)} us (${sdk.exported()} spans exported)\n`,
);
process.exit(0);
