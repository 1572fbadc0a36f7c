import type { TelegramConfig } from './config.js';

/** Why a message was not answered; each is counted. */
export type DropReason = 'too_old' | 'catch_up_cap' | 'access' | 'rate_limit' | 'conversation_full' | 'request_mismatch';

/** A message younger than this reached us live, whatever maxAgeMinutes says (a slow network is not downtime). */
const LIVE_MS = 30_000;

/**
 * What to do with a message that waited while the gateway was down (Telegram keeps pending
 * updates for 24 hours and hands them over in order): answer it, or not (too old, or past the
 * number answered after a start) with one offline reply per conversation, when configured.
 */
export class CatchUp {
  private waitingAnswered = 0;
  private readonly told = new Set<string>();
  readonly drops: Record<string, number> = {};

  constructor(
    private readonly cfg: TelegramConfig['catchUp'],
    /** When this listener started (ms): messages sent before it waited for us. */
    private readonly startedAt: number,
  ) {}

  /** The verdict for a message sent at sentAt (ms). */
  judge(sentAt: number, now = Date.now()): 'answer' | 'too_old' | 'catch_up_cap' {
    const age = now - sentAt;
    if (age > Math.max(this.cfg.maxAgeMinutes * 60_000, LIVE_MS)) return 'too_old';
    if (this.waited(sentAt)) {
      if (this.waitingAnswered >= this.cfg.maxMessages) return 'catch_up_cap';
      this.waitingAnswered++;
    }
    return 'answer';
  }

  /** A waiting message that turned out to be a repeat (handled before the restart): it takes no place under the cap. */
  refund(): void {
    if (this.waitingAnswered > 0) this.waitingAnswered--;
  }

  /** Whether a message sent at sentAt waited for this listener's start. */
  waited(sentAt: number): boolean {
    return sentAt < this.startedAt - 1_000;
  }

  count(reason: DropReason): void {
    this.drops[reason] = (this.drops[reason] ?? 0) + 1;
  }

  /** The offline reply for a conversation, the first time only (undefined: none is due, or none is configured). */
  offlineReplyFor(conversationKey: string): string | undefined {
    if (this.cfg.offlineReply === false || this.told.has(conversationKey)) return undefined;
    this.told.add(conversationKey);
    if (this.told.size > 10_000) this.told.clear();
    return this.cfg.offlineReply;
  }
}
