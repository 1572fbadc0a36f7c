import { queueModeFor } from '../../../kernel/queue-modes.js';
import { CONTROL_TOPIC, type ControlEvent } from '../../commands.js';
import type { IngressStep } from '../context.js';

/** Queue mode interrupt: a new message stops the running turn; the next turn answers everything waiting. */
export const interrupt: IngressStep = {
  name: 'interrupt',
  async run(msg, ctx, next) {
    const conv = ctx.deps.conversations;
    const before = ctx.before;
    if (
      conv &&
      before?.running &&
      ctx.accepted &&
      !ctx.accepted.duplicate &&
      queueModeFor(conv.config.conversations, msg.channel, before.mode) === 'interrupt'
    ) {
      const stop: ControlEvent = { type: 'stop', conversationKey: msg.conversationKey, reason: 'interrupted by a new message' };
      // The message is durable already: a lost stop only means the running turn finishes first.
      await conv.bus
        .publish(CONTROL_TOPIC, stop)
        .catch((err: unknown) =>
          ctx.deps.log.warn({ err, conversation: msg.conversationKey }, 'could not publish the interrupt; the running turn finishes first'),
        );
    }
    return next();
  },
};
