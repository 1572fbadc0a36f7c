import { conversationKey, type InboundMessage } from '../../kernel/envelope.js';
import { type AddressFacts, botNames, type GroupsPolicy, nameAtLineStart } from '../../src/channel/index.js';
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

/** Our own Message-IDs (smtp.ts newMessageId): <sb.…@our domain>. */
function ours(id: string | undefined, ourAddress: string): boolean {
  const domain = ourAddress.split('@')[1] ?? '';
  return !!id && id.startsWith('<sb.') && id.toLowerCase().endsWith(`@${domain}>`);
}

/**
 * The addressing facts of a mail. It is a group mail when people other than the sender and us are
 * in To or Cc; then the bot is addressed by being in To (Cc is "for your information"), a reply to
 * one of our mails, a thread we wrote in, or its name at a line's start; To naming others but not
 * us is addressed to someone else.
 */
export function emailFacts(mail: InboundMail, ourAddress: string, names: readonly string[]): AddressFacts {
  const human = (a: string) => a !== ourAddress && a !== mail.from;
  const othersInTo = mail.to.filter(human);
  const others = [...othersInTo, ...mail.cc.filter(human)];
  const inTo = mail.to.includes(ourAddress);
  return {
    isDirect: others.length === 0,
    mentionsBot: inTo,
    // A reply to our mail, unless its To names others and not us.
    replyToBot: ours(mail.inReplyTo, ourAddress) && (inTo || othersInTo.length === 0),
    inBotThread: mail.references.some((r) => ours(r, ourAddress)),
    mentionsOthers: !inTo && othersInTo.length > 0,
    startsWithBotName: nameAtLineStart(mail.text, names),
  };
}

/** The names a group mail may start a line with: the configured display name, and our address's local part. */
export function emailBotNames(policy: GroupsPolicy, name: string, ourAddress: string): string[] {
  return botNames(policy, [name, ourAddress.split('@')[0]]);
}
