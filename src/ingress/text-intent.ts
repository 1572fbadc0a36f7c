import type { InboundMessage } from '../../kernel/envelope.js';
import { type ApprovalAnswer, parseApprovalAnswer } from '../approvals/parse.js';
import { type CommandName, parseCommand } from '../commands.js';
import { type OperatorCommand, parseOperatorCommand, parseRelayCommand, type RelayCommand } from '../handoffs/text.js';
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

/** "takeover", "handback [note]": an operator's command in a chat thread (src/ingress/steps/taken-over.ts). */
export function operatorCommandIn(msg: InboundMessage, ctx: IngressContext): OperatorCommand | null {
  if (!ctx.deps.handoffs || NO_THREAD_COMMANDS.has(msg.channel) || ctx.opts.commands === false) return null;
  const parsed = (ctx.parsed ??= {});
  if (parsed.operatorCommand === undefined) parsed.operatorCommand = parseOperatorCommand(msg.text);
  return parsed.operatorCommand;
}

/** Channels where operators have no thread with the user, only their own number: they relay with "#<ref> …" (README "Human takeover"). */
export const RELAY_CHANNELS = new Set(['sms', 'whatsapp']);

/** "#3f9a2c take", "#3f9a2c back: note", "#3f9a2c <reply>": from an operator number (src/ingress/steps/taken-over.ts). */
export function relayCommandIn(msg: InboundMessage, ctx: IngressContext): RelayCommand | null {
  if (!ctx.deps.handoffs || !RELAY_CHANNELS.has(msg.channel) || ctx.opts.commands === false) return null;
  const parsed = (ctx.parsed ??= {});
  if (parsed.relayCommand === undefined) parsed.relayCommand = parseRelayCommand(msg.text);
  return parsed.relayCommand;
}
