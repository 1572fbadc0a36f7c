import { parseArgs } from 'node:util';
import { operatorKeyFrom } from './http.js';
import { type CliResponse, cliRequest } from './request.js';

export const STATUS_USAGE = `usage: switchboard status [--key OPERATOR_KEY] [--json]

Asks a running gateway for its health: the readiness checks (store, queue, bus, provider,
channels; shown to operator keys), the queue's jobs by state, the pending approvals and the
replies given up on (dead deliveries, GET /v1/deliveries/dead-letters).
The gateway: SWITCHBOARD_URL, else http://<http.host>:<http.port> of the configuration.
The operator key: --key, else SWITCHBOARD_OPERATOR_KEY, else the first of SWITCHBOARD_OPERATOR_KEYS.
Exit status: 0 ready, 1 not ready or not answering, 2 bad usage.`;

type Env = Record<string, string | undefined>;

export interface GatewayStatus {
  url: string;
  ready: boolean;
  /** The /readyz details an operator key sees (checks, mode, channels...), as the gateway sends them. */
  checks?: Record<string, { ok: boolean; message?: string }>;
  mode?: string;
  /** Drain jobs by state, from /metrics; null when the gateway did not say. */
  queue: Record<string, number> | null;
  /** Pending approvals (GET /v1/approvals); null without an operator key. */
  pendingApprovals: number | null;
  /** Replies the delivery queue gave up on (GET /v1/deliveries/dead-letters, the newest 100); null without an operator key. */
  deadDeliveries: number | null;
  [detail: string]: unknown;
}

/** `switchboard status`: a running gateway's health in a few lines, or JSON. */
export async function runStatus(argv: string[], env: Env = process.env, out = process.stdout, err = process.stderr): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({ args: argv, options: { json: { type: 'boolean' }, key: { type: 'string' }, help: { type: 'boolean', short: 'h' } } });
  } catch (e) {
    err.write(`switchboard status: ${(e as Error).message}\n${STATUS_USAGE}\n`);
    return 2;
  }
  if (parsed.values.help) {
    out.write(`${STATUS_USAGE}\n`);
    return 0;
  }
  const json = parsed.values.json === true;
  const { url, configKey } = await gatewayAddress(env);
  const key = parsed.values.key ?? operatorKeyFrom(env) ?? configKey;
  const status = await gatewayStatus(url, key);
  if ('error' in status) {
    // One line, whatever went wrong: nothing answers there.
    if (json) out.write(`${JSON.stringify({ url, reachable: false, error: status.error })}\n`);
    else err.write(`switchboard status: no gateway answers at ${url} (${status.error})\n`);
    return 1;
  }
  out.write(json ? `${JSON.stringify(status)}\n` : `${formatStatus(status, key !== undefined)}\n`);
  return status.ready ? 0 : 1;
}

/** SWITCHBOARD_URL, else the configured listener (0.0.0.0 and :: are asked on loopback). */
async function gatewayAddress(env: Env): Promise<{ url: string; configKey?: string }> {
  if (env.SWITCHBOARD_URL) return { url: env.SWITCHBOARD_URL.replace(/\/+$/, '') };
  // Only when there is no URL: the configuration module is the slow part of this verb.
  const { loadConfig } = await import('../../src/config.js');
  const { host, port, operatorKeys } = loadConfig(env).http;
  const h = host === '0.0.0.0' || host === '::' || host === '' ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host;
  return { url: `http://${h}:${port}`, ...(operatorKeys[0] ? { configKey: operatorKeys[0] } : {}) };
}

/** The questions at once: readiness (with details for an operator), queue counts, pending approvals, dead deliveries. */
export async function gatewayStatus(url: string, key: string | undefined, timeoutMs = 5_000): Promise<GatewayStatus | { error: string }> {
  const get = (path: string, auth = true) => cliRequest(`${url}${path}`, { headers: auth && key ? { authorization: `Bearer ${key}` } : {}, timeoutMs });
  const [readyz, metrics, approvals, dead] = await Promise.allSettled([
    get('/readyz'),
    get('/metrics', false),
    key ? get('/v1/approvals') : Promise.reject(),
    key ? get('/v1/deliveries/dead-letters') : Promise.reject(),
  ]);
  if (readyz.status === 'rejected') return { error: reason(readyz.reason) };
  const body = (await readyz.value.json().catch(() => null)) as ({ ready?: unknown } & Record<string, unknown>) | null;
  if (!body || typeof body.ready !== 'boolean') return { error: `/readyz answered HTTP ${readyz.value.status} without a readiness` };
  const queue = metrics.status === 'fulfilled' && metrics.value.ok ? queueCounts(await metrics.value.text()) : null;
  return { url, ...body, ready: body.ready, queue, pendingApprovals: await listLength(approvals), deadDeliveries: await listLength(dead) };
}

/** The length of a `{data: [...]}` list an answer holds; null when there is none (no operator key, an older gateway). */
async function listLength(r: PromiseSettledResult<CliResponse>): Promise<number | null> {
  if (r.status !== 'fulfilled' || !r.value.ok) return null;
  const list = (await r.value.json().catch(() => null)) as { data?: unknown[] } | null;
  return Array.isArray(list?.data) ? list.data.length : null;
}

function reason(e: unknown): string {
  const err = e as Error & { code?: string };
  if (err?.name === 'TimeoutError') return 'no answer in time';
  return err?.code ?? err?.message ?? String(e);
}

/** switchboard_queue_jobs{state="waiting"} 3 → { waiting: 3 }. */
function queueCounts(metrics: string): Record<string, number> | null {
  const counts: Record<string, number> = {};
  for (const m of metrics.matchAll(/^switchboard_queue_jobs\{state="([^"]+)"\} (\S+)$/gm)) counts[m[1]!] = Number(m[2]);
  return Object.keys(counts).length ? counts : null;
}

export function formatStatus(s: GatewayStatus, withKey: boolean): string {
  const lines = [`${s.url}: ${s.ready ? 'ready' : 'NOT READY'}${s.mode ? ` (${s.mode})` : ''}`];
  if (s.checks) for (const [name, c] of Object.entries(s.checks)) lines.push(`  [${c.ok ? 'ok  ' : 'FAIL'}] ${name}${c.message ? `: ${c.message}` : ''}`);
  else lines.push(`  (the checks are shown to an operator key${withKey ? '; this key is not one' : ': --key or SWITCHBOARD_OPERATOR_KEY'})`);
  if (s.queue)
    lines.push(
      `  queue: ${Object.entries(s.queue)
        .map(([state, n]) => `${n} ${state}`)
        .join(', ')}`,
    );
  lines.push(`  pending approvals: ${s.pendingApprovals ?? 'unknown (needs an operator key)'}`);
  if (s.deadDeliveries !== null) lines.push(`  dead deliveries: ${s.deadDeliveries}${s.deadDeliveries ? ' (GET /v1/deliveries/dead-letters)' : ''}`);
  return lines.join('\n');
}
