// When the standard OTEL_* variables turn tracing on: the one rule README's Traces paragraph states.

import t from 'tap';
import { metricsRequested, tracingRequested } from '../../src/tracing/index.js';

t.test('off unless an OTLP exporter or endpoint is asked for', async (t) => {
  t.notOk(tracingRequested({}), 'no OTEL_* variables: off');
  t.notOk(
    tracingRequested({ OTEL_SERVICE_NAME: 'x', OTEL_TRACES_SAMPLER: 'always_on' }),
    'a service name or sampler alone: off',
  );
  t.ok(tracingRequested({ OTEL_TRACES_EXPORTER: 'otlp' }), 'OTEL_TRACES_EXPORTER=otlp: on');
  t.ok(tracingRequested({ OTEL_TRACES_EXPORTER: 'console, OTLP' }), 'otlp in a list: on');
  t.ok(tracingRequested({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }), 'an endpoint: on');
  t.ok(
    tracingRequested({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://collector:4318/v1/traces' }),
    'a traces endpoint: on',
  );
});

t.test('an explicit no wins', async (t) => {
  t.notOk(
    tracingRequested({ OTEL_TRACES_EXPORTER: 'none', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }),
    'exporter none beats an endpoint',
  );
  t.notOk(
    tracingRequested({ OTEL_TRACES_EXPORTER: 'zipkin', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }),
    'an exporter list without otlp beats an endpoint',
  );
  t.notOk(
    tracingRequested({ OTEL_SDK_DISABLED: 'true', OTEL_TRACES_EXPORTER: 'otlp' }),
    'OTEL_SDK_DISABLED=true beats everything',
  );
  t.ok(
    tracingRequested({ OTEL_SDK_DISABLED: 'false', OTEL_TRACES_EXPORTER: 'otlp' }),
    'OTEL_SDK_DISABLED=false changes nothing',
  );
});

t.test('OpenTelemetry metrics only when asked for by name', async (t) => {
  t.notOk(metricsRequested({}), 'nothing set: off');
  t.notOk(
    metricsRequested({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }),
    'an endpoint for everything turns on traces alone',
  );
  t.ok(metricsRequested({ OTEL_METRICS_EXPORTER: 'otlp' }), 'OTEL_METRICS_EXPORTER=otlp: on');
  t.ok(
    metricsRequested({ OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: 'http://collector:4318/v1/metrics' }),
    'a metrics endpoint: on',
  );
  t.notOk(
    metricsRequested({
      OTEL_METRICS_EXPORTER: 'none',
      OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: 'http://collector:4318/v1/metrics',
    }),
    'exporter none beats an endpoint',
  );
  t.notOk(
    metricsRequested({ OTEL_SDK_DISABLED: 'true', OTEL_METRICS_EXPORTER: 'otlp' }),
    'OTEL_SDK_DISABLED=true beats everything',
  );
});
