// W3C trace context in gRPC metadata (`traceparent`, `tracestate`), both ways: each client call
// carries the caller's active span, each handler opens its span as that span's child. With tracing
// off (libs/telemetry) both are a boolean test.
import type * as grpc from '@grpc/grpc-js';
import { extractTraceContext, injectTraceContext, type TraceParent, tracingEnabled } from '@noded/telemetry';

/** Adds the active trace context to `md` (the metadata of an outgoing call). */
export function withTraceContext(md: grpc.Metadata): grpc.Metadata {
  if (tracingEnabled()) injectTraceContext((k, v) => md.set(k, v));
  return md;
}

/** The caller's trace context from an incoming call's metadata, if it sent one. */
export function traceParentOf(md: grpc.Metadata | undefined): TraceParent | undefined {
  if (!tracingEnabled() || md === undefined) return undefined;
  return extractTraceContext((k) => {
    const v = md.get(k)[0];
    return typeof v === 'string' ? v : undefined;
  });
}
