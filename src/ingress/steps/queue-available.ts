import { QueueUnavailableError } from '../../../adapters/errors/types.js';
import type { IngressStep } from '../context.js';

/** How long a reconnecting queue connection may take before the message is refused. */
const READY_GRACE_MS = 1_000;

/**
 * Redis down: nothing is accepted, within a second. Our Redis clients wait for a reconnect forever
 * (maxRetriesPerRequest null, for BullMQ), so a step that rate-limits, follows the turn or
 * enqueues through it would hang the platform's request. The queue's connection is not ready
 * within a second (a dropped connection is back by then): queue_unavailable (503 with Retry-After on the HTTP API; the platform delivers again).
 */
export const queueAvailable: IngressStep = {
  name: 'queue available',
  async run(_msg, ctx, next) {
    if (ctx.deps.queue.available && !(await ctx.deps.queue.available(READY_GRACE_MS)))
      throw new QueueUnavailableError(new Error('the queue connection is not ready'));
    return next();
  },
};
