import { z } from 'zod';
import type { EnvBinding } from '../kernel/config-slice.js';

/**
 * The metrics slice: `metrics.*`. A `switchboard worker` process opens no HTTP port of its own
 * unless `port` is set: then it serves /metrics, /healthz and /readyz there (app/worker-endpoints.ts).
 * Ingress and `start` processes serve them on the HTTP port.
 */
export const metricsSchema = z
  .object({
    /** The worker process's metrics and health port (0: any free port); unset: none. */
    port: z.number().int().min(0).max(65535).optional(),
    host: z.string().default('127.0.0.1'),
  })
  .strict()
  .prefault({});

export const METRICS_ENV: EnvBinding[] = [
  { env: 'SWITCHBOARD_METRICS_PORT', path: ['port'], kind: 'int' },
  { env: 'SWITCHBOARD_METRICS_HOST', path: ['host'], kind: 'string' },
];

export type MetricsConfig = z.infer<typeof metricsSchema>;
