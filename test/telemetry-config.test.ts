/** Which OTEL_* settings turn trace export on, and the traceparent a job carries. */
import { describe, expect, it } from 'vitest';
import { telemetryConfig } from '../src/telemetry/config.js';
import { contextOf, traceparentOf } from '../src/telemetry/tracer.js';

describe('telemetryConfig', () => {
  it('is off without an endpoint, whatever else is set', () => {
    expect(telemetryConfig({})).toBeNull();
    expect(telemetryConfig({ OTEL_SERVICE_NAME: 'x', OTEL_TRACES_SAMPLER: 'always_on' })).toBeNull();
  });

  it('appends /v1/traces to the general endpoint, takes the traces endpoint as it is', () => {
    expect(telemetryConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/' })).toEqual({
      url: 'http://collector:4318/v1/traces',
      headers: {},
      serviceName: 'switchboard',
    });
    expect(
      telemetryConfig({
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://a:4318',
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://b:4318/custom',
        OTEL_SERVICE_NAME: 'sb-prod',
      }),
    ).toMatchObject({ url: 'http://b:4318/custom', serviceName: 'sb-prod' });
  });

  it('reads the headers (percent-encoded values), the traces-specific ones winning', () => {
    const cfg = telemetryConfig({
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318',
      OTEL_EXPORTER_OTLP_HEADERS: 'authorization=Bearer%20abc, x-team=ops',
      OTEL_EXPORTER_OTLP_TRACES_HEADERS: 'x-team=traces',
    });
    expect(cfg?.headers).toEqual({ authorization: 'Bearer abc', 'x-team': 'traces' });
  });

  it('refuses an endpoint that is not an http(s) URL, naming the variable', () => {
    expect(() => telemetryConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' })).toThrow(/OTEL_EXPORTER_OTLP_ENDPOINT/);
    expect(() => telemetryConfig({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'not a url' })).toThrow(/OTEL_EXPORTER_OTLP_TRACES_ENDPOINT/);
  });

  it('is off when the SDK is disabled or another exporter is chosen', () => {
    expect(telemetryConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_SDK_DISABLED: 'true' })).toBeNull();
    expect(telemetryConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_TRACES_EXPORTER: 'none' })).toBeNull();
    expect(telemetryConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_TRACES_EXPORTER: 'otlp' })).not.toBeNull();
  });
});

describe('traceparent', () => {
  it('round-trips through a context, and a malformed one starts nothing', () => {
    const tp = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
    expect(traceparentOf(contextOf(tp))).toBe(tp);
    for (const bad of [
      undefined,
      '',
      'garbage',
      '00-00000000000000000000000000000000-00f067aa0ba902b7-01',
      'ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
    ])
      expect(traceparentOf(contextOf(bad))).toBeUndefined();
  });
});
