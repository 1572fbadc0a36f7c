import { App } from '@slack/bolt';
import type { WebClient } from '@slack/web-api';
import type { Logger } from 'pino';
import { CatchUpCursors, type ChannelListener, compareSlackTs, type ListenContext } from '../../src/channel/index.js';
import { ApprovalClicks } from './actions.js';
import { ACTION_RE } from './approvals.js';
import { catchUp, placesOf } from './catch-up.js';
import { slackError, webClient, webClientOptions } from './client.js';
import { requireListenSecret, type SlackConfig } from './config.js';
import { slackFiles } from './files.js';
import { handleSlackHttp } from './http.js';
import { InboundHandler } from './inbound.js';
import { boltLogger } from './logger.js';
import { NameResolver } from './names.js';
import type { BotIdentity, SlackMessage } from './normalize.js';
import { type EventOutcome, RelayReceiver } from './receiver.js';
import { SocketConnection } from './socket.js';
import { ThreadMembership } from './threads.js';

/** Slack errors that no retry fixes: the token is wrong. */
const FATAL_AUTH = new Set(['invalid_auth', 'not_authed', 'account_inactive', 'token_revoked', 'token_expired', 'not_allowed_token_type']);

/**
 * The ingress side. start() returns at once: the bot's identity (auth.test)
 * is fetched in the background, retried while Slack is unreachable, then the
 * bolt App is built around a RelayReceiver and, in Socket Mode, the socket
 * connects. Until then health() says why it is not ready (HTTP events get 503,
 * which Slack retries).
 */
export class SlackListener implements ChannelListener {
  private readonly relay = new RelayReceiver();
  private client?: WebClient;
  private socket?: SocketConnection;
  private app?: App;
  private bot?: BotIdentity;
  private log?: Logger;
  private status: { ok: boolean; message: string } = { ok: false, message: 'not started' };
  private closed = false;
  private connecting?: Promise<void>;
  private wake?: () => void;
  private cursors?: CatchUpCursors;
  /** Live events wait for the catch-up, so a conversation's messages are answered in order. */
  private caughtUp: Promise<void> = Promise.resolve();

  constructor(private readonly cfg: SlackConfig) {}

  async start(ctx: ListenContext): Promise<void> {
    const secret = requireListenSecret(this.cfg);
    const log = (this.log = ctx.log);
    this.client = webClient(this.cfg, log);
    if (this.cfg.mode === 'http') {
      ctx.mount({
        method: 'POST',
        path: this.cfg.eventsPath,
        handler: (rc) => handleSlackHttp(rc, { signingSecret: secret, relay: this.relay, ackTimeoutMs: this.cfg.ackTimeoutMs, log }),
      });
    } else {
      this.socket = new SocketConnection(this.cfg, secret, this.relay, log);
    }
    this.status = { ok: false, message: 'connecting to Slack (auth.test)' };
    this.connecting = this.connect(ctx).catch((err: unknown) => {
      this.status = { ok: false, message: `could not start: ${(err as Error).message}` };
      log.error({ err }, 'slack listener could not start');
    });
  }

  private async connect(ctx: ListenContext): Promise<void> {
    const log = this.log!;
    let delay = 500;
    for (;;) {
      if (this.closed) return;
      try {
        const r = await this.client!.auth.test();
        if (!r.user_id) throw new Error('auth.test returned no user_id');
        this.bot = {
          userId: r.user_id,
          ...(r.user ? { name: r.user } : {}),
          ...(r.bot_id ? { botId: r.bot_id } : {}),
          ...(r.team_id ? { teamId: r.team_id } : {}),
        };
        break;
      } catch (err) {
        const code = slackError(err);
        if (FATAL_AUTH.has(code)) {
          this.status = { ok: false, message: `the bot token (${this.cfg.botTokenEnv}) was refused (${code})` };
          log.error(
            { error: code, key: this.cfg.botTokenEnv },
            `slack refused the bot token in ${this.cfg.botTokenEnv} (${code}); the slack channel is not listening (channels.slack.botTokenEnv)`,
          );
          return;
        }
        this.status = { ok: false, message: `Slack unreachable (${code}); retrying` };
        log.warn({ error: code, retryInMs: delay }, 'slack auth.test failed; retrying');
        await new Promise<void>((resolve) => {
          const t = setTimeout(resolve, delay);
          this.wake = () => (clearTimeout(t), resolve());
        });
        delay = Math.min(30_000, delay * 2);
      }
    }
    const bot = this.bot;
    const app = new App({
      token: this.cfg.botToken,
      botId: bot.botId,
      botUserId: bot.userId,
      tokenVerificationEnabled: false,
      receiver: this.relay,
      logger: boltLogger(log),
      clientOptions: webClientOptions(this.cfg, log),
    });
    const names = new NameResolver(this.client!, this.cfg.nameCacheMs, log);
    const threads = new ThreadMembership(this.client!, () => bot, log);
    const cursors = (this.cursors = new CatchUpCursors(ctx.state, 'slack', `places:${bot.teamId ?? '-'}`, compareSlackTs));
    const inbound = new InboundHandler(
      ctx,
      this.client!,
      bot,
      names,
      threads,
      log,
      this.cfg.groups,
      slackFiles({ token: this.cfg.botToken, apiUrl: this.cfg.apiUrl }),
      (c) => {
        for (const place of placesOf(c)) cursors.seen(place, c.ts);
      },
    );
    const clicks = new ApprovalClicks(ctx, this.client!, log, bot.teamId);
    const outcomeOf = (context: Record<string, unknown>) => context.sbOutcome as EventOutcome | undefined;
    const retryOf = (context: Record<string, unknown>) => (typeof context.retryNum === 'number' ? context.retryNum : undefined);
    app.event('message', async ({ event, body, context }) => {
      await this.caughtUp;
      await inbound.onEvent(event as unknown as SlackMessage, body, outcomeOf(context), retryOf(context));
    });
    app.event('app_mention', async ({ event, body, context }) => {
      await this.caughtUp;
      await inbound.onEvent(event as unknown as SlackMessage, body, outcomeOf(context), retryOf(context));
    });
    app.action(ACTION_RE, async ({ ack, body, action }) => {
      await ack();
      await clicks.onClick(body as never, action as never);
    });
    app.error(async (err) => {
      log.error({ err }, 'slack handler failed');
      throw err;
    });
    this.app = app;
    if (this.closed) return;
    this.caughtUp = catchUp({
      client: this.client!,
      bot,
      cursors,
      policy: this.cfg.catchUp,
      log,
      handle: (event, body) => inbound.onEvent(event, body, undefined),
      dropped: (reason) => ctx.dropped(reason),
    }).catch((err: unknown) => log.warn({ err }, 'slack catch-up failed; answering new messages only'));
    if (this.socket) {
      this.status = { ok: true, message: 'socket mode' };
      this.socket.start();
    } else {
      this.status = { ok: true, message: `http events at ${this.cfg.eventsPath}` };
    }
    log.info({ mode: this.cfg.mode, bot: bot.userId, team: bot.teamId }, 'slack channel listening');
  }

  async close(): Promise<void> {
    this.closed = true;
    this.wake?.();
    await this.connecting;
    await this.socket?.close();
    await this.cursors?.flush();
  }

  health(): { ok: boolean; message?: string } {
    if (!this.status.ok || !this.app) return this.status;
    return this.socket ? this.socket.health() : this.status;
  }
}
