// JSON-RPC envelope, error classes, batches and HTTP-level limits, over real HTTP.
import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { SLOW } from './fake-chain.js';
import { type Harness, post, type RpcReply, rpc, sleep, startHarness } from './helpers.js';

const parse = (t: string) => JSON.parse(t) as RpcReply & RpcReply[];

async function stillServing(url: string): Promise<void> {
  const r = await rpc(url, 'eth_chainId');
  assert.equal(r.result, '0x7a69');
}

describe('JSON-RPC envelope and errors', () => {
  let h: Harness;
  before(async () => {
    h = await startHarness({
      options: { batchRequestLimit: 5, maxBodyBytes: 10_000, batchResponseMaxSize: 2_000 },
    });
  });
  after(() => h.close());

  it('answers a call with jsonrpc, the same id and the result', async () => {
    const r = await post(h.url, '{"jsonrpc":"2.0","id":"abc","method":"eth_blockNumber","params":[]}');
    assert.equal(r.status, 200);
    assert.match(r.headers.get('content-type') ?? '', /application\/json/);
    assert.deepEqual(parse(r.text), { jsonrpc: '2.0', id: 'abc', result: '0x0' });
    const nullId = parse((await post(h.url, '{"jsonrpc":"2.0","id":null,"method":"eth_chainId"}')).text);
    assert.deepEqual(nullId, { jsonrpc: '2.0', id: null, result: '0x7a69' });
  });

  it('handle() dispatches without a transport: parsed JSON, text or bytes', async () => {
    assert.deepEqual(await h.server.handle({ jsonrpc: '2.0', id: 1, method: 'eth_chainId' }, 'http'), {
      jsonrpc: '2.0',
      id: 1,
      result: '0x7a69',
    });
    assert.deepEqual(await h.server.handle('[{"jsonrpc":"2.0","id":2,"method":"net_version"}]', 'ws'), [
      { jsonrpc: '2.0', id: 2, result: '31337' },
    ]);
    assert.deepEqual(await h.server.handle(Buffer.from('{bad'), 'http'), {
      jsonrpc: '2.0',
      id: null,
      error: { code: -32700, message: 'parse error' },
    });
    assert.equal(await h.server.handle({ jsonrpc: '2.0', method: 'eth_chainId' }, 'http'), undefined);
    const sub = (await h.server.handle(
      { jsonrpc: '2.0', id: 3, method: 'eth_subscribe', params: ['newHeads'] },
      'ws',
    )) as RpcReply;
    assert.deepEqual(sub.error, { code: -32601, message: 'notifications not supported' });
  });

  it('malformed JSON gets -32700 parse error with id null', async () => {
    const r = await post(h.url, '{"jsonrpc":"2.0","id":1,"method":');
    assert.equal(r.status, 200);
    assert.deepEqual(parse(r.text), {
      jsonrpc: '2.0',
      id: null,
      error: { code: -32700, message: 'parse error' },
    });
    await stillServing(h.url);
  });

  it('wrong version, missing method or an object id get -32600 invalid request', async () => {
    const wrongVersion = parse((await post(h.url, '{"jsonrpc":"1.0","id":7,"method":"eth_chainId"}')).text);
    assert.deepEqual(wrongVersion, {
      jsonrpc: '2.0',
      id: 7,
      error: { code: -32600, message: 'invalid request' },
    });
    const noMethod = parse((await post(h.url, '{"jsonrpc":"2.0","id":8}')).text);
    assert.deepEqual(noMethod.error, { code: -32600, message: 'invalid request' });
    assert.equal(noMethod.id, 8);
    const objectId = parse((await post(h.url, '{"jsonrpc":"2.0","id":{"a":1},"method":"eth_chainId"}')).text);
    assert.deepEqual(objectId, {
      jsonrpc: '2.0',
      id: null,
      error: { code: -32600, message: 'invalid request' },
    });
    const scalar = parse((await post(h.url, '42')).text);
    assert.equal(scalar.error?.code, -32600);
    await stillServing(h.url);
  });

  it('unknown and disabled methods get -32601 with geth message', async () => {
    const r = await rpc(h.url, 'eth_doesNotExist');
    assert.deepEqual(r.error, {
      code: -32601,
      message: 'the method eth_doesNotExist does not exist/is not available',
    });
    const long = await rpc(h.url, `eth_${'x'.repeat(3000)}`);
    assert.deepEqual(long.error, { code: -32600, message: 'method name too long: 3004 > 2048' });
    const admin = await rpc(h.url, 'admin_peers');
    assert.equal(admin.error?.code, -32601);
    assert.ok(
      h.requests.some((q) => q.method === 'unknown' && !q.ok),
      'metrics hook reports unknown methods as "unknown"',
    );
    await stillServing(h.url);
  });

  it('bad hex gets -32602 with geth wording', async () => {
    const cases: Array<[string, unknown[], string]> = [
      [
        'eth_getBalance',
        ['f39fd6e51aad88f6f4ce6ab8827279cfffb92266', 'latest'],
        'invalid argument 0: json: cannot unmarshal hex string without 0x prefix into Go value of type common.Address',
      ],
      [
        'eth_getBalance',
        ['0x1234', 'latest'],
        'invalid argument 0: hex string has length 4, want 40 for common.Address',
      ],
      [
        'eth_getBalance',
        [42, 'latest'],
        'invalid argument 0: json: cannot unmarshal non-string into Go value of type common.Address',
      ],
      [
        'eth_getBalance',
        ['0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266', '123'],
        'invalid argument 1: hex string without 0x prefix',
      ],
      ['eth_getBlockByNumber', ['0x01', false], 'invalid argument 0: hex number with leading zero digits'],
      ['eth_getBlockByNumber', ['0xzz', false], 'invalid argument 0: invalid hex string'],
      [
        'eth_getBlockByNumber',
        ['latest', 'yes'],
        'invalid argument 1: json: cannot unmarshal string into Go value of type bool',
      ],
      [
        'eth_sendRawTransaction',
        ['0x123'],
        'invalid argument 0: json: cannot unmarshal hex string of odd length into Go value of type hexutil.Bytes',
      ],
      [
        'eth_getTransactionByHash',
        ['0x12'],
        'invalid argument 0: hex string has length 2, want 64 for common.Hash',
      ],
      [
        'eth_call',
        [{ to: '0x1234567890123456789012345678901234567890', value: '0x01' }, 'latest'],
        'invalid argument 0: json: cannot unmarshal hex number with leading zero digits into Go struct field TransactionArgs.value of type *hexutil.Big',
      ],
      [
        'eth_call',
        ['0x00', 'latest'],
        'invalid argument 0: json: cannot unmarshal string into Go value of type ethapi.TransactionArgs',
      ],
    ];
    for (const [method, params, message] of cases) {
      const r = await rpc(h.url, method, params);
      assert.deepEqual(r.error, { code: -32602, message }, `${method} ${JSON.stringify(params)}`);
    }
    await stillServing(h.url);
  });

  it('wrong parameter counts get -32602', async () => {
    assert.deepEqual(
      (await rpc(h.url, 'eth_getBalance', ['0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266'])).error,
      {
        code: -32602,
        message: 'missing value for required argument 1',
      },
    );
    assert.deepEqual((await rpc(h.url, 'eth_blockNumber', [1])).error, {
      code: -32602,
      message: 'too many arguments, want at most 0',
    });
    const named = parse(
      (await post(h.url, '{"jsonrpc":"2.0","id":1,"method":"eth_getBalance","params":{"a":1}}')).text,
    );
    assert.deepEqual(named.error, { code: -32602, message: 'non-array args' });
    // Omitted params and null params are both an empty list.
    assert.equal(
      parse((await post(h.url, '{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":null}')).text).result,
      '0x7a69',
    );
    await stillServing(h.url);
  });

  it('batches answer each call in order, skip notifications, report per-item errors', async () => {
    const body = JSON.stringify([
      { jsonrpc: '2.0', id: 1, method: 'eth_chainId' },
      { jsonrpc: '2.0', method: 'eth_blockNumber' },
      { jsonrpc: '2.0', id: 2, method: 'nope_nope' },
      1,
      { jsonrpc: '2.0', id: 3, method: 'net_version' },
    ]);
    const replies = parse((await post(h.url, body)).text);
    assert.equal(replies.length, 4);
    assert.deepEqual(replies[0], { jsonrpc: '2.0', id: 1, result: '0x7a69' });
    assert.equal(replies[1]!.error?.code, -32601);
    assert.deepEqual(replies[2], {
      jsonrpc: '2.0',
      id: null,
      error: { code: -32600, message: 'invalid request' },
    });
    assert.deepEqual(replies[3], { jsonrpc: '2.0', id: 3, result: '31337' });
  });

  it('an empty batch is one invalid-request error; notifications alone get an empty body', async () => {
    assert.deepEqual(parse((await post(h.url, '[]')).text), {
      jsonrpc: '2.0',
      id: null,
      error: { code: -32600, message: 'empty batch' },
    });
    const notif = await post(h.url, '{"jsonrpc":"2.0","method":"eth_chainId"}');
    assert.equal(notif.status, 200);
    assert.equal(notif.text, '');
  });

  it('a batch above batch_request_limit gets "batch too large" carrying the first call id', async () => {
    const calls = Array.from({ length: 6 }, (_, i) => ({
      jsonrpc: '2.0',
      id: 100 + i,
      method: 'eth_chainId',
    }));
    const r = parse((await post(h.url, JSON.stringify(calls))).text);
    assert.deepEqual(r, [{ jsonrpc: '2.0', id: 100, error: { code: -32600, message: 'batch too large' } }]);
    const ok = parse((await post(h.url, JSON.stringify(calls.slice(0, 5)))).text);
    assert.equal(ok.length, 5);
    await stillServing(h.url);
  });

  it('batch results beyond batch_response_max_size fail with -32003', async () => {
    // Each block object is ~1.3 kB; the limit is 2000 bytes.
    const calls = Array.from({ length: 4 }, (_, i) => ({
      jsonrpc: '2.0',
      id: i,
      method: 'eth_getBlockByNumber',
      params: ['0x0', false],
    }));
    const r = parse((await post(h.url, JSON.stringify(calls))).text);
    assert.equal(r.length, 4);
    assert.ok(r[0]!.result !== undefined);
    assert.ok(r[1]!.result !== undefined, 'the call that crosses the limit keeps its result');
    assert.deepEqual(r[2]!.error, { code: -32003, message: 'response too large' });
    assert.deepEqual(r[3]!.error, { code: -32003, message: 'response too large' });
  });

  it('a body above max_body_bytes gets HTTP 413, declared or streamed, and the server keeps serving', async () => {
    const big = JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'eth_chainId',
      params: ['x'.repeat(20_000)],
    });
    const r = await post(h.url, big);
    assert.equal(r.status, 413);
    assert.deepEqual(parse(r.text).error, {
      code: -32600,
      message: `content length too large (${big.length}>10000)`,
    });
    await stillServing(h.url);
    // Chunked upload without Content-Length.
    const status = await new Promise<number | string>((resolve) => {
      const u = new URL(h.url);
      const req = httpRequest(
        { host: u.hostname, port: u.port, method: 'POST', headers: { 'content-type': 'application/json' } },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        },
      );
      req.on('error', (e) => resolve(e.message));
      for (let i = 0; i < 5; i++) req.write('x'.repeat(4_000));
      req.end();
    });
    assert.equal(status, 413);
    await stillServing(h.url);
  });

  it('content type, HTTP method and health checks follow geth', async () => {
    const wrongType = await post(h.url, '{}', { 'content-type': 'text/plain' });
    assert.equal(wrongType.status, 415);
    assert.match(wrongType.text, /invalid content type, only application\/json is supported/);
    const withCharset = await post(h.url, '{"jsonrpc":"2.0","id":1,"method":"eth_chainId"}', {
      'content-type': 'application/json; charset=utf-8',
    });
    assert.equal(withCharset.status, 200);
    const put = await post(h.url, '{}', { 'content-type': 'application/json' }, 'PUT');
    assert.equal(put.status, 405);
    const health = await post(h.url, '', {}, 'GET');
    assert.equal(health.status, 200);
    assert.equal(health.text, '');
    await stillServing(h.url);
  });

  it('a client that disconnects mid-request does not disturb the server', async () => {
    const u = new URL(h.url);
    await new Promise<void>((resolve) => {
      const req = httpRequest({
        host: u.hostname,
        port: u.port,
        method: 'POST',
        headers: { 'content-type': 'application/json', 'content-length': '1000' },
      });
      req.on('error', () => resolve());
      req.write('{"jsonrpc":"2.0",');
      setTimeout(() => {
        req.destroy();
        resolve();
      }, 20);
    });
    await sleep(20);
    await stillServing(h.url);
  });
});

describe('CORS and request timeout', () => {
  let open: Harness;
  let strict: Harness;
  before(async () => {
    open = await startHarness();
    strict = await startHarness({
      options: { corsAllowedOrigins: ['https://app.example'], httpTimeoutMs: 150 },
    });
    strict.chain.slowMs = 2_000;
  });
  after(async () => {
    await open.close();
    await strict.close();
  });

  it('"*" allows any origin, including the preflight', async () => {
    const r = await post(open.url, '{"jsonrpc":"2.0","id":1,"method":"eth_chainId"}', {
      'content-type': 'application/json',
      origin: 'https://anything.example',
    });
    assert.equal(r.headers.get('access-control-allow-origin'), '*');
    const pre = await fetch(open.url, {
      method: 'OPTIONS',
      headers: {
        origin: 'https://anything.example',
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'content-type',
      },
    });
    assert.equal(pre.status, 204);
    assert.equal(pre.headers.get('access-control-allow-origin'), '*');
    assert.match(pre.headers.get('access-control-allow-methods') ?? '', /POST/);
    assert.equal(pre.headers.get('access-control-allow-headers'), 'content-type');
  });

  it('a list allows only its origins', async () => {
    const good = await post(strict.url, '{"jsonrpc":"2.0","id":1,"method":"eth_chainId"}', {
      'content-type': 'application/json',
      origin: 'https://app.example',
    });
    assert.equal(good.headers.get('access-control-allow-origin'), 'https://app.example');
    const bad = await post(strict.url, '{"jsonrpc":"2.0","id":1,"method":"eth_chainId"}', {
      'content-type': 'application/json',
      origin: 'https://evil.example',
    });
    assert.equal(bad.headers.get('access-control-allow-origin'), null);
    const pre = await fetch(strict.url, {
      method: 'OPTIONS',
      headers: { origin: 'https://evil.example', 'access-control-request-method': 'POST' },
    });
    assert.equal(pre.headers.get('access-control-allow-origin'), null);
  });

  it('a call slower than http_timeout gets -32002 "request timed out"', async () => {
    const started = Date.now();
    const r = await rpc(strict.url, 'eth_getBalance', [SLOW, 'latest']);
    assert.deepEqual(r.error, { code: -32002, message: 'request timed out' });
    assert.ok(Date.now() - started < 1_500, 'answered at the timeout, not when the call finished');
    const batch = parse(
      (
        await post(
          strict.url,
          JSON.stringify([
            { jsonrpc: '2.0', id: 1, method: 'eth_chainId' },
            { jsonrpc: '2.0', id: 2, method: 'eth_getBalance', params: [SLOW, 'latest'] },
            { jsonrpc: '2.0', id: 3, method: 'eth_chainId' },
          ]),
        )
      ).text,
    );
    assert.deepEqual(batch[0], { jsonrpc: '2.0', id: 1, result: '0x7a69' });
    assert.deepEqual(batch[1]!.error, { code: -32002, message: 'request timed out' });
    assert.deepEqual(batch[2]!.error, { code: -32002, message: 'request timed out' });
    await stillServing(strict.url);
  });
});
