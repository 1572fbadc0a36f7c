import type { Logger } from 'pino';
import type { ProviderStatus } from '../providers/slot.js';
import { type Config, ConfigError } from '../src/config.js';
import { registerHealth } from '../src/http/health.js';
import { HttpServer } from '../src/http/server.js';
import type { Metrics } from '../src/metrics.js';
import type { WorkerMonitor } from '../src/worker-heartbeat.js';
import type { Infra } from './infra.js';

/**
 * A `switchboard worker` process's own port (`metrics.port`, SWITCHBOARD_METRICS_PORT): /metrics
 * (its turns, first tokens, provider attempts), /healthz and /readyz (store, queue, bus, provider,
 * workers), nothing else. Each worker is scraped on its own port: no shared registry to push to.
 */
export async function openWorkerEndpoints(
  config: Config,
  parts: { infra: Infra; provider: ProviderStatus; metrics: Metrics; workers: WorkerMonitor; log: Logger },
): Promise<HttpServer | undefined> {
  const { port, host } = config.metrics;
  if (port === undefined) return undefined;
  const server = new HttpServer({ host, port, maxBodyBytes: 16_384, log: parts.log });
  registerHealth(server, { infra: parts.infra, provider: parts.provider, mode: parts.infra.mode, metrics: parts.metrics, workers: parts.workers });
  try {
    await server.start();
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EADDRINUSE') throw new ConfigError(`port ${port} on ${host} is in use (SWITCHBOARD_METRICS_PORT)`);
    if (code === 'EACCES') throw new ConfigError(`port ${port} on ${host} cannot be bound: permission denied (SWITCHBOARD_METRICS_PORT)`);
    if (code === 'EADDRNOTAVAIL' || code === 'ENOTFOUND' || code === 'EAI_AGAIN')
      throw new ConfigError(`host ${host} is not an address of this machine (SWITCHBOARD_METRICS_HOST)`);
    throw err;
  }
  parts.log.info({ url: server.url }, 'switchboard worker metrics are served');
  return server;
}
