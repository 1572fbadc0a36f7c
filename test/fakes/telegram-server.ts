/**
 * A fake Telegram Bot API on localhost, speaking the real HTTP protocol
 * (POST /bot<token>/<method> with a JSON body, answers {ok, result} or
 * {ok: false, error_code, description, parameters}), so the real grammY client
 * can be pointed at it (client.apiRoot). What it keeps: the updates users
 * cause (messages, button clicks), confirmed by getUpdates' offset as Telegram
 * does; the messages the bot sent and each edit of them; the webhook, to
 * which it POSTs pending updates with X-Telegram-Bot-Api-Secret-Token and
 * retries until a 2xx. Faithful where it bites: 409 for getUpdates while a
 * webhook is set (and for two pollers at once), 429 with
 * parameters.retry_after, 400 "can't parse entities" for bad HTML, 400
 * "message is not modified" for an edit that changes nothing.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export const BOT_TOKEN = '123456:TEST-telegram-token';
export const BOT = { id: 123456, is_bot: true, first_name: 'Switchboard', username: 'switchboard_bot' };

export interface TgUser {
  id: number;
  first_name: string;
  username?: string;
  is_bot?: boolean;
}

export interface TgChat {
  id: number;
  type: 'private' | 'group' | 'supergroup';
  title?: string;
  is_forum?: boolean;
}

interface Entity {
  type: string;
  offset: number;
  length: number;
  user?: TgUser;
}

export interface SentMessage {
  message_id: number;
  chat: TgChat;
  /** The text as shown (HTML parsed away). */
  text: string;
  /** The text as sent (with its markup), each version. */
  history: Array<{ raw: string; parseMode?: string; at: number }>;
  parseMode?: string;
  replyMarkup?: { inline_keyboard: Array<Array<{ text: string; callback_data?: string }>> };
  threadId?: number;
  replyToMessageId?: number;
  deleted?: boolean;
}

export interface ApiCall {
  method: string;
  body: Record<string, unknown>;
  at: number;
}

const TAGS = new Set(['b', 'strong', 'i', 'em', 'u', 'ins', 's', 'strike', 'del', 'code', 'pre', 'a', 'blockquote', 'tg-spoiler', 'span']);

/** Telegram's HTML parse mode: the shown text, or the error Telegram answers. */
export function parseHtml(html: string): { text: string } | { error: string } {
  const stack: string[] = [];
  let text = '';
  for (let i = 0; i < html.length; ) {
    const c = html[i]!;
    if (c === '<') {
      const end = html.indexOf('>', i);
      if (end < 0) return { error: `Can't find end of the entity starting at byte offset ${i}` };
      const tag = html.slice(i + 1, end);
      const close = tag.startsWith('/');
      const name = (close ? tag.slice(1) : tag).split(/\s/)[0]!.toLowerCase();
      if (!TAGS.has(name)) return { error: `Unsupported start tag "${name}" at byte offset ${i}` };
      if (close) {
        if (stack.pop() !== name) return { error: `Unexpected end tag at byte offset ${i}` };
      } else stack.push(name);
      i = end + 1;
    } else if (c === '&') {
      const m = /^&(lt|gt|amp|quot|#\d+|#x[0-9a-f]+);/i.exec(html.slice(i));
      if (!m) return { error: `Unsupported HTML entity at byte offset ${i}` };
      text +=
        { lt: '<', gt: '>', amp: '&', quot: '"' }[m[1]!.toLowerCase()] ?? String.fromCodePoint(Number(m[1]!.replace(/^#x?/i, (p) => (p === '#' ? '' : '0x'))));
      i += m[0].length;
    } else {
      if (c === '>') return { error: `Unsupported HTML entity at byte offset ${i}` };
      text += c;
      i++;
    }
  }
  if (stack.length) return { error: `Can't find end tag corresponding to start tag "${stack.at(-1)}"` };
  return { text };
}

class ApiError extends Error {
  constructor(
    readonly code: number,
    readonly description: string,
    readonly parameters?: Record<string, unknown>,
  ) {
    super(description);
  }
}

export class FakeTelegram {
  private server: Server | undefined;
  private nextUpdateId = 1000;
  private nextMessageId = 5000;
  private pending: Array<{ update_id: number } & Record<string, unknown>> = [];
  private waiters: Array<() => void> = [];
  private activePoll: ((conflict: boolean) => void) | undefined;
  private webhook: { url: string; secret?: string } | undefined;
  private pushing = false;
  private readonly chats = new Map<number, TgChat>();
  private readonly floods = new Map<number, number[]>();
  readonly sent: SentMessage[] = [];
  readonly calls: ApiCall[] = [];
  /** Webhook POSTs and the status the gateway answered. */
  readonly webhookPosts: Array<{ updateId: number; status: number }> = [];
  /** Per chat: when the last 429 told the client to come back (ms epoch), and whether it came back too early. */
  readonly retryAfterViolations: Array<{ chat: number; method: string; earlyByMs: number }> = [];
  private readonly retryUntil = new Map<number, number>();
  apiRoot = '';

  async start(): Promise<this> {
    this.server = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((r) => this.server!.listen(0, '127.0.0.1', r));
    this.apiRoot = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  async close(): Promise<void> {
    this.activePoll?.(false);
    for (const w of this.waiters.splice(0)) w();
    this.webhook = undefined;
    this.server?.closeAllConnections();
    await new Promise((r) => this.server?.close(r));
  }

  addChat(chat: TgChat): TgChat {
    this.chats.set(chat.id, chat);
    return chat;
  }

  // ------------------------------------------------------------------ what users do

  /**
   * A user's message. Entities are found as Telegram finds them: "@username" mentions and
   * "/command[@bot]" at the start; `textMention` adds a text_mention of the bot over that substring.
   */
  userMessage(m: {
    chat: TgChat;
    from: TgUser;
    text: string;
    replyTo?: { message_id: number; from: TgUser } | SentMessage;
    threadId?: number;
    /** Seconds ago the message was sent (catch-up). */
    ageSeconds?: number;
    textMention?: string;
    /** A photo (its text is the caption): Telegram's sizes, a thumbnail and the full one, each by file_id. */
    photo?: Buffer;
    /** A file sent as a document (its text is the caption). */
    document?: { name: string; mimeType: string; bytes: Buffer };
  }): { updateId: number; messageId: number } {
    const entities: Entity[] = [];
    const cmd = /^\/[A-Za-z0-9_]+(@[A-Za-z0-9_]+)?/.exec(m.text);
    if (cmd) entities.push({ type: 'bot_command', offset: 0, length: cmd[0].length });
    // A "@bot" that ends a command is part of the command, not a mention.
    for (const x of m.text.matchAll(/@[A-Za-z0-9_]{5,32}/g))
      if (x.index >= (cmd?.[0].length ?? 0)) entities.push({ type: 'mention', offset: x.index, length: x[0].length });
    if (m.textMention) {
      const at = m.text.indexOf(m.textMention);
      entities.push({ type: 'text_mention', offset: at, length: m.textMention.length, user: BOT });
    }
    const messageId = this.nextMessageId++;
    const reply =
      m.replyTo && 'history' in m.replyTo
        ? { message_id: m.replyTo.message_id, from: BOT, chat: m.replyTo.chat, date: 0, text: m.replyTo.text }
        : m.replyTo
          ? { message_id: m.replyTo.message_id, from: m.replyTo.from, chat: m.chat, date: 0, text: '' }
          : m.threadId
            ? // In a forum topic every message "replies" to the topic's creation message.
              // Created by the bot here: a reply to it is no reply to the bot.
              { message_id: m.threadId, from: BOT, chat: m.chat, date: 0, forum_topic_created: { name: 'topic', icon_color: 0 } }
            : undefined;
    const message = {
      message_id: messageId,
      from: { is_bot: false, ...m.from },
      chat: m.chat,
      date: Math.floor(Date.now() / 1000) - (m.ageSeconds ?? 0),
      ...(m.photo || m.document
        ? {
            ...(m.text ? { caption: m.text } : {}),
            ...(entities.length ? { caption_entities: entities } : {}),
            ...(m.photo
              ? {
                  photo: [
                    { ...this.addFile(m.photo.subarray(0, Math.min(m.photo.length, 64)), 'photos'), width: 90, height: 90 },
                    { ...this.addFile(m.photo, 'photos'), width: 1280, height: 960 },
                  ],
                }
              : {}),
            ...(m.document ? { document: { ...this.addFile(m.document.bytes, 'documents'), file_name: m.document.name, mime_type: m.document.mimeType } } : {}),
          }
        : { text: m.text, ...(entities.length ? { entities } : {}) }),
      ...(m.threadId ? { message_thread_id: m.threadId, is_topic_message: true } : {}),
      ...(reply ? { reply_to_message: reply } : {}),
    };
    return { updateId: this.push({ message }), messageId };
  }

  /** Files by file_id, downloadable at /file/bot<token>/<file_path> after getFile, as the Bot API serves them. */
  private readonly files = new Map<string, { path: string; bytes: Buffer }>();
  readonly fileDownloads: string[] = [];

  private addFile(bytes: Buffer, folder: string): { file_id: string; file_unique_id: string; file_size: number } {
    const id = `AgAC${randomUUID().replace(/-/g, '')}`;
    this.files.set(id, { path: `${folder}/file_${this.files.size}.${folder === 'photos' ? 'jpg' : 'bin'}`, bytes });
    return { file_id: id, file_unique_id: id.slice(0, 16), file_size: bytes.length };
  }

  /** A tap on an inline keyboard button of a bot message. */
  clickButton(msg: SentMessage, from: TgUser, data: string): { updateId: number; queryId: string } {
    const queryId = `cq${this.nextUpdateId}`;
    const updateId = this.push({
      callback_query: {
        id: queryId,
        from: { is_bot: false, ...from },
        chat_instance: 'ci1',
        data,
        message: {
          message_id: msg.message_id,
          chat: msg.chat,
          date: 0,
          from: BOT,
          text: msg.text,
          ...(msg.replyMarkup ? { reply_markup: msg.replyMarkup } : {}),
        },
      },
    });
    return { updateId, queryId };
  }

  /** The same update again (Telegram redelivers a webhook update it got no 2xx for). */
  redeliver(updateId: number, update: Record<string, unknown>): void {
    this.pending.push({ update_id: updateId, ...update });
    this.wakeUp();
  }

  /** The raw update as queued, for redeliver. */
  lastUpdates: Array<{ update_id: number } & Record<string, unknown>> = [];

  private push(update: Record<string, unknown>): number {
    const u = { update_id: this.nextUpdateId++, ...update };
    this.pending.push(u);
    this.lastUpdates.push(u);
    this.wakeUp();
    return u.update_id;
  }

  private wakeUp(): void {
    for (const w of this.waiters.splice(0)) w();
    if (this.webhook) void this.pushWebhook();
  }

  /** The next call about this chat (sendMessage, editMessageText...) is answered 429 retry after `seconds`. */
  floodOnce(chatId: number, seconds: number, times = 1): void {
    this.floods.set(chatId, [...(this.floods.get(chatId) ?? []), ...Array.from({ length: times }, () => seconds)]);
  }

  /**
   * The next HTML message to this chat is refused with "can't parse entities", as Telegram refuses
   * entity edge cases (nesting its parser does not take) that a converter cannot all foresee.
   */
  refuseEntitiesOnce(chatId: number): void {
    this.refuseEntities.add(chatId);
  }

  private readonly refuseEntities = new Set<number>();

  // ------------------------------------------------------------------ what tests read

  botMessages(chatId: number): SentMessage[] {
    return this.sent.filter((m) => m.chat.id === chatId && !m.deleted);
  }

  callsOf(method: string): ApiCall[] {
    return this.calls.filter((c) => c.method === method);
  }

  get webhookUrl(): string | undefined {
    return this.webhook?.url;
  }

  pendingCount(): number {
    return this.pending.length;
  }

  // ------------------------------------------------------------------ the HTTP side

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const file = /^\/file\/bot([^/]+)\/(.+)$/.exec(new URL(req.url ?? '/', 'http://x').pathname);
    if (file) {
      this.fileDownloads.push(file[2]!);
      const found = [...this.files.values()].find((f) => f.path === file[2]);
      // The Bot API answers a wrong token or an unknown path with 404 and a JSON error.
      if (file[1] !== BOT_TOKEN || !found)
        res.writeHead(404, { 'content-type': 'application/json' }).end('{"ok":false,"error_code":404,"description":"Not Found"}');
      else res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(found.bytes.length) }).end(found.bytes);
      return;
    }
    const m = /^\/bot([^/]+)\/([A-Za-z]+)$/.exec(new URL(req.url ?? '/', 'http://x').pathname);
    let raw = '';
    for await (const chunk of req) raw += chunk;
    const send = (status: number, body: unknown) => {
      if (res.destroyed) return;
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    };
    if (!m) return send(404, { ok: false, error_code: 404, description: 'Not Found' });
    if (m[1] !== BOT_TOKEN) return send(401, { ok: false, error_code: 401, description: 'Unauthorized' });
    const method = m[2]!;
    let body: Record<string, unknown> = {};
    try {
      if (raw) body = JSON.parse(raw) as Record<string, unknown>;
    } catch {
      return send(400, { ok: false, error_code: 400, description: 'Bad Request: invalid JSON' });
    }
    this.calls.push({ method, body, at: Date.now() });
    try {
      const result = await this.call(method, body, req);
      send(200, { ok: true, result });
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      send(err.code, { ok: false, error_code: err.code, description: err.description, ...(err.parameters ? { parameters: err.parameters } : {}) });
    }
  }

  private chat(id: unknown): TgChat {
    const chat = this.chats.get(Number(id));
    if (!chat) throw new ApiError(400, 'Bad Request: chat not found');
    return chat;
  }

  /** Flood control: a 429 when one is due for the chat; a call before the retry_after passed is a violation. */
  private flood(chatId: number, method: string): void {
    const until = this.retryUntil.get(chatId);
    if (until !== undefined && Date.now() < until) this.retryAfterViolations.push({ chat: chatId, method, earlyByMs: until - Date.now() });
    const queue = this.floods.get(chatId);
    const seconds = queue?.shift();
    if (seconds === undefined) return;
    this.retryUntil.set(chatId, Date.now() + seconds * 1000);
    throw new ApiError(429, `Too Many Requests: retry after ${seconds}`, { retry_after: seconds });
  }

  private shown(text: unknown, parseMode: unknown, chatId: number): string {
    if (typeof text !== 'string' || !text.trim()) throw new ApiError(400, 'Bad Request: message text is empty');
    let shown = text;
    if (parseMode === 'HTML' && this.refuseEntities.delete(chatId))
      throw new ApiError(400, `Bad Request: can't parse entities: Can't find end of the entity starting at byte offset ${Math.floor(text.length / 2)}`);
    if (parseMode === 'HTML') {
      const r = parseHtml(text);
      if ('error' in r) throw new ApiError(400, `Bad Request: can't parse entities: ${r.error}`);
      shown = r.text;
    } else if (parseMode !== undefined) throw new ApiError(400, `Bad Request: unsupported parse_mode ${String(parseMode)}`);
    if (!shown.trim()) throw new ApiError(400, 'Bad Request: message text is empty');
    if ([...shown].length > 4096) throw new ApiError(400, 'Bad Request: message is too long');
    return shown;
  }

  private async call(method: string, b: Record<string, unknown>, req: IncomingMessage): Promise<unknown> {
    switch (method) {
      case 'getMe':
        return BOT;
      case 'getFile': {
        const f = this.files.get(String(b.file_id));
        if (!f) throw new ApiError(400, 'Bad Request: invalid file_id');
        return { file_id: b.file_id, file_unique_id: String(b.file_id).slice(0, 16), file_size: f.bytes.length, file_path: f.path };
      }
      case 'setMyCommands':
        return true;
      case 'getWebhookInfo':
        return { url: this.webhook?.url ?? '', has_custom_certificate: false, pending_update_count: this.pending.length };
      case 'setWebhook': {
        if (typeof b.url !== 'string') throw new ApiError(400, 'Bad Request: bad webhook: URL must be provided');
        if (b.drop_pending_updates) this.pending = [];
        this.webhook = { url: b.url, ...(typeof b.secret_token === 'string' ? { secret: b.secret_token } : {}) };
        this.activePoll?.(true);
        void this.pushWebhook();
        return true;
      }
      case 'deleteWebhook':
        this.webhook = undefined;
        if (b.drop_pending_updates) this.pending = [];
        return true;
      case 'getUpdates':
        return this.getUpdates(b, req);
      case 'sendMessage': {
        const chat = this.chat(b.chat_id);
        this.flood(chat.id, method);
        const parseMode = b.parse_mode as string | undefined;
        const text = this.shown(b.text, parseMode, chat.id);
        const threadId = typeof b.message_thread_id === 'number' ? b.message_thread_id : undefined;
        if (threadId !== undefined && !chat.is_forum) throw new ApiError(400, 'Bad Request: message thread not found');
        const replyTo = (b.reply_parameters as { message_id?: number } | undefined)?.message_id;
        const msg: SentMessage = {
          message_id: this.nextMessageId++,
          chat,
          text,
          history: [{ raw: b.text as string, ...(parseMode ? { parseMode } : {}), at: Date.now() }],
          ...(parseMode ? { parseMode } : {}),
          ...(b.reply_markup ? { replyMarkup: b.reply_markup as SentMessage['replyMarkup'] } : {}),
          ...(threadId !== undefined ? { threadId } : {}),
          ...(replyTo !== undefined ? { replyToMessageId: replyTo } : {}),
        };
        this.sent.push(msg);
        return this.asMessage(msg);
      }
      case 'editMessageText': {
        const chat = this.chat(b.chat_id);
        this.flood(chat.id, method);
        const msg = this.sent.find((m) => m.chat.id === chat.id && m.message_id === b.message_id && !m.deleted);
        if (!msg) throw new ApiError(400, 'Bad Request: message to edit not found');
        const parseMode = b.parse_mode as string | undefined;
        const text = this.shown(b.text, parseMode, chat.id);
        const markup = b.reply_markup as SentMessage['replyMarkup'] | undefined;
        if (text === msg.text && JSON.stringify(markup ?? null) === JSON.stringify(msg.replyMarkup ?? null))
          throw new ApiError(
            400,
            'Bad Request: message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message',
          );
        msg.text = text;
        msg.history.push({ raw: b.text as string, ...(parseMode ? { parseMode } : {}), at: Date.now() });
        if (parseMode) msg.parseMode = parseMode;
        else delete msg.parseMode;
        if (markup) msg.replyMarkup = markup;
        else delete msg.replyMarkup;
        return this.asMessage(msg);
      }
      case 'editMessageReplyMarkup': {
        const chat = this.chat(b.chat_id);
        const msg = this.sent.find((m) => m.chat.id === chat.id && m.message_id === b.message_id && !m.deleted);
        if (!msg) throw new ApiError(400, 'Bad Request: message to edit not found');
        const markup = b.reply_markup as SentMessage['replyMarkup'] | undefined;
        if (markup?.inline_keyboard.length) msg.replyMarkup = markup;
        else delete msg.replyMarkup;
        return this.asMessage(msg);
      }
      case 'deleteMessage': {
        const msg = this.sent.find((m) => m.chat.id === Number(b.chat_id) && m.message_id === b.message_id && !m.deleted);
        if (!msg) throw new ApiError(400, 'Bad Request: message to delete not found');
        msg.deleted = true;
        return true;
      }
      case 'sendChatAction':
        this.chat(b.chat_id);
        return true;
      case 'answerCallbackQuery':
        if (typeof b.callback_query_id !== 'string')
          throw new ApiError(400, 'Bad Request: query is too old and response timeout expired or query ID is invalid');
        return true;
      default:
        throw new ApiError(404, 'Not Found');
    }
  }

  private asMessage(m: SentMessage): Record<string, unknown> {
    return {
      message_id: m.message_id,
      from: BOT,
      chat: m.chat,
      date: Math.floor(Date.now() / 1000),
      text: m.text,
      ...(m.threadId !== undefined ? { message_thread_id: m.threadId, is_topic_message: true } : {}),
      ...(m.replyMarkup ? { reply_markup: m.replyMarkup } : {}),
    };
  }

  /** Long polling as Telegram does it: updates before `offset` are confirmed (gone); none pending: wait up to `timeout` s. */
  private async getUpdates(b: Record<string, unknown>, req: IncomingMessage): Promise<unknown> {
    if (this.webhook) throw new ApiError(409, "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first");
    const offset = typeof b.offset === 'number' ? b.offset : 0;
    if (offset > 0) this.pending = this.pending.filter((u) => u.update_id >= offset);
    const limit = typeof b.limit === 'number' ? Math.min(100, Math.max(1, b.limit)) : 100;
    const timeout = typeof b.timeout === 'number' ? b.timeout : 0;
    // A second poller ends the first one's request.
    this.activePoll?.(true);
    if (!this.pending.length && timeout > 0) {
      const conflict = await new Promise<boolean>((resolve) => {
        let done = false;
        const finish = (c: boolean) => {
          if (done) return;
          done = true;
          clearTimeout(timer);
          if (this.activePoll === finish) this.activePoll = undefined;
          resolve(c);
        };
        const timer = setTimeout(() => finish(false), timeout * 1000);
        this.activePoll = finish;
        this.waiters.push(() => finish(false));
        req.once('close', () => finish(false));
      });
      if (conflict) throw new ApiError(409, 'Conflict: terminated by other getUpdates request; make sure that only one bot instance is running');
    }
    const seen = new Set<number>();
    return this.pending
      .filter((u) => !seen.has(u.update_id) && seen.add(u.update_id))
      .sort((a, c) => a.update_id - c.update_id)
      .slice(0, limit);
  }

  /** POSTs pending updates to the webhook one by one (in order); a non-2xx is retried. */
  private async pushWebhook(): Promise<void> {
    if (this.pushing) return;
    this.pushing = true;
    try {
      while (this.webhook && this.pending.length) {
        const hook = this.webhook;
        const u = this.pending[0]!;
        let status = 0;
        try {
          const res = await fetch(hook.url, {
            method: 'POST',
            headers: { 'content-type': 'application/json', ...(hook.secret ? { 'x-telegram-bot-api-secret-token': hook.secret } : {}) },
            body: JSON.stringify(u),
          });
          status = res.status;
          await res.arrayBuffer();
        } catch {
          status = 0;
        }
        this.webhookPosts.push({ updateId: u.update_id, status });
        if (status >= 200 && status < 300) this.pending.shift();
        else await new Promise((r) => setTimeout(r, 200));
      }
    } finally {
      this.pushing = false;
    }
  }
}
