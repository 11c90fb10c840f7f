// services/shared startTracing in one process (in its own file: the tracer provider, context manager
// and propagator it installs are global to the process). What a service's tracing rests on, each of
// which NodeSDK used to set up and the provider built from the SDK's parts must too: spans nest
// across awaits (the async-local-storage context manager), the propagators OTEL_PROPAGATORS names
// write their headers, the resource carries service.name and OTEL_RESOURCE_ATTRIBUTES, and shutdown
// flushes what the batch processor holds to the OTLP/HTTP JSON endpoint.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { startTracing, tracingSettingsOf } from '@noded/service-shared/src/tracing.js';
import { injectTraceContext, inSpan } from '@noded/telemetry';
import { silentLogger } from '@noded/types';
import { OtlpReceiver, one } from './otlp.js';

const cleanups: Array<() => unknown> = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

describe('startTracing', () => {
  it('nests spans across awaits, writes the headers of OTEL_PROPAGATORS, names the resource, and flushes at shutdown', async () => {
    const receiver = await OtlpReceiver.start();
    cleanups.push(() => receiver.close());
    const env = {
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_PROPAGATORS: 'b3multi,tracecontext',
      OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment=staging,service.namespace=noded',
      // Longer than the test: only the shutdown's flush can deliver the spans.
      OTEL_BSP_SCHEDULE_DELAY: '600000',
    };
    const problems: string[] = [];
    const settings = tracingSettingsOf(env, problems, 'executor');
    assert.deepEqual(problems, []);
    assert.deepEqual(settings.propagators, ['b3multi', 'tracecontext']);
    // The exporter, the resource's env detector and the batch processor read the process' variables.
    Object.assign(process.env, env);
    const tracing = await startTracing(settings, silentLogger);
    assert.ok(tracing, 'tracing started');
    let stopped = false;
    cleanups.push(() => (stopped ? undefined : tracing.shutdown()));

    const headers: Record<string, string> = {};
    await inSpan('outer', { kind: 'server' }, async () => {
      await sleep(5);
      await inSpan('inner', {}, async () => {
        await sleep(5);
        injectTraceContext((k, v) => {
          headers[k] = v;
        });
      });
    });
    assert.equal(receiver.requests, 0, 'exported before the shutdown');
    await tracing.shutdown();
    stopped = true;
    assert.deepEqual(receiver.problems, []);

    const outer = one(receiver.spans, 'outer span', (s) => s.name === 'outer');
    const inner = one(receiver.spans, 'inner span', (s) => s.name === 'inner');
    assert.equal(inner.traceId, outer.traceId, 'one trace');
    assert.equal(
      inner.parentSpanId,
      outer.spanId,
      'the inner span is the child of the outer one across awaits',
    );
    // b3multi's X-B3-* headers and W3C's traceparent, both naming the inner span.
    assert.equal(headers['x-b3-traceid'], inner.traceId);
    assert.equal(headers['x-b3-spanid'], inner.spanId);
    assert.equal(headers.traceparent, `00-${inner.traceId}-${inner.spanId}-01`);
    assert.equal(headers.b3, undefined, 'b3 single-header written with b3multi');
    for (const s of [outer, inner]) {
      assert.equal(s.service, 'noded-executor');
      assert.equal(s.resource['deployment.environment'], 'staging');
      assert.equal(s.resource['service.namespace'], 'noded');
      assert.equal(s.resource['telemetry.sdk.language'], 'nodejs');
      assert.equal(s.resource['process.pid'], process.pid);
    }
  });
});
