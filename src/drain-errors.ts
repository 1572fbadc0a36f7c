import { SwitchboardError } from '../kernel/errors.js';

/**
 * The errors a drain job throws on purpose (src/worker.ts). Both are retryable: the queue runs the
 * job again with backoff. What a drain throws without meaning to (a store error) is retried too
 * (adapters/queue/retry-policy.ts); a stored reply target its channel rejects (ReplyToError) is not.
 */

/** Another drain held the conversation's lease for longer than a lease lasts: try again later. */
export class ConversationBusyError extends SwitchboardError {
  readonly code = 'conversation_busy';
  override readonly retryable = true;
  constructor(readonly conversationId: string) {
    super(`conversation ${conversationId} is busy elsewhere`);
  }
}

/** The turn statement read the inbox twice from before the previous holder closed its turn: read again later. */
export class StaleInboxError extends SwitchboardError {
  readonly code = 'inbox_stale';
  override readonly retryable = true;
  constructor(readonly turnId: string) {
    super(`inbox rows of closed turn ${turnId} are unconsumed`);
  }
}
