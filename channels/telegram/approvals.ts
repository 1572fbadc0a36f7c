import type { Api } from 'grammy';
import type { CallbackQuery, InlineKeyboardMarkup } from 'grammy/types';
import type { Logger } from 'pino';
import type { AnswerDecision, ApprovalCard, ListenContext } from '../../src/channel/index.js';
import { displayName } from './inbound.js';

/**
 * Approval buttons as an inline keyboard: each button's callback_data carries the decision and the
 * code ("sb:approve:K7Q4P", well within Telegram's 64 bytes), so any process can answer a tap with
 * nothing but the approval service.
 */
const DATA = /^sb:(approve|deny|always):([A-Za-z0-9]{3,16})$/;

export function callbackData(decision: AnswerDecision, code: string): string {
  return `sb:${decision}:${code}`;
}

export function parseCallbackData(data: string | undefined): { decision: AnswerDecision; code: string } | null {
  const m = DATA.exec(data ?? '');
  return m ? { decision: m[1] as AnswerDecision, code: m[2]!.toUpperCase() } : null;
}

/** A request as markdown in the reply: what would run, that it waits, and how to answer in words. */
export function approvalText(c: ApprovalCard): string {
  const how = c.selfApprovable === false ? c.hint : `answer with the buttons, or in words: ${c.hint}`;
  return `🔒 **${c.title}** ${c.call}\n⏳ waiting for approval (code ${c.code}) · ${how}`;
}

/** One row per request: Approve, Refuse and (when a rule is permitted) Always allow. */
export function keyboardOf(cards: Array<Pick<ApprovalCard, 'code' | 'actions'>>): InlineKeyboardMarkup | undefined {
  if (!cards.length) return undefined;
  return {
    inline_keyboard: cards.map((c) => [
      { text: `✅ Approve ${c.code}`, callback_data: callbackData('approve', c.code) },
      { text: '❌ Refuse', callback_data: callbackData('deny', c.code) },
      ...(c.actions.some((a) => a.decision === 'always') ? [{ text: 'Always allow', callback_data: callbackData('always', c.code) }] : []),
    ]),
  };
}

/** The keyboard without the buttons of `code`. */
function without(markup: InlineKeyboardMarkup | undefined, code: string): InlineKeyboardMarkup {
  const rows = (markup?.inline_keyboard ?? []).filter(
    (row) => !row.some((b) => 'callback_data' in b && parseCallbackData(b.callback_data as string)?.code === code),
  );
  return { inline_keyboard: rows };
}

/**
 * A tap on an approval button: decided through the approval service, which accepts only operators
 * (approvals.operators.telegram user ids); anyone else gets an alert and nothing changes. A settled
 * request loses its buttons. Every tap is answered (answerCallbackQuery), or the client spins.
 */
export async function handleApprovalTap(q: CallbackQuery, deps: { api: Api; ctx: Pick<ListenContext, 'answerApproval'>; log: Logger }): Promise<void> {
  const parsed = parseCallbackData(q.data);
  if (!parsed) {
    await deps.api.answerCallbackQuery(q.id, { text: 'This button is not for me.' });
    return;
  }
  const result = await deps.ctx.answerApproval(parsed.code, parsed.decision, { channel: 'telegram', id: String(q.from.id) });
  deps.log.info(
    { code: parsed.code, decision: parsed.decision, user: q.from.id, ok: result.ok, ...(result.ok ? {} : { reason: result.code }) },
    'approval button',
  );
  const settled = result.ok || result.code === 'already_decided' || result.code === 'expired';
  if (!settled) {
    await deps.api.answerCallbackQuery(q.id, { text: result.message.slice(0, 200), show_alert: true });
    return;
  }
  const who = displayName(q.from);
  const text = result.ok
    ? `${result.approval.status === 'denied' ? '❌ Refused' : '✅ Approved'} ${parsed.code}${result.approval.always ? ' (always allowed from now on)' : ''} by ${who}`
    : result.message;
  await deps.api.answerCallbackQuery(q.id, { text: text.slice(0, 200) });
  const m = q.message;
  if (m) {
    const markup = 'reply_markup' in m ? m.reply_markup : undefined;
    await deps.api
      .editMessageReplyMarkup(m.chat.id, m.message_id, { reply_markup: without(markup, parsed.code) })
      .catch((err: unknown) => deps.log.debug({ err }, 'could not take the decided buttons off'));
  }
}
