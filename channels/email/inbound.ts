import { conversationKey, type InboundMessage } from '../../kernel/envelope.js';
import type { EmailReplyTo } from './compose.js';
import type { InboundMail } from './parse.js';
import { threadKey } from './thread.js';

/** The sender id of a From the receiving server did not vouch for: it can match no operator or allowlist entry. */
export const UNVERIFIED_PREFIX = 'unverified:';

export function senderId(mail: InboundMail, requireAuthenticatedSender: boolean): string {
  return !requireAuthenticatedSender || mail.authenticated ? mail.from : `${UNVERIFIED_PREFIX}${mail.from}`;
}

export function replyTarget(mail: InboundMail): EmailReplyTo {
  return { to: mail.replyAddress, subject: mail.subject, ...(mail.messageId ? { messageId: mail.messageId } : {}), references: mail.references };
}

/**
 * The envelope for a mail. Conversation: our mailbox + the sender + the thread
 * root, so each sender's thread is its own conversation (someone else replying
 * in the same thread does not join it).
 */
export function toInbound(mail: InboundMail, opts: { ourAddress: string; requireAuthenticatedSender: boolean; receivedAt?: Date }): InboundMessage {
  const id = senderId(mail, opts.requireAuthenticatedSender);
  return {
    channel: 'email',
    externalId: mail.externalId,
    conversationKey: conversationKey({ channel: 'email', workspace: opts.ourAddress, chat: id, thread: threadKey(mail) }),
    sender: { id, ...(mail.fromName ? { name: mail.fromName } : {}) },
    text: mail.text,
    attachments: mail.attachments,
    replyTo: replyTarget(mail) as unknown as Record<string, unknown>,
    receivedAt: opts.receivedAt ?? new Date(),
  };
}
