import type { Logger } from 'pino';
import type { Bus } from '../adapters/bus/port.js';
import type { LockService } from '../adapters/lock/port.js';
import type { DeliveryStore } from '../adapters/store/deliveries.js';
import type { ChannelStateStore } from '../adapters/store/channel-state.js';
import type { ApprovalRow } from '../adapters/store/approvals.js';
import type { Store } from '../adapters/store/store.js';
import type { InboundMessage } from '../kernel/envelope.js';
import { identityOf, type Identity } from '../kernel/identity.js';
import type { AccessControl } from '../src/access.js';
import { parseApprovalAnswer } from '../src/approvals/parse.js';
import type { AnswerResult, ApprovalService } from '../src/approvals/service.js';
import type { ApprovalAnswer, ApprovalSummary, ListenContext, ReceiveOptions, ReceiveOutcome } from '../src/channel/index.js';
import { parseCommand, type ConversationCommands } from '../src/commands.js';
import { conversationTopic } from '../src/event-publisher.js';
import type { ApiKeyAuth } from '../src/http/auth.js';
import type { HttpServer } from '../src/http/server.js';
import { TurnWaiter } from '../src/http/turn-follower.js';
import type { Ingress } from '../src/ingress.js';
import type { RateLimits } from '../src/limits.js';

/** The gateway's services a ListenContext is made of (one set per ingress process). */
export interface ListenServices {
  ingress: Ingress;
  approvals: ApprovalService;
  access: AccessControl;
  commands: ConversationCommands;
  limits: RateLimits;
  auth: ApiKeyAuth;
  http: HttpServer;
  store: Store;
  bus: Bus;
  state: ChannelStateStore;
  deliveries: DeliveryStore;
  locks: LockService;
}

/**
 * The narrow context a channel's listener gets, over the gateway's concrete services.
 * receive() runs today's ingress steps in Ingress.receive's order (access, limits, command,
 * approval answer, the durable write, a worker woken), with the options the SDK names; once the
 * ingress pipeline takes these options itself, receive() becomes a call of it.
 */
export function listenContext(s: ListenServices, log: Logger): ListenContext {
  const answerApproval: ListenContext['answerApproval'] = async (code, decision, actor, opts = {}) => {
    const operator = opts.operator === true || s.approvals.isOperator(actor);
    return toAnswer(await s.approvals.answer(code, decision, { ...actor, operator }, opts.scope ? { scope: opts.scope } : {}));
  };

  async function receive(msg: InboundMessage, opts: ReceiveOptions = {}): Promise<ReceiveOutcome> {
    const sender = identityOf(msg);
    if (!opts.authenticated) {
      const v = await s.access.check(sender);
      if (!v.allowed) {
        log.info({ channel: msg.channel }, 'message refused by the access policy');
        return { kind: 'refused', reason: 'access', ...(v.reply ? { reply: v.reply } : {}) };
      }
    }
    if (opts.rateLimit ?? !opts.authenticated) {
      const l = await s.limits.check(sender, msg.conversationKey);
      if (!l.allowed) return { kind: 'refused', reason: 'rate_limit', reply: l.message, retryAfterMs: l.retryAfterMs };
    }
    const cmd = opts.commands === false ? null : parseCommand(msg.text);
    if (cmd) return { kind: 'answered', reply: await s.commands.run(cmd, msg.conversationKey), ok: true, command: cmd };
    const answer = opts.approvalAnswers === false ? null : parseApprovalAnswer(msg.text);
    if (answer) {
      const operator = opts.operator === true || s.approvals.isOperator(sender);
      const r = toAnswer(await s.approvals.answer(answer.code, answer.decision, { ...sender, operator }, answer.scope ? { scope: answer.scope } : {}));
      return { kind: 'answered', reply: r.message, ok: r.ok, approval: { code: answer.code, answer: r } };
    }
    const admitted = await s.ingress.admit(msg, opts.agent ?? 'default');
    if (admitted.kind === 'refused') return { kind: 'refused', reason: 'conversation_full', reply: admitted.reply };
    const { kind: _kind, ...accepted } = admitted;
    const turnId = accepted.duplicate ? ((await s.store.inboxRow(accepted.inboxId))?.turn_id ?? undefined) : undefined;
    const out = { inboxId: accepted.inboxId, conversationId: accepted.conversationId, duplicate: accepted.duplicate, ...(turnId ? { turnId } : {}) };
    try {
      await opts.onAccepted?.(out);
    } finally {
      // Durable already: a worker is woken even when the channel's hook failed.
      await s.ingress.dispatch(accepted);
    }
    return { kind: 'accepted', ...out };
  }

  return {
    receive,
    answerApproval,
    isOperator: (who: Identity) => s.approvals.isOperator(who),
    pendingApprovals: async () => (await s.approvals.pending()).map((a) => ({ code: a.code, channel: a.channel })),
    checkAccess: (who) => s.access.check(who),
    mount: (route) => s.http.route(route.method, route.path, route.handler),
    async authenticate(req, opts = {}) {
      const principal = s.auth.authenticate(req);
      if (!principal) {
        return { ok: false, status: 401, code: 'invalid_api_key', message: s.auth.configured ? 'Incorrect API key provided.' : 'No API keys are configured on this gateway (set SWITCHBOARD_API_KEYS).' };
      }
      if (opts.rateLimit) {
        const l = await s.limits.checkApiKey(principal.id);
        if (!l.allowed) return { ok: false, status: 429, code: 'rate_limit_exceeded', message: l.message, retryAfterMs: l.retryAfterMs };
      }
      return { ok: true, principal };
    },
    follow: (conversationKey) => TurnWaiter.open(s.bus, s.store, conversationTopic(conversationKey)),
    state: s.state,
    deliveries: s.deliveries,
    leases: s.locks,
    log,
  };
}

function summary(a: ApprovalRow): ApprovalSummary {
  return { code: a.code, status: a.status, always: a.always, decidedBy: a.decided_by, decidedAt: a.decided_at ? new Date(a.decided_at) : null };
}

/** The approval service's answer without its row and HTTP status. */
function toAnswer(r: AnswerResult): ApprovalAnswer {
  if (r.ok) return { ok: true, message: r.message, approval: summary(r.approval) };
  return { ok: false, code: r.code, message: r.message, ...(r.approval ? { approval: summary(r.approval) } : {}) };
}
