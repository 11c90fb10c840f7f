// The node's two worker threads run under heap caps (services/shared/src/worker-limits.ts). A worker
// that reaches its cap must fail loudly: the node is told once, with an error naming the thread and
// the cap, every request waiting on the thread is rejected, later ones too, and closing does not hang.
// Each test starts the real thread with a small cap and makes the real code path allocate past it.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { IndexerThread } from '@noded/service-consensus/src/indexer-thread/thread.js';
import { WORKER_LIMITS } from '@noded/service-shared/src/worker-limits.js';

const SMALL = { maxOldGenerationSizeMb: 32, maxYoungGenerationSizeMb: 4 };

/** Resolves with the first error passed to the returned callback, or rejects after `ms`. */
function firstFatal(ms: number): { onFatal: (err: Error) => void; seen: Error[]; first: Promise<Error> } {
  const seen: Error[] = [];
  let resolve: (err: Error) => void = () => {};
  const first = new Promise<Error>((res, rej) => {
    resolve = res;
    setTimeout(() => rej(new Error(`no onFatal within ${ms} ms: the thread hangs`)), ms).unref();
  });
  return {
    seen,
    first,
    onFatal: (err) => {
      seen.push(err);
      resolve(err);
    },
  };
}

/** POSTs `body`; resolves with the status, or with the socket error when the server went away. */
function post(url: string, body: string): Promise<string> {
  return new Promise((resolve) => {
    const req = request(url, { method: 'POST', headers: { 'content-type': 'application/json' } }, (res) => {
      res.resume();
      res.on('end', () => resolve(`status ${res.statusCode}`));
      res.on('error', (err) => resolve(`error ${err.message}`));
    });
    req.setTimeout(30_000, () => req.destroy(new Error('no answer within 30 s')));
    req.on('error', (err) => resolve(`error ${err.message}`));
    req.end(body);
  });
}

describe('worker threads under heap caps', () => {
  it('the default caps bound both generations and leave room in the old one', () => {
    assert.ok(
      WORKER_LIMITS.maxYoungGenerationSizeMb! <= 48,
      'at most V8 default of 48 MB (16 MB semi-spaces)',
    );
    assert.ok(WORKER_LIMITS.maxOldGenerationSizeMb! >= 256);
  });

  it('the indexer thread over its cap stops the node with an error naming it, and nothing hangs', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'noded-worker-cap-'));
    const fatal = firstFatal(60_000);
    const thread = await IndexerThread.open({
      path: join(dir, 'tx_index.db'),
      onFatal: fatal.onFatal,
      resourceLimits: SMALL,
    });
    try {
      assert.equal(await thread.indexedHeight(), 0, 'the thread works under its cap');
      // One block whose events hold ~96 MB of strings: the copy alone is three times the cap.
      const value = 'v'.repeat(1024);
      const txResults = Array.from({ length: 1_500 }, () => ({
        code: 0,
        data: new Uint8Array(),
        log: '',
        info: '',
        gasWanted: 21_000n,
        gasUsed: 21_000n,
        codespace: '',
        events: [
          {
            type: 'big',
            attributes: Array.from({ length: 64 }, (_, i) => ({ key: `k${i}`, value, index: true })),
          },
        ],
      }));
      const indexing = thread.index({
        height: 1,
        txs: txResults.map((_, i) => new Uint8Array([i & 0xff, i >> 8])),
        txResults,
        events: [],
      });
      const err = await fatal.first;
      assert.match(
        err.message,
        /^the indexer thread ran out of memory: its heap reached the cap of 32 MB old/,
      );
      await assert.rejects(
        indexing,
        /the indexer thread ran out of memory/,
        'the request in flight is rejected',
      );
      await assert.rejects(thread.indexedHeight(), /the indexer thread ran out of memory/, 'later ones too');
      await thread.close();
      assert.equal(fatal.seen.length, 1, 'the node is told once');
    } finally {
      await thread.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('the JSON-RPC thread over its cap stops the process loudly, and its client is not left hanging', async () => {
    const child = spawn(
      process.execPath,
      [fileURLToPath(new URL('./json-rpc-cap-child.js', import.meta.url))],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let out = '';
    let errOut = '';
    child.stdout.on('data', (d) => {
      out += d;
    });
    child.stderr.on('data', (d) => {
      errOut += d;
    });
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
      child.on('exit', (code, signal) => resolve({ code, signal })),
    );
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    try {
      for (let i = 0; i < 300 && !/port \d+/.test(out); i++) await sleep(100);
      const port = /port (\d+)/.exec(out)?.[1];
      assert.ok(port, `the child did not start: ${out}${errOut}`);
      const url = `http://127.0.0.1:${port}`;
      assert.equal(
        await post(url, JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_chainId', params: [] })),
        'status 200',
        'the thread serves under its cap',
      );
      // A 60 MB request of small objects: parsed, several times the cap.
      const params = `[${'{"a":[1,2,3],"b":"xy"},'.repeat(2_500_000)}{}]`;
      const answer = await post(url, `{"jsonrpc":"2.0","id":2,"method":"eth_chainId","params":${params}}`);
      assert.match(answer, /^error /, 'the client sees its connection end, not a hang');
      const { code, signal } = await exited;
      // Two loud endings, depending on where V8 meets the cap: Node terminates the worker
      // (ERR_WORKER_OUT_OF_MEMORY) and onFatal stops the process, or, when one native call (here
      // JSON.parse) overshoots the cap, V8 aborts the whole process with its own message.
      if (code === 70)
        assert.match(out, /fatal: the JSON-RPC thread ran out of memory: its heap reached the cap of 32 MB/);
      else {
        assert.equal(signal, 'SIGABRT', `exit ${code} ${signal}: ${out}${errOut.slice(0, 2000)}`);
        assert.match(errOut, /FATAL ERROR: .*JavaScript heap out of memory/);
      }
    } finally {
      clearTimeout(timer);
      child.kill('SIGKILL');
    }
  });
});
