import { z } from 'zod';
import { ConfigError, configError, issueProblems } from '../../src/channel/config.js';
import { groupsSchema } from '../../src/channel/sections.js';

const envName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'expected an environment variable name');
/** A Telegram chat id: a user's (positive) or a group's (negative, -100… for supergroups). */
const chatId = z.string().regex(/^-?\d{1,20}$/, 'a Telegram chat id (digits, negative for groups)');

/** The route Telegram POSTs updates to when publicUrl is set. */
export const WEBHOOK_PATH = '/v1/channels/telegram/webhook';

const groupOverride = z
  .object({
    /** In this group, answer only messages that mention the bot, reply to it, or are its commands. */
    requireMention: z.boolean().optional(),
  })
  .strict();

/** channels.telegram */
export const telegramSchema = z
  .object({
    /** The environment variable holding the bot token from @BotFather. */
    botTokenEnv: envName.default('TELEGRAM_BOT_TOKEN'),
    /** The Bot API base (a local Bot API server, a proxy, tests); no trailing slash. */
    apiRoot: z
      .url()
      .refine((u) => !u.endsWith('/'), 'no trailing slash')
      .default('https://api.telegram.org'),
    /**
     * The gateway's public https base URL. Set: Telegram POSTs updates to <publicUrl>/v1/channels/telegram/webhook
     * (setWebhook with a secret token). Unset: long polling (getUpdates), no public URL needed.
     */
    publicUrl: z
      .url()
      .refine((u) => !u.endsWith('/'), 'no trailing slash')
      .optional(),
    /** Webhook mode: the environment variable with the secret token Telegram sends in X-Telegram-Bot-Api-Secret-Token. */
    webhookSecretEnv: envName.default('TELEGRAM_WEBHOOK_SECRET'),
    /** Long polling: how long one getUpdates waits for an update (seconds). */
    pollTimeoutSeconds: z.number().int().min(0).max(50).default(30),
    /** Answer private chats. */
    dms: z.boolean().default(true),
    /** Answer groups at all. */
    groupsEnabled: z.boolean().default(true),
    /** In groups: answer only when addressed (a mention, a reply to the bot, /cmd@bot). */
    requireMention: z.boolean().default(true),
    /** Overrides per group chat id. */
    chats: z.record(chatId, groupOverride).default({}),
    /** Manners in groups (the name at a line start, ambient replies), as the other channels' groups; requireMention: false means respondIn: all. */
    groups: groupsSchema({ respondIn: 'mentions' }),
    /** Least time between two edits (or posts) in one chat while a reply streams; Telegram allows about one a second per chat. */
    editIntervalMs: z.number().int().min(1_000).max(60_000).default(1_000),
    /** Show "typing…" while the agent thinks. */
    typing: z.boolean().default(true),
    /** How long a turn's delivery keeps retrying a failing Telegram before a delivery job takes over. */
    deliveryTimeoutMs: z.number().int().nonnegative().default(60_000),
    /** Register /new, /status and /stop with setMyCommands when started. */
    registerCommands: z.boolean().default(true),
    /**
     * Messages that waited while the gateway was down (pending updates). The same keys as the other
     * channels' catchUp; maxMessages counts per conversation, the first ones in order.
     */
    catchUp: z
      .object({
        /** false: no waiting message is answered (each gets the offline reply, per offlineReply). */
        enabled: z.boolean().default(true),
        /** Older than this: not answered. */
        maxAgeMinutes: z.number().int().positive().default(60),
        /** At most this many waiting messages per conversation are answered after a start. */
        maxMessages: z.number().int().positive().max(1_000).default(20),
        /** What is not answered gets one reply per conversation: true the default text, a string its own, false none. */
        offlineReply: z.union([z.boolean(), z.string().min(1).max(1_000)]).default(true),
      })
      .strict()
      .prefault({}),
  })
  .strict();

export type TelegramConfig = z.infer<typeof telegramSchema>;

export interface TelegramSettings extends TelegramConfig {
  token: string;
  /** Present when publicUrl is set. */
  webhookSecret?: string;
}

export const DEFAULT_OFFLINE_REPLY =
  'Sorry, I was offline when you sent this, and it is too old for me to answer now. Please send it again if it still matters.';

const SECRET = /^[A-Za-z0-9_-]{16,256}$/;

export function parseTelegramConfig(raw: unknown, env: Record<string, string | undefined>): TelegramSettings {
  const r = telegramSchema.safeParse(raw ?? {});
  if (!r.success) throw configError(issueProblems(r.error.issues, telegramSchema, ['channels', 'telegram'], raw ?? {}));
  const cfg = r.data;
  const token = env[cfg.botTokenEnv]?.trim();
  if (!token)
    throw new ConfigError(`invalid configuration at "channels.telegram.botTokenEnv": the environment variable ${cfg.botTokenEnv} (the bot token) is not set`);
  if (!cfg.publicUrl) return { ...cfg, token };
  const webhookSecret = env[cfg.webhookSecretEnv]?.trim();
  if (!webhookSecret || !SECRET.test(webhookSecret))
    throw new ConfigError(
      `invalid configuration at "channels.telegram.webhookSecretEnv": with publicUrl set, the environment variable ${cfg.webhookSecretEnv} must hold the webhook secret token (16 to 256 characters of A-Z, a-z, 0-9, _ and -)`,
    );
  return { ...cfg, token, webhookSecret };
}

/** Whether a message in this group must address the bot. */
export function mentionRequired(cfg: TelegramConfig, chat: string): boolean {
  return cfg.chats[chat]?.requireMention ?? cfg.requireMention;
}
