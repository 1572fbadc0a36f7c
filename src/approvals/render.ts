import type { ApprovalRecord } from '../../adapters/store/ports/approvals.js';
import type { ApprovalInfo } from '../../kernel/turn-events.js';
import { describeCall, fullTextAt, visibleCall } from '../../moat/approval-display.js';
import { answerHint } from './parse.js';

/** What a request needs to be shown: a stored approval row or the event form of it. */
type Shown = Pick<ApprovalRecord, 'code' | 'tool' | 'tier' | 'args' | 'reasons' | 'rulePermitted'> & {
  conversationId?: string;
  /** Shown to the requester: false when they may not answer it themselves (see src/approvals/rights.ts). */
  selfApprovable?: boolean;
};

/** How many characters of a call's arguments a request message shows before collapsing the rest. */
export const REQUEST_ARGS_MAX = 500;

/**
 * The request as text, for every channel that shows text (the reply in the
 * conversation, e-mail, SMS, the operator channel's message): the whole call,
 * made visible (control and invisible characters as escapes, runs of spaces as
 * `␠×N`), long text collapsed around a marker that says where it is shown in
 * full, and ALWAYS offered only when the call can become an exact rule. To a
 * requester who may not answer it (selfApprovable false) it says that an
 * operator must approve it instead of how to answer.
 */
export function approvalRequestText(a: Shown, opts: { conversation?: boolean } = {}): string {
  const where = opts.conversation && a.conversationId ? ` in conversation ${a.conversationId}` : '';
  const call = describeCall(a.args, { max: REQUEST_ARGS_MAX, fullAt: fullTextAt(a.code) });
  if (a.selfApprovable === false)
    return `Approval needed (${a.tier}) to run ${a.tool} ${call}${where}. ${answerHint(a.code, a.rulePermitted, a.reasons, false)}`;
  return `Approval needed (${a.tier}) to run ${a.tool} ${call}${where} — code ${a.code}. ${answerHint(a.code, a.rulePermitted, a.reasons)}`;
}

/** The event form of a request (what channels with buttons read). */
export function approvalInfo(a: ApprovalRecord): ApprovalInfo {
  return {
    code: a.code,
    tool: a.tool,
    tier: a.tier,
    expiresAt: new Date(a.expiresAt).toISOString(),
    args: a.args,
    reasons: a.reasons,
    alwaysPermitted: a.rulePermitted,
  };
}

/** The call's arguments in full, visible (for `approvals show`, the console and the HTTP API). */
export { visibleCall };
