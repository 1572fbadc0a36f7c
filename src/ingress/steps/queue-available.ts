import { QueueUnavailableError } from '../../../adapters/errors/types.js';
import type { IngressStep } from '../context.js';

/**
 * Redis down: nothing is accepted, at once. Our Redis clients wait for a reconnect forever
 * (maxRetriesPerRequest null, for BullMQ), so a step that rate-limits, follows the turn or
 * enqueues through it would hang the platform's request. The queue's connection says it is not
 * ready: queue_unavailable (503 with Retry-After on the HTTP API; the platform delivers again).
 */
export const queueAvailable: IngressStep = {
  name: 'queue available',
  async run(_msg, ctx, next) {
    if (ctx.deps.queue.available?.() === false) throw new QueueUnavailableError(new Error('the queue connection is not ready'));
    return next();
  },
};
