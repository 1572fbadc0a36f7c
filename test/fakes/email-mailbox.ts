/**
 * The other side of the mailbox in the email tests: builds raw RFC 5322 mail
 * and delivers it into the private Dovecot by IMAP APPEND (as a receiving
 * server would), and reads back flags.
 */
import { randomUUID } from 'node:crypto';
import { ImapFlow } from 'imapflow';
import type { Dovecot } from '../support/dovecot.js';

export interface MailSpec {
  from: string;
  fromName?: string;
  /** One address or several (a group mail); default the bot. */
  to?: string | string[];
  cc?: string[];
  subject: string;
  text?: string;
  html?: string;
  messageId?: string;
  inReplyTo?: string;
  references?: string[];
  /** Extra headers, written above the others (as a receiving server prepends its own). */
  headers?: Array<[string, string]>;
  /** MIME parts after the body (multipart/mixed): attached files, or inline pictures (Content-Disposition: inline, a Content-ID). */
  parts?: Array<{ contentType: string; bytes: Buffer; filename?: string; inline?: boolean }>;
}

export const newMessageId = (domain = 'example.com') => `<${randomUUID()}@${domain}>`;

/** Authentication-Results as the receiving server (authserv-id mx.example.test) would write it. */
export function authResults(domain: string, pass: boolean, authServId = 'mx.example.test'): [string, string] {
  const r = pass ? 'pass' : 'fail';
  return [
    'Authentication-Results',
    `${authServId}; dkim=${r} header.d=${domain} header.s=s1; spf=${r} (sender IP is 192.0.2.1) smtp.mailfrom=someone@${domain}; dmarc=${r} header.from=${domain}`,
  ];
}

export function rawMail(m: MailSpec): { raw: string; messageId: string } {
  const messageId = m.messageId ?? newMessageId();
  const lines: string[] = [];
  for (const [k, v] of m.headers ?? []) lines.push(`${k}: ${v}`);
  lines.push(`From: ${m.fromName ? `"${m.fromName}" ` : ''}<${m.from}>`);
  lines.push(
    `To: ${[m.to ?? 'bot@example.test']
      .flat()
      .map((a) => `<${a}>`)
      .join(', ')}`,
  );
  if (m.cc?.length) lines.push(`Cc: ${m.cc.map((a) => `<${a}>`).join(', ')}`);
  lines.push(`Subject: ${m.subject}`);
  lines.push(`Date: ${new Date().toUTCString()}`);
  lines.push(`Message-ID: ${messageId}`);
  if (m.inReplyTo) lines.push(`In-Reply-To: ${m.inReplyTo}`);
  if (m.references?.length) lines.push(`References: ${m.references.join(' ')}`);
  lines.push('MIME-Version: 1.0');
  const mixed = m.parts?.length ? `m${randomUUID()}` : undefined;
  if (mixed) lines.push(`Content-Type: multipart/mixed; boundary="${mixed}"`, '', `--${mixed}`);
  if (m.html !== undefined && m.text === undefined) {
    lines.push('Content-Type: text/html; charset=utf-8', '', m.html);
  } else if (m.html !== undefined) {
    const b = `b${randomUUID()}`;
    lines.push(
      `Content-Type: multipart/alternative; boundary="${b}"`,
      '',
      `--${b}`,
      'Content-Type: text/plain; charset=utf-8',
      '',
      m.text!,
      `--${b}`,
      'Content-Type: text/html; charset=utf-8',
      '',
      m.html,
      `--${b}--`,
    );
  } else {
    lines.push('Content-Type: text/plain; charset=utf-8', '', m.text ?? '');
  }
  if (mixed) {
    for (const [i, p] of m.parts!.entries()) {
      const name = p.filename ? `; filename="${p.filename}"` : '';
      lines.push(
        `--${mixed}`,
        `Content-Type: ${p.contentType}${p.filename ? `; name="${p.filename}"` : ''}`,
        'Content-Transfer-Encoding: base64',
        `Content-Disposition: ${p.inline ? 'inline' : 'attachment'}${name}`,
        ...(p.inline ? [`Content-ID: <part${i}@example.com>`] : []),
        '',
        ...(p.bytes.toString('base64').match(/.{1,76}/g) ?? ['']),
      );
    }
    lines.push(`--${mixed}--`);
  }
  return { raw: lines.join('\r\n') + '\r\n', messageId };
}

export class TestMailbox {
  private constructor(private readonly client: ImapFlow) {}

  static async open(d: Dovecot): Promise<TestMailbox> {
    const client = new ImapFlow({ host: d.host, port: d.port, secure: false, auth: { user: d.user, pass: d.password }, logger: false });
    client.on('error', () => {});
    await client.connect();
    return new TestMailbox(client);
  }

  /** Delivers a mail into INBOX; returns its Message-ID and UID. `receivedAt`: the server's internal date (a mail that came in long ago). */
  async deliver(m: MailSpec, mailbox = 'INBOX', receivedAt?: Date): Promise<{ messageId: string; uid: number }> {
    const { raw, messageId } = rawMail(m);
    const r = await this.client.append(mailbox, raw, [], receivedAt);
    if (!r) throw new Error('APPEND failed');
    return { messageId, uid: r.uid ?? 0 };
  }

  /** Delivers a raw message exactly as given (real-world shapes: its own charset, encodings and headers). */
  async deliverRaw(raw: string | Buffer, opts: { receivedAt?: Date; mailbox?: string } = {}): Promise<{ uid: number }> {
    const r = await this.client.append(opts.mailbox ?? 'INBOX', raw, [], opts.receivedAt);
    if (!r) throw new Error('APPEND failed');
    return { uid: r.uid ?? 0 };
  }

  async flags(uid: number, mailbox = 'INBOX'): Promise<string[]> {
    const lock = await this.client.getMailboxLock(mailbox);
    try {
      const m = await this.client.fetchOne(String(uid), { uid: true, flags: true }, { uid: true });
      return m ? [...(m.flags ?? [])] : [];
    } finally {
      lock.release();
    }
  }

  /** The Message-IDs in a mailbox, in UID order. */
  async messageIds(mailbox = 'INBOX'): Promise<string[]> {
    const lock = await this.client.getMailboxLock(mailbox);
    try {
      const all = await this.client.fetchAll('1:*', { uid: true, envelope: true }, { uid: true });
      return all.map((m) => m.envelope?.messageId ?? '');
    } catch {
      return []; // empty mailbox
    } finally {
      lock.release();
    }
  }

  async close(): Promise<void> {
    await this.client.logout().catch(() => {});
  }
}
