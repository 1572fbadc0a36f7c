import type { IngressStep } from '../context.js';

/** conversations.maxWaiting: beyond it the message is refused and nothing is written. */
export const waitingCap: IngressStep = {
  name: 'waiting cap',
  async run(msg, ctx, next) {
    const conv = ctx.deps.conversations;
    if (!conv) return next();
    // A conversation minted for this message has nothing waiting and no turn running.
    const w = ctx.opts.newConversation ? { waiting: 0, running: false, mode: null } : await ctx.deps.store.waitingCount(msg.conversationKey);
    ctx.before = w;
    if (w.waiting < conv.config.conversations.maxWaiting) return next();
    return {
      kind: 'refused',
      code: 'conversation_full',
      reply: `Too many messages are already waiting in this conversation (${w.waiting}); this one was dropped. Please wait for my answer.`,
    };
  },
};
