// libs/telemetry: logging, Prometheus metrics and the health endpoints of the node.

// Merging the expositions of several processes (the cluster's metrics service) with extra labels.
export {
  escapeLabelValue,
  type MetricFamily,
  mergeFamilies,
  parseExposition,
  sampleValue,
} from './src/aggregate.js';
// pino logger (JSON lines to <home>/logs/noded.log, readable lines on a TTY); satisfies libs/types Logger.
export { createLogger, type LoggerOptions, LogLevelError, pinoLevel } from './src/logger.js';
// The metrics registry fed from the EventBus plus hooks the node calls (mempool, peers, RPC).
export { NodeMetrics, type NodeMetricsDeps, type StorageMemory, type ThreadHeap } from './src/metrics.js';
// [instrumentation] options with CometBFT's defaults, and its listen-address parser.
export {
  defaultInstrumentationOptions,
  InstrumentationConfigError,
  type InstrumentationOptions,
  parseListenAddr,
} from './src/options.js';
// GET /metrics, /healthz and /readyz on :26660.
export { MetricsServer, type MetricsServerDeps, type Readiness } from './src/server.js';
// Tracing for libs through the OpenTelemetry API (no-op until a service starts the SDK): spans,
// W3C trace context over any carrier, and a bounded book of span contexts to link work later.
export {
  activeTraceCarrier,
  extractTraceContext,
  injectTraceContext,
  inSpan,
  inSpanSync,
  linkActiveSpan,
  type SpanOptions,
  setTracingEnabled,
  TraceBook,
  type TraceCarrier,
  type TraceContext,
  type TraceParent,
  type TraceSpan,
  type TraceSpanKind,
  tracingEnabled,
  withTraceCarrier,
} from './src/tracing.js';
