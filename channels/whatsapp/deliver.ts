import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
import type { ApprovalInfo, TurnEvent } from '../../kernel/turn-events.js';
import {
  type ChannelDeliverer,
  ChannelDeliveryError,
  type ChannelState,
  type DeliverContext,
  type Deliveries,
  ReplyBuffer,
  type TurnDelivery,
  type TurnTarget,
  withApprovalsText,
} from '../../src/channel/index.js';
import { toPlainText } from '../twilio/format.js';
import { textOperator } from '../twilio/notify.js';
import { findCreated } from '../twilio/reconcile.js';
import { sendWithRetry } from '../twilio/send.js';
import { splitMessage } from '../twilio/split.js';
import { isUndelivered } from '../twilio/status.js';
import type { WhatsAppMessage, WhatsAppSender } from './client.js';
import type { WhatsAppConfig, WhatsAppTemplate } from './config.js';
import type { WhatsAppReplyTo } from './reply-to.js';
import { insideWindow } from './window.js';

/** A template variable holds at most this much (WhatsApp's limit for a body parameter). */
const MAX_VARIABLE = 1024;

/** A template's variables with {{text}} and {{code}} filled in, as the ContentVariables JSON. */
export function fillVariables(t: WhatsAppTemplate, values: { text?: string; code?: string }): string {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(t.variables))
    out[k] = v
      .replaceAll('{{text}}', values.text ?? '')
      .replaceAll('{{code}}', values.code ?? '')
      // WhatsApp refuses a template parameter with a newline, a tab or more than four spaces in a row.
      .replace(/\s+/g, ' ')
      .trim()
      .slice(0, MAX_VARIABLE);
  return JSON.stringify(out);
}

/**
 * The worker side: WhatsApp through Twilio cannot stream (a message cannot be edited), so a turn's
 * text is buffered and sent when the turn flushes, split at maxMessageChars. Inside the 24-hour
 * customer-service window it goes as free-form text (approvals as "YES CODE" text, or one
 * quick-reply template per approval when approvalTemplate is set); outside it only the
 * outsideWindowTemplate may go, and with none the delivery is refused loudly (logged, recorded
 * as failed:outside_window, dead-lettered and counted): never dropped in silence.
 */
export class WhatsAppDeliverer implements ChannelDeliverer<WhatsAppReplyTo | null> {
  constructor(
    private readonly cfg: WhatsAppConfig,
    private readonly sender: () => WhatsAppSender,
  ) {}

  async start(): Promise<void> {}

  /**
   * takeover.operatorChannel on whatsapp: the target is the operator's address (whatsapp:+E.164),
   * or "to|from" as on sms; texted free-form from the Messaging Service, that `from`, or
   * channels.whatsapp.from: WhatsApp delivers it only inside the operator's own 24-hour window
   * (they wrote to the bot within a day). Best effort, as on sms.
   */
  async notifyText(target: string, text: string, ctx: DeliverContext): Promise<void> {
    const [address, fromAddress] = target.split('|').map((x) => x.trim());
    const wa = (a: string) => (a.startsWith('whatsapp:') ? a : `whatsapp:${a}`);
    const to = wa(address ?? '');
    const sender = fromAddress ? wa(fromAddress) : this.cfg.from;
    const from = this.cfg.messagingServiceSid ? { messagingServiceSid: this.cfg.messagingServiceSid } : sender ? { from: sender } : null;
    await textOperator(this.sender(), to, from, text, {
      channel: 'whatsapp',
      maxMessageChars: this.cfg.maxMessageChars,
      attempts: this.cfg.sendAttempts,
      baseMs: this.cfg.retryBaseMs,
      maxMs: this.cfg.retryMaxMs,
      log: ctx.log.child({ channel: 'whatsapp' }),
    });
  }

  open(target: TurnTarget<WhatsAppReplyTo | null>, ctx: DeliverContext): TurnDelivery {
    return new WhatsAppTurnDelivery(this.cfg, this.sender, target, ctx.deliveries, ctx.state, ctx.log.child({ channel: 'whatsapp', turn: target.turnId }));
  }
}

type Outgoing = { kind: 'text'; text: string } | { kind: 'approval'; approval: ApprovalInfo };

class WhatsAppTurnDelivery implements TurnDelivery {
  private readonly reply = new ReplyBuffer();
  private closed = false;
  private chain: Promise<void> = Promise.resolve();
  private failure: unknown = null;
  private readonly to: string | undefined;
  /** SIDs of this turn's messages already accounted for: a look-up never takes one of them for another. */
  private readonly sids = new Set<string>();

  constructor(
    private readonly cfg: WhatsAppConfig,
    private readonly sender: () => WhatsAppSender,
    private readonly target: TurnTarget<WhatsAppReplyTo | null>,
    private readonly deliveries: Deliveries,
    private readonly state: ChannelState,
    private readonly log: Logger,
  ) {
    this.to = target.replyTo?.to ?? target.sender?.id;
  }

  event(e: TurnEvent): void {
    if (this.closed) return;
    try {
      for (const c of this.reply.push(e)) if (c.kind === 'notice') this.enqueue({ kind: 'text', text: c.text }, true);
    } catch (err) {
      this.log.error({ err }, 'whatsapp: event handling failed');
    }
  }

  async close(): Promise<void> {
    if (this.closed) return this.chain;
    this.closed = true;
    const r = this.reply;
    const said = r.text.trim() ? r.text : r.errors[0] ? `Sorry, something went wrong: ${r.errors[0].message}` : '';
    if (this.cfg.approvalTemplate && r.approvals.length) {
      this.enqueue({ kind: 'text', text: said }, false);
      for (const a of r.approvals) this.enqueue({ kind: 'approval', approval: a }, false);
    } else this.enqueue({ kind: 'text', text: withApprovalsText(said, r.approvals) }, false);
    await this.chain;
    if (this.failure) {
      const f = this.failure;
      this.failure = null;
      throw f;
    }
  }

  private enqueue(o: Outgoing, notice: boolean): void {
    this.chain = this.chain.then(async () => {
      if (this.failure) return;
      try {
        await this.deliver(o, notice);
      } catch (err) {
        this.failure = err;
      }
    });
  }

  private from(): Pick<WhatsAppMessage, 'from' | 'messagingServiceSid'> | null {
    if (this.cfg.messagingServiceSid) return { messagingServiceSid: this.cfg.messagingServiceSid };
    const from = this.cfg.from ?? this.target.replyTo?.from;
    return from ? { from } : null;
  }

  private async deliver(o: Outgoing, notice: boolean): Promise<void> {
    const { turnId } = this.target;
    const plain = o.kind === 'text' ? toPlainText(o.text) : '';
    if (o.kind === 'text' && !plain) return;
    const to = this.to;
    const from = this.from();
    if (!to || !from) {
      this.log.error({ to: Boolean(to) }, 'whatsapp: no address to answer or to send from');
      await this.deliveries.record(turnId, 'whatsapp', to ?? 'unknown', { state: 'failed:no_address', body: plain });
      return;
    }
    // An earlier attempt of this turn answered with the template: that stays the answer, whatever
    // the window says now (the person may have written since) and whatever the config says now.
    const template = notice ? undefined : await this.deliveries.get(turnId, 'whatsapp', `${to}#template`);
    if (template) return this.resumeTemplate(to, from, template);
    if (!(await insideWindow(this.state, to, this.cfg.sessionWindowMs))) {
      if (notice) {
        this.log.info('whatsapp: a notice outside the 24-hour window is not sent (only a template could be)');
        return;
      }
      return this.outsideWindow(to, from, o.kind === 'text' ? plain : withApprovalsText('', [o.approval]));
    }
    if (o.kind === 'approval') {
      const t = this.cfg.approvalTemplate!;
      const text = withApprovalsText('', [o.approval]);
      await this.send(
        `${to}#approval:${o.approval.code}`,
        { to, ...from, contentSid: t.contentSid, contentVariables: fillVariables(t, { text, code: o.approval.code }) },
        text,
      );
      return;
    }
    const parts = splitMessage(plain, this.cfg.maxMessageChars);
    const sids: string[] = [];
    for (const body of parts) {
      const sid = await this.send(`${to}#${createHash('sha256').update(body).digest('hex').slice(0, 16)}`, { to, ...from, body }, body);
      if (sid) sids.push(sid);
    }
    await this.deliveries.record(turnId, 'whatsapp', to, { platformMessageId: sids.at(-1) ?? null, state: 'sent', body: plain });
    await this.failedMeanwhile(to, sids);
  }

  /**
   * A status callback that said failed/undelivered before the row above was written (the listener
   * marks only a row that reads sent): it is marked here. One of the two always sees the other.
   */
  private async failedMeanwhile(to: string, sids: string[]): Promise<void> {
    if (!this.cfg.statusCallbacks) return;
    for (const sid of sids) {
      const s = await this.deliveries.get(this.target.turnId, 'whatsapp', `status:${sid}`);
      if (!s || !isUndelivered(s.state)) continue;
      const code = (JSON.parse(s.body ?? '{}') as { errorCode?: string }).errorCode ?? 'unknown';
      await this.deliveries.record(this.target.turnId, 'whatsapp', to, { platformMessageId: sid, state: `${s.state}:${code}` });
      return;
    }
  }

  /** The person wrote more than sessionWindowHours ago: only a template may reach them. */
  private async outsideWindow(to: string, from: Pick<WhatsAppMessage, 'from' | 'messagingServiceSid'>, text: string): Promise<void> {
    const { turnId } = this.target;
    const t = this.cfg.outsideWindowTemplate;
    if (!t) {
      const message =
        'whatsapp: the reply is outside the 24-hour customer-service window and no template fits (set channels.whatsapp.outsideWindowTemplate); not sent';
      this.log.error({ to }, message);
      await this.deliveries.record(turnId, 'whatsapp', to, { state: 'failed:outside_window', body: text });
      throw new ChannelDeliveryError(message, { retryable: false, platformCode: 'outside_window' });
    }
    this.log.warn({ contentSid: t.contentSid }, 'whatsapp: outside the 24-hour window; sending the outsideWindowTemplate instead of the reply');
    const sent: SentTemplate = { contentSid: t.contentSid, contentVariables: JSON.parse(fillVariables(t, { text })) as Record<string, string> };
    // The summary row says so before the create: a later attempt reads the reply it stands for from here.
    await this.deliveries.record(turnId, 'whatsapp', to, { state: 'sending:template', body: JSON.stringify({ ...sent, reply: text }) });
    await this.sendTemplate(to, from, sent, text);
  }

  /** A later attempt of a turn answered by the template: the message recorded, sent at most once. */
  private async resumeTemplate(to: string, from: Pick<WhatsAppMessage, 'from' | 'messagingServiceSid'>, row: DeliveryRow): Promise<void> {
    if (row.state === 'sent') {
      if (row.platformMessageId) this.sids.add(row.platformMessageId);
      return;
    }
    const sent = parseSentTemplate(row.body);
    if (!sent) {
      this.log.error({ state: row.state }, 'whatsapp: the recorded template message cannot be read; not sending it again');
      return;
    }
    const summary = await this.deliveries.get(this.target.turnId, 'whatsapp', to);
    await this.sendTemplate(to, from, sent, replyOf(summary?.body ?? null));
  }

  private async sendTemplate(to: string, from: Pick<WhatsAppMessage, 'from' | 'messagingServiceSid'>, sent: SentTemplate, reply: string): Promise<void> {
    const sid = await this.send(
      `${to}#template`,
      { to, ...from, contentSid: sent.contentSid, contentVariables: JSON.stringify(sent.contentVariables) },
      JSON.stringify(sent),
    ).catch(async (err: unknown) => {
      // Twilio refused the template (a wrong ContentSid, 63016 on an unapproved one...): the row says so.
      if (err instanceof ChannelDeliveryError)
        await this.deliveries.record(this.target.turnId, 'whatsapp', to, {
          state: `failed:${err.platformCode ?? 'unknown'}`,
          body: JSON.stringify({ ...sent, reply }),
        });
      throw err;
    });
    // The row shows what went (the template and its variables), and the reply it stood for.
    await this.deliveries.record(this.target.turnId, 'whatsapp', to, {
      platformMessageId: sid,
      state: 'sent:template',
      body: JSON.stringify({ ...sent, reply }),
    });
    if (sid) await this.failedMeanwhile(to, [sid]);
  }

  /**
   * One message, recorded: `sending` (the intent, with what is sent) before the create, `sent` with
   * the SID after. A retried attempt of the turn skips what already went out; one that finds
   * `sending` (the answer was lost, or the process died) looks the message up on Twilio before it
   * sends again (channels/twilio/reconcile.ts): Twilio has no idempotency key. Returns the SID.
   */
  private async send(key: string, msg: WhatsAppMessage, body: string): Promise<string | null> {
    const { turnId } = this.target;
    const prior = await this.deliveries.get(turnId, 'whatsapp', key);
    if (prior?.state === 'sent') {
      if (prior.platformMessageId) this.sids.add(prior.platformMessageId);
      return prior.platformMessageId;
    }
    const since = prior?.state === 'sending' ? prior.updatedAt : (await this.deliveries.record(turnId, 'whatsapp', key, { state: 'sending', body })).updatedAt;
    const intent = {
      to: msg.to,
      ...(msg.from ? { from: msg.from } : {}),
      ...(msg.messagingServiceSid ? { messagingServiceSid: msg.messagingServiceSid } : {}),
      // A template's text is rendered by Twilio: matched by address and time, not by body.
      ...(msg.body !== undefined ? { body: msg.body } : {}),
      since: new Date(since),
      known: this.sids,
    };
    const statusCallback = this.cfg.statusCallbacks ? `${this.cfg.publicUrl}${this.cfg.statusPath}?t=${encodeURIComponent(turnId)}` : undefined;
    const r = await sendWithRetry(
      this.sender(),
      { ...msg, ...(statusCallback ? { statusCallback } : {}) },
      {
        channel: 'whatsapp',
        attempts: this.cfg.sendAttempts,
        baseMs: this.cfg.retryBaseMs,
        maxMs: this.cfg.retryMaxMs,
        log: this.log,
        lookup: () => findCreated(this.sender(), intent),
        unknownAtStart: prior?.state === 'sending',
      },
    );
    if (!r.ok) {
      const code = r.failure.code ?? r.failure.status ?? 'unknown';
      this.log.warn({ code: r.failure.code, status: r.failure.status }, `whatsapp: not delivered (permanent failure): ${r.failure.message}`);
      await this.deliveries.record(turnId, 'whatsapp', key, { state: `failed:${code}`, body });
      throw new ChannelDeliveryError(`whatsapp: Twilio refused the message: ${r.failure.message}`, { retryable: false, platformCode: String(code) });
    }
    this.sids.add(r.sid);
    await this.deliveries.record(turnId, 'whatsapp', key, { platformMessageId: r.sid, state: 'sent', body });
    return r.sid;
  }
}

/** What went out instead of a reply outside the window: the template and its filled variables. */
interface SentTemplate {
  contentSid: string;
  contentVariables: Record<string, string>;
}

type DeliveryRow = NonNullable<Awaited<ReturnType<Deliveries['get']>>>;

/** The reply a template stood for, from the summary row. */
function replyOf(body: string | null): string {
  try {
    const r = (JSON.parse(body ?? '') as { reply?: unknown }).reply;
    return typeof r === 'string' ? r : '';
  } catch {
    return '';
  }
}

function parseSentTemplate(body: string | null): SentTemplate | null {
  try {
    const v = JSON.parse(body ?? '') as Partial<SentTemplate>;
    return typeof v.contentSid === 'string' && v.contentVariables && typeof v.contentVariables === 'object' ? (v as SentTemplate) : null;
  } catch {
    return null;
  }
}
