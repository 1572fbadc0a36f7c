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
 * GET Messages.json (To, From, DateSent / DateSent> / DateSent< filters,
 * PageSize; newest first) and GET Messages/<sid>.json read them back, with the
 * status a message has reached (queued until the carrier takes it: date_sent is
 * null until then). `loseResponseNext` plays "created, but the answer was lost":
 * the message is accepted, then the connection is reset (or left hanging).
 *
 * The handset: `phone(to)` is what the person's phone received, in the order it
 * arrived: API messages when the carrier took them (`carrierDelayMs` per
 * message: Twilio does not keep the order of queued messages), TwiML replies,
 * and Twilio's own keyword replies.
 *
 * Opt-out handling (`optOut`, off unless a test turns it on): Twilio's standard
 * keywords, or Advanced Opt-Out with localized ones and `OptOutType` = STOP |
 * START | HELP on the inbound webhook; Twilio sends its own confirmation and
 * refuses later messages to an opted-out number (21610) until START.
 *
 * Webhook side: plays Twilio calling the gateway behind a proxy. Requests are
 * signed (X-Twilio-Signature) over the public URL and sent to the gateway's
 * local address with the public prefix stripped; status callbacks (queued → sent
 * → delivered, or failed/undelivered with an ErrorCode) are posted the same way.
 * With `useSharedKey`, as with a Webhook Rule naming a SharedKey, every webhook is
 * signed with that secret instead of the auth token (HMAC-SHA256 by default) and
 * carries `X-Twilio-Webhooks-Signature-Settings: key=<id>,algorithm=<alg>`.
 *
 * WhatsApp (the same Messages API with `whatsapp:+E.164` addresses): `whatsappParams`
 * builds the inbound webhook as Twilio documents it for WhatsApp (ProfileName, WaId,
 * MessageType, ButtonPayload/ButtonText of a quick reply, NumMedia/MediaUrlN);
 * creates take a Body or a ContentSid with ContentVariables (a Content API
 * template). The 24-hour customer-service window is kept as Twilio keeps it: a
 * free-form message to a person who has not written in 24 hours is accepted (201)
 * and then fails with error 63016 (status `failed`, never reaches the phone).
 * `addMedia` serves media at /2010-04-01/Accounts/<AC>/Messages/<MM>/Media/<ME>,
 * behind HTTP basic auth as Twilio's media URLs are (with media auth on).
 * A template message is listed with the Body Twilio renders from it (`contents`: ContentSid →
 * text with {{1}}…), as the Messages list shows it. A message Twilio fails after accepting it
 * (63016) gets a `failed` status callback with its ErrorCode; `whatsappWindowClosed` holds an
 * address's window closed whatever it sent (Twilio's view and the gateway's disagree). `onCreate`
 * runs when a create is accepted, before its answer (a test changes the world meanwhile).
 *
 * Messaging API (messaging.twilio.com, served on the same host): GET /v2/Channels/Senders?Channel=whatsapp
 * lists `whatsappSenders` (sender_id, status ONLINE/OFFLINE/PENDING_VERIFICATION..., offline_reasons),
 * GET /v1/Services/<MG>/ChannelSenders the senders of a `messagingServices` pool; both behind basic auth.
 */
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import twilio from 'twilio';

export interface SentMessage {
  sid: string;
  to: string;
  from?: string;
  messagingServiceSid?: string;
  body: string;
  /** A Content API template (ContentSid HX…) and its ContentVariables JSON, when one was sent. */
  contentSid?: string;
  contentVariables?: string;
  /** Set when Twilio failed the message after accepting it (63016: outside the WhatsApp window). */
  errorCode?: number;
  statusCallback?: string;
  at: number;
  /** queued → sent → delivered, as the list/read endpoints report it. */
  status: string;
  dateCreated: Date;
  /** Set when the carrier took it (status sent); null while queued, as on Twilio. */
  dateSent: Date | null;
}

/** What reached a phone, in arrival order. */
export interface HandsetMessage {
  body: string;
  /** api: a REST message; twiml: a <Message> in a webhook answer; twilio: Twilio's own keyword reply. */
  via: 'api' | 'twiml' | 'twilio';
  at: number;
}

export type OptOutKind = 'STOP' | 'START' | 'HELP';

/** Twilio's keyword handling: which words do what, its replies, and whether OptOutType is sent (Advanced Opt-Out). */
export interface OptOutSettings {
  advanced: boolean;
  keywords: Record<OptOutKind, string[]>;
  replies: Record<OptOutKind, string>;
}

/** Twilio's default opt-out keywords and replies (long codes, Messaging Services). */
export function standardOptOut(opts: { advanced?: boolean; extra?: Partial<Record<OptOutKind, string[]>> } = {}): OptOutSettings {
  return {
    advanced: opts.advanced ?? false,
    keywords: {
      STOP: ['STOP', 'STOPALL', 'UNSUBSCRIBE', 'CANCEL', 'END', 'QUIT', 'REVOKE', 'OPTOUT', ...(opts.extra?.STOP ?? [])],
      START: ['START', 'YES', 'UNSTOP', ...(opts.extra?.START ?? [])],
      HELP: ['HELP', 'INFO', ...(opts.extra?.HELP ?? [])],
    },
    replies: {
      STOP: 'You have successfully been unsubscribed. You will not receive any more messages from this number. Reply START to resubscribe.',
      START: 'You have successfully been re-subscribed to messages from this number. Reply HELP for help. Reply STOP to unsubscribe. Msg&Data Rates May Apply.',
      HELP: 'Reply STOP to unsubscribe. Msg&Data Rates May Apply.',
    },
  };
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
  /** How long a message stays queued before the carrier takes it (then the phone has it). */
  carrierDelayMs: (m: SentMessage, indexForRecipient: number) => number = () => 5;
  /** Twilio's keyword handling; null: none (the fake neither replies nor blocks). */
  optOut: OptOutSettings | null = null;
  /** Numbers Twilio has opted out (STOP): creates to them fail with 21610. */
  readonly optedOut = new Set<string>();
  /** The account's WhatsApp senders (GET /v2/Channels/Senders?Channel=whatsapp): ONLINE, OFFLINE, PENDING_VERIFICATION... */
  readonly whatsappSenders: Array<{ sid: string; senderId: string; status: string; offlineReasons?: Array<{ code: string; message: string }> }> = [];
  /** Messaging Services (MG…) and the senders in their pools (GET /v1/Services/<MG>/ChannelSenders). */
  readonly messagingServices = new Map<string, string[]>();

  /** Registers a WhatsApp sender of this account. */
  addWhatsAppSender(senderId: string, status = 'ONLINE', offlineReasons?: Array<{ code: string; message: string }>): void {
    this.whatsappSenders.push({ sid: `XE${hex(16)}`, senderId, status, ...(offlineReasons ? { offlineReasons } : {}) });
  }

  /** Content API templates (ContentSid → text with {{1}}…): the Body a template message is listed with. Unknown ones: the variables in order. */
  readonly contents = new Map<string, string>();
  /** Called when a create is accepted, before its answer goes out (a test changes the world while the answer is in flight). */
  onCreate?: (m: SentMessage) => void;
  /** Every GET on the messages list / read endpoints (the query string). */
  readonly lookups: string[] = [];

  private readonly handsets = new Map<string, HandsetMessage[]>();
  /** Addresses whose window Twilio holds closed whatever they sent (Twilio's view and the gateway's disagree). */
  readonly whatsappWindowClosed = new Set<string>();
  /** When each WhatsApp user last wrote (the 24-hour window), by whatsapp: address. */
  readonly whatsappLastInbound = new Map<string, number>();
  private sharedKey?: { id: string; secret: string; algorithm: 'HMAC_SHA1' | 'HMAC_SHA256' };
  private lose: Array<{ remaining: number; mode: 'reset' | 'hang'; match: (m: { to: string; body: string }) => boolean }> = [];
  private hanging = new Set<Socket>();
  private lookupFailures = 0;

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
    for (const sock of this.hanging) sock.destroy();
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

  /** What the phone `to` received, in arrival order. */
  phone(to: string): HandsetMessage[] {
    return [...(this.handsets.get(to) ?? [])];
  }

  /**
   * The next `times` creates matching `match` are accepted (recorded, queued, sent), but
   * the answer never reaches the client: 'reset' destroys the connection, 'hang' keeps it
   * open without answering (the client times out).
   */
  loseResponseNext(times: number, mode: 'reset' | 'hang' = 'reset', match: (m: { to: string; body: string }) => boolean = () => true): void {
    this.lose.push({ remaining: times, mode, match });
  }

  /** From now on webhooks are signed with this SharedKey (a Webhook Rule), not the auth token. */
  useSharedKey(secret: string, opts: { id?: string; algorithm?: 'HMAC_SHA1' | 'HMAC_SHA256' } = {}): void {
    this.sharedKey = { id: opts.id ?? `webhooks_sharedkey_${hex(13)}`, secret, algorithm: opts.algorithm ?? 'HMAC_SHA256' };
  }

  /** Back to signing with the auth token (no Webhook Rule). */
  useAuthToken(): void {
    this.sharedKey = undefined;
  }

  /** The next `times` GETs on the messages list / read endpoints answer 500. */
  failLookups(times: number): void {
    this.lookupFailures = times;
  }

  /** The header Twilio adds when it signed with a SharedKey. */
  get signatureSettings(): string | undefined {
    return this.sharedKey ? `key=${this.sharedKey.id},algorithm=${this.sharedKey.algorithm}` : undefined;
  }

  /** Signs params over `url` as Twilio does (with the SharedKey when one is in use). */
  sign(url: string, params: Record<string, string>): string {
    if (this.sharedKey) return twilio.getExpectedTwilioSignature(this.sharedKey.secret, url, params, this.sharedKey.algorithm);
    return twilio.getExpectedTwilioSignature(this.authToken, url, params);
  }

  private toPhone(to: string, body: string, via: HandsetMessage['via']): void {
    const list = this.handsets.get(to) ?? [];
    list.push({ body, via, at: Date.now() });
    this.handsets.set(to, list);
  }

  /** Twilio's keyword match: the whole message, one word, any case. */
  optOutKind(body: string): OptOutKind | null {
    if (!this.optOut) return null;
    const word = body.trim().toUpperCase();
    for (const k of ['STOP', 'START', 'HELP'] as const) if (this.optOut.keywords[k].includes(word)) return k;
    return null;
  }

  private readonly media = new Map<string, { contentType: string; bytes: Buffer; token: string }>();
  readonly mediaFetches: Array<{ path: string; authorized: boolean }> = [];

  /** A file of an inbound MMS: its MediaUrl (/2010-04-01/Accounts/<AC>/Messages/<MM>/Media/<ME>, as Twilio gives it) for inboundParams. */
  addMedia(contentType: string, bytes: Buffer): { url: string; contentType: string } {
    const path = `/2010-04-01/Accounts/${this.accountSid}/Messages/MM${hex(16)}/Media/ME${hex(16)}`;
    this.media.set(path, { contentType, bytes, token: hex(16) });
    return { url: `${this.url}${path}`, contentType };
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
    const kind = this.optOutKind(m.body);
    if (kind && this.optOut?.advanced) p.OptOutType = kind;
    m.media?.forEach((x, i) => {
      p[`MediaUrl${i}`] = x.url;
      p[`MediaContentType${i}`] = x.contentType;
    });
    return p;
  }

  /** An inbound WhatsApp message, as Twilio posts it to the WhatsApp sender's webhook. */
  whatsappParams(m: {
    from: string;
    to: string;
    body: string;
    sid?: string;
    profileName?: string;
    button?: { payload: string; text: string };
    media?: Array<{ url: string; contentType: string }>;
  }): Record<string, string> {
    const sid = m.sid ?? `SM${hex(16)}`;
    const p: Record<string, string> = {
      SmsMessageSid: sid,
      NumMedia: String(m.media?.length ?? 0),
      ProfileName: m.profileName ?? 'Test User',
      MessageType: m.button ? 'button' : m.media?.length ? (m.media[0]!.contentType.startsWith('image/') ? 'image' : 'document') : 'text',
      SmsSid: sid,
      WaId: m.from.replace(/^whatsapp:\+/, ''),
      SmsStatus: 'received',
      Body: m.button ? m.button.text : m.body,
      To: m.to,
      NumSegments: '1',
      ReferralNumMedia: '0',
      MessageSid: sid,
      AccountSid: this.accountSid,
      From: m.from,
      ApiVersion: '2010-04-01',
    };
    if (m.button) {
      p.ButtonPayload = m.button.payload;
      p.ButtonText = m.button.text;
    }
    m.media?.forEach((x, i) => {
      p[`MediaUrl${i}`] = x.url;
      p[`MediaContentType${i}`] = x.contentType;
    });
    return p;
  }

  /** Media of an inbound WhatsApp message (served as addMedia's are); returns its MediaUrl. */
  addWhatsAppMedia(bytes: Buffer, contentType: string): string {
    return this.addMedia(contentType, bytes).url;
  }

  /**
   * POSTs a webhook to the gateway. By default signed correctly over the public
   * URL; `signatureUrl` signs over another URL, `signature` sends that header
   * as is (null: none).
   */
  async webhook(path: string, params: Record<string, string>, opts: { signatureUrl?: string; signature?: string | null } = {}): Promise<WebhookResult> {
    const publicUrl = this.publicUrl + path;
    const signature = opts.signature === undefined ? this.sign(opts.signatureUrl ?? publicUrl, params) : opts.signature;
    const inbound = params.SmsStatus === 'received' && params.From !== undefined;
    if (inbound && params.From!.startsWith('whatsapp:') && opts.signature === undefined && !opts.signatureUrl)
      this.whatsappLastInbound.set(params.From!, Date.now());
    // Twilio acts on its keywords before it forwards the message: it opts the number out or in and sends its own reply.
    const kind = inbound && params.Body !== undefined ? this.optOutKind(params.Body) : null;
    if (kind && params.From) {
      if (kind === 'STOP') this.optedOut.add(params.From);
      if (kind === 'START') this.optedOut.delete(params.From);
      this.toPhone(params.From, this.optOut!.replies[kind], 'twilio');
    }
    const started = performance.now();
    const settings = this.signatureSettings;
    const r = await fetch(this.toLocal(publicUrl), {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        'user-agent': 'TwilioProxy/1.1',
        ...(signature !== null ? { 'x-twilio-signature': signature } : {}),
        ...(settings ? { 'x-twilio-webhooks-signature-settings': settings } : {}),
      },
      body: new URLSearchParams(params).toString(),
    });
    const body = await r.text();
    // A TwiML <Message> reply is texted back (not to a number Twilio opted out).
    if (inbound && r.status === 200 && params.From && !(this.optOut && this.optedOut.has(params.From)))
      for (const m of body.matchAll(/<Message>([\s\S]*?)<\/Message>/g)) this.toPhone(params.From, unescapeXml(m[1]!), 'twiml');
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
    // MMS media: the Media resource asks for the account's Basic credentials (HTTP Basic auth for
    // media on), then redirects to the file's short-lived CDN URL, which needs none.
    const media = this.media.get(pathname);
    if (req.method === 'GET' && media) {
      const basic = `Basic ${Buffer.from(`${this.accountSid}:${this.authToken}`).toString('base64')}`;
      this.mediaFetches.push({ path: pathname, authorized: req.headers.authorization === basic });
      if (req.headers.authorization !== basic) return json(res, 401, { code: 20003, message: 'Authenticate', status: 401 });
      res.writeHead(302, { location: `${this.url}/mms-cdn/${media.token}` }).end();
      return;
    }
    const cdn = /^\/mms-cdn\/([0-9a-f]+)$/.exec(pathname);
    const file = cdn ? [...this.media.values()].find((x) => x.token === cdn[1]) : undefined;
    if (req.method === 'GET' && file) {
      res.writeHead(200, { 'content-type': file.contentType, 'content-length': String(file.bytes.length) }).end(file.bytes);
      return;
    }
    // The account resource (GET /2010-04-01/Accounts/<sid>.json), as doctor --probe reads it.
    const account = /^\/2010-04-01\/Accounts\/([^/]+)\.json$/.exec(pathname);
    if (req.method === 'GET' && account) {
      const basic = `Basic ${Buffer.from(`${this.accountSid}:${this.authToken}`).toString('base64')}`;
      if (req.headers.authorization !== basic || account[1] !== this.accountSid) return json(res, 401, { code: 20003, message: 'Authenticate', status: 401 });
      return json(res, 200, { sid: this.accountSid, friendly_name: 'My first Twilio account', status: this.accountStatus, type: 'Full' });
    }
    const auth = `Basic ${Buffer.from(`${this.accountSid}:${this.authToken}`).toString('base64')}`;
    // The Messaging API (messaging.twilio.com, served here too): WhatsApp senders, a Messaging Service's sender pool.
    if (req.method === 'GET' && pathname === '/v2/Channels/Senders') {
      if (req.headers.authorization !== auth) return json(res, 401, { code: 20003, message: 'Authenticate', status: 401 });
      const q = new URL(req.url ?? '/', 'http://x').searchParams;
      if (!q.get('Channel')) return json(res, 400, { code: 20001, message: 'Missing required parameter Channel in the query', status: 400 });
      const senders = this.whatsappSenders.filter(() => q.get('Channel')!.toLowerCase() === 'whatsapp');
      return json(res, 200, {
        senders: senders.map((x) => ({
          sid: x.sid,
          status: x.status,
          sender_id: x.senderId,
          offline_reasons: x.offlineReasons ?? null,
          url: `https://messaging.twilio.com/v2/Channels/Senders/${x.sid}`,
        })),
        meta: {
          page: 0,
          page_size: Number(q.get('PageSize') ?? 50),
          first_page_url: req.url,
          previous_page_url: null,
          url: req.url,
          next_page_url: null,
          key: 'senders',
        },
      });
    }
    const pool = /^\/v1\/Services\/(MG[0-9a-fA-F]{32})\/ChannelSenders$/.exec(pathname);
    if (req.method === 'GET' && pool) {
      if (req.headers.authorization !== auth) return json(res, 401, { code: 20003, message: 'Authenticate', status: 401 });
      const list = this.messagingServices.get(pool[1]!);
      if (!list) return json(res, 404, { code: 20404, message: 'The requested resource was not found', status: 404 });
      return json(res, 200, {
        senders: list.map((sender) => ({
          account_sid: this.accountSid,
          messaging_service_sid: pool[1],
          sid: `XE${hex(16)}`,
          sender,
          sender_type: sender.startsWith('whatsapp:') ? 'WhatsApp' : 'PhoneNumber',
          country_code: 'US',
        })),
        meta: { page: 0, page_size: 50, first_page_url: req.url, previous_page_url: null, url: req.url, next_page_url: null, key: 'senders' },
      });
    }
    const lookup = req.method === 'GET' && /\/Messages(\/SM[0-9a-f]{32})?\.json$/.test(pathname);
    if (lookup && this.lookupFailures > 0) {
      this.lookupFailures--;
      this.lookups.push(`failed:${req.url}`);
      return json(res, 500, { code: 20500, message: 'Internal Server Error', status: 500 });
    }
    const one = /^\/2010-04-01\/Accounts\/([^/]+)\/Messages\/(SM[0-9a-f]{32})\.json$/.exec(pathname);
    if (req.method === 'GET' && one) {
      if (req.headers.authorization !== auth || one[1] !== this.accountSid) return json(res, 401, { code: 20003, message: 'Authenticate', status: 401 });
      this.lookups.push(`sid=${one[2]}`);
      const found = this.messages.find((x) => x.sid === one[2]);
      return found ? json(res, 200, this.resource(found)) : json(res, 404, { code: 20404, message: 'The requested resource was not found', status: 404 });
    }
    const m = /^\/2010-04-01\/Accounts\/([^/]+)\/Messages\.json$/.exec(pathname);
    if (req.method === 'GET' && m) {
      if (req.headers.authorization !== auth || m[1] !== this.accountSid) return json(res, 401, { code: 20003, message: 'Authenticate', status: 401 });
      return this.list(req, res);
    }
    if (req.method !== 'POST' || !m) return json(res, 404, { code: 20404, message: 'The requested resource was not found', status: 404 });
    if (req.headers.authorization !== auth || m[1] !== this.accountSid) return json(res, 401, { code: 20003, message: 'Authenticate', status: 401 });
    const form = new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
    const to = form.get('To') ?? '';
    const body = form.get('Body') ?? '';
    const fail = (status: number, code: number, message: string) => {
      this.attempts.push({ to, body, status });
      json(res, status, { code, message, more_info: `https://www.twilio.com/docs/errors/${code}`, status });
    };
    const whatsapp = to.startsWith('whatsapp:');
    if (!/^(?:whatsapp:)?\+[1-9]\d{6,14}$/.test(to)) return fail(400, 21211, `The 'To' number ${to} is not a valid phone number.`);
    if (!form.get('From') && !form.get('MessagingServiceSid'))
      return fail(400, 21603, "A 'From' or 'MessagingServiceSid' parameter is required to send a message.");
    const contentSid = form.get('ContentSid') ?? undefined;
    const contentVariables = form.get('ContentVariables') ?? undefined;
    if (contentSid && !/^HX[0-9a-fA-F]{32}$/.test(contentSid)) return fail(400, 21655, 'The ContentSid is Invalid');
    if (contentVariables) {
      try {
        JSON.parse(contentVariables);
      } catch {
        return fail(400, 21656, 'The ContentVariables Parameter is invalid');
      }
    }
    if (!body && !contentSid && !form.get('MediaUrl')) return fail(400, 21602, 'Message body is required.');
    if (whatsapp && form.get('From') && !form.get('From')!.startsWith('whatsapp:'))
      return fail(400, 21910, 'Invalid From and To pair. From and To should be of the same channel');
    if (body.length > 1600) return fail(400, 21617, 'The concatenated message body exceeds the 1600 character limit.');
    if (this.optOut && this.optedOut.has(to)) return fail(400, 21610, 'Attempt to send to unsubscribed recipient');
    const perm = this.permanent.get(to);
    if (perm) return fail(perm.status, perm.code, perm.message ?? `scripted error ${perm.code}`);
    const rule = this.rules.find((r) => r.remaining > 0 && r.match({ to, body }));
    if (rule) {
      rule.remaining--;
      return fail(rule.status, rule.code, rule.message ?? `scripted error ${rule.code}`);
    }
    const sid = `SM${hex(16)}`;
    const from = form.get('From') ?? undefined;
    // A template's Body is the text Twilio rendered from the Content and its variables.
    const rendered = contentSid ? this.renderContent(contentSid, contentVariables) : body;
    const messagingServiceSid = form.get('MessagingServiceSid') ?? undefined;
    const statusCallback = form.get('StatusCallback') ?? undefined;
    const msg: SentMessage = {
      sid,
      to,
      body: rendered,
      at: Date.now(),
      status: 'queued',
      dateCreated: new Date(),
      dateSent: null,
      ...(from ? { from } : {}),
      ...(messagingServiceSid ? { messagingServiceSid } : {}),
      ...(statusCallback ? { statusCallback } : {}),
      ...(contentSid ? { contentSid } : {}),
      ...(contentVariables ? { contentVariables } : {}),
    };
    // WhatsApp: free-form only within 24 hours of the person's last message; Twilio accepts, then fails it.
    const last = this.whatsappLastInbound.get(to);
    if (whatsapp && !contentSid && (last === undefined || Date.now() - last > 24 * 3_600_000 || this.whatsappWindowClosed.has(to))) msg.errorCode = 63016;
    const index = this.sentTo(to).length;
    this.messages.push(msg);
    this.onCreate?.(msg);
    this.attempts.push({ to, body, status: 201 });
    const p = this.carry(msg, this.carrierDelayMs(msg, index));
    this.pending.add(p);
    void p.finally(() => this.pending.delete(p));
    const lost = this.lose.find((r) => r.remaining > 0 && r.match({ to, body }));
    if (lost) {
      // Created, and the answer is lost: the client sees a reset connection or a timeout.
      lost.remaining--;
      if (lost.mode === 'reset') req.socket.destroy();
      else this.hanging.add(req.socket);
      return;
    }
    json(res, 201, this.resource(msg));
  }

  /** The text of a Content API template with its variables, as Twilio renders it into the message's Body. */
  private renderContent(contentSid: string, variables: string | undefined): string {
    const vars = variables ? (JSON.parse(variables) as Record<string, string>) : {};
    const text =
      this.contents.get(contentSid) ??
      Object.keys(vars)
        .map((k) => `{{${k}}}`)
        .join(' ');
    return text.replace(/\{\{(\w+)\}\}/g, (_, k: string) => vars[k] ?? '');
  }

  /** A message as the REST API shows it. */
  private resource(m: SentMessage): Record<string, unknown> {
    return {
      sid: m.sid,
      account_sid: this.accountSid,
      to: m.to,
      from: m.from ?? null,
      messaging_service_sid: m.messagingServiceSid ?? null,
      body: m.body,
      status: m.status,
      num_segments: String(Math.ceil(m.body.length / 153) || 1),
      num_media: '0',
      direction: 'outbound-api',
      api_version: '2010-04-01',
      date_created: m.dateCreated.toUTCString(),
      date_updated: new Date().toUTCString(),
      date_sent: m.dateSent ? m.dateSent.toUTCString() : null,
      uri: `/2010-04-01/Accounts/${this.accountSid}/Messages/${m.sid}.json`,
    };
  }

  /** GET Messages.json: To, From, DateSent (YYYY-MM-DD or a timestamp; also DateSent> and DateSent<), PageSize. Newest first. */
  private list(req: IncomingMessage, res: ServerResponse): void {
    const q = new URL(req.url ?? '/', 'http://x').searchParams;
    this.lookups.push(q.toString());
    const day = (d: Date) => d.toISOString().slice(0, 10);
    const bound = (v: string) => new Date(/^\d{4}-\d{2}-\d{2}$/.test(v) ? `${v}T00:00:00Z` : v);
    const to = q.get('To');
    const from = q.get('From');
    const on = q.get('DateSent');
    const after = q.get('DateSent>');
    const before = q.get('DateSent<');
    const size = Math.min(1000, Number(q.get('PageSize') ?? 50) || 50);
    const hits = this.messages
      .filter((x) => (!to || x.to === to) && (!from || x.from === from))
      // A DateSent filter leaves out what is still queued (date_sent null), as Twilio's does.
      .filter((x) => !on || (x.dateSent !== null && day(x.dateSent) === on.slice(0, 10)))
      .filter((x) => !after || (x.dateSent !== null && x.dateSent >= bound(after)))
      .filter((x) => !before || (x.dateSent !== null && x.dateSent <= bound(before)))
      .sort((a, b) => b.dateCreated.getTime() - a.dateCreated.getTime() || b.at - a.at)
      .slice(0, size);
    const uri = `/2010-04-01/Accounts/${this.accountSid}/Messages.json?${q.toString()}`;
    json(res, 200, {
      messages: hits.map((x) => this.resource(x)),
      end: Math.max(0, hits.length - 1),
      first_page_uri: uri,
      next_page_uri: null,
      page: 0,
      page_size: size,
      previous_page_uri: null,
      start: 0,
      uri,
    });
  }

  /** The carrier takes the message after `delayMs` (the phone has it); status callbacks queued → sent → delivered. */
  private async carry(m: SentMessage, delayMs: number): Promise<void> {
    const url = m.statusCallback && this.statusCallbacks ? m.statusCallback : undefined;
    const report = async (status: string, errorCode?: number) => {
      const s = { sid: m.sid, to: m.to, from: m.from ?? '', status, ...(errorCode ? { errorCode: String(errorCode) } : {}) };
      if (url) await this.statusCallback(url, s).catch(() => {});
    };
    await new Promise((r) => setTimeout(r, 5));
    await report('queued');
    await new Promise((r) => setTimeout(r, delayMs));
    if (m.errorCode) {
      // Failed after it was accepted: the status callback says so, with the ErrorCode (63016...).
      m.status = 'failed';
      await report('failed', m.errorCode);
      return;
    }
    m.status = 'sent';
    m.dateSent = new Date();
    this.toPhone(m.to, m.body, 'api');
    await report('sent');
    await new Promise((r) => setTimeout(r, 5));
    m.status = 'delivered';
    await report('delivered');
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
    const settings = this.signatureSettings;
    const r = await fetch(this.toLocal(url), {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        ...(signature !== null ? { 'x-twilio-signature': signature } : {}),
        ...(settings ? { 'x-twilio-webhooks-signature-settings': settings } : {}),
      },
      body: new URLSearchParams(params).toString(),
    });
    await r.arrayBuffer();
    this.callbacks.push({ url, status: s.status, http: r.status });
    return r.status;
  }
}

function unescapeXml(s: string): string {
  return s
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&apos;/g, "'")
    .replace(/&amp;/g, '&');
}

function json(res: ServerResponse, status: number, body: unknown): void {
  const data = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(data) });
  res.end(data);
}
