import { RawHeaders } from './headers.js';

/** Our own mail carries this header (also used to recognize it when it comes back). */
export const OWN_HEADER = 'X-Switchboard';

/**
 * Subjects auto-responders write (Outlook, Exchange, Gmail, Apple Mail… in their users' languages),
 * for the auto-replies that carry none of RFC 3834's headers: the phrase, then ":" (or "-", "(", the end).
 */
const AUTO_REPLY_SUBJECT = new RegExp(
  String.raw`^\s*(?:\[?auto\]?\s*)?(?:` +
    [
      'automatic reply',
      'auto(?:matic)?[- ]?(?:reply|response)',
      'autoreply',
      'out of (?:the )?office(?: (?:reply|autoreply|auto reply))?',
      'away from (?:the )?office',
      'abwesenheitsnotiz',
      'automatische antwort',
      'abwesend',
      'automatisch antwoord',
      'afwezigheidsbericht',
      'autosvar',
      'automatisk svar',
      'fraværsmelding',
      'frånvaro',
      'réponse automatique',
      'absent(?:e)? du bureau',
      'respuesta automática',
      'fuera de la oficina',
      'risposta automatica',
      'fuori sede',
      'resposta automática',
      'fora do escritório',
      'automaattinen vastaus',
      'poza biurem',
      'odpowiedź automatyczna',
      'automatická odpověď',
      'автоматический ответ',
      '自動応答',
      '自动回复',
    ].join('|') +
    String.raw`)\s*(?::|-|–|\(|$)`,
  'iu',
);

const ROBOT_LOCALPART = /^(mailer-daemon|postmaster|no-?reply|do-?not-?reply|bounces?|auto-?reply|autoresponder)([+._-].*)?$/i;

/**
 * Why a message must not be answered (auto-reply, bounce, bulk or list mail,
 * or our own), or null for a person's mail. Never answering these is what
 * keeps two robots from mailing each other forever.
 */
export function automatedReason(h: RawHeaders, from: string, ourAddress: string, contentType?: string, subject?: string): string | null {
  if (h.has(OWN_HEADER)) return 'our own message (X-Switchboard)';
  if (from === ourAddress) return 'from our own address';
  const autoSubmitted = h.first('auto-submitted');
  if (autoSubmitted && autoSubmitted.split(';')[0]!.trim().toLowerCase() !== 'no') return `Auto-Submitted: ${autoSubmitted}`;
  const precedence = h.first('precedence')?.trim().toLowerCase();
  if (precedence && ['bulk', 'junk', 'list', 'auto_reply'].includes(precedence)) return `Precedence: ${precedence}`;
  // X-Auto-Response-Suppress: Exchange/Outlook mark their own auto-replies and notices so.
  for (const name of ['list-id', 'list-unsubscribe', 'x-autoreply', 'x-autorespond', 'x-autoresponder', 'x-auto-reply', 'x-auto-response-suppress']) {
    if (h.has(name)) return `${name} header`;
  }
  const returnPath = h.all('return-path');
  if (returnPath.some((v) => /^<\s*>$/.test(v.trim()))) return 'null Return-Path (a bounce)';
  if (contentType && /^multipart\/report/i.test(contentType)) return 'delivery report';
  if (subject && AUTO_REPLY_SUBJECT.test(subject)) return `auto-reply subject "${subject.slice(0, 80)}"`;
  const local = from.slice(0, Math.max(0, from.lastIndexOf('@')));
  if (ROBOT_LOCALPART.test(local)) return `robot sender ${from}`;
  return null;
}
