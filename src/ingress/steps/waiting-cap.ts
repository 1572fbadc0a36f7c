import type { IngressStep } from '../context.js';

/** conversations.maxWaiting: beyond it the message is refused and nothing is written. */
export const waitingCap: IngressStep = {
  name: 'waiting cap',
  async run(msg, ctx, next) {
    const conv = ctx.deps.conversations;
    if (!conv) return next();
    const w = await ctx.deps.store.waitingCount(msg.conversationKey);
    ctx.before = w;
    if (w.waiting < conv.config.conversations.maxWaiting) return next();
    return {
      kind: 'refused',
      code: 'conversation_full',
      reply: `Too many messages are already waiting in this conversation (${w.waiting}); this one was dropped. Please wait for my answer.`,
    };
  },
};
