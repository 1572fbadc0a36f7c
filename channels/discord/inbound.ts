import { cleanContent, type Message } from 'discord.js';
import type { InboundMessage } from '../../kernel/envelope.js';
import { type AddressFacts, botNames, type GroupsPolicy, nameAtLineStart } from '../../src/channel/index.js';
import { type DiscordConfig, groupsPolicy } from './config.js';
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

/**
 * The addressing facts of a guild message: a user mention of the bot, its managed role, a reply to
 * one of its messages (referenced_message's author, pinged or not), a thread it started, its name
 * at a line's start; someone else addressed (another user or role mentioned, a reply to someone
 * else); another bot as the sender.
 */
export function discordFacts(message: Message, botId: string, botRoleId: string | undefined, policy: GroupsPolicy): AddressFacts {
  const isDirect = message.guildId === null;
  const author = message.author.id;
  const others =
    message.mentions.users.some((u) => u.id !== botId && u.id !== author) ||
    message.mentions.roles.some((r) => r.id !== botRoleId) ||
    (!!message.mentions.repliedUser && message.mentions.repliedUser.id !== botId && message.mentions.repliedUser.id !== author);
  const ch = message.channel;
  const me = message.client.user;
  return {
    isDirect,
    mentionsBot: message.mentions.users.has(botId) || new RegExp(`<@!?${botId}>`).test(message.content),
    mentionsBotRole: !!botRoleId && (message.mentions.roles.has(botRoleId) || message.content.includes(`<@&${botRoleId}>`)),
    replyToBot: message.mentions.repliedUser?.id === botId,
    inBotThread: !!ch && ch.isThread() && ch.ownerId === botId,
    mentionsOthers: others,
    startsWithBotName: nameAtLineStart(message.content, botNames(policy, [me?.username, me?.globalName, message.guild?.members.me?.displayName])),
    ...(message.author.bot ? { fromBot: { ids: [author] } } : {}),
  };
}

export interface DiscordInbound {
  msg: InboundMessage;
  /** For ctx.shouldAnswer: the room is the channel or thread. */
  room: string;
  facts: AddressFacts;
  policy: GroupsPolicy;
}

/**
 * Normalizes a message into the envelope with its addressing facts, or null when the channel never
 * answers it: itself, webhooks and system messages; DMs when disabled; empty messages. Whether it
 * is answered is ctx.shouldAnswer's (the listener asks before anything else).
 */
export async function toInbound(message: Message, botId: string, cfg: DiscordConfig, gens: Generations): Promise<DiscordInbound | null> {
  if (message.author.id === botId || message.webhookId || message.system) return null;
  const place = placeOf(message);
  const isDm = message.guildId === null;
  if (isDm && !cfg.dms) return null;
  const botRoleId = isDm ? undefined : botRoleOf(message, botId);
  const stripped = message.content
    .replace(new RegExp(`<@!?${botId}>${botRoleId ? `|<@&${botRoleId}>` : ''}`, 'g'), ' ')
    .replace(/[ \t]+/g, ' ')
    .trim();
  const text = message.channel ? cleanContent(stripped, message.channel) : stripped;
  const attachments = [...message.attachments.values()].map((a) => ({
    name: a.name,
    ...(a.contentType ? { contentType: a.contentType } : {}),
    size: a.size,
    url: a.url,
  }));
  if (!text && attachments.length === 0) return null;
  const policy = groupsPolicy(cfg, place.channelId, place.parentId);
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
  return { msg, room: message.channelId, facts: discordFacts(message, botId, botRoleId, policy), policy };
}
