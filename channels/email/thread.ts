/** Reply prefixes mail clients put in front of a subject, in a few languages. */
const REPLY_PREFIX = /^\s*(re|aw|sv|vs|antw|odp|ynt)\s*(\[\d+\]|\(\d+\))?\s*:\s*/i;
const ANY_PREFIX = /^\s*(re|aw|sv|vs|antw|odp|ynt|fw|fwd|wg|tr|enc|rv)\s*(\[\d+\]|\(\d+\))?\s*:\s*/i;

export function hasReplyPrefix(subject: string): boolean {
  return REPLY_PREFIX.test(subject);
}

/** "Re: " once, however many "Re: Re: AW:" the subject had. */
export function replySubject(subject: string | undefined): string {
  let s = (subject ?? '').trim();
  while (REPLY_PREFIX.test(s)) s = s.replace(REPLY_PREFIX, '');
  return `Re: ${s || 'your message'}`;
}

/** A subject for matching threads: no reply/forward prefixes, case and spacing folded. */
export function normalizeSubject(subject: string | undefined): string {
  let s = (subject ?? '').trim();
  while (ANY_PREFIX.test(s)) s = s.replace(ANY_PREFIX, '');
  return s.replace(/\s+/g, ' ').toLowerCase();
}

/**
 * The thread a message belongs to: the first id of References (the root),
 * else In-Reply-To, else its own Message-ID. A reply that carries neither
 * header (some clients drop them), or mail without a Message-ID, falls back to
 * the normalized subject (the conversation key adds the sender).
 */
export function threadKey(m: { messageId?: string | undefined; references: string[]; inReplyTo?: string | undefined; subject?: string | undefined }): string {
  if (m.references[0]) return m.references[0];
  if (m.inReplyTo) return m.inReplyTo;
  if (!m.messageId || hasReplyPrefix(m.subject ?? '')) return `subject:${normalizeSubject(m.subject)}`;
  return m.messageId;
}

/** References for our reply: the parent's references, then the parent itself (RFC 5322 §3.6.4). */
export function replyReferences(parentReferences: string[], parentMessageId: string | undefined): string[] {
  const refs = [...parentReferences];
  if (parentMessageId && !refs.includes(parentMessageId)) refs.push(parentMessageId);
  // Keep the root and the most recent ones: some servers reject very long headers.
  return refs.length > 20 ? [refs[0]!, ...refs.slice(-19)] : refs;
}
