import { randomUUID } from 'node:crypto';
import nodemailer, { type SendMailOptions, type Transporter } from 'nodemailer';
import type { Logger } from 'pino';
import { SwitchboardError } from '../../kernel/errors.js';
import type { EmailConfig } from './config.js';
import { domainOf } from './headers.js';

/** SMTP failures worth trying again: 4xx replies and dropped or refused connections. */
export function isTransientSmtpError(err: unknown): boolean {
  const e = err as { responseCode?: number; code?: string };
  if (typeof e?.responseCode === 'number') return (e.responseCode >= 400 && e.responseCode < 500) || e.responseCode === 503;
  return ['ECONNECTION', 'ETIMEDOUT', 'ESOCKET', 'EDNS', 'ECONNRESET', 'ECONNREFUSED', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN', 'ETLS'].includes(
    e?.code ?? '',
  );
}

/** The SMTP server rejected the message in a way that retrying will not change. */
export class PermanentSmtpError extends SwitchboardError {
  readonly code = 'smtp_rejected';
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** One SMTP transport for the channel, with retries and backoff for transient failures. */
export class Mailer {
  private readonly transport: Transporter;

  constructor(
    private readonly cfg: EmailConfig,
    private readonly log: Logger,
  ) {
    const s = cfg.smtp;
    this.transport = nodemailer.createTransport({
      host: s.host,
      port: s.port,
      secure: s.secure,
      requireTLS: s.requireTLS,
      ...(s.auth ? { auth: { user: s.user ?? cfg.imap.user, pass: cfg.secrets.smtpPassword ?? '' } } : {}),
      tls: { rejectUnauthorized: s.rejectUnauthorized },
      connectionTimeout: 15_000,
      greetingTimeout: 10_000,
      socketTimeout: 30_000,
    });
  }

  /** A fresh Message-ID in our domain. */
  newMessageId(hint: string = randomUUID()): string {
    return `<sb.${hint}@${domainOf(this.cfg.address) || 'switchboard.invalid'}>`;
  }

  get from(): { name: string; address: string } {
    return { name: this.cfg.name, address: this.cfg.address };
  }

  /**
   * Sends, retrying transient failures with exponential backoff (and jitter).
   * Throws PermanentSmtpError for a rejection that retrying will not change,
   * or the last error when the attempts run out.
   */
  async send(mail: SendMailOptions): Promise<void> {
    const { attempts, minMs, maxMs } = this.cfg.smtp.retry;
    for (let attempt = 1; ; attempt++) {
      try {
        await this.transport.sendMail(mail);
        return;
      } catch (err) {
        const transient = isTransientSmtpError(err);
        const code = (err as { responseCode?: number; code?: string }).responseCode ?? (err as { code?: string }).code;
        if (!transient) {
          throw new PermanentSmtpError(`SMTP refused the message to ${String(mail.to)} (${code ?? 'error'}): ${(err as Error).message}`);
        }
        if (attempt >= attempts) throw err;
        const delay = Math.min(maxMs, minMs * 2 ** (attempt - 1)) * (0.75 + Math.random() * 0.5);
        this.log.warn({ code, attempt, delayMs: Math.round(delay) }, 'transient SMTP failure; retrying');
        await sleep(delay);
      }
    }
  }

  close(): void {
    this.transport.close();
  }
}
