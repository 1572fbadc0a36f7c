import twilio from 'twilio';
import type { SmsConfig } from './config.js';

/** What the deliverer needs of the REST API: one message create. */
export interface MessageSender {
  create(p: { to: string; from?: string; messagingServiceSid?: string; body: string; statusCallback?: string }): Promise<{ sid: string; status: string }>;
}

/**
 * The twilio client, with its own retries off (the deliverer decides: transient
 * failures are retried with backoff, permanent ones recorded). `apiBaseUrl`
 * points it somewhere else than api.twilio.com (tests, compatible proxies).
 */
export function twilioSender(cfg: SmsConfig): MessageSender {
  const client = twilio(cfg.accountSid, cfg.authToken, { autoRetry: false, timeout: cfg.requestTimeoutMs });
  if (cfg.apiBaseUrl) client.api.baseUrl = cfg.apiBaseUrl;
  return {
    async create(p) {
      const m = await client.messages.create(p);
      return { sid: m.sid, status: String(m.status) };
    },
  };
}
