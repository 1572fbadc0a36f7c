import { createHash } from 'node:crypto';
import { type AddressObject, simpleParser } from 'mailparser';
import type { Attachment } from '../../kernel/envelope.js';
import { parseApprovalAnswer, parseCommand } from '../../src/channel/index.js';
import { senderAuthenticated } from './auth-results.js';
import { repairMislabeledUtf8 } from './charset.js';
import { htmlToPlain, stripQuotesAndSignature } from './clean.js';
import { messageIds, normalizeMessageId, RawHeaders } from './headers.js';
import { mailAttachments } from './images.js';
import { automatedReason } from './loops.js';
import { hasReplyPrefix } from './thread.js';

/** An inbound mail, read and judged, before it becomes an InboundMessage. */
export interface InboundMail {
  /** Message-ID with brackets, or a hash of the message when it has none. */
  externalId: string;
  messageId?: string;
  from: string;
  fromName?: string;
  /** Where a reply goes: Reply-To, else From. */
  replyAddress: string;
  subject: string;
  references: string[];
  inReplyTo?: string;
  /** The new text: quotes and signature removed, HTML turned into text. */
  text: string;
  attachments: Attachment[];
  /** Why this must not be answered (auto-reply, bounce, list, our own), or null. */
  automated: string | null;
  /** The receiving server vouches for the From domain (Authentication-Results). */
  authenticated: boolean;
  /** The To and Cc addresses, lowercased (who else the mail is for: a group thread). */
  to: string[];
  cc: string[];
  date?: Date;
}

export interface ReadOptions {
  ourAddress: string;
  authServId?: string | undefined;
  maxTextChars: number;
  /** attachments.maxImageBytes: image parts up to it are kept for the model (./images.ts). */
  maxImageBytes?: number;
}

function firstAddress(a: AddressObject | AddressObject[] | undefined): { address: string; name?: string } | undefined {
  const list = Array.isArray(a) ? a : a ? [a] : [];
  for (const obj of list) {
    for (const v of obj.value) {
      const found = v.address ? v : v.group?.find((g) => g.address);
      if (found?.address) return { address: found.address.trim().toLowerCase(), ...(found.name ? { name: found.name } : {}) };
    }
  }
  return undefined;
}

/** Every address of a header (groups unfolded), lowercased, at most 100. */
function addresses(a: AddressObject | AddressObject[] | undefined): string[] {
  const out: string[] = [];
  for (const obj of Array.isArray(a) ? a : a ? [a] : []) {
    for (const v of obj.value) {
      for (const x of v.group ?? [v]) if (x.address && out.length < 100) out.push(x.address.trim().toLowerCase());
    }
  }
  return out;
}

/** Parses a raw message (mailparser) into what the channel needs; null when it has no usable sender. */
export async function readMail(raw: Buffer, opts: ReadOptions): Promise<InboundMail | null> {
  const p = await simpleParser(raw, { skipHtmlToText: true, skipTextToHtml: true, skipImageLinks: true, skipTextLinks: true });
  const from = firstAddress(p.from);
  if (!from || !/^[^@\s]+@[^@\s]+$/.test(from.address)) return null;
  const headers = new RawHeaders(p.headerLines);
  const contentType = headers.first('content-type');
  const messageId = normalizeMessageId(p.messageId);
  const references = messageIds(p.references);
  const inReplyTo = messageIds(p.inReplyTo)[0];
  const subject = repairMislabeledUtf8((p.subject ?? '').trim());

  const body = repairMislabeledUtf8(p.text?.trim() ? p.text : p.html ? htmlToPlain(p.html) : '');
  let text = stripQuotesAndSignature(body);
  const bareSubject = subject.replace(/^\s*(re|aw|sv)\s*:\s*/i, '');
  // Approval answers and conversation commands (/new, /status…) must stay on the first line.
  if (!parseApprovalAnswer(text) && !parseCommand(text)) {
    if (!text && parseApprovalAnswer(bareSubject)) text = bareSubject;
    // A new thread's subject is often the question itself.
    else if (subject && !inReplyTo && !references.length && !hasReplyPrefix(subject)) text = text ? `Subject: ${subject}\n\n${text}` : subject;
  }
  if (text.length > opts.maxTextChars) text = `${text.slice(0, opts.maxTextChars)}\n\n[… message cut at ${opts.maxTextChars} characters]`;

  const attachments: Attachment[] = mailAttachments(p.attachments, opts.maxImageBytes);
  if (!text && attachments.length) text = `(${attachments.length} attachment${attachments.length > 1 ? 's' : ''}, no text)`;

  const replyTo = firstAddress(p.replyTo);
  return {
    externalId: messageId ?? `<sha256.${createHash('sha256').update(raw).digest('hex').slice(0, 40)}@switchboard.invalid>`,
    ...(messageId ? { messageId } : {}),
    from: from.address,
    ...(from.name ? { fromName: repairMislabeledUtf8(from.name) } : {}),
    replyAddress: replyTo && replyTo.address !== opts.ourAddress ? replyTo.address : from.address,
    subject,
    references,
    ...(inReplyTo ? { inReplyTo } : {}),
    text,
    attachments,
    automated: automatedReason(headers, from.address, opts.ourAddress, contentType, subject),
    authenticated: senderAuthenticated(headers.all('authentication-results'), from.address, opts.authServId),
    to: addresses(p.to),
    cc: addresses(p.cc),
    ...(p.date ? { date: p.date } : {}),
  };
}
