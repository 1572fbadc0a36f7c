import type { Logger } from 'pino';
import { type Attachment, conversationKey, type InboundMessage } from '../../kernel/envelope.js';
import type { ChannelListener, ListenContext, RouteContext as RequestContext } from '../../src/channel/index.js';
import { parseStatusCallback } from '../twilio/status.js';
import { guardTwilioWebhook } from '../twilio/webhook-guard.js';
import type { SmsConfig } from './config.js';
import { type Keyword, keywordOf, keywordOfOptOutType } from './keywords.js';
import { smsMedia } from './media.js';
import { OptOuts } from './optout.js';
import { type FormParams, param, signedUrl } from './signature.js';
import { StatusLog } from './status.js';
import type { SmsStore } from './store.js';

/**
 * The ingress side: two webhook routes on the gateway's HTTP server. Inbound
 * messages are verified (X-Twilio-Signature over the public URL), deduplicated
 * by MessageSid, handled (keywords, then ctx.receive: access, approval
 * answers, the durable inbox) and answered at once with TwiML, empty or with a
 * short reply; the agent's answer goes out later through the deliverer.
 */
export class SmsListener implements ChannelListener {
  private ctx?: ListenContext;
  private log?: Logger;
  private readonly optOuts: OptOuts;
  private readonly statuses: StatusLog;
  /** MMS images downloaded for the model (./media.ts). */
  private readonly media: ReturnType<typeof smsMedia>;
  private started = false;

  constructor(
    private readonly cfg: SmsConfig,
    private readonly store: SmsStore,
  ) {
    this.optOuts = new OptOuts(store);
    this.statuses = new StatusLog(store);
    this.media = smsMedia(cfg);
  }

  async start(ctx: ListenContext): Promise<void> {
    this.ctx = ctx;
    this.log = ctx.log;
    this.store.bind(ctx.deliveries);
    if (!this.store.available) ctx.log.warn('sms: no delivery store here: STOP/START and status callbacks cannot be recorded');
    ctx.mount({ method: 'POST', path: this.cfg.inboundPath, handler: (r) => this.guard(r, (p) => this.inbound(p)) });
    ctx.mount({ method: 'POST', path: this.cfg.statusPath, handler: (r) => this.guard(r, (p, url) => this.status(p, url)) });
    this.started = true;
    ctx.log.info(
      {
        inbound: signedUrl(this.cfg.publicUrl, this.cfg.inboundPath),
        status: this.cfg.statusCallbacks ? signedUrl(this.cfg.publicUrl, this.cfg.statusPath) : undefined,
      },
      'sms webhooks ready',
    );
  }

  async close(): Promise<void> {
    this.started = false;
    await this.store.close();
  }

  health(): { ok: boolean; message?: string } {
    if (!this.started) return { ok: false, message: 'sms webhooks not registered' };
    if (!this.store.available) return { ok: false, message: 'no store for opt-outs' };
    return { ok: true };
  }

  /** Body, signature and account checks shared by both routes (channels/twilio/webhook-guard.ts). */
  private guard(r: RequestContext, handle: (p: FormParams, url: URL) => Promise<string | null>): Promise<void> {
    return guardTwilioWebhook(r, this.cfg, 'sms', this.log!, handle);
  }

  private async inbound(p: FormParams): Promise<string | null> {
    const log = this.log!;
    const sid = param(p, 'MessageSid') ?? param(p, 'SmsMessageSid');
    const from = param(p, 'From');
    const to = param(p, 'To');
    if (!sid || !from || !to) {
      log.warn('sms: inbound webhook without MessageSid, From or To');
      return null;
    }
    // Twilio signs no timestamp: a replayed or retried request is recognized by its MessageSid,
    // the message's external id, and the ingress answers it with its first outcome (nothing done twice).
    return this.handleMessage(p, sid, from, to);
  }

  private async handleMessage(p: FormParams, sid: string, from: string, to: string): Promise<string | null> {
    const ctx = this.ctx!;
    const log = this.log!;
    const text = param(p, 'Body') ?? '';
    // Twilio's OptOutType (Advanced Opt-Out, localized keywords) wins over our own matching.
    const optOutType = param(p, 'OptOutType');
    const twilioSays = keywordOfOptOutType(optOutType);
    if (optOutType && !twilioSays) log.warn({ sid, optOutType }, 'sms: unknown OptOutType; matching the keywords ourselves');
    const keyword = twilioSays ?? keywordOf(text);
    if (keyword)
      return this.keyword(keyword, from, sid, twilioSays ? `OptOutType=${optOutType!.trim().toUpperCase()} (${text.trim()})` : text.trim().toUpperCase());
    if (await this.optOuts.isOptedOut(from)) {
      // It could not be answered: not run through the agent. START lifts the opt-out.
      log.info({ sid }, 'sms: message from an opted-out number dropped (it must send START first)');
      return null;
    }
    const msg: InboundMessage = {
      channel: 'sms',
      externalId: sid,
      conversationKey: conversationKey({ channel: 'sms', workspace: to, chat: from }),
      sender: { id: from },
      text,
      attachments: await this.media(attachments(p), ctx.maxImageBytes),
      replyTo: { to: from, from: to },
      receivedAt: new Date(),
    };
    const outcome = await ctx.receive(msg);
    switch (outcome.kind) {
      case 'accepted':
        if (outcome.duplicate) log.info({ sid }, 'sms: duplicate MessageSid; already in the inbox');
        // The TwiML reply: the conversation waits for an approval (said at once; the answer follows).
        return outcome.notice ?? null;
      case 'refused':
        return outcome.reply ?? null;
      case 'answered':
        // Empty: nothing to tell (a message passed on to the operator who has this conversation).
        return outcome.reply || null;
    }
  }

  /**
   * STOP/START/HELP: the opt-out state is recorded whoever answers; the reply is ours only
   * with keywordReplies 'gateway' (by default Twilio sends its own, and a second one would
   * reach the person too).
   */
  private async keyword(keyword: Keyword, from: string, sid: string, source: string): Promise<string | null> {
    const log = this.log!;
    const ours = this.cfg.keywordReplies === 'gateway';
    if (keyword === 'stop') {
      await this.optOuts.set(from, true, source);
      log.info({ sid, source }, 'sms: number opted out (STOP)');
      return ours ? this.cfg.stopReply || null : null;
    }
    if (keyword === 'start') {
      await this.optOuts.set(from, false, source);
      log.info({ sid, source }, 'sms: number opted in again (START)');
      return ours ? this.cfg.startReply || null : null;
    }
    return ours ? this.cfg.helpText || null : null;
  }

  private async status(p: FormParams, url: URL): Promise<null> {
    const cb = parseStatusCallback(p, url);
    if (!cb) return null;
    const { sid, status, to, errorCode, turn } = cb;
    await this.statuses.record(turn, sid, status, { ...(to ? { to } : {}), ...(errorCode ? { errorCode } : {}) });
    if (errorCode === '21610' && to) await this.optOuts.set(to, true, 'Twilio error 21610 (status callback)');
    if (errorCode) this.log!.warn({ sid, status, errorCode }, 'sms: message not delivered');
    return null;
  }
}

function attachments(p: FormParams): Attachment[] {
  const n = Math.min(Number(param(p, 'NumMedia') ?? 0) || 0, 10);
  const out: Attachment[] = [];
  for (let i = 0; i < n; i++) {
    const url = param(p, `MediaUrl${i}`);
    const contentType = param(p, `MediaContentType${i}`);
    out.push({ name: `media-${i}`, ...(contentType ? { contentType } : {}), ...(url ? { url } : {}) });
  }
  return out;
}
