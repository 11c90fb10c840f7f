// A lean HTTP/1.1 keep-alive client on a raw TCP socket for the load generator: one request at a time
// per connection, the request head written once per body, the reply parsed by hand (Content-Length or
// chunked). No node:http agent, no per-request objects beyond the reply string: the generator must cost
// the machine far less than the node it loads (its own ceiling is measured against a canned server).
import { connect, type Socket } from 'node:net';

export class WireError extends Error {
  readonly code = 'BENCH_WIRE';
}

const CRLF2 = Buffer.from('\r\n\r\n');

/** Parses one HTTP/1.1 response from the front of `buf`: the body and the bytes it used, or undefined when incomplete. */
export function parseResponse(buf: Buffer): { status: number; body: Buffer; used: number } | undefined {
  const headEnd = buf.indexOf(CRLF2);
  if (headEnd < 0) return undefined;
  const head = buf.toString('latin1', 0, headEnd);
  const m = /^HTTP\/1\.[01] (\d{3})/.exec(head);
  if (!m) throw new WireError(`not an HTTP/1.1 response: ${JSON.stringify(head.slice(0, 80))}`);
  const status = Number(m[1]);
  const start = headEnd + 4;
  const len = /\r\ncontent-length:\s*(\d+)/i.exec(head);
  if (len) {
    const n = Number(len[1]);
    if (buf.length < start + n) return undefined;
    return { status, body: buf.subarray(start, start + n), used: start + n };
  }
  if (/\r\ntransfer-encoding:\s*chunked/i.test(head)) {
    const parts: Buffer[] = [];
    let at = start;
    for (;;) {
      const lineEnd = buf.indexOf('\r\n', at);
      if (lineEnd < 0) return undefined;
      const size = Number.parseInt(buf.toString('latin1', at, lineEnd), 16);
      if (!Number.isFinite(size)) throw new WireError('bad chunk size in a chunked response');
      const dataStart = lineEnd + 2;
      if (buf.length < dataStart + size + 2) return undefined;
      if (size === 0) {
        // No trailers are expected from a JSON-RPC server: the last chunk is followed by one CRLF.
        return { status, body: Buffer.concat(parts), used: dataStart + 2 };
      }
      parts.push(buf.subarray(dataStart, dataStart + size));
      at = dataStart + size + 2;
    }
  }
  throw new WireError(`response has neither Content-Length nor chunked encoding: ${head.slice(0, 200)}`);
}

/** One keep-alive connection; `post` may be called again only after the previous call settled. */
export class WireConnection {
  private socket: Socket | undefined;
  private buf: Buffer = Buffer.alloc(0);
  private waiting: { resolve: (s: string) => void; reject: (e: Error) => void } | undefined;
  private readonly prefix: string;

  constructor(
    private readonly host: string,
    private readonly port: number,
    path = '/',
  ) {
    this.prefix = `POST ${path} HTTP/1.1\r\nHost: ${host}:${port}\r\nContent-Type: application/json\r\nConnection: keep-alive\r\nContent-Length: `;
  }

  private open(): Promise<Socket> {
    return new Promise((resolve, reject) => {
      const s = connect({ host: this.host, port: this.port, noDelay: true });
      s.once('connect', () => {
        s.off('error', reject);
        s.on('error', (err) => this.fail(err));
        resolve(s);
      });
      s.once('error', reject);
      s.on('data', (d: Buffer) => this.onData(d));
      s.on('close', () => {
        if (this.socket === s) this.socket = undefined;
        this.fail(new WireError('connection closed by the server'));
      });
    });
  }

  private fail(err: Error): void {
    const w = this.waiting;
    this.waiting = undefined;
    this.buf = Buffer.alloc(0);
    w?.reject(err);
  }

  private onData(d: Buffer): void {
    this.buf = this.buf.length === 0 ? d : Buffer.concat([this.buf, d]);
    let r: ReturnType<typeof parseResponse>;
    try {
      r = parseResponse(this.buf);
    } catch (err) {
      this.socket?.destroy();
      this.fail(err as Error);
      return;
    }
    if (!r) return;
    this.buf = this.buf.subarray(r.used);
    const w = this.waiting;
    this.waiting = undefined;
    if (!w) return;
    if (r.status !== 200)
      w.reject(new WireError(`HTTP ${r.status}: ${r.body.toString('utf8').slice(0, 200)}`));
    else w.resolve(r.body.toString('utf8'));
  }

  /** POSTs one JSON body; resolves with the reply body (HTTP 200 only). Reconnects once if the socket was closed. */
  async post(body: string): Promise<string> {
    if (this.waiting) throw new WireError('post while a request is in flight on this connection');
    this.socket ??= await this.open();
    const socket = this.socket;
    return new Promise<string>((resolve, reject) => {
      this.waiting = { resolve, reject };
      socket.write(`${this.prefix}${Buffer.byteLength(body)}\r\n\r\n${body}`);
    });
  }

  close(): void {
    this.socket?.destroy();
    this.socket = undefined;
  }
}
