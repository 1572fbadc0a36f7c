import { Api, GrammyError, HttpError } from 'grammy';
import type { Logger } from 'pino';
import type { TelegramSettings } from './config.js';

/** Calls that write into a chat: paced per chat, and what a 429 holds back. */
const CHAT_WRITES = new Set(['sendMessage', 'editMessageText', 'editMessageReplyMarkup', 'deleteMessage', 'sendChatAction']);
/** A 429 asking for longer than this is not waited out inside the call: the caller's retry takes it. */
const MAX_WAIT_S = 60;
const MAX_429_RETRIES = 3;

/**
 * Per-chat pacing for one process: writes to one chat are spaced by gapMs (Telegram allows about
 * one message a second per chat, twenty a minute in groups), and a 429's retry_after holds every
 * write to that chat until it has passed. Chat actions ("typing…") are not paced, only held.
 */
export class ChatPacer {
  private readonly next = new Map<string, number>();

  constructor(private readonly gapMs: number) {}

  /** Waits for the chat's turn and takes it. */
  async turn(chat: string, paced: boolean): Promise<void> {
    for (;;) {
      const at = this.next.get(chat) ?? 0;
      const wait = at - Date.now();
      if (wait <= 0) break;
      await new Promise((r) => setTimeout(r, wait));
    }
    if (paced) this.next.set(chat, Date.now() + this.gapMs);
    if (this.next.size > 10_000) for (const [k, v] of this.next) if (v < Date.now()) this.next.delete(k);
  }

  holdFor(chat: string, ms: number): void {
    this.next.set(chat, Math.max(this.next.get(chat) ?? 0, Date.now() + ms));
  }
}

/**
 * grammY's Bot API client at cfg.apiRoot, with a transformer that paces writes per chat and waits
 * out a 429's parameters.retry_after before trying again (up to three times), so no call comes
 * back before Telegram said it may.
 */
export function createApi(
  cfg: Pick<TelegramSettings, 'token' | 'apiRoot' | 'editIntervalMs' | 'pollTimeoutSeconds'>,
  log: Logger,
  pacer = new ChatPacer(cfg.editIntervalMs),
): Api {
  const api = new Api(cfg.token, { apiRoot: cfg.apiRoot, timeoutSeconds: cfg.pollTimeoutSeconds + 30 });
  api.config.use(async (prev, method, payload, signal) => {
    const chat = CHAT_WRITES.has(method) ? String((payload as { chat_id?: unknown }).chat_id ?? '') : '';
    for (let attempt = 0; ; attempt++) {
      if (chat) await pacer.turn(chat, method !== 'sendChatAction');
      const res = await prev(method, payload, signal);
      const retryAfter = !res.ok && res.error_code === 429 ? res.parameters?.retry_after : undefined;
      if (retryAfter === undefined || retryAfter > MAX_WAIT_S || attempt >= MAX_429_RETRIES) return res;
      log.warn({ method, chat, retryAfter }, 'telegram: rate limited; waiting as told');
      if (chat) pacer.holdFor(chat, retryAfter * 1000);
      else await new Promise((r) => setTimeout(r, retryAfter * 1000));
    }
  });
  return api;
}

export function isParseError(err: unknown): boolean {
  return err instanceof GrammyError && err.error_code === 400 && /can't parse entities|can't find end|unsupported start tag/i.test(err.description);
}

export function isNotModified(err: unknown): boolean {
  return err instanceof GrammyError && err.error_code === 400 && /message is not modified/i.test(err.description);
}

export function isGone(err: unknown): boolean {
  return err instanceof GrammyError && err.error_code === 400 && /message to (edit|delete) not found|message can't be (edited|deleted)/i.test(err.description);
}

/** Retrying cannot help: the chat is gone, the bot was blocked or removed, the request is malformed. */
export function isPermanent(err: unknown): boolean {
  return err instanceof GrammyError && err.error_code >= 400 && err.error_code < 500 && err.error_code !== 429;
}

export function errorCode(err: unknown): string {
  if (err instanceof GrammyError) return `${err.error_code}: ${err.description}`;
  if (err instanceof HttpError) return `network: ${err.message}`;
  return (err as Error)?.message ?? String(err);
}
