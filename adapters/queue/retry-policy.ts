import { SwitchboardError } from '../../kernel/errors.js';

/**
 * Whether a job whose handler threw may be run again. Only a SwitchboardError that says
 * retrying repeats the failure (retryable false: a bad stored value, a refusal) is permanent;
 * anything else (a plain Error, a driver's or the network's) may be transient and is retried.
 */
export function isPermanentFailure(err: unknown): err is SwitchboardError {
  return err instanceof SwitchboardError && !err.retryable;
}
