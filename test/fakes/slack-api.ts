/**
 * A fake Slack for tests: the Web API (POST /api/<method>, form-encoded
 * requests as @slack/web-api sends them, `{ok: true, ...}` answers, every call
 * recorded) and Socket Mode (apps.connections.open hands out a ws:// URL on the
 * same server; `hello`, envelopes with envelope_id, acks awaited, server pings).
 * It keeps the messages the bot posts (also streamed ones) so tests can assert
 * what a user would see. Helpers sign and post Events API requests.
 */
import { createHmac, randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { type WebSocket, WebSocketServer } from 'ws';

export interface SlackCall {
  method: string;
  args: Record<string, any>;
  token?: string;
  at: number;
  /** How a fault of failNext answered it: the HTTP status, or Slack's error code. */
  failedWith?: number | string;
}

export interface FakeMessage {
  channel: string;
  ts: string;
  thread_ts?: string;
  user: string;
  bot_id?: string;
  text: string;
  blocks?: any[];
  /** Native stream still open. */
  streaming: boolean;
  /** Every text this message has shown, in order (posts, updates, stream appends). */
  history: string[];
  tasks: any[];
  deleted: boolean;
  /** A user's message as conversations.history returns it (client_msg_id, team, files…). */
  raw?: Record<string, unknown>;
}

export interface FakeUser {
  id: string;
  name: string;
  display_name?: string;
  real_name?: string;
}

export const BOT = { userId: 'UBOT', botId: 'BBOT', team: 'T0TEAM', appId: 'A0APP' };
export const BOT_TOKEN = 'xoxb-test-bot-token';
export const APP_TOKEN = 'xapp-test-app-token';
export const SIGNING_SECRET = 'test-signing-secret-0123456789';

export class FakeSlack {
  readonly calls: SlackCall[] = [];
  readonly messages = new Map<string, FakeMessage>();
  readonly ephemerals: Array<{ channel: string; user: string; text: string; thread_ts?: string }> = [];
  readonly users = new Map<string, FakeUser>();
  /** method → Slack error code it answers with. */
  readonly failing = new Map<string, string>();
  /** Faults armed by failNext, in order: each fails its method's matching calls at the HTTP level until used up. */
  private readonly faults: Array<{
    method: string;
    left: number;
    status: number;
    error?: string;
    when?: (args: Record<string, any>) => boolean | Promise<boolean>;
  }> = [];
  /** Envelopes acknowledged over the socket, by envelope id. */
  readonly acks = new Map<string, any>();
  connections = 0;
  /** Slack's per-workspace budget for chat.appendStream (calls a minute, all streams together); unset: none. */
  appendStreamPerMinute: number | undefined;
  /** 429 answers served. */
  rateLimited = 0;
  private readonly appendTimes = new Map<string, number[]>();
  private server?: Server;
  private wss?: WebSocketServer;
  private readonly sockets: WebSocket[] = [];
  private readonly silenced = new Set<WebSocket>();
  private readonly waiters = new Map<string, (payload: any) => void>();
  private pingTimer?: NodeJS.Timeout;
  private tsCounter = 0;
  private readonly tsBase = Math.floor(Date.now() / 1000);
  port = 0;
  /** Uploaded files by url_private path. */
  private readonly files = new Map<string, { mimetype: string; bytes: Buffer }>();
  readonly fileDownloads: Array<{ path: string; authorization: string }> = [];

  constructor(private readonly opts: { pingMs?: number } = {}) {}

  get apiUrl(): string {
    return `http://127.0.0.1:${this.port}/api/`;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  async start(): Promise<void> {
    this.server = createServer((req, res) => void this.handle(req, res));
    this.wss = new WebSocketServer({ server: this.server, path: '/socket' });
    this.wss.on('connection', (ws) => this.onSocket(ws));
    await new Promise<void>((r) => this.server!.listen(0, '127.0.0.1', () => r()));
    this.port = (this.server.address() as AddressInfo).port;
    this.pingTimer = setInterval(() => {
      for (const ws of this.sockets) if (!this.silenced.has(ws) && ws.readyState === ws.OPEN) ws.ping();
    }, this.opts.pingMs ?? 500);
  }

  async close(): Promise<void> {
    clearInterval(this.pingTimer);
    for (const ws of this.sockets) ws.terminate();
    this.wss?.close();
    await new Promise<void>((r) => {
      this.server?.close(() => r());
      this.server?.closeAllConnections();
    });
  }

  // ---- Web API ---------------------------------------------------------------

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const raw = Buffer.concat(chunks).toString('utf8');
    const url = new URL(req.url ?? '/', 'http://x');
    const file = this.files.get(url.pathname);
    if (file) {
      this.fileDownloads.push({ path: url.pathname, authorization: String(req.headers.authorization ?? '') });
      // As Slack does: without the bot token, url_private answers its sign-in page, not the file.
      if (req.headers.authorization !== `Bearer ${BOT_TOKEN}`)
        res.writeHead(200, { 'content-type': 'text/html' }).end('<!DOCTYPE html><html><body>Sign in to Slack</body></html>');
      else res.writeHead(200, { 'content-type': file.mimetype, 'content-length': String(file.bytes.length) }).end(file.bytes);
      return;
    }
    const m = /^\/api\/(.+)$/.exec(url.pathname);
    if (!m) {
      res.writeHead(404).end();
      return;
    }
    const method = m[1]!;
    const args: Record<string, any> = {};
    const ct = String(req.headers['content-type'] ?? '');
    if (ct.includes('application/json')) Object.assign(args, raw ? JSON.parse(raw) : {});
    else for (const [k, v] of new URLSearchParams(raw)) args[k] = JSON_KEYS.has(k) ? parseValue(v) : v;
    const auth = String(req.headers.authorization ?? '');
    const token = auth.startsWith('Bearer ') ? auth.slice(7) : typeof args.token === 'string' ? args.token : undefined;
    let fault: (typeof this.faults)[number] | undefined;
    for (const f of this.faults) {
      if (f.method !== method || f.left <= 0 || (f.when && !(await f.when(args)))) continue;
      fault = f;
      break;
    }
    this.calls.push({ method, args, ...(token ? { token } : {}), at: Date.now(), ...(fault ? { failedWith: fault.error ?? fault.status } : {}) });
    if (fault) {
      fault.left--;
      if (fault.error) {
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ ok: false, error: fault.error }));
        return;
      }
      // 429 is Slack's rate limit (the SDK waits Retry-After and tries again); 5xx an outage (the SDK gives up at once).
      if (fault.status === 429)
        res.writeHead(429, { 'content-type': 'application/json', 'retry-after': '1' }).end(JSON.stringify({ ok: false, error: 'ratelimited' }));
      else res.writeHead(fault.status, { 'content-type': 'text/plain' }).end('upstream unavailable');
      return;
    }
    if (method === 'chat.appendStream' && this.overBudget(token)) {
      this.rateLimited++;
      res.writeHead(429, { 'content-type': 'application/json', 'retry-after': '1' }).end(JSON.stringify({ ok: false, error: 'ratelimited' }));
      return;
    }
    const out = this.answer(method, args, token);
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(out));
  }

  private answer(method: string, args: Record<string, any>, token?: string): Record<string, unknown> {
    const fail = this.failing.get(method);
    if (fail) return { ok: false, error: fail };
    if (method === 'apps.connections.open') {
      if (token !== APP_TOKEN) return { ok: false, error: 'invalid_auth' };
      return { ok: true, url: `ws://127.0.0.1:${this.port}/socket?ticket=${randomUUID()}` };
    }
    if (token !== BOT_TOKEN) return { ok: false, error: 'invalid_auth' };
    switch (method) {
      case 'auth.test':
        return { ok: true, url: 'https://test.slack.com/', team: 'Test', user: 'switchboard', team_id: BOT.team, user_id: BOT.userId, bot_id: BOT.botId };
      case 'users.info': {
        const u = this.users.get(args.user);
        if (!u) return { ok: false, error: 'user_not_found' };
        return {
          ok: true,
          user: { id: u.id, name: u.name, real_name: u.real_name ?? u.name, profile: { display_name: u.display_name ?? '', real_name: u.real_name ?? u.name } },
        };
      }
      case 'conversations.replies': {
        // The thread's parent first, then its replies oldest first (after `oldest`), paged by cursor.
        const all = this.sorted(args.channel).filter((x) => x.ts === args.ts || x.thread_ts === args.ts);
        const parent = all.filter((x) => x.ts === args.ts);
        const replies = all.filter((x) => x.ts !== args.ts && this.inRange(x.ts, args));
        const { page, next } = this.page(replies, args, false);
        return this.listed([...parent, ...page], next);
      }
      case 'conversations.history': {
        // Top-level messages (and thread parents) of the channel, newest first, paged by cursor toward older ones.
        const top = this.sorted(args.channel).filter((x) => (!x.thread_ts || x.thread_ts === x.ts) && this.inRange(x.ts, args));
        const { page, next } = this.page(top, args, true);
        return this.listed(page, next);
      }
      case 'chat.postMessage': {
        const msg = this.store({ channel: args.channel, thread_ts: args.thread_ts, text: args.text ?? '', blocks: args.blocks, streaming: false });
        return { ok: true, channel: msg.channel, ts: msg.ts, message: { ts: msg.ts, text: msg.text } };
      }
      case 'chat.update': {
        const msg = this.messages.get(args.ts);
        if (!msg || msg.channel !== args.channel || msg.deleted) return { ok: false, error: 'message_not_found' };
        if (msg.streaming) return { ok: false, error: 'message_is_streaming' };
        if (args.text !== undefined) msg.text = args.text;
        if (args.blocks !== undefined) msg.blocks = args.blocks;
        msg.history.push(msg.text);
        return { ok: true, channel: msg.channel, ts: msg.ts, text: msg.text };
      }
      case 'chat.delete': {
        const msg = this.messages.get(args.ts);
        if (!msg || msg.deleted) return { ok: false, error: 'message_not_found' };
        msg.deleted = true;
        return { ok: true, channel: msg.channel, ts: msg.ts };
      }
      case 'chat.postEphemeral':
        this.ephemerals.push({ channel: args.channel, user: args.user, text: args.text, ...(args.thread_ts ? { thread_ts: args.thread_ts } : {}) });
        return { ok: true, message_ts: this.nextTs() };
      case 'chat.startStream': {
        if (!args.thread_ts) return { ok: false, error: 'invalid_arguments' };
        if (!String(args.channel).startsWith('D') && (!args.recipient_user_id || !args.recipient_team_id))
          return { ok: false, error: 'missing_recipient_user_id' };
        const msg = this.store({ channel: args.channel, thread_ts: args.thread_ts, text: '', streaming: true });
        this.streamIn(msg, args);
        return { ok: true, channel: msg.channel, ts: msg.ts };
      }
      case 'chat.appendStream':
      case 'chat.stopStream': {
        // appendStream's schema: markdown_text is required (task chunks come besides it).
        if (method === 'chat.appendStream' && typeof args.markdown_text !== 'string') return { ok: false, error: 'invalid_arguments' };
        const msg = this.messages.get(args.ts);
        if (!msg || msg.channel !== args.channel) return { ok: false, error: 'message_not_found' };
        if (!msg.streaming) return { ok: false, error: 'message_not_in_streaming_state' };
        this.streamIn(msg, args);
        if (method === 'chat.stopStream') msg.streaming = false;
        return { ok: true, channel: msg.channel, ts: msg.ts };
      }
      default:
        return { ok: true };
    }
  }

  private sorted(channel: string): FakeMessage[] {
    return [...this.messages.values()].filter((x) => x.channel === channel && !x.deleted).sort((a, b) => Number(a.ts) - Number(b.ts));
  }

  /** oldest/latest bound the range (exclusive unless inclusive=true), as Slack's history methods do. */
  private inRange(ts: string, args: Record<string, any>): boolean {
    const inclusive = args.inclusive === true || args.inclusive === 'true' || args.inclusive === '1';
    const t = Number(ts);
    if (args.oldest !== undefined && (inclusive ? t < Number(args.oldest) : t <= Number(args.oldest))) return false;
    if (args.latest !== undefined && (inclusive ? t > Number(args.latest) : t >= Number(args.latest))) return false;
    return true;
  }

  /** One page of `limit` (default 100; history keeps the newest end first) and the cursor to the next. */
  private page(list: FakeMessage[], args: Record<string, any>, newestFirst: boolean): { page: FakeMessage[]; next?: string } {
    const ordered = newestFirst ? [...list].reverse() : list;
    const limit = Math.max(1, Math.min(999, Number(args.limit ?? 100) || 100));
    const start = args.cursor
      ? Number(
          Buffer.from(String(args.cursor), 'base64')
            .toString('utf8')
            .replace(/^offset:/, ''),
        )
      : 0;
    const page = ordered.slice(start, start + limit);
    const more = start + limit < ordered.length;
    return { page, ...(more ? { next: Buffer.from(`offset:${start + limit}`).toString('base64') } : {}) };
  }

  private listed(page: FakeMessage[], next: string | undefined): Record<string, unknown> {
    return {
      ok: true,
      messages: page.map(
        (x) => x.raw ?? { type: 'message', ts: x.ts, ...(x.thread_ts ? { thread_ts: x.thread_ts } : {}), user: x.user, bot_id: x.bot_id, text: x.text },
      ),
      has_more: next !== undefined,
      response_metadata: { next_cursor: next ?? '' },
    };
  }

  private streamIn(msg: FakeMessage, args: Record<string, any>): void {
    let add = typeof args.markdown_text === 'string' ? args.markdown_text : '';
    for (const c of Array.isArray(args.chunks) ? args.chunks : []) {
      if (c.type === 'markdown_text') add += c.text;
      else msg.tasks.push(c);
    }
    if (add) {
      msg.text += add;
      msg.history.push(msg.text);
    }
  }

  private store(m: { channel: string; thread_ts?: string; text: string; blocks?: any[]; streaming: boolean; user?: string; ts?: string }): FakeMessage {
    const msg: FakeMessage = {
      channel: m.channel,
      ts: m.ts ?? this.nextTs(),
      ...(m.thread_ts ? { thread_ts: m.thread_ts } : {}),
      user: m.user ?? BOT.userId,
      ...(m.user ? {} : { bot_id: BOT.botId }),
      text: m.text,
      ...(m.blocks ? { blocks: m.blocks } : {}),
      streaming: m.streaming,
      history: m.text ? [m.text] : [],
      tasks: [],
      deleted: false,
    };
    this.messages.set(msg.ts, msg);
    return msg;
  }

  /** chat.appendStream calls of one workspace (one token) in the last minute over appendStreamPerMinute: 429 as Slack answers. */
  private overBudget(token: string | undefined): boolean {
    if (this.appendStreamPerMinute === undefined) return false;
    const now = Date.now();
    const recent = (this.appendTimes.get(token ?? '') ?? []).filter((t) => now - t < 60_000);
    const over = recent.length >= this.appendStreamPerMinute;
    if (!over) recent.push(now);
    this.appendTimes.set(token ?? '', recent);
    return over;
  }

  /** Shifts the fake's clock for the ts of new messages (negative: a test's past). */
  clockOffsetMs = 0;

  nextTs(): string {
    this.tsCounter++;
    const base = this.clockOffsetMs ? Math.floor((Date.now() + this.clockOffsetMs) / 1000) : this.tsBase;
    return `${base + Math.floor(this.tsCounter / 1000)}.${String(this.tsCounter % 1000).padStart(3, '0')}${String(Math.floor(Math.random() * 1000)).padStart(3, '0')}`;
  }

  // ---- what a user sees --------------------------------------------------------

  /** The bot's messages (not deleted) in a channel, optionally in one thread, oldest first. */
  botMessages(channel: string, thread_ts?: string): FakeMessage[] {
    return [...this.messages.values()].filter(
      (m) => m.channel === channel && m.user === BOT.userId && !m.deleted && (thread_ts === undefined || m.thread_ts === thread_ts),
    );
  }

  /**
   * The next `times` calls of `method` (those `when` accepts) fail at the HTTP level with `status`
   * (a 5xx by default; 429 is a rate limit with Retry-After: 1), or with Slack's `error` in an
   * ok:false answer (channel_not_found), and change nothing. `when` may be async (it is awaited for
   * every armed fault of the method, in order; the first that accepts the call answers it).
   */
  failNext(
    method: string,
    times: number,
    opts: { status?: number; error?: string; when?: (args: Record<string, any>) => boolean | Promise<boolean> } = {},
  ): void {
    this.faults.push({
      method,
      left: times,
      status: opts.error ? 200 : (opts.status ?? 503),
      ...(opts.error ? { error: opts.error } : {}),
      ...(opts.when ? { when: opts.when } : {}),
    });
  }

  /** Faults not used up yet, for a test that wants to know all fired. */
  get faultsLeft(): number {
    return this.faults.reduce((n, f) => n + f.left, 0);
  }

  /** Disarms every fault of failNext. */
  clearFaults(): void {
    this.faults.length = 0;
  }

  /** A file as a message event's files[] carries it; its bytes served at url_private (files.slack.com's /files-pri/<team>-<id>/<name> shape) to the bot token only. */
  uploadFile(name: string, mimetype: string, bytes: Buffer): Record<string, unknown> {
    const id = `F${randomUUID().replace(/-/g, '').slice(0, 10).toUpperCase()}`;
    const path = `/files-pri/${BOT.team}-${id}/${encodeURIComponent(name)}`;
    this.files.set(path, { mimetype, bytes });
    return {
      id,
      name,
      title: name,
      mimetype,
      filetype: name.split('.').pop(),
      size: bytes.length,
      url_private: `${this.url}${path}`,
      url_private_download: `${this.url}${path}?dl=1`,
    };
  }

  callsOf(method: string): SlackCall[] {
    return this.calls.filter((c) => c.method === method);
  }

  // ---- events ------------------------------------------------------------------

  /** A user's message as Slack would send it (also kept, so conversations.replies sees it). */
  userMessage(p: {
    user: string;
    channel: string;
    text: string;
    thread_ts?: string;
    channel_type?: string;
    files?: any[];
    ts?: string;
    type?: string;
    clientMsgId?: string | null;
    /** The sender's own team: another than the bot's in a Slack Connect / org-wide shared channel. */
    team?: string;
    /** When it was sent (default now): its ts says so. */
    at?: Date;
  }): any {
    const ts = p.ts ?? (p.at ? `${Math.floor(p.at.getTime() / 1000)}.${String(++this.tsCounter % 1_000_000).padStart(6, '0')}` : this.nextTs());
    const event = {
      type: p.type ?? 'message',
      user: p.user,
      text: p.text,
      ts,
      channel: p.channel,
      channel_type: p.channel_type ?? (p.channel.startsWith('D') ? 'im' : 'channel'),
      // As Slack sends a message in a shared channel: the sender's team, also as user_team and source_team.
      team: p.team ?? BOT.team,
      ...(p.team && p.team !== BOT.team ? { user_team: p.team, source_team: p.team } : {}),
      event_ts: ts,
      ...(p.clientMsgId === null ? {} : { client_msg_id: p.clientMsgId ?? randomUUID() }),
      ...(p.thread_ts ? { thread_ts: p.thread_ts } : {}),
      ...(p.files ? { files: p.files } : {}),
    };
    if (!this.messages.has(ts)) {
      const msg = this.store({ channel: p.channel, text: p.text, streaming: false, user: p.user, ts, ...(p.thread_ts ? { thread_ts: p.thread_ts } : {}) });
      // History items carry no channel, channel_type or event_ts.
      const { channel: _c, channel_type: _t, event_ts: _e, ...raw } = event;
      msg.raw = { ...raw, type: 'message' };
    }
    return event;
  }

  /** The Events API body (event_callback) around an event. */
  eventBody(event: any, eventId = `Ev${randomUUID().replace(/-/g, '').slice(0, 10).toUpperCase()}`): any {
    return {
      token: 'legacy-verification-token',
      team_id: BOT.team,
      api_app_id: BOT.appId,
      event,
      type: 'event_callback',
      event_id: eventId,
      event_time: Math.floor(Date.now() / 1000),
      // The envelope is the installation's: the bot's team, whoever's team the sender is in.
      authorizations: [{ enterprise_id: null, team_id: BOT.team, user_id: BOT.userId, is_bot: true, is_enterprise_install: false }],
      is_ext_shared_channel: typeof event?.team === 'string' && event.team !== BOT.team,
    };
  }

  /** A button click, as a block_actions payload on the request message. */
  blockAction(p: { user: string; message: FakeMessage; actionId: string; value: string }): any {
    return {
      type: 'block_actions',
      user: { id: p.user, username: p.user, team_id: BOT.team },
      api_app_id: BOT.appId,
      token: 'legacy-verification-token',
      container: {
        type: 'message',
        message_ts: p.message.ts,
        channel_id: p.message.channel,
        is_ephemeral: false,
        ...(p.message.thread_ts ? { thread_ts: p.message.thread_ts } : {}),
      },
      trigger_id: 'trigger-1',
      team: { id: BOT.team, domain: 'test' },
      channel: { id: p.message.channel, name: 'chan' },
      message: {
        type: 'message',
        user: BOT.userId,
        bot_id: BOT.botId,
        ts: p.message.ts,
        text: p.message.text,
        blocks: p.message.blocks,
        ...(p.message.thread_ts ? { thread_ts: p.message.thread_ts } : {}),
      },
      response_url: `${this.url}/response/1`,
      actions: [{ type: 'button', action_id: p.actionId, block_id: 'b', value: p.value, action_ts: String(Date.now() / 1000) }],
    };
  }

  // ---- Socket Mode -------------------------------------------------------------

  private onSocket(ws: WebSocket): void {
    this.connections++;
    this.sockets.push(ws);
    ws.on('message', (data) => {
      let msg: any;
      try {
        msg = JSON.parse(String(data));
      } catch {
        return;
      }
      if (msg.envelope_id) {
        this.acks.set(msg.envelope_id, msg.payload ?? {});
        this.waiters.get(msg.envelope_id)?.(msg.payload ?? {});
      }
    });
    ws.on('close', () => {
      const i = this.sockets.indexOf(ws);
      if (i >= 0) this.sockets.splice(i, 1);
    });
    ws.on('error', () => {});
    ws.send(
      JSON.stringify({
        type: 'hello',
        num_connections: 1,
        debug_info: { host: 'fake', approximate_connection_time: 18060 },
        connection_info: { app_id: BOT.appId },
      }),
    );
  }

  /** Open, answering sockets. */
  get liveSockets(): number {
    return this.sockets.filter((s) => !this.silenced.has(s) && s.readyState === s.OPEN).length;
  }

  /** Sends an envelope on the newest live socket; resolves with the ack's payload (rejects after timeoutMs). */
  sendEnvelope(type: 'events_api' | 'interactive', payload: any, opts: { retryAttempt?: number; timeoutMs?: number; envelopeId?: string } = {}): Promise<any> {
    const ws = [...this.sockets].reverse().find((s) => !this.silenced.has(s) && s.readyState === s.OPEN);
    if (!ws) return Promise.reject(new Error('no live socket mode connection'));
    const envelope_id = opts.envelopeId ?? randomUUID();
    const acked = new Promise<any>((resolve, reject) => {
      const t = setTimeout(() => {
        this.waiters.delete(envelope_id);
        reject(new Error(`envelope ${envelope_id} not acknowledged`));
      }, opts.timeoutMs ?? 5_000);
      this.waiters.set(envelope_id, (p) => {
        clearTimeout(t);
        this.waiters.delete(envelope_id);
        resolve(p);
      });
    });
    ws.send(
      JSON.stringify(
        type === 'events_api'
          ? {
              envelope_id,
              type,
              payload,
              accepts_response_payload: false,
              retry_attempt: opts.retryAttempt ?? 0,
              retry_reason: opts.retryAttempt ? 'timeout' : '',
            }
          : { envelope_id, type, payload, accepts_response_payload: true },
      ),
    );
    return acked;
  }

  /** The newest connection goes deaf: no pings, no pongs, nothing read or sent (a half-dead TCP connection). */
  silence(): void {
    const ws = [...this.sockets].reverse().find((s) => !this.silenced.has(s));
    if (!ws) return;
    this.silenced.add(ws);
    (ws as unknown as { _socket: Socket })._socket.pause();
  }
}

const JSON_KEYS = new Set(['blocks', 'chunks', 'attachments', 'metadata']);

function parseValue(v: string): unknown {
  if ((v.startsWith('[') && v.endsWith(']')) || (v.startsWith('{') && v.endsWith('}'))) {
    try {
      return JSON.parse(v);
    } catch {
      return v;
    }
  }
  return v;
}

/** Signs and posts an Events API / interactivity request like Slack does. */
export async function postSigned(
  url: string,
  body: unknown,
  opts: { secret?: string; timestamp?: number; retryNum?: number; form?: boolean; signature?: string } = {},
): Promise<{ status: number; text: string }> {
  const raw = opts.form ? new URLSearchParams({ payload: JSON.stringify(body) }).toString() : JSON.stringify(body);
  const ts = String(opts.timestamp ?? Math.floor(Date.now() / 1000));
  const sig =
    opts.signature ??
    `v0=${createHmac('sha256', opts.secret ?? SIGNING_SECRET)
      .update(`v0:${ts}:${raw}`)
      .digest('hex')}`;
  const r = await fetch(url, {
    method: 'POST',
    headers: {
      'content-type': opts.form ? 'application/x-www-form-urlencoded' : 'application/json',
      'x-slack-request-timestamp': ts,
      'x-slack-signature': sig,
      ...(opts.retryNum !== undefined ? { 'x-slack-retry-num': String(opts.retryNum), 'x-slack-retry-reason': 'http_timeout' } : {}),
    },
    body: raw,
  });
  return { status: r.status, text: await r.text() };
}
