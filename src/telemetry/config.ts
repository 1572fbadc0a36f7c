import { ConfigError } from '../config.js';

/**
 * Whether traces are exported, and where: the OpenTelemetry SDK's own environment variables
 * (https://opentelemetry.io/docs/specs/otel/configuration/sdk-environment-variables/), read here
 * so that nothing of the SDK is loaded when they are not set.
 */
export interface TelemetryConfig {
  /** The OTLP/HTTP traces URL (…/v1/traces). */
  url: string;
  headers: Record<string, string>;
  serviceName: string;
}

type Env = Record<string, string | undefined>;

/** null: tracing is off (no endpoint, OTEL_SDK_DISABLED=true, or OTEL_TRACES_EXPORTER without otlp). */
export function telemetryConfig(env: Env): TelemetryConfig | null {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return null;
  const exporters = env.OTEL_TRACES_EXPORTER?.split(',').map((s) => s.trim().toLowerCase());
  if (exporters?.length && !exporters.includes('otlp')) return null;
  const url = tracesUrl(env);
  if (!url) return null;
  // A wrong endpoint stops the start, like any other bad setting (not a silent loss of every trace).
  if (!/^https?:$/.test(safeUrl(url)?.protocol ?? '')) {
    const name = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim() ? 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT' : 'OTEL_EXPORTER_OTLP_ENDPOINT';
    throw new ConfigError(`invalid configuration at "traces" (${name}): an http:// or https:// URL is needed, not "${url}"`);
  }
  return {
    url,
    headers: { ...parseHeaders(env.OTEL_EXPORTER_OTLP_HEADERS), ...parseHeaders(env.OTEL_EXPORTER_OTLP_TRACES_HEADERS) },
    serviceName: env.OTEL_SERVICE_NAME?.trim() || 'switchboard',
  };
}

/** The signal-specific endpoint is used as it is; the general one gets /v1/traces appended to its path (the spec's rule). */
function tracesUrl(env: Env): string | undefined {
  const specific = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim();
  if (specific) return specific;
  const base = env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim();
  if (!base) return undefined;
  return `${base.replace(/\/+$/, '')}/v1/traces`;
}

function safeUrl(s: string): URL | undefined {
  try {
    return new URL(s);
  } catch {
    return undefined; // reported by the caller
  }
}

/** `k1=v1,k2=v2`, values percent-encoded (W3C Baggage format, as the spec says). */
function parseHeaders(raw: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const part of raw?.split(',') ?? []) {
    const eq = part.indexOf('=');
    if (eq <= 0) continue;
    const key = part.slice(0, eq).trim();
    const value = part.slice(eq + 1).trim();
    try {
      out[decodeURIComponent(key)] = decodeURIComponent(value);
    } catch {
      out[key] = value; // not percent-encoded after all: taken as it is
    }
  }
  return out;
}
