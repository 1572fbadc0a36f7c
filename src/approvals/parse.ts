import { CODE_ALPHABET, CODE_LENGTH } from '../../adapters/store/approvals.js';

export type AnswerDecision = 'approve' | 'deny' | 'always';

const WORDS: Record<string, AnswerDecision> = {
  yes: 'approve', y: 'approve', approve: 'approve', approved: 'approve', allow: 'approve', ok: 'approve', okay: 'approve', accept: 'approve',
  no: 'deny', n: 'deny', deny: 'deny', denied: 'deny', reject: 'deny', refuse: 'deny', decline: 'deny',
  always: 'always', 'always-allow': 'always',
};

const CODE_RE = new RegExp(`^[${CODE_ALPHABET}]{${CODE_LENGTH}}$`);

/**
 * Reads an approval answer from a chat message, tolerantly: case, spaces and
 * punctuation do not matter ("yes K7Q2P", "Approve: k7q2p!", "NO, K7Q2P.",
 * "always allow K7Q2P"). Only the first line counts (quoted replies follow it).
 * Returns null for anything else, so ordinary messages pass through.
 */
export function parseApprovalAnswer(text: string): { decision: AnswerDecision; code: string } | null {
  const first = text.trim().split(/\r?\n/)[0] ?? '';
  const words = first
    .toLowerCase()
    .replace(/always\s+allow/g, 'always')
    .split(/[^a-z0-9-]+/)
    .filter(Boolean);
  if (words.length !== 2) return null;
  const [w, c] = words as [string, string];
  const decision = Object.hasOwn(WORDS, w) ? WORDS[w] : undefined;
  const code = c.toUpperCase();
  if (!decision || !CODE_RE.test(code)) return null;
  return { decision, code };
}

/** How a channel without buttons asks: "Reply YES K7Q2P or NO K7Q2P". */
export function answerHint(code: string, alwaysPermitted: boolean): string {
  return `Reply YES ${code} to approve or NO ${code} to refuse${alwaysPermitted ? ` (ALWAYS ${code} to always allow this)` : ''}.`;
}
