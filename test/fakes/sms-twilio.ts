/**
 * A fake of Twilio for the sms channel's tests, on 127.0.0.1.
 *
 * REST side: POST /2010-04-01/Accounts/<AC…>/Messages.json (form-encoded, HTTP
 * basic auth with the account SID and auth token), the endpoint the real twilio
 * client calls once `client.api.baseUrl` points here. Every message is recorded;
 * failures can be scripted (HTTP status + Twilio error code, for the next N
 * matching messages or for a number permanently). Validates like Twilio where
 * the channel could get it wrong: Body of at most 1600 characters, a From or a
 * MessagingServiceSid, an E.164 To.
 *
 * Webhook side: plays Twilio calling the gateway behind a proxy. Requests are
 * signed (X-Twilio-Signature) over the public URL and sent to the gateway's
 * local address with the public prefix stripped; status callbacks (queued → sent
 * → delivered, or failed/undelivered with an ErrorCode) are posted the same way.
 */
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import twilio from 'twilio';

export interface SentMessage {
  sid: string;
  to: string;
  from?: string;
  messagingServiceSid?: string;
  body: string;
  statusCallback?: string;
  at: number;
}

export interface ScriptedFailure {
  status: number;
  code: number;
  message?: string;
}

interface FailRule extends ScriptedFailure {
  remaining: number;
  match: (m: { to: string; body: string }) => boolean;
}

export interface WebhookResult {
  status: number;
  contentType: string;
  body: string;
  ms: number;
}

const hex = (n: number) => randomBytes(n).toString('hex');

export class FakeTwilio {
  readonly accountSid = `AC${hex(16)}`;
  readonly authToken = hex(16);
  /** The account's status as the REST API reports it: active, suspended or closed. */
  accountStatus: 'active' | 'suspended' | 'closed' = 'active';
  /** Messages accepted (status 201), in the order they arrived. */
  readonly messages: SentMessage[] = [];
  /** Every REST call, accepted or not. */
  readonly attempts: Array<{ to: string; body: string; status: number }> = [];
  /** Status callbacks posted, and the gateway's HTTP status for each. */
  readonly callbacks: Array<{ url: string; status: string; http: number }> = [];
  /** Send status callbacks when a message asks for them. */
  statusCallbacks = true;
  /** The gateway's local address (set after it starts). */
  gatewayUrl?: string;

  private server?: Server;
  private rules: FailRule[] = [];
  private permanent = new Map<string, ScriptedFailure>();
  private pending = new Set<Promise<unknown>>();

  /** publicUrl: where Twilio believes the gateway is (scheme, host, prefix the proxy strips). */
  constructor(readonly publicUrl: string) {}

  get url(): string {
    return `http://127.0.0.1:${(this.server!.address() as AddressInfo).port}`;
  }

  async start(): Promise<void> {
    this.server = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
  }

  async close(): Promise<void> {
    await Promise.allSettled([...this.pending]);
    await new Promise<void>((resolve) => {
      this.server?.close(() => resolve());
      this.server?.closeAllConnections();
    });
  }

  /** The next `times` messages matching `match` (default: any) fail with this answer. */
  failNext(times: number, failure: ScriptedFailure, match: (m: { to: string; body: string }) => boolean = () => true): void {
    this.rules.push({ ...failure, remaining: times, match });
  }

  /** Every message to `to` fails with this answer (21610 unsubscribed, 21211 invalid number...). */
  failFor(to: string, failure: ScriptedFailure): void {
    this.permanent.set(to, failure);
  }

  sentTo(to: string): SentMessage[] {
    return this.messages.filter((m) => m.to === to);
  }

  /** Signs params over `url` as Twilio does. */
  sign(url: string, params: Record<string, string>): string {
    return twilio.getExpectedTwilioSignature(this.authToken, url, params);
  }

  /** An inbound SMS, as Twilio posts it to the messaging webhook. */
  inboundParams(m: { from: string; to: string; body: string; sid?: string; media?: Array<{ url: string; contentType: string }> }): Record<string, string> {
    const p: Record<string, string> = {
      ToCountry: 'US',
      SmsMessageSid: m.sid ?? `SM${hex(16)}`,
      NumMedia: String(m.media?.length ?? 0),
      SmsSid: '',
      SmsStatus: 'received',
      Body: m.body,
      To: m.to,
      NumSegments: '1',
      MessageSid: '',
      AccountSid: this.accountSid,
      From: m.from,
      ApiVersion: '2010-04-01',
    };
    p.SmsSid = p.SmsMessageSid!;
    p.MessageSid = p.SmsMessageSid!;
    m.media?.forEach((x, i) => {
      p[`MediaUrl${i}`] = x.url;
      p[`MediaContentType${i}`] = x.contentType;
    });
    return p;
  }

  /**
   * POSTs a webhook to the gateway. By default signed correctly over the public
   * URL; `signatureUrl` signs over another URL, `signature` sends that header
   * as is (null: none).
   */
  async webhook(path: string, params: Record<string, string>, opts: { signatureUrl?: string; signature?: string | null } = {}): Promise<WebhookResult> {
    const publicUrl = this.publicUrl + path;
    const signature = opts.signature === undefined ? this.sign(opts.signatureUrl ?? publicUrl, params) : opts.signature;
    const started = performance.now();
    const r = await fetch(this.toLocal(publicUrl), {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        'user-agent': 'TwilioProxy/1.1',
        ...(signature !== null ? { 'x-twilio-signature': signature } : {}),
      },
      body: new URLSearchParams(params).toString(),
    });
    const body = await r.text();
    return { status: r.status, contentType: r.headers.get('content-type') ?? '', body, ms: performance.now() - started };
  }

  /** Twilio → gateway: the proxy maps the public URL to the gateway's local one. */
  toLocal(publicUrl: string): string {
    if (!this.gatewayUrl) throw new Error('FakeTwilio.gatewayUrl is not set');
    if (!publicUrl.startsWith(this.publicUrl)) throw new Error(`${publicUrl} is not under ${this.publicUrl}`);
    return this.gatewayUrl + publicUrl.slice(this.publicUrl.length);
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const pathname = new URL(req.url ?? '/', 'http://x').pathname;
    // The account resource (GET /2010-04-01/Accounts/<sid>.json), as doctor --probe reads it.
    const account = /^\/2010-04-01\/Accounts\/([^/]+)\.json$/.exec(pathname);
    if (req.method === 'GET' && account) {
      const basic = `Basic ${Buffer.from(`${this.accountSid}:${this.authToken}`).toString('base64')}`;
      if (req.headers.authorization !== basic || account[1] !== this.accountSid) return json(res, 401, { code: 20003, message: 'Authenticate', status: 401 });
      return json(res, 200, { sid: this.accountSid, friendly_name: 'My first Twilio account', status: this.accountStatus, type: 'Full' });
    }
    const m = /^\/2010-04-01\/Accounts\/([^/]+)\/Messages\.json$/.exec(pathname);
    if (req.method !== 'POST' || !m) return json(res, 404, { code: 20404, message: 'The requested resource was not found', status: 404 });
    const auth = `Basic ${Buffer.from(`${this.accountSid}:${this.authToken}`).toString('base64')}`;
    if (req.headers.authorization !== auth || m[1] !== this.accountSid) return json(res, 401, { code: 20003, message: 'Authenticate', status: 401 });
    const form = new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
    const to = form.get('To') ?? '';
    const body = form.get('Body') ?? '';
    const fail = (status: number, code: number, message: string) => {
      this.attempts.push({ to, body, status });
      json(res, status, { code, message, more_info: `https://www.twilio.com/docs/errors/${code}`, status });
    };
    if (!/^\+[1-9]\d{6,14}$/.test(to)) return fail(400, 21211, `The 'To' number ${to} is not a valid phone number.`);
    if (!form.get('From') && !form.get('MessagingServiceSid'))
      return fail(400, 21603, "A 'From' or 'MessagingServiceSid' parameter is required to send a message.");
    if (body.length > 1600) return fail(400, 21617, 'The concatenated message body exceeds the 1600 character limit.');
    const perm = this.permanent.get(to);
    if (perm) return fail(perm.status, perm.code, perm.message ?? `scripted error ${perm.code}`);
    const rule = this.rules.find((r) => r.remaining > 0 && r.match({ to, body }));
    if (rule) {
      rule.remaining--;
      return fail(rule.status, rule.code, rule.message ?? `scripted error ${rule.code}`);
    }
    const sid = `SM${hex(16)}`;
    const from = form.get('From') ?? undefined;
    const messagingServiceSid = form.get('MessagingServiceSid') ?? undefined;
    const statusCallback = form.get('StatusCallback') ?? undefined;
    this.messages.push({
      sid,
      to,
      body,
      at: Date.now(),
      ...(from ? { from } : {}),
      ...(messagingServiceSid ? { messagingServiceSid } : {}),
      ...(statusCallback ? { statusCallback } : {}),
    });
    this.attempts.push({ to, body, status: 201 });
    json(res, 201, {
      sid,
      account_sid: this.accountSid,
      to,
      from: from ?? null,
      messaging_service_sid: messagingServiceSid ?? null,
      body,
      status: 'queued',
      num_segments: String(Math.ceil(body.length / 153) || 1),
      num_media: '0',
      direction: 'outbound-api',
      api_version: '2010-04-01',
      date_created: new Date().toUTCString(),
      uri: `/2010-04-01/Accounts/${this.accountSid}/Messages/${sid}.json`,
    });
    if (statusCallback && this.statusCallbacks) {
      const p = this.sendStatuses(statusCallback, sid, to, from ?? '');
      this.pending.add(p);
      void p.finally(() => this.pending.delete(p));
    }
  }

  /** queued → sent → delivered, each a signed POST to the callback URL (through the proxy). */
  private async sendStatuses(url: string, sid: string, to: string, from: string): Promise<void> {
    for (const status of ['queued', 'sent', 'delivered']) {
      await new Promise((r) => setTimeout(r, 5));
      await this.statusCallback(url, { sid, to, from, status }).catch(() => {});
    }
  }

  /** One status callback; exposed so tests can send failures (ErrorCode) or forged ones. */
  async statusCallback(
    url: string,
    s: { sid: string; to: string; from: string; status: string; errorCode?: string },
    opts: { signature?: string | null } = {},
  ): Promise<number> {
    const params: Record<string, string> = {
      AccountSid: this.accountSid,
      ApiVersion: '2010-04-01',
      From: s.from,
      MessageSid: s.sid,
      MessageStatus: s.status,
      SmsSid: s.sid,
      SmsStatus: s.status,
      To: s.to,
      ...(s.errorCode ? { ErrorCode: s.errorCode } : {}),
    };
    const signature = opts.signature === undefined ? this.sign(url, params) : opts.signature;
    const r = await fetch(this.toLocal(url), {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...(signature !== null ? { 'x-twilio-signature': signature } : {}) },
      body: new URLSearchParams(params).toString(),
    });
    await r.arrayBuffer();
    this.callbacks.push({ url, status: s.status, http: r.status });
    return r.status;
  }
}

function json(res: ServerResponse, status: number, body: unknown): void {
  const data = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(data) });
  res.end(data);
}
