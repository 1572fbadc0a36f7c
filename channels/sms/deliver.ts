import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
import type { TurnEvent } from '../../kernel/turn-events.js';
import { type ChannelDeliverer, type DeliverContext, ReplyBuffer, type TurnDelivery, type TurnTarget, withApprovalsText } from '../../src/channel/index.js';
import type { MessageSender } from './client.js';
import type { SmsConfig } from './config.js';
import { toPlainText } from './format.js';
import { OptOuts } from './optout.js';
import { findCreated } from './reconcile.js';
import type { SmsReplyTo } from './reply-to.js';
import { sendWithRetry, UNSUBSCRIBED } from './send.js';
import { splitMessage } from './split.js';
import type { SmsStore } from './store.js';
import { waitForSent } from './wait-sent.js';

/** Who a turn answers: the reply target the listener wrote, else the sender's number. */
export function replyTarget(target: TurnTarget<SmsReplyTo | null>): { to: string; from?: string } | null {
  const to = target.replyTo?.to ?? target.sender?.id;
  const from = target.replyTo?.from;
  return to ? { to, ...(from ? { from } : {}) } : null;
}

/**
 * The worker side: SMS cannot stream, so a turn's text is buffered and sent
 * when the turn flushes (close()), as plain text split into numbered messages
 * of at most maxMessageChars, one after the other, with its approval requests
 * as codes to answer (YES K7Q4P). Notices go out as they come.
 */
export class SmsDeliverer implements ChannelDeliverer<SmsReplyTo | null> {
  constructor(
    private readonly cfg: SmsConfig,
    private readonly store: SmsStore,
    private readonly sender: () => MessageSender,
  ) {}

  async start(ctx: DeliverContext): Promise<void> {
    this.store.bind(ctx.deliveries);
  }

  /**
   * Texts an operator number (takeover.operatorChannel: requests for a human, users' messages while
   * taken over). `target` is "+1555…" (sent from messagingServiceSid) or "+1555…|+1555…" (to|from).
   * Best effort: not recorded, so a failed part is not retried by the delivery queue.
   */
  async notifyText(target: string, text: string, ctx: DeliverContext): Promise<void> {
    const [to, fromNumber] = target.split('|').map((x) => x.trim());
    const from = this.cfg.messagingServiceSid ? { messagingServiceSid: this.cfg.messagingServiceSid } : fromNumber ? { from: fromNumber } : null;
    if (!to || !from) throw new Error('sms: an operator target is "+1555…|+1555…" (to|from) unless messagingServiceSid is set');
    const log = ctx.log.child({ channel: 'sms' });
    for (const body of splitMessage(text, this.cfg.maxMessageChars)) {
      const opts = { channel: 'sms' as const, attempts: this.cfg.sendAttempts, baseMs: this.cfg.retryBaseMs, maxMs: this.cfg.retryMaxMs, log };
      const r = await sendWithRetry(this.sender(), { to, ...from, body }, opts);
      if (!r.ok) throw new Error(`sms: the operator number refused the message: ${r.failure.message}`);
    }
  }

  open(target: TurnTarget<SmsReplyTo | null>, ctx: DeliverContext): TurnDelivery {
    this.store.bind(ctx.deliveries);
    return new SmsTurnDelivery(this.cfg, this.store, this.sender, target, ctx.log.child({ channel: 'sms', turn: target.turnId }));
  }
}

/**
 * One turn attempt. Every message is recorded (turn id, `<number>#<hash of the
 * text>`): state `sending` before the create (the intent), `sent` with the SID
 * once Twilio accepted it. A retried attempt that produces the same text skips
 * what already went out instead of texting it twice (SMS cannot be edited), and
 * a part left at `sending` (the answer was lost, or the process died) is looked
 * up on Twilio before it is sent again. A turn resumed after an approval, which
 * says something new, sends it.
 */
class SmsTurnDelivery implements TurnDelivery {
  private readonly reply = new ReplyBuffer();
  private closed = false;
  private chain: Promise<void> = Promise.resolve();
  private failure: unknown = null;
  private readonly optOuts: OptOuts;
  private readonly to: { to: string; from?: string } | null;

  constructor(
    private readonly cfg: SmsConfig,
    private readonly store: SmsStore,
    private readonly sender: () => MessageSender,
    private readonly target: TurnTarget<SmsReplyTo | null>,
    private readonly log: Logger,
  ) {
    this.optOuts = new OptOuts(store);
    this.to = replyTarget(target);
  }

  event(e: TurnEvent): void {
    if (this.closed) return;
    try {
      // Nothing of this attempt's text is sent before close(): a reset only changes the buffer.
      for (const c of this.reply.push(e)) if (c.kind === 'notice') this.enqueue(c.text);
    } catch (err) {
      this.log.error({ err }, 'sms: event handling failed');
    }
  }

  async close(): Promise<void> {
    if (this.closed) return this.chain;
    this.closed = true;
    const r = this.reply;
    const said = r.text.trim() ? r.text : r.errors[0] ? `Sorry, something went wrong: ${r.errors[0].message}` : '';
    // No buttons on SMS: an approval request is its text, with the codes to answer.
    this.enqueue(withApprovalsText(said, r.approvals));
    await this.chain;
    if (this.failure) {
      const f = this.failure;
      this.failure = null;
      throw f;
    }
  }

  /** Sends in order: each text waits for the one before. */
  private enqueue(text: string): void {
    this.chain = this.chain.then(async () => {
      if (this.failure) return;
      try {
        await this.deliver(text);
      } catch (err) {
        this.failure = err;
      }
    });
  }

  private async deliver(markdown: string): Promise<void> {
    const plain = toPlainText(markdown);
    if (!plain) return;
    const dest = this.to;
    const { turnId } = this.target;
    const deliveries = this.store.deliveries;
    if (!dest) {
      this.log.error('sms: the turn has no number to answer');
      return;
    }
    const parts = splitMessage(plain, this.cfg.maxMessageChars);
    const statusCallback = this.cfg.statusCallbacks ? `${this.cfg.publicUrl}${this.cfg.statusPath}?t=${encodeURIComponent(turnId)}` : undefined;
    let lastSid: string | null = null;
    for (const [i, body] of parts.entries()) {
      const key = `${dest.to}#${createHash('sha256').update(body).digest('hex').slice(0, 16)}`;
      const prior = await deliveries.get(turnId, 'sms', key);
      if (prior?.state === 'sent') {
        this.log.debug({ part: i + 1, of: parts.length }, 'sms: already sent by an earlier attempt of this turn');
        lastSid = prior.platformMessageId;
        continue;
      }
      if (await this.optOuts.isOptedOut(dest.to)) {
        this.log.info({ sent: i, of: parts.length }, 'sms: the recipient opted out (STOP); not sending');
        await deliveries.record(turnId, 'sms', dest.to, { state: 'suppressed:opted_out', body: plain });
        return;
      }
      const from = this.cfg.messagingServiceSid ? { messagingServiceSid: this.cfg.messagingServiceSid } : dest.from ? { from: dest.from } : null;
      if (!from) {
        this.log.error('sms: no number to send from (the inbound message named none, and no messagingServiceSid is configured)');
        await deliveries.record(turnId, 'sms', dest.to, { state: 'failed:no_sender', body: plain });
        return;
      }
      // The intent, before the create: a later try or attempt that finds it looks the message up first.
      const since = prior?.state === 'sending' ? prior.updatedAt : (await deliveries.record(turnId, 'sms', key, { state: 'sending', body })).updatedAt;
      const msg = { to: dest.to, ...from, body };
      const r = await sendWithRetry(
        this.sender(),
        { ...msg, ...(statusCallback ? { statusCallback } : {}) },
        {
          channel: 'sms',
          attempts: this.cfg.sendAttempts,
          baseMs: this.cfg.retryBaseMs,
          maxMs: this.cfg.retryMaxMs,
          log: this.log,
          lookup: () => findCreated(this.sender(), { ...msg, since: new Date(since) }),
          unknownAtStart: prior?.state === 'sending',
        },
      ).catch(async (err: unknown) => {
        // Retries ran out: record it, and throw from close() so the whole turn is retried later
        // (what was sent is skipped then; the part at `sending` is looked up first).
        await deliveries
          .record(turnId, 'sms', dest.to, { state: 'retrying', body: plain })
          .catch((e: unknown) => this.log.warn({ err: e }, 'sms: could not record the delivery as retrying'));
        throw err;
      });
      if (!r.ok) {
        const code = r.failure.code ?? r.failure.status ?? 'unknown';
        this.log.warn(
          { code: r.failure.code, status: r.failure.status, part: i + 1, of: parts.length },
          `sms: not delivered (permanent failure): ${r.failure.message}`,
        );
        await deliveries.record(turnId, 'sms', key, { state: `failed:${code}`, body });
        await deliveries.record(turnId, 'sms', dest.to, { state: `failed:${code}`, body: plain });
        if (r.failure.code === UNSUBSCRIBED) await this.optOuts.set(dest.to, true, `Twilio error ${UNSUBSCRIBED}`);
        return;
      }
      lastSid = r.sid;
      await deliveries.record(turnId, 'sms', key, { platformMessageId: r.sid, state: 'sent', body });
      if (i < parts.length - 1) await this.awaitLeft(r.sid, i + 1, parts.length);
    }
    await deliveries.record(turnId, 'sms', dest.to, { platformMessageId: lastSid, state: 'sent', body: plain });
  }

  /**
   * Part n+1 goes out only once part n left Twilio (its status callback says sent,
   * delivered or failed), or after waitForSentMs; without status callbacks, once
   * the create answered.
   */
  private async awaitLeft(sid: string, part: number, of: number): Promise<void> {
    if (!this.cfg.statusCallbacks || this.cfg.waitForSentMs === 0) return;
    const status = await waitForSent(this.store.deliveries, this.target.turnId, sid, this.cfg.waitForSentMs);
    if (!status)
      this.log.warn(
        { sid, part, of, waitedMs: this.cfg.waitForSentMs },
        'sms: no status callback for this part yet; sending the next one anyway (order not guaranteed)',
      );
  }
}
