import type { Logger } from 'pino';
import type { IngressOutcomeRepository } from '../../adapters/store/ports/index.js';

/** How long an outcome is kept for replay: far longer than any platform retries (Slack: minutes, Twilio: hours). */
export const OUTCOME_RETENTION_MS = 7 * 24 * 3_600_000;
const PRUNE_EVERY_MS = 3_600_000;

/** Prunes old outcomes from the write path, at most once an hour per process, off the message's way. */
export class OutcomeRetention {
  private last = 0;

  constructor(
    private readonly outcomes: IngressOutcomeRepository<unknown>,
    private readonly log: Logger,
  ) {}

  maybePrune(now = Date.now()): void {
    if (now - this.last < PRUNE_EVERY_MS) return;
    this.last = now;
    this.outcomes.prune(OUTCOME_RETENTION_MS).then(
      (n) => n && this.log.debug({ pruned: n }, 'old ingress outcomes pruned'),
      (err: unknown) => this.log.warn({ err }, 'could not prune old ingress outcomes'),
    );
  }
}
