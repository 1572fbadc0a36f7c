import EmailReplyParser from 'email-reply-parser';
import { convert } from 'html-to-text';

/**
 * email-reply-parser's regexes (about 30 languages' attribution lines: "Op … schreef <naam> het
 * volgende:", "Den … skrev <name>:", "W dniu … pisze:"…) are backtracking and grow with the square
 * of a long line: only this much of the text, from its top where the new text is, goes through it.
 */
const REPLY_PARSER_MAX_CHARS = 8_000;

const ATTRIBUTION_START = /^(on|am|le|el|il|op|den|på|em|w dniu|dnia)\s/i;
// The verb, then maybe the name after it ("… schreef Jan Jansen <jan@x.nl> het volgende:", "… skrev Ola <a@b>:").
const ATTRIBUTION_END =
  /(wrote|writes|a écrit|escribió|ha scritto|schreef|geschreven|skrev|escreveu|schrieb|pisze|napisał\(a\)|napisał)(\s[^:]{0,160})?\s*:\s*$/i;
const SEPARATOR = /^(-{2,}\s*(original message|forwarded message|ursprüngliche nachricht|message d'origine|mensaje original)\s*-{2,}|_{10,})$/i;
const OUTLOOK_FROM = /^\*?(from|von|de|da|van)\s*:\*?\s/i;
const OUTLOOK_SENT = /^\*?(sent|date|gesendet|datum|envoyé|enviado|inviato|verzonden)\s*:\*?\s/i;
const MOBILE_SIGNATURE = /^(sent from my |get outlook for |sent from (yahoo|mail) for )/i;

/** "On Mon, 1 Jan 2024, Ann <ann@x> wrote:" starting at line i (clients wrap it over up to three lines): how many lines, or 0. */
function attributionLength(lines: string[], i: number): number {
  if (!ATTRIBUTION_START.test(lines[i]!.trim())) return 0;
  let joined = '';
  for (let k = i; k < Math.min(lines.length, i + 3); k++) {
    joined += ` ${lines[k]!.trim()}`;
    if (ATTRIBUTION_END.test(joined)) return k - i + 1;
    if (!lines[k]!.trim()) return 0;
  }
  return 0;
}

/** Outlook's quoted header block: "From: …" with "Sent: …"/"Date: …" a few lines below. */
function isOutlookHeader(lines: string[], i: number): boolean {
  if (!OUTLOOK_FROM.test(lines[i]!.trim())) return false;
  for (let k = i + 1; k < Math.min(lines.length, i + 5); k++) if (OUTLOOK_SENT.test(lines[k]!.trim())) return true;
  return false;
}

/**
 * The new text of a reply: quoted lines ("> …") dropped, and everything from
 * the quoted history ("On … wrote:", Outlook's "From: … Sent: …", "-----Original
 * Message-----") or the signature ("-- ") on cut off. An "On … wrote:" above
 * any text of the sender's own is a bottom-posted reply: the text below the
 * quote is kept.
 */
export function stripQuotesAndSignature(text: string): string {
  return cutQuotedHistory(stripOwn(text));
}

/**
 * What the reply-parsing library finds on top of our own rules: the quoted history under an
 * attribution line in another language or word order, cut with everything below it. Only a cut
 * is taken from it, never a rewrite of the text above.
 */
function cutQuotedHistory(text: string): string {
  if (!text) return text;
  const head = text.slice(0, REPLY_PARSER_MAX_CHARS);
  let visible: string;
  try {
    visible = new EmailReplyParser().read(head).getVisibleText().trim();
  } catch {
    return text; // the library choked on odd input: our own rules have run already
  }
  // Only a clean cut counts: the library's text must be the top of ours (it trims lines as it reads).
  if (!visible || visible.length >= head.trim().length || !head.startsWith(visible)) return text;
  return visible;
}

function stripOwn(text: string): string {
  const lines = text.replace(/\r\n?/g, '\n').split('\n');
  const out: string[] = [];
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    const t = line.trim();
    if (line.replace(/\s+$/, '') === '--' || line === '-- ') break;
    const attribution = attributionLength(lines, i);
    if (attribution) {
      // Bottom-posting: the quote comes first and the answer below it.
      if (out.every((l) => !l.trim())) {
        i += attribution - 1;
        continue;
      }
      break;
    }
    if (SEPARATOR.test(t) || isOutlookHeader(lines, i)) break;
    if (t.startsWith('>')) continue;
    if (MOBILE_SIGNATURE.test(t) && lines.slice(i + 1).every((l) => !l.trim())) break;
    out.push(line.replace(/\s+$/, ''));
  }
  return out
    .join('\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
}

/** HTML mail as plain text: no images, no styles, quoted blocks left out. */
export function htmlToPlain(html: string): string {
  return convert(html, {
    wordwrap: false,
    selectors: [
      { selector: 'img', format: 'skip' },
      { selector: 'style', format: 'skip' },
      { selector: 'script', format: 'skip' },
      { selector: 'head', format: 'skip' },
      { selector: 'blockquote', format: 'skip' },
      { selector: 'div.gmail_quote', format: 'skip' },
      { selector: 'div#divRplyFwdMsg', format: 'skip' },
      { selector: 'a', options: { hideLinkHrefIfSameAsText: true } },
      { selector: 'h1', options: { uppercase: false } },
      { selector: 'h2', options: { uppercase: false } },
      { selector: 'h3', options: { uppercase: false } },
      { selector: 'table', format: 'dataTable' },
    ],
  });
}
