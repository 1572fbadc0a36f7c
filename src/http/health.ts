import type { IncomingMessage } from 'node:http';
import type { ProviderStatus } from '../../providers/slot.js';
import type { CoreInfra } from '../core-infra.js';
import type { Metrics } from '../metrics.js';
import type { WorkerMonitor } from '../worker-heartbeat.js';
import { type HttpServer, sendJson } from './server.js';

export interface Check {
  ok: boolean;
  message?: string;
}

export interface HealthOptions {
  infra: CoreInfra;
  provider: ProviderStatus;
  mode: string;
  metrics?: Metrics;
  /** Worker heartbeats: no worker alive is not ready (a chat request would wait for nobody). */
  workers?: WorkerMonitor;
  /** More fields for an operator's /readyz body (mcp, channels). */
  extra?: () => Record<string, unknown>;
  channels?: () => Array<{ name: string; ok: boolean; message?: string }>;
  isOperator?: (req: IncomingMessage) => boolean;
}

/** Runs the readiness checks: store, queue, bus, workers, the provider (configured, and not every slot cooling down). */
export async function readiness(
  o: Pick<HealthOptions, 'infra' | 'provider' | 'workers'>,
  channels: Array<{ name: string; ok: boolean; message?: string }> = [],
): Promise<{ ready: boolean; checks: Record<string, Check>; workers?: unknown[] }> {
  const { infra } = o;
  const probe = async (fn: () => Promise<void>): Promise<Check> => {
    try {
      await withTimeout(fn(), 2_000);
      return { ok: true };
    } catch (err) {
      return { ok: false, message: (err as Error).message };
    }
  };
  const [store, queue, bus, provider, seen] = await Promise.all([
    probe(() => infra.store.ping()),
    probe(() => infra.queue.ping()),
    probe(() => infra.bus.ping()),
    providerCheck(o.provider, infra),
    o.workers?.seen(),
  ]);
  const checks: Record<string, Check> = { store, queue, bus, provider };
  if (seen)
    checks.workers = !seen.known
      ? { ok: false, message: seen.message }
      : seen.alive.length
        ? { ok: true, message: `${seen.alive.length} alive` }
        : { ok: false, message: 'no worker alive' };
  // A channel connection that is up but deaf (no events, no pings) is not ready.
  for (const c of channels) checks[`channel:${c.name}`] = { ok: c.ok, ...(c.message ? { message: c.message } : {}) };
  return { ready: Object.values(checks).every((c) => c.ok), checks, ...(seen?.known ? { workers: seen.alive } : {}) };
}

/**
 * The provider from configuration and from recent outcomes: when every slot is cooling down
 * after failures (the cooldowns the chain records), it is degraded and not ready.
 */
async function providerCheck(provider: ProviderStatus, infra: CoreInfra): Promise<Check> {
  if (!provider.configured) return { ok: false, message: provider.reason ?? 'no model provider is configured' };
  const configured = provider.slots.map((s) => `${s.id}: ${s.model}`).join(', ');
  try {
    const now = Date.now();
    const states = await withTimeout(infra.cooldowns.get(provider.slots.map((s) => s.id)), 2_000);
    const cooling = [...states].filter(([, c]) => c.until > now);
    if (cooling.length && cooling.length === provider.slots.length) {
      const why = cooling.map(([id, c]) => `${id}: ${c.reason ?? 'failing'}, ${Math.ceil((c.until - now) / 1000)} s`).join('; ');
      return { ok: false, message: `degraded: every slot is cooling down after failures (${why})` };
    }
  } catch {
    /* the cooldowns cannot be read: the configuration is all there is to go by */
  }
  return { ok: true, message: configured };
}

/** The body an operator's /readyz gets (the console shows it too). */
export async function operatorReadiness(o: HealthOptions): Promise<Awaited<ReturnType<typeof readiness>> & Record<string, unknown>> {
  const r = await readiness(o, o.channels?.() ?? []);
  // Anyone is told why not when no worker is alive: it says nothing about the setup.
  const reason = r.checks.workers?.ok === false && r.checks.workers.message === 'no worker alive' ? { reason: 'no worker alive' } : {};
  return { ...r, ...reason, mode: o.mode, ...(o.extra ? o.extra() : {}) };
}

/**
 * /healthz: the process is up. /readyz: it can take and answer messages (200,
 * or 503 if not). Anyone may ask whether it is ready; only an operator key
 * (`isOperator`) sees the checks, the mode, the models, the workers and the channels.
 */
export function registerHealth(server: HttpServer, o: HealthOptions): void {
  const { infra, metrics } = o;
  const isOperator = o.isOperator ?? (() => false);
  server.route('GET', '/healthz', ({ res }) => sendJson(res, 200, { ok: true }));
  server.route('GET', '/readyz', async ({ req, res }) => {
    const r = await operatorReadiness(o);
    const status = r.ready ? 200 : 503;
    if (!isOperator(req)) return sendJson(res, status, { ready: r.ready, ...(r.reason ? { reason: r.reason } : {}) });
    sendJson(res, status, r);
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
