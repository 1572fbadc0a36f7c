/** Token buckets: `capacity` tokens, refilled continuously at `perSecond`. */
export interface RateLimiter {
  /** Takes one token from the bucket `key`; when empty, says how long until one is back. */
  take(key: string, capacity: number, perSecond: number): Promise<{ allowed: boolean; retryAfterMs: number }>;
  close(): Promise<void>;
}

/** One capped scope (an API key, a sender): at most `cap` holders at once. */
import type { SlotScope } from '../../kernel/jobs.js';

export type { SlotScope };

/**
 * Counting semaphores whose holders expire: how many turns of one API key or
 * one sender run at once, shared by every worker process. A holder renews its
 * slots while its turn runs; a holder that dies loses them when they expire.
 * A caller that is refused may leave its name (a conversation) on the full
 * scope; a release that leaves room hands the oldest waiting names back to be
 * woken, as many as there are free slots.
 */
export interface TurnSlots {
  /**
   * One slot in every scope for `holder`, or none at all. A holder already in a
   * scope keeps its slot there. Refused: the first full scope, and `waiter`
   * (when given) waits on it.
   */
  acquire(scopes: SlotScope[], holder: string, ttlMs: number, waiter?: string): Promise<{ acquired: true } | { acquired: false; full: string }>;
  /** Extends the holder's slots by ttlMs from now (and takes them again if they were lost). */
  renew(scopes: SlotScope[], holder: string, ttlMs: number): Promise<void>;
  /** Gives the holder's slots back; returns the waiters to wake, each once. */
  release(scopes: SlotScope[], holder: string): Promise<string[]>;
  /** Live holders of one scope. */
  holders(key: string): Promise<number>;
  close(): Promise<void>;
}
