import { optionalString, ReplyToError, replyToObject, stringField } from '../../src/channel/index.js';
import type { DiscordReplyTo } from './inbound.js';

export type { DiscordReplyTo };

const SNOWFLAKE = /^\d{1,25}$/;

function snowflake(o: Record<string, unknown>, key: string): string {
  const v = stringField('discord', o, key, 25);
  if (!SNOWFLAKE.test(v)) throw new ReplyToError('discord', `"${key}" is not a Discord id`);
  return v;
}

/** The stored reply target of a Discord message (inbound.ts writes it), or null when the row has none. */
export function parseDiscordReplyTo(raw: unknown): DiscordReplyTo | null {
  if (raw === null || raw === undefined) return null;
  const o = replyToObject('discord', raw);
  const guildId = optionalString('discord', o, 'guildId', 25) ?? null;
  if (guildId !== null && !SNOWFLAKE.test(guildId)) throw new ReplyToError('discord', '"guildId" is not a Discord id');
  return { channelId: snowflake(o, 'channelId'), messageId: snowflake(o, 'messageId'), guildId };
}
