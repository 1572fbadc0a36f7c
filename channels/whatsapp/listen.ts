import type { Logger } from 'pino';
import { conversationKey, type InboundMessage } from '../../kernel/envelope.js';
import type { ChannelListener, ListenContext, RouteContext } from '../../src/channel/index.js';
import { type FormParams, param, signedUrl } from '../twilio/signature.js';
import { isUndelivered, parseStatusCallback, recordStatus } from '../twilio/status.js';
import { guardTwilioWebhook } from '../twilio/webhook-guard.js';
import type { WhatsAppConfig } from './config.js';
import { inboundMedia } from './media.js';
import { noteInbound } from './window.js';

const ADDRESS = /^whatsapp:\+[1-9]\d{1,14}$/;
/** Twilio's error for a free-form message outside the customer-service window. */
const OUTSIDE_WINDOW = '63016';

/**
 * The ingress side: one webhook route. Inbound messages are verified (X-Twilio-Signature over the
 * public URL, or a webhook SharedKey), deduplicated by MessageSid (the inbox's external id), their
 * time noted (the 24-hour window), their images fetched, and answered at once with TwiML; the
 * agent's answer goes out later through the deliverer. A quick-reply button's ButtonPayload
 * ("YES K7Q4P") counts as what the person typed: approvals by button are approvals by code.
 */
export class WhatsAppListener implements ChannelListener {
  private ctx?: ListenContext;
  private log?: Logger;
  private started = false;

  constructor(private readonly cfg: WhatsAppConfig) {}

  async start(ctx: ListenContext): Promise<void> {
    this.ctx = ctx;
    this.log = ctx.log;
    ctx.mount({ method: 'POST', path: this.cfg.inboundPath, handler: (r) => this.guard(r, (p) => this.inbound(p)) });
    ctx.mount({ method: 'POST', path: this.cfg.statusPath, handler: (r) => this.guard(r, (p, url) => this.status(p, url)) });
    this.started = true;
    ctx.log.info(
      {
        inbound: signedUrl(this.cfg.publicUrl, this.cfg.inboundPath),
        status: this.cfg.statusCallbacks ? signedUrl(this.cfg.publicUrl, this.cfg.statusPath) : undefined,
      },
      'whatsapp webhooks ready',
    );
  }

  async close(): Promise<void> {
    this.started = false;
  }

  health(): { ok: boolean; message?: string } {
    return this.started ? { ok: true } : { ok: false, message: 'whatsapp webhook not registered' };
  }

  /** Body, signature and account checks shared by both routes (channels/twilio/webhook-guard.ts). */
  private guard(r: RouteContext, handle: (p: FormParams, url: URL) => Promise<string | null>): Promise<void> {
    return guardTwilioWebhook(r, this.cfg, 'whatsapp', this.log!, handle);
  }

  /**
   * A status callback (the StatusCallback the deliverer set, ?t=<turn>): recorded on the row
   * `status:<MessageSid>`; a message Twilio failed after accepting it (failed/undelivered, with its
   * ErrorCode: 63016 outside the 24-hour window, 63024 not a WhatsApp user...) marks the turn's
   * delivery row for that address `failed:<code>` / `undelivered:<code>`.
   */
  private async status(p: FormParams, url: URL): Promise<null> {
    const cb = parseStatusCallback(p, url);
    if (!cb) return null;
    const { sid, status, to, errorCode, turn } = cb;
    const deliveries = this.ctx!.deliveries;
    await recordStatus(deliveries, 'whatsapp', turn, sid, status, { ...(to ? { to } : {}), ...(errorCode ? { errorCode } : {}) });
    if (!isUndelivered(status)) return null;
    this.log!.warn(
      { sid, status, errorCode, turn },
      errorCode === OUTSIDE_WINDOW
        ? 'whatsapp: Twilio failed the message: outside the 24-hour customer-service window (63016); only a template (outsideWindowTemplate) reaches this person until they write again'
        : 'whatsapp: Twilio did not deliver the message',
    );
    const row = to && turn !== 'status' ? await deliveries.get(turn, 'whatsapp', to) : undefined;
    // Only a reply recorded as sent is marked (a later callback of another part finds it marked already).
    if (row && to && row.state.startsWith('sent'))
      await deliveries.record(turn, 'whatsapp', to, { platformMessageId: sid, state: `${status}:${errorCode ?? 'unknown'}` });
    return null;
  }

  private async inbound(p: FormParams): Promise<string | null> {
    const ctx = this.ctx!;
    const log = this.log!;
    const sid = param(p, 'MessageSid') ?? param(p, 'SmsMessageSid');
    const from = param(p, 'From');
    const to = param(p, 'To');
    if (!sid || !from || !to || !ADDRESS.test(from) || !ADDRESS.test(to)) {
      // A status callback or an SMS posted here by mistake: nothing to answer.
      log.warn({ sid }, 'whatsapp: inbound webhook without MessageSid or whatsapp: From/To');
      return null;
    }
    const now = new Date();
    // The window opens with every inbound message, whatever becomes of it.
    await noteInbound(ctx.state, from, now).catch((err: unknown) => log.warn({ err }, 'whatsapp: could not note the inbound time'));
    const button = param(p, 'ButtonPayload')?.trim();
    const typed = param(p, 'Body') ?? '';
    const media = await inboundMedia(p, this.cfg, log);
    const text = [button || typed, ...media.notes].filter(Boolean).join('\n');
    const profile = param(p, 'ProfileName');
    const msg: InboundMessage = {
      channel: 'whatsapp',
      externalId: sid,
      conversationKey: conversationKey({ channel: 'whatsapp', workspace: to, chat: from }),
      sender: { id: from, ...(profile ? { name: profile } : {}) },
      text,
      attachments: media.attachments,
      replyTo: { to: from, from: to },
      receivedAt: now,
    };
    const outcome = await ctx.receive(msg);
    switch (outcome.kind) {
      case 'accepted':
        if (outcome.duplicate) log.info({ sid }, 'whatsapp: duplicate MessageSid; already in the inbox');
        return outcome.notice ?? null;
      case 'refused':
        return outcome.reply ?? null;
      case 'answered':
        // Empty: nothing to tell (a message passed on to the operator who has this conversation).
        return outcome.reply || null;
    }
  }
}
