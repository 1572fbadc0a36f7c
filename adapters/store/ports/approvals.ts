import type { AllowRule } from '../../../kernel/allow-rule.js';

export type ApprovalStatus = 'pending' | 'approved' | 'denied' | 'expired' | 'executed';

/** The approval of one parked tool call. */
export interface ApprovalRecord {
  id: string;
  code: string;
  conversationId: string;
  turnId: string;
  toolCallId: string;
  tool: string;
  args: unknown;
  argsHash: string;
  pattern: string;
  tier: string;
  reasons: string[];
  rulePermitted: boolean;
  /** Who asked: the turn's sender as a canonical identity (kernel/identity.ts); only that whole identity answers as the requester. */
  requester: string | null;
  channel: string;
  status: ApprovalStatus;
  always: boolean;
  decidedBy: string | null;
  decidedVia: string | null;
  decidedAt: Date | null;
  expiresAt: Date;
  createdAt: Date;
  /** The W3C traceparent of the turn that parked on it (migration 029), when traces are on: its wait span's parent. */
  traceparent?: string;
}

export interface NewApproval {
  conversationId: string;
  turnId: string;
  toolCallId: string;
  tool: string;
  args: unknown;
  argsHash: string;
  pattern: string;
  tier: string;
  reasons: string[];
  rulePermitted: boolean;
  requester: string | null;
  channel: string;
  expiresAt: Date;
  /** The parked turn's span (src/telemetry/tracer.ts traceparentOf), when traces are on. */
  traceparent?: string;
}

export type RuleScope = 'conversation' | 'sender' | 'global';

/** An operator "always allow" rule: one exact call, in a scope (see moat/approval-engine.ts). */
export interface AllowRuleRecord {
  id: number;
  tool: string;
  pattern: string;
  scope: RuleScope;
  /** The conversation id, the sender's canonical identity (kernel/identity.ts), or '' for global. */
  scopeKey: string;
  variable: number[];
  kind: 'command' | 'args' | null;
  createdBy: string;
  createdAt: Date;
}

export interface NewRule {
  tool: string;
  pattern: string;
  scope: RuleScope;
  scopeKey: string;
  variable?: number[];
  kind: 'command' | 'args';
  by: string;
}

export type DecideOutcome =
  | { ok: true; approval: ApprovalRecord }
  | { ok: false; reason: 'unknown' | 'expired' | 'already_decided'; approval?: ApprovalRecord };

/** One answer to an approval, as answer() writes it. */
export interface AnswerWrite {
  code: string;
  decision: 'approved' | 'denied';
  /** Who answered (a canonical identity) and through which channel. */
  by: string;
  via: string;
  /** With an approval: the "always allow" rule it makes (made by `by`). */
  rule?: Omit<NewRule, 'by' | 'tool' | 'pattern'>;
}

/**
 * What answer() did: on success the approval as decided, the rule it made, and the
 * conversation whose turn it unparked (to drain), if this answer was the turn's last pending one.
 */
export type AnswerOutcome =
  | { ok: true; approval: ApprovalRecord; rule?: AllowRuleRecord; unparked?: string }
  | { ok: false; reason: 'unknown' | 'expired' | 'already_decided'; approval?: ApprovalRecord };

export interface AuditEntry {
  at: Date;
  actor: string;
  action: string;
  details: unknown;
}

/** An approval as create() returns it: whether this call made it, or found it made by an earlier attempt. */
export interface CreatedApproval extends ApprovalRecord {
  created: boolean;
}

/** Approvals of parked tool calls, operators' "always allow" rules, and the audit trail. */
export interface ApprovalRepository {
  /**
   * Creates the pending approval of one tool call, with a fresh code unique
   * among pending approvals, and its `approval.requested` audit row (actor: the
   * requester), in one statement. Idempotent per (turn, tool call): a retried turn
   * gets the approval already there, with its code and status, `created: false`,
   * and no second audit row.
   */
  create(a: NewApproval): Promise<CreatedApproval>;
  /** Every pending approval (expired or not), oldest first. */
  pending(): Promise<ApprovalRecord[]>;
  /**
   * The pending, unexpired approvals of the parked turns of the conversation with this key,
   * oldest first: what a message arriving there now waits for.
   */
  pendingForConversation(conversationKey: string): Promise<ApprovalRecord[]>;
  /** The approval with this code: the pending one if any, else the newest. */
  byCode(code: string): Promise<ApprovalRecord | undefined>;
  get(id: string): Promise<ApprovalRecord | undefined>;
  /** A turn's approvals, oldest first. */
  forTurn(turnId: string): Promise<ApprovalRecord[]>;
  /**
   * Single-use and atomic: only a pending, unexpired approval changes, so of
   * two answers at once exactly one wins. `always` sticks only to an approval.
   * Otherwise: unknown code, expired (also a pending one past its deadline),
   * or already decided (with the approval as it is).
   */
  decide(code: string, decision: 'approved' | 'denied', by: string, via: string, always?: boolean): Promise<DecideOutcome>;
  /**
   * An answer in one transaction: the decision (as decide()), the rule it makes, its audit
   * rows (`rule.created`, `approval.<status>`) and, when the turn has no pending approval
   * left, the unpark of the turn. Either all of it happens or none of it does (a refusal
   * writes nothing). Concurrent answers to the approvals of one turn are serialized on the
   * turn's row, so the last of them unparks it.
   */
  answer(a: AnswerWrite): Promise<AnswerOutcome>;
  /**
   * Expires the turn's pending approvals other than `keep` (asked by an attempt of the turn
   * that failed and was retried: nobody was shown them and nothing waits for them), so that
   * they do not hold the turn parked until their deadline. Returns those.
   */
  supersede(turnId: string, keep: string[]): Promise<ApprovalRecord[]>;
  /**
   * Takeover of a conversation: in one transaction, the pending approvals of its parked turns are
   * withdrawn (status expired, decided_by 'takeover') and those turns closed without running again
   * (status done, finish_reason 'aborted', their inbox rows consumed, the user's text kept in the
   * transcript, their step journal deleted). Only a turn still parked is closed: one an answer already
   * unparked (its resume began) is left to run. Returns the withdrawn approvals and the closed turns.
   */
  withdrawParked(conversationId: string): Promise<{ approvals: ApprovalRecord[]; turns: string[] }>;
  /** Parked turns none of whose approvals is pending any more (decided, expired, or gone): the sweep resumes them. */
  readyParkedTurns(): Promise<string[]>;
  /** Fail-closed expiry: every pending approval past its deadline becomes expired; returns those. */
  expireDue(): Promise<ApprovalRecord[]>;
  /** Claims an approved call for execution, once: true only for the first claim of an approved one. */
  markExecuted(id: string): Promise<boolean>;
  /** Adds an "always allow" rule, or returns the identical one (tool, pattern, scope, key, variable set) already there. */
  addRule(r: NewRule): Promise<AllowRuleRecord>;
  /** Every rule, oldest first. */
  rules(): Promise<AllowRuleRecord[]>;
  /** The rules that may apply in this conversation for this sender (global, its conversation's, its own), oldest first. */
  rulesFor(conversationId: string, sender: string): Promise<AllowRule[]>;
  rule(id: number): Promise<AllowRuleRecord | undefined>;
  /** Deletes a rule; returns it, or undefined when there was none. */
  deleteRule(id: number): Promise<AllowRuleRecord | undefined>;
  audit(actor: string, action: string, subject: string | null, details: unknown): Promise<void>;
  /** How many audit entries of this action this actor has within the last windowMs. */
  auditCount(actor: string, action: string, windowMs: number): Promise<number>;
  /** A subject's audit entries, oldest first. */
  auditTrail(subject: string): Promise<AuditEntry[]>;
}
