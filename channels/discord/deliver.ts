import { createHash } from 'node:crypto';
import { type APIMessage, DiscordAPIError, type REST, Routes } from 'discord.js';
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
import { approvalContent, approvalRows, cardRows } from './approvals.js';
import { createRest } from './client.js';
import type { DiscordSettings } from './config.js';
import { toDiscordMarkdown } from './format.js';
import type { DiscordReplyTo } from './inbound.js';
import { DISCORD_LIMIT } from './split.js';

const CHANNEL = 'discord';
const TYPING_EVERY_MS = 8_000;
/** A turn whose delivery is never closed (it failed) stops typing after this long without events. */
const TYPING_IDLE_MS = 120_000;
const PLACEHOLDER = '…';
const UNKNOWN_MESSAGE = 10008;

/** The worker side: one REST client (with its rate-limit queues) for every turn of the process. */
export class DiscordDeliverer implements ChannelDeliverer<DiscordReplyTo | null> {
  private rest?: REST;

  constructor(private readonly cfg: DiscordSettings) {}

  async start(): Promise<void> {
    this.rest ??= createRest(this.cfg);
  }

  /** approvals.operatorChannel: the request, with its buttons, in an operators' Discord channel. */
  async notifyApproval(target: string, approval: ApprovalInfo, text: string): Promise<void> {
    this.rest ??= createRest(this.cfg);
    const rule = approval.alwaysPermitted === true && approval.tier !== 'dangerous';
    await this.rest.post(Routes.channelMessages(target), {
      body: { content: text.slice(0, 2000), components: approvalRows([{ code: approval.code, tool: approval.tool, alwaysPermitted: rule }]) },
    });
  }

  async notifyText(target: string, text: string): Promise<void> {
    this.rest ??= createRest(this.cfg);
    // No mentions from relayed text: allowed_mentions parses none.
    await this.rest.post(Routes.channelMessages(target), { body: { content: text.slice(0, 2000), allowed_mentions: { parse: [] } } });
  }

  open(target: TurnTarget<DiscordReplyTo | null>, ctx: DeliverContext): TurnDelivery {
    this.rest ??= createRest(this.cfg);
    return new DiscordTurnDelivery(target, ctx, this.rest, this.cfg, ctx.log.child({ channel: CHANNEL, turn: target.turnId }));
  }

  async close(): Promise<void> {
    this.rest?.clearHashSweeper();
    this.rest?.clearHandlerSweeper();
  }
}

export function readReplyTo(target: TurnTarget<DiscordReplyTo | null>): DiscordReplyTo | null {
  return target.replyTo ?? null;
}

function permanent(err: unknown): boolean {
  return err instanceof DiscordAPIError && err.status >= 400 && err.status < 500 && err.status !== 429;
}

/** Discord's side of the post-and-edit engine: a reply to the user's message, then edits; the nonce keeps a repeated post to one message. */
class DiscordMessages implements EditPlatform {
  constructor(
    private readonly rest: REST,
    private readonly target: DiscordReplyTo,
    private readonly turnId: string,
    private readonly log: Logger,
  ) {}

  async post(part: Part, phase: number, salt: string): Promise<{ id: string; content?: string }> {
    const res = (await this.rest.post(Routes.channelMessages(this.target.channelId), {
      body: {
        content: part.content,
        components: part.extra,
        allowed_mentions: { parse: [] },
        nonce: this.nonce(phase, part.index, salt),
        enforce_nonce: true,
        ...(part.index === 0 ? { message_reference: { message_id: this.target.messageId, fail_if_not_exists: false } } : {}),
      },
    })) as APIMessage;
    // A repeated post (same nonce) answers with the message an earlier attempt made: it may need an edit.
    return { id: res.id, content: res.content };
  }

  async edit(id: string, part: Part): Promise<'ok' | 'gone'> {
    try {
      await this.rest.patch(Routes.channelMessage(this.target.channelId, id), {
        body: { content: part.content, components: part.extra, allowed_mentions: { parse: [] } },
      });
      return 'ok';
    } catch (err) {
      if (!(err instanceof DiscordAPIError && err.code === UNKNOWN_MESSAGE)) throw err;
      this.log.info({ message: id }, 'a reply message was deleted; posting it again');
      return 'gone';
    }
  }

  async remove(id: string): Promise<void> {
    try {
      await this.rest.delete(Routes.channelMessage(this.target.channelId, id));
    } catch (err) {
      if (!(err instanceof DiscordAPIError && err.code === UNKNOWN_MESSAGE)) throw err;
    }
  }

  permanent(err: unknown): boolean {
    return permanent(err);
  }

  code(err: unknown): string {
    return err instanceof DiscordAPIError ? String(err.code) : ((err as Error)?.message ?? String(err));
  }

  /** The decision resumed the turn: the request's buttons go (a decision made over the HTTP API or the CLI left them there). */
  async resumedAfterPark(lastId: string): Promise<void> {
    await this.rest.patch(Routes.channelMessage(this.target.channelId, lastId), { body: { components: [] } });
  }

  /** Discord's enforce_nonce answers a repeated post (same author, same nonce, a few minutes) with the message it already made. */
  private nonce(phase: number, i: number, salt: string): string {
    return createHash('sha256').update(`${this.turnId}:${phase}:${i}${salt}`).digest('base64url').slice(0, 25);
  }
}

/**
 * One turn on Discord: reply to the message, then edit it as the text streams
 * (the SDK's post-and-edit engine: at most one edit per message per
 * editIntervalMs, continuing in new messages past 2000 characters, fences
 * balanced), a typing indicator while the agent thinks, and an approval
 * request as its card text with buttons on the last message. @discordjs/rest
 * waits out 429s under it. A retried attempt finds its messages in the
 * deliveries row (and Discord's enforce_nonce answers a repeated post with the
 * message it already made).
 */
export class DiscordTurnDelivery implements TurnDelivery {
  private readonly reply = new ReplyBuffer();
  private readonly engine: PostAndEdit | null;
  private readonly target: DiscordReplyTo | null;
  private readonly typing: TypingIndicator;

  constructor(
    turn: TurnTarget<DiscordReplyTo | null>,
    ctx: DeliverContext,
    private readonly rest: REST,
    cfg: DiscordSettings,
    private readonly log: Logger,
  ) {
    this.target = readReplyTo(turn);
    if (!this.target) this.log.warn('discord turn without a reply target: nothing will be delivered');
    this.engine = this.target
      ? new PostAndEdit(
          new DiscordMessages(rest, this.target, turn.turnId, log),
          deliveriesRecord(ctx.deliveries, turn.turnId, CHANNEL, this.target.channelId, log),
          {
            maxChars: DISCORD_LIMIT,
            editIntervalMs: cfg.editIntervalMs,
            deliveryTimeoutMs: cfg.deliveryTimeoutMs,
            placeholder: PLACEHOLDER,
            log,
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
      this.log.warn({ err }, 'discord delivery event failed');
    }
  }

  close(): Promise<void> {
    this.typing.close();
    if (!this.engine) return Promise.resolve();
    this.engine.show(this.draft());
    return this.engine.close(this.reply.parked);
  }

  /** The reply in Discord markdown; the approval requests under it, their buttons on the last message. */
  private draft() {
    const r = this.reply;
    const text = toDiscordMarkdown(r.compose({ notice: (t) => `*${t}*`, error: (m) => `⚠️ ${m}` })).trim();
    const cards = r.approvals.map(approvalCard);
    const asks = cards.map(approvalContent).join('\n\n');
    return { text: [text, asks].filter(Boolean).join('\n\n'), extra: cardRows(cards), empty: '(no reply)' };
  }

  // ------------------------------------------------------------------ typing

  private sendTyping(): void {
    void this.rest.post(Routes.channelTyping(this.target!.channelId)).catch((err: unknown) => this.log.debug({ err }, 'typing indicator failed'));
  }
}
