import type { ChannelInstance, ChannelPlugin } from './channel.js';
import { ConfigError, type Config } from './config.js';

/**
 * Every chat channel this build knows (the HTTP API is built in, channels/http).
 * Loaded only when configured: a gateway without Discord never loads discord.js.
 */
const CHANNEL_LOADERS: Record<string, () => Promise<ChannelPlugin>> = {
  slack: async () => (await import('../channels/slack/index.js')).plugin,
  discord: async () => (await import('../channels/discord/index.js')).plugin,
  sms: async () => (await import('../channels/sms/index.js')).plugin,
  email: async () => (await import('../channels/email/index.js')).plugin,
  webhook: async () => (await import('../channels/webhook/index.js')).plugin,
};

export const CHANNEL_NAMES = Object.keys(CHANNEL_LOADERS);

/** The channels named under `channels` in the configuration, validated. */
export async function configureChannels(config: Config, env: Record<string, string | undefined>): Promise<ChannelInstance[]> {
  const out: ChannelInstance[] = [];
  for (const [name, raw] of Object.entries(config.channels)) {
    const load = Object.hasOwn(CHANNEL_LOADERS, name) ? CHANNEL_LOADERS[name] : undefined;
    if (!load) throw new ConfigError(`invalid configuration at "channels.${name}": unknown channel (known: ${CHANNEL_NAMES.join(', ')})`);
    out.push((await load()).configure(raw, env));
  }
  return out;
}
