// A gRPC service definition whose request decoding never throws: bytes that do not decode as the
// method's message become an UndecodableRequest value, which each handler answers with
// INVALID_ARGUMENT naming the reason, instead of the library's generic INTERNAL.
import type * as grpc from '@grpc/grpc-js';

/** A request whose bytes did not decode as its message. */
export class UndecodableRequest {
  constructor(readonly reason: string) {}
}

/** `service`: a generated service definition (ts-proto's `…Service` object). */
export function lenientDefinition(service: object): Record<string, grpc.MethodDefinition<unknown, unknown>> {
  const def: Record<string, grpc.MethodDefinition<unknown, unknown>> = {};
  for (const [name, m] of Object.entries(
    service as Record<string, grpc.MethodDefinition<unknown, unknown>>,
  )) {
    def[name] = {
      ...m,
      requestDeserialize: (buf: Buffer): unknown => {
        try {
          return m.requestDeserialize(buf);
        } catch (err) {
          return new UndecodableRequest((err as Error).message);
        }
      },
    };
  }
  return def;
}
