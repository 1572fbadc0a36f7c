import type { Api } from 'grammy';
import type { InlineKeyboardMarkup } from 'grammy/types';
import type { Logger } from 'pino';
import type { ApprovalInfo, TurnEvent } from '../../kernel/turn-events.js';
import {
  approvalCard,
  type ChannelDeliverer,
  type DeliverContext,
  deliveriesRecord,
  type EditPlatform,
  type Part,
  PostAndEdit,
  ReplyBuffer,
  type TurnDelivery,
  type TurnTarget,
  TypingIndicator,
} from '../../src/channel/index.js';
import { approvalText, keyboardOf } from './approvals.js';
import { createApi, errorCode, isGone, isNotModified, isParseError, isPermanent } from './client.js';
import type { TelegramSettings } from './config.js';
import { escapeHtml, htmlToPlain, toTelegramHtml } from './format.js';
import type { TelegramReplyTo } from './reply-to.js';

const CHANNEL = 'telegram';
/** Telegram allows 4096 characters of shown text; markdown is split below that, before it becomes HTML. */
export const TELEGRAM_SPLIT = 3_800;
/** "typing…" lasts five seconds on Telegram. */
const TYPING_EVERY_MS = 4_500;
const TYPING_IDLE_MS = 120_000;

const keyboard = (extra: unknown): InlineKeyboardMarkup | undefined =>
  extra && typeof extra === 'object' && !Array.isArray(extra) && 'inline_keyboard' in extra ? (extra as InlineKeyboardMarkup) : undefined;

/**
 * Telegram's side of the post-and-edit engine: sendMessage (the first part replies to the user's
 * message, in its forum topic), editMessageText, deleteMessage, all in HTML. A message Telegram
 * cannot parse ("can't parse entities") is sent again as the plain text it shows, so a reply never
 * fails on its formatting; an edit that changes nothing counts as done.
 */
class TelegramMessages implements EditPlatform {
  constructor(
    private readonly api: Api,
    private readonly target: TelegramReplyTo,
    private readonly log: Logger,
  ) {}

  async post(part: Part): Promise<{ id: string }> {
    const markup = keyboard(part.extra);
    const other = {
      ...(this.target.threadId !== undefined ? { message_thread_id: this.target.threadId } : {}),
      ...(part.index === 0 ? { reply_parameters: { message_id: this.target.messageId, allow_sending_without_reply: true } } : {}),
      ...(markup ? { reply_markup: markup } : {}),
      link_preview_options: { is_disabled: true },
    };
    try {
      const m = await this.api.sendMessage(this.target.chatId, part.content, { ...other, parse_mode: 'HTML' });
      return { id: String(m.message_id) };
    } catch (err) {
      if (!isParseError(err)) throw err;
      this.log.warn({ err: errorCode(err) }, 'telegram refused the formatting; sending plain text');
      const m = await this.api.sendMessage(this.target.chatId, htmlToPlain(part.content), other);
      return { id: String(m.message_id) };
    }
  }

  async edit(id: string, part: Part): Promise<'ok' | 'gone'> {
    const markup = keyboard(part.extra);
    const other = { ...(markup ? { reply_markup: markup } : {}), link_preview_options: { is_disabled: true } };
    try {
      try {
        await this.api.editMessageText(this.target.chatId, Number(id), part.content, { ...other, parse_mode: 'HTML' });
      } catch (err) {
        if (!isParseError(err)) throw err;
        this.log.warn({ err: errorCode(err) }, 'telegram refused the formatting; editing to plain text');
        await this.api.editMessageText(this.target.chatId, Number(id), htmlToPlain(part.content), other);
      }
      return 'ok';
    } catch (err) {
      if (isNotModified(err)) return 'ok';
      if (isGone(err)) return 'gone';
      throw err;
    }
  }

  async remove(id: string): Promise<void> {
    try {
      await this.api.deleteMessage(this.target.chatId, Number(id));
    } catch (err) {
      if (!isGone(err)) throw err;
    }
  }

  permanent(err: unknown): boolean {
    return isPermanent(err);
  }

  code(err: unknown): string {
    return errorCode(err);
  }

  async resumedAfterPark(lastId: string): Promise<void> {
    await this.api.editMessageReplyMarkup(this.target.chatId, Number(lastId), { reply_markup: { inline_keyboard: [] } }).catch((err: unknown) => {
      if (!isNotModified(err) && !isGone(err)) throw err;
    });
  }
}

/** The worker side: one Bot API client (with its per-chat pacing) for every turn of the process. */
export class TelegramDeliverer implements ChannelDeliverer<TelegramReplyTo | null> {
  private api: Api | undefined;

  constructor(private readonly cfg: TelegramSettings) {}

  private client(log: Logger): Api {
    return (this.api ??= createApi(this.cfg, log));
  }

  async start(ctx: DeliverContext): Promise<void> {
    this.client(ctx.log);
  }

  /** approvals.operatorChannel: the request with its buttons in an operators' chat (a chat id). */
  async notifyApproval(target: string, approval: ApprovalInfo, text: string, ctx: DeliverContext): Promise<void> {
    const card = approvalCard(approval);
    await this.client(ctx.log).sendMessage(target, escapeHtml(text).slice(0, 4000), {
      parse_mode: 'HTML',
      ...(keyboardOf([card]) ? { reply_markup: keyboardOf([card])! } : {}),
    });
  }

  open(target: TurnTarget<TelegramReplyTo | null>, ctx: DeliverContext): TurnDelivery {
    return new TelegramTurnDelivery(target, ctx, this.client(ctx.log), this.cfg, ctx.log.child({ channel: CHANNEL, turn: target.turnId }));
  }
}

/**
 * One turn on Telegram: reply to the message, then edit it as the text streams (at most one write
 * per chat per editIntervalMs, 429s waited out as told), continuing in new messages past Telegram's
 * limit; "typing…" while the agent thinks; approval requests as text with an inline keyboard on the
 * last message. A retried attempt finds its messages in the deliveries row.
 */
class TelegramTurnDelivery implements TurnDelivery {
  private readonly reply = new ReplyBuffer();
  private readonly engine: PostAndEdit | null;
  private readonly target: TelegramReplyTo | null;
  private readonly typing: TypingIndicator;

  constructor(
    turn: TurnTarget<TelegramReplyTo | null>,
    ctx: DeliverContext,
    private readonly api: Api,
    cfg: TelegramSettings,
    private readonly log: Logger,
  ) {
    this.target = turn.replyTo ?? null;
    if (!this.target) this.log.warn('telegram turn without a reply target: nothing will be delivered');
    this.engine = this.target
      ? new PostAndEdit(
          new TelegramMessages(api, this.target, log),
          deliveriesRecord(ctx.deliveries, turn.turnId, CHANNEL, `${this.target.chatId}:${this.target.threadId ?? '-'}`, log),
          {
            maxChars: TELEGRAM_SPLIT,
            editIntervalMs: cfg.editIntervalMs,
            deliveryTimeoutMs: cfg.deliveryTimeoutMs,
            placeholder: '…',
            render: (chunk, status) => [toTelegramHtml(chunk), status ? `<i>${escapeHtml(status)}</i>` : ''].filter(Boolean).join('\n\n'),
            log,
            // A stale attempt (its lease overtaken) makes no Telegram call after that (issue #21's fencing).
            ...(ctx.fence ? { fence: ctx.fence } : {}),
          },
          turn.attempt > 1,
        )
      : null;
    this.typing = new TypingIndicator({
      enabled: cfg.typing && !!this.target,
      send: () => this.sendTyping(),
      ...(ctx.fence ? { fence: ctx.fence } : {}),
      everyMs: TYPING_EVERY_MS,
      idleMs: TYPING_IDLE_MS,
    });
    this.typing.set(true);
  }

  event(e: TurnEvent): void {
    try {
      const changes = this.reply.push(e);
      this.typing.event(e, changes);
      if (!changes.length) return;
      this.engine?.show(this.draft());
    } catch (err) {
      this.log.warn({ err }, 'telegram delivery event failed');
    }
  }

  close(): Promise<void> {
    this.typing.close();
    if (!this.engine) return Promise.resolve();
    this.engine.show(this.draft());
    return this.engine.close(this.reply.parked);
  }

  /** The reply in markdown (made HTML per message); the requests under it, their buttons on the last message. */
  private draft() {
    const r = this.reply;
    const text = r.compose({ notice: (t) => `_${t}_`, error: (m) => `⚠️ ${m}` }).trim();
    const cards = r.approvals.map(approvalCard);
    const asks = cards.map(approvalText).join('\n\n');
    const running = r.running;
    const markup = keyboardOf(cards);
    return {
      text: [text, asks].filter(Boolean).join('\n\n'),
      status: running ? `running ${running.name}…` : null,
      ...(markup ? { extra: markup } : {}),
      empty: '(no reply)',
    };
  }

  private sendTyping(): void {
    const t = this.target!;
    void this.api
      .sendChatAction(t.chatId, 'typing', t.threadId !== undefined ? { message_thread_id: t.threadId } : {})
      .catch((err: unknown) => this.log.debug({ err: errorCode(err) }, 'typing indicator failed'));
  }
}
