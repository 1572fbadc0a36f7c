import { formatIdentity } from '../../../kernel/identity.js';
import type { IngressStep } from '../context.js';

/** The access policy (allowlists, pairing). Authenticated callers (API keys, HMAC) have passed their own. */
export const access: IngressStep = {
  name: 'access',
  async run(msg, ctx, next) {
    const policy = ctx.deps.access;
    if (!policy || ctx.opts.authenticated) return next();
    const v = await policy.check(ctx.sender);
    if (v.allowed) return next();
    ctx.deps.log.info({ channel: msg.channel, sender: formatIdentity(ctx.sender) }, 'message refused by the access policy');
    return { kind: 'refused', code: 'access', ...(v.reply ? { reply: v.reply } : {}) };
  },
};
