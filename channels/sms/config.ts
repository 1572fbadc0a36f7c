import { z } from 'zod';
import { ConfigError, configError, issueProblems } from '../../src/channel/config.js';

export const DEFAULT_INBOUND_PATH = '/v1/channels/sms/inbound';
export const DEFAULT_STATUS_PATH = '/v1/channels/sms/status';
/** Twilio refuses a Body longer than this (errors 21617 / 21658). */
export const TWILIO_MAX_BODY = 1600;

const path = z.string().regex(/^\/[A-Za-z0-9._~\-/]*$/, 'expected an absolute path like /v1/channels/sms/inbound');
const envName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'expected an environment variable name');

/** channels.sms, as written in the configuration file. */
export const smsSchema = z
  .object({
    /** The account SID (AC…); or the variable named by accountSidEnv. Not a secret, but often kept beside one. */
    accountSid: z
      .string()
      .regex(/^AC[0-9a-fA-F]{32}$/, 'expected an account SID: AC followed by 32 hex digits')
      .optional(),
    accountSidEnv: envName.default('TWILIO_ACCOUNT_SID'),
    /** The variable holding the auth token (signs webhooks, authenticates API calls). */
    authTokenEnv: envName.default('TWILIO_AUTH_TOKEN'),
    /**
     * The variable holding the secret of a Twilio webhook SharedKey: webhooks that carry
     * X-Twilio-Webhooks-Signature-Settings are signed with it instead of the auth token.
     */
    webhookSigningKeyEnv: envName.optional(),
    /**
     * Where Twilio reaches this gateway, as Twilio calls it (scheme, host and any path prefix
     * a proxy strips): webhook signatures are over that URL, not the local one.
     */
    publicUrl: z.url({ protocol: /^https?$/, error: 'expected the public http(s) URL Twilio calls, e.g. https://bot.example.com' }),
    inboundPath: path.default(DEFAULT_INBOUND_PATH),
    statusPath: path.default(DEFAULT_STATUS_PATH),
    /** Ask Twilio for delivery status callbacks (recorded on the delivery rows). */
    statusCallbacks: z.boolean().default(true),
    /** Send from a Messaging Service (MG…) instead of the number the person texted. */
    messagingServiceSid: z
      .string()
      .regex(/^MG[0-9a-fA-F]{32}$/, 'expected a Messaging Service SID: MG followed by 32 hex digits')
      .optional(),
    /** Longest single message; longer replies are split and numbered. */
    maxMessageChars: z.number().int().min(160).max(TWILIO_MAX_BODY).default(TWILIO_MAX_BODY),
    /**
     * Who answers STOP/START/HELP: 'twilio' (its standard replies or Advanced Opt-Out messages,
     * on by default for long codes and Messaging Services) or 'gateway' (the texts below, as TwiML).
     * The opt-out state is recorded either way.
     */
    keywordReplies: z.enum(['twilio', 'gateway']).default('twilio'),
    /** Replies to the keywords when keywordReplies is 'gateway'; an empty string sends nothing. */
    helpText: z.string().max(TWILIO_MAX_BODY).default('This is an AI assistant. Reply STOP to stop receiving messages, START to receive them again.'),
    stopReply: z.string().max(TWILIO_MAX_BODY).default('You will receive no more messages from this assistant. Reply START to receive them again.'),
    startReply: z.string().max(TWILIO_MAX_BODY).default('You will receive messages from this assistant again. Reply STOP to stop.'),
    /** Transient send failures (429, 5xx, network) are retried this many times in all, with exponential backoff. */
    sendAttempts: z.number().int().min(1).max(20).default(4),
    retryBaseMs: z.number().int().positive().default(500),
    retryMaxMs: z.number().int().positive().default(8_000),
    /**
     * Before the next numbered part, wait up to this long for the status callback saying the
     * part before left Twilio (sent, delivered or failed): Twilio does not keep the order of
     * queued messages. 0: wait only for the REST create. Needs statusCallbacks.
     */
    waitForSentMs: z.number().int().min(0).max(120_000).default(10_000),
    /** Timeout of one REST API call. */
    requestTimeoutMs: z.number().int().positive().default(15_000),
    /** The REST API's base URL; for tests and API-compatible proxies. */
    apiBaseUrl: z.url({ protocol: /^https?$/ }).optional(),
  })
  .strict();

export interface SmsConfig {
  accountSid: string;
  /** Secret: never logged. */
  authToken: string;
  /** Secret: the webhook SharedKey secret, when webhookSigningKeyEnv is set. */
  webhookSigningKey?: string;
  /** The variable it came from, for messages. */
  webhookSigningKeyEnv?: string;
  /** publicUrl without a trailing slash. */
  publicUrl: string;
  inboundPath: string;
  statusPath: string;
  statusCallbacks: boolean;
  messagingServiceSid?: string;
  maxMessageChars: number;
  keywordReplies: 'twilio' | 'gateway';
  helpText: string;
  stopReply: string;
  startReply: string;
  sendAttempts: number;
  retryBaseMs: number;
  retryMaxMs: number;
  waitForSentMs: number;
  requestTimeoutMs: number;
  apiBaseUrl?: string;
}

const fail = (key: string, message: string): never => {
  throw new ConfigError(`invalid configuration at "channels.sms${key ? `.${key}` : ''}": ${message}`);
};

/** Validates channels.sms and resolves its secrets from the environment. Throws ConfigError naming the key. */
export function parseSmsConfig(raw: unknown, env: Record<string, string | undefined>): SmsConfig {
  const parsed = smsSchema.safeParse(raw ?? {});
  if (!parsed.success) {
    throw configError(issueProblems(parsed.error.issues, smsSchema, ['channels', 'sms'], raw ?? {}));
  }
  const c = parsed.data!;
  const accountSid = c.accountSid ?? env[c.accountSidEnv];
  if (!accountSid) fail('accountSid', `set it, or the environment variable ${c.accountSidEnv}`);
  if (!/^AC[0-9a-fA-F]{32}$/.test(accountSid!))
    fail('accountSid', `${c.accountSid ? '' : `${c.accountSidEnv}: `}expected an account SID: AC followed by 32 hex digits`);
  const authToken = env[c.authTokenEnv];
  if (!authToken) fail('authTokenEnv', `the environment variable ${c.authTokenEnv} (the Twilio auth token) is not set`);
  const webhookSigningKey = c.webhookSigningKeyEnv ? env[c.webhookSigningKeyEnv] : undefined;
  if (c.webhookSigningKeyEnv && !webhookSigningKey)
    fail('webhookSigningKeyEnv', `the environment variable ${c.webhookSigningKeyEnv} (the webhook SharedKey secret) is not set`);
  if (c.inboundPath === c.statusPath) fail('statusPath', 'must differ from inboundPath');
  return {
    accountSid: accountSid!,
    authToken: authToken!,
    ...(webhookSigningKey ? { webhookSigningKey, webhookSigningKeyEnv: c.webhookSigningKeyEnv! } : {}),
    publicUrl: c.publicUrl.replace(/\/+$/, ''),
    inboundPath: c.inboundPath,
    statusPath: c.statusPath,
    statusCallbacks: c.statusCallbacks,
    ...(c.messagingServiceSid ? { messagingServiceSid: c.messagingServiceSid } : {}),
    maxMessageChars: c.maxMessageChars,
    keywordReplies: c.keywordReplies,
    helpText: c.helpText,
    stopReply: c.stopReply,
    startReply: c.startReply,
    sendAttempts: c.sendAttempts,
    retryBaseMs: c.retryBaseMs,
    retryMaxMs: c.retryMaxMs,
    waitForSentMs: c.waitForSentMs,
    requestTimeoutMs: c.requestTimeoutMs,
    ...(c.apiBaseUrl ? { apiBaseUrl: c.apiBaseUrl.replace(/\/+$/, '') } : {}),
  };
}
