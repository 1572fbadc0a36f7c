import type { Message } from 'grammy/types';
import { conversationKey, type InboundMessage } from '../../kernel/envelope.js';
import { botNames, nameAtLineStart, type RoomQuestion } from '../../src/channel/index.js';
import { addressFacts, type BotSelf, strippedText } from './addressing.js';
import { mentionRequired, type TelegramConfig } from './config.js';
import { hasImage } from './files.js';
import type { TelegramReplyTo } from './reply-to.js';

/** A forum topic (or a private chat's topic) is a thread; everything else is the chat's main line. */
export function threadOf(m: Message): number | undefined {
  return m.is_topic_message && m.message_thread_id ? m.message_thread_id : undefined;
}

/** One conversation per private chat, per group, per forum topic. */
export function conversationKeyOf(m: Pick<Message, 'chat' | 'is_topic_message' | 'message_thread_id'>): string {
  const thread = threadOf(m as Message);
  return conversationKey({ channel: 'telegram', chat: String(m.chat.id), ...(thread !== undefined ? { thread: String(thread) } : {}) });
}

export function displayName(u: { first_name: string; last_name?: string; username?: string }): string {
  return [u.first_name, u.last_name].filter(Boolean).join(' ') || u.username || '';
}

/**
 * A message update as an envelope, or null when the channel does not answer it: bots (the
 * anonymous-admin bot too), channel posts, service messages without text, private chats when dms
 * is off, groups when off, and group messages that do not address the bot where that is required
 * (except what reads as an approval answer: answerOnly, for the listener to check the code is pending).
 * The external id is the update_id: a redelivered update is the same message.
 */
export function toInbound(updateId: number, m: Message, self: BotSelf, cfg: TelegramConfig): { msg: InboundMessage; room?: RoomQuestion } | null {
  const from = m.from;
  if (!from || from.is_bot || m.sender_chat) return null;
  const isPrivate = m.chat.type === 'private';
  if (m.chat.type === 'channel') return null;
  if (isPrivate ? !cfg.dms : !cfg.groupsEnabled) return null;
  const text = strippedText(m, self);
  if (!text && !hasImage(m)) return null;
  const thread = threadOf(m);
  const replyTo: TelegramReplyTo = { chatId: String(m.chat.id), messageId: m.message_id, ...(thread !== undefined ? { threadId: thread } : {}) };
  const name = displayName(from);
  const msg: InboundMessage = {
    channel: 'telegram',
    externalId: String(updateId),
    conversationKey: conversationKeyOf(m),
    sender: { id: String(from.id), ...(name ? { name } : {}) },
    text,
    attachments: [],
    replyTo: { ...replyTo },
    receivedAt: new Date(m.date * 1000),
  };
  if (isPrivate) return { msg };
  // A group: the gateway's manners decide (ListenContext.shouldAnswer); requireMention: false is respondIn: all.
  const policy = mentionRequired(cfg, String(m.chat.id)) ? cfg.groups : { ...cfg.groups, respondIn: 'all' as const };
  const names = botNames(policy, [self.username, self.firstName]);
  return {
    msg,
    room: {
      room: `${m.chat.id}${thread !== undefined ? `:${thread}` : ''}`,
      facts: addressFacts(m, self, (t) => nameAtLineStart(t, names)),
      policy,
      text,
      messageId: String(m.message_id),
    },
  };
}
