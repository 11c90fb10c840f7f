// libs/telemetry's tracing helpers: off they do nothing (no span, no header, nothing kept); on (the
// Node SDK started as a service starts it, spans kept in memory) a span joins a remote traceparent,
// parents the work it runs, writes its own context into an outgoing carrier, records links and
// failures; the TraceBook keeps at most its capacity, oldest out first.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  extractTraceContext,
  injectTraceContext,
  inSpan,
  setTracingEnabled,
  TraceBook,
  type TraceContext,
  tracingEnabled,
} from '@noded/telemetry';
import { NodeSDK } from '@opentelemetry/sdk-node';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';

const TRACE = '0af7651916cd43dd8448eb211c80319c';
const PARENT = 'b7ad6b7169203331';
const carrierOf = (traceparent: string) => (k: string) => (k === 'traceparent' ? traceparent : undefined);

describe('tracing helpers', () => {
  it('do nothing while tracing is off', async () => {
    assert.equal(tracingEnabled(), false);
    const written: string[] = [];
    const out = await inSpan('work', { kind: 'server' }, async (span) => {
      span.setAttribute('a', 1);
      injectTraceContext((k) => written.push(k));
      return 42;
    });
    assert.equal(out, 42);
    assert.deepEqual(written, []);
    assert.equal(extractTraceContext(carrierOf(`00-${TRACE}-${PARENT}-01`)), undefined);
    const book = new TraceBook(2);
    book.remember('a', { traceId: TRACE, spanId: PARENT, traceFlags: 1 });
    assert.equal(book.size, 0);
  });

  it('on: join a remote parent, parent nested work, inject their context, keep links and failures', async () => {
    const exporter = new InMemorySpanExporter();
    const sdk = new NodeSDK({
      serviceName: 'tracing-test',
      spanProcessors: [new SimpleSpanProcessor(exporter)],
      metricReaders: [],
      logRecordProcessors: [],
      instrumentations: [],
      // No asynchronous resource detectors: SimpleSpanProcessor then exports each span as it ends.
      autoDetectResources: false,
    });
    sdk.start();
    setTracingEnabled(true);
    try {
      const linked: TraceContext = { traceId: 'f'.repeat(32), spanId: 'e'.repeat(16), traceFlags: 1 };
      const outgoing: Record<string, string> = {};
      let outer = '';
      let inner = '';
      await inSpan(
        'outer',
        { kind: 'server', parent: extractTraceContext(carrierOf(`00-${TRACE}-${PARENT}-01`)) },
        async (span) => {
          outer = span.context().spanId;
          await new Promise((r) => setTimeout(r, 5)); // the context survives an await
          await inSpan('inner', { kind: 'client', links: [linked] }, async (s) => {
            inner = s.context().spanId;
            injectTraceContext((k, v) => {
              outgoing[k] = v;
            });
          });
        },
      );
      await assert.rejects(
        inSpan('failing', { parent: linked }, async () => {
          throw new Error('boom');
        }),
        /boom/,
      );
      const spans = exporter.getFinishedSpans();
      const byName = new Map(spans.map((s) => [s.name, s]));
      const o = byName.get('outer')!;
      const i = byName.get('inner')!;
      const f = byName.get('failing')!;
      assert.equal(o.spanContext().traceId, TRACE);
      assert.equal(o.parentSpanContext?.spanId, PARENT);
      assert.equal(o.spanContext().spanId, outer);
      assert.equal(i.spanContext().traceId, TRACE);
      assert.equal(i.parentSpanContext?.spanId, outer);
      assert.deepEqual(
        i.links.map((l) => l.context.spanId),
        [linked.spanId],
      );
      assert.equal(outgoing.traceparent, `00-${TRACE}-${inner}-01`);
      // A span context as the parent: the failing span is its child, marked ERROR with the message.
      assert.equal(f.spanContext().traceId, linked.traceId);
      assert.equal(f.parentSpanContext?.spanId, linked.spanId);
      assert.equal(f.status.code, 2);
      assert.equal(f.status.message, 'boom');
      // No traceparent: no parent to join, the span starts its own trace.
      await inSpan('alone', { parent: extractTraceContext(() => undefined) }, async () => {});
      const alone = exporter.getFinishedSpans().find((s) => s.name === 'alone')!;
      assert.equal(alone.parentSpanContext, undefined);
      assert.notEqual(alone.spanContext().traceId, TRACE);
    } finally {
      setTracingEnabled(false);
      await sdk.shutdown();
    }
  });

  it('TraceBook keeps at most its capacity, drops the oldest, and take() removes', () => {
    setTracingEnabled(true);
    try {
      const ctx = (n: number): TraceContext => ({
        traceId: TRACE,
        spanId: n.toString(16).padStart(16, '0'),
        traceFlags: 1,
      });
      const book = new TraceBook(2);
      book.remember('1', ctx(1));
      book.remember('2', ctx(2));
      book.remember('1', ctx(11)); // refreshed: now the newest
      book.remember('3', ctx(3));
      assert.equal(book.size, 2);
      assert.equal(book.get('2'), undefined, 'the oldest went');
      assert.equal(book.get('1')?.spanId, ctx(11).spanId);
      assert.equal(book.take('3')?.spanId, ctx(3).spanId);
      assert.equal(book.get('3'), undefined);
      assert.throws(() => new TraceBook(0), /TraceBook capacity must be a positive integer, got 0/);
    } finally {
      setTracingEnabled(false);
    }
  });
});
