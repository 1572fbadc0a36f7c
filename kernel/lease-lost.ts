import { SwitchboardError } from './errors.js';

/**
 * A write of a drain that no longer holds its conversation's lease (it expired,
 * another drain took it): the write did not happen, and the turn must stop at
 * once. Retryable: the job is retried, and whoever holds the lease carries on.
 */
export class LeaseLostError extends SwitchboardError {
  readonly code = 'lease_lost';
  override readonly retryable = true;
  constructor(conversationId: string, what: string) {
    super(`the lease on conversation ${conversationId} is no longer this drain's: ${what} was not written`);
    this.name = 'LeaseLostError';
  }
}
