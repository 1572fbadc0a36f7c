import { DEFAULT_OFFLINE_REPLY, type TelegramConfig } from './config.js';

/** Why a message was not answered; each is counted (the reasons of switchboard_messages_dropped_total). */
export type DropReason = 'catch_up_too_old' | 'catch_up_too_many' | 'access' | 'rate_limit' | 'conversation_full' | 'request_mismatch';
export type CatchUpSkip = 'catch_up_too_old' | 'catch_up_too_many';

/** A message younger than this reached us live, whatever maxAgeMinutes says (a slow network is not downtime). */
const LIVE_MS = 30_000;

/**
 * What to do with a message that waited while the gateway was down (Telegram keeps pending
 * updates for 24 hours and hands them over in order, so this decides one message at a time):
 * answer it, or not (too old; past maxMessages answered in its conversation since the start;
 * catch-up disabled), with one offline reply per conversation when configured.
 */
export class CatchUp {
  private readonly answered = new Map<string, number>();
  private readonly told = new Set<string>();
  readonly drops: Record<string, number> = {};

  constructor(
    private readonly cfg: TelegramConfig['catchUp'],
    /** When this listener started (ms): messages sent before it waited for us. */
    private readonly startedAt: number,
  ) {}

  /** Whether a message sent at sentAt waited for this listener's start. */
  waited(sentAt: number): boolean {
    return sentAt < this.startedAt - 1_000;
  }

  /** The verdict for a message of a conversation sent at sentAt (ms). */
  judge(conversation: string, sentAt: number, now = Date.now()): 'answer' | CatchUpSkip {
    const age = now - sentAt;
    if (age > Math.max(this.cfg.maxAgeMinutes * 60_000, LIVE_MS)) return 'catch_up_too_old';
    if (!this.waited(sentAt)) return 'answer';
    if (!this.cfg.enabled) return 'catch_up_too_old';
    const n = this.answered.get(conversation) ?? 0;
    if (n >= this.cfg.maxMessages) return 'catch_up_too_many';
    this.answered.set(conversation, n + 1);
    return 'answer';
  }

  /** A waiting message that turned out to be a repeat (handled before the restart): it takes no place under the cap. */
  refund(conversation: string): void {
    const n = this.answered.get(conversation) ?? 0;
    if (n > 0) this.answered.set(conversation, n - 1);
  }

  count(reason: DropReason): void {
    this.drops[reason] = (this.drops[reason] ?? 0) + 1;
  }

  /** The offline reply for a conversation, the first time only (undefined: none is due, or none is configured). */
  offlineReplyFor(conversation: string): string | undefined {
    const text = this.cfg.offlineReply === true ? DEFAULT_OFFLINE_REPLY : this.cfg.offlineReply;
    if (text === false || this.told.has(conversation)) return undefined;
    this.told.add(conversation);
    if (this.told.size > 10_000) this.told.clear();
    return text;
  }
}
