import { z } from 'zod';
import { ConfigError, configError, issueProblems } from '../../src/channel/config.js';
import { catchUpSchema, type GroupsPolicy, groupsSchema } from '../../src/channel/sections.js';

const snowflake = z.string().regex(/^\d{1,25}$/, 'a Discord id (digits)');

/** Per channel (or thread) id overrides. */
const channelOverride = z
  .object({
    /** In guild channels, answer only messages that mention the bot (or reply to it). */
    requireMention: z.boolean().optional(),
  })
  .strict();

/** channels.discord */
export const discordConfigSchema = z
  .object({
    /** The environment variable holding the bot token. */
    botTokenEnv: z
      .string()
      .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'an environment variable name')
      .default('DISCORD_BOT_TOKEN'),
    /** Discord's REST base (the gateway URL comes from GET <apiBaseUrl>/v10/gateway/bot). For proxies and tests. */
    apiBaseUrl: z.url().default('https://discord.com/api'),
    /** Default for guild channels: answer only when mentioned (DMs never need a mention). */
    requireMention: z.boolean().default(true),
    /** Overrides per channel or thread id (a thread falls back to its parent channel). */
    channels: z.record(snowflake, channelOverride).default({}),
    /** Answer direct messages. */
    dms: z.boolean().default(true),
    /** Role ids whose members may decide approvals with the buttons (besides approvals.operators.discord user ids). */
    operatorRoles: z.array(snowflake).default([]),
    /** Register the /new and /status slash commands when connected. */
    registerCommands: z.boolean().default(true),
    /** Register them in these guilds only (instant) instead of globally. */
    commandGuildIds: z.array(snowflake).default([]),
    /** Shortest gap between two edits of one message while a reply streams. */
    editIntervalMs: z.number().int().min(200).max(60_000).default(1_000),
    /** Show the typing indicator while the agent thinks. */
    typing: z.boolean().default(true),
    /** How long a turn's delivery keeps retrying a failing Discord before the turn is retried as a whole. */
    deliveryTimeoutMs: z.number().int().positive().default(120_000),
    /** Manners in guild channels (who is answered, other bots, ambient replies); a channel's requireMention: false means respondIn: all there. */
    groups: groupsSchema({ respondIn: 'mentions' }),
    /** Messages sent while the gateway was down: read from each channel's history after the last one seen. */
    catchUp: catchUpSchema,
  })
  .strict();

export type DiscordConfig = z.infer<typeof discordConfigSchema>;

export interface DiscordSettings extends DiscordConfig {
  token: string;
}

/** Validates channels.discord and reads the token from the environment; throws ConfigError naming the key. */
export function parseDiscordConfig(raw: unknown, env: Record<string, string | undefined>): DiscordSettings {
  const parsed = discordConfigSchema.safeParse(raw ?? {});
  if (!parsed.success) {
    throw configError(issueProblems(parsed.error.issues, discordConfigSchema, ['channels', 'discord'], raw ?? {}));
  }
  const cfg = parsed.data;
  const token = env[cfg.botTokenEnv];
  if (!token)
    throw new ConfigError(`invalid configuration at "channels.discord.botTokenEnv": the environment variable ${cfg.botTokenEnv} (the bot token) is not set`);
  return { ...cfg, token };
}

/** Whether a guild message in this channel (or thread, falling back to its parent) must mention the bot. */
export function mentionRequired(cfg: DiscordConfig, channelId: string, parentId?: string | null): boolean {
  return cfg.channels[channelId]?.requireMention ?? (parentId ? cfg.channels[parentId]?.requireMention : undefined) ?? cfg.requireMention;
}

/** The groups policy in one guild channel or thread: requireMention false there answers every message. */
export function groupsPolicy(cfg: DiscordConfig, channelId: string, parentId?: string | null): GroupsPolicy {
  return mentionRequired(cfg, channelId, parentId) ? cfg.groups : { ...cfg.groups, respondIn: 'all' };
}
