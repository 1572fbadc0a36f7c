import { type CliResponse, cliRequest } from './request.js';

/**
 * The operator CLI verbs (approvals, memory, webhooks, access) talk to the
 * running gateway's HTTP API: SWITCHBOARD_URL with SWITCHBOARD_OPERATOR_KEY.
 * This is the one place that makes that call and reports its failures.
 */
export interface GatewayClient {
  /** JSON body of a successful answer, or null after the failure was reported (exit 1). */
  call<T = Record<string, unknown>>(path: string, init?: { method?: string; body?: unknown }): Promise<T | null>;
}

export function gatewayClient(
  verb: string,
  env: Record<string, string | undefined>,
  io: { out: NodeJS.WritableStream; err: NodeJS.WritableStream; json?: boolean },
): GatewayClient | null {
  const key = operatorKeyFrom(env);
  if (!key) {
    io.err.write(`switchboard ${verb}: set SWITCHBOARD_OPERATOR_KEY to an operator key (SWITCHBOARD_OPERATOR_KEYS on the gateway)\n`);
    return null;
  }
  const base = (env.SWITCHBOARD_URL ?? 'http://127.0.0.1:8787').replace(/\/+$/, '');
  const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
  return {
    async call<T>(path: string, init: { method?: string; body?: unknown } = {}): Promise<T | null> {
      let res: CliResponse;
      try {
        res = await cliRequest(`${base}${path}`, {
          method: init.method ?? (init.body === undefined ? 'GET' : 'POST'),
          headers,
          ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {}),
        });
      } catch (e) {
        io.err.write(`switchboard ${verb}: cannot reach the gateway at ${base}: ${(e as Error).message}\n`);
        return null;
      }
      const body = (await res.json().catch(() => ({}))) as { error?: { message: string } };
      if (!res.ok) {
        if (io.json) io.out.write(JSON.stringify({ ok: false, status: res.status, error: body.error ?? null }) + '\n');
        else io.err.write(`switchboard ${verb}: ${body.error?.message ?? `HTTP ${res.status}`}\n`);
        return null;
      }
      return body as T;
    },
  };
}

/**
 * The operator key a CLI verb uses from the environment: SWITCHBOARD_OPERATOR_KEY, else the first
 * of SWITCHBOARD_OPERATOR_KEYS (the gateway's own list, comma-separated).
 */
export function operatorKeyFrom(env: Record<string, string | undefined>): string | undefined {
  return (
    env.SWITCHBOARD_OPERATOR_KEY ||
    env.SWITCHBOARD_OPERATOR_KEYS?.split(',')
      .map((k) => k.trim())
      .find(Boolean)
  );
}
