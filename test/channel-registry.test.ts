import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ChannelRegistry } from '../app/channel-registry.js';
import { builtinChannels } from '../app/register-builtin-channels.js';
import { packageRoot } from '../kernel/paths.js';
import type { ChannelPlugin } from '../src/channel/index.js';
import { type Config, ConfigError, loadConfig } from '../src/config.js';

const config = (channels: Record<string, unknown>): Config => ({ ...loadConfig({}), channels }) as Config;

/** A plugin that counts how often it was imported and parsed. */
function counted(name: string, parse: (raw: unknown) => unknown = (raw) => raw) {
  const seen = { loads: 0, parses: 0 };
  const plugin: ChannelPlugin = {
    name,
    parseConfig: (raw) => {
      seen.parses++;
      return parse(raw);
    },
    parseReplyTo: () => null,
    listener: () => ({ start: async () => {}, close: async () => {}, health: () => ({ ok: true }) }),
  };
  return { seen, entry: { name, load: async () => (seen.loads++, plugin) } };
}

describe('the channel registry', () => {
  it('knows no channel until one is registered', async () => {
    const r = new ChannelRegistry();
    expect(r.names()).toEqual([]);
    await expect(r.configure(config({ slack: {} }), {})).rejects.toThrow(/unknown channel/);
  });

  it('an unknown channel is a configuration error with a did-you-mean', async () => {
    const r = new ChannelRegistry().register(counted('slack').entry).register(counted('discord').entry);
    const { errors } = await r.validate(config({ slak: {}, dicsord: {} }), {});
    expect(errors.map((e) => e.name)).toEqual(['slak', 'dicsord']);
    expect(errors[0]!.error).toBeInstanceOf(ConfigError);
    expect(errors[0]!.error.message).toBe('invalid configuration at "channels.slak": unknown channel: did you mean "slack"? (known: slack, discord)');
    expect(errors[1]!.error.message).toMatch(/did you mean "discord"/);
    // Inherited names are no channels either.
    await expect(r.configure(config(JSON.parse('{"constructor": {}, "__proto__": {}}')), {})).rejects.toThrow(/channels\.constructor.*unknown channel/);
  });

  it('a channel that is not configured is never imported', async () => {
    const slack = counted('slack');
    const discord = counted('discord');
    const r = new ChannelRegistry().register(slack.entry).register(discord.entry);
    const channels = await r.configure(config({ slack: { x: 1 } }), {});
    expect(channels.map((c) => c.name)).toEqual(['slack']);
    expect(slack.seen).toEqual({ loads: 1, parses: 1 });
    expect(discord.seen).toEqual({ loads: 0, parses: 0 });
  });

  it('reports every channel problem at once; configure refuses at the first', async () => {
    const bad = (name: string) =>
      counted(name, () => {
        throw new ConfigError(`invalid configuration at "channels.${name}.token": missing`);
      });
    const r = new ChannelRegistry().register(bad('a').entry).register(bad('b').entry);
    const { errors } = await r.validate(config({ a: {}, b: {} }), {});
    expect(errors.map((e) => e.error.message)).toEqual([
      'invalid configuration at "channels.a.token": missing',
      'invalid configuration at "channels.b.token": missing',
    ]);
    await expect(r.configure(config({ a: {}, b: {} }), {})).rejects.toThrow('channels.a.token');
  });

  it('a built-in channel is always on, configured from the gateway settings, and has no channels section', async () => {
    const api = counted('api');
    const r = new ChannelRegistry().register({ ...api.entry, builtin: (c) => ({ port: c.http.port }) });
    const channels = await r.configure(config({}), {});
    expect(channels.map((c) => c.name)).toEqual(['api']);
    expect(api.seen.parses).toBe(1);
    await expect(r.configure(config({ api: {} }), {})).rejects.toThrow(/channels\.api.*built in/);
  });

  it('refuses to register a name twice', () => {
    const r = new ChannelRegistry().register(counted('x').entry);
    expect(() => r.register(counted('x').entry)).toThrow(/registered twice/);
  });

  it('the builtins: the HTTP API always, the others only when named', async () => {
    expect(builtinChannels().names()).toEqual(['http', 'slack', 'discord', 'sms', 'email', 'telegram', 'whatsapp', 'webhook']);
    const channels = await builtinChannels().configure(config({}), {});
    expect(channels.map((c) => c.name)).toEqual(['http']);
    expect(channels[0]!.listener).toBeDefined();
    expect(channels[0]!.deliverer).toBeUndefined();
  });
});

describe('the built-in channels load lazily (dist, a fresh process)', () => {
  /** Which platform SDKs a process loaded after configuring these channels (they are CommonJS: require.cache has them). */
  const loadedAfter = (channels: Record<string, unknown>, env: Record<string, string>): string[] => {
    const reg = pathToFileURL(join(packageRoot, 'dist', 'app', 'register-builtin-channels.js')).href;
    const cfg = pathToFileURL(join(packageRoot, 'dist', 'src', 'config.js')).href;
    const script = `import { createRequire } from 'node:module';
      const { configureChannels } = await import(${JSON.stringify(reg)});
      const { loadConfig } = await import(${JSON.stringify(cfg)});
      await configureChannels({ ...loadConfig({}), channels: ${JSON.stringify(channels)} }, ${JSON.stringify(env)});
      const cache = Object.keys(createRequire(import.meta.url).cache);
      console.log(JSON.stringify(['discord.js', '@slack/bolt', 'imapflow', 'nodemailer', 'grammy'].filter((m) => cache.some((k) => k.includes('/node_modules/' + m + '/')))));`;
    const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', cwd: packageRoot, timeout: 60_000 });
    if (r.status !== 0) throw new Error(r.stderr);
    return JSON.parse(r.stdout.trim().split('\n').at(-1)!) as string[];
  };

  it('no platform SDK is loaded for channels that are not configured', () => {
    expect(loadedAfter({}, {})).toEqual([]);
  });

  it('a configured channel loads its own SDK and no other', () => {
    expect(loadedAfter({ discord: {} }, { DISCORD_BOT_TOKEN: 't0ken' })).toEqual(['discord.js']);
    expect(loadedAfter({ telegram: {} }, { TELEGRAM_BOT_TOKEN: '1:t0ken' })).toEqual(['grammy']);
  });
});
