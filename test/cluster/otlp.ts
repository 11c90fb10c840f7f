// An OTLP/HTTP (JSON) trace receiver on 127.0.0.1 for the tracing tests, as a collector accepts
// spans on :4318, with helpers to find spans and their links.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';

type AnyValue = { stringValue?: string; intValue?: string | number; boolValue?: boolean };
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes?: Array<{ key: string; value: AnyValue }>;
  links?: Array<{ traceId: string; spanId: string }>;
}
interface ExportRequest {
  resourceSpans: Array<{
    resource: { attributes: Array<{ key: string; value: AnyValue }> };
    scopeSpans: Array<{ spans: OtlpSpan[] }>;
  }>;
}
/** A received span with its resource's service.name and its attributes as a record. */
export interface Span extends OtlpSpan {
  service: string;
  attrs: Record<string, string | number | boolean>;
  /** Its resource's attributes (service.name among them). */
  resource: Record<string, string | number | boolean>;
}

function attrValue(v: AnyValue): string | number | boolean {
  if (v.stringValue !== undefined) return v.stringValue;
  if (v.intValue !== undefined) return Number(v.intValue);
  if (v.boolValue !== undefined) return v.boolValue;
  return JSON.stringify(v);
}

/** Accepts POST /v1/traces with an OTLP JSON ExportTraceServiceRequest, as a collector does. */
export class OtlpReceiver {
  readonly spans: Span[] = [];
  /** Every request that reached the receiver, whatever its path or body. */
  requests = 0;
  readonly problems: string[] = [];
  private constructor(
    private readonly server: Server,
    readonly url: string,
  ) {}

  static async start(): Promise<OtlpReceiver> {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const r = new OtlpReceiver(server, `http://127.0.0.1:${(server.address() as { port: number }).port}`);
    server.on('request', (req, res) => {
      r.requests++;
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        try {
          if (req.method !== 'POST' || req.url !== '/v1/traces')
            throw new Error(`unexpected ${req.method} ${req.url}`);
          const type = req.headers['content-type'] ?? '';
          if (!type.startsWith('application/json')) throw new Error(`content-type ${type}`);
          r.accept(JSON.parse(Buffer.concat(chunks).toString('utf8')) as ExportRequest);
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end('{}');
        } catch (err) {
          r.problems.push((err as Error).message);
          res.writeHead(400);
          res.end();
        }
      });
    });
    return r;
  }

  private accept(body: ExportRequest): void {
    for (const rs of body.resourceSpans) {
      const service = rs.resource.attributes.find((a) => a.key === 'service.name');
      assert.ok(service, 'every resource names its service.name');
      const resource: Span['resource'] = {};
      for (const a of rs.resource.attributes) resource[a.key] = attrValue(a.value);
      for (const ss of rs.scopeSpans)
        for (const s of ss.spans) {
          const attrs: Span['attrs'] = {};
          for (const a of s.attributes ?? []) attrs[a.key] = attrValue(a.value);
          this.spans.push({ ...s, service: String(attrValue(service.value)), attrs, resource });
        }
    }
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

export function one(spans: Span[], what: string, pred: (s: Span) => boolean): Span {
  const found = spans.filter(pred);
  assert.equal(
    found.length,
    1,
    `exactly one ${what}, found ${found.length}: ${found.map((s) => `${s.service} ${s.name}`).join('; ')}`,
  );
  return found[0]!;
}

export const linksTo = (s: Span, to: Span) =>
  (s.links ?? []).some((l) => l.traceId === to.traceId && l.spanId === to.spanId);
