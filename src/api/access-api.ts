import type { AccessRepository } from '../../adapters/store/ports/access.js';
import type { ApiKeyAuth } from '../http/auth.js';
import { sendError } from '../http/errors.js';
import { type HttpServer, sendJson } from '../http/server.js';

/** Operators approve pairing codes and allow or deny senders (the CLI's `switchboard access`, and the console). */
export function registerAccessApi(server: HttpServer, auth: ApiKeyAuth, store: AccessRepository): void {
  const op = (req: Parameters<ApiKeyAuth['authenticate']>[0]) => auth.authenticate(req);
  server.route('GET', '/v1/access', async ({ req, res, url }) => {
    if (!op(req)?.operator) return sendError(res, 403, 'Access control needs an operator key.', { type: 'permission_error', code: 'not_operator' });
    const status = url.searchParams.get('status');
    const rows = await store.list(status === 'pending' || status === 'allowed' || status === 'denied' ? status : undefined);
    sendJson(res, 200, {
      object: 'list',
      data: rows.map((r) => ({
        channel: r.channel,
        sender: r.sender,
        status: r.status,
        ...(r.status === 'pending' ? { code: r.code, expiresAt: r.expiresAt ? new Date(r.expiresAt).toISOString() : null } : {}),
        decidedBy: r.decidedBy,
      })),
    });
  });
  server.route('POST', '/v1/access/pairing/:code', async ({ req, res, params }) => {
    const p = op(req);
    if (!p?.operator) return sendError(res, 403, 'Pairing needs an operator key.', { type: 'permission_error', code: 'not_operator' });
    const row = await store.approvePairing(params.code!.toUpperCase(), `http:${p.id}`);
    if (!row) return sendError(res, 404, `No pending pairing request with code ${params.code!.toUpperCase()} (unknown or expired).`, { code: 'unknown_code' });
    sendJson(res, 200, { ok: true, channel: row.channel, sender: row.sender, status: row.status });
  });
  server.route('POST', '/v1/access', async ({ req, res, json }) => {
    const p = op(req);
    if (!p?.operator) return sendError(res, 403, 'Access control needs an operator key.', { type: 'permission_error', code: 'not_operator' });
    // A bad body is a 400 (415, 413), answered by the router.
    const b: { channel?: unknown; sender?: unknown; status?: unknown } = await json({ hint: '{"channel", "sender", "status": "allowed" | "denied"}' });
    if (typeof b.channel !== 'string' || typeof b.sender !== 'string' || (b.status !== 'allowed' && b.status !== 'denied')) {
      return sendError(res, 400, '"channel", "sender" and "status" ("allowed" or "denied") are required.', { code: 'invalid_value' });
    }
    await store.setStatus(b.channel, b.sender, b.status, `http:${p.id}`);
    sendJson(res, 200, { ok: true, channel: b.channel, sender: b.sender, status: b.status });
  });
}
