/**
 * The operator's "always allow" rule as stored and matched: a shape shared by the
 * approval engine (moat/approval-engine.ts matches it) and the approvals repository (stores it).
 */

/** Where a rule applies: the conversation it was made in (default), the sender, or everywhere. */
export type RuleScope = 'conversation' | 'sender' | 'global';
export const RULE_SCOPES: readonly RuleScope[] = ['conversation', 'sender', 'global'];

/**
 * "Always allow" from an operator: one exact call. For a shell command, `pattern` is the
 * command's canonical text (normalizeCommand) and the call must be the same single simple
 * command word for word, except at the `variable` word positions, which may hold any plain
 * operand (no option, nothing the shell expands). For other tools, `pattern` is the canonical
 * JSON of the arguments and must be equal. Nothing else widens a rule: no wildcards, no prefixes.
 */
export interface AllowRule {
  id?: number;
  tool: string;
  pattern: string;
  scope: RuleScope;
  /** The conversation id (scope conversation) or the sender's canonical identity (scope sender, kernel/identity.ts); '' for global. An empty key matches nothing. */
  scopeKey: string;
  /** Word positions (1-based: 0 is the command name, never variable) that may vary. Commands only. */
  variable?: number[];
  /** 'command' or 'args'; absent for rules made before kinds were recorded. */
  kind?: 'command' | 'args' | null;
}
