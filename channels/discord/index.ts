import type { ChannelPlugin } from '../../src/channel/index.js';
import { type DiscordSettings, parseDiscordConfig } from './config.js';
import { DiscordDeliverer } from './deliver.js';
import { DiscordListener } from './listen.js';
import { type DiscordReplyTo, parseDiscordReplyTo } from './reply-to.js';

/**
 * Discord: a gateway listener (DMs, guild channels behind a mention, threads as
 * their own conversations, approval buttons, /new and /status) and a REST
 * deliverer (reply, then edit as the text streams; split at 2000 characters).
 * Configuration: channels.discord (see config.ts); the bot token comes from the
 * environment variable named by botTokenEnv (DISCORD_BOT_TOKEN).
 */
export const plugin: ChannelPlugin<DiscordSettings, DiscordReplyTo | null> = {
  name: 'discord',
  parseConfig: parseDiscordConfig,
  parseReplyTo: parseDiscordReplyTo,
  listener: (cfg) => new DiscordListener(cfg),
  deliverer: (cfg) => new DiscordDeliverer(cfg),
  // Loaded only by doctor --probe.
  probe: async (cfg) => (await import('./probe.js')).probeDiscord(cfg),
};
