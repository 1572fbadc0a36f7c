import { Client, GatewayIntentBits, Options, Partials, REST } from 'discord.js';
import type { DiscordSettings } from './config.js';

/**
 * The gateway client of the listener: the intents for reading messages in guild
 * channels, threads and DMs (MessageContent is privileged: enable it in the
 * Developer Portal), Partials.Channel so DMs arrive at all, small caches, and no
 * pings from anything the bot says unless it asks.
 */
export function createClient(cfg: DiscordSettings): Client {
  return new Client({
    intents: [GatewayIntentBits.Guilds, GatewayIntentBits.GuildMessages, GatewayIntentBits.DirectMessages, GatewayIntentBits.MessageContent],
    partials: [Partials.Channel],
    rest: { api: cfg.apiBaseUrl },
    allowedMentions: { parse: [], repliedUser: false },
    makeCache: Options.cacheWithLimits({ ...Options.DefaultMakeCacheSettings, MessageManager: 25, PresenceManager: 0, GuildMemberManager: 200 }),
  });
}

/**
 * REST alone, for the deliverer (it needs no gateway connection). @discordjs/rest
 * queues requests per route bucket and waits out 429s (Retry-After, global and
 * shared limits) before retrying, so nothing is dropped.
 */
export function createRest(cfg: DiscordSettings): REST {
  return new REST({ api: cfg.apiBaseUrl, version: '10' }).setToken(cfg.token);
}
