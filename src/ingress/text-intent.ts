import type { InboundMessage } from '../../kernel/envelope.js';
import { type ApprovalAnswer, parseApprovalAnswer } from '../approvals/parse.js';
import { type CommandName, parseCommand } from '../commands.js';
import { type OperatorCommand, parseOperatorCommand, parseRelay } from '../handoffs/text.js';
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

/** Channels where "takeover" / "handback" are typed in a chat thread (not the APIs: operators use /v1/conversations/{id}/takeover). */
const NO_THREAD_COMMANDS = new Set(['http', 'mcp', 'webhook']);

/** Channels with operator numbers: an operator's `#<conversation> <text>` is about another conversation (a relay). */
const RELAY_CHANNELS = new Set(['sms', 'whatsapp']);

/**
 * "takeover", "handback [note]": an operator's command in a chat thread; on SMS and WhatsApp also a
 * configured operator's `#<conversation> …` relay (anyone else's `#…` is plain text for the agent).
 * See src/ingress/steps/taken-over.ts.
 */
export function operatorCommandIn(msg: InboundMessage, ctx: IngressContext): OperatorCommand | null {
  if (!ctx.deps.handoffs || NO_THREAD_COMMANDS.has(msg.channel) || ctx.opts.commands === false) return null;
  const parsed = (ctx.parsed ??= {});
  if (parsed.operatorCommand === undefined) {
    const relay = RELAY_CHANNELS.has(msg.channel) && ctx.deps.approvals?.isOperator(ctx.sender) ? parseRelay(msg.text) : null;
    parsed.operatorCommand = relay ?? parseOperatorCommand(msg.text);
  }
  return parsed.operatorCommand;
}
