/**
 * The email channel's pure parts: quote and signature stripping, HTML to
 * text, loop detection, Authentication-Results, threading, markdown, config.
 */
import { describe, expect, it } from 'vitest';
import { senderAuthenticated } from '../channels/email/auth-results.js';
import { stripQuotesAndSignature } from '../channels/email/clean.js';
import { composeReply } from '../channels/email/compose.js';
import { parseEmailConfig } from '../channels/email/config.js';
import { RawHeaders } from '../channels/email/headers.js';
import { toInbound } from '../channels/email/inbound.js';
import { plugin } from '../channels/email/index.js';
import { automatedReason } from '../channels/email/loops.js';
import { markdownToHtml, markdownToText } from '../channels/email/markdown.js';
import { readMail } from '../channels/email/parse.js';
import { isTransientSmtpError } from '../channels/email/smtp.js';
import { normalizeSubject, replySubject, threadKey } from '../channels/email/thread.js';
import { instantiate } from '../src/channel/plugin.js';
import { ConfigError } from '../src/config.js';
import { rawMail } from './fakes/email-mailbox.js';

const OUR = 'bot@example.test';
const read = (spec: Parameters<typeof rawMail>[0]) => readMail(Buffer.from(rawMail(spec).raw), { ourAddress: OUR, maxTextChars: 20_000 });

describe('email: cleaning the text', () => {
  it('drops quoted lines, "On … wrote:" blocks (also wrapped), signatures', () => {
    expect(stripQuotesAndSignature('Sounds good.\n\nOn Mon, Jan 1, 2024 at 10:00 AM Bot <bot@x.com> wrote:\n> old\n> older')).toBe('Sounds good.');
    expect(stripQuotesAndSignature('Yes.\n\nOn Mon, Jan 1, 2024 at 10:00 AM Switchboard Bot <\nbot@example.test> wrote:\n\n> old')).toBe('Yes.');
    expect(stripQuotesAndSignature('Am 01.01.2024 um 10:00 schrieb Bot:\n> alt')).toBe('');
    expect(stripQuotesAndSignature('Hi\n> quoted inline\nmy answer\n-- \nAnn\nACME')).toBe('Hi\nmy answer');
    expect(stripQuotesAndSignature('Thanks\n\nSent from my iPhone\n')).toBe('Thanks');
    expect(stripQuotesAndSignature('On second thought, no.\nBye')).toBe('On second thought, no.\nBye');
    // Bottom-posted: the answer below the quote.
    expect(stripQuotesAndSignature('On Mon, Jan 1, 2024, Bot <bot@x.com> wrote:\n> Reply YES K7Q2P\n\nYES K7Q2P\n-- \nOp')).toBe('YES K7Q2P');
  });

  it('cuts Outlook history ("From: … Sent: …", separators)', () => {
    const outlook =
      'Approved.\r\n\r\n________________________________\r\nFrom: Bot <bot@example.test>\r\nSent: Monday, January 1, 2024 10:00 AM\r\nTo: Ann\r\nSubject: Re: x\r\n\r\nold text';
    expect(stripQuotesAndSignature(outlook)).toBe('Approved.');
    expect(stripQuotesAndSignature('ok\n\nFrom: Bot <bot@example.test>\nDate: Mon, 1 Jan 2024\nSubject: x\n\nold')).toBe('ok');
    expect(stripQuotesAndSignature('ok\n-----Original Message-----\nold')).toBe('ok');
    expect(stripQuotesAndSignature('From: the start of the week we will be fine')).toBe('From: the start of the week we will be fine');
  });

  it('reads HTML-only mail as text, without the quoted part', async () => {
    const m = await read({
      from: 'ann@example.com',
      subject: 'Re: plan',
      inReplyTo: '<p@example.com>',
      html: '<html><head><style>p{color:red}</style></head><body><p>Hello <b>there</b>,</p><p>see <a href="https://x.example/doc">the doc</a></p><div class="gmail_quote">On Mon, Bot wrote:<blockquote>old stuff</blockquote></div></body></html>',
    });
    expect(m!.text).toContain('Hello there');
    expect(m!.text).toContain('the doc [https://x.example/doc]');
    expect(m!.text).not.toContain('old stuff');
    expect(m!.text).not.toContain('color');
  });

  it('keeps an approval answer on the first line; prefixes a new thread with its subject; lists attachments', async () => {
    const yes = await read({ from: 'op@example.com', subject: 'Re: Approval', inReplyTo: '<a@b>', text: 'YES K7Q2P\n\nOn Mon, Bot wrote:\n> Reply YES K7Q2P' });
    expect(yes!.text).toBe('YES K7Q2P');
    const fresh = await read({ from: 'op@example.com', subject: 'YES K7Q2P', text: '' });
    expect(fresh!.text).toBe('YES K7Q2P');
    const cmd = await read({ from: 'ann@example.com', subject: 'start over', text: '/new' });
    expect(cmd!.text).toBe('/new');
    const q = await read({ from: 'ann@example.com', subject: 'Weather', text: 'Will it rain?' });
    expect(q!.text).toBe('Subject: Weather\n\nWill it rain?');
    const b = 'bnd';
    const raw = [
      'From: ann@example.com',
      'To: bot@example.test',
      'Subject: files',
      'Message-ID: <f@example.com>',
      `Content-Type: multipart/mixed; boundary="${b}"`,
      '',
      `--${b}`,
      'Content-Type: text/plain',
      '',
      'see attached',
      `--${b}`,
      'Content-Type: application/pdf; name="a.pdf"',
      'Content-Disposition: attachment; filename="a.pdf"',
      'Content-Transfer-Encoding: base64',
      '',
      'JVBERi0xLjQK',
      `--${b}--`,
      '',
    ].join('\r\n');
    const f = await readMail(Buffer.from(raw), { ourAddress: OUR, maxTextChars: 100 });
    expect(f!.attachments).toEqual([{ name: 'a.pdf', contentType: 'application/pdf', size: 9 }]);
    expect(f!.externalId).toBe('<f@example.com>');
  });
});

describe('email: loops', () => {
  const h = (lines: Array<[string, string]>) => new RawHeaders(lines.map(([k, v]) => ({ key: k.toLowerCase(), line: `${k}: ${v}` })));
  it('recognizes auto-replies, bounces, bulk and our own mail', () => {
    expect(automatedReason(h([['Auto-Submitted', 'auto-replied']]), 'a@x.com', OUR)).toMatch(/Auto-Submitted/);
    expect(automatedReason(h([['Auto-Submitted', 'no']]), 'a@x.com', OUR)).toBeNull();
    expect(automatedReason(h([['Precedence', 'junk']]), 'a@x.com', OUR)).toMatch(/Precedence/);
    expect(automatedReason(h([['List-Unsubscribe', '<mailto:u@x.com>']]), 'a@x.com', OUR)).toMatch(/list-unsubscribe/);
    expect(automatedReason(h([['X-Autorespond', 'yes']]), 'a@x.com', OUR)).toMatch(/x-autorespond/);
    expect(automatedReason(h([['Return-Path', '<>']]), 'a@x.com', OUR)).toMatch(/bounce/);
    expect(automatedReason(h([]), 'postmaster@x.com', OUR)).toMatch(/robot/);
    expect(automatedReason(h([]), 'no-reply+x@x.com', OUR)).toMatch(/robot/);
    expect(automatedReason(h([]), OUR, OUR)).toMatch(/our own/);
    expect(automatedReason(h([['X-Switchboard', 'turn=t']]), 'a@x.com', OUR)).toMatch(/our own/);
    expect(automatedReason(h([]), 'a@x.com', OUR, 'multipart/report; report-type=delivery-status')).toMatch(/report/);
    expect(automatedReason(h([['Return-Path', '<a@x.com>']]), 'noreplyish.person@x.com', OUR)).toBeNull();
  });
});

describe('email: Authentication-Results', () => {
  it('trusts only a pass for the From domain from the receiving server', () => {
    const pass = 'mx.example.test; dkim=pass (2048-bit key) header.d=example.com header.s=s1; spf=softfail smtp.mailfrom=x@other.org';
    expect(senderAuthenticated([pass], 'op@example.com', 'mx.example.test')).toBe(true);
    expect(senderAuthenticated([pass], 'op@sub.example.com')).toBe(true); // relaxed alignment
    expect(senderAuthenticated([pass], 'op@evil.com')).toBe(false); // another domain's signature
    expect(senderAuthenticated(['mx.example.test; spf=pass smtp.mailfrom=op@example.com'], 'op@example.com', 'mx.example.test')).toBe(true);
    expect(senderAuthenticated(['mx.example.test; dmarc=pass header.from=example.com'], 'op@example.com', 'mx.example.test')).toBe(true);
    expect(
      senderAuthenticated(['mx.example.test; dkim=fail header.d=example.com; spf=fail smtp.mailfrom=example.com'], 'op@example.com', 'mx.example.test'),
    ).toBe(false);
    // A header under another authserv-id (the forger's own) does not count…
    expect(senderAuthenticated(['mx.example.test; dkim=none', 'evil.example; dkim=pass header.d=example.com'], 'op@example.com', 'mx.example.test')).toBe(
      false,
    );
    // …and without an authserv-id configured only the topmost header counts.
    expect(senderAuthenticated(['mx.example.test; dkim=none', 'evil.example; dkim=pass header.d=example.com'], 'op@example.com')).toBe(false);
    expect(senderAuthenticated([], 'op@example.com')).toBe(false);
  });

  it('an unauthenticated sender gets an id that matches no operator', async () => {
    const m = await read({ from: 'op@example.com', subject: 'x', text: 'YES K7Q2P' });
    expect(toInbound(m!, { ourAddress: OUR, requireAuthenticatedSender: true }).sender.id).toBe('unverified:op@example.com');
    expect(toInbound(m!, { ourAddress: OUR, requireAuthenticatedSender: false }).sender.id).toBe('op@example.com');
  });
});

describe('email: threading', () => {
  it('keys by the thread root, else In-Reply-To, else its own id, else the subject', () => {
    expect(threadKey({ messageId: '<c>', references: ['<a>', '<b>'], inReplyTo: '<b>', subject: 'Re: x' })).toBe('<a>');
    expect(threadKey({ messageId: '<c>', references: [], inReplyTo: '<b>', subject: 'Re: x' })).toBe('<b>');
    expect(threadKey({ messageId: '<c>', references: [], subject: 'x' })).toBe('<c>');
    expect(threadKey({ messageId: '<c>', references: [], subject: 'RE: AW: Fwd:  Hello  World' })).toBe('subject:hello world');
    expect(normalizeSubject('Re: RE: Fwd:  Hi  There')).toBe('hi there');
    expect(normalizeSubject('Re[2]: AW: x')).toBe('x');
  });

  it('replies with one "Re:", In-Reply-To and References', async () => {
    expect(replySubject('Re: Re: AW: Hello')).toBe('Re: Hello');
    expect(replySubject('Hello')).toBe('Re: Hello');
    expect(replySubject('')).toBe('Re: your message');
    const mail = composeReply({
      from: { name: 'Bot', address: OUR },
      parent: { to: 'ann@example.com', subject: 'Re: Hello', messageId: '<p@x>', references: ['<r@x>', '<q@x>'] },
      markdown: 'Hi **Ann**',
      messageId: '<m@example.test>',
      tag: 'turn=t1',
    });
    expect(mail).toMatchObject({ subject: 'Re: Hello', inReplyTo: '<p@x>', references: ['<r@x>', '<q@x>', '<p@x>'], to: 'ann@example.com' });
    expect(mail.headers).toMatchObject({ 'X-Switchboard': 'turn=t1', 'Auto-Submitted': 'auto-replied' });
    const conv = async (spec: Parameters<typeof rawMail>[0]) =>
      toInbound((await read(spec))!, { ourAddress: OUR, requireAuthenticatedSender: false }).conversationKey;
    // Another sender in the same thread is another conversation.
    expect(await conv({ from: 'ann@example.com', subject: 'Re: x', inReplyTo: '<root@x>', text: 'a' })).not.toBe(
      await conv({ from: 'bob@example.com', subject: 'Re: x', inReplyTo: '<root@x>', text: 'a' }),
    );
    expect(await conv({ from: 'ann@example.com', subject: 'Re: x', references: ['<root@x>', '<p@x>'], text: 'a' })).toBe(
      await conv({ from: 'Ann@Example.com', subject: 'x', inReplyTo: '<root@x>', text: 'b' }),
    );
  });
});

describe('email: markdown', () => {
  it('converts the usual markdown and escapes everything else', () => {
    const html = markdownToHtml(
      '# Title\n\nHello **bold** and *it* and `a<b>` and [link](https://x.example/?a=1&b=2).\nNext line <script>alert(1)</script>\n\n- one\n- two\n\n1. first\n2. second\n\n```\nif (a < b) {}\n```\n\n> quoted\n\n[bad](javascript:alert(1))',
    );
    expect(html).toContain('<h1>Title</h1>');
    expect(html).toContain('<strong>bold</strong>');
    expect(html).toContain('<em>it</em>');
    expect(html).toMatch(/<code[^>]*>a&lt;b&gt;<\/code>/);
    expect(html).toContain('<a href="https://x.example/?a=1&amp;b=2">link</a>');
    expect(html).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(html).not.toContain('<script>');
    expect(html).toContain('<ul><li>one</li><li>two</li></ul>');
    expect(html).toContain('<ol><li>first</li><li>second</li></ol>');
    expect(html).toMatch(/<pre[^>]*><code>if \(a &lt; b\) \{\}<\/code><\/pre>/);
    expect(html).toMatch(/<blockquote[^>]*><p>quoted<\/p><\/blockquote>/);
    expect(html).not.toContain('href="javascript');
    expect(html).toContain('<br>');
    expect(markdownToHtml('snake_case_name and 2*3*4')).toBe('<p>snake_case_name and 2*3*4</p>');
    expect(markdownToText('see [the doc](https://x.example)')).toBe('see the doc <https://x.example>');
  });
});

describe('email: SMTP errors and configuration', () => {
  it('retries 4xx and dropped connections, not 5xx', () => {
    expect(isTransientSmtpError({ responseCode: 451 })).toBe(true);
    expect(isTransientSmtpError({ responseCode: 421 })).toBe(true);
    expect(isTransientSmtpError({ responseCode: 550 })).toBe(false);
    expect(isTransientSmtpError({ code: 'ECONNECTION' })).toBe(true);
    expect(isTransientSmtpError({ code: 'EAUTH', responseCode: 535 })).toBe(false);
  });

  it('validates channels.email and names the key', () => {
    const ok = { address: 'Bot@Example.test', imap: { host: 'imap.x', user: 'bot' }, smtp: { host: 'smtp.x' } };
    const env = { EMAIL_IMAP_PASSWORD: 'pw' };
    const cfg = parseEmailConfig(ok, env);
    expect(cfg).toMatchObject({
      address: 'bot@example.test',
      poll: true,
      imap: { port: 993, secure: true, mailbox: 'INBOX' },
      smtp: { port: 587 },
      processed: { action: 'flag', keyword: '$SwitchboardSeen' },
    });
    expect(cfg.secrets).toEqual({ imapPassword: 'pw', smtpPassword: 'pw' });
    expect(parseEmailConfig(ok, { ...env, EMAIL_SMTP_PASSWORD: 'spw' }).secrets.smtpPassword).toBe('spw');
    expect(() => parseEmailConfig({ ...ok, address: 'nope' }, env)).toThrow(/channels\.email\.address/);
    expect(() => parseEmailConfig({ ...ok, imap: { host: 'x' } }, env)).toThrow(/channels\.email\.imap\.user/);
    expect(() => parseEmailConfig({ ...ok, extra: 1 }, env)).toThrow(ConfigError);
    expect(() => parseEmailConfig({ ...ok, processed: { action: 'delete' } }, env)).toThrow(/channels\.email\.processed\.action/);
    expect(() => parseEmailConfig(ok, {})).toThrow(/channels\.email\.imap\.passwordEnv.*EMAIL_IMAP_PASSWORD/);
    expect(instantiate(plugin, { ...ok, poll: false }, env).listener).toBeUndefined();
    expect(instantiate(plugin, ok, env).listener).toBeDefined();
  });
});
