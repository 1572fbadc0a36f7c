import { ImapFlow } from 'imapflow';
import nodemailer from 'nodemailer';
import { ignoreError } from '../../kernel/errors.js';
import type { ChannelProbe } from '../../src/channel/index.js';
import type { EmailConfig } from './config.js';

/**
 * doctor --probe for email: an IMAP login that opens the mailbox, then logs out; an SMTP
 * connection that authenticates (nodemailer's verify) and sends nothing.
 */
export async function probeEmail(c: EmailConfig): Promise<ChannelProbe[]> {
  const imap = async (): Promise<ChannelProbe> => {
    const client = new ImapFlow({
      host: c.imap.host,
      port: c.imap.port,
      secure: c.imap.secure,
      auth: { user: c.imap.user, pass: c.secrets.imapPassword },
      tls: { rejectUnauthorized: c.imap.rejectUnauthorized },
      logger: false,
      connectionTimeout: 10_000,
    });
    client.on('error', ignoreError('the awaited connect or mailboxOpen below reports it'));
    try {
      await client.connect();
      const box = await client.mailboxOpen(c.imap.mailbox, { readOnly: true });
      await client.logout();
      return { name: 'imap', ok: true, message: `${c.imap.user}@${c.imap.host}:${c.imap.port}: logged in, ${c.imap.mailbox} holds ${box.exists} message(s)` };
    } catch (err) {
      client.close();
      const e = err as { responseText?: string; message: string };
      return { name: 'imap', ok: false, message: `${c.imap.user}@${c.imap.host}:${c.imap.port}: ${e.responseText ?? e.message}` };
    }
  };
  const smtp = async (): Promise<ChannelProbe> => {
    const s = c.smtp;
    const transport = nodemailer.createTransport({
      host: s.host,
      port: s.port,
      secure: s.secure,
      requireTLS: s.requireTLS,
      ...(s.auth ? { auth: { user: s.user ?? c.imap.user, pass: c.secrets.smtpPassword ?? '' } } : {}),
      tls: { rejectUnauthorized: s.rejectUnauthorized },
      connectionTimeout: 10_000,
    });
    try {
      await transport.verify();
      return { name: 'smtp', ok: true, message: `${s.host}:${s.port}: ${s.auth ? 'authenticated' : 'connected (no authentication)'}` };
    } catch (err) {
      return { name: 'smtp', ok: false, message: `${s.host}:${s.port}: ${(err as Error).message}` };
    } finally {
      transport.close();
    }
  };
  return Promise.all([imap(), smtp()]);
}
