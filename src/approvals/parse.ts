import { CODE_ALPHABET, CODE_LENGTH } from '../../kernel/approval-code.js';
import type { RuleScope } from '../../moat/approval-engine.js';
import { NO_RULE_PREFIX } from '../../moat/approval-names.js';

export type AnswerDecision = 'approve' | 'deny' | 'always';

const WORDS: Record<string, AnswerDecision> = {
  yes: 'approve',
  y: 'approve',
  approve: 'approve',
  approved: 'approve',
  allow: 'approve',
  ok: 'approve',
  okay: 'approve',
  accept: 'approve',
  no: 'deny',
  n: 'deny',
  deny: 'deny',
  denied: 'deny',
  reject: 'deny',
  refuse: 'deny',
  decline: 'deny',
  always: 'always',
  'always-allow': 'always',
};

/** A message that answers an approval request: the decision, the code, and an "always" rule's scope. */
export interface ApprovalAnswer {
  decision: AnswerDecision;
  code: string;
  scope?: RuleScope;
}

/** "ALWAYS K7Q2P sender" / "ALWAYS K7Q2P global": how far a rule reaches (default: the conversation). */
const SCOPES: Record<string, RuleScope> = { conversation: 'conversation', here: 'conversation', sender: 'sender', global: 'global' };

const CODE_RE = new RegExp(`^[${CODE_ALPHABET}]{${CODE_LENGTH}}$`);

/**
 * Reads an approval answer from a chat message, tolerantly: case, spaces and
 * punctuation do not matter ("yes K7Q2P", "Approve: k7q2p!", "NO, K7Q2P.",
 * "always allow K7Q2P"). "Always" may name its scope after the code
 * ("ALWAYS K7Q2P sender", "ALWAYS K7Q2P global"); without one the rule holds in
 * the conversation only. Only the first line counts (quoted replies follow it).
 * Returns null for anything else, so ordinary messages pass through.
 */
export function parseApprovalAnswer(text: string): ApprovalAnswer | null {
  const first = text.trim().split(/\r?\n/)[0] ?? '';
  const words = first
    .toLowerCase()
    .replace(/always\s+allow/g, 'always')
    .split(/[^a-z0-9-]+/)
    .filter(Boolean);
  if (words.length !== 2 && words.length !== 3) return null;
  const [w, c, s] = words as [string, string, string | undefined];
  const decision = Object.hasOwn(WORDS, w) ? WORDS[w] : undefined;
  const code = c.toUpperCase();
  if (!decision || !CODE_RE.test(code)) return null;
  if (s === undefined) return { decision, code };
  const scope = decision === 'always' && Object.hasOwn(SCOPES, s) ? SCOPES[s] : undefined;
  return scope ? { decision, code, scope } : null;
}

/** What a requester who may not answer their own request is told instead of how to answer. */
export function operatorMustApprove(code: string): string {
  return `An operator must approve this (code ${code}).`;
}

/**
 * How a channel without buttons asks: "Reply YES K7Q2P or NO K7Q2P", with ALWAYS
 * only when the call can become an exact rule; otherwise it says why not.
 * selfApprovable false (the requester may not answer it): "An operator must approve this (code K7Q2P)."
 */
export function answerHint(code: string, alwaysPermitted: boolean, reasons: string[] = [], selfApprovable?: boolean): string {
  if (selfApprovable === false) return operatorMustApprove(code);
  const base = `Reply YES ${code} to approve or NO ${code} to refuse`;
  if (alwaysPermitted)
    return `${base} (ALWAYS ${code} allows exactly this call from now on in this conversation; ALWAYS ${code} sender or ALWAYS ${code} global to widen it).`;
  const why = reasons.find((r) => r.startsWith(NO_RULE_PREFIX));
  return `${base}. "Always allow" is not offered for this call${why ? `: ${why.slice(NO_RULE_PREFIX.length)}` : ''}.`;
}
