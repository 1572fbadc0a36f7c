import { ReplyToError, replyToObject, stringField } from '../../src/channel/index.js';

/** Where a Telegram answer goes (the inbox row's reply_to, written by inbound.ts). */
export interface TelegramReplyTo {
  /** The chat id as a string (negative for groups). */
  chatId: string;
  /** The user's message the answer replies to. */
  messageId: number;
  /** A forum topic (message_thread_id) the answer is posted in. */
  threadId?: number;
}

const CHAT_ID = /^-?\d{1,20}$/;

function positiveInt(o: Record<string, unknown>, key: string, required: boolean): number | undefined {
  const v = Object.hasOwn(o, key) ? o[key] : undefined;
  if (v === undefined || v === null) {
    if (required) throw new ReplyToError('telegram', `"${key}" is missing`);
    return undefined;
  }
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v <= 0) throw new ReplyToError('telegram', `"${key}" must be a positive integer`);
  return v;
}

export function parseTelegramReplyTo(raw: unknown): TelegramReplyTo | null {
  if (raw === null || raw === undefined) return null;
  const o = replyToObject('telegram', raw);
  const chatId = stringField('telegram', o, 'chatId', 21);
  if (!CHAT_ID.test(chatId)) throw new ReplyToError('telegram', '"chatId" is not a Telegram chat id');
  const messageId = positiveInt(o, 'messageId', true)!;
  const threadId = positiveInt(o, 'threadId', false);
  return { chatId, messageId, ...(threadId !== undefined ? { threadId } : {}) };
}
