import { z } from 'zod';
import { ConfigError, configError, issueProblems } from '../../src/channel/config.js';
import { catchUpSchema, groupsSchema } from '../../src/channel/sections.js';

const retrySchema = z
  .object({
    /** Sends tried per reply before the turn is failed (and retried later by the queue). */
    attempts: z.number().int().positive().default(5),
    minMs: z.number().int().positive().default(1_000),
    maxMs: z.number().int().positive().default(30_000),
  })
  .strict()
  .prefault({});

export const emailConfigSchema = z
  .object({
    /** Our address: the From of every reply; mail from it is never answered. */
    address: z.email(),
    /** Display name on replies. */
    name: z.string().default('Switchboard'),
    imap: z
      .object({
        host: z.string().min(1),
        port: z.number().int().positive().default(993),
        /** Implicit TLS (993). false: plain connection, STARTTLS when the server offers it. */
        secure: z.boolean().default(true),
        user: z.string().min(1),
        /** The environment variable that holds the IMAP password. */
        passwordEnv: z.string().min(1).default('EMAIL_IMAP_PASSWORD'),
        mailbox: z.string().min(1).default('INBOX'),
        rejectUnauthorized: z.boolean().default(true),
      })
      .strict(),
    smtp: z
      .object({
        host: z.string().min(1),
        port: z.number().int().positive().default(587),
        /** Implicit TLS (465). false: STARTTLS when offered (required with requireTLS). */
        secure: z.boolean().default(false),
        requireTLS: z.boolean().default(false),
        /** Default: imap.user. */
        user: z.string().min(1).optional(),
        /** The environment variable that holds the SMTP password; unset in the environment: the IMAP password. */
        passwordEnv: z.string().min(1).default('EMAIL_SMTP_PASSWORD'),
        /** false: send without authenticating (a relay that trusts the network). */
        auth: z.boolean().default(true),
        rejectUnauthorized: z.boolean().default(true),
        retry: retrySchema,
      })
      .strict(),
    /** Run the mailbox listener in this process. Set false on every ingress but one when several run. */
    poll: z.boolean().default(true),
    processed: z
      .object({
        /** flag: keep processed mail in the mailbox with our keyword; move: also move it to `folder`. */
        action: z.enum(['flag', 'move']).default('flag'),
        folder: z.string().min(1).default('Processed'),
        /** Also mark processed mail \Seen. */
        markSeen: z.boolean().default(true),
        /** The IMAP keyword that marks mail we have handled. */
        keyword: z
          .string()
          .regex(/^\$?[A-Za-z0-9_.-]+$/)
          .default('$SwitchboardSeen'),
      })
      .strict()
      .prefault({}),
    /** First start on a mailbox: also answer the mail already in it (default: only mail that arrives from now on). */
    backfill: z.boolean().default(false),
    /**
     * Trust a sender (operator approvals, the allowlist, memory and conversations kept under their address) only when
     * the receiving server's Authentication-Results pass (DKIM, SPF or DMARC) for the From domain. Default on: a From
     * header alone is forged in one line. Off only behind a receiving server that already refuses unauthenticated mail.
     */
    requireAuthenticatedSender: z.boolean().default(true),
    /** Answer mail whose sender is not authenticated (as `unverified:<address>`, which matches no operator or allowlist entry); default: not answered. */
    allowUnauthenticatedSenders: z.boolean().default(false),
    /** The authserv-id of the receiving server's Authentication-Results header; unset: the topmost header is the server's. */
    authServId: z.string().min(1).optional(),
    reconnect: z
      .object({ minMs: z.number().int().positive().default(1_000), maxMs: z.number().int().positive().default(60_000) })
      .strict()
      .prefault({}),
    /** IDLE starts this long after the last command (imapflow's default is 15 s, too slow for new mail). */
    idleDelayMs: z.number().int().positive().default(1_000),
    /** Besides IDLE: look for new mail this often (also retries mail that failed). */
    syncIntervalMs: z.number().int().positive().default(60_000),
    /** The single-poller lease (the gateway's lock service; settleMs is no longer used). */
    lease: z
      .object({ ttlMs: z.number().int().positive().default(30_000), settleMs: z.number().int().nonnegative().default(500) })
      .strict()
      .prefault({}),
    /** Larger messages are read only up to this many bytes. */
    maxMessageBytes: z
      .number()
      .int()
      .positive()
      .default(10 * 1024 * 1024),
    /** Longest message text handed to the agent (the rest is cut with a note). */
    maxTextChars: z.number().int().positive().default(20_000),
    /**
     * Mail found in the mailbox (after downtime, or a burst): older than maxAgeMinutes by when the server
     * received it (default a day: mail is slow), or past maxMessages from one sender in one sync, is skipped.
     */
    catchUp: catchUpSchema.unwrap().prefault({ maxAgeMinutes: 1_440 }),
    /** Manners in group threads (mail to several people): by default mail with us in To, replies to us and threads we wrote in. */
    groups: groupsSchema({ respondIn: 'threads' }),
  })
  .strict();

export type EmailSettings = z.infer<typeof emailConfigSchema>;

export interface EmailConfig extends EmailSettings {
  secrets: { imapPassword: string; smtpPassword?: string };
}

/** Validates channels.email and reads its secrets from the environment. */
export function parseEmailConfig(raw: unknown, env: Record<string, string | undefined>): EmailConfig {
  const r = emailConfigSchema.safeParse(raw ?? {});
  if (!r.success) {
    throw configError(issueProblems(r.error.issues, emailConfigSchema, ['channels', 'email'], raw ?? {}));
  }
  const c = r.data;
  const imapPassword = env[c.imap.passwordEnv];
  if (!imapPassword)
    throw new ConfigError(`invalid configuration at "channels.email.imap.passwordEnv": the environment variable ${c.imap.passwordEnv} is not set`);
  const smtpPassword = c.smtp.auth ? (env[c.smtp.passwordEnv] ?? imapPassword) : undefined;
  return { ...c, address: c.address.toLowerCase(), secrets: { imapPassword, ...(smtpPassword !== undefined ? { smtpPassword } : {}) } };
}
