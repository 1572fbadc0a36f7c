import { plugin as discord } from '../channels/discord/index.js';
import { plugin as email } from '../channels/email/index.js';
import { plugin as slack } from '../channels/slack/index.js';
import { plugin as sms } from '../channels/sms/index.js';
import { plugin as webhook } from '../channels/webhook/index.js';
import type { ChannelInstance, ChannelPlugin } from './channel.js';
import { ConfigError, type Config } from './config.js';

/** Every chat channel this build knows. The HTTP API is built in (channels/http). */
export const CHANNEL_PLUGINS: readonly ChannelPlugin[] = [slack, discord, sms, email, webhook];

/** The channels named under `channels` in the configuration, validated. */
export function configureChannels(config: Config, env: Record<string, string | undefined>): ChannelInstance[] {
  return Object.entries(config.channels).map(([name, raw]) => {
    const plugin = CHANNEL_PLUGINS.find((p) => p.name === name);
    if (!plugin) throw new ConfigError(`invalid configuration at "channels.${name}": unknown channel (known: ${CHANNEL_PLUGINS.map((p) => p.name).join(', ')})`);
    return plugin.configure(raw, env);
  });
}
