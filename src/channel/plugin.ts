import type { ChannelDeliverer } from './deliver.js';
import type { ChannelListener } from './listen.js';

export type Env = Record<string, string | undefined>;

/**
 * A chat platform, in two halves, as a plugin the app registers (app/register-builtin-channels.ts);
 * core never imports a channel. `listener` runs in the ingress: it receives platform events (a
 * long-lived connection, or routes mounted on the gateway's HTTP server), verifies them, normalizes
 * them into InboundMessages for ctx.receive(), and routes approval clicks to ctx.answerApproval().
 * `deliverer` runs where the turn runs and turns the agent's events into what the platform shows.
 * Platform code stays in channels/<name>/; nothing else imports its SDK.
 *
 * Config is what parseConfig makes of channels.<name>; ReplyTo is the channel's own reply target,
 * written by its listener into InboundMessage.replyTo and parsed back ONCE, by parseReplyTo, before
 * a deliverer sees a turn (TurnTarget.replyTo), the way a chat SDK adapter owns encode/decodeThreadId.
 */
export interface ChannelPlugin<Config = unknown, ReplyTo = unknown> {
  readonly name: string;
  /**
   * Validates channels.<name> (and the environment variables it names). Pure: nothing connects.
   * Throws ConfigError naming the key ("invalid configuration at \"channels.<name>.<key>\": ...").
   */
  parseConfig(raw: unknown, env: Env): Config;
  /**
   * The stored reply target of an inbox row (its reply_to, as the listener wrote it; null when the
   * row has none). Throws ReplyToError on a value this channel could not have written; never
   * returns a half-valid target.
   */
  parseReplyTo(raw: unknown): ReplyTo;
  /** The ingress side; absent (or undefined for this config) for deliver-only channels. */
  listener?(config: Config): ChannelListener | undefined;
  /** The worker side; absent for channels that answer in the request (the HTTP API). */
  deliverer?(config: Config): ChannelDeliverer<ReplyTo> | undefined;
  /**
   * `doctor --probe`: checks each token and endpoint against the platform (a read-only call such
   * as Slack's auth.test), without starting a listener. Never throws: a failure is a ChannelProbe.
   */
  probe?(config: Config): Promise<ChannelProbe[]>;
}

/** One platform check of `doctor --probe`. */
export interface ChannelProbe {
  /** What was checked, e.g. "bot token". */
  name: string;
  ok: boolean;
  /** With ok: works, but worth a look (doctor reports it as warn). */
  warn?: boolean;
  message: string;
}

/** A plugin with its configuration parsed: what the gateway starts. */
export interface ChannelInstance<ReplyTo = unknown> {
  readonly name: string;
  /** Always on, part of the gateway's own HTTP API: its readiness is the server's, not reported apart. */
  readonly builtin?: boolean;
  listener?: ChannelListener;
  deliverer?: ChannelDeliverer<ReplyTo>;
  parseReplyTo(raw: unknown): ReplyTo;
  /** The plugin's probe with this configuration (doctor --probe). */
  probe?(): Promise<ChannelProbe[]>;
}

/** parseConfig, then the halves this configuration asks for. Throws what parseConfig throws. */
export function instantiate<C, R>(plugin: ChannelPlugin<C, R>, raw: unknown, env: Env): ChannelInstance<R> {
  const config = plugin.parseConfig(raw, env);
  const listener = plugin.listener?.(config);
  const deliverer = plugin.deliverer?.(config);
  return {
    name: plugin.name,
    ...(listener ? { listener } : {}),
    ...(deliverer ? { deliverer } : {}),
    ...(plugin.probe ? { probe: () => plugin.probe!(config) } : {}),
    parseReplyTo: (r) => plugin.parseReplyTo(r),
  };
}
