import type { IngressContext, IngressStep } from '../context.js';
import { approvalAnswerIn } from '../text-intent.js';

/** Channels whose authenticated senders are API-key principals: an operator key's id starts "op:" (src/http/auth.ts). */
const KEY_CHANNELS = new Set(['http', 'mcp']);

/** "YES K7Q4P", "NO K7Q4P", "ALWAYS K7Q4P …": an approval answer, not a message for the agent. */
export const approvalAnswer: IngressStep = {
  name: 'approval answer',
  async run(msg, ctx, next) {
    const answer = approvalAnswerIn(msg, ctx);
    if (!answer) return next();
    const r = await ctx.deps.approvals!.answer(
      answer.code,
      answer.decision,
      { ...ctx.sender, operator: isOperator(msg.channel, ctx) },
      answer.scope ? { scope: answer.scope } : {},
    );
    return {
      kind: 'answered',
      reply: r.message,
      ok: r.ok,
      approval: { code: answer.code, ok: r.ok, ...(r.ok ? { status: r.approval.status } : { error: r.code }) },
    };
  },
};

function isOperator(channel: string, ctx: IngressContext): boolean {
  if (ctx.opts.operator === true) return true;
  if (ctx.opts.authenticated && KEY_CHANNELS.has(channel) && ctx.sender.id.startsWith('op:')) return true;
  return ctx.deps.approvals!.isOperator(ctx.sender);
}
