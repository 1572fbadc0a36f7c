import { connect as tcpConnect } from 'node:net';
import type { ChannelSetup, SetupCheck } from '../../src/channel/index.js';

/** Opens (and closes) a TCP connection: is the server there? TLS and login are checked at start. */
function reachable(name: string, host: string, port: number, timeoutMs = 5_000): Promise<SetupCheck> {
  return new Promise((resolve) => {
    const socket = tcpConnect({ host, port });
    const done = (ok: boolean, message: string) => {
      socket.destroy();
      resolve({ name, ok, message });
    };
    socket.setTimeout(timeoutMs, () => done(false, `${host}:${port} did not answer in ${timeoutMs} ms`));
    socket.once('connect', () => done(true, `${host}:${port} accepts connections`));
    socket.once('error', (err) => done(false, `${host}:${port}: ${err.message}`));
  });
}

export const setup: ChannelSetup = {
  questions: [
    { flag: 'email-address', prompt: 'Email: the address the agent answers from', required: true },
    { flag: 'imap-host', prompt: 'Email: the IMAP server (e.g. imap.example.com)', required: true },
    { flag: 'imap-port', prompt: 'Email: the IMAP port (993: TLS)', default: '993' },
    { flag: 'smtp-host', prompt: 'Email: the SMTP server (e.g. smtp.example.com)', required: true },
    { flag: 'smtp-port', prompt: 'Email: the SMTP port (587: STARTTLS, 465: TLS)', default: '587' },
    { flag: 'email-user', prompt: 'Email: the login (blank: the address)', default: '' },
  ],
  config(a) {
    const smtpPort = Number(a['smtp-port'] || 587);
    return {
      address: a['email-address'],
      imap: { host: a['imap-host'], port: Number(a['imap-port'] || 993), user: a['email-user'] || a['email-address'] },
      smtp: { host: a['smtp-host'], port: smtpPort, ...(smtpPort === 465 ? { secure: true } : { requireTLS: true }) },
    };
  },
  secrets: () => [
    {
      name: 'EMAIL_IMAP_PASSWORD',
      hint: 'Email: the mailbox password (an app password where the provider has them); SMTP uses it too unless EMAIL_SMTP_PASSWORD is set',
    },
  ],
  guide: (a) =>
    [
      'Email',
      `1. A mailbox for ${a['email-address'] || 'the agent'} with IMAP on; where the provider has app passwords (Gmail, Outlook, iCloud), make one.`,
      '2. Put the password in EMAIL_IMAP_PASSWORD in .env (EMAIL_SMTP_PASSWORD when SMTP needs another).',
      '3. Only mail whose sender passed DKIM, SPF or DMARC at your provider (Authentication-Results) is answered;',
      '   auto-replies, bulk mail and mail from the agent itself never are.',
      '4. Add your address to access.email.allow and approvals.operators.email, or approve its pairing code.',
      '5. Start the gateway and send the agent a mail; it answers in the same thread.',
    ].join('\n'),
  async check(a) {
    return Promise.all([reachable('imap', a['imap-host']!, Number(a['imap-port'] || 993)), reachable('smtp', a['smtp-host']!, Number(a['smtp-port'] || 587))]);
  },
};
