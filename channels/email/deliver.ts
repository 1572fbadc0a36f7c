import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
import { ignoreError } from '../../kernel/errors.js';
import type { TurnEvent } from '../../kernel/turn-events.js';
import { type ChannelDeliverer, type DeliverContext, ReplyBuffer, type TurnDelivery, type TurnTarget, withApprovalsText } from '../../src/channel/index.js';
import { composeReply, type EmailReplyTo, isEmailReplyTo } from './compose.js';
import type { EmailConfig } from './config.js';
import { Mailer, PermanentSmtpError } from './smtp.js';

export const CHANNEL = 'email';

/**
 * Mail cannot be edited, so a turn sends at most one mail per part: its
 * approval request(s) (`ask:<codes>`) and its answer (`reply`). Each part is
 * a DeliveryStore row; a retried or resumed attempt of the turn finds the part
 * already sent and does not send it again. A part whose send was interrupted
 * is sent again with the same Message-ID (receivers fold duplicates by it).
 */
class EmailTurnDelivery implements TurnDelivery {
  private reply = new ReplyBuffer();
  private sending: Promise<void> = Promise.resolve();

  constructor(
    private readonly target: TurnTarget<EmailReplyTo | null>,
    private readonly ctx: DeliverContext,
    private readonly mailer: Mailer,
    private readonly log: Logger,
  ) {}

  event(e: TurnEvent): void {
    this.reply.push(e);
  }

  close(): Promise<void> {
    // Takes what is buffered now; a later close() sends only what came after.
    const r = this.reply;
    this.reply = new ReplyBuffer();
    const said = r.text.trim() ? r.text.trim() : r.errors[0] ? `Sorry, something went wrong: ${r.errors[0].message}` : '';
    // No buttons in mail: a request is its text, with the codes to reply with.
    const body = [withApprovalsText(said, r.approvals), ...r.notices.map((n) => `_${n}_`)].filter(Boolean).join('\n\n');
    const codes = r.approvals.map((a) => a.code);
    const part = codes.length ? `ask:${[...new Set(codes)].sort().join(',')}` : 'reply';
    this.sending = this.sending
      .catch(ignoreError("an earlier part's failure was returned to its caller; the next part goes on"))
      .then(() => (body ? this.send(part, body) : undefined));
    return this.sending;
  }

  private async send(part: string, body: string): Promise<void> {
    const { turnId } = this.target;
    const parent = this.target.replyTo;
    if (!isEmailReplyTo(parent)) {
      this.log.warn({ turn: turnId }, 'no email reply target on the turn; nothing sent');
      return;
    }
    const existing = await this.ctx.deliveries.get(turnId, CHANNEL, part);
    if (existing?.state === 'sent' || existing?.state === 'failed') {
      this.log.info({ turn: turnId, part, attempt: this.target.attempt }, 'this part of the turn was already mailed; not sending it twice');
      return;
    }
    const hint = `${turnId}.${createHash('sha256').update(part).digest('hex').slice(0, 10)}`;
    const messageId = existing?.platformMessageId ?? this.mailer.newMessageId(hint);
    await this.ctx.deliveries.record(turnId, CHANNEL, part, { platformMessageId: messageId, state: 'sending', body });
    const mail = composeReply({ from: this.mailer.from, parent, markdown: body, messageId, tag: `turn=${turnId}` });
    try {
      await this.mailer.send(mail);
    } catch (err) {
      if (err instanceof PermanentSmtpError) {
        // Retrying the turn would be refused the same way.
        this.log.error({ err: err.message, turn: turnId, part }, 'the reply was refused by the SMTP server');
        await this.ctx.deliveries.record(turnId, CHANNEL, part, { state: 'failed' });
        return;
      }
      // Transient and out of attempts: fail the turn so the queue retries it (same Message-ID).
      this.log.warn({ err: (err as Error).message, turn: turnId, part }, 'could not send the reply; the turn will be retried');
      throw err;
    }
    await this.ctx.deliveries.record(turnId, CHANNEL, part, { platformMessageId: messageId, state: 'sent' });
    this.log.debug({ turn: turnId, part, messageId }, 'reply mailed');
  }
}

export class EmailDeliverer implements ChannelDeliverer<EmailReplyTo | null> {
  private mailer?: Mailer;
  private log?: Logger;

  constructor(private readonly cfg: EmailConfig) {}

  async start(ctx: DeliverContext): Promise<void> {
    this.log = ctx.log;
    this.mailer = new Mailer(this.cfg, ctx.log);
  }

  open(target: TurnTarget<EmailReplyTo | null>, ctx: DeliverContext): TurnDelivery {
    if (!this.mailer) this.mailer = new Mailer(this.cfg, ctx.log);
    return new EmailTurnDelivery(target, ctx, this.mailer, (this.log ?? ctx.log).child({ channel: CHANNEL }));
  }

  async close(): Promise<void> {
    this.mailer?.close();
  }
}
