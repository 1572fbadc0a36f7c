import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { SocketModeReceiver } from '@slack/bolt';
import type { Logger } from 'pino';
import type { SlackConfig } from './config.js';
import { boltLogger } from './logger.js';
import type { RelayReceiver } from './receiver.js';

type SocketModeClient = SocketModeReceiver['client'];

interface Envelope {
  ack: (response?: Record<string, unknown>) => Promise<void>;
  envelope_id?: string;
  type: string;
  body: Record<string, unknown>;
  retry_num?: number;
  retry_reason?: string;
}

/**
 * Socket Mode: the SDK's client (from bolt's SocketModeReceiver, whose own
 * dispatch stays unused) feeds envelopes to the RelayReceiver, and a watchdog
 * watches for a deaf connection. Activity is any message from Slack and any
 * ping Slack sends (seen on undici's diagnostics channel): a connection with
 * neither for `silenceMs` is cut and reconnected, and health() says so
 * meanwhile. The SDK's own ping/pong check is kept as a second line.
 */
export class SocketConnection {
  private readonly client: SocketModeClient;
  private state = 'starting';
  private lastActivity = Date.now();
  private silentSince?: number;
  private watchdog?: NodeJS.Timeout;
  private closed = false;
  private connectedOnce = false;
  private readonly onPing = (msg: unknown) => {
    if (this.isOurs(msg)) this.touch();
  };

  constructor(
    private readonly cfg: SlackConfig,
    appToken: string,
    private readonly relay: RelayReceiver,
    private readonly log: Logger,
  ) {
    const receiver = new SocketModeReceiver({
      appToken,
      logger: boltLogger(log),
      // The SDK pings Slack every third of this and reconnects after this long without a pong (a dead TCP
      // connection); it also waits this long (times the failures in a row) before reconnecting. Our watchdog
      // covers the other deafness: pongs still come, but no events and no pings from Slack.
      clientPingTimeout: Math.min(5_000, Math.max(2_000, cfg.silenceMs * 2)),
      serverPingTimeout: Math.max(30_000, cfg.silenceMs * 2),
      installerOptions: { clientOptions: { slackApiUrl: cfg.apiUrl.endsWith('/') ? cfg.apiUrl : `${cfg.apiUrl}/`, timeout: cfg.requestTimeoutMs } },
    });
    this.client = receiver.client;
    this.client.on('slack_event', (env: Envelope) => void this.onEnvelope(env));
    this.client.on('ws_message', () => this.touch());
    for (const s of ['connecting', 'connected', 'reconnecting', 'disconnecting', 'disconnected']) {
      this.client.on(s, () => {
        this.state = s;
        if (s === 'connected') {
          this.connectedOnce = true;
          this.silentSince = undefined;
          this.touch();
          this.log.info('slack socket mode connected');
        } else if (s === 'reconnecting') this.log.info('slack socket mode reconnecting');
      });
    }
    this.client.on('close', () => {
      if (!this.closed && this.state === 'connected') this.state = 'closed';
    });
  }

  start(): void {
    subscribe('undici:websocket:ping', this.onPing);
    const every = Math.max(100, Math.min(1_000, Math.floor(this.cfg.silenceMs / 4)));
    this.watchdog = setInterval(() => this.check(), every);
    this.watchdog.unref();
    this.client.start().catch((err: unknown) => {
      this.state = 'failed';
      this.log.error({ err: (err as Error).message }, 'slack socket mode could not connect');
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.watchdog);
    unsubscribe('undici:websocket:ping', this.onPing);
    await Promise.race([
      this.client.disconnect().catch((err: unknown) => this.log.debug({ err }, 'slack socket mode did not disconnect cleanly')),
      new Promise((r) => setTimeout(r, 2_000).unref()),
    ]);
  }

  health(): { ok: boolean; message?: string } {
    if (this.silentSince !== undefined)
      return { ok: false, message: `socket mode: nothing from Slack for ${Math.round((Date.now() - this.lastActivity) / 1000)} s; reconnecting` };
    if (this.state === 'connected') return { ok: true, message: 'socket mode connected' };
    // Slack recycles connections now and then: a reconnect that is under way is not an outage yet.
    if (this.connectedOnce && this.state !== 'failed' && Date.now() - this.lastActivity < this.cfg.silenceMs)
      return { ok: true, message: 'socket mode reconnecting' };
    return { ok: false, message: `socket mode ${this.connectedOnce ? 'reconnecting' : this.state}` };
  }

  private touch(): void {
    this.lastActivity = Date.now();
  }

  private check(): void {
    if (this.closed) return;
    if (this.state === 'silent' && this.silentSince !== undefined && Date.now() - this.silentSince > this.cfg.silenceMs) {
      // Still not reconnected: cut again (the SDK reconnects on the close).
      this.silentSince = Date.now();
      this.cut();
      return;
    }
    if (this.state !== 'connected') return;
    const quiet = Date.now() - this.lastActivity;
    if (quiet <= this.cfg.silenceMs) return;
    this.silentSince = Date.now();
    this.log.warn({ quietMs: quiet }, 'slack socket mode connection is silent (no events, no pings); reconnecting');
    this.state = 'silent';
    this.cut();
  }

  /** Drops the deaf socket now (no close handshake: the peer is not listening); the SDK then reconnects. */
  private cut(): void {
    const ws = (this.client as unknown as { websocket?: { disconnect(): void } }).websocket;
    try {
      // The first call sends a close frame; the second finds the socket closing and destroys it.
      ws?.disconnect();
      ws?.disconnect();
    } catch (err) {
      this.log.warn({ err: (err as Error).message }, 'could not cut the silent socket');
    }
  }

  private isOurs(msg: unknown): boolean {
    const ours = (this.client as unknown as { websocket?: { websocket?: unknown } }).websocket?.websocket;
    // Without the SDK's internals to compare with, any ping counts (one Slack socket per process).
    return ours === undefined || (msg as { websocket?: unknown })?.websocket === ours;
  }

  private async onEnvelope(env: Envelope): Promise<void> {
    this.touch();
    const ack = async (response?: Record<string, unknown>) => {
      try {
        await env.ack(response);
      } catch (err) {
        this.log.warn({ err: (err as Error).message, envelope: env.envelope_id }, 'could not acknowledge a socket mode envelope');
      }
    };
    try {
      if (env.type === 'events_api') {
        // Acknowledged once handled (or after ackTimeoutMs: Slack wants it within 3 s); a failure before
        // then stays unacknowledged so Slack delivers it again.
        let timer: NodeJS.Timeout | undefined;
        const late = new Promise<'late'>((resolve) => {
          timer = setTimeout(() => resolve('late'), this.cfg.ackTimeoutMs);
        });
        const handled = await Promise.race([this.relay.event(env.body, env.retry_num, env.retry_reason), late]);
        clearTimeout(timer);
        if (handled !== false) await ack();
        return;
      }
      if (env.type === 'interactive' || env.type === 'slash_commands') {
        await this.relay.interactive(env.body, (r) => ack(r as Record<string, unknown> | undefined), env.retry_num, env.retry_reason);
        return;
      }
      await ack();
    } catch (err) {
      this.log.error({ err }, 'slack socket mode envelope failed');
    }
  }
}
