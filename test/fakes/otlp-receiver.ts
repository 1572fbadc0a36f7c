/**
 * A local OTLP/HTTP trace receiver: accepts POST /v1/traces in the JSON encoding (what
 * @opentelemetry/exporter-trace-otlp-http sends) and keeps every span, its attributes decoded to
 * plain values, with the resource attributes of the process that sent it. Only node: built-ins.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  startNs: bigint;
  endNs: bigint;
  attributes: Record<string, unknown>;
  links: Array<{ traceId: string; spanId: string }>;
  events: Array<{ name: string; attributes: Record<string, unknown> }>;
  status?: { code?: number; message?: string };
  /** The sending process's resource (service.name, switchboard.role, process.pid...). */
  resource: Record<string, unknown>;
}

type AnyValue = {
  stringValue?: string;
  boolValue?: boolean;
  intValue?: string | number;
  doubleValue?: number;
  arrayValue?: { values?: AnyValue[] };
};

function value(v: AnyValue | undefined): unknown {
  if (!v) return undefined;
  if (v.stringValue !== undefined) return v.stringValue;
  if (v.boolValue !== undefined) return v.boolValue;
  if (v.intValue !== undefined) return Number(v.intValue);
  if (v.doubleValue !== undefined) return v.doubleValue;
  if (v.arrayValue) return (v.arrayValue.values ?? []).map(value);
  return undefined;
}

function attributes(list: Array<{ key: string; value: AnyValue }> | undefined): Record<string, unknown> {
  return Object.fromEntries((list ?? []).map((a) => [a.key, value(a.value)]));
}

export class OtlpReceiver {
  readonly spans: ReceivedSpan[] = [];
  /** Every request, whatever its path (a request to another path is answered 404 and counted). */
  requests = 0;
  private server?: Server;
  url = '';

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      this.requests++;
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        if (req.method !== 'POST' || req.url !== '/v1/traces' || !String(req.headers['content-type']).includes('json')) {
          res.writeHead(404).end();
          return;
        }
        try {
          this.take(JSON.parse(Buffer.concat(chunks).toString('utf8')));
          res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
        } catch {
          res.writeHead(400).end(); // not OTLP JSON: the exporter logs it, the test sees no spans
        }
      });
    });
    await new Promise<void>((r) => this.server!.listen(0, '127.0.0.1', r));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  private take(body: any): void {
    for (const rs of body.resourceSpans ?? []) {
      const resource = attributes(rs.resource?.attributes);
      for (const ss of rs.scopeSpans ?? [])
        for (const s of ss.spans ?? [])
          this.spans.push({
            traceId: s.traceId,
            spanId: s.spanId,
            ...(s.parentSpanId ? { parentSpanId: s.parentSpanId } : {}),
            name: s.name,
            kind: s.kind,
            startNs: BigInt(s.startTimeUnixNano),
            endNs: BigInt(s.endTimeUnixNano),
            attributes: attributes(s.attributes),
            links: (s.links ?? []).map((l: any) => ({ traceId: l.traceId, spanId: l.spanId })),
            events: (s.events ?? []).map((e: any) => ({ name: e.name, attributes: attributes(e.attributes) })),
            status: s.status,
            resource,
          });
    }
  }

  /** The chain of parents from a span up to its trace's root (the span itself first). */
  ancestors(span: ReceivedSpan): ReceivedSpan[] {
    const out = [span];
    for (let s = span; s.parentSpanId; ) {
      const p = this.spans.find((x) => x.spanId === s.parentSpanId && x.traceId === s.traceId);
      if (!p) break;
      out.push(p);
      s = p;
    }
    return out;
  }

  close(): Promise<void> {
    return new Promise((r) => (this.server ? this.server.close(() => r()) : r()));
  }
}
