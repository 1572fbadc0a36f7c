import type { ChannelPlugin } from '../../src/channel/index.js';
import { parseDiscordConfig } from './config.js';
import { DiscordDeliverer } from './deliver.js';
import { DiscordListener } from './listen.js';

/**
 * Discord: a gateway listener (DMs, guild channels behind a mention, threads as
 * their own conversations, approval buttons, /new and /status) and a REST
 * deliverer (reply, then edit as the text streams; split at 2000 characters).
 * Configuration: channels.discord (see config.ts); the bot token comes from the
 * environment variable named by botTokenEnv (DISCORD_BOT_TOKEN).
 */
export const plugin: ChannelPlugin = {
  name: 'discord',
  configure(raw, env) {
    const cfg = parseDiscordConfig(raw, env);
    return { name: 'discord', listener: new DiscordListener(cfg), deliverer: new DiscordDeliverer(cfg) };
  },
};
