import { context, propagation, trace } from '@opentelemetry/api';
import type { Logger } from 'pino';
import { type TelemetryConfig, telemetryConfig } from './config.js';

/** What the composition root holds: flushes and stops the exporter on close. */
export interface Telemetry {
  readonly enabled: boolean;
  shutdown(): Promise<void>;
}

const OFF: Telemetry = { enabled: false, shutdown: async () => undefined };

/** The process's one provider (a test may start two gateways in one process): counted, shut down by the last. */
let shared: Promise<{ refs: number; shutdown: () => Promise<void> }> | undefined;
let sdkLoaded = false;

/** True once the SDK was imported in this process (it never is without an endpoint). */
export function telemetrySdkLoaded(): boolean {
  return sdkLoaded;
}

/**
 * Starts OTLP/HTTP (JSON) trace export when the OTEL_* variables ask for it. Without them nothing
 * is imported: the SDK packages are loaded here, by dynamic import, only then, and the spans of
 * src/telemetry/tracer.ts stay the API's no-ops.
 */
export async function startTelemetry(env: Record<string, string | undefined>, log: Logger, role: string): Promise<Telemetry> {
  const cfg = telemetryConfig(env);
  if (!cfg) return OFF;
  const mine = (shared ??= register(cfg, role));
  let s: Awaited<typeof mine>;
  try {
    s = await mine;
  } catch (err) {
    if (shared === mine) shared = undefined;
    throw err;
  }
  s.refs++;
  log.info({ url: cfg.url, service: cfg.serviceName }, 'exporting traces over OTLP/HTTP');
  let done = false;
  return {
    enabled: true,
    shutdown: async () => {
      if (done) return;
      done = true;
      if (--s.refs > 0) return;
      if (shared === mine) shared = undefined;
      // Flushes what is batched: the spans of the parts that closed before.
      await s.shutdown().catch((err: unknown) => log.warn({ err }, 'flushing the last traces failed'));
    },
  };
}

async function register(cfg: TelemetryConfig, role: string): Promise<{ refs: number; shutdown: () => Promise<void> }> {
  sdkLoaded = true;
  const [
    { BasicTracerProvider, BatchSpanProcessor },
    { OTLPTraceExporter },
    { resourceFromAttributes, detectResources, envDetector },
    { AsyncLocalStorageContextManager },
    core,
  ] = await Promise.all([
    import('@opentelemetry/sdk-trace-base'),
    import('@opentelemetry/exporter-trace-otlp-http'),
    import('@opentelemetry/resources'),
    import('@opentelemetry/context-async-hooks'),
    import('@opentelemetry/core'),
  ]);
  // OTEL_RESOURCE_ATTRIBUTES first, then what we know; OTEL_SERVICE_NAME (or switchboard) names the service.
  const resource = detectResources({ detectors: [envDetector] }).merge(
    resourceFromAttributes({ 'service.name': cfg.serviceName, 'switchboard.role': role, 'process.pid': process.pid }),
  );
  // The sampler (OTEL_TRACES_SAMPLER, _ARG) and the batch settings (OTEL_BSP_*) come from the environment, as the SDK reads them.
  const provider = new BasicTracerProvider({
    resource,
    spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter({ url: cfg.url, headers: cfg.headers }))],
  });
  const contextManager = new AsyncLocalStorageContextManager().enable();
  context.setGlobalContextManager(contextManager);
  trace.setGlobalTracerProvider(provider);
  propagation.setGlobalPropagator(new core.W3CTraceContextPropagator());
  return {
    refs: 0,
    shutdown: async () => {
      await provider.shutdown();
      trace.disable();
      context.disable();
      propagation.disable();
    },
  };
}
