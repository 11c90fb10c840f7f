// grpc.health.v1.Health (the standard protocol; @grpc/grpc-js has none built in): Check answers the
// current status of a service, or NOT_FOUND; Watch streams the status now and each change until the
// caller cancels or the server closes.
import * as grpc from '@grpc/grpc-js';
import {
  type HealthCheckRequest,
  type HealthCheckResponse,
  type HealthServer,
  HealthService,
  HealthCheckResponse_ServingStatus as ServingStatus,
} from '@noded/proto/src/gen/grpc/health/v1/health.js';

export { ServingStatus };

export class HealthStatus {
  private readonly statuses = new Map<string, ServingStatus>();
  private readonly watchers = new Set<grpc.ServerWritableStream<HealthCheckRequest, HealthCheckResponse>>();

  /** Sets the status of `service` ("" is the server as a whole) and tells its watchers. */
  set(service: string, status: ServingStatus): void {
    if (this.statuses.get(service) === status) return;
    this.statuses.set(service, status);
    for (const w of this.watchers) if (w.request.service === service) w.write({ status });
  }

  get(service: string): ServingStatus | undefined {
    return this.statuses.get(service);
  }

  /** Ends every Watch stream (the server is closing). */
  endWatches(): void {
    for (const w of this.watchers) w.end();
    this.watchers.clear();
  }

  /** Adds the Health service, answering from this status table, to `server`. */
  addTo(server: grpc.Server): void {
    const impl: HealthServer = {
      check: (call, callback) => {
        const status = this.statuses.get(call.request.service);
        if (status === undefined) {
          callback({ code: grpc.status.NOT_FOUND, details: `unknown service "${call.request.service}"` });
          return;
        }
        callback(null, { status });
      },
      watch: (call) => {
        this.watchers.add(call);
        const forget = () => this.watchers.delete(call);
        call.on('cancelled', forget);
        call.on('close', forget);
        call.write({ status: this.statuses.get(call.request.service) ?? ServingStatus.SERVICE_UNKNOWN });
      },
    };
    server.addService(HealthService, impl);
  }
}

/**
 * A server's graceful stop: every name (and the overall "") reported NOT_SERVING, health watches
 * ended, calls in flight given up to `graceMs`, then the server forced down.
 */
export function shutdownGracefully(
  server: grpc.Server,
  health: HealthStatus,
  names: string[],
  graceMs: number,
): Promise<void> {
  return new Promise<void>((resolve) => {
    for (const name of names) health.set(name, ServingStatus.NOT_SERVING);
    health.set('', ServingStatus.NOT_SERVING);
    health.endWatches();
    const force = setTimeout(() => {
      server.forceShutdown();
      resolve();
    }, graceMs);
    server.tryShutdown(() => {
      clearTimeout(force);
      resolve();
    });
  });
}
