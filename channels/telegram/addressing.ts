import type { Message, MessageEntity } from 'grammy/types';
import type { AddressFacts } from '../../src/channel/index.js';

/** The bot as getMe tells it. */
export interface BotSelf {
  id: number;
  username: string;
  /** The bot's display name (getMe's first_name): its name at a line start addresses it too. */
  firstName?: string;
}

/** The commands the gateway answers (ctx.receive knows them as "/new", "/status", "/stop"). */
const OUR_COMMANDS = new Set(['new', 'reset', 'status', 'stop', 'cancel', 'mode']);

function entityText(text: string, e: MessageEntity): string {
  // Telegram's offsets count UTF-16 code units, as JavaScript strings do.
  return text.slice(e.offset, e.offset + e.length);
}

/**
 * Why a group message is for the bot, or null when it is not: a mention of its @username, a
 * text_mention of its user (people without a username are mentioned that way, and so is a bot picked
 * from the member list), a reply to one of its messages (not the topic-created message every forum
 * topic message "replies" to), or one of the gateway's commands (/new, or /new@this_bot; a command
 * aimed at another bot, /new@other_bot, is not). The same question ListenContext.shouldAnswer will
 * ask once it exists; the platform facts it needs are gathered here.
 */
export function addressedBy(m: Message, self: BotSelf): 'mention' | 'reply' | 'command' | null {
  const text = m.text ?? m.caption ?? '';
  const entities = m.entities ?? m.caption_entities ?? [];
  const handle = `@${self.username}`.toLowerCase();
  for (const e of entities) {
    if (e.type === 'mention' && entityText(text, e).toLowerCase() === handle) return 'mention';
    if (e.type === 'text_mention' && e.user?.id === self.id) return 'mention';
    if (e.type === 'bot_command' && e.offset === 0) {
      const [cmd, target] = entityText(text, e).slice(1).split('@') as [string, string | undefined];
      if (target !== undefined) {
        if (target.toLowerCase() === self.username.toLowerCase()) return 'command';
      } else if (OUR_COMMANDS.has(cmd.toLowerCase())) return 'command';
    }
  }
  const r = m.reply_to_message;
  if (r && r.from?.id === self.id && !r.forum_topic_created && !(m.is_topic_message && r.message_id === m.message_thread_id)) return 'reply';
  return null;
}

/**
 * The text for the agent: the bot's @mention taken out, "/new@this_bot" read as "/new" (so the
 * gateway's commands work in groups), spaces tidied.
 */
export function strippedText(m: Message, self: BotSelf): string {
  let text = m.text ?? m.caption ?? '';
  const entities = [...(m.entities ?? m.caption_entities ?? [])].sort((a, b) => b.offset - a.offset);
  for (const e of entities) {
    const part = entityText(text, e);
    if (e.type === 'mention' && part.toLowerCase() === `@${self.username}`.toLowerCase()) {
      text = `${text.slice(0, e.offset)} ${text.slice(e.offset + e.length)}`;
    } else if (e.type === 'bot_command' && e.offset === 0 && part.toLowerCase().endsWith(`@${self.username}`.toLowerCase())) {
      text = `${part.slice(0, part.length - self.username.length - 1)}${text.slice(e.length)}`;
    }
  }
  return text.replace(/[ \t]+/g, ' ').trim();
}

/**
 * The platform-neutral facts for the gateway's manners (ListenContext.shouldAnswer): addressed as
 * above, someone else mentioned (another @username, a text_mention of another user) or replied to
 * (not the topic's first message), the bot's name at a line start. Telegram delivers no other
 * bot's messages to a bot, so fromBot never comes up.
 */
export function addressFacts(m: Message, self: BotSelf, startsWithName: (text: string) => boolean): AddressFacts {
  const text = m.text ?? m.caption ?? '';
  const by = addressedBy(m, self);
  const handle = `@${self.username}`.toLowerCase();
  const entities = m.entities ?? m.caption_entities ?? [];
  const r = m.reply_to_message;
  const repliesToOther = !!r && r.from?.id !== self.id && !r.forum_topic_created && !(m.is_topic_message && r.message_id === m.message_thread_id);
  const mentionsOthers =
    repliesToOther ||
    entities.some((e) => (e.type === 'mention' && entityText(text, e).toLowerCase() !== handle) || (e.type === 'text_mention' && e.user?.id !== self.id));
  return {
    isDirect: m.chat.type === 'private',
    mentionsBot: by === 'mention' || by === 'command',
    replyToBot: by === 'reply',
    mentionsOthers,
    startsWithBotName: startsWithName(text),
  };
}
