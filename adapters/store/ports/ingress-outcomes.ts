/** What a look-up of an event found: nobody had it (now it is yours), its recorded outcome, or another delivery handling it. */
export type OutcomeClaim<T> = { state: 'claimed' } | { state: 'recorded'; outcome: T } | { state: 'pending' };

/**
 * The outcomes of inbound events by (channel, external id), for replaying a
 * redelivered event. Claim first, then complete or release: of two concurrent
 * deliveries exactly one claims. Every method may throw (the database is down).
 */
export interface IngressOutcomeRepository<T = unknown> {
  /**
   * Claims the event, or reports what is known of it. A pending claim older than
   * `staleAfterMs` (its process died) and an expired outcome are taken over.
   */
  claim(channel: string, externalId: string, staleAfterMs: number): Promise<OutcomeClaim<T>>;
  /** Records the outcome of a claimed event; `ttlMs` makes it replayed only for that long. */
  complete(channel: string, externalId: string, outcome: T, ttlMs?: number): Promise<void>;
  /** Gives up a claim (handling failed, or the outcome must not be replayed): the next delivery is handled anew. */
  release(channel: string, externalId: string): Promise<void>;
  /** Deletes rows claimed more than `olderThanMs` ago; returns how many. */
  prune(olderThanMs: number): Promise<number>;
}
