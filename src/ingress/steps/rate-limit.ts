import type { IngressStep } from '../context.js';

/**
 * Messages per sender and per conversation. Chat channels always; of the
 * authenticated callers only the HTTP API, and only with limits.applyToHttp.
 */
export const rateLimit: IngressStep = {
  name: 'rate limit',
  async run(msg, ctx, next) {
    const limits = ctx.deps.limits;
    if (!limits) return next();
    const apply = ctx.opts.rateLimit ?? (!ctx.opts.authenticated || (msg.channel === 'http' && ctx.deps.conversations?.config.limits.applyToHttp === true));
    if (!apply) return next();
    const l = await limits.check(ctx.sender, msg.conversationKey);
    if (l.allowed) return next();
    return { kind: 'refused', code: 'rate_limited', reply: l.message, retryAfterMs: l.retryAfterMs };
  },
};
