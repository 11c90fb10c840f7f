// OpenTelemetry in a cluster service (docs/cluster.md "Tracing"): a tracer provider with the trace
// exporters chosen by the standard OTEL_* variables, started before the service's module so that
// every span the libs open (libs/telemetry inSpan) goes to it, and shut down (flushing what is
// buffered) after everything else the service closed.
//
// Off unless asked for: OTEL_TRACES_EXPORTER=otlp|console, or an OTLP endpoint set
// (OTEL_EXPORTER_OTLP_ENDPOINT / OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) with OTEL_TRACES_EXPORTER
// unset. OTEL_SDK_DISABLED=true wins over both. Off, no OpenTelemetry SDK package is loaded and
// libs/telemetry's helpers stay a boolean test (the all-in-one `noded start` never starts it).
//
// Built from the SDK's parts, not @opentelemetry/sdk-node's NodeSDK: NodeSDK depends on every
// exporter it can name (OTLP gRPC and protobuf, metrics and logs, Prometheus, Zipkin), about 85 MB
// that tracing never loads, in every service's image. The parts do what NodeSDK did for traces:
// the async-local-storage context manager, the propagators of OTEL_PROPAGATORS (W3C trace context
// and baggage by default), the resource (SDK defaults, OTEL_RESOURCE_ATTRIBUTES, process and host,
// then service.name), and a tracer provider that reads OTEL_TRACES_SAMPLER(_ARG) and the span limits.
import { setTracingEnabled } from '@noded/telemetry';
import type { Logger } from '@noded/types';

type Env = Record<string, string | undefined>;

export type TraceExporterName = 'otlp' | 'console';

export interface TracingSettings {
  /** Empty: tracing off. */
  exporters: TraceExporterName[];
  /** The resource's service.name: OTEL_SERVICE_NAME, else `noded-<service>`. */
  serviceName: string;
  /** Where OTLP/HTTP JSON goes (for the log line; the exporter reads the variables itself). */
  otlpEndpoint?: string;
  /** OTEL_PROPAGATORS, deduplicated; empty: none (the context is neither read nor sent). */
  propagators: PropagatorName[];
}

const EXPORTERS = ['otlp', 'console', 'none'] as const;
const PROPAGATORS = ['tracecontext', 'baggage', 'b3', 'b3multi', 'jaeger', 'none'] as const;
export type PropagatorName = Exclude<(typeof PROPAGATORS)[number], 'none'>;

/** Reads the OTEL_* variables this node supports; each bad value is a problem naming it. */
export function tracingSettingsOf(env: Env, problems: string[], service: string): TracingSettings {
  const serviceName = env.OTEL_SERVICE_NAME?.trim() || `noded-${service}`;
  const disabled = env.OTEL_SDK_DISABLED?.trim().toLowerCase();
  if (disabled !== undefined && disabled !== '' && disabled !== 'true' && disabled !== 'false')
    problems.push(`$OTEL_SDK_DISABLED: must be true or false, got ${JSON.stringify(env.OTEL_SDK_DISABLED)}`);
  const endpoint = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim() || env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim();
  for (const name of ['OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', 'OTEL_EXPORTER_OTLP_ENDPOINT'] as const) {
    const v = env[name]?.trim();
    if (!v) continue;
    let url: URL | undefined;
    try {
      url = new URL(v);
    } catch {}
    if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:'))
      problems.push(`$${name}: must be an http:// or https:// URL, got ${JSON.stringify(v)}`);
  }
  const protocol = (
    env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL?.trim() || env.OTEL_EXPORTER_OTLP_PROTOCOL?.trim()
  )?.toLowerCase();
  if (protocol !== undefined && protocol !== 'http/json')
    problems.push(
      `$OTEL_EXPORTER_OTLP_${env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL?.trim() ? 'TRACES_' : ''}PROTOCOL: noded exports OTLP over HTTP with JSON bodies; must be http/json, got ${JSON.stringify(protocol)}`,
    );
  const listed = env.OTEL_TRACES_EXPORTER?.trim();
  let exporters: TraceExporterName[];
  if (listed === undefined || listed === '') exporters = endpoint ? ['otlp'] : [];
  else {
    const names = listed
      .split(',')
      .map((n) => n.trim().toLowerCase())
      .filter((n) => n !== '');
    const bad = names.filter((n) => !(EXPORTERS as readonly string[]).includes(n));
    if (bad.length > 0)
      problems.push(
        `$OTEL_TRACES_EXPORTER: must be a comma list of ${EXPORTERS.join(', ')}, got ${JSON.stringify(listed)} (${bad.map((b) => JSON.stringify(b)).join(', ')} unknown)`,
      );
    exporters = names.includes('none')
      ? []
      : [...new Set(names.filter((n): n is TraceExporterName => n === 'otlp' || n === 'console'))];
  }
  if (disabled === 'true') exporters = [];
  const propagatorList = env.OTEL_PROPAGATORS?.trim();
  let propagators: PropagatorName[] = ['tracecontext', 'baggage'];
  if (propagatorList !== undefined && propagatorList !== '') {
    const names = propagatorList
      .split(',')
      .map((n) => n.trim().toLowerCase())
      .filter((n) => n !== '');
    const bad = names.filter((n) => !(PROPAGATORS as readonly string[]).includes(n));
    if (bad.length > 0)
      problems.push(
        `$OTEL_PROPAGATORS: must be a comma list of ${PROPAGATORS.join(', ')}, got ${JSON.stringify(propagatorList)} (${bad.map((b) => JSON.stringify(b)).join(', ')} unknown)`,
      );
    propagators = names.includes('none')
      ? []
      : [...new Set(names.filter((n): n is PropagatorName => n !== 'none' && !bad.includes(n)))];
  }
  return { exporters, serviceName, otlpEndpoint: endpoint || undefined, propagators };
}

export interface RunningTracing {
  /** Flushes buffered spans and stops exporting. */
  shutdown(): Promise<void>;
}

/** Starts the SDK when `s` names an exporter; null (and nothing loaded) when tracing is off. */
export async function startTracing(s: TracingSettings, log: Logger): Promise<RunningTracing | null> {
  if (s.exporters.length === 0) {
    log.debug('tracing off (no OTEL_TRACES_EXPORTER nor OTLP endpoint, or OTEL_SDK_DISABLED=true)');
    return null;
  }
  // The SDK's own warnings and errors (an export the collector refused or never answered) go to
  // the service's log, not to nowhere.
  const { context, DiagLogLevel, diag, propagation, trace } = await import('@opentelemetry/api');
  const otelLog = log.child({ component: 'otel' });
  const show = (a: unknown): string => {
    if (a instanceof Error) return a.message;
    if (typeof a === 'string') return a;
    try {
      return JSON.stringify(a);
    } catch {
      return String(a);
    }
  };
  // The SDK's error handler hands over errors as JSON ({"message", "stack", ...}): keep the message.
  const first = (m: string): string => {
    try {
      const e = JSON.parse(m) as { message?: unknown };
      if (typeof e.message === 'string') return e.message;
    } catch {}
    return m;
  };
  const text = (m: string, args: unknown[]) => [first(m), ...args.map(show)].join(' ');
  diag.setLogger(
    {
      error: (m, ...a) => otelLog.warn(text(m, a)),
      warn: (m, ...a) => otelLog.warn(text(m, a)),
      info: () => {},
      debug: () => {},
      verbose: () => {},
    },
    { logLevel: DiagLogLevel.WARN, suppressOverrideMessage: true },
  );
  // Loaded only when used: tracing off costs not even the SDK's import.
  const { AsyncLocalStorageContextManager } = await import('@opentelemetry/context-async-hooks');
  const { CompositePropagator, W3CBaggagePropagator, W3CTraceContextPropagator } = await import(
    '@opentelemetry/core'
  );
  const {
    defaultResource,
    detectResources,
    envDetector,
    hostDetector,
    processDetector,
    resourceFromAttributes,
  } = await import('@opentelemetry/resources');
  const { BasicTracerProvider, BatchSpanProcessor, ConsoleSpanExporter, SimpleSpanProcessor } = await import(
    '@opentelemetry/sdk-trace-base'
  );
  const spanProcessors = [];
  if (s.exporters.includes('otlp')) {
    const { OTLPTraceExporter } = await import('@opentelemetry/exporter-trace-otlp-http');
    // The exporter reads OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT, _HEADERS and _TIMEOUT itself; the
    // batch processor reads OTEL_BSP_* (schedule delay, queue and batch sizes).
    spanProcessors.push(new BatchSpanProcessor(new OTLPTraceExporter()));
  }
  if (s.exporters.includes('console'))
    spanProcessors.push(new SimpleSpanProcessor(new ConsoleSpanExporter()));
  // Spans follow the async calls that carry them (what `context.with` in libs/telemetry relies on).
  const contextManager = new AsyncLocalStorageContextManager();
  contextManager.enable();
  context.setGlobalContextManager(contextManager);
  const propagators = [];
  for (const name of s.propagators) {
    if (name === 'tracecontext') propagators.push(new W3CTraceContextPropagator());
    else if (name === 'baggage') propagators.push(new W3CBaggagePropagator());
    else if (name === 'b3' || name === 'b3multi') {
      const { B3InjectEncoding, B3Propagator } = await import('@opentelemetry/propagator-b3');
      propagators.push(
        new B3Propagator(name === 'b3multi' ? { injectEncoding: B3InjectEncoding.MULTI_HEADER } : {}),
      );
    } else {
      const { JaegerPropagator } = await import('@opentelemetry/propagator-jaeger');
      propagators.push(new JaegerPropagator());
    }
  }
  if (propagators.length > 0) propagation.setGlobalPropagator(new CompositePropagator({ propagators }));
  // The SDK's defaults (telemetry.sdk.*), then OTEL_RESOURCE_ATTRIBUTES, the process and the host;
  // service.name last, so that it is the one settled above (OTEL_SERVICE_NAME or noded-<service>).
  const resource = defaultResource()
    .merge(detectResources({ detectors: [envDetector, processDetector, hostDetector] }))
    .merge(resourceFromAttributes({ 'service.name': s.serviceName }));
  // It reads OTEL_TRACES_SAMPLER(_ARG) and the OTEL_SPAN_* / OTEL_ATTRIBUTE_* limits itself.
  const provider = new BasicTracerProvider({ resource, spanProcessors });
  trace.setGlobalTracerProvider(provider);
  setTracingEnabled(true);
  log.info(
    {
      exporters: s.exporters,
      serviceName: s.serviceName,
      endpoint: s.otlpEndpoint,
      propagators: s.propagators,
    },
    'tracing on (OpenTelemetry)',
  );
  return {
    shutdown: async () => {
      setTracingEnabled(false);
      await provider.shutdown();
    },
  };
}
