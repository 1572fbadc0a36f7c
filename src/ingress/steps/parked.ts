import type { ApprovalRecord } from '../../../adapters/store/ports/approvals.js';
import type { IngressStep } from '../context.js';

/**
 * A message to a conversation whose turn is parked waits in the inbox until the
 * approvals are answered; the sender is told so at once (the accepted outcome's
 * notice) instead of hearing nothing for minutes. Nothing is refused here.
 */
export const parked: IngressStep = {
  name: 'parked',
  async run(msg, ctx, next) {
    const approvals = ctx.deps.approvals;
    // A conversation minted for this message has no turn, parked or not.
    if (!approvals || ctx.opts.newConversation) return next();
    const waiting = await approvals.pendingForConversation(msg.conversationKey);
    if (waiting.length) ctx.notice = waitingNotice(waiting, (a) => approvals.requesterMayAnswer(a));
    return next();
  },
};

/** "Waiting for an operator to approve K7Q4P (tool shell_exec); your message will be answered after that." */
export function waitingNotice(waiting: ApprovalRecord[], requesterMay: (a: ApprovalRecord) => boolean): string {
  const calls = waiting.map((a) => `${a.code} (tool ${a.tool})`);
  const list = calls.length > 1 ? `${calls.slice(0, -1).join(', ')} and ${calls[calls.length - 1]}` : calls[0];
  // Someone who may answer their own request is waited for too, not only an operator.
  const who = waiting.every((a) => !requesterMay(a)) ? 'an operator' : 'an answer';
  const verb = who === 'an operator' ? 'to approve' : 'to';
  return `Waiting for ${who} ${verb} ${list}; your message will be answered after that.`;
}
