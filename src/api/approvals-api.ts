import type { AllowRuleRecord } from '../../adapters/store/ports/approvals.js';
import type { ConversationRepository } from '../../adapters/store/ports/index.js';
import { visibleText } from '../../moat/approval-display.js';
import { RULE_SCOPES, type RuleScope } from '../../moat/approval-engine.js';
import { visibleCall } from '../approvals/render.js';
import type { AnswerOptions, ApprovalService } from '../approvals/service.js';
import type { ApiKeyAuth } from '../http/auth.js';
import { sendError } from '../http/errors.js';
import { type HttpServer, type RequestContext, sendJson } from '../http/server.js';

/**
 * The "always allow" parts of a decision body: {"scope": "conversation" |
 * "sender" | "global", "variable": [2]}. Returns the options, or an error message.
 */
export function answerOptions(body: Record<string, unknown> | null | undefined): AnswerOptions | string {
  const out: AnswerOptions = {};
  const scope = body?.scope;
  if (scope !== undefined && scope !== null) {
    if (typeof scope !== 'string' || !RULE_SCOPES.includes(scope as RuleScope)) return `"scope" must be one of ${RULE_SCOPES.join(', ')}.`;
    out.scope = scope as RuleScope;
  }
  const variable = body?.variable;
  if (variable !== undefined && variable !== null) {
    if (!Array.isArray(variable) || !variable.every((v) => Number.isInteger(v))) return '"variable" must be a list of word positions (integers).';
    out.variable = variable as number[];
  }
  return out;
}

/** A rule as the HTTP API, the CLI and the console show it. */
export function ruleJson(r: AllowRuleRecord, conversationKey?: string): Record<string, unknown> {
  return {
    id: r.id,
    tool: r.tool,
    pattern: r.pattern,
    /** The pattern with invisible and control characters made visible. */
    shown: visibleText(r.pattern),
    kind: r.kind,
    scope: r.scope,
    scopeKey: r.scopeKey,
    ...(conversationKey ? { conversationKey } : {}),
    variable: r.variable,
    createdBy: r.createdBy,
    createdAt: new Date(r.createdAt).toISOString(),
  };
}

/** Rules with the key of the conversation a conversation-scoped rule belongs to. */
export async function rulesJson(rules: AllowRuleRecord[], store: Pick<ConversationRepository, 'conversation'>): Promise<Array<Record<string, unknown>>> {
  const keys = new Map<string, string | undefined>();
  for (const r of rules)
    if (r.scope === 'conversation' && r.scopeKey && !keys.has(r.scopeKey)) keys.set(r.scopeKey, (await store.conversation(r.scopeKey))?.key);
  return rules.map((r) => ruleJson(r, r.scope === 'conversation' ? keys.get(r.scopeKey) : undefined));
}

/**
 * Operator routes for rules and single approvals:
 *   GET    /v1/approvals/rules       every "always allow" rule
 *   DELETE /v1/approvals/rules/:id   deletes one
 *   GET    /v1/approvals/:code       one approval, its arguments in full (visible)
 * Registered before POST /v1/approvals/:code.
 */
export function registerApprovalRoutes(
  server: HttpServer,
  deps: { auth: ApiKeyAuth; store: Pick<ConversationRepository, 'conversation'>; approvals: ApprovalService },
): void {
  const operator = (ctx: RequestContext, what: string): boolean => {
    const p = deps.auth.authenticate(ctx.req);
    if (!p) {
      sendError(ctx.res, 401, 'Incorrect API key provided.', { code: 'invalid_api_key' });
      return false;
    }
    if (!p.operator) {
      sendError(ctx.res, 403, `${what} needs an operator key.`, { type: 'permission_error', code: 'not_operator' });
      return false;
    }
    return true;
  };

  server.route('GET', '/v1/approvals/rules', async (ctx) => {
    if (!operator(ctx, 'Listing rules')) return;
    sendJson(ctx.res, 200, { object: 'list', data: await rulesJson(await deps.approvals.rules(), deps.store) });
  });

  server.route('DELETE', '/v1/approvals/rules/:id', async (ctx) => {
    if (!operator(ctx, 'Deleting rules')) return;
    const p = deps.auth.authenticate(ctx.req)!;
    const raw = ctx.params.id!.replace(/^#/, '');
    const id = /^\d{1,15}$/.test(raw) ? Number(raw) : NaN;
    const r = Number.isSafeInteger(id) ? await deps.approvals.deleteRule(id, { channel: 'http', id: p.id, operator: true }) : undefined;
    if (!r) return sendError(ctx.res, 404, `There is no rule #${ctx.params.id}.`, { code: 'not_found' });
    sendJson(ctx.res, 200, { ok: true, message: `Rule #${r.id} deleted: ${r.tool} ${visibleText(r.pattern)} no longer runs unasked.`, rule: ruleJson(r) });
  });

  server.route('GET', '/v1/approvals/:code', async (ctx) => {
    if (!operator(ctx, 'Reading approvals')) return;
    const a = await deps.approvals.byCode(ctx.params.code!);
    if (!a) return sendError(ctx.res, 404, `There is no approval request with code ${ctx.params.code!.toUpperCase()}.`, { code: 'unknown_code' });
    sendJson(ctx.res, 200, {
      code: a.code,
      status: a.status,
      conversation: a.conversationId,
      tool: a.tool,
      arguments: a.args,
      shown: visibleCall(a.args),
      pattern: a.pattern,
      tier: a.tier,
      reasons: a.reasons,
      requester: a.requester,
      channel: a.channel,
      alwaysPermitted: a.rulePermitted,
      always: a.always,
      decidedBy: a.decidedBy,
      expiresAt: new Date(a.expiresAt).toISOString(),
    });
  });
}
