// Each cluster service's own metrics endpoint: the node's NodeMetrics registry (CometBFT names under
// [instrumentation] namespace, as `noded start` exposes them) and /healthz, /readyz, served on
// NODED_SERVICE_METRICS_ADDRESS. The metrics service gathers them all onto :26660 with a `service`
// label (docs/cluster.md "Metrics"). With [instrumentation] prometheus = false nothing is served.
import { toInstrumentationOptions } from '@noded/config';
import { MetricsServer, NodeMetrics, type Readiness } from '@noded/telemetry';
import type { EventBus, Logger, NodeReader } from '@noded/types';
import type { Closers } from './bootstrap.js';
import type { ServiceSettings } from './settings.js';

export interface ServiceMetricsOptions {
  bus?: EventBus;
  node?: NodeReader;
  /** Asked on every /readyz; default: ready once the endpoint is up. */
  readiness?: () => Readiness | Promise<Readiness>;
}

/** The service's registry, and its endpoint when [instrumentation] prometheus is on. */
export async function serveServiceMetrics(
  s: ServiceSettings,
  logger: Logger,
  closers: Closers,
  opts: ServiceMetricsOptions = {},
): Promise<NodeMetrics> {
  const instrumentation = toInstrumentationOptions(s.loaded.config);
  const metrics = new NodeMetrics({
    namespace: instrumentation.namespace,
    chainId: s.genesis.runtime.chainId,
    bus: opts.bus,
    node: opts.node,
    logger,
  });
  closers.add('metrics', () => metrics.close());
  if (!instrumentation.prometheus || s.cluster.serviceMetricsAddress === '') return metrics;
  const server = new MetricsServer({
    metrics,
    logger,
    // A scrape and two probes at most from the metrics service, plus any direct scraper.
    options: { ...instrumentation, maxOpenConnections: Math.max(instrumentation.maxOpenConnections, 8) },
    readiness: opts.readiness ?? (() => ({ serving: true, catchingUp: false })),
  });
  const at = s.cluster.serviceMetricsAddress;
  const colon = at.lastIndexOf(':');
  const host = at.slice(0, colon).replace(/^\[|\]$/g, '');
  await server.listen(host, Number(at.slice(colon + 1)));
  closers.add('metrics server', () => server.close());
  return metrics;
}
