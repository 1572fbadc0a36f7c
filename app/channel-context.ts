import type { Logger } from 'pino';
import type { Bus } from '../adapters/bus/port.js';
import type { LockService } from '../adapters/lock/port.js';
import type { ApprovalRecord } from '../adapters/store/approvals.js';
import type { ChannelStateStore } from '../adapters/store/channel-state.js';
import type { DeliveryStore } from '../adapters/store/deliveries.js';
import type { Store } from '../adapters/store/store.js';
import type { InboundMessage } from '../kernel/envelope.js';
import type { Identity } from '../kernel/identity.js';
import type { AccessControl } from '../src/access.js';
import type { AnswerResult, ApprovalService } from '../src/approvals/service.js';
import type { ApprovalAnswer, ApprovalSummary, ListenContext, ReceiveOptions, ReceiveOutcome } from '../src/channel/index.js';
import type { ConversationCommands } from '../src/commands.js';
import { conversationTopic } from '../src/event-publisher.js';
import type { ApiKeyAuth } from '../src/http/auth.js';
import type { HttpServer } from '../src/http/server.js';
import { TurnWaiter } from '../src/http/turn-follower.js';
import type { RoomManners } from '../src/ingress/room-manners.js';
import type { Ingress } from '../src/ingress.js';
import type { RateLimits } from '../src/limits.js';
import type { WorkerMonitor } from '../src/worker-heartbeat.js';

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
  workers: WorkerMonitor;
  manners: RoomManners;
  /** Counts a message a channel chose not to hand on (switchboard_messages_dropped_total). */
  dropped: (channel: string, reason: string) => void;
  /** attachments.maxImageBytes. */
  maxImageBytes?: number;
}

/**
 * The narrow context a channel's listener gets, over the gateway's concrete services.
 * receive() runs today's ingress steps in Ingress.receive's order (access, limits, command,
 * approval answer, the durable write, a worker woken), with the options the SDK names; once the
 * ingress pipeline takes these options itself, receive() becomes a call of it.
 */
export function listenContext(s: ListenServices, log: Logger, channel: string): ListenContext {
  const answerApproval: ListenContext['answerApproval'] = async (code, decision, actor, opts = {}) => {
    const operator = opts.operator === true || s.approvals.isOperator(actor);
    return toAnswer(await s.approvals.answer(code, decision, { ...actor, operator }, opts.scope ? { scope: opts.scope } : {}));
  };

  // The ingress pipeline (src/ingress/) with the SDK's options; its outcome in the SDK's words.
  async function receive(msg: InboundMessage, opts: ReceiveOptions = {}): Promise<ReceiveOutcome> {
    const withTurn = async (a: { inboxId: number; conversationId: string; duplicate: boolean; notice?: string }) => {
      const turnId = a.duplicate ? ((await s.store.inboxRow(a.inboxId))?.turnId ?? undefined) : undefined;
      return {
        inboxId: a.inboxId,
        conversationId: a.conversationId,
        duplicate: a.duplicate,
        ...(turnId ? { turnId } : {}),
        ...(a.notice ? { notice: a.notice } : {}),
      };
    };
    const { onAccepted, ...flags } = opts;
    let accepted: Awaited<ReturnType<typeof withTurn>> | undefined;
    const out = await s.ingress.receive(msg, {
      ...flags,
      onAccepted: async (a) => {
        accepted = await withTurn(a);
        await onAccepted?.(accepted);
      },
    });
    const replayed = out.replayed ? { replayed: true as const } : {};
    if (out.kind === 'refused') {
      const reason = out.code === 'rate_limited' ? 'rate_limit' : out.code;
      return {
        kind: 'refused',
        reason,
        ...(out.reply ? { reply: out.reply } : {}),
        ...(out.retryAfterMs !== undefined ? { retryAfterMs: out.retryAfterMs } : {}),
        ...replayed,
      };
    }
    if (out.kind === 'answered') {
      const approval = out.approval
        ? {
            code: out.approval.code,
            answer: out.approval.ok
              ? {
                  ok: true as const,
                  message: out.reply,
                  approval: { code: out.approval.code, status: out.approval.status ?? 'approved', always: false, decidedBy: null, decidedAt: null },
                }
              : { ok: false as const, code: out.approval.error ?? 'refused', message: out.reply },
          }
        : undefined;
      return {
        kind: 'answered',
        reply: out.reply,
        ok: out.ok,
        ...(out.command ? { command: out.command } : {}),
        ...(approval ? { approval } : {}),
        ...(out.handoff ? { handoff: out.handoff } : {}),
        ...replayed,
      };
    }
    return { kind: 'accepted', ...(accepted ?? (await withTurn(out))), ...replayed };
  }

  return {
    receive,
    shouldAnswer: (q) => s.manners.decide(channel, q),
    answerApproval,
    isOperator: (who: Identity) => s.approvals.isOperator(who),
    pendingApprovals: async () => (await s.approvals.pending()).map((a) => ({ code: a.code, channel: a.channel })),
    checkAccess: (who) => s.access.check(who),
    mount: (route) => s.http.route(route.method, route.path, route.handler),
    async authenticate(req, opts = {}) {
      const principal = s.auth.authenticate(req);
      if (!principal) {
        return {
          ok: false,
          status: 401,
          code: 'invalid_api_key',
          message: s.auth.configured ? 'Incorrect API key provided.' : 'No API keys are configured on this gateway (set SWITCHBOARD_API_KEYS).',
        };
      }
      if (opts.rateLimit) {
        const l = await s.limits.checkApiKey(principal.id);
        if (!l.allowed) return { ok: false, status: 429, code: 'rate_limit_exceeded', message: l.message, retryAfterMs: l.retryAfterMs };
      }
      return { ok: true, principal };
    },
    workersAlive: () => s.workers.anyAlive(),
    ...(s.maxImageBytes !== undefined ? { maxImageBytes: s.maxImageBytes } : {}),
    handoffOf: async (conversationKey) => {
      const h = (await s.store.waitingCount(conversationKey)).handoff;
      return h ? { id: h.id, state: h.state } : null;
    },
    conversationExists: async (conversationKey) => (await s.store.conversationByKey(conversationKey)) !== undefined,
    follow: (conversationKey) => TurnWaiter.open(s.bus, s.store, conversationTopic(conversationKey)),
    dropped: (reason) => {
      try {
        s.dropped(channel, reason);
      } catch (err) {
        log.debug({ err, reason }, 'could not count a dropped message');
      }
    },
    state: s.state,
    deliveries: s.deliveries,
    leases: s.locks,
    log,
  };
}

function summary(a: ApprovalRecord): ApprovalSummary {
  return { code: a.code, status: a.status, always: a.always, decidedBy: a.decidedBy, decidedAt: a.decidedAt ? new Date(a.decidedAt) : null };
}

/** The approval service's answer without its row and HTTP status. */
function toAnswer(r: AnswerResult): ApprovalAnswer {
  if (r.ok) return { ok: true, message: r.message, approval: summary(r.approval) };
  return { ok: false, code: r.code, message: r.message, ...(r.approval ? { approval: summary(r.approval) } : {}) };
}
