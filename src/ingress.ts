import type { Logger } from 'pino';
import type { JobQueue } from '../adapters/queue/port.js';
import type { AcceptResult, Store } from '../adapters/store/store.js';
import type { AccessControl } from './access.js';
import { parseApprovalAnswer } from './approvals/parse.js';
import type { ApprovalService } from './approvals/service.js';
import type { Bus } from '../adapters/bus/port.js';
import { CONTROL_TOPIC, parseCommand, type ControlEvent, type ConversationCommands } from './commands.js';
import type { Config } from './config.js';
import { queueModeFor } from '../kernel/queue-modes.js';
import type { RateLimits } from './limits.js';
import type { InboundMessage } from '../kernel/envelope.js';
import { formatIdentity, identityOf } from '../kernel/identity.js';
import type { DrainJob } from '../kernel/jobs.js';
import { SwitchboardError } from '../kernel/errors.js';

/** Refused by a conversation rule (the cap on waiting messages): nothing was written. */
export class ConversationFullError extends SwitchboardError {
  readonly code = 'conversation_full';
  // The cap lifts as the conversation's turns finish.
  override readonly retryable = true;
  constructor(readonly reply: string) {
    super(reply);
    this.name = 'ConversationFullError';
  }
}

/** What the conversation rules made of a message: written (not yet dispatched), or refused with what to tell the sender. */
export type Admission = ({ kind: 'accepted' } & AcceptResult) | { kind: 'refused'; reply: string };

/** What became of an inbound chat message; the channel tells the sender when there is a reply. */
export type IngressOutcome =
  | ({ kind: 'accepted' } & AcceptResult)
  | { kind: 'refused'; reply?: string }
  | { kind: 'answered'; reply: string; ok: boolean };

/**
 * The ingress side of every channel. receive() is the whole pipeline of a chat
 * channel: access policy, then conversation commands (/new, /status, /stop) and
 * approval answers ("YES K7Q4P") are answered directly, then the message is written to the durable inbox (a redelivered
 * event is a no-op) and a drain is enqueued for its conversation. Once the
 * message is accepted it is durable, whatever happens to the queue: if the
 * enqueue fails, the workers' recovery sweep drains the inbox later.
 */
export class Ingress {
  constructor(
    private readonly store: Store,
    private readonly queue: JobQueue<DrainJob>,
    private readonly log: Logger,
    private readonly opts: {
      access?: AccessControl;
      approvals?: ApprovalService;
      commands?: ConversationCommands;
      /** For queue modes and the cap on waiting messages. */
      conversations?: { config: Config; bus: Bus };
      limits?: RateLimits;
      enqueueTimeoutMs?: number;
    } = {},
  ) {}

  async receive(msg: InboundMessage, agent = 'default'): Promise<IngressOutcome> {
    // The sender as a whole identity (channel, workspace, id): access, limits and approvals compare it so.
    const sender = identityOf(msg);
    if (this.opts.access) {
      const v = await this.opts.access.check(sender);
      if (!v.allowed) {
        this.log.info({ channel: msg.channel, sender: formatIdentity(sender) }, 'message refused by the access policy');
        return { kind: 'refused', ...(v.reply ? { reply: v.reply } : {}) };
      }
    }
    if (this.opts.limits) {
      const l = await this.opts.limits.check(sender, msg.conversationKey);
      if (!l.allowed) return { kind: 'refused', reply: l.message };
    }
    const cmd = this.opts.commands ? parseCommand(msg.text) : null;
    if (cmd) return { kind: 'answered', reply: await this.opts.commands!.run(cmd, msg.conversationKey), ok: true };
    const answer = this.opts.approvals ? parseApprovalAnswer(msg.text) : null;
    if (answer) {
      const approvals = this.opts.approvals!;
      const r = await approvals.answer(answer.code, answer.decision, { ...sender, operator: approvals.isOperator(sender) }, answer.scope ? { scope: answer.scope } : {});
      return { kind: 'answered', reply: r.message, ok: r.ok };
    }
    const admitted = await this.admit(msg, agent);
    if (admitted.kind === 'accepted') await this.dispatch(admitted);
    return admitted;
  }

  /**
   * The conversation rules every message passes, whatever its channel (chat,
   * HTTP, MCP, webhooks): beyond the cap on waiting messages it is refused and
   * nothing is written; otherwise the durable write, and in interrupt mode the
   * running turn is told to stop. The caller dispatches.
   */
  async admit(msg: InboundMessage, agent = 'default'): Promise<Admission> {
    const conv = this.opts.conversations;
    if (!conv) return { kind: 'accepted', ...(await this.record(msg, agent)) };
    const w = await this.store.waitingCount(msg.conversationKey);
    if (w.waiting >= conv.config.conversations.maxWaiting) {
      // A redelivery of a message already written is not a new one: it stays a duplicate.
      const known = await this.store.inboxByExternalId(msg.channel, msg.externalId);
      if (known) return { kind: 'accepted', ...known };
      return { kind: 'refused', reply: `Too many messages are already waiting in this conversation (${w.waiting}); this one was dropped. Please wait for my answer.` };
    }
    const accepted = await this.record(msg, agent);
    // interrupt: the running turn stops; the next one answers everything waiting.
    if (!accepted.duplicate && w.running && queueModeFor(conv.config.conversations, msg.channel, w.mode) === 'interrupt') {
      await conv.bus.publish(CONTROL_TOPIC, { type: 'stop', conversationKey: msg.conversationKey, reason: 'interrupted by a new message' } satisfies ControlEvent).catch((err: unknown) => this.log.warn({ err, conversation: msg.conversationKey }, 'could not interrupt the running turn; it finishes, and the next one answers what is waiting'));
    }
    return { kind: 'accepted', ...accepted };
  }

  /** admit() and dispatch, without access checks (the HTTP API, MCP and webhooks authenticate themselves). Throws ConversationFullError when refused. */
  async accept(msg: InboundMessage, agent = 'default'): Promise<AcceptResult> {
    const admitted = await this.admit(msg, agent);
    if (admitted.kind === 'refused') throw new ConversationFullError(admitted.reply);
    const { kind: _kind, ...res } = admitted;
    await this.dispatch(res);
    return res;
  }

  /** Step one of accept(): the durable write. */
  record(msg: InboundMessage, agent = 'default'): Promise<AcceptResult> {
    return this.store.accept(msg, agent);
  }

  /** Step two: wake a worker for the conversation (nothing to do for a duplicate). */
  async dispatch(res: AcceptResult): Promise<void> {
    if (!res.duplicate) await this.enqueue(res.conversationId);
  }

  private async enqueue(conversationId: string): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        this.queue.add({ conversationId }, { dedupKey: conversationId }),
        new Promise((_, reject) => {
          timer = setTimeout(() => reject(new Error('enqueue timed out')), this.opts.enqueueTimeoutMs ?? 3_000);
        }),
      ]);
    } catch (err) {
      this.log.warn({ err, conversation: conversationId }, 'enqueue failed; the recovery sweep will drain this conversation');
    } finally {
      clearTimeout(timer);
    }
  }
}
