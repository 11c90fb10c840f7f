// The metrics service (docs/cluster.md "Metrics"): :26660 ([instrumentation] prometheus_listen_addr)
// for the whole cluster. /metrics gathers every service's own endpoint (NODED_METRICS_TARGETS) with a
// `service` and a `replica` label plus its own process metrics; /healthz answers while it runs;
// /readyz fails, naming each reason, while a service is unreachable or not ready or a state-store
// lags consensus by more than NODED_METRICS_MAX_LAG heights.
import { Inject, Injectable, Module, type OnApplicationShutdown } from '@nestjs/common';
import { toInstrumentationOptions } from '@noded/config';
import {
  Closers,
  SERVICE_LOGGER,
  SERVICE_SETTINGS,
  type ServiceModuleFactory,
} from '@noded/service-shared/src/bootstrap.js';
import type { ServiceSettings } from '@noded/service-shared/src/settings.js';
import { MetricsServer, parseListenAddr } from '@noded/telemetry';
import type { Logger } from '@noded/types';
import { collectDefaultMetrics, Registry } from 'prom-client';
import { ClusterScraper } from './scraper.js';

export const METRICS_SERVER = Symbol('MetricsServer');

@Injectable()
export class MetricsLifecycle implements OnApplicationShutdown {
  constructor(@Inject(Closers) private readonly closers: Closers) {}

  async onApplicationShutdown(): Promise<void> {
    await this.closers.closeAll();
  }
}

export const metricsModule: ServiceModuleFactory = (settings, shared) => {
  const instrumentation = toInstrumentationOptions(settings.loaded.config);
  if (!instrumentation.prometheus) {
    throw new Error(
      'config.toml: [instrumentation] prometheus = false: the metrics service has nothing to serve (set it to true, or do not run this service)',
    );
  }
  return {
    module: MetricsModule,
    providers: [
      { provide: SERVICE_SETTINGS, useValue: settings },
      { provide: SERVICE_LOGGER, useValue: shared.logger },
      { provide: Closers, useValue: shared.closers },
      {
        provide: METRICS_SERVER,
        inject: [SERVICE_SETTINGS, SERVICE_LOGGER, Closers],
        useFactory: async (s: ServiceSettings, logger: Logger, closers: Closers) => {
          const log = logger.child({ module: 'metrics' });
          const own = new Registry();
          collectDefaultMetrics({ register: own });
          for (const name of [
            'nodejs_active_handles_total',
            'nodejs_active_requests_total',
            'nodejs_active_resources_total',
          ]) {
            own.removeSingleMetric(name);
          }
          const scraper = new ClusterScraper({
            targets: s.cluster.metricsTargets,
            namespace: instrumentation.namespace,
            maxLag: s.cluster.metricsMaxLag,
            own: () => own.metrics(),
            logger: log,
          });
          const server = new MetricsServer({
            metrics: { text: () => scraper.text(), contentType: own.contentType },
            logger,
            options: instrumentation,
            readiness: async () => {
              const problems = await scraper.readiness();
              return { serving: problems.length === 0, catchingUp: false, problems };
            },
          });
          const at = parseListenAddr(instrumentation.prometheusListenAddr);
          const port = await server.listen(at.host, at.port);
          closers.add('metrics server', () => server.close());
          log.info(
            {
              address: `${at.host}:${port}`,
              targets: s.cluster.metricsTargets.map((t) => `${t.service}=${t.host}:${t.port}`),
            },
            'serving the cluster metrics, /healthz and /readyz',
          );
          return server;
        },
      },
      MetricsLifecycle,
    ],
  };
};

@Module({})
export class MetricsModule {}
