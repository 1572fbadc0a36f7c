import type { AnswerDecision } from '../../src/approvals/parse.js';
import type { ApprovalInfo } from '../../src/events.js';
import { escapeText, slackDate } from './format.js';

/** Block Kit for approval requests, and what the buttons mean. */

export const ACTION_IDS: Record<string, AnswerDecision> = { sb_approve: 'approve', sb_deny: 'deny', sb_always: 'always' };
export const ACTION_RE = /^sb_(approve|deny|always)$/;

type Block = Record<string, unknown>;

export function describeArgs(args: unknown): string {
  if (args && typeof args === 'object' && typeof (args as { command?: unknown }).command === 'string') return (args as { command: string }).command;
  let s: string;
  try {
    s = JSON.stringify(args);
  } catch {
    s = String(args);
  }
  return s.length > 600 ? `${s.slice(0, 600)}…` : s;
}

/**
 * The request: what would run, and Approve / Deny / Always allow buttons whose
 * value is the code. The approval event does not say whether a rule may be
 * made, so "Always allow" shows unless the tier is dangerous (the service
 * refuses it politely when it is not permitted).
 */
export function approvalBlocks(a: ApprovalInfo): { text: string; blocks: Block[] } {
  const button = (action_id: string, label: string, style?: 'primary' | 'danger') => ({
    type: 'button',
    action_id,
    text: { type: 'plain_text', text: label },
    value: a.code,
    ...(style ? { style } : {}),
  });
  const buttons = [button('sb_approve', 'Approve', 'primary'), button('sb_deny', 'Deny', 'danger')];
  if (a.tier !== 'dangerous') buttons.push(button('sb_always', 'Always allow'));
  const expires = new Date(a.expiresAt);
  const blocks: Block[] = [
    { type: 'section', block_id: 'sb_request', text: { type: 'mrkdwn', text: `:lock: *Approval needed* (${escapeText(a.tier)}) to run \`${escapeText(a.tool)}\`\n\`\`\`${escapeText(describeArgs(a.args))}\`\`\`` } },
  ];
  if (a.reasons.length) blocks.push({ type: 'context', block_id: 'sb_reasons', elements: [{ type: 'mrkdwn', text: escapeText(a.reasons.join(' · ')) }] });
  blocks.push({ type: 'actions', block_id: `sb_approval_${a.code}`, elements: buttons });
  blocks.push({
    type: 'context',
    block_id: 'sb_hint',
    elements: [{ type: 'mrkdwn', text: `Code *${a.code}* · expires ${slackDate(expires)} · or reply \`approve ${a.code}\` / \`deny ${a.code}\`` }],
  });
  return { text: `Approval needed (${a.tier}) to run ${a.tool}: code ${a.code}. Reply APPROVE ${a.code} or DENY ${a.code}.`, blocks };
}

/** The request as decided: the buttons and the hint give way to who decided, and when. */
export function decidedBlocks(original: Block[] | undefined, outcome: string, by: string | null, at: Date | null): Block[] {
  const kept = (original ?? []).filter((b) => b.type !== 'actions' && b.block_id !== 'sb_hint' && b.block_id !== 'sb_decision');
  const who = by ? ` by ${mentionOf(by)}` : '';
  const when = at ? ` ${slackDate(at)}` : '';
  kept.push({ type: 'context', block_id: 'sb_decision', elements: [{ type: 'mrkdwn', text: `${outcome}${who}${when}` }] });
  return kept;
}

/** How a decision reads: in the message (mrkdwn, with an emoji) and as plain notification text. */
export function outcomeLabel(status: string, always: boolean): { mrkdwn: string; plain: string } {
  switch (status) {
    case 'approved':
    case 'executed':
      return always
        ? { mrkdwn: ':white_check_mark: *Approved, and always allowed from now on*', plain: 'approved, and always allowed' }
        : { mrkdwn: ':white_check_mark: *Approved*', plain: 'approved' };
    case 'denied':
      return { mrkdwn: ':no_entry_sign: *Denied*', plain: 'denied' };
    case 'expired':
      return { mrkdwn: ':hourglass: *Expired* (not run)', plain: 'expired' };
    default:
      return { mrkdwn: `*${status}*`, plain: status };
  }
}

/** decided_by is "<channel>:<id>": a Slack user becomes a mention, anyone else stays text. */
function mentionOf(by: string): string {
  const m = /^slack:([UW][A-Z0-9]+)$/.exec(by);
  return m ? `<@${m[1]}>` : escapeText(by);
}
