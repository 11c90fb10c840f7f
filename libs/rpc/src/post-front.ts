// A lean HTTP/1.1 front for JSON POSTs on a raw TCP listener, ahead of a node:http server.
//
// What a JSON-RPC client sends nearly always is one shape: `POST <path> HTTP/1.1` with Host, a
// Content-Length within the body limit and a JSON content type, on a keep-alive connection. The
// front parses exactly that shape itself and writes the reply in one write: node:http's request
// and response objects, streams and per-request callbacks cost more CPU than the JSON-RPC answer
// of a cheap read (a bare node:http server answers ~68,000 small POSTs a second on one core here,
// the same server on net sockets ~97,000).
//
// Everything else (another method or version, chunked bodies, Expect, Upgrade, an Origin and its
// CORS, a missing Host, a body over the limit, a header node:http would refuse or that this parser
// does not know how to read safely) is never half-handled: at the request's first byte the front
// puts back what it has read (`socket.unshift`) and hands the socket to the node:http server
// (`emit('connection')`), which serves that connection from then on, refusals and all. A
// connection's requests are answered one at a time and in order, so pipelined requests keep their
// order, and the handover happens between two requests, never inside one.
//
// Timeouts follow node:http's, checked by one sweep timer rather than a timer per request: a
// connection idle between requests for keepAliveTimeoutMs is closed; a request whose head is not
// in within headersTimeoutMs, or whole within requestTimeoutMs, gets 408 and the connection closes.

import type { Server as HttpServer } from 'node:http';
import { createServer, type Server as NetServer, type Socket } from 'node:net';
import { listenOn } from './http.js';

/** A reply body: text, or bytes in an envelope (written as they are, in one corked write). */
export type PostReply =
  | string
  | {
      readonly head: string;
      readonly chunks: readonly Uint8Array[];
      readonly tail: string;
      readonly byteLength: number;
    };

/** Answers one POST: its body as text, and its headers by lower-case name. */
export type PostHandler = (body: string, header: (name: string) => string | undefined) => Promise<PostReply>;

export interface PostFrontOptions {
  /** Bodies up to this many bytes are served here; a longer declared length goes to node:http (413). */
  maxBodyBytes: number;
  /** Media types served here (lower case, without parameters); others go to node:http (415). */
  contentTypes: ReadonlySet<string>;
  /** A request's head must be in within this, ms. */
  headersTimeoutMs: number;
  /** A request must be in whole within this, ms; 0: no limit. */
  requestTimeoutMs: number;
  /** A connection idle between requests this long is closed, ms (node:http's keepAliveTimeout). */
  keepAliveTimeoutMs: number;
  /** How often those timeouts are checked, ms. */
  checkIntervalMs: number;
  /** A head longer than this goes to node:http, which refuses it (431). node:http's default: 16 KiB. */
  maxHeaderBytes: number;
}

const CRLFCRLF = Buffer.from('\r\n\r\n');
const REQUEST_LINE = /^POST [\x21-\x7e]+ HTTP\/1\.1$/;
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** Control characters, and CR or LF anywhere but in a CRLF pair: node:http refuses or reads them otherwise. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is this pattern's job.
const UNSAFE_HEAD = /[\0-\x08\x0b\x0c\x0e-\x1f\x7f]|\r(?!\n)|(?<!\r)\n/;
const DIGITS = /^\d{1,15}$/;

/**
 * The parts of a request head the front acts on. A class, not an object literal: V8 may learn that a
 * literal's objects live long (a request held while the chain answers) and allocate all of that
 * literal's objects in the old generation from then on; it does not do so for a constructor's.
 */
class Head {
  constructor(
    readonly length: number,
    readonly close: boolean,
    readonly traceHeaders: Record<string, string> | undefined,
  ) {}
}

function parseHead(text: string, opts: PostFrontOptions): Head | undefined {
  if (UNSAFE_HEAD.test(text)) return undefined;
  const lines = text.split('\r\n');
  if (!REQUEST_LINE.test(lines[0]!)) return undefined;
  let length: number | undefined;
  let typed = false;
  let host = false;
  let close = false;
  let traceHeaders: Record<string, string> | undefined;
  for (let i = 1; i < lines.length; i++) {
    const line = lines[i]!;
    const colon = line.indexOf(':');
    if (colon <= 0) return undefined;
    const name = line.slice(0, colon).toLowerCase();
    if (!TOKEN.test(name)) return undefined;
    const value = line.slice(colon + 1).trim();
    switch (name) {
      case 'host':
        if (host) return undefined;
        host = true;
        break;
      case 'content-length':
        if (length !== undefined || !DIGITS.test(value)) return undefined;
        length = Number(value);
        break;
      case 'content-type': {
        if (typed) return undefined;
        const media = value.split(';')[0]!.trim().toLowerCase();
        if (!opts.contentTypes.has(media)) return undefined;
        typed = true;
        break;
      }
      case 'connection':
        for (const token of value.toLowerCase().split(',')) {
          const t = token.trim();
          if (t === 'close') close = true;
          else if (t === 'upgrade') return undefined;
        }
        break;
      case 'traceparent':
      case 'tracestate':
        traceHeaders ??= {};
        if (traceHeaders[name] !== undefined) return undefined;
        traceHeaders[name] = value;
        break;
      case 'transfer-encoding':
      case 'expect':
      case 'upgrade':
      case 'origin':
        return undefined;
    }
  }
  if (!host || !typed || length === undefined || length > opts.maxBodyBytes) return undefined;
  return new Head(length, close, traceHeaders);
}

let dateText = '';
let dateUntil = 0;
/** The Date header's value, made at most once a second (as node:http does). */
function httpDate(now: number): string {
  if (now >= dateUntil) {
    dateText = new Date(now).toUTCString();
    dateUntil = now - (now % 1000) + 1000;
  }
  return dateText;
}

type Phase = 'idle' | 'head' | 'body' | 'busy' | 'gone';

class Connection {
  phase: Phase = 'idle';
  /** When the current phase began (the request's first byte for 'head' and 'body'), Date.now(). */
  since = Date.now();
  private readonly parts: Buffer[] = [];
  private size = 0;
  private head: Head | undefined;
  private headBytes = 0;
  private readonly onData = (chunk: Buffer) => this.received(chunk);
  /** The client sent its last byte (the listener is half-open, as node:http's is). */
  private peerEnded = false;
  private readonly onEnd = () => {
    this.peerEnded = true;
    if (this.phase !== 'busy') this.next();
  };
  private readonly onError = () => this.socket.destroy();
  private readonly onClose = () => {
    this.front.forget(this);
    this.gone();
  };

  constructor(
    readonly socket: Socket,
    private readonly front: PostFront,
  ) {
    socket.on('data', this.onData);
    socket.on('end', this.onEnd);
    socket.on('error', this.onError);
    socket.on('close', this.onClose);
  }

  private received(chunk: Buffer): void {
    if (this.phase === 'gone') return;
    this.parts.push(chunk);
    this.size += chunk.length;
    if (this.phase === 'busy') {
      // Pipelined input waits for the reply in hand; past a request's worth the socket stops reading.
      if (this.size > this.front.opts.maxHeaderBytes + this.front.opts.maxBodyBytes) this.socket.pause();
      return;
    }
    this.next();
  }

  /** The bytes held, as one buffer (joined only when there is more than one piece). */
  private joined(): Buffer {
    if (this.parts.length > 1) this.hold(Buffer.concat(this.parts, this.size));
    return this.parts[0]!;
  }

  /** Keeps `rest` as all that is held, in the connection's one array. */
  private hold(rest: Buffer | undefined): void {
    this.parts.length = 0;
    if (rest === undefined) this.size = 0;
    else {
      this.parts.push(rest);
      this.size = rest.length;
    }
  }

  /** Reads the next request out of what is held, if it is all in; serves it or hands the socket over. */
  private next(): void {
    if (this.phase === 'gone') return;
    if (this.size === 0) {
      if (this.peerEnded) {
        this.end();
        return;
      }
      this.phase = 'idle';
      this.since = Date.now();
      return;
    }
    if (this.phase === 'idle') {
      this.phase = 'head';
      this.since = Date.now();
    }
    const opts = this.front.opts;
    if (this.head === undefined) {
      const held = this.joined();
      const end = held.indexOf(CRLFCRLF);
      if (end < 0) {
        if (held.length > opts.maxHeaderBytes) this.handOver();
        else if (this.peerEnded) this.end();
        return;
      }
      const head = end <= opts.maxHeaderBytes ? parseHead(held.toString('latin1', 0, end), opts) : undefined;
      if (head === undefined) {
        this.handOver();
        return;
      }
      this.head = head;
      this.headBytes = end + 4;
      this.phase = 'body';
    }
    const need = this.headBytes + this.head.length;
    if (this.size < need) {
      if (this.peerEnded) this.end();
      return;
    }
    const held = this.joined();
    const body = held.toString('utf8', this.headBytes, need);
    const head = this.head;
    this.head = undefined;
    this.hold(held.length === need ? undefined : held.subarray(need));
    this.phase = 'busy';
    const traced = head.traceHeaders;
    this.front
      .handler(body, (name) => traced?.[name])
      .then(
        (reply) => this.reply(reply, head.close),
        () => this.fail(),
      );
  }

  private reply(reply: PostReply, close: boolean): void {
    const socket = this.socket;
    if (this.phase === 'gone' || socket.destroyed) return;
    const length = typeof reply === 'string' ? Buffer.byteLength(reply) : reply.byteLength;
    const head =
      `HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: ${length}\r\n` +
      `Date: ${httpDate(Date.now())}\r\n${close ? 'Connection: close' : this.front.keepAliveLines}\r\n\r\n`;
    if (typeof reply === 'string') socket.write(head + reply);
    else {
      socket.cork();
      socket.write(head + reply.head);
      for (const c of reply.chunks) socket.write(c);
      socket.write(reply.tail);
      socket.uncork();
    }
    if (close) {
      this.end();
      return;
    }
    this.phase = 'idle';
    this.since = Date.now();
    if (socket.isPaused()) socket.resume();
    if (socket.writableNeedDrain) socket.once('drain', () => this.continue());
    else this.next();
  }

  private continue(): void {
    if (this.phase === 'idle') this.next();
  }

  /** The handler threw (it should not): 500, and the connection closes. */
  private fail(): void {
    if (this.phase === 'gone' || this.socket.destroyed) return;
    this.socket.write('HTTP/1.1 500 Internal Server Error\r\ncontent-length: 0\r\nConnection: close\r\n\r\n');
    this.end();
  }

  /** 408 for a request not in within its time; the connection closes. */
  timedOut(): void {
    if (this.phase === 'gone') return;
    if (!this.socket.destroyed)
      this.socket.write('HTTP/1.1 408 Request Timeout\r\nConnection: close\r\n\r\n');
    this.end();
  }

  private end(): void {
    this.phase = 'gone';
    this.front.forget(this);
    this.socket.off('data', this.onData);
    this.socket.end();
  }

  /** Gives the socket, with every byte read from it since the last reply, to the node:http server. */
  private handOver(): void {
    // Bytes cannot be put back into a stream that has ended: a client that half-closed after
    // pipelining a request this front does not serve gets the connection closed instead.
    if (this.peerEnded) {
      this.end();
      return;
    }
    this.phase = 'gone';
    this.front.forget(this);
    this.socket.off('data', this.onData);
    this.socket.off('end', this.onEnd);
    this.socket.off('error', this.onError);
    this.socket.off('close', this.onClose);
    if (this.size > 0) this.socket.unshift(this.joined());
    this.hold(undefined);
    if (this.socket.isPaused()) this.socket.resume();
    this.front.fallback.emit('connection', this.socket);
  }

  gone(): void {
    this.phase = 'gone';
    this.hold(undefined);
  }
}

/** The listener: serves the common JSON POST itself and gives every other connection to `fallback`. */
export class PostFront {
  private readonly server: NetServer;
  private readonly connections = new Set<Connection>();
  private readonly sweep: NodeJS.Timeout;
  readonly keepAliveLines: string;

  constructor(
    readonly fallback: HttpServer,
    readonly handler: PostHandler,
    readonly opts: PostFrontOptions,
  ) {
    this.keepAliveLines = `Connection: keep-alive\r\nKeep-Alive: timeout=${Math.floor(opts.keepAliveTimeoutMs / 1000)}`;
    // Half-open, as node:http's own listener: a client may send its request and then its FIN, and
    // still read the reply; and a socket handed over must be one node:http can serve.
    this.server = createServer({ noDelay: true, allowHalfOpen: true }, (socket) => this.accept(socket));
    this.sweep = setInterval(() => this.check(Date.now()), opts.checkIntervalMs);
    this.sweep.unref();
  }

  /** Binds host:port; resolves with the bound port (useful with port 0). */
  listen(host: string, port: number): Promise<number> {
    return listenOn(this.server, host, port);
  }

  /** Stops accepting, closes every connection (its own and the ones handed over). */
  close(): Promise<void> {
    clearInterval(this.sweep);
    for (const c of this.connections) {
      c.gone();
      c.socket.destroy();
    }
    this.connections.clear();
    this.fallback.closeAllConnections();
    if (!this.server.listening) return Promise.resolve();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  /** Connections being served here (not counting those handed to node:http). */
  get size(): number {
    return this.connections.size;
  }

  forget(c: Connection): void {
    this.connections.delete(c);
  }

  private accept(socket: Socket): void {
    this.connections.add(new Connection(socket, this));
  }

  private check(now: number): void {
    const { keepAliveTimeoutMs, headersTimeoutMs, requestTimeoutMs } = this.opts;
    for (const c of this.connections) {
      const age = now - c.since;
      if (c.phase === 'idle' && age > keepAliveTimeoutMs) {
        this.connections.delete(c);
        c.gone();
        c.socket.destroy();
      } else if (
        (c.phase === 'head' && age > headersTimeoutMs) ||
        ((c.phase === 'head' || c.phase === 'body') && requestTimeoutMs > 0 && age > requestTimeoutMs)
      )
        c.timedOut();
    }
  }
}
