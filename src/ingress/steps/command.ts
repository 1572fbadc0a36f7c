import type { IngressStep } from '../context.js';
import { commandIn } from '../text-intent.js';

/** /new, /status, /stop, /mode …: answered by the gateway, not the agent. */
export const command: IngressStep = {
  name: 'command',
  async run(msg, ctx, next) {
    const cmd = commandIn(msg, ctx);
    if (!cmd) return next();
    return { kind: 'answered', reply: await ctx.deps.commands!.run(cmd, msg.conversationKey), ok: true, command: cmd };
  },
};
