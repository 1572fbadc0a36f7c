import type { SendMailOptions } from 'nodemailer';
import { OWN_HEADER } from './loops.js';
import { htmlDocument, markdownToText } from './markdown.js';
import { replyReferences, replySubject } from './thread.js';

/** What the listener stores with each inbound message so a reply can be threaded (InboundMessage.replyTo). */
export interface EmailReplyTo {
  /** Where the reply goes: Reply-To, else From. */
  to: string;
  subject: string;
  messageId?: string;
  references: string[];
}

export function isEmailReplyTo(v: unknown): v is EmailReplyTo {
  const r = v as EmailReplyTo | null;
  return !!r && typeof r.to === 'string' && typeof r.subject === 'string' && Array.isArray(r.references);
}

/** A threaded reply: In-Reply-To the parent, References its references plus the parent, one "Re:". */
export function composeReply(opts: {
  from: { name: string; address: string };
  parent: EmailReplyTo;
  markdown: string;
  messageId: string;
  tag: string;
}): SendMailOptions {
  const { parent } = opts;
  const refs = replyReferences(parent.references, parent.messageId);
  return {
    from: opts.from,
    to: parent.to,
    subject: replySubject(parent.subject),
    messageId: opts.messageId,
    ...(parent.messageId ? { inReplyTo: parent.messageId } : {}),
    ...(refs.length ? { references: refs } : {}),
    text: markdownToText(opts.markdown),
    html: htmlDocument(opts.markdown),
    headers: {
      [OWN_HEADER]: opts.tag,
      // RFC 3834: responders must not answer this, so no robot answers us back.
      'Auto-Submitted': 'auto-replied',
    },
  };
}
