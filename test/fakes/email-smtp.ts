/**
 * An SMTP sink for the email tests (smtp-server on 127.0.0.1): captures every
 * mail the gateway sends, parsed. failNext(451, …) answers the next DATA
 * commands with those codes, to exercise the sender's retries.
 */
import { type ParsedMail, simpleParser } from 'mailparser';
import { SMTPServer } from 'smtp-server';

export interface SentMail {
  envelopeFrom: string;
  envelopeTo: string[];
  raw: Buffer;
  parsed: ParsedMail;
  to: string;
  subject: string;
  messageId: string;
  inReplyTo?: string;
  references: string[];
  text: string;
  html: string;
  header(name: string): string | undefined;
}

export class SmtpSink {
  readonly mails: SentMail[] = [];
  /** DATA commands received (sent and refused). */
  attempts = 0;
  private failures: number[] = [];
  private server?: SMTPServer;
  port = 0;

  /** With a password, AUTH (PLAIN/LOGIN, over the plain connection) accepts only it, as a real submission server would. */
  constructor(private readonly opts: { password?: string } = {}) {}

  failNext(...codes: number[]): void {
    this.failures.push(...codes);
  }

  async start(): Promise<void> {
    this.server = new SMTPServer({
      authOptional: true,
      disabledCommands: ['STARTTLS'],
      logger: false,
      ...(this.opts.password ? { allowInsecureAuth: true } : {}),
      onAuth: (auth, _session, cb) =>
        this.opts.password !== undefined && auth.password !== this.opts.password
          ? cb(Object.assign(new Error('Authentication credentials invalid'), { responseCode: 535 }))
          : cb(null, { user: auth.username }),
      onData: (stream, session, cb) => {
        const chunks: Buffer[] = [];
        stream.on('data', (c: Buffer) => chunks.push(c));
        stream.on('end', () => {
          this.attempts++;
          const code = this.failures.shift();
          if (code) {
            cb(Object.assign(new Error(code >= 500 ? 'Rejected' : 'Try again later'), { responseCode: code }));
            return;
          }
          const raw = Buffer.concat(chunks);
          simpleParser(raw).then(
            (parsed) => {
              const refs = parsed.references;
              this.mails.push({
                envelopeFrom: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
                envelopeTo: session.envelope.rcptTo.map((r) => r.address),
                raw,
                parsed,
                to: (Array.isArray(parsed.to) ? parsed.to[0] : parsed.to)?.value[0]?.address ?? '',
                subject: parsed.subject ?? '',
                messageId: parsed.messageId ?? '',
                ...(parsed.inReplyTo ? { inReplyTo: parsed.inReplyTo } : {}),
                references: Array.isArray(refs) ? refs : refs ? refs.split(/\s+/) : [],
                text: parsed.text ?? '',
                html: typeof parsed.html === 'string' ? parsed.html : '',
                header: (name) => {
                  const v = parsed.headers.get(name.toLowerCase());
                  return v === undefined ? undefined : String(v);
                },
              });
              cb();
            },
            (err: Error) => cb(err),
          );
        });
      },
    });
    await new Promise<void>((resolve, reject) => {
      this.server!.once('error', reject);
      this.server!.listen(0, '127.0.0.1', () => resolve());
    });
    this.port = (this.server.server.address() as { port: number }).port;
  }

  to(address: string): SentMail[] {
    return this.mails.filter((m) => m.envelopeTo.includes(address));
  }

  async close(): Promise<void> {
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}
