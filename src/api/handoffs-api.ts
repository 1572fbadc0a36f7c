import type { HandoffRecord } from '../../adapters/store/ports/handoffs.js';
import { HandoffError, type HandoffService } from '../handoffs/service.js';
import type { ApiKeyAuth } from '../http/auth.js';
import { httpStatusOf, sendError } from '../http/errors.js';
import { type HttpServer, sendJson } from '../http/server.js';

export const handoffJson = (h: HandoffRecord) => ({
  id: h.id,
  object: 'handoff',
  conversation: h.conversationId,
  conversationKey: h.conversationKey,
  channel: h.channel,
  state: h.state,
  reason: h.reason,
  urgency: h.urgency,
  requestedBy: h.requestedBy,
  operator: h.operator,
  requestedAt: h.requestedAt,
  takenAt: h.takenAt,
  returnedAt: h.returnedAt,
  returnedBy: h.returnedBy,
  note: h.note,
  slaDeadline: h.slaDeadline,
  slaFiredAt: h.slaFiredAt,
});

const MAX_TEXT = 4_000;

/**
 * Human takeover for operators (what `switchboard takeover` and the console's Handoffs panel talk
 * to): open requests and takeovers, take over, write to the user, hand back. Operator keys only;
 * the operator is the key (`http:<key id>`), as in the audit ledger.
 */
export function registerHandoffApi(server: HttpServer, deps: { auth: ApiKeyAuth; handoffs: HandoffService }): void {
  const operator = (ctx: Parameters<Parameters<HttpServer['route']>[2]>[0]): string | null => {
    const p = deps.auth.authenticate(ctx.req);
    if (!p) {
      sendError(ctx.res, 401, 'Invalid or missing API key.', { code: 'invalid_api_key' });
      return null;
    }
    if (!p.operator) {
      sendError(ctx.res, 403, 'Takeover needs an operator key.', { type: 'permission_error', code: 'not_operator' });
      return null;
    }
    return `http:${p.id}`;
  };
  const refused = (res: Parameters<typeof sendError>[0], err: unknown) => {
    if (!(err instanceof HandoffError)) throw err;
    sendError(res, httpStatusOf(err.code), err.message, { code: err.code });
  };

  server.route('GET', '/v1/handoffs', async (ctx) => {
    if (!operator(ctx)) return;
    const recent = Number(ctx.url.searchParams.get('recent') ?? 0) || 0;
    const list = await deps.handoffs.list({ recent: Math.min(Math.max(0, Math.floor(recent)), 200) });
    sendJson(ctx.res, 200, { object: 'list', data: list.map(handoffJson) });
  });

  server.route('POST', '/v1/conversations/:conversation/takeover', async (ctx) => {
    const who = operator(ctx);
    if (!who) return;
    try {
      const h = await deps.handoffs.take(ctx.params.conversation!, who);
      sendJson(ctx.res, 201, { ok: true, handoff: handoffJson(h) });
    } catch (err) {
      refused(ctx.res, err);
    }
  });

  server.route('POST', '/v1/conversations/:conversation/operator-messages', async (ctx) => {
    const who = operator(ctx);
    if (!who) return;
    const b: Record<string, unknown> = await ctx.json({ hint: '{"text": "…"}' });
    const text = typeof b.text === 'string' ? b.text.trim() : '';
    if (!text || text.length > MAX_TEXT)
      return sendError(ctx.res, 400, `"text" must be a non-empty string of at most ${MAX_TEXT} characters.`, { param: 'text', code: 'invalid_value' });
    try {
      const r = await deps.handoffs.say(ctx.params.conversation!, who, text);
      sendJson(ctx.res, 201, { ok: true, id: r.messageId, delivered: r.delivered, handoff: handoffJson(r.handoff) });
    } catch (err) {
      refused(ctx.res, err);
    }
  });

  server.route('POST', '/v1/conversations/:conversation/handback', async (ctx) => {
    const who = operator(ctx);
    if (!who) return;
    const b: Record<string, unknown> = await ctx.json({ hint: '{"note": "…"} (optional)', empty: 'allow' });
    if (b.note !== undefined && b.note !== null && (typeof b.note !== 'string' || b.note.length > 2_000))
      return sendError(ctx.res, 400, '"note" must be a string of at most 2000 characters.', { param: 'note', code: 'invalid_value' });
    const note = typeof b.note === 'string' && b.note.trim() ? b.note.trim() : null;
    try {
      const h = await deps.handoffs.handback(ctx.params.conversation!, who, note);
      sendJson(ctx.res, 200, { ok: true, handoff: handoffJson(h) });
    } catch (err) {
      refused(ctx.res, err);
    }
  });
}
