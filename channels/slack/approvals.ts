import type { ApprovalInfo } from '../../kernel/turn-events.js';
import { type AnswerDecision, approvalCard, callParts, fullTextAt, showText } from '../../src/channel/index.js';
import { escapeText, slackDate } from './format.js';

/** Block Kit for approval requests, and what the buttons mean. */

export const ACTION_IDS: Record<string, AnswerDecision> = { sb_approve: 'approve', sb_deny: 'deny', sb_always: 'always' };
export const ACTION_RE = /^sb_(approve|deny|always)$/;

type Block = Record<string, unknown>;

/** The call as shown in the request: all of it, visible, long text collapsed around a marker (never cut silently). */
export function describeArgs(args: unknown, code?: string): string {
  const p = callParts(args);
  const opts = { max: 600, ...(code ? { fullAt: fullTextAt(code) } : {}) };
  if (p.command === undefined) return showText(p.rest ?? '', opts);
  return p.rest ? `${showText(p.command, opts)}\n(with ${showText(p.rest, { ...opts, max: 200 })})` : showText(p.command, opts);
}

/**
 * The approval card in Block Kit: what would run, and a button per answer the
 * card offers (Approve, Deny, and "Always allow" only when the call can become
 * an exact rule), each with the code as its value.
 */
export function approvalBlocks(info: ApprovalInfo): { text: string; blocks: Block[] } {
  const a = approvalCard(info);
  const button = (action_id: string, label: string, style?: 'primary' | 'danger') => ({
    type: 'button',
    action_id,
    text: { type: 'plain_text', text: label },
    value: a.code,
    ...(style ? { style } : {}),
  });
  const styles: Record<string, 'primary' | 'danger' | undefined> = { approve: 'primary', deny: 'danger' };
  const buttons = a.actions.map((x) => button(`sb_${x.decision}`, x.label, styles[x.decision]));
  const expires = new Date(a.expiresAt);
  const blocks: Block[] = [
    {
      type: 'section',
      block_id: 'sb_request',
      text: {
        type: 'mrkdwn',
        text: `:lock: *Approval needed* (${escapeText(a.tier)}) to run \`${escapeText(a.tool)}\`\n\`\`\`${escapeText(describeArgs(a.args, a.code))}\`\`\``,
      },
    },
  ];
  if (a.reasons.length)
    blocks.push({
      type: 'context',
      block_id: 'sb_reasons',
      elements: [{ type: 'mrkdwn', text: escapeText(a.reasons.map((r) => showText(r, { max: 300 })).join(' · ')) }],
    });
  blocks.push({ type: 'actions', block_id: `sb_approval_${a.code}`, elements: buttons });
  blocks.push({
    type: 'context',
    block_id: 'sb_hint',
    elements: [
      {
        type: 'mrkdwn',
        text:
          a.selfApprovable === false
            ? `Code *${a.code}* · expires ${slackDate(expires)} · ${escapeText(a.hint)}`
            : `Code *${a.code}* · expires ${slackDate(expires)} · or reply \`approve ${a.code}\` / \`deny ${a.code}\``,
      },
    ],
  });
  const answer = a.selfApprovable === false ? a.hint : `Reply APPROVE ${a.code} or DENY ${a.code}.`;
  return { text: `Approval needed (${a.tier}) to run ${a.tool}: code ${a.code}. ${answer}`, blocks };
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
  // `slack:<team>:<user>` (kernel/identity.ts); `slack:<user>` from before the team was part of it.
  const m = /^slack:(?:[^:]+:)?([UW][A-Z0-9]+)$/.exec(by);
  return m ? `<@${m[1]}>` : escapeText(by);
}
