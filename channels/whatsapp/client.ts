import twilio from 'twilio';
import type { WhatsAppConfig } from './config.js';

/** One Messages API create: free-form (Body) or a Content API template (ContentSid, ContentVariables). */
export interface WhatsAppMessage {
  to: string;
  from?: string;
  messagingServiceSid?: string;
  body?: string;
  contentSid?: string;
  /** JSON of the template's variables, as the API takes it. */
  contentVariables?: string;
}

export interface WhatsAppSender {
  create(m: WhatsAppMessage): Promise<{ sid: string; status: string }>;
}

/** The twilio client with its own retries off (send.ts retries); apiBaseUrl for tests and proxies. */
export function twilioWhatsAppSender(cfg: WhatsAppConfig): WhatsAppSender {
  const client = twilio(cfg.accountSid, cfg.authToken, { autoRetry: false, timeout: cfg.requestTimeoutMs });
  if (cfg.apiBaseUrl) client.api.baseUrl = cfg.apiBaseUrl;
  return {
    async create(m) {
      const r = await client.messages.create(m);
      return { sid: r.sid, status: String(r.status) };
    },
  };
}
