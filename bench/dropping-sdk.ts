// The OpenTelemetry SDK as a service starts it, exporting to nowhere: what the tracing benches
// measure is the cost of making spans, not of shipping them.
import { NodeSDK } from '@opentelemetry/sdk-node';
import { BatchSpanProcessor, type ReadableSpan, type SpanExporter } from '@opentelemetry/sdk-trace-base';

/**
 * Starts the SDK with a batch processor whose exporter only counts spans. Start it once per process
 * (the API's global provider can be set once) and switch tracing per run with setTracingEnabled, as
 * libs/telemetry does.
 */
export function startDroppingSdk(): { stop: () => Promise<void>; exported: () => number } {
  let exported = 0;
  const dropping: SpanExporter = {
    export: (spans: ReadableSpan[], done) => {
      exported += spans.length;
      done({ code: 0 });
    },
    shutdown: async () => {},
  };
  const sdk = new NodeSDK({
    serviceName: 'bench',
    autoDetectResources: false,
    spanProcessors: [new BatchSpanProcessor(dropping)],
    metricReaders: [],
    logRecordProcessors: [],
    instrumentations: [],
  });
  sdk.start();
  return { stop: () => sdk.shutdown(), exported: () => exported };
}
