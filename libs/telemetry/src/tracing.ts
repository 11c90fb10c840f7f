// Tracing for libs, framework-free: spans through the OpenTelemetry API (@opentelemetry/api, which
// is a no-op until a service registers an SDK) and W3C trace context carried over any transport
// through a get/set pair (HTTP headers, gRPC metadata, NATS headers). Libraries never see the SDK;
// a service starts it (services/shared/src/tracing.ts) and then calls setTracingEnabled(true).
//
// Off (the default, and always in the all-in-one `noded start`), every helper here is one boolean
// test and a direct call of the wrapped function: no span object, no context lookup, no allocation.
import {
  type Context,
  context,
  INVALID_SPAN_CONTEXT,
  type Link,
  propagation,
  type Span,
  type SpanContext,
  SpanKind,
  SpanStatusCode,
  trace,
} from '@opentelemetry/api';

export type { Context as TraceParent, SpanContext as TraceContext };

let enabled = false;

/** Turned on by the service that started an SDK; libs only read it. */
export function setTracingEnabled(on: boolean): void {
  enabled = on;
}

export function tracingEnabled(): boolean {
  return enabled;
}

const TRACER_NAME = 'noded';

/** What a traced piece of work may add to its span while it runs. */
export interface TraceSpan {
  /** The span's own context (to remember, link to, or parent later work on). */
  context(): SpanContext;
  setAttribute(key: string, value: string | number | boolean): void;
  addLinks(to: SpanContext[]): void;
  /** Marks the span failed without throwing (work that answers its error, e.g. an HTTP 500). */
  fail(message: string): void;
}

const NO_SPAN: TraceSpan = {
  context: () => INVALID_SPAN_CONTEXT,
  setAttribute: () => {},
  addLinks: () => {},
  fail: () => {},
};

export type TraceSpanKind = 'internal' | 'server' | 'client' | 'producer' | 'consumer';

const KINDS: Record<TraceSpanKind, SpanKind> = {
  internal: SpanKind.INTERNAL,
  server: SpanKind.SERVER,
  client: SpanKind.CLIENT,
  producer: SpanKind.PRODUCER,
  consumer: SpanKind.CONSUMER,
};

export interface SpanOptions {
  kind?: TraceSpanKind;
  attributes?: Record<string, string | number | boolean>;
  /** The parent: a context extracted from a carrier, or a span context; default the active one. */
  parent?: Context | SpanContext;
  /** Spans this one follows from without being their child (a block's spans -> its transactions). */
  links?: SpanContext[];
}

function isSpanContext(p: Context | SpanContext): p is SpanContext {
  return typeof (p as SpanContext).traceId === 'string';
}

function wrap(span: Span): TraceSpan {
  return {
    context: () => span.spanContext(),
    setAttribute: (k, v) => {
      span.setAttribute(k, v);
    },
    addLinks: (to) => {
      if (to.length > 0) span.addLinks(to.map((c): Link => ({ context: c })));
    },
    fail: (message) => {
      span.setStatus({ code: SpanStatusCode.ERROR, message });
    },
  };
}

/**
 * Runs `fn` inside a span named `name` (ended when `fn` settles; a thrown error marks it failed).
 * Work `fn` starts (promises, callbacks) sees the span as the active context, so an outgoing call
 * injects it. With tracing off, `fn` runs with a span that records nothing.
 */
export function inSpan<T>(name: string, opts: SpanOptions, fn: (span: TraceSpan) => Promise<T>): Promise<T> {
  if (!enabled) return fn(NO_SPAN);
  const { span, active } = start(name, opts);
  return context.with(active, async () => {
    try {
      return await fn(wrap(span));
    } catch (err) {
      failed(span, err);
      throw err;
    } finally {
      span.end();
    }
  });
}

/**
 * inSpan for synchronous work (a relayed frame handed on): `fn` runs inside the span, which ends
 * when `fn` returns or throws; what `fn` starts (promises, calls out) still runs as its child.
 */
export function inSpanSync<T>(name: string, opts: SpanOptions, fn: (span: TraceSpan) => T): T {
  if (!enabled) return fn(NO_SPAN);
  const { span, active } = start(name, opts);
  return context.with(active, () => {
    try {
      return fn(wrap(span));
    } catch (err) {
      failed(span, err);
      throw err;
    } finally {
      span.end();
    }
  });
}

function start(name: string, opts: SpanOptions): { span: Span; active: Context } {
  let parent = context.active();
  if (opts.parent !== undefined)
    parent = isSpanContext(opts.parent) ? trace.setSpanContext(parent, opts.parent) : opts.parent;
  const span = trace.getTracer(TRACER_NAME).startSpan(
    name,
    {
      kind: KINDS[opts.kind ?? 'internal'],
      attributes: opts.attributes,
      links: opts.links?.map((c): Link => ({ context: c })),
    },
    parent,
  );
  return { span, active: trace.setSpan(parent, span) };
}

function failed(span: Span, err: unknown): void {
  span.setStatus({ code: SpanStatusCode.ERROR, message: err instanceof Error ? err.message : String(err) });
}

/**
 * Writes the active trace context (W3C `traceparent`, `tracestate`) through `set`, e.g. into gRPC
 * metadata or NATS headers. Nothing when tracing is off or no span is active.
 */
export function injectTraceContext(set: (key: string, value: string) => void): void {
  if (!enabled) return;
  propagation.inject(context.active(), undefined, {
    set: (_carrier, key, value) => set(key, value),
  });
}

/**
 * The context a remote caller sent (W3C `traceparent`, or what OTEL_PROPAGATORS names, read through
 * `get`), to pass as `parent`; undefined when tracing is off. A carrier without one gives a context
 * without a span: the work starts a trace of its own.
 */
export function extractTraceContext(get: (key: string) => string | undefined): Context | undefined {
  if (!enabled) return undefined;
  return propagation.extract(context.active(), undefined, {
    get: (_carrier, key) => get(key),
    keys: () => ['traceparent', 'tracestate'],
  });
}

/** A trace context written down (W3C `traceparent` and `tracestate`): what travels with a message. */
export type TraceCarrier = Record<string, string>;

/** The active trace context as a carrier; undefined when tracing is off or no span is active. */
export function activeTraceCarrier(): TraceCarrier | undefined {
  if (!enabled) return undefined;
  const carrier: TraceCarrier = {};
  injectTraceContext((k, v) => {
    carrier[k] = v;
  });
  return Object.keys(carrier).length > 0 ? carrier : undefined;
}

/** The span context a carrier names, if it names a valid one (and tracing is on). */
function carriedSpanContext(carrier: TraceCarrier): SpanContext | undefined {
  const ctx = extractTraceContext((k) => carrier[k]);
  const span = ctx === undefined ? undefined : trace.getSpanContext(ctx);
  return span !== undefined && trace.isSpanContextValid(span) ? span : undefined;
}

/**
 * Runs `fn` with the context `carrier` names as the active one, so the spans `fn` opens are its
 * children (a transaction's work on this node continues the trace it came with from a peer). A
 * carrier without a valid context, or tracing off: `fn` runs as it would have.
 */
export function withTraceCarrier<T>(carrier: TraceCarrier | undefined, fn: () => T): T {
  if (!enabled || carrier === undefined) return fn();
  const ctx = extractTraceContext((k) => carrier[k]);
  if (ctx === undefined || trace.getSpanContext(ctx) === undefined) return fn();
  return context.with(ctx, fn);
}

/** Links the active span (a batch's span) to the context each carrier names (its messages' own). */
export function linkActiveSpan(carriers: Array<TraceCarrier | undefined>): void {
  if (!enabled) return;
  const span = trace.getActiveSpan();
  if (span === undefined) return;
  const links: Link[] = [];
  for (const c of carriers) {
    const sc = c === undefined ? undefined : carriedSpanContext(c);
    if (sc !== undefined) links.push({ context: sc });
  }
  if (links.length > 0) span.addLinks(links);
}

/**
 * Span contexts kept by key until the work that follows from them runs: a transaction's CheckTx
 * until the block that holds it (keyed by tx hash), a block's FinalizeBlock until it is published,
 * a height's apply until reads link to it. Bounded: past `capacity` the oldest entry goes, so a
 * transaction that never makes it into a block costs nothing forever.
 */
export class TraceBook {
  private readonly entries = new Map<string, SpanContext>();

  constructor(private readonly capacity = 10_000) {
    if (!Number.isInteger(capacity) || capacity < 1)
      throw new RangeError(`TraceBook capacity must be a positive integer, got ${capacity}`);
  }

  get size(): number {
    return this.entries.size;
  }

  remember(key: string, ctx: SpanContext): void {
    if (!enabled) return;
    this.entries.delete(key);
    this.entries.set(key, ctx);
    if (this.entries.size > this.capacity) {
      const oldest = this.entries.keys().next();
      if (!oldest.done) this.entries.delete(oldest.value);
    }
  }

  get(key: string): SpanContext | undefined {
    return this.entries.get(key);
  }

  /** The entry, removed. */
  take(key: string): SpanContext | undefined {
    const ctx = this.entries.get(key);
    if (ctx !== undefined) this.entries.delete(key);
    return ctx;
  }
}
