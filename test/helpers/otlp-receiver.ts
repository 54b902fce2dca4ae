// A stand-in OpenTelemetry collector for tests: a node:http server on 127.0.0.1 that takes OTLP/HTTP
// JSON trace and metric exports (POST /v1/traces, /v1/metrics), answers 200 as a collector does,
// and keeps every span and histogram data point it decoded with its resource's service.name.

import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReceivedSpan {
  service: string | undefined;
  traceId: string;
  spanId: string;
  parentSpanId: string | undefined;
  name: string;
  /** OTLP SpanKind: 1 internal, 2 server, 3 client. */
  kind: number;
  attributes: Record<string, string | number | boolean>;
  /** OTLP status code: 0 unset, 1 ok, 2 error. */
  status: number;
  links: Array<{ traceId: string; spanId: string; attributes: Record<string, string | number | boolean> }>;
}

export interface ReceivedHistogramPoint {
  service: string | undefined;
  metric: string;
  unit: string | undefined;
  count: number;
  sum: number | undefined;
  attributes: Record<string, string | number | boolean>;
}

export interface OtlpReceiver {
  /** Base URL, as OTEL_EXPORTER_OTLP_ENDPOINT takes it. */
  url: string;
  spans: ReceivedSpan[];
  histograms: ReceivedHistogramPoint[];
  /** Every request that reached the receiver, whatever its path or body. */
  requests: Array<{ method: string; path: string; contentType: string | undefined }>;
  close(): Promise<void>;
}

interface OtlpValue {
  stringValue?: string;
  intValue?: string | number;
  doubleValue?: number;
  boolValue?: boolean;
}
interface OtlpAttribute {
  key: string;
  value: OtlpValue;
}
interface OtlpMetricsExport {
  resourceMetrics?: Array<{
    resource?: { attributes?: OtlpAttribute[] };
    scopeMetrics?: Array<{
      metrics?: Array<{
        name: string;
        unit?: string;
        histogram?: { dataPoints?: Array<{ count: string | number; sum?: number; attributes?: OtlpAttribute[] }> };
      }>;
    }>;
  }>;
}

interface OtlpExport {
  resourceSpans?: Array<{
    resource?: { attributes?: OtlpAttribute[] };
    scopeSpans?: Array<{
      spans?: Array<{
        traceId: string;
        spanId: string;
        parentSpanId?: string;
        name: string;
        kind: number;
        attributes?: OtlpAttribute[];
        status?: { code?: number };
        links?: Array<{ traceId: string; spanId: string; attributes?: OtlpAttribute[] }>;
      }>;
    }>;
  }>;
}

function attributes(list: OtlpAttribute[] | undefined): Record<string, string | number | boolean> {
  const out: Record<string, string | number | boolean> = {};
  for (const { key, value } of list ?? []) {
    const v =
      value.stringValue ??
      value.boolValue ??
      value.doubleValue ??
      (value.intValue === undefined ? undefined : Number(value.intValue));
    if (v !== undefined) out[key] = v;
  }
  return out;
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const histograms: ReceivedHistogramPoint[] = [];
  const requests: OtlpReceiver['requests'] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      requests.push({ method: req.method ?? '', path: req.url ?? '', contentType: req.headers['content-type'] });
      if (
        req.method !== 'POST' ||
        (req.url !== '/v1/traces' && req.url !== '/v1/metrics') ||
        !/json/.test(req.headers['content-type'] ?? '')
      ) {
        res.writeHead(415).end();
        return;
      }
      if (req.url === '/v1/metrics') {
        const metricsBody = JSON.parse(Buffer.concat(chunks).toString('utf8')) as OtlpMetricsExport;
        for (const rm of metricsBody.resourceMetrics ?? []) {
          const service = attributes(rm.resource?.attributes)['service.name'];
          for (const sm of rm.scopeMetrics ?? []) {
            for (const m of sm.metrics ?? []) {
              for (const p of m.histogram?.dataPoints ?? []) {
                histograms.push({
                  service: typeof service === 'string' ? service : undefined,
                  metric: m.name,
                  unit: m.unit,
                  count: Number(p.count),
                  sum: p.sum,
                  attributes: attributes(p.attributes),
                });
              }
            }
          }
        }
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
        return;
      }
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as OtlpExport;
      for (const rs of body.resourceSpans ?? []) {
        const service = attributes(rs.resource?.attributes)['service.name'];
        for (const ss of rs.scopeSpans ?? []) {
          for (const s of ss.spans ?? []) {
            spans.push({
              service: typeof service === 'string' ? service : undefined,
              traceId: s.traceId,
              spanId: s.spanId,
              parentSpanId: s.parentSpanId || undefined,
              name: s.name,
              kind: s.kind,
              attributes: attributes(s.attributes),
              status: s.status?.code ?? 0,
              links: (s.links ?? []).map((l) => ({
                traceId: l.traceId,
                spanId: l.spanId,
                attributes: attributes(l.attributes),
              })),
            });
          }
        }
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    spans,
    histograms,
    requests,
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
