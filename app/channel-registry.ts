import type { ChannelSetup } from '../src/channel/index.js';
import type { ChannelInstance, ChannelPlugin, Env } from '../src/channel/plugin.js';
import { instantiate } from '../src/channel/plugin.js';
import { type Config, ConfigError, didYouMean } from '../src/config.js';

/** How the registry knows a channel without loading it. */
export interface ChannelEntry {
  name: string;
  /** Imports the plugin: called only when the channel is configured (a gateway without Discord never loads discord.js). */
  load(): Promise<ChannelPlugin<any, any>>; // eslint-disable-line @typescript-eslint/no-explicit-any -- each plugin has its own Config and ReplyTo
  /**
   * A channel that is always on and configured from the gateway's own settings rather than a
   * channels.<name> section (the HTTP API): what its parseConfig gets.
   */
  builtin?(config: Config): unknown;
  /** What `switchboard init` asks and prints for the channel (its setup.ts, which loads no platform SDK). */
  setup?(): Promise<ChannelSetup>;
  /**
   * The section's parser alone (its config.ts), for a channel with no deliverer and no probe (the HTTP
   * API): validate({ parseOnly: true }) checks it without loading the listener (doctor).
   */
  parser?(): Promise<ChannelPlugin['parseConfig']>;
}

/** What validate({ parseOnly }) makes of a channel it only parsed: no listener, deliverer or probe; its reply targets are not read. */
function parsedOnly(name: string): ChannelInstance {
  return {
    name,
    parseReplyTo: () => {
      throw new Error(`channel "${name}" was only validated, not loaded`);
    },
  };
}

export type ChannelProblem = { name: string; error: ConfigError };

/**
 * The channel table: a registry that knows no channel until one is registered
 * (app/register-builtin-channels.ts registers this build's), like pi-ai's api-registry.
 */
export class ChannelRegistry {
  private readonly entries = new Map<string, ChannelEntry>();

  register(entry: ChannelEntry): this {
    if (this.entries.has(entry.name)) throw new Error(`channel "${entry.name}" is registered twice`);
    this.entries.set(entry.name, entry);
    return this;
  }

  names(): string[] {
    return [...this.entries.keys()];
  }

  /** The channels `switchboard init` can set up, with their setup modules loaded. */
  async setups(): Promise<Array<{ name: string; setup: ChannelSetup }>> {
    const out: Array<{ name: string; setup: ChannelSetup }> = [];
    for (const e of this.entries.values()) if (e.setup) out.push({ name: e.name, setup: await e.setup() });
    return out;
  }

  /** Configurable under channels.<name> (the built-in ones are not). */
  configurable(): string[] {
    return [...this.entries.values()].filter((e) => !e.builtin).map((e) => e.name);
  }

  /**
   * Each configured channel (and every built-in one) through its own parser; nothing connects.
   * What start would run and, per channel, why it would refuse: doctor reports every error.
   * `parseOnly`: a channel with a parser alone (ChannelEntry.parser) is parsed, not loaded.
   */
  async validate(
    config: Pick<Config, 'channels'> & Partial<Config>,
    env: Env,
    opts: { parseOnly?: boolean } = {},
  ): Promise<{ channels: ChannelInstance[]; errors: ChannelProblem[] }> {
    const channels: ChannelInstance[] = [];
    const errors: ChannelProblem[] = [];
    const known = this.configurable();
    const attempt = async (name: string, entry: ChannelEntry, raw: unknown) => {
      try {
        let instance: ChannelInstance;
        if (opts.parseOnly && entry.parser) {
          (await entry.parser())(raw, env);
          instance = parsedOnly(name);
        } else instance = instantiate(await entry.load(), raw, env);
        channels.push(entry.builtin ? { ...instance, builtin: true } : instance);
      } catch (err) {
        if (!(err instanceof ConfigError)) throw err;
        errors.push({ name, error: err });
      }
    };
    // A built-in channel's settings come from other slices; while one of them is invalid (doctor lists that problem), it is not checked.
    const whole = config.agents && config.http && config.limits ? (config as Config) : undefined;
    for (const entry of this.entries.values()) if (entry.builtin && whole) await attempt(entry.name, entry, entry.builtin(whole));
    for (const [name, raw] of Object.entries(config.channels)) {
      // Own entries only: "constructor" or "__proto__" name no channel.
      const entry = this.entries.has(name) ? this.entries.get(name)! : undefined;
      if (!entry || entry.builtin) {
        errors.push({ name, error: unknownChannel(name, known, entry !== undefined) });
        continue;
      }
      await attempt(name, entry, raw);
    }
    return { channels, errors };
  }

  /** validate(), refusing at the first problem: what start uses. */
  async configure(config: Pick<Config, 'channels'> & Partial<Config>, env: Env): Promise<ChannelInstance[]> {
    const { channels, errors } = await this.validate(config, env);
    if (errors.length) throw errors[0]!.error;
    return channels;
  }
}

function unknownChannel(name: string, known: string[], builtin: boolean): ConfigError {
  const suggestion = builtin ? undefined : didYouMean(name, known);
  const message = builtin
    ? `"${name}" is built in and always on; it has no section under channels (known: ${known.join(', ')})`
    : `unknown channel${suggestion ? `: did you mean "${suggestion}"?` : ''} (known: ${known.join(', ')})`;
  return new ConfigError(`invalid configuration at "channels.${name}": ${message}`, {
    problems: [{ path: `channels.${name}`, message, ...(suggestion ? { suggestion } : {}) }],
  });
}
