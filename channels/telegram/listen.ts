import { createHash, timingSafeEqual } from 'node:crypto';
import { type Api, GrammyError } from 'grammy';
import type { Message, Update } from 'grammy/types';
import type { Logger } from 'pino';
import type { InboundMessage } from '../../kernel/envelope.js';
import {
  type ChannelListener,
  ConfigError,
  type Lease,
  type ListenContext,
  parseApprovalAnswer,
  type RouteContext,
  sendJson,
} from '../../src/channel/index.js';
import type { BotSelf } from './addressing.js';
import { handleApprovalTap } from './approvals.js';
import { CatchUp, type CatchUpSkip, type DropReason } from './catch-up.js';
import { createApi, errorCode } from './client.js';
import { type TelegramSettings, WEBHOOK_PATH } from './config.js';
import { telegramAttachments } from './files.js';
import { conversationKeyOf, threadOf, toInbound } from './inbound.js';

const ALLOWED_UPDATES = ['message', 'callback_query'] as const;
const COMMANDS = [
  { command: 'new', description: 'Start a fresh conversation' },
  { command: 'status', description: 'Model, usage and pending approvals of this conversation' },
  { command: 'stop', description: 'Stop the answer being written' },
];
const WELCOME = 'Hello! Send me a message and I will answer. Commands: /new starts afresh, /status tells where we are, /stop stops an answer.';

/** Compares two secrets in constant time (their hashes: equal length whatever was sent). */
function sameSecret(given: string, expected: string): boolean {
  const a = createHash('sha256').update(given).digest();
  const b = createHash('sha256').update(expected).digest();
  return timingSafeEqual(a, b);
}

/**
 * The ingress side. Long polling (getUpdates, the offset confirming only what was handled, so a
 * crash hands the same updates over again and the inbox drops the repeats), or, with publicUrl, a
 * webhook that Telegram POSTs to with the secret token. Messages go to ctx.receive once they pass the
 * addressing rules and the catch-up policy; approval taps go to ctx.answerApproval.
 */
export class TelegramListener implements ChannelListener {
  private ctx: ListenContext | undefined;
  private log: Logger | undefined;
  private api: Api | undefined;
  private self: BotSelf | undefined;
  private catchUp: CatchUp | undefined;
  private closed = false;
  private abort = new AbortController();
  private loop: Promise<void> | undefined;
  private lastError: string | undefined;
  private lastPollAt = 0;
  private webhookSet = false;

  constructor(private readonly cfg: TelegramSettings) {}

  async start(ctx: ListenContext): Promise<void> {
    this.ctx = ctx;
    this.log = ctx.log;
    this.api = createApi(this.cfg, ctx.log);
    this.catchUp = new CatchUp(this.cfg.catchUp, Date.now());
    const me = await this.getMe();
    this.self = { id: me.id, username: me.username, firstName: me.first_name };
    ctx.log.info({ bot: this.self.username, mode: this.cfg.publicUrl ? 'webhook' : 'polling' }, 'telegram connected');
    if (this.cfg.registerCommands)
      void this.api.setMyCommands(COMMANDS).catch((err: unknown) => ctx.log.warn({ err: errorCode(err) }, 'telegram: could not register the commands'));
    if (this.cfg.publicUrl) {
      ctx.mount({ method: 'POST', path: WEBHOOK_PATH, handler: (rc) => this.webhook(rc) });
      await this.retryingNetwork('setWebhook', () =>
        this.api!.setWebhook(`${this.cfg.publicUrl}${WEBHOOK_PATH}`, { secret_token: this.cfg.webhookSecret!, allowed_updates: [...ALLOWED_UPDATES] }),
      );
      this.webhookSet = true;
      return;
    }
    // A webhook left from an earlier configuration would refuse getUpdates (409); its pending updates stay.
    await this.retryingNetwork('deleteWebhook', () => this.api!.deleteWebhook({ drop_pending_updates: false }));
    this.loop = this.poll();
  }

  /** getMe: a refused token stops the start; a network failure (a reset keep-alive socket, a blip) is tried again a few times. */
  private async getMe(): Promise<Awaited<ReturnType<Api['getMe']>>> {
    try {
      return await this.retryingNetwork('getMe', () => this.api!.getMe());
    } catch (err) {
      if (err instanceof GrammyError && (err.error_code === 401 || err.error_code === 404))
        throw new ConfigError(`invalid configuration at "channels.telegram.botTokenEnv" (${this.cfg.botTokenEnv}): Telegram refused the bot token`);
      throw err;
    }
  }

  /** A start-up call again after a network failure (Telegram's own answers are final). */
  private async retryingNetwork<T>(what: string, fn: () => Promise<T>): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await fn();
      } catch (err) {
        if (err instanceof GrammyError || attempt >= 4) throw err;
        this.log!.warn({ err: errorCode(err), attempt }, `telegram: ${what} failed; retrying`);
        await new Promise((r) => setTimeout(r, 500 * 2 ** attempt));
      }
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    this.abort.abort();
    await this.loop;
    // Confirms what was handled (still holding the lease: no other poller is cut off), so the next start is not handed it again.
    if (this.loop && this.offset && this.lease)
      await this.api!.getUpdates({ offset: this.offset, limit: 1, timeout: 0 }, AbortSignal.timeout(3_000) as Parameters<Api['getUpdates']>[1]).catch(
        (err: unknown) => this.log!.debug({ err: errorCode(err) }, 'telegram: could not confirm the last updates'),
      );
    const lease = this.lease;
    this.lease = null;
    await lease?.release().catch((err: unknown) => this.log?.debug({ err }, 'telegram: could not release the poller lease'));
  }

  health(): { ok: boolean; message?: string } {
    if (!this.self) return { ok: false, message: 'not started' };
    if (this.cfg.publicUrl) return this.webhookSet ? { ok: true } : { ok: false, message: 'webhook not set' };
    if (this.lastError) return { ok: false, message: `getUpdates failing: ${this.lastError}` };
    if (this.standby) return { ok: true, message: 'standing by: another process polls this bot' };
    const stale = Date.now() - this.lastPollAt > (this.cfg.pollTimeoutSeconds + 60) * 1000;
    return stale ? { ok: false, message: 'no getUpdates answer for too long' } : { ok: true };
  }

  /** Messages not answered, by reason, since start. */
  get drops(): Readonly<Record<string, number>> {
    return this.catchUp?.drops ?? {};
  }

  // ------------------------------------------------------------------ transports

  private offset = 0;

  /**
   * One poller per bot across every ingress process (Telegram ends a second getUpdates with 409):
   * a lease, renewed before each long poll; the others stand by and take over when it lapses.
   */
  private async holdPollerLease(): Promise<boolean> {
    const ttl = (this.cfg.pollTimeoutSeconds + 30) * 1000;
    if (this.lease && (await this.lease.renew())) return true;
    this.lease = await this.ctx!.leases.tryAcquire(`telegram-poller:${this.self!.id}`, ttl);
    this.standby = this.lease === null;
    return this.lease !== null;
  }

  private lease: Lease | null = null;
  private standby = false;

  private async poll(): Promise<void> {
    let offset = 0;
    let backoff = 1_000;
    this.lastPollAt = Date.now();
    while (!this.closed) {
      try {
        if (!(await this.holdPollerLease())) {
          // Another process polls this bot: this one stands by.
          this.lastPollAt = Date.now();
          await new Promise((r) => setTimeout(r, Math.min(5_000, (this.cfg.pollTimeoutSeconds + 1) * 1000)));
          continue;
        }
        const updates = await this.api!.getUpdates(
          { offset, timeout: this.cfg.pollTimeoutSeconds, allowed_updates: [...ALLOWED_UPDATES] },
          this.abort.signal as Parameters<Api['getUpdates']>[1],
        );
        this.lastPollAt = Date.now();
        this.lastError = undefined;
        backoff = 1_000;
        for (const u of updates) {
          // Not handled (the store failing): not confirmed either; Telegram hands it over again.
          await this.handle(u);
          offset = this.offset = u.update_id + 1;
        }
      } catch (err) {
        if (this.closed) return;
        this.lastError = errorCode(err);
        const conflict = err instanceof GrammyError && err.error_code === 409;
        this.log!.warn(
          { err: this.lastError, retryInMs: backoff },
          conflict ? 'telegram: another getUpdates or a webhook is active for this bot (only one poller per bot)' : 'telegram: getUpdates failed; retrying',
        );
        await new Promise((r) => setTimeout(r, backoff));
        backoff = Math.min(backoff * 2, 30_000);
      }
    }
  }

  /** POST /v1/channels/telegram/webhook: the secret token first (401 missing, 403 wrong), then the update. */
  private async webhook(rc: RouteContext): Promise<void> {
    const given = rc.req.headers['x-telegram-bot-api-secret-token'];
    if (typeof given !== 'string' || !given) return sendJson(rc.res, 401, { ok: false, error: 'missing secret token' });
    if (!sameSecret(given, this.cfg.webhookSecret!)) {
      this.log!.warn('telegram: a webhook call with a wrong secret token was refused');
      return sendJson(rc.res, 403, { ok: false, error: 'wrong secret token' });
    }
    const body = await rc.json({ hint: 'a Telegram Update' });
    if (typeof body.update_id !== 'number' || !Number.isSafeInteger(body.update_id))
      return sendJson(rc.res, 400, { ok: false, error: 'not a Telegram update (update_id)' });
    // Throws on a store failure: the 500 makes Telegram deliver it again.
    await this.handle(body as unknown as Update);
    sendJson(rc.res, 200, { ok: true });
  }

  // ------------------------------------------------------------------ updates

  private async handle(u: Update): Promise<void> {
    if (u.message) return this.onMessage(u.update_id, u.message);
    if (u.callback_query) {
      await handleApprovalTap(u.callback_query, { api: this.api!, ctx: this.ctx!, log: this.log! }).catch((err: unknown) => {
        this.log!.error({ err, update: u.update_id }, 'telegram: an approval tap could not be handled');
      });
    }
  }

  private async onMessage(updateId: number, m: Message): Promise<void> {
    const ctx = this.ctx!;
    const inbound = toInbound(updateId, m, this.self!, this.cfg);
    if (!inbound) return;
    const { msg, room } = inbound;
    // In a group, before anything the user could see or a model call: is this for the bot?
    const decision = room ? await ctx.shouldAnswer(room) : undefined;
    if (decision && !decision.answer) {
      // Unaddressed chatter that merely looks like "yes K7Q4P": only a pending code makes it an answer.
      const code = parseApprovalAnswer(msg.text)?.code;
      if (!code || !(await ctx.pendingApprovals()).some((a) => a.code === code)) {
        this.log?.debug({ update: updateId, reason: decision.why }, 'telegram group message not answered');
        return;
      }
    }
    const verdict = this.catchUp!.judge(msg.conversationKey, m.date * 1000);
    if (verdict !== 'answer') return this.dropWaiting(m, msg, verdict);
    if (/^\/start(@\w+)?(\s|$)/i.test(msg.text)) return this.say(m, WELCOME);
    if (m.photo || m.document)
      msg.attachments = await telegramAttachments(m, this.api!, {
        token: this.cfg.token,
        apiRoot: this.cfg.apiRoot,
        ...(ctx.maxImageBytes ? { maxBytes: ctx.maxImageBytes } : {}),
      });
    const outcome = await ctx.receive(msg);
    if ((outcome.replayed || (outcome.kind === 'accepted' && outcome.duplicate)) && this.catchUp!.waited(m.date * 1000))
      this.catchUp!.refund(msg.conversationKey);
    if (outcome.kind === 'refused') {
      // Counted in /metrics by the ingress itself; here for drops and the log.
      this.drop(msg, outcome.reason, false);
      if (outcome.reply && !outcome.replayed) await this.say(m, outcome.reply);
      return;
    }
    const reply = outcome.replayed ? undefined : outcome.kind === 'accepted' ? outcome.notice : outcome.reply;
    if (reply) await this.say(m, reply);
  }

  private drop(msg: InboundMessage, reason: DropReason, own = true): void {
    this.catchUp!.count(reason);
    // ListenContext.dropped (switchboard_messages_dropped_total) where the SDK has it.
    if (own) (this.ctx as { dropped?: (reason: string) => void }).dropped?.(reason);
    this.log!.info({ reason, update: msg.externalId, conversation: msg.conversationKey }, 'telegram: message not answered');
  }

  /** Too old, or past catchUp.maxMessages in its conversation: counted, and the conversation told once (when configured). */
  private async dropWaiting(m: Message, msg: InboundMessage, reason: CatchUpSkip): Promise<void> {
    this.drop(msg, reason);
    const text = this.catchUp!.offlineReplyFor(conversationKeyOf(m));
    if (text) await this.say(m, text);
  }

  /** A short plain-text answer to the message, in its topic. A failure is logged, never redelivered. */
  private async say(m: Message, text: string): Promise<void> {
    const thread = threadOf(m);
    await this.api!.sendMessage(m.chat.id, text.slice(0, 4000), {
      reply_parameters: { message_id: m.message_id, allow_sending_without_reply: true },
      ...(thread !== undefined ? { message_thread_id: thread } : {}),
    }).catch((err: unknown) => this.log!.warn({ err: errorCode(err), chat: m.chat.id }, 'telegram: could not answer'));
  }
}
