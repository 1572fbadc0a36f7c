import { SwitchboardError } from './errors.js';

/**
 * A drain's lease on its conversation is gone (another drain may be running the
 * same turn), or a write was fenced out because a newer attempt of the turn took over.
 */
export class LeaseLostError extends SwitchboardError {
  readonly code = 'lease_lost';
  // The turn is not lost: the lease's new holder (or the next drain) runs it again.
  override readonly retryable = true;
}
