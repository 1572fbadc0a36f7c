import type { Logger } from 'pino';
import { type Bus, type Topic, topic } from '../../adapters/bus/port.js';
import type { ConversationRepository } from '../../adapters/store/ports/conversations.js';
import {
  type HandoffMessage,
  type HandoffRecord,
  type HandoffRepository,
  type HandoffUrgency,
  SLA_NOTICE_LEASE_MS,
  type TakeResult,
} from '../../adapters/store/ports/handoffs.js';
import { SwitchboardError } from '../../kernel/errors.js';
import type { EventType } from '../../kernel/jobs.js';
import { PeriodicPass } from '../../kernel/periodic-pass.js';
import { CONTROL_TOPIC, type ControlEvent } from '../commands.js';
import type { Metrics } from '../metrics.js';
import { faultPoint } from '../turn/test-fault.js';
import type { TakeoverConfig } from './config.js';
import { handbackNote, handoffRef, NOTICE, operatorMessage, relayText, requestText, slaNote, userMessage } from './text.js';

export type { HandoffRecord, TakeResult };

/** What the console's live view hears (GET /v1/console/handoffs/events): a message of a taken-over time, or a change of state. */
export type HandoffEvent =
  | { type: 'message'; handoff: string; conversation: string; id: number; role: 'user' | 'operator'; author: string; text: string; at: string }
  | { type: 'state'; handoff: string; conversation: string; state: string };

/** One topic for the whole gateway: few events (people typing), every console hears them. */
export const HANDOFF_TOPIC: Topic<HandoffEvent> = topic('handoffs');

/** A conversation as the service needs it. */
export interface HandoffConversation {
  id: string;
  key: string;
  channel: string;
}

export interface HandoffDeps {
  repo: HandoffRepository;
  conversations: Pick<ConversationRepository, 'conversation' | 'conversationByKey'>;
  config: TakeoverConfig;
  log: Logger;
  /** Outbound event webhooks (never throws). */
  emit?: (type: EventType, data: Record<string, unknown>) => void;
  /**
   * Sends text to the conversation's user through its channel's delivery (the delivery queue a
   * turn's reply uses); false when the channel has no way to reach the user unasked (the HTTP API:
   * its users read the conversation's messages).
   */
  deliver?: (conversation: HandoffConversation, text: string, ref: string) => Promise<boolean>;
  /** Posts text to the operators' place (takeover.operatorChannel, else approvals.operatorChannel). */
  notifyOperators?: (text: string) => Promise<void>;
  metrics?: Pick<Metrics, 'handoffs'>;
  /**
   * The console's live view (HANDOFF_TOPIC; a lost event only means the console catches up at its
   * next poll), and the control topic (CONTROL_TOPIC): a takeover stops the conversation's running
   * turn the way /stop and an interrupting message do, in whichever worker process runs it.
   */
  bus?: Pick<Bus, 'publish'>;
  /**
   * Withdraws the pending approvals of the conversation's parked turns and closes those turns
   * without running them again (ApprovalService.withdrawForTakeover): an approval answered later
   * cannot resume a turn that answers the user while an operator holds the conversation.
   */
  withdrawParked?: (conversationId: string, operator: string) => Promise<unknown>;
}

/** A request the service refuses: 404 unknown conversation, 409 already taken / not taken over. */
export class HandoffError extends SwitchboardError {
  constructor(
    readonly code: 'conversation_not_found' | 'already_taken' | 'not_taken_over',
    message: string,
    readonly handoff?: HandoffRecord,
  ) {
    super(message);
    this.name = 'HandoffError';
  }
}

/** Channels whose threads show an operator's own reply to the user: what an operator writes there is not delivered again. */
export const IN_CHANNEL = new Set(['slack', 'discord']);

/**
 * Human takeover (issue #26): an operator takes a conversation over (the console, the CLI, the
 * API, or in the chat's own thread), the agent asks for one (request_handoff), the user's messages
 * go to the operator and the operator's to the user, both in the transcript with who said them;
 * handing back leaves a note the agent's next turn reads. Every change is audited (the store writes
 * its ledger row in the same transaction) and emitted as an event webhook.
 */
export class HandoffService {
  private readonly sweeps: PeriodicPass;

  constructor(private readonly deps: HandoffDeps) {
    this.sweeps = new PeriodicPass(
      () => this.sweepOnce(new Date()),
      deps.config.pollMs,
      (err) => deps.log.warn({ err }, 'the handoff SLA sweep failed; it runs again at the next tick'),
    );
  }

  get repo(): HandoffRepository {
    return this.deps.repo;
  }

  /** A conversation by its internal id or its key. */
  async conversation(ref: string): Promise<HandoffConversation> {
    // A handoff's id names its conversation too (what an operator number copies from a request).
    // So does an open handoff's short reference ("3f9a2c", text.ts handoffRef: an operator number's #3f9a2c).
    const byHandoff = ref.startsWith('ho_')
      ? (await this.deps.repo.get(ref))?.conversationId
      : /^[0-9a-f]{6}$/.test(ref)
        ? (await this.byRef(ref)).conversationId
        : undefined;
    const c = (await this.deps.conversations.conversation(byHandoff ?? ref)) ?? (await this.deps.conversations.conversationByKey(ref));
    if (!c) throw new HandoffError('conversation_not_found', `No conversation '${ref}'.`);
    return { id: c.id, key: c.key, channel: c.channel };
  }

  /**
   * The open handoff with this short reference ("#3f9a2c", text.ts handoffRef), as an operator
   * types it from an operator number. Unknown, or shared by two open handoffs: a HandoffError whose
   * message says so (the operator is told; nothing is done).
   */
  async byRef(ref: string): Promise<HandoffRecord> {
    const r = ref.replace(/^#/, '').toLowerCase();
    const found = (await this.deps.repo.list()).filter((h) => handoffRef(h.id) === r);
    if (found.length === 1) return found[0]!;
    if (found.length > 1) throw new HandoffError('conversation_not_found', `#${r} is ambiguous (${found.length} open handoffs share it): use the console.`);
    throw new HandoffError('conversation_not_found', `No open handoff #${r} (it may have been handed back already).`);
  }

  list(opts: { recent?: number } = {}): Promise<HandoffRecord[]> {
    return this.deps.repo.list(opts);
  }

  /** The agent (request_handoff) asks for a human: a request with the SLA deadline, posted to the operators. */
  async request(
    conversationId: string,
    r: { reason: string | null; urgency: HandoffUrgency; by: string },
  ): Promise<{ handoff: HandoffRecord; created: boolean }> {
    const sla = new Date(Date.now() + this.deps.config.slaMinutes * 60_000);
    const out = await this.deps.repo.request({ conversationId, reason: r.reason, urgency: r.urgency, requestedBy: r.by, slaDeadline: sla });
    if (out.created) {
      this.deps.metrics?.handoffs.inc({ outcome: 'requested' });
      this.emit('handoff.requested', out.handoff);
      await this.tellOperators(requestText(out.handoff));
    }
    return out;
  }

  /** An operator takes the conversation over (its open request, or on their own initiative). */
  async take(conversationRef: string, operator: string): Promise<HandoffRecord> {
    const conv = await this.conversation(conversationRef);
    const r = await this.deps.repo.take(conv.id, operator);
    if (!r.ok) throw new HandoffError('already_taken', `Conversation ${conv.id} is already taken over by ${r.handoff.operator}.`, r.handoff);
    this.deps.metrics?.handoffs.inc({ outcome: 'taken' });
    await this.stopRunningTurn(conv);
    await this.deps.withdrawParked?.(conv.id, operator);
    this.emit('handoff.taken', r.handoff);
    return r.handoff;
  }

  /**
   * An operator's message to the user: in the transcript (who said it), then through the
   * conversation's channel delivery. `inChannel`: written in the chat's own thread (its inbox row
   * dedups a redelivery), which showed it to the user already, so nothing is delivered, unless
   * `shown` is false (an operator's email on the thread that the user was no recipient of).
   */
  async say(
    conversationRef: string,
    operator: string,
    text: string,
    inChannel?: NonNullable<HandoffMessage['inbox']>,
    opts: { shown?: boolean } = {},
  ): Promise<{ handoff: HandoffRecord; messageId: number | null; delivered: boolean; duplicate: boolean }> {
    const conv = await this.conversation(conversationRef);
    const h = await this.deps.repo.open(conv.id);
    if (h?.state !== 'taken') throw new HandoffError('not_taken_over', `Conversation ${conv.id} is not taken over; take it first.`, h);
    const r = await this.deps.repo.record(h.id, conv.id, {
      role: 'operator',
      content: operatorMessage(h.id, operator, text),
      ...(inChannel ? { inbox: inChannel } : {}),
    });
    if (r.closed) throw new HandoffError('not_taken_over', `Conversation ${conv.id} was handed back; take it again first.`);
    if (!r.duplicate && r.messageId !== null)
      this.live({
        type: 'message',
        handoff: h.id,
        conversation: conv.id,
        id: r.messageId,
        role: 'operator',
        author: operator,
        text,
        at: new Date().toISOString(),
      });
    let delivered = false;
    const shown = opts.shown ?? inChannel !== undefined;
    if (!shown && !r.duplicate && this.deps.deliver) delivered = await this.deps.deliver(conv, text, `${h.id}:${r.messageId}`);
    return { handoff: h, messageId: r.messageId, delivered, duplicate: r.duplicate };
  }

  /** Back to the agent: the note goes into the transcript for its next turn. */
  async handback(conversationRef: string, by: string, note: string | null): Promise<HandoffRecord> {
    const conv = await this.conversation(conversationRef);
    const r = await this.deps.repo.handback(conv.id, by, note, (h) => handbackNote(h, by, note));
    if (!r.ok) throw new HandoffError('not_taken_over', `Conversation ${conv.id} is not taken over.`);
    this.deps.metrics?.handoffs.inc({ outcome: 'returned' });
    this.emit('handoff.returned', { ...r.handoff, returnedBy: by });
    return r.handoff;
  }

  /**
   * A user's message while the conversation is taken over or waits for one: recorded (inbox row and
   * transcript together, so a redelivery finds it), passed on to the operators. No turn is woken.
   */
  async relayUser(
    handoff: { id: string; state: 'requested' | 'taken'; conversationId: string },
    conv: { key: string; channel: string },
    author: string,
    text: string,
    inbox: NonNullable<HandoffMessage['inbox']>,
  ): Promise<{ duplicate: boolean; first: boolean; closed?: boolean }> {
    const r = await this.deps.repo.record(handoff.id, handoff.conversationId, { role: 'user', content: userMessage(handoff.id, author, text), inbox });
    // Handed back in the meantime: nothing was written; the caller gives the message to the agent.
    if (r.closed) return r;
    if (!r.duplicate && r.messageId !== null)
      this.live({
        type: 'message',
        handoff: handoff.id,
        conversation: handoff.conversationId,
        id: r.messageId,
        role: 'user',
        author,
        text,
        at: new Date().toISOString(),
      });
    // A thread on Slack or Discord shows the operator the user's message where they answer; elsewhere it is posted to them.
    if (!r.duplicate && !IN_CHANNEL.has(conv.channel)) await this.tellOperators(relayText(handoff, conv, author, text));
    return r;
  }

  /** The SLA sweep, every takeover.pollMs on every worker: each due request fires once (the store's claim). */
  start(): void {
    this.sweeps.start();
  }

  stop(): Promise<void> {
    return this.sweeps.stop();
  }

  /** One pass of the SLA sweep: never throws. */
  sweep(): Promise<void> {
    return this.sweeps.run();
  }

  private async sweepOnce(now: Date): Promise<void> {
    const resume = this.deps.config.onSlaExpiry === 'resume';
    const fired = await this.deps.repo.expireDue(now, resume, (h) => slaNote(h, resume));
    for (const h of fired) {
      this.deps.metrics?.handoffs.inc({ outcome: 'expired' });
      this.deps.log.info({ handoff: h.id, conversation: h.conversationId, resume }, 'no operator took the request for a human within its SLA');
      this.emit('handoff.expired', { ...h, resumed: resume });
      faultPoint('sla-fired');
      await this.tellSlaPassed(h, resume);
      if (!resume) await this.tellOperators(`Still waiting for an operator (SLA passed): ${requestText(h)}`);
    }
    // Notices a worker fired and did not queue (it died in between): past their lease, sent from here.
    const orphaned = await this.deps.repo.claimUnsentSlaNotices(now, new Date(now.getTime() + SLA_NOTICE_LEASE_MS));
    for (const h of orphaned) {
      this.deps.log.info({ handoff: h.id, conversation: h.conversationId }, 'sending the SLA notice of a request whose worker did not send it');
      // Expired: the agent answers again. Still requested: it waits. Taken or handed back since: the notice is stale.
      if (h.state === 'expired' || h.state === 'requested') await this.tellSlaPassed(h, h.state === 'expired');
      else await this.deps.repo.slaNoticeSent(h.id);
    }
  }

  /**
   * The user's notice that nobody took their request in time, through the delivery queue (durable,
   * retried, dead-lettered), then marked sent. Not queued (the queue refused): it stays leased, and a
   * sweep past the lease sends it; queued twice (a crash between the two), the delivery's row
   * ("op_<handoff>:sla", one per target) makes the second an edit of the first, not a second message.
   */
  private async tellSlaPassed(h: HandoffRecord, resume: boolean): Promise<void> {
    const conv = { id: h.conversationId, key: h.conversationKey, channel: h.channel };
    try {
      await this.deps.deliver?.(conv, resume ? NOTICE.slaResume : NOTICE.slaWait, `${h.id}:sla`);
      faultPoint('sla-notice-queued');
      await this.deps.repo.slaNoticeSent(h.id);
    } catch (err) {
      this.deps.log.warn({ err, handoff: h.id }, 'could not queue the SLA notice to the user; a later sweep sends it (the transcript has the note)');
    }
  }

  /**
   * A turn already running when the operator took over is aborted (the worker running it listens
   * on CONTROL_TOPIC): it posts no answer after the takeover; what it had streamed stays. Every
   * path that takes over (API, CLI, console, in-channel, an operator number, accepting a request)
   * comes through take(). A lost stop only means that turn finishes its answer.
   */
  private async stopRunningTurn(conv: HandoffConversation): Promise<void> {
    const stop: ControlEvent = { type: 'stop', conversationKey: conv.key, reason: 'taken over by an operator' };
    await this.deps.bus
      ?.publish(CONTROL_TOPIC, stop)
      .catch((err: unknown) => this.deps.log.warn({ err, conversation: conv.id }, 'could not publish the stop of the running turn; it finishes its answer'));
  }

  private async tellOperators(text: string): Promise<void> {
    if (!this.deps.notifyOperators) return;
    await this.deps.notifyOperators(text).catch((err: unknown) => this.deps.log.warn({ err }, 'could not post to the operators channel'));
  }

  private live(e: HandoffEvent): void {
    this.deps.bus
      ?.publish(HANDOFF_TOPIC, e)
      .catch((err: unknown) => this.deps.log.debug({ err }, 'could not publish a handoff event; consoles catch up at their next poll'));
  }

  /** Metadata only: the reason and messages stay out of the event (a subscriber can read the conversation with an operator key). */
  private emit(type: EventType, h: HandoffRecord & { resumed?: boolean }): void {
    this.live({ type: 'state', handoff: h.id, conversation: h.conversationId, state: h.state });
    this.deps.emit?.(type, {
      handoff: h.id,
      conversation: h.conversationId,
      conversationKey: h.conversationKey,
      channel: h.channel,
      state: h.state,
      urgency: h.urgency,
      requestedBy: h.requestedBy,
      operator: h.operator,
      ...(h.returnedBy ? { returnedBy: h.returnedBy } : {}),
      ...(h.resumed !== undefined ? { resumed: h.resumed } : {}),
      ...(h.slaDeadline ? { slaDeadline: h.slaDeadline } : {}),
    });
  }
}
