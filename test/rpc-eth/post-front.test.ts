// The JSON POST front (libs/rpc/src/post-front.ts) over raw sockets: what it serves itself, what it
// hands to the node:http server behind it (and that the handover loses no byte and no order), its
// timeouts, and its close.
import assert from 'node:assert/strict';
import { createServer as createHttpServer, type Server } from 'node:http';
import { connect, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { answerClientErrors } from '@noded/rpc/src/http.js';
import { PostFront, type PostFrontOptions } from '@noded/rpc/src/post-front.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Reply {
  status: number;
  headers: Map<string, string>;
  body: string;
}

/** Reads whole HTTP responses off `text` (Content-Length bodies, or to the end when there is none). */
function parseReplies(text: string, ended: boolean): Reply[] {
  const out: Reply[] = [];
  let rest = text;
  for (;;) {
    const end = rest.indexOf('\r\n\r\n');
    if (end < 0) return out;
    const [statusLine, ...lines] = rest.slice(0, end).split('\r\n');
    const headers = new Map<string, string>();
    for (const l of lines) {
      const c = l.indexOf(':');
      headers.set(l.slice(0, c).toLowerCase(), l.slice(c + 1).trim());
    }
    const status = Number(statusLine!.split(' ')[1]);
    const lengthText = headers.get('content-length');
    const bodyStart = end + 4;
    if (status < 200) {
      out.push({ status, headers, body: '' });
      rest = rest.slice(bodyStart);
      continue;
    }
    if (lengthText === undefined) {
      if (!ended && !headers.has('transfer-encoding')) return out;
      out.push({ status, headers, body: rest.slice(bodyStart) });
      return out;
    }
    const length = Number(lengthText);
    if (Buffer.byteLength(rest.slice(bodyStart)) < length) return out;
    const body = Buffer.from(rest.slice(bodyStart)).subarray(0, length).toString('utf8');
    out.push({ status, headers, body });
    rest = rest.slice(bodyStart + body.length);
  }
}

/** A raw client: writes what it is told, collects every byte, reads replies off them. */
class RawClient {
  readonly socket: Socket;
  text = '';
  ended = false;
  readonly closed: Promise<void>;

  constructor(port: number) {
    this.socket = connect(port, '127.0.0.1');
    this.socket.setEncoding('utf8');
    this.socket.on('data', (d: string) => {
      this.text += d;
    });
    this.socket.on('error', () => {});
    this.closed = new Promise((r) => this.socket.on('close', () => r()));
    this.socket.on('end', () => {
      this.ended = true;
    });
  }

  write(data: string | Buffer): void {
    this.socket.write(data);
  }

  /** Waits (at most 5 s) for `n` whole replies. */
  async replies(n: number): Promise<Reply[]> {
    for (let i = 0; i < 500; i++) {
      const got = parseReplies(this.text, this.ended);
      if (got.length >= n) return got;
      await sleep(10);
    }
    throw new Error(`expected ${n} replies, got: ${JSON.stringify(this.text)}`);
  }

  /** Waits (at most 5 s) for the server to close the connection. */
  async waitClosed(): Promise<void> {
    await Promise.race([
      this.closed,
      sleep(5000).then(() => {
        throw new Error('the server did not close the connection');
      }),
    ]);
  }

  destroy(): void {
    this.socket.destroy();
  }
}

const post = (body: string, extra = '') =>
  `POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n${extra}\r\n${body}`;

const OPTIONS: PostFrontOptions = {
  maxBodyBytes: 1000,
  contentTypes: new Set(['application/json']),
  headersTimeoutMs: 400,
  requestTimeoutMs: 600,
  keepAliveTimeoutMs: 300,
  checkIntervalMs: 50,
  maxHeaderBytes: 2048,
};

describe('PostFront: the JSON POST front of the JSON-RPC HTTP listener', () => {
  let fallback: Server;
  let front: PostFront;
  let port: number;
  const clients: RawClient[] = [];
  const client = () => {
    const c = new RawClient(port);
    clients.push(c);
    return c;
  };

  before(async () => {
    // The node:http server behind the front answers with what it saw, so a reply tells who served it.
    fallback = createHttpServer({ maxHeaderSize: OPTIONS.maxHeaderBytes }, (req, res) => {
      let body = '';
      req.setEncoding('utf8');
      req.on('data', (d: string) => {
        body += d;
      });
      req.on('end', () => {
        const text = `fallback ${req.method} ${body}`;
        res.writeHead(200, { 'content-length': Buffer.byteLength(text) });
        res.end(text);
      });
    });
    answerClientErrors(fallback);
    front = new PostFront(
      fallback,
      async (body, header) => {
        if (body === '"reject"') throw new Error('handler failed');
        if (body === '"slow"') await sleep(80);
        if (body === '"big"') {
          const chunk = Buffer.alloc(64 * 1024, 'a');
          const chunks = Array.from({ length: 16 }, () => chunk);
          return { head: '{"big":"', chunks, tail: '"}', byteLength: 16 * chunk.length + 10 };
        }
        return `{"echo":${body},"trace":${JSON.stringify(header('traceparent') ?? null)}}`;
      },
      OPTIONS,
    );
    port = await front.listen('127.0.0.1', 0);
  });
  after(async () => {
    for (const c of clients) c.destroy();
    await front.close();
  });

  it('answers a JSON POST itself, keep-alive, with its length, and serves the next one on the same socket', async () => {
    const c = client();
    c.write(post('1', 'traceparent: 00-aa-bb-01\r\n'));
    const [r] = await c.replies(1);
    assert.equal(r!.status, 200);
    assert.equal(r!.body, '{"echo":1,"trace":"00-aa-bb-01"}');
    assert.equal(r!.headers.get('content-type'), 'application/json');
    assert.equal(r!.headers.get('connection'), 'keep-alive');
    assert.equal(r!.headers.get('keep-alive'), 'timeout=0');
    assert.match(r!.headers.get('date') ?? '', / GMT$/);
    c.write(post('2'));
    const both = await c.replies(2);
    assert.equal(both[1]!.body, '{"echo":2,"trace":null}');
    assert.equal(c.ended, false);
  });

  it('answers pipelined requests in the order they came, a slow one first', async () => {
    const c = client();
    c.write(post('"slow"') + post('2') + post('3'));
    const r = await c.replies(3);
    assert.deepEqual(
      r.map((x) => x.body),
      ['{"echo":"slow","trace":null}', '{"echo":2,"trace":null}', '{"echo":3,"trace":null}'],
    );
  });

  it('reads a request that arrives a byte at a time, a multi-byte character split across reads', async () => {
    const c = client();
    const bytes = Buffer.from(post('"héllo €"'));
    c.socket.setNoDelay(true);
    for (const b of bytes) {
      c.write(Buffer.from([b]));
      await sleep(1);
    }
    const [r] = await c.replies(1);
    assert.equal(r!.body, '{"echo":"héllo €","trace":null}');
  });

  it('hands a connection to node:http at the first request it does not serve, losing no byte and no order', async () => {
    const c = client();
    const chunked =
      'POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n' +
      '3\r\n"ab\r\n1\r\n"\r\n0\r\n\r\n';
    c.write(post('1') + chunked + post('3'));
    const r = await c.replies(3);
    assert.deepEqual(
      r.map((x) => x.body),
      ['{"echo":1,"trace":null}', 'fallback POST "ab"', 'fallback POST 3'],
    );
  });

  const handedOver: Array<[string, string, number, string?]> = [
    ['a GET', 'GET / HTTP/1.1\r\nHost: x\r\n\r\n', 200, 'fallback GET '],
    [
      'HTTP/1.0',
      'POST / HTTP/1.0\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1\r\n\r\n7',
      200,
      'fallback POST 7',
    ],
    ['an Origin (CORS)', post('7', 'Origin: http://a.example\r\n'), 200, 'fallback POST 7'],
    ['Expect: 100-continue', post('7', 'Expect: 100-continue\r\n'), 100],
    ['no Host', 'POST / HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: 1\r\n\r\n7', 400],
    ['two Content-Lengths', post('7', 'Content-Length: 1\r\n'), 400],
    [
      'a Content-Length that is not a number',
      'POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1x\r\n\r\n7',
      400,
    ],
    [
      'another content type',
      'POST / HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\nContent-Length: 1\r\n\r\n7',
      200,
      'fallback POST 7',
    ],
    [
      'no Content-Length',
      'POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n',
      200,
      'fallback POST ',
    ],
    [
      'a body over the limit',
      `POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1001\r\n\r\n${'1'.repeat(1001)}`,
      200,
      `fallback POST ${'1'.repeat(1001)}`,
    ],
    ['a header line without a colon', post('7', 'Nonsense\r\n'), 400],
    ['a bare LF in the head', 'POST / HTTP/1.1\r\nHost: x\nContent-Length: 1\r\n\r\n7', 400],
    ['a control character in a value', post('7', 'X-A: b\x01c\r\n'), 400],
    ['a head over maxHeaderBytes', post('7', `X-Big: ${'b'.repeat(3000)}\r\n`), 431],
  ];
  for (const [what, request, status, body] of handedOver) {
    it(`hands over ${what}: node:http answers it`, async () => {
      const c = client();
      c.write(request);
      const [r] = await c.replies(1);
      assert.equal(r!.status, status, JSON.stringify(c.text));
      if (body !== undefined) assert.equal(r!.body, body);
      assert.doesNotMatch(c.text, /"echo"/);
    });
  }

  it('closes after the reply when the client asks for it', async () => {
    const c = client();
    c.write(post('5', 'Connection: close\r\n'));
    const [r] = await c.replies(1);
    assert.equal(r!.body, '{"echo":5,"trace":null}');
    assert.equal(r!.headers.get('connection'), 'close');
    await c.waitClosed();
  });

  it('answers a client that half-closes after its request, then closes', async () => {
    const c = client();
    c.write(post('"slow"') + post('6'));
    c.socket.end();
    const r = await c.replies(2);
    assert.deepEqual(
      r.map((x) => x.body),
      ['{"echo":"slow","trace":null}', '{"echo":6,"trace":null}'],
    );
    await c.waitClosed();
  });

  it('answers 500 and closes when the handler fails', async () => {
    const c = client();
    c.write(post('"reject"'));
    const [r] = await c.replies(1);
    assert.equal(r!.status, 500);
    await c.waitClosed();
  });

  it('writes a reply given as chunks whole, and serves the request pipelined behind it', async () => {
    const c = client();
    c.write(post('"big"') + post('9'));
    const r = await c.replies(2);
    assert.equal(r[0]!.body.length, 16 * 64 * 1024 + 10);
    assert.ok(r[0]!.body.startsWith('{"big":"aaa') && r[0]!.body.endsWith('aa"}'));
    assert.equal(r[1]!.body, '{"echo":9,"trace":null}');
  });

  it('closes a connection idle between requests for keepAliveTimeoutMs', async () => {
    const c = client();
    c.write(post('1'));
    await c.replies(1);
    const at = Date.now();
    await c.waitClosed();
    const waited = Date.now() - at;
    assert.ok(waited >= 250 && waited < 2000, `closed after ${waited} ms`);
  });

  it('answers 408 to a head not in within headersTimeoutMs, and to a body not in within requestTimeoutMs', async () => {
    const slowHead = client();
    slowHead.write('POST / HTTP/1.1\r\nHost: x\r\n');
    const slowBody = client();
    slowBody.write(post('12345').slice(0, -2));
    const [a] = await slowHead.replies(1);
    assert.equal(a!.status, 408);
    await slowHead.waitClosed();
    const [b] = await slowBody.replies(1);
    assert.equal(b!.status, 408);
    await slowBody.waitClosed();
  });

  it('close() ends its own connections and the ones it handed over', async () => {
    const fb = createHttpServer((_req, res) => res.end('x'));
    const f = new PostFront(fb, async () => '1', { ...OPTIONS, keepAliveTimeoutMs: 60_000 });
    const p = await f.listen('127.0.0.1', 0);
    const own = new RawClient(p);
    own.write(post('1'));
    await own.replies(1);
    const handed = new RawClient(p);
    handed.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
    await handed.replies(1);
    assert.equal(f.size, 1);
    await f.close();
    await own.waitClosed();
    await handed.waitClosed();
    await assert.rejects(
      new Promise((resolve, reject) => {
        const s = connect(p, '127.0.0.1', () => resolve(s));
        s.on('error', reject);
      }),
      /ECONNREFUSED/,
    );
  });
});
