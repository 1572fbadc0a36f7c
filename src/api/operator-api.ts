import type { GatewayStore, StoredMessage } from '../../adapters/store/ports/index.js';
import { conversationKey } from '../../kernel/envelope.js';
import { parseIdentity } from '../../kernel/identity.js';
import { checkOperatorNote } from '../../moat/memory-guard.js';
import type { AnswerDecision } from '../approvals/parse.js';
import { visibleCall } from '../approvals/render.js';
import type { ApprovalService } from '../approvals/service.js';
import type { ApiKeyAuth, Principal } from '../http/auth.js';
import { httpStatusOf, sendError } from '../http/errors.js';
import { type HttpServer, type RequestContext, sendJson } from '../http/server.js';
import { answerOptions, registerApprovalRoutes, ruleJson } from './approvals-api.js';

export interface OperatorApiDeps {
  auth: ApiKeyAuth;
  store: GatewayStore;
  approvals: ApprovalService;
}

const DECISIONS: Record<string, AnswerDecision> = {
  approve: 'approve',
  approved: 'approve',
  yes: 'approve',
  deny: 'deny',
  denied: 'deny',
  no: 'deny',
  always: 'always',
};

/**
 * Approvals and conversation reading over HTTP: what operators (and the
 * `switchboard approvals` CLI) use, and how an HTTP client catches up on what
 * a resumed turn said.
 */
export function registerOperatorApi(server: HttpServer, deps: OperatorApiDeps): void {
  const who = (ctx: RequestContext): Principal | null => {
    const p = deps.auth.authenticate(ctx.req);
    if (!p) sendError(ctx.res, 401, 'Incorrect API key provided.', { code: 'invalid_api_key' });
    return p;
  };

  server.route('GET', '/v1/approvals', async (ctx) => {
    const p = who(ctx);
    if (!p) return;
    if (!p.operator) return sendError(ctx.res, 403, 'Listing approvals needs an operator key.', { type: 'permission_error', code: 'not_operator' });
    const rows = await deps.approvals.pending();
    const convs = new Map<string, string>();
    for (const r of rows)
      if (!convs.has(r.conversationId)) convs.set(r.conversationId, (await deps.store.conversation(r.conversationId))?.key ?? r.conversationId);
    sendJson(ctx.res, 200, {
      object: 'list',
      data: rows.map((r) => ({
        code: r.code,
        conversation: r.conversationId,
        conversationKey: convs.get(r.conversationId),
        turn: r.turnId,
        tool: r.tool,
        arguments: r.args,
        tier: r.tier,
        reasons: r.reasons,
        requester: r.requester,
        channel: r.channel,
        expiresAt: new Date(r.expiresAt).toISOString(),
        alwaysPermitted: r.rulePermitted,
        shown: visibleCall(r.args),
      })),
    });
  });

  // Rules (list, delete) and one approval in full: before POST /v1/approvals/:code.
  registerApprovalRoutes(server, deps);

  server.route('POST', '/v1/approvals/:code', async (ctx) => {
    const p = who(ctx);
    if (!p) return;
    // A bad body is a 400 (415 for a content type that is not JSON, 413 when too large), answered by the router.
    const body: { decision?: unknown } = await ctx.json({ hint: '{"decision": "approve" | "deny" | "always"}', empty: 'allow' });
    const word = typeof body.decision === 'string' ? body.decision.toLowerCase() : '';
    const decision = Object.hasOwn(DECISIONS, word) ? DECISIONS[word] : undefined;
    if (!decision) return sendError(ctx.res, 400, '"decision" must be "approve", "deny" or "always".', { param: 'decision', code: 'invalid_value' });
    // "always" may say how far the rule reaches: {"scope": "conversation" | "sender" | "global", "variable": [2]}.
    const opts = answerOptions(body as Record<string, unknown>);
    if (typeof opts === 'string') return sendError(ctx.res, 400, opts, { param: 'scope', code: 'invalid_value' });
    const r = await deps.approvals.answer(ctx.params.code!, decision, { channel: 'http', id: p.id, operator: p.operator }, opts);
    if (!r.ok) {
      const status = httpStatusOf(r.code);
      return sendError(ctx.res, status, r.message, {
        type: status === 403 ? 'permission_error' : status === 429 ? 'rate_limit_error' : 'invalid_request_error',
        code: r.code,
      });
    }
    sendJson(ctx.res, 200, {
      ok: true,
      message: r.message,
      approval: {
        code: r.approval.code,
        tool: r.approval.tool,
        status: r.approval.status,
        always: r.approval.always,
        decidedBy: r.approval.decidedBy,
        decidedAt: r.approval.decidedAt,
      },
      ...(r.rule ? { rule: ruleJson(r.rule) } : {}),
    });
  });

  // Durable memory notes, for operators (the CLI's `switchboard memory`).
  server.route('GET', '/v1/memory', async (ctx) => {
    const p = who(ctx);
    if (!p) return;
    if (!p.operator) return sendError(ctx.res, 403, 'Memory needs an operator key.', { type: 'permission_error', code: 'not_operator' });
    const q = ctx.url.searchParams;
    const rows = await deps.store.listMemory(q.get('scope') ?? undefined, q.get('key') ?? undefined);
    sendJson(ctx.res, 200, {
      object: 'list',
      data: rows.map((r) => ({ id: r.id, scope: r.scope, key: r.scopeKey, note: r.body, createdAt: new Date(r.createdAt).toISOString() })),
    });
  });
  server.route('POST', '/v1/memory', async (ctx) => {
    const p = who(ctx);
    if (!p) return;
    if (!p.operator) return sendError(ctx.res, 403, 'Memory needs an operator key.', { type: 'permission_error', code: 'not_operator' });
    const body: { scope?: unknown; key?: unknown; note?: unknown; force?: unknown } = await ctx.json({ hint: '{"scope", "key", "note", "force"}' });
    const scope = body.scope ?? 'global';
    if (scope !== 'global' && scope !== 'conversation' && scope !== 'sender')
      return sendError(ctx.res, 400, '"scope" must be global, conversation or sender.', { param: 'scope', code: 'invalid_value' });
    if (typeof body.note !== 'string' || !body.note.trim() || body.note.length > 2000)
      return sendError(ctx.res, 400, '"note" must be 1-2000 characters.', { param: 'note', code: 'invalid_value' });
    if (body.force !== undefined && typeof body.force !== 'boolean')
      return sendError(ctx.res, 400, '"force" must be true or false.', { param: 'force', code: 'invalid_value' });
    const key = scope === 'global' ? '' : typeof body.key === 'string' && body.key ? body.key : null;
    if (key === null)
      return sendError(ctx.res, 400, `"key" (the ${scope} id) is required for scope ${scope}.`, { param: 'key', code: 'missing_required_parameter' });
    // A sender note belongs to one whole identity; a bare id would belong to nobody (or, before, to anyone using it on any channel).
    if (scope === 'sender' && !parseIdentity(key))
      return sendError(
        ctx.res,
        400,
        '"key" for scope sender is the sender\'s identity, channel included: slack:T0123:U0456, sms:+15551234567, email:alice@example.com, webhook:<hook>:<sender>, http:<key id>.',
        { param: 'key', code: 'invalid_value' },
      );
    // Operators' notes reach every prompt they apply to: never a secret, and an instruction only by force.
    const note = body.note.trim();
    const check = checkOperatorNote(note, { force: body.force === true });
    if (!check.allowed) {
      const message =
        check.code === 'injection'
          ? `Note refused: ${check.reason}. Notes are shown to the model as data, not instructions; send "force": true (CLI: --force) to keep it anyway.`
          : `Note refused: ${check.reason}.`;
      return sendError(ctx.res, 400, message, {
        param: 'note',
        code: check.code === 'secret' ? 'note_contains_secret' : check.code === 'injection' ? 'note_is_instruction' : 'invalid_value',
      });
    }
    const id = await deps.store.addMemory(scope, key, note);
    sendJson(ctx.res, 201, {
      id,
      scope,
      key,
      note,
      ...(check.forcedInjection ? { forced: true, warning: `kept by force although instruction-like: ${check.forcedInjection}` } : {}),
    });
  });
  server.route('DELETE', '/v1/memory/:id', async (ctx) => {
    const p = who(ctx);
    if (!p) return;
    if (!p.operator) return sendError(ctx.res, 403, 'Memory needs an operator key.', { type: 'permission_error', code: 'not_operator' });
    const id = Number(ctx.params.id);
    if (!Number.isSafeInteger(id) || id < 1 || !(await deps.store.deleteMemory(id)))
      return sendError(ctx.res, 404, `No note #${ctx.params.id}.`, { code: 'not_found' });
    sendJson(ctx.res, 200, { ok: true, id });
  });

  server.route('GET', '/v1/conversations/:conversation/messages', async (ctx) => {
    const p = who(ctx);
    if (!p) return;
    const name = ctx.params.conversation!;
    // A key reads its own conversations by name; an operator also by internal id.
    const conv =
      (await deps.store.conversationByKey(conversationKey({ channel: 'http', workspace: p.id, chat: name }))) ??
      (p.operator ? await deps.store.conversation(name) : undefined);
    if (!conv) return sendError(ctx.res, 404, `Conversation '${name}' not found.`, { code: 'conversation_not_found' });
    const after = Number(ctx.url.searchParams.get('after') ?? 0) || 0;
    if (!Number.isSafeInteger(after) || after < 0)
      return sendError(ctx.res, 400, '"after" must be a message id (a whole number).', { param: 'after', code: 'invalid_value' });
    const rows = await deps.store.messagesAfter(conv.id, after);
    sendJson(ctx.res, 200, {
      object: 'list',
      conversation: name,
      data: rows.map((r) => ({
        id: r.id,
        turn: r.turnId,
        role: r.role === 'toolResult' ? 'tool' : r.role,
        ...describe(r.content),
        createdAt: new Date(r.createdAt).toISOString(),
      })),
    });
  });
}

function describe(m: StoredMessage): { content: string; author?: string; tool?: string; toolCalls?: Array<{ name: string; arguments: unknown }> } {
  // A message of a taken-over time (src/handoffs/text.ts): who said it, and the words as the user saw them.
  const h = m as { author?: unknown; text?: unknown; handoff?: unknown };
  if (typeof h.handoff === 'string' && typeof h.text === 'string') return { content: h.text, ...(typeof h.author === 'string' ? { author: h.author } : {}) };
  const c = (m as { content?: unknown }).content;
  const parts = Array.isArray(c) ? (c as Array<{ type: string; text?: string; name?: string; arguments?: unknown }>) : [];
  const content =
    typeof c === 'string'
      ? c
      : parts
          .filter((x) => x.type === 'text')
          .map((x) => x.text ?? '')
          .join('');
  const calls = parts.filter((x) => x.type === 'toolCall').map((x) => ({ name: x.name ?? '', arguments: x.arguments }));
  const tool = (m as { toolName?: string }).toolName;
  return { content, ...(tool ? { tool } : {}), ...(calls.length ? { toolCalls: calls } : {}) };
}
