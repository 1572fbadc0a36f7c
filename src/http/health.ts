import type { IncomingMessage } from 'node:http';
import type { ProviderStatus } from '../../providers/slot.js';
import type { CoreInfra } from '../core-infra.js';
import type { Metrics } from '../metrics.js';
import { type HttpServer, sendJson } from './server.js';

export interface Check {
  ok: boolean;
  message?: string;
}

/** Runs the readiness checks: store, queue, bus and the provider. */
export async function readiness(
  infra: CoreInfra,
  provider: ProviderStatus,
  channels: Array<{ name: string; ok: boolean; message?: string }> = [],
): Promise<{ ready: boolean; checks: Record<string, Check> }> {
  const probe = async (fn: () => Promise<void>): Promise<Check> => {
    try {
      await withTimeout(fn(), 2_000);
      return { ok: true };
    } catch (err) {
      return { ok: false, message: (err as Error).message };
    }
  };
  const [store, queue, bus] = await Promise.all([probe(() => infra.store.ping()), probe(() => infra.queue.ping()), probe(() => infra.bus.ping())]);
  const checks: Record<string, Check> = {
    store,
    queue,
    bus,
    provider: provider.configured
      ? { ok: true, message: provider.slots.map((s) => `${s.id}: ${s.model}`).join(', ') }
      : { ok: false, message: provider.reason ?? 'no model provider is configured' },
  };
  // A channel connection that is up but deaf (no events, no pings) is not ready.
  for (const c of channels) checks[`channel:${c.name}`] = { ok: c.ok, ...(c.message ? { message: c.message } : {}) };
  return { ready: Object.values(checks).every((c) => c.ok), checks };
}

/**
 * /healthz: the process is up. /readyz: it can take and answer messages (200,
 * or 503 if not). Anyone may ask whether it is ready; only an operator key
 * (`isOperator`) sees the checks, the mode, the models and the channels.
 */
export function registerHealth(
  server: HttpServer,
  infra: CoreInfra,
  provider: ProviderStatus,
  mode: string,
  metrics?: Metrics,
  extra?: () => Record<string, unknown>,
  channels: () => Array<{ name: string; ok: boolean; message?: string }> = () => [],
  isOperator: (req: IncomingMessage) => boolean = () => false,
): void {
  server.route('GET', '/healthz', ({ res }) => sendJson(res, 200, { ok: true }));
  server.route('GET', '/readyz', async ({ req, res }) => {
    const r = await readiness(infra, provider, channels());
    if (!isOperator(req)) return sendJson(res, r.ready ? 200 : 503, { ready: r.ready });
    sendJson(res, r.ready ? 200 : 503, { ...r, mode, ...(extra ? extra() : {}) });
  });
  if (metrics) {
    // Prometheus scrape endpoint: counts only, no content; open like the health checks.
    server.route('GET', '/metrics', async ({ res }) => {
      try {
        const c = await infra.queue.counts();
        for (const [state, n] of Object.entries(c)) metrics.queueDepth.set({ state }, n);
        metrics.approvalsPending.set((await infra.approvals.pending()).length);
      } catch {
        /* the store or queue is down: still serve the process metrics */
      }
      const body = await metrics.registry.metrics();
      res.writeHead(200, { 'content-type': metrics.registry.contentType });
      res.end(body);
    });
  }
}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
    p.then(
      (v) => (clearTimeout(t), resolve(v)),
      (e) => (clearTimeout(t), reject(e)),
    );
  });
}
