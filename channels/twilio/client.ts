import twilio from 'twilio';

/** What the REST client needs of a channel's configuration. */
export interface TwilioClientConfig {
  accountSid: string;
  authToken: string;
  requestTimeoutMs: number;
  apiBaseUrl?: string;
}

/** One Messages API create: free-form (Body) or a Content API template (ContentSid, ContentVariables). */
export interface OutgoingMessage {
  to: string;
  from?: string;
  messagingServiceSid?: string;
  body?: string;
  contentSid?: string;
  /** JSON of the template's variables, as the API takes it. */
  contentVariables?: string;
  statusCallback?: string;
}

/** A message as the REST API lists it (the fields the look-up compares). */
export interface ListedMessage {
  sid: string;
  status: string;
  direction: string;
  to: string;
  from: string | null;
  messagingServiceSid: string | null;
  body: string;
  dateCreated: Date | null;
}

/** What the deliverers need of the REST API: a message create, and the newest messages to an address. */
export interface MessagesApi {
  create(p: OutgoingMessage): Promise<{ sid: string; status: string }>;
  /** GET Messages.json?To=…[&From=…], newest first, at most `limit` (one page). */
  recent(p: { to: string; from?: string; limit: number }): Promise<ListedMessage[]>;
}

/**
 * The twilio client, with its own retries off (send.ts decides: transient failures are retried
 * with backoff, permanent ones recorded). `apiBaseUrl` points it somewhere else than
 * api.twilio.com (tests, compatible proxies). Shared by the sms and whatsapp channels.
 */
export function twilioMessages(cfg: TwilioClientConfig): MessagesApi {
  const client = twilio(cfg.accountSid, cfg.authToken, { autoRetry: false, timeout: cfg.requestTimeoutMs });
  if (cfg.apiBaseUrl) client.api.baseUrl = cfg.apiBaseUrl;
  return {
    async create(p) {
      const m = await client.messages.create(p);
      return { sid: m.sid, status: String(m.status) };
    },
    async recent(p) {
      const list = await client.messages.list({ to: p.to, ...(p.from ? { from: p.from } : {}), limit: p.limit, pageSize: p.limit });
      return list.map((m) => ({
        sid: m.sid,
        status: String(m.status),
        direction: String(m.direction),
        to: m.to,
        from: m.from ?? null,
        messagingServiceSid: m.messagingServiceSid ?? null,
        body: m.body ?? '',
        dateCreated: m.dateCreated ?? null,
      }));
    },
  };
}
