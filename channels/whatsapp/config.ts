import { z } from 'zod';
import { ConfigError, configError, issueProblems } from '../../src/channel/config.js';

export const DEFAULT_INBOUND_PATH = '/v1/channels/whatsapp/inbound';
export const DEFAULT_STATUS_PATH = '/v1/channels/whatsapp/status';
/** Twilio's Messages API refuses a Body longer than 1600 characters (WhatsApp itself takes 4096). */
export const TWILIO_MAX_BODY = 1600;

const path = z.string().regex(/^\/[A-Za-z0-9._~\-/]*$/, 'expected an absolute path like /v1/channels/whatsapp/inbound');
const envName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'expected an environment variable name');
const contentSid = z.string().regex(/^HX[0-9a-fA-F]{32}$/, 'expected a Content SID: HX followed by 32 hex digits');

/** A Content API template: its SID and its variables ({"1": "..."}; "{{text}}" and "{{code}}" are filled in). */
const template = z.object({ contentSid, variables: z.record(z.string(), z.string()).default({}) }).strict();

/** channels.whatsapp, as written in the configuration file. */
export const whatsappSchema = z
  .object({
    accountSid: z
      .string()
      .regex(/^AC[0-9a-fA-F]{32}$/, 'expected an account SID: AC followed by 32 hex digits')
      .optional(),
    accountSidEnv: envName.default('TWILIO_ACCOUNT_SID'),
    authTokenEnv: envName.default('TWILIO_AUTH_TOKEN'),
    /** The secret of a webhook SharedKey (X-Twilio-Webhooks-Signature-Settings), when one signs the webhooks. */
    webhookSigningKeyEnv: envName.optional(),
    publicUrl: z.url({ protocol: /^https?$/, error: 'expected the public http(s) URL Twilio calls, e.g. https://bot.example.com' }),
    inboundPath: path.default(DEFAULT_INBOUND_PATH),
    statusPath: path.default(DEFAULT_STATUS_PATH),
    /** Ask Twilio for delivery status callbacks (StatusCallback): a message Twilio fails later (63016...) marks the delivery row. */
    statusCallbacks: z.boolean().default(true),
    /** Send from this WhatsApp sender (whatsapp:+E.164) instead of the address the person wrote to. */
    from: z
      .string()
      .regex(/^whatsapp:\+[1-9]\d{1,14}$/, 'expected a WhatsApp sender: whatsapp:+E.164')
      .optional(),
    messagingServiceSid: z
      .string()
      .regex(/^MG[0-9a-fA-F]{32}$/, 'expected a Messaging Service SID: MG followed by 32 hex digits')
      .optional(),
    maxMessageChars: z.number().int().min(160).max(TWILIO_MAX_BODY).default(TWILIO_MAX_BODY),
    /** The customer-service window: free-form replies only this long after the person's last message. */
    sessionWindowHours: z.number().positive().max(24).default(24),
    /** Sent instead of a free-form reply outside the window (a pre-approved template). */
    outsideWindowTemplate: template.optional(),
    /** A quick-reply template for approval requests (buttons with ids "YES {{code}}" / "NO {{code}}"). */
    approvalTemplate: template.optional(),
    /** Fetch image media (MediaUrl0…) so the model sees it; otherwise a text note. */
    fetchMedia: z.boolean().default(true),
    maxMediaBytes: z
      .number()
      .int()
      .positive()
      .max(16 * 1024 * 1024)
      .default(4 * 1024 * 1024),
    sendAttempts: z.number().int().min(1).max(20).default(4),
    retryBaseMs: z.number().int().positive().default(500),
    retryMaxMs: z.number().int().positive().default(8_000),
    requestTimeoutMs: z.number().int().positive().default(15_000),
    apiBaseUrl: z.url({ protocol: /^https?$/ }).optional(),
  })
  .strict();

export interface WhatsAppTemplate {
  contentSid: string;
  variables: Record<string, string>;
}

export interface WhatsAppConfig {
  accountSid: string;
  /** Secret: never logged. */
  authToken: string;
  webhookSigningKey?: string;
  publicUrl: string;
  inboundPath: string;
  statusPath: string;
  statusCallbacks: boolean;
  from?: string;
  messagingServiceSid?: string;
  maxMessageChars: number;
  sessionWindowMs: number;
  outsideWindowTemplate?: WhatsAppTemplate;
  approvalTemplate?: WhatsAppTemplate;
  fetchMedia: boolean;
  maxMediaBytes: number;
  sendAttempts: number;
  retryBaseMs: number;
  retryMaxMs: number;
  requestTimeoutMs: number;
  apiBaseUrl?: string;
}

const fail = (key: string, message: string): never => {
  throw new ConfigError(`invalid configuration at "channels.whatsapp${key ? `.${key}` : ''}": ${message}`);
};

/** Validates channels.whatsapp and resolves its secrets from the environment. */
export function parseWhatsAppConfig(raw: unknown, env: Record<string, string | undefined>): WhatsAppConfig {
  const parsed = whatsappSchema.safeParse(raw ?? {});
  if (!parsed.success) throw configError(issueProblems(parsed.error.issues, whatsappSchema, ['channels', 'whatsapp'], raw ?? {}));
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
    ...(webhookSigningKey ? { webhookSigningKey } : {}),
    publicUrl: c.publicUrl.replace(/\/+$/, ''),
    inboundPath: c.inboundPath,
    statusPath: c.statusPath,
    statusCallbacks: c.statusCallbacks,
    ...(c.from ? { from: c.from } : {}),
    ...(c.messagingServiceSid ? { messagingServiceSid: c.messagingServiceSid } : {}),
    maxMessageChars: c.maxMessageChars,
    sessionWindowMs: Math.round(c.sessionWindowHours * 3_600_000),
    ...(c.outsideWindowTemplate ? { outsideWindowTemplate: c.outsideWindowTemplate } : {}),
    ...(c.approvalTemplate ? { approvalTemplate: c.approvalTemplate } : {}),
    fetchMedia: c.fetchMedia,
    maxMediaBytes: c.maxMediaBytes,
    sendAttempts: c.sendAttempts,
    retryBaseMs: c.retryBaseMs,
    retryMaxMs: c.retryMaxMs,
    requestTimeoutMs: c.requestTimeoutMs,
    ...(c.apiBaseUrl ? { apiBaseUrl: c.apiBaseUrl.replace(/\/+$/, '') } : {}),
  };
}
