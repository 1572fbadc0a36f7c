import { optionalString, ReplyToError, replyToObject, stringArray, stringField } from '../../src/channel/index.js';
import type { EmailReplyTo } from './compose.js';

export type { EmailReplyTo };

const ADDRESS = /^[^@\s<>,;"]+@[^@\s<>,;"]+$/;
/** A header value with a line break would let a stored value add headers of its own. */
const BREAK = /[\r\n\u0000]/;

function headerSafe(v: string, key: string): string {
  if (BREAK.test(v)) throw new ReplyToError('email', `"${key}" contains a line break`);
  return v;
}

/** The stored reply target of a mail (inbound.ts writes it), or null when the row has none. */
export function parseEmailReplyTo(raw: unknown): EmailReplyTo | null {
  if (raw === null || raw === undefined) return null;
  const o = replyToObject('email', raw);
  const to = headerSafe(stringField('email', o, 'to', 320), 'to');
  if (!ADDRESS.test(to)) throw new ReplyToError('email', '"to" is not an email address');
  const subject = o.subject === '' ? '' : headerSafe(stringField('email', o, 'subject', 2_000), 'subject');
  const messageId = optionalString('email', o, 'messageId', 998);
  const references = stringArray('email', o, 'references').map((r) => headerSafe(r, 'references'));
  return { to, subject, ...(messageId ? { messageId: headerSafe(messageId, 'messageId') } : {}), references };
}
