// The request fuzzer against a real node (a CI-sized run of `npm run fuzz`), and against a broken
// server, to show that its judge fails what it must fail.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, describe, it } from 'node:test';
import { type FuzzReport, runNodeFuzz } from './fuzz-node.js';
import { startLocalNode } from './harness.js';

const SEED = Number(process.env.NODED_FUZZ_SEED ?? 20261125);

function summary(r: FuzzReport): string {
  return [
    ...r.failures.slice(0, 20).map((f) => `#${f.index} ${f.what.slice(0, 160)}\n    ${f.why.slice(0, 300)}`),
    ...r.liveness,
  ].join('\n');
}

describe('fuzzing a running node over its four ports', () => {
  let cleanup: (() => Promise<void>) | undefined;
  after(async () => cleanup?.());

  it(`2,000 malformed, oversized, nested and slow requests get proper answers; the chain goes on (seed ${SEED})`, async () => {
    const started = await startLocalNode({
      extra: (_c, a) => {
        if (a.api) a.api.rpc_read_timeout = '2s';
        const evmRpc = (a.evm as Record<string, Record<string, unknown>> | undefined)?.rpc;
        if (evmRpc) evmRpc.http_timeout = '2s';
      },
    });
    cleanup = started.cleanup;
    const n = started.node;
    const report = await runNodeFuzz({
      targets: { eth: n.ethUrl, ws: n.wsUrl, comet: n.cometUrl, rest: n.apiUrl },
      requests: 2000,
      seed: SEED,
      concurrency: 8,
      slowEvery: 500,
      slowCutoffMs: 14_000,
    });
    assert.equal(report.requests, 2000);
    assert.deepEqual(report.failures, [], summary(report));
    assert.deepEqual(report.liveness, []);
    assert.ok(report.heights.last > report.heights.first);
    assert.equal(n.proc.exitCode, null, 'the node is still running');
    // Every port was exercised, with errors as well as results.
    const keys = Object.keys(report.answers).join(' ');
    for (const want of [
      /eth http 200 result/,
      /eth http 200 error -32602/,
      /comet http 500 error/,
      /rest http 4\d\d/,
      /ws answered/,
      /oversized 413/,
      /slow cut/,
    ]) {
      assert.match(keys, want);
    }
  });
});

describe('the fuzzer judges', () => {
  let server: Server | undefined;
  after(() => server?.close());

  it('fails internal errors, 5xx, silence and a chain that does not advance', async () => {
    let n = 0;
    server = createServer((req, res) => {
      if (req.url?.startsWith('/status')) {
        res.end(JSON.stringify({ result: { sync_info: { latest_block_height: '7' } } }));
        return;
      }
      req.resume();
      switch (n++ % 4) {
        case 0:
          res.writeHead(502).end('bad gateway');
          break;
        case 1:
          res.end(
            JSON.stringify({ jsonrpc: '2.0', id: 1, error: { code: -32603, message: 'x is undefined' } }),
          );
          break;
        case 2:
          req.socket.destroy();
          break;
        default:
          res.end('{"jsonrpc":"2.0","id":1,"result":"0x1"}');
      }
    });
    await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const report = await runNodeFuzz({
      targets: { eth: url, ws: url.replace('http', 'ws'), comet: url, rest: url },
      requests: 200,
      seed: SEED,
      concurrency: 4,
      slowEvery: 0,
      advanceWaitMs: 500,
    });
    const whys = report.failures.map((f) => f.why).join('\n');
    assert.match(whys, /HTTP 502/);
    assert.match(whys, /internal error|internal error text/);
    assert.match(whys, /socket hang up|ECONNRESET/);
    assert.deepEqual(report.liveness, ['the chain did not advance: height 7 before, 7 after']);
  });
});
