// The cluster's metrics: on each scrape of :26660 the metrics service fetches every service's own
// /metrics (NODED_METRICS_TARGETS; a host name that resolves to several addresses, as a scaled
// compose service or a headless Kubernetes Service does, is one replica per address), adds the
// labels service="<name>" and replica="<address>:<port>", and merges them with its own process
// metrics into one exposition. /readyz asks every replica's /readyz and compares the executor's and
// each state-store's height with consensus'.
import { lookup } from 'node:dns/promises';
import { get } from 'node:http';
import { isIP } from 'node:net';
import type { MetricsTarget, ScrapedService } from '@noded/service-shared/src/settings.js';
import {
  escapeLabelValue,
  type MetricFamily,
  mergeFamilies,
  parseExposition,
  sampleValue,
} from '@noded/telemetry';
import type { Logger } from '@noded/types';

export interface Replica {
  service: ScrapedService;
  /** host:port as dialled ("[::1]:26680" for IPv6). */
  address: string;
  host: string;
  port: number;
}

export interface ScraperOptions {
  targets: MetricsTarget[];
  /** [instrumentation] namespace: the prefix of the metric names read and written. */
  namespace: string;
  maxLag: number;
  /** Each request's deadline. */
  timeoutMs?: number;
  /** The metrics service's own exposition (its process metrics). */
  own: () => Promise<string>;
  logger: Logger;
}

interface Fetched {
  status: number;
  body: string;
}

/** One GET without keep-alive (a service's endpoint keeps few connections open). */
function httpGet(host: string, port: number, path: string, timeoutMs: number): Promise<Fetched> {
  return new Promise((resolve, reject) => {
    const req = get({ host, port, path, agent: false, timeout: timeoutMs }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }),
      );
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    req.on('error', reject);
  });
}

/**
 * Heights the executor may trail consensus' `consensus_latest_block_height` and /readyz still pass.
 * They commit together: consensus records a height only after the executor's Commit of it returned,
 * so a healthy executor is at consensus' height or one above. The two are read a few ms apart,
 * though, and a block may commit between the reads (consensus then one ahead, at most two with blocks
 * on demand); more than this is an executor replaying blocks consensus already has (a handshake after
 * its store was restored from an older copy), which serves stale state until it catches up.
 */
export const EXECUTOR_MAX_LAG = 2;

const dial = (host: string, port: number) => (isIP(host) === 6 ? `[${host}]:${port}` : `${host}:${port}`);

export class ClusterScraper {
  private readonly timeoutMs: number;
  private readonly log: Logger;

  constructor(private readonly opts: ScraperOptions) {
    this.timeoutMs = opts.timeoutMs ?? 3_000;
    this.log = opts.logger;
  }

  /** Every replica of every target now (host names resolved to all their addresses). */
  async replicas(): Promise<{ replicas: Replica[]; problems: string[] }> {
    const replicas: Replica[] = [];
    const problems: string[] = [];
    await Promise.all(
      this.opts.targets.map(async (t) => {
        if (isIP(t.host) !== 0) {
          replicas.push({ service: t.service, host: t.host, port: t.port, address: dial(t.host, t.port) });
          return;
        }
        try {
          const all = await lookup(t.host, { all: true });
          for (const a of all)
            replicas.push({
              service: t.service,
              host: a.address,
              port: t.port,
              address: dial(a.address, t.port),
            });
        } catch (err) {
          problems.push(`${t.service}: ${t.host} does not resolve (${(err as Error).message})`);
        }
      }),
    );
    const order = (r: Replica) =>
      `${this.opts.targets.findIndex((t) => t.service === r.service)} ${r.address}`;
    replicas.sort((a, b) => (order(a) < order(b) ? -1 : order(a) > order(b) ? 1 : 0));
    return { replicas, problems };
  }

  private async metricsOf(r: Replica): Promise<MetricFamily[]> {
    const res = await httpGet(r.host, r.port, '/metrics', this.timeoutMs);
    if (res.status !== 200) throw new Error(`/metrics answered ${res.status}`);
    return parseExposition(res.body, { service: r.service, replica: r.address });
  }

  /** The merged exposition: every replica's metrics, the service's own, and one `up` per replica. */
  async text(): Promise<string> {
    const ns = this.opts.namespace;
    const { replicas, problems } = await this.replicas();
    for (const p of problems) this.log.warn({ problem: p }, 'metrics target');
    const results = await Promise.all(
      replicas.map(async (r) => {
        const t0 = performance.now();
        try {
          return { r, families: await this.metricsOf(r), seconds: (performance.now() - t0) / 1000 };
        } catch (err) {
          this.log.debug(
            { replica: r.address, service: r.service, err: (err as Error).message },
            'scrape failed',
          );
          return { r, families: undefined, seconds: (performance.now() - t0) / 1000 };
        }
      }),
    );
    const own = parseExposition(await this.opts.own(), { service: 'metrics', replica: 'self' });
    const labels = (r: Replica) => `service="${r.service}",replica="${escapeLabelValue(r.address)}"`;
    const up: MetricFamily = {
      name: `${ns}_cluster_target_up`,
      help: 'Whether the last scrape of a service replica answered (1) or not (0).',
      type: 'gauge',
      samples: results.map((x) => `${ns}_cluster_target_up{${labels(x.r)}} ${x.families ? 1 : 0}`),
    };
    const duration: MetricFamily = {
      name: `${ns}_cluster_target_scrape_duration_seconds`,
      help: 'How long the last scrape of a service replica took.',
      type: 'gauge',
      samples: results.map(
        (x) => `${ns}_cluster_target_scrape_duration_seconds{${labels(x.r)}} ${x.seconds}`,
      ),
    };
    const merged = mergeFamilies([
      [up, duration],
      ...results.flatMap((x) => (x.families ? [x.families] : [])),
      own,
    ]);
    for (const c of merged.conflicts) this.log.warn({ conflict: c }, 'metric family left out');
    return merged.text;
  }

  /**
   * Ready when every target has at least one replica, every replica answers /readyz with 200, no
   * executor is more than EXECUTOR_MAX_LAG heights behind consensus and no state-store more than
   * maxLag. Each failure is named.
   */
  async readiness(): Promise<string[]> {
    const ns = this.opts.namespace;
    const { replicas, problems } = await this.replicas();
    for (const t of this.opts.targets) {
      if (
        !replicas.some((r) => r.service === t.service) &&
        !problems.some((p) => p.startsWith(`${t.service}:`))
      )
        problems.push(`${t.service}: no replica at ${t.host}:${t.port}`);
    }
    const heights = new Map<Replica, number | undefined>();
    await Promise.all(
      replicas.map(async (r) => {
        try {
          const res = await httpGet(r.host, r.port, '/readyz', this.timeoutMs);
          if (res.status !== 200)
            problems.push(`${r.service} at ${r.address}: not ready (${res.body.trim()})`);
        } catch (err) {
          problems.push(`${r.service} at ${r.address}: unreachable (${(err as Error).message})`);
          return;
        }
        const name = heightSeries(ns, r.service);
        if (name === undefined) return;
        try {
          heights.set(r, sampleValue(await this.metricsOf(r), name));
        } catch (err) {
          problems.push(`${r.service} at ${r.address}: metrics unreadable (${(err as Error).message})`);
        }
      }),
    );
    const consensus = [...heights].find(([r]) => r.service === 'consensus')?.[1];
    if (consensus !== undefined) {
      for (const [r, h] of heights) {
        if (r.service === 'consensus') continue;
        const [max, bound] =
          r.service === 'executor'
            ? [EXECUTOR_MAX_LAG, `at most ${EXECUTOR_MAX_LAG}`]
            : [this.opts.maxLag, `NODED_METRICS_MAX_LAG ${this.opts.maxLag}`];
        if (h === undefined) problems.push(`${r.service} at ${r.address}: reports no height`);
        else if (consensus - h > max)
          problems.push(
            `${r.service} at ${r.address}: at height ${h}, ${consensus - h} behind consensus (${consensus}; ${bound})`,
          );
      }
    }
    return problems.sort();
  }
}

/** The series that carries a service's committed height, for the services /readyz compares. */
function heightSeries(ns: string, service: ScrapedService): string | undefined {
  switch (service) {
    case 'consensus':
      return `${ns}_consensus_latest_block_height`;
    case 'executor':
      return `${ns}_executor_height`;
    case 'state-store':
      return `${ns}_state_store_height`;
    default:
      return undefined;
  }
}
