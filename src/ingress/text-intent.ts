import type { InboundMessage } from '../../kernel/envelope.js';
import { type ApprovalAnswer, parseApprovalAnswer } from '../approvals/parse.js';
import { type CommandName, parseCommand } from '../commands.js';
import type { IngressContext } from './context.js';

/**
 * What a message's text asks of the gateway itself: a command, an approval answer. Each is parsed
 * at most once per message, when a step first asks (the redelivery step, to decide whether to
 * claim the outcome, then the command or approval-answer step), and kept on the context. Null
 * when the text is none, or when the ingress (or this caller) does not take it.
 */
export function commandIn(msg: InboundMessage, ctx: IngressContext): CommandName | null {
  if (!ctx.deps.commands || ctx.opts.commands === false) return null;
  const parsed = (ctx.parsed ??= {});
  if (parsed.command === undefined) parsed.command = parseCommand(msg.text);
  return parsed.command;
}

export function approvalAnswerIn(msg: InboundMessage, ctx: IngressContext): ApprovalAnswer | null {
  if (!ctx.deps.approvals || ctx.opts.approvalAnswers === false) return null;
  const parsed = (ctx.parsed ??= {});
  if (parsed.answer === undefined) parsed.answer = parseApprovalAnswer(msg.text);
  return parsed.answer;
}
