import { type Client, DiscordjsError, DiscordjsErrorCodes, Events, type GuildMember, type Interaction, type Message, MessageFlags, Status } from 'discord.js';
import type { Logger } from 'pino';
import type { InboundMessage } from '../../kernel/envelope.js';
import {
  addressedToMe,
  CatchUpCursors,
  type ChannelListener,
  ConfigError,
  compareSnowflakes,
  type ListenContext,
  parseApprovalAnswer,
  parseOperatorCommand,
} from '../../src/channel/index.js';
import { handleApprovalClick, hasOperatorRole } from './approvals.js';
import { catchUp } from './catch-up.js';
import { createClient } from './client.js';
import { handleCommand, registerCommands } from './commands.js';
import type { DiscordSettings } from './config.js';
import { Generations } from './conversations.js';
import { discordFiles } from './files.js';
import { toInbound } from './inbound.js';

const LOGIN_WAIT_MS = 15_000;

/**
 * The ingress side: one gateway connection (discord.js resumes a dropped session
 * by itself, replaying what it missed; the inbox dedups message ids anyway),
 * messages to ctx.receive, button clicks to ctx.answerApproval, slash commands.
 */
export class DiscordListener implements ChannelListener {
  private client: Client | undefined;
  private ctx: ListenContext | undefined;
  private gens: Generations | undefined;
  private log: Logger | undefined;
  private closed = false;
  private lastError: string | undefined;
  private retry: NodeJS.Timeout | undefined;
  /** The last message seen per channel, for catching up after downtime. */
  private cursors: CatchUpCursors | undefined;
  /** Live messages wait for the catch-up to finish, so a channel's messages are answered in order. */
  private caughtUp: Promise<void> = Promise.resolve();
  private readyOnce = false;

  /** Image attachments downloaded for the model (./files.ts). */
  private readonly files: ReturnType<typeof discordFiles>;

  constructor(private readonly cfg: DiscordSettings) {
    this.files = discordFiles(cfg.apiBaseUrl);
  }

  async start(ctx: ListenContext): Promise<void> {
    this.ctx = ctx;
    this.log = ctx.log;
    this.gens = new Generations(ctx.state);
    this.cursors = new CatchUpCursors(ctx.state, 'discord', 'channels', compareSnowflakes);
    const first = this.connect();
    let timer: NodeJS.Timeout | undefined;
    const waited = await Promise.race([
      first.then(() => 'ok' as const),
      new Promise<'slow'>((r) => (timer = setTimeout(() => r('slow'), LOGIN_WAIT_MS))),
    ]).finally(() => clearTimeout(timer));
    if (waited === 'slow') {
      ctx.log.warn('discord is still connecting; the gateway starts meanwhile (see /readyz)');
      first.catch((err: unknown) => ctx.log.error({ err }, 'discord login failed'));
    }
  }

  /** Logs in; a refused token fails start, anything else is retried with backoff. */
  private async connect(attempt = 0): Promise<void> {
    if (this.closed) return;
    const client = createClient(this.cfg);
    this.client = client;
    this.wire(client);
    try {
      await client.login(this.cfg.token);
      this.lastError = undefined;
    } catch (err) {
      await client.destroy().catch((e: unknown) => this.log?.debug({ err: e }, 'discord client did not close cleanly after a failed login'));
      if (err instanceof DiscordjsError && err.code === DiscordjsErrorCodes.TokenInvalid) {
        this.lastError = 'the bot token was refused';
        throw new ConfigError(`invalid configuration at "channels.discord.botTokenEnv" (${this.cfg.botTokenEnv}): Discord refused the bot token`);
      }
      if (/disallowed intents/i.test((err as Error).message)) {
        this.lastError = 'the Message Content intent is not enabled for this bot';
        throw new ConfigError(
          'invalid configuration of the discord channel: Discord refused the intents; enable the Message Content intent in the Developer Portal (Bot > Privileged Gateway Intents)',
        );
      }
      this.lastError = (err as Error).message;
      const delay = Math.min(60_000, 1_000 * 2 ** attempt);
      this.log!.warn({ err, retryInMs: delay }, 'discord login failed; retrying');
      if (!this.closed) {
        this.retry = setTimeout(() => void this.connect(attempt + 1).catch((e: unknown) => this.log!.error({ err: e }, 'discord login failed')), delay);
        this.retry.unref();
      }
    }
  }

  private wire(client: Client): void {
    const log = this.log!;
    client.on(Events.MessageCreate, (m) => void this.caughtUp.then(() => this.onMessage(m)));
    client.on(Events.InteractionCreate, (i) => void this.onInteraction(i));
    client.once(Events.ClientReady, (c) => {
      log.info({ user: c.user.tag, guilds: c.guilds.cache.size }, 'discord connected');
      if (this.cfg.registerCommands) void registerCommands(c, this.cfg.commandGuildIds, log);
      this.caughtUp = this.startCatchUp(c);
      this.readyOnce = true;
    });
    // A new session after a reconnect that could not resume (Discord replays nothing): catch up again.
    client.on(Events.ShardReady, () => {
      if (this.readyOnce && client.isReady()) this.caughtUp = this.caughtUp.then(() => this.startCatchUp(client));
    });
    client.on(Events.ShardDisconnect, (e) => {
      if (this.closed) return;
      this.lastError =
        e.code === 4014
          ? 'the Message Content intent is not enabled for this bot (Developer Portal > Bot > Privileged Gateway Intents)'
          : e.code === 4004
            ? 'the bot token was refused'
            : `closed with code ${e.code}`;
      log.error({ code: e.code, reason: this.lastError }, 'discord gateway disconnected for good');
    });
    client.on(Events.ShardReconnecting, () => {
      if (!this.closed) log.info('discord gateway reconnecting');
    });
    client.on(Events.ShardResume, (_id, replayed) => log.info({ replayed }, 'discord gateway session resumed'));
    client.on(Events.ShardError, (err) => log.warn({ err }, 'discord gateway error'));
    client.on(Events.Error, (err) => log.warn({ err }, 'discord client error'));
    client.on(Events.Warn, (msg) => log.warn({ msg }, 'discord warning'));
  }

  /** The messages sent while the gateway was down (channels.discord.catchUp). Never rejects. */
  private async startCatchUp(client: Client): Promise<void> {
    const botId = client.user!.id;
    await catchUp({
      client,
      cursors: this.cursors!,
      policy: this.cfg.catchUp,
      log: this.log!,
      addressed: async (m) => {
        const inbound = await toInbound(m, botId, this.cfg, this.gens!);
        // Only what would be answered now counts toward the catch-up (ambient replies are not caught up).
        return inbound !== null && addressedToMe(inbound.facts, inbound.policy).addressed;
      },
      handle: (m) => this.onMessage(m),
      dropped: (reason) => this.ctx!.dropped(reason),
    }).catch((err: unknown) => this.log!.warn({ err }, 'discord catch-up failed; answering new messages only'));
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.retry) clearTimeout(this.retry);
    await this.cursors?.flush();
    await this.client?.destroy().catch((err: unknown) => this.log?.debug({ err }, 'discord client did not close cleanly'));
  }

  health(): { ok: boolean; message?: string } {
    const c = this.client;
    if (!c) return { ok: false, message: 'not started' };
    if (c.isReady() && c.ws.status === Status.Ready) return { ok: true };
    const state = Status[c.ws.status] ?? String(c.ws.status);
    return { ok: false, message: `gateway ${state.toLowerCase()}${this.lastError ? `: ${this.lastError}` : ''}` };
  }

  // ------------------------------------------------------------------ messages

  private async onMessage(message: Message): Promise<void> {
    const { ctx, log } = this;
    if (!ctx || !log || !this.client?.user) return;
    try {
      const botId = this.client.user.id;
      const inbound = await this.retrying(() => toInbound(message, botId, this.cfg, this.gens!));
      if (!inbound) return this.cursors?.seen(message.channelId, message.id);
      const { msg, room, facts, policy } = inbound;
      // Before anything the user could see (the typing indicator comes with the turn) or a model call.
      const decision = await this.retrying(() => ctx.shouldAnswer({ room, facts, policy, text: msg.text }));
      // Human takeover: an operator's "takeover" needs no mention, and while the conversation is with
      // an operator (or waits for one) every message of its room goes in (its transcript keeps both sides).
      const takeover = !decision.answer && !facts.fromBot && (await this.takeoverMessage(message, msg));
      if (!decision.answer && !takeover) {
        // Unaddressed chatter that merely looks like "no mercy": only a pending code makes it an answer.
        const code = facts.fromBot ? undefined : parseApprovalAnswer(msg.text)?.code;
        if (!code || !(await ctx.pendingApprovals()).some((a) => a.code === code)) {
          log.debug({ message: message.id, reason: decision.why }, 'discord room message not answered');
          return this.cursors?.seen(message.channelId, message.id);
        }
      }
      const reply = await this.receive(message, msg);
      this.cursors?.seen(message.channelId, message.id);
      if (reply) await message.reply({ content: reply.slice(0, 2000), allowedMentions: { parse: [], repliedUser: false } });
    } catch (err) {
      log.error({ err, message: message.id }, 'discord message could not be handled');
    }
  }

  /** Whether an unaddressed message goes in all the same: an operator's takeover command, or any message of a conversation with an operator. */
  private async takeoverMessage(message: Message, msg: InboundMessage): Promise<boolean> {
    const ctx = this.ctx!;
    if (!ctx.handoffOf) return false;
    if (parseOperatorCommand(msg.text)?.kind === 'takeover' && this.isOperator(message, msg)) return true;
    return (await this.retrying(() => ctx.handoffOf!(msg.conversationKey))) !== null;
  }

  /** A configured operator (approvals.operators.discord) or a member with one of channels.discord.operatorRoles. */
  private isOperator(message: Message, msg: InboundMessage): boolean {
    return this.ctx!.isOperator({ channel: 'discord', id: msg.sender.id }) || hasOperatorRole(message.member as GuildMember | null, this.cfg.operatorRoles);
  }

  /** The ingress pipeline (retried: the inbox dedups on the message id), or an operator role's typed approval answer. */
  private async receive(message: Message, msg: InboundMessage): Promise<string | undefined> {
    const ctx = this.ctx!;
    const answer = parseApprovalAnswer(msg.text);
    if (answer && !ctx.isOperator({ channel: 'discord', id: msg.sender.id }) && hasOperatorRole(message.member as GuildMember | null, this.cfg.operatorRoles)) {
      const r = await ctx.answerApproval(
        answer.code,
        answer.decision,
        { channel: 'discord', id: msg.sender.id },
        { operator: true, ...(answer.scope ? { scope: answer.scope } : {}) },
      );
      return r.message;
    }
    if (msg.attachments.length) msg.attachments = await this.files(msg.attachments, ctx.maxImageBytes);
    // An operator role's member is an operator to the ingress too (takeover, handback, their messages while they hold it).
    const role = !ctx.isOperator({ channel: 'discord', id: msg.sender.id }) && hasOperatorRole(message.member as GuildMember | null, this.cfg.operatorRoles);
    const outcome = await this.retrying(() => ctx.receive(msg, role ? { operator: true } : {}));
    // Accepted: nothing to say, unless its conversation waits for an approval (the notice, at once).
    return outcome.kind === 'accepted' ? (outcome.replayed ? undefined : outcome.notice) : outcome.reply || undefined;
  }

  /** Discord does not redeliver a message: a store hiccup is retried (receive is idempotent on the message id). */
  private async retrying<T>(fn: () => Promise<T>): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await fn();
      } catch (err) {
        if (attempt >= 4 || this.closed) throw err;
        this.log!.warn({ err, attempt }, 'discord message not stored yet; retrying');
        await new Promise((r) => setTimeout(r, 500 * 2 ** attempt));
      }
    }
  }

  // ------------------------------------------------------------------ interactions

  private async onInteraction(i: Interaction): Promise<void> {
    const { ctx, log } = this;
    if (!ctx || !log) return;
    try {
      if (i.isButton()) {
        const handled = await handleApprovalClick(i, { ctx, operatorRoles: this.cfg.operatorRoles, log });
        if (!handled) await i.reply({ content: 'This button is not for me.', flags: MessageFlags.Ephemeral });
      } else if (i.isChatInputCommand()) {
        await handleCommand(i, { gens: this.gens!, ctx, log });
      }
    } catch (err) {
      log.error({ err, interaction: i.id }, 'discord interaction could not be handled');
      const sorry = 'Sorry, that did not work; please try again.';
      if (!i.isRepliable() || i.replied) return;
      // A deferred command: its "thinking…" becomes the apology.
      const tell = i.deferred ? i.editReply({ content: sorry }) : i.reply({ content: sorry, flags: MessageFlags.Ephemeral });
      await tell.catch((e: unknown) => log.debug({ err: e, interaction: i.id }, 'could not tell the user it failed'));
    }
  }
}
