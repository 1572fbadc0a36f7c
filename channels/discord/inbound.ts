import { cleanContent, type Message } from 'discord.js';
import type { InboundMessage } from '../../kernel/envelope.js';
import { parseApprovalAnswer } from '../../src/channel/index.js';
import { type DiscordConfig, mentionRequired } from './config.js';
import type { DiscordPlace, Generations } from './conversations.js';

/** What the deliverer needs to answer a message (stored as the inbox row's reply_to). */
export interface DiscordReplyTo {
  /** Where to post: the DM, guild channel or thread the message came from. */
  channelId: string;
  /** The message to reply to. */
  messageId: string;
  guildId: string | null;
}

export function placeOf(message: Pick<Message, 'guildId' | 'channelId' | 'channel'>): DiscordPlace {
  const ch = message.channel;
  const parentId = ch && ch.isThread() ? ch.parentId : null;
  return { guildId: message.guildId ?? null, channelId: message.channelId, parentId };
}

/**
 * The bot's managed role in the message's guild (the role Discord gives a bot, tags.bot_id = the
 * bot): what autocomplete often inserts for "@Switchboard".
 */
function botRoleOf(message: Message, botId: string): string | undefined {
  return message.guild?.roles.botRoleFor(botId)?.id;
}

/** Whether the bot is addressed: a user mention, a reply to one of its messages, or its managed role. */
function mentionsBot(message: Message, botId: string, botRoleId: string | undefined): boolean {
  if (message.mentions.users.has(botId)) return true;
  if (message.mentions.repliedUser?.id === botId) return true;
  if (botRoleId && (message.mentions.roles.has(botRoleId) || message.content.includes(`<@&${botRoleId}>`))) return true;
  return new RegExp(`<@!?${botId}>`).test(message.content);
}

/**
 * Normalizes a message into the envelope, or null when the channel should not
 * answer it: bots (itself included), webhooks and system messages; DMs when
 * disabled; guild messages without a mention where one is required (except what
 * reads as an approval answer, "YES K7Q4P": returned with answerOnly, for the
 * listener to check the code is pending); empty messages.
 */
export async function toInbound(
  message: Message,
  botId: string,
  cfg: DiscordConfig,
  gens: Generations,
): Promise<{ msg: InboundMessage; answerOnly: boolean } | null> {
  if (message.author.bot || message.webhookId || message.system) return null;
  const place = placeOf(message);
  const isDm = message.guildId === null;
  if (isDm && !cfg.dms) return null;
  const botRoleId = isDm ? undefined : botRoleOf(message, botId);
  const stripped = message.content
    .replace(new RegExp(`<@!?${botId}>${botRoleId ? `|<@&${botRoleId}>` : ''}`, 'g'), ' ')
    .replace(/[ \t]+/g, ' ')
    .trim();
  const answerOnly = !isDm && mentionRequired(cfg, place.channelId, place.parentId) && !mentionsBot(message, botId, botRoleId);
  if (answerOnly && !parseApprovalAnswer(stripped)) return null;
  const text = message.channel ? cleanContent(stripped, message.channel) : stripped;
  const attachments = [...message.attachments.values()].map((a) => ({
    name: a.name,
    ...(a.contentType ? { contentType: a.contentType } : {}),
    size: a.size,
    url: a.url,
  }));
  if (!text && attachments.length === 0) return null;
  const replyTo: DiscordReplyTo = { channelId: message.channelId, messageId: message.id, guildId: message.guildId ?? null };
  const member = message.member;
  const msg: InboundMessage = {
    channel: 'discord',
    externalId: message.id,
    conversationKey: await gens.key(place),
    sender: { id: message.author.id, name: member?.displayName ?? message.author.globalName ?? message.author.username },
    text,
    attachments,
    replyTo: { ...replyTo },
    receivedAt: message.createdAt,
  };
  return { msg, answerOnly };
}
