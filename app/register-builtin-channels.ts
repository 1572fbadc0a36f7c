import { chainTakesJsonModes } from '../providers/response-format.js';
import type { Env } from '../src/channel/plugin.js';
import type { Config } from '../src/config.js';
import { ChannelRegistry } from './channel-registry.js';

/**
 * The channels of this build, registered by name with lazy imports: only a configured channel's
 * module (and its platform SDK) is ever loaded. The HTTP API is always on.
 */
export function registerBuiltinChannels(registry: ChannelRegistry): ChannelRegistry {
  return registry
    .register({
      name: 'http',
      load: async () => (await import('../channels/http/index.js')).plugin,
      parser: async () => (await import('../channels/http/config.js')).parseHttpConfig,
      builtin: (config: Config) => ({
        agents: Object.fromEntries(
          Object.entries(config.agents).map(([id, a]) => [id, { ...(a.description !== undefined ? { description: a.description } : {}) }]),
        ),
        maxMessageChars: config.http.maxMessageChars,
        requestTimeoutMs: config.http.requestTimeoutMs,
        applyLimits: config.limits.applyToHttp,
        jsonModes: chainTakesJsonModes(config),
      }),
    })
    .register({
      name: 'slack',
      load: async () => (await import('../channels/slack/index.js')).plugin,
      setup: async () => (await import('../channels/slack/setup.js')).setup,
    })
    .register({
      name: 'discord',
      load: async () => (await import('../channels/discord/index.js')).plugin,
      setup: async () => (await import('../channels/discord/setup.js')).setup,
    })
    .register({
      name: 'sms',
      load: async () => (await import('../channels/sms/index.js')).plugin,
      setup: async () => (await import('../channels/sms/setup.js')).setup,
    })
    .register({
      name: 'email',
      load: async () => (await import('../channels/email/index.js')).plugin,
      setup: async () => (await import('../channels/email/setup.js')).setup,
    })
    .register({
      name: 'telegram',
      load: async () => (await import('../channels/telegram/index.js')).plugin,
      setup: async () => (await import('../channels/telegram/setup.js')).setup,
    })
    .register({
      name: 'whatsapp',
      load: async () => (await import('../channels/whatsapp/index.js')).plugin,
      setup: async () => (await import('../channels/whatsapp/setup.js')).setup,
    })
    .register({ name: 'webhook', load: async () => (await import('../channels/webhook/index.js')).plugin });
}

let builtins: ChannelRegistry | undefined;

/** The registry with this build's channels. */
export function builtinChannels(): ChannelRegistry {
  return (builtins ??= registerBuiltinChannels(new ChannelRegistry()));
}

/** The configured channels, validated; throws the first problem (what start does). */
export function configureChannels(config: Pick<Config, 'channels'> & Partial<Config>, env: Env) {
  return builtinChannels().configure(config, env);
}

/** Every channel's problems at once (what doctor reports). */
export function validateChannels(config: Pick<Config, 'channels'> & Partial<Config>, env: Env, opts: { parseOnly?: boolean } = {}) {
  return builtinChannels().validate(config, env, opts);
}
