import type { ApprovalInfo } from '../../kernel/turn-events.js';
import { describeCall, fullTextAt } from '../../moat/approval-display.js';
import { type AnswerDecision, answerHint } from '../approvals/parse.js';
import { approvalRequestText, REQUEST_ARGS_MAX } from '../approvals/render.js';

/**
 * An approval request as a platform-neutral card: what would run, why it needs
 * an answer, the answers offered, and a text fallback derived from the same
 * data. Each platform renders the card its own way (Block Kit buttons on
 * Slack, components on Discord, the fallback's codes on SMS and e-mail, an
 * inline prompt in the terminal chat, the fallback as content over the HTTP
 * API); the turn itself never says the request as text. Pure: no I/O.
 */
export interface ApprovalAction {
  decision: AnswerDecision;
  label: string;
}

export interface ApprovalCard {
  code: string;
  tool: string;
  tier: string;
  expiresAt: string;
  args: unknown;
  reasons: string[];
  title: string;
  /** The call, all of it made visible (escapes for invisible characters), long text collapsed around a marker. */
  call: string;
  /**
   * How to answer in words, where there are no buttons ("Reply YES K7Q4P to approve or NO K7Q4P to refuse…"),
   * or, when the requester may not answer it themselves, "An operator must approve this (code K7Q4P)."
   */
  hint: string;
  /** false: the person who asked may not answer it (an operator must); see ApprovalInfo.selfApprovable. */
  selfApprovable: boolean | undefined;
  /** Approve and Deny always; Always allow only when the call can become an exact rule. */
  actions: ApprovalAction[];
  /** The whole request as text ("Approval needed (caution) to run … — code K7Q4P. Reply YES K7Q4P …"). */
  fallback: string;
}

export function approvalCard(a: ApprovalInfo): ApprovalCard {
  const always = a.alwaysPermitted === true && a.tier !== 'dangerous';
  const actions: ApprovalAction[] = [
    { decision: 'approve', label: 'Approve' },
    { decision: 'deny', label: 'Deny' },
    ...(always ? [{ decision: 'always' as const, label: 'Always allow' }] : []),
  ];
  return {
    code: a.code,
    tool: a.tool,
    tier: a.tier,
    expiresAt: a.expiresAt,
    args: a.args,
    reasons: a.reasons,
    title: `Approval needed (${a.tier}) to run ${a.tool}`,
    call: describeCall(a.args, { max: REQUEST_ARGS_MAX, fullAt: fullTextAt(a.code) }),
    hint: answerHint(a.code, a.alwaysPermitted === true, a.reasons, a.selfApprovable),
    selfApprovable: a.selfApprovable,
    actions,
    fallback: approvalRequestText({
      code: a.code,
      tool: a.tool,
      tier: a.tier,
      args: a.args,
      reasons: a.reasons,
      rulePermitted: a.alwaysPermitted === true,
      ...(a.selfApprovable !== undefined ? { selfApprovable: a.selfApprovable } : {}),
    }),
  };
}

/** The text fallback of several requests, one per line (what a text-only platform shows). */
export function approvalsText(approvals: ApprovalInfo[]): string {
  return approvals.map((a) => approvalCard(a).fallback).join('\n');
}

/** The text of a reply that parked: what the model said, then the requests. */
export function withApprovalsText(text: string, approvals: ApprovalInfo[]): string {
  const ask = approvalsText(approvals);
  if (!ask) return text;
  return text.trim() ? `${text.trimEnd()}\n\n${ask}` : ask;
}
