/**
 * A fake of Discord for tests: the REST API (the routes Switchboard's discord
 * channel uses) and the gateway websocket, on one localhost port.
 *
 * REST: GET /api/v10/gateway/bot points discord.js at the fake gateway; messages
 * (create with nonce/enforce_nonce, edit, delete), typing, channels, command
 * registration, interaction callbacks and webhook follow-ups. Every request is
 * logged; `rateLimit()` makes the next matching requests answer 429 with the
 * headers @discordjs/rest reads.
 *
 * Gateway: HELLO (op 10), IDENTIFY (op 2) -> READY + GUILD_CREATE, heartbeats
 * (op 1 -> op 11), RESUME (op 6) replays what the session missed, then RESUMED.
 * Dispatches sent while no socket is connected wait in the session's log and are
 * replayed on resume. `drop(code)` closes the socket (4000: resumable).
 */
import { createHmac } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type WebSocket, WebSocketServer } from 'ws';

export const BOT_ID = '900000000000000001';
export const APP_ID = '900000000000000002';

export interface FakeUser {
  id: string;
  username: string;
  bot?: boolean;
}

export interface FakeChannel {
  id: string;
  type: number; // 0 text, 1 DM, 11 public thread
  guild_id?: string;
  parent_id?: string;
  name?: string;
}

export interface FakeGuild {
  id: string;
  name: string;
  channels: FakeChannel[];
  threads: FakeChannel[];
  roles: FakeRole[];
}

export interface FakeRole {
  id: string;
  name: string;
  /** A role an integration owns: the bot's own role has managed: true and tags.bot_id = the bot. */
  managed?: boolean;
  tags?: { bot_id?: string };
}

export interface FakeMessage {
  id: string;
  channel_id: string;
  guild_id?: string;
  author: FakeUser;
  content: string;
  components: unknown[];
  message_reference?: { message_id: string };
  nonce?: string;
  /** How many times the content or components were edited. */
  edits: number;
  deleted: boolean;
  /** Every content the message had, in order. */
  history: string[];
  /** The message object as Discord's REST API returns it (GET /channels/{id}/messages). */
  json?: Record<string, unknown>;
}

export interface LoggedRequest {
  method: string;
  path: string;
  body: any;
  status: number;
  at: number;
}

export interface InteractionReply {
  interactionId: string;
  type: number;
  data: any;
}

interface RateLimitRule {
  method?: string;
  path?: RegExp;
  remaining: number;
  retryAfter: number;
  global: boolean;
}

let counter = 0n;
/** Increasing snowflakes (timestamp-based, as Discord's are; `at` for a message sent in the past). */
export function snowflake(at = Date.now()): string {
  return (((BigInt(at) - 1420070400000n) << 22n) | (counter++ & 0x3fffffn)).toString();
}

const userJson = (u: FakeUser) => ({
  id: u.id,
  username: u.username,
  discriminator: '0',
  global_name: u.username,
  avatar: null,
  ...(u.bot ? { bot: true } : {}),
});

export class FakeDiscord {
  readonly bot: FakeUser = { id: BOT_ID, username: 'switchboard', bot: true };
  readonly guilds = new Map<string, FakeGuild>();
  readonly channels = new Map<string, FakeChannel>();
  readonly messages = new Map<string, FakeMessage>();
  readonly requests: LoggedRequest[] = [];
  readonly interactionReplies: InteractionReply[] = [];
  /** Interaction id → when it was created and whether its one initial response was given. */
  private readonly interactionsSeen = new Map<string, { at: number; responded: boolean }>();
  /** Initial interaction responses refused for coming after Discord's 3-second deadline (10062). */
  lateResponses = 0;
  readonly registeredCommands: Array<{ path: string; body: any }> = [];
  /** Count of 429 answers served. */
  rateLimited = 0;
  identifies = 0;
  resumes = 0;
  /** A token the fake refuses (401 on every authenticated route, as Discord does for a revoked token). */
  refuseToken: string | undefined;
  /**
   * The application's flags (GET /applications/@me): GATEWAY_MESSAGE_CONTENT_LIMITED (1 << 19) is
   * what the portal's Message Content switch sets for an unverified bot. 0: the intent is off.
   */
  applicationFlags = 1 << 19;
  /** Close the socket with this code on IDENTIFY (4014: a privileged intent such as MessageContent is not enabled). */
  closeOnIdentify: number | undefined;
  /** On RESUME, also replay this many user messages the client already had (at-least-once; the channel must not answer twice). */
  replayOverlap = 0;
  /** Shifts the fake's clock for the ids and timestamps of new messages (negative: a test's past). */
  clockOffsetMs = 0;
  private rules: RateLimitRule[] = [];
  private interactionMessage = new Map<string, string>();
  private server: Server;
  private wss: WebSocketServer;
  private socket: WebSocket | undefined;
  private sessionId = '';
  private seq = 0;
  private log: Array<{ s: number; t: string; d: unknown }> = [];
  port = 0;

  constructor() {
    this.server = createServer((req, res) => void this.handle(req, res));
    this.wss = new WebSocketServer({ server: this.server });
    this.wss.on('connection', (ws) => this.onConnection(ws));
  }

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as AddressInfo).port;
    return this;
  }

  get apiUrl(): string {
    return `http://127.0.0.1:${this.port}/api`;
  }

  get gatewayUrl(): string {
    return `ws://127.0.0.1:${this.port}`;
  }

  get connected(): boolean {
    return this.socket !== undefined && this.socket.readyState === 1;
  }

  async close(): Promise<void> {
    for (const c of this.wss.clients) c.terminate();
    await new Promise<void>((resolve) => this.wss.close(() => resolve()));
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  // ---------------------------------------------------------------- world

  addGuild(
    id: string,
    name: string,
    channels: Array<{ id: string; name: string }>,
    opts: { threads?: Array<{ id: string; parent: string; name: string }>; roles?: FakeRole[]; botRole?: string } = {},
  ): FakeGuild {
    const g: FakeGuild = {
      id,
      name,
      channels: channels.map((c) => ({ id: c.id, type: 0, guild_id: id, name: c.name })),
      threads: (opts.threads ?? []).map((t) => ({ id: t.id, type: 11, guild_id: id, parent_id: t.parent, name: t.name })),
      // Discord gives a bot invited with permissions its own managed role, tagged with the bot's id.
      roles: [
        { id, name: '@everyone' },
        ...(opts.roles ?? []),
        { id: opts.botRole ?? snowflake(), name: this.bot.username, managed: true, tags: { bot_id: BOT_ID } },
      ],
    };
    this.guilds.set(id, g);
    for (const c of [...g.channels, ...g.threads]) this.channels.set(c.id, c);
    return g;
  }

  addDm(id: string): FakeChannel {
    const c: FakeChannel = { id, type: 1 };
    this.channels.set(id, c);
    return c;
  }

  /** The next `count` requests matching get 429 (retry_after in seconds). */
  rateLimit(count: number, opts: { method?: string; path?: RegExp; retryAfter?: number; global?: boolean } = {}): void {
    this.rules.push({
      ...(opts.method ? { method: opts.method } : {}),
      ...(opts.path ? { path: opts.path } : {}),
      remaining: count,
      retryAfter: opts.retryAfter ?? 0.3,
      global: opts.global ?? false,
    });
  }

  /** Messages the bot posted in a channel (not deleted), oldest first. */
  botMessages(channelId: string): FakeMessage[] {
    return [...this.messages.values()].filter((m) => m.channel_id === channelId && m.author.id === BOT_ID && !m.deleted);
  }

  /** CDN files by path, with the signature (hm) their URL must carry. */
  private readonly cdn = new Map<string, { hm: string; bytes: Buffer }>();
  readonly cdnDownloads: Array<{ path: string; signed: boolean }> = [];

  private cdnFile(channelId: string, id: string, filename: string, bytes: Buffer): string {
    const path = `/attachments/${channelId}/${id}/${encodeURIComponent(filename)}`;
    const ex = Math.floor(Date.now() / 1000 + 86_400).toString(16);
    const is = Math.floor(Date.now() / 1000).toString(16);
    const hm = createHmac('sha256', 'fake-cdn-key').update(`${path}${ex}${is}`).digest('hex');
    this.cdn.set(path, { hm, bytes });
    return `http://127.0.0.1:${this.port}${path}?ex=${ex}&is=${is}&hm=${hm}&`;
  }

  requestsMatching(method: string, path: RegExp): LoggedRequest[] {
    return this.requests.filter((r) => r.method === method && path.test(r.path));
  }

  // ---------------------------------------------------------------- gateway events (the test's users)

  /** A user posts a message; returns its id. */
  userMessage(m: {
    channelId: string;
    author: FakeUser;
    content: string;
    mentionBot?: boolean;
    /** With bytes: served at a signed CDN-shaped URL of this server (/attachments/<channel>/<id>/<name>?ex&is&hm), as Discord's CDN serves it. */
    attachments?: Array<{ filename: string; size: number; content_type?: string; bytes?: Buffer }>;
    roles?: string[];
    id?: string;
    /** Other users mentioned (<@id> in the text, as Discord resolves them). */
    mentions?: FakeUser[];
    /** A reply to this message (message_reference + referenced_message); ping: its author is mentioned too (Discord's default). */
    replyTo?: { messageId: string; ping?: boolean };
    /** When it was sent (default now): its snowflake and timestamp say so. */
    at?: Date;
  }): string {
    const ch = this.channels.get(m.channelId);
    if (!ch) throw new Error(`unknown channel ${m.channelId}`);
    const id = m.id ?? snowflake(m.at?.getTime() ?? Date.now() + this.clockOffsetMs);
    const others = (m.mentions ?? []).map((u) => `<@${u.id}> `).join('');
    const content = m.mentionBot ? `<@${BOT_ID}> ${others}${m.content}` : `${others}${m.content}`;
    const referenced = m.replyTo ? this.messages.get(m.replyTo.messageId) : undefined;
    if (m.replyTo && !referenced) throw new Error(`unknown message ${m.replyTo.messageId}`);
    const msg = {
      ...this.messageJson({
        id,
        channel_id: m.channelId,
        ...(ch.guild_id ? { guild_id: ch.guild_id } : {}),
        author: m.author,
        content,
        components: [],
        ...(referenced ? { message_reference: { message_id: referenced.id } } : {}),
      }),
      timestamp: (m.at ?? new Date(Date.now() + this.clockOffsetMs)).toISOString(),
    };
    const mentioned = [...(m.mentionBot ? [this.bot] : []), ...(m.mentions ?? []), ...(referenced && m.replyTo?.ping !== false ? [referenced.author] : [])];
    // Role mentions in the text (<@&id>) of this guild's roles, as Discord resolves them.
    const guildRoles = ch.guild_id ? (this.guilds.get(ch.guild_id)?.roles ?? []) : [];
    const mentionRoles = [...content.matchAll(/<@&(\d+)>/g)].map((x) => x[1]!).filter((r) => guildRoles.some((g) => g.id === r));
    const d: Record<string, unknown> = {
      ...msg,
      mentions: [...new Map(mentioned.map((u) => [u.id, userJson(u)])).values()],
      mention_roles: mentionRoles,
      ...(referenced ? { referenced_message: this.messageJson(referenced) } : {}),
      attachments: (m.attachments ?? []).map((a) => {
        const aid = snowflake();
        const url = a.bytes ? this.cdnFile(m.channelId, aid, a.filename, a.bytes) : `https://cdn.example/${a.filename}`;
        return { id: aid, filename: a.filename, size: a.size, url, proxy_url: url, ...(a.content_type ? { content_type: a.content_type } : {}) };
      }),
    };
    if (ch.guild_id) d.member = { roles: m.roles ?? [], joined_at: new Date().toISOString(), deaf: false, mute: false, flags: 0 };
    else d.channel_type = 1;
    this.messages.set(id, {
      id,
      channel_id: m.channelId,
      ...(ch.guild_id ? { guild_id: ch.guild_id } : {}),
      author: m.author,
      content,
      components: [],
      edits: 0,
      deleted: false,
      history: [content],
      // REST message objects carry no guild_id and no member (only gateway events do).
      json: Object.fromEntries(Object.entries(d).filter(([k]) => k !== 'guild_id' && k !== 'member' && k !== 'channel_type')),
    });
    this.dispatch('MESSAGE_CREATE', d);
    return id;
  }

  /** A user clicks a button on a message; returns the interaction id. */
  clickButton(i: { messageId: string; customId: string; user: FakeUser; roles?: string[] }): string {
    const msg = this.messages.get(i.messageId);
    if (!msg) throw new Error(`unknown message ${i.messageId}`);
    const id = this.interaction(msg.channel_id, i.user, i.roles ?? [], {
      type: 3,
      data: { custom_id: i.customId, component_type: 2 },
      message: this.messageJson(msg),
    });
    this.interactionMessage.set(id, msg.id);
    return id;
  }

  /** A user runs a slash command; returns the interaction id. */
  slashCommand(c: { channelId: string; name: string; user: FakeUser; roles?: string[] }): string {
    return this.interaction(c.channelId, c.user, c.roles ?? [], { type: 2, data: { id: snowflake(), name: c.name, type: 1 } });
  }

  repliesTo(interactionId: string): InteractionReply[] {
    return this.interactionReplies.filter((r) => r.interactionId === interactionId);
  }

  /**
   * What the user sees of a command's response: its text (the initial response's, or the last edit
   * of the original), whether only they see it, and "thinking…" while it is deferred and not edited.
   */
  responseShown(interactionId: string): { content: string; ephemeral: boolean; thinking: boolean } | undefined {
    const rs = this.repliesTo(interactionId);
    const initial = rs.find((r) => r.type > 0);
    if (!initial || rs.some((r) => r.type === -3)) return undefined;
    const edits = rs.filter((r) => r.type === -1 && r.data?.content !== undefined);
    const content = edits.length ? String(edits[edits.length - 1]!.data.content) : String(initial.data?.content ?? '');
    return { content, ephemeral: (Number(initial.data?.flags ?? 0) & 64) === 64, thinking: initial.type === 5 && !edits.length };
  }

  /** Closes the gateway socket (4000 is resumable: discord.js comes back with RESUME). */
  drop(code = 4000): void {
    this.socket?.close(code, 'test drop');
    this.socket = undefined;
  }

  private interaction(channelId: string, user: FakeUser, roles: string[], extra: Record<string, unknown>): string {
    const ch = this.channels.get(channelId);
    if (!ch) throw new Error(`unknown channel ${channelId}`);
    const id = snowflake();
    this.interactionsSeen.set(id, { at: Date.now(), responded: false });
    const who = ch.guild_id
      ? {
          guild_id: ch.guild_id,
          member: { user: userJson(user), roles, permissions: '0', joined_at: new Date().toISOString(), deaf: false, mute: false, flags: 0 },
        }
      : { user: userJson(user) };
    this.dispatch('INTERACTION_CREATE', {
      id,
      application_id: APP_ID,
      token: `tok-${id}`,
      version: 1,
      channel_id: channelId,
      channel: { ...ch },
      locale: 'en-US',
      app_permissions: '0',
      entitlements: [],
      authorizing_integration_owners: {},
      context: ch.guild_id ? 0 : 1,
      ...who,
      ...extra,
    });
    return id;
  }

  private messageJson(
    m: Pick<FakeMessage, 'id' | 'channel_id' | 'author' | 'content' | 'components'> & { guild_id?: string; message_reference?: { message_id: string } },
  ) {
    return {
      id: m.id,
      channel_id: m.channel_id,
      ...(m.guild_id ? { guild_id: m.guild_id } : {}),
      author: userJson(m.author),
      content: m.content,
      timestamp: new Date().toISOString(),
      edited_timestamp: null,
      tts: false,
      mention_everyone: false,
      mentions: [],
      mention_roles: [],
      attachments: [],
      embeds: [],
      pinned: false,
      type: m.message_reference ? 19 : 0,
      flags: 0,
      components: m.components,
      ...(m.message_reference ? { message_reference: { ...m.message_reference, channel_id: m.channel_id } } : {}),
    };
  }

  // ---------------------------------------------------------------- gateway protocol

  private send(ws: WebSocket, payload: unknown): void {
    if (ws.readyState === 1) ws.send(JSON.stringify(payload));
  }

  private dispatch(t: string, d: unknown): void {
    const s = ++this.seq;
    this.log.push({ s, t, d });
    if (this.socket && this.socket.readyState === 1 && this.sessionId) this.send(this.socket, { op: 0, t, s, d });
  }

  private onConnection(ws: WebSocket): void {
    this.send(ws, { op: 10, d: { heartbeat_interval: 41_250 } });
    ws.on('message', (raw) => {
      let p: { op: number; d: any };
      try {
        p = JSON.parse(String(raw));
      } catch {
        return;
      }
      if (p.op === 1) this.send(ws, { op: 11 });
      else if (p.op === 2) this.identify(ws);
      else if (p.op === 6) this.resume(ws, p.d);
    });
    ws.on('close', () => {
      if (this.socket === ws) this.socket = undefined;
    });
  }

  private identify(ws: WebSocket): void {
    this.identifies++;
    if (this.closeOnIdentify) {
      ws.close(this.closeOnIdentify, 'refused');
      return;
    }
    this.socket = ws;
    this.sessionId = `sess-${snowflake()}`;
    this.log = [];
    const guilds = [...this.guilds.values()];
    this.dispatch('READY', {
      v: 10,
      user: { ...userJson(this.bot), verified: true, mfa_enabled: false, flags: 0 },
      guilds: guilds.map((g) => ({ id: g.id, unavailable: true })),
      session_id: this.sessionId,
      resume_gateway_url: this.gatewayUrl,
      application: { id: APP_ID, flags: 0 },
      private_channels: [],
      shard: [0, 1],
    });
    for (const g of guilds) {
      this.dispatch('GUILD_CREATE', {
        id: g.id,
        name: g.name,
        icon: null,
        owner_id: '1',
        afk_timeout: 300,
        verification_level: 0,
        default_message_notifications: 0,
        explicit_content_filter: 0,
        roles: g.roles.map((r, i) => ({
          id: r.id,
          name: r.name,
          color: 0,
          hoist: false,
          position: i,
          permissions: '0',
          managed: r.managed ?? false,
          ...(r.tags ? { tags: { ...r.tags } } : {}),
          mentionable: false,
          flags: 0,
        })),
        emojis: [],
        features: [],
        mfa_level: 0,
        system_channel_flags: 0,
        premium_tier: 0,
        preferred_locale: 'en-US',
        nsfw_level: 0,
        unavailable: false,
        member_count: 2,
        joined_at: new Date().toISOString(),
        large: false,
        members: [],
        voice_states: [],
        presences: [],
        stage_instances: [],
        guild_scheduled_events: [],
        stickers: [],
        channels: g.channels.map((c, i) => ({ id: c.id, type: 0, name: c.name, position: i, permission_overwrites: [], nsfw: false })),
        threads: g.threads.map((t) => ({
          id: t.id,
          type: 11,
          guild_id: g.id,
          parent_id: t.parent_id,
          name: t.name,
          owner_id: '1',
          message_count: 0,
          member_count: 1,
          thread_metadata: { archived: false, auto_archive_duration: 1440, archive_timestamp: new Date().toISOString(), locked: false },
        })),
      });
    }
  }

  private resume(ws: WebSocket, d: { session_id: string; seq: number }): void {
    if (d.session_id !== this.sessionId) {
      this.send(ws, { op: 9, d: false });
      return;
    }
    this.resumes++;
    this.socket = ws;
    if (this.replayOverlap > 0) {
      const seen = this.log.filter((e) => e.s <= d.seq && e.t === 'MESSAGE_CREATE' && !(e.d as { author: FakeUser }).author.bot);
      for (const e of seen.slice(-this.replayOverlap)) this.send(ws, { op: 0, t: e.t, s: e.s, d: e.d });
    }
    for (const e of this.log) if (e.s > d.seq) this.send(ws, { op: 0, t: e.t, s: e.s, d: e.d });
    this.send(ws, { op: 0, t: 'RESUMED', s: ++this.seq, d: {} });
  }

  // ---------------------------------------------------------------- REST

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const raw = Buffer.concat(chunks).toString('utf8');
    let body: any;
    try {
      body = raw ? JSON.parse(raw) : undefined;
    } catch {
      body = raw;
    }
    const url = new URL(req.url ?? '/', 'http://x');
    const method = req.method ?? 'GET';
    const file = this.cdn.get(url.pathname);
    if (file) {
      // Discord's CDN: an unsigned or wrongly signed URL is 404 "This content is no longer available."
      const signed = url.searchParams.get('hm') === file.hm;
      this.cdnDownloads.push({ path: url.pathname, signed });
      if (!signed) res.writeHead(404, { 'content-type': 'text/plain' }).end('This content is no longer available.');
      else res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(file.bytes.length) }).end(file.bytes);
      return;
    }
    // decoded: discord.js sends /messages/%40original
    const path = decodeURIComponent(url.pathname).replace(/^\/api\/v10/, '');
    const entry: LoggedRequest = { method, path, body, status: 0, at: Date.now() };
    this.requests.push(entry);
    const reply = (status: number, payload?: unknown, headers: Record<string, string> = {}) => {
      entry.status = status;
      const text = payload === undefined ? '' : JSON.stringify(payload);
      res.writeHead(status, {
        ...(text ? { 'content-type': 'application/json' } : {}),
        'x-ratelimit-limit': '50',
        'x-ratelimit-remaining': '49',
        'x-ratelimit-reset-after': '0.001',
        'x-ratelimit-bucket': `b-${method}-${path.split('/').slice(0, 3).join('-')}`,
        ...headers,
      });
      res.end(text);
    };

    const rule = this.rules.find((r) => r.remaining > 0 && (!r.method || r.method === method) && (!r.path || r.path.test(path)));
    if (rule) {
      rule.remaining--;
      this.rateLimited++;
      return reply(
        429,
        { message: 'You are being rate limited.', retry_after: rule.retryAfter, global: rule.global, code: 0 },
        {
          'retry-after': String(rule.retryAfter),
          'x-ratelimit-limit': '5',
          'x-ratelimit-remaining': '0',
          'x-ratelimit-reset-after': String(rule.retryAfter),
          'x-ratelimit-scope': rule.global ? 'global' : 'user',
          ...(rule.global ? { 'x-ratelimit-global': 'true' } : {}),
        },
      );
    }

    if (this.refuseToken && req.headers.authorization === `Bot ${this.refuseToken}`) return reply(401, { message: '401: Unauthorized', code: 0 });
    let m: RegExpExecArray | null;
    if (method === 'GET' && path === '/gateway/bot') {
      return reply(200, { url: this.gatewayUrl, shards: 1, session_start_limit: { total: 1000, remaining: 999, reset_after: 0, max_concurrency: 1 } });
    }
    if (method === 'GET' && path === '/users/@me') return reply(200, userJson(this.bot));
    if (method === 'GET' && path === '/applications/@me') {
      return reply(200, {
        id: APP_ID,
        name: 'Switchboard',
        bot_public: false,
        bot_require_code_grant: false,
        flags: this.applicationFlags,
        bot: userJson(this.bot),
      });
    }
    if ((m = /^\/channels\/(\d+)\/typing$/.exec(path)) && method === 'POST') return reply(204);
    if ((m = /^\/channels\/(\d+)$/.exec(path)) && method === 'GET') {
      const ch = this.channels.get(m[1]!);
      return ch ? reply(200, { ...ch }) : reply(404, { message: 'Unknown Channel', code: 10003 });
    }
    if ((m = /^\/channels\/(\d+)\/messages$/.exec(path)) && method === 'GET') {
      if (!this.channels.has(m[1]!)) return reply(404, { message: 'Unknown Channel', code: 10003 });
      return reply(200, this.history(m[1]!, url.searchParams));
    }
    if ((m = /^\/channels\/(\d+)\/messages$/.exec(path)) && method === 'POST') {
      const ch = this.channels.get(m[1]!);
      if (!ch) return reply(404, { message: 'Unknown Channel', code: 10003 });
      const content = String(body?.content ?? '');
      if (content.length > 2000)
        return reply(400, {
          message: 'Invalid Form Body',
          code: 50035,
          errors: { content: { _errors: [{ code: 'BASE_TYPE_MAX_LENGTH', message: 'Must be 2000 or fewer in length.' }] } },
        });
      if (!content && !body?.components?.length) return reply(400, { message: 'Cannot send an empty message', code: 50006 });
      if (body?.nonce && body?.enforce_nonce) {
        const same = [...this.messages.values()].find((x) => x.channel_id === ch.id && x.nonce === body.nonce && x.author.id === BOT_ID);
        if (same) return reply(200, this.messageJson(same));
      }
      const id = snowflake(Date.now() + this.clockOffsetMs);
      const msg: FakeMessage = {
        id,
        channel_id: ch.id,
        ...(ch.guild_id ? { guild_id: ch.guild_id } : {}),
        author: this.bot,
        content,
        components: body?.components ?? [],
        ...(body?.message_reference ? { message_reference: { message_id: body.message_reference.message_id } } : {}),
        ...(body?.nonce ? { nonce: String(body.nonce) } : {}),
        edits: 0,
        deleted: false,
        history: [content],
      };
      this.messages.set(id, msg);
      const json = this.messageJson(msg);
      // Discord echoes the bot's own messages on the gateway; the channel must ignore them.
      this.dispatch('MESSAGE_CREATE', { ...json, mentions: [], ...(ch.guild_id ? {} : { channel_type: 1 }) });
      return reply(200, json);
    }
    if ((m = /^\/channels\/(\d+)\/messages\/(\d+)$/.exec(path)) && (method === 'PATCH' || method === 'DELETE')) {
      const msg = this.messages.get(m[2]!);
      if (!msg || msg.deleted || msg.channel_id !== m[1]) return reply(404, { message: 'Unknown Message', code: 10008 });
      if (method === 'DELETE') {
        msg.deleted = true;
        return reply(204);
      }
      if (body?.content !== undefined && String(body.content).length > 2000) return reply(400, { message: 'Invalid Form Body', code: 50035 });
      this.applyEdit(msg, body);
      return reply(200, this.messageJson(msg));
    }
    if ((m = /^\/applications\/(\d+)(\/guilds\/(\d+))?\/commands$/.exec(path)) && method === 'PUT') {
      this.registeredCommands.push({ path, body });
      return reply(
        200,
        (body as any[]).map((c) => ({ ...c, id: snowflake(), application_id: APP_ID, version: '1', type: c.type ?? 1, default_member_permissions: null })),
      );
    }
    if ((m = /^\/interactions\/(\d+)\/([^/]+)\/callback$/.exec(path)) && method === 'POST') {
      // One initial response, within 3 seconds of the interaction (else its token is gone).
      const seen = this.interactionsSeen.get(m[1]!);
      if (!seen || Date.now() - seen.at > 3_000) {
        this.lateResponses++;
        return reply(404, { message: 'Unknown interaction', code: 10062 });
      }
      if (seen.responded) return reply(400, { message: 'Interaction has already been acknowledged.', code: 40060 });
      seen.responded = true;
      this.interactionReplies.push({ interactionId: m[1]!, type: body?.type, data: body?.data });
      if (body?.type === 7 || body?.type === 6) this.applyInteractionUpdate(m[1]!, body?.data);
      return reply(204);
    }
    if ((m = /^\/webhooks\/(\d+)\/([^/]+)\/messages\/@original$/.exec(path)) && method === 'DELETE') {
      const interactionId = m[2]!.replace(/^tok-/, '');
      if (!this.interactionsSeen.get(interactionId)?.responded) return reply(404, { message: 'Unknown Message', code: 10008 });
      this.interactionReplies.push({ interactionId, type: -3, data: null });
      return reply(204);
    }
    if ((m = /^\/webhooks\/(\d+)\/([^/]+)\/messages\/@original$/.exec(path)) && method === 'PATCH') {
      const interactionId = m[2]!.replace(/^tok-/, '');
      // The original response exists only once the interaction was answered (or deferred).
      if (!this.interactionsSeen.get(interactionId)?.responded) return reply(404, { message: 'Unknown Message', code: 10008 });
      this.interactionReplies.push({ interactionId, type: -1, data: body });
      this.applyInteractionUpdate(interactionId, body);
      return reply(200, { id: snowflake(), content: body?.content ?? '' });
    }
    if ((m = /^\/webhooks\/(\d+)\/([^/]+)$/.exec(path)) && method === 'POST') {
      this.interactionReplies.push({ interactionId: m[2]!.replace(/^tok-/, ''), type: -2, data: body });
      return reply(200, {
        id: snowflake(),
        channel_id: '0',
        content: body?.content ?? '',
        author: userJson(this.bot),
        timestamp: new Date().toISOString(),
        attachments: [],
        embeds: [],
        mentions: [],
        mention_roles: [],
        type: 0,
        flags: body?.flags ?? 0,
        components: [],
        tts: false,
        mention_everyone: false,
        pinned: false,
        edited_timestamp: null,
      });
    }
    reply(404, { message: `fake discord: no route ${method} ${path}`, code: 0 });
  }

  /**
   * GET /channels/{id}/messages as Discord answers it: `limit` 1–100 (default 50); with `after`, the
   * messages right after that id, else those before `before` (or the latest); every page sorted
   * newest first, whichever parameter is used.
   */
  private history(channelId: string, q: URLSearchParams): unknown[] {
    const limit = Math.min(100, Math.max(1, Number(q.get('limit') ?? 50) || 50));
    const all = [...this.messages.values()].filter((x) => x.channel_id === channelId && !x.deleted).sort((a, b) => (BigInt(a.id) < BigInt(b.id) ? -1 : 1));
    const after = q.get('after');
    const before = q.get('before');
    const page = after
      ? all.filter((x) => BigInt(x.id) > BigInt(after)).slice(0, limit)
      : all.filter((x) => !before || BigInt(x.id) < BigInt(before)).slice(-limit);
    return page.reverse().map((x) => x.json ?? { ...this.messageJson(x), content: x.content });
  }

  private applyEdit(msg: FakeMessage, body: any): void {
    if (!body) return;
    let changed = false;
    if (body.content !== undefined && body.content !== msg.content) {
      msg.content = String(body.content ?? '');
      msg.history.push(msg.content);
      changed = true;
    }
    if (body.components !== undefined) {
      msg.components = body.components;
      changed = true;
    }
    if (changed) msg.edits++;
  }

  private applyInteractionUpdate(interactionId: string, data: any): void {
    const messageId = this.interactionMessage.get(interactionId);
    const msg = messageId ? this.messages.get(messageId) : undefined;
    if (msg) this.applyEdit(msg, data);
  }
}
