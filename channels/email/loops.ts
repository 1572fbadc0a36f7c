import { RawHeaders } from './headers.js';

/** Our own mail carries this header (also used to recognize it when it comes back). */
export const OWN_HEADER = 'X-Switchboard';

const ROBOT_LOCALPART = /^(mailer-daemon|postmaster|no-?reply|do-?not-?reply|bounces?|auto-?reply|autoresponder)([+._-].*)?$/i;

/**
 * Why a message must not be answered (auto-reply, bounce, bulk or list mail,
 * or our own), or null for a person's mail. Never answering these is what
 * keeps two robots from mailing each other forever.
 */
export function automatedReason(h: RawHeaders, from: string, ourAddress: string, contentType?: string): string | null {
  if (h.has(OWN_HEADER)) return 'our own message (X-Switchboard)';
  if (from === ourAddress) return 'from our own address';
  const autoSubmitted = h.first('auto-submitted');
  if (autoSubmitted && autoSubmitted.split(';')[0]!.trim().toLowerCase() !== 'no') return `Auto-Submitted: ${autoSubmitted}`;
  const precedence = h.first('precedence')?.trim().toLowerCase();
  if (precedence && ['bulk', 'junk', 'list', 'auto_reply'].includes(precedence)) return `Precedence: ${precedence}`;
  for (const name of ['list-id', 'list-unsubscribe', 'x-autoreply', 'x-autorespond', 'x-autoresponder', 'x-auto-reply']) {
    if (h.has(name)) return `${name} header`;
  }
  const returnPath = h.all('return-path');
  if (returnPath.some((v) => /^<\s*>$/.test(v.trim()))) return 'null Return-Path (a bounce)';
  if (contentType && /^multipart\/report/i.test(contentType)) return 'delivery report';
  const local = from.slice(0, Math.max(0, from.lastIndexOf('@')));
  if (ROBOT_LOCALPART.test(local)) return `robot sender ${from}`;
  return null;
}
