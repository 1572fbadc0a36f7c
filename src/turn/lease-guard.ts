import { LeaseLostError } from '../../kernel/lease-lost.js';

export { LeaseLostError };

/**
 * What a drain knows of its lease, for everything the turn does to ask before
 * it acts (a model call, a tool call, an event leaving for the bus or the
 * channel). The lease is valid until `renewedAt + durationMs` of its last
 * successful renewal, counted from when that renewal was sent (the store's
 * deadline is a little later, so this one runs out first). A renewal answered
 * "not yours", or a clock past the deadline (the process was frozen: SIGSTOP,
 * a long GC pause, a suspended VM), loses the lease for good: the signal aborts
 * with a LeaseLostError and every check after that says no.
 */
export class LeaseGuard {
  private validUntil: number;
  private readonly controller = new AbortController();

  constructor(
    /** The drain's lease token. */
    readonly token: string,
    readonly durationMs: number,
    private readonly now: () => number = Date.now,
    /**
     * When the statement that took the lease was sent, for a lease taken before the drain began (a
     * turn opened at accept: src/turn-opening.ts); the deadline counts from then. Default: now (the
     * drain's own startTurn, sent later, only moves it on).
     */
    heldSince: number = now(),
  ) {
    this.validUntil = heldSince + durationMs;
  }

  /** Aborts (reason: LeaseLostError) when the lease is lost. */
  get signal(): AbortSignal {
    return this.controller.signal;
  }

  get lost(): boolean {
    return this.controller.signal.aborted;
  }

  /** Until when this drain may act (ms since the epoch). */
  get until(): number {
    return this.validUntil;
  }

  /** The store confirmed the lease for a statement (a renewal, a startTurn) sent at `sentAt`. */
  renewed(sentAt: number): void {
    if (!this.lost) this.validUntil = Math.max(this.validUntil, sentAt + this.durationMs);
  }

  /**
   * One renewal: `renewal` asks the store to extend the lease and answers
   * whether it is still this drain's. True moves the deadline; false loses the
   * lease; an error leaves the deadline where it was (the caller retries at its
   * next tick) and is thrown. Nothing is asked once the lease is lost.
   */
  async renew(renewal: () => Promise<boolean>): Promise<void> {
    if (!this.check()) return;
    const sentAt = this.now();
    if (await renewal()) this.renewed(sentAt);
    else this.lose('a renewal found another token');
  }

  /** The store said the lease is another drain's now. */
  lose(why: string): void {
    if (!this.lost) this.controller.abort(new LeaseLostError(`the conversation lease is no longer this drain's: ${why}`));
  }

  /**
   * True while the lease is this drain's. Past its deadline it is lost here
   * (and the signal aborts), before the caller does anything.
   */
  check(): boolean {
    if (!this.lost && this.now() > this.validUntil) this.lose(`not renewed for ${this.now() - this.validUntil + this.durationMs} ms`);
    return !this.lost;
  }
}
