import type { ChannelInstance, ChannelPlugin } from '../src/channel/index.js';
import { ConfigError, didYouMean, type Config } from '../src/config.js';

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

/** The channels named under `channels` in the configuration, validated. Throws the first problem. */
export async function configureChannels(config: Config, env: Record<string, string | undefined>): Promise<ChannelInstance[]> {
  const { channels, errors } = await validateChannels(config, env);
  if (errors.length) throw errors[0]!.error;
  return channels;
}

/**
 * Each configured channel through its own parser (nothing connects): what start would configure and,
 * per channel, why it would refuse. Start and doctor report every error (app/config-check.ts).
 */
export async function validateChannels(
  config: Pick<Config, 'channels'>,
  env: Record<string, string | undefined>,
): Promise<{ channels: ChannelInstance[]; errors: Array<{ name: string; error: ConfigError }> }> {
  const channels: ChannelInstance[] = [];
  const errors: Array<{ name: string; error: ConfigError }> = [];
  for (const [name, raw] of Object.entries(config.channels)) {
    const load = Object.hasOwn(CHANNEL_LOADERS, name) ? CHANNEL_LOADERS[name] : undefined;
    if (!load) {
      const suggestion = didYouMean(name, CHANNEL_NAMES);
      const message = `unknown channel${suggestion ? `: did you mean "${suggestion}"?` : ''} (known: ${CHANNEL_NAMES.join(', ')})`;
      errors.push({ name, error: new ConfigError(`invalid configuration at "channels.${name}": ${message}`, { problems: [{ path: `channels.${name}`, message, ...(suggestion ? { suggestion } : {}) }] }) });
      continue;
    }
    try {
      channels.push((await load()).configure(raw, env));
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      errors.push({ name, error: err });
    }
  }
  return { channels, errors };
}
