import { SwitchboardError } from '../../kernel/errors.js';

/**
 * A channel could not deliver a turn's reply. `retryable` says whether trying
 * again may help (the platform unreachable, a 5xx, rate limited) or not (the
 * platform refused: channel_not_found, not_in_channel...): the delivery queue
 * retries the first and dead-letters the second at once. `platformCode` is the
 * platform's own word for it, when it has one.
 */
export class ChannelDeliveryError extends SwitchboardError {
  readonly code: string;
  override readonly retryable: boolean;
  readonly platformCode: string | undefined;

  constructor(message: string, opts: { retryable: boolean; platformCode?: string; cause?: unknown }) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.retryable = opts.retryable;
    this.code = opts.retryable ? 'channel_delivery_failed' : 'channel_delivery_refused';
    this.platformCode = opts.platformCode;
  }
}
