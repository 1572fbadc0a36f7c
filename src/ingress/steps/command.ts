import { parseCommand } from '../../commands.js';
import type { IngressStep } from '../context.js';

/** /new, /status, /stop, /mode …: answered by the gateway, not the agent. */
export const command: IngressStep = {
  name: 'command',
  async run(msg, ctx, next) {
    const commands = ctx.deps.commands;
    const cmd = commands && ctx.opts.commands !== false ? parseCommand(msg.text) : null;
    if (!cmd) return next();
    return { kind: 'answered', reply: await commands!.run(cmd, msg.conversationKey), ok: true, command: cmd };
  },
};
